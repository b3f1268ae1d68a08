"""Value types shared by reporters and writers: aggregation methods, summaries, properties."""

from __future__ import annotations

import enum

import attrs
import numpy as np


class StatsAggregationMethod(enum.Enum):
    """How the values of one key within a summary window become one number.

    Same integer values as ``mlagents_envs.side_channel.stats_side_channel.StatsAggregationMethod``,
    so ``StatsAggregationMethod(env_method.value)`` converts without importing mlagents_envs.
    """

    AVERAGE = 0
    """Mean of the window's values."""
    MOST_RECENT = 1
    """The last value reported in the window (earlier ones are dropped)."""
    SUM = 2
    """Sum of the window's values."""
    HISTOGRAM = 3
    """Samples are kept: TensorBoard gets a ``<key>_hist`` histogram plus the mean as a scalar."""


class StatsProperty(enum.Enum):
    """Non-numeric facts about a category, handed to writers once (not aggregated)."""

    HYPERPARAMETERS = "hyperparameters"
    """A mapping or attrs object of the behavior's settings; TensorBoard text ``Hyperparameters/text_summary``."""
    IS_TRAINING = "is_training"
    """bool: whether the trainer still updates the policy (console ``Training.``/``Not Training.``)."""
    SELF_PLAY = "selfplay"
    """bool: the behavior uses self-play; the console line then shows ``ELO``."""
    SELF_PLAY_TEAM = "selfplayteam"
    """int: the team id currently learning."""
    START_STEP = "start_step"
    """int: the step the run (re)started from, so steps/s after ``--resume`` count only new steps."""


@attrs.frozen
class StatsSummary:
    """The summary of one key over one window.

    ``mean``/``std`` (population, ddof=0)/``min``/``max``/``sum`` are over the ``count`` values
    kept in the window; for MOST_RECENT the window keeps only the last value (count 1).
    ``full_dist`` holds the samples (``[count]`` float64) for HISTOGRAM only, else None.
    An empty summary has count 0 and every number 0.0.
    """

    mean: float
    std: float
    min: float
    max: float
    count: int
    sum: float
    aggregation_method: StatsAggregationMethod = StatsAggregationMethod.AVERAGE
    full_dist: np.ndarray | None = attrs.field(default=None, eq=False, repr=False)

    @staticmethod
    def empty() -> StatsSummary:
        """The summary of a window with no values (count 0)."""
        return _EMPTY

    @property
    def aggregated_value(self) -> float:
        """The one number writers draw: ``sum`` for SUM, otherwise ``mean``."""
        if self.aggregation_method is StatsAggregationMethod.SUM:
            return self.sum
        return self.mean

    @staticmethod
    def of(
        values: np.ndarray | list[float],
        aggregation_method: StatsAggregationMethod = StatsAggregationMethod.AVERAGE,
    ) -> StatsSummary:
        """Summarise ``values`` ([N] numbers) directly; for tests and one-off summaries."""
        arr = np.asarray(values, dtype=np.float64).reshape(-1)
        if arr.size == 0:
            return StatsSummary.empty()
        if aggregation_method is StatsAggregationMethod.MOST_RECENT:
            arr = arr[-1:]
        return StatsSummary(
            mean=float(arr.mean()),
            std=float(arr.std()),
            min=float(arr.min()),
            max=float(arr.max()),
            count=int(arr.size),
            sum=float(arr.sum()),
            aggregation_method=aggregation_method,
            full_dist=arr.copy() if aggregation_method is StatsAggregationMethod.HISTOGRAM else None,
        )


_EMPTY = StatsSummary(mean=0.0, std=0.0, min=0.0, max=0.0, count=0, sum=0.0)
