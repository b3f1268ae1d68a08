"""The ML-Agents console summary line, plus throughput, through ``logging`` at INFO."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from stats._plain import indented_text
from stats.summary import StatsProperty, StatsSummary
from stats.tags import (
    CUMULATIVE_REWARD,
    GROUP_CUMULATIVE_REWARD,
    IS_TRAINING,
    SELF_PLAY_ELO,
)
from stats.writer import StatsWriter

logger = logging.getLogger(__name__)


class ConsoleWriter(StatsWriter):
    """Logs one line per written window, ML-Agents' format followed by throughput::

        3DBall. Step: 12000. Time Elapsed: 14.500 s. Mean Reward: 1.213. Std of Reward: 0.750. Training. Agent Steps/s: 827.6.

    ``Time Elapsed`` counts from the writer's creation. ``Training.`` comes from the window's
    ``Is Training`` stat (> 0) if present, else the last ``StatsProperty.IS_TRAINING``; without
    either the line says ``Not Training.`` as ML-Agents does. ``Agent Steps/s`` is the step
    increase over the wall time since the category's previous line (the first line counts from
    the writer's creation and ``StatsProperty.START_STEP``, default 0). Given ``env_steps`` (the
    run's count of environment steps so far), ``Env Steps/s`` is that count's increase over the
    same interval, so both rates describe the same seconds. ``clock`` is seconds (``time.time``).
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        log: logging.Logger | None = None,
        env_steps: Callable[[], int] | None = None,
    ) -> None:
        self._clock = clock
        self._env_steps = env_steps
        self._log = log if log is not None else logger
        self.start_time = clock()
        self._is_training: dict[str, bool] = {}
        self._self_play: dict[str, bool] = {}
        self._last: dict[str, tuple[float, int]] = {}
        self._env_steps_at_start = env_steps() if env_steps is not None else 0
        self._last_env_steps: dict[str, int] = {}

    def format_line(self, category: str, values: Mapping[str, StatsSummary], step: int) -> str:
        """The line ``write_stats`` logs; updates the steps/s baseline for ``category``."""
        now = self._clock()
        if IS_TRAINING in values and values[IS_TRAINING].count > 0:
            training = values[IS_TRAINING].aggregated_value > 0.0
        else:
            training = self._is_training.get(category, False)
        is_training = "Training" if training else "Not Training"
        parts = [category, f"Step: {step}", f"Time Elapsed: {now - self.start_time:0.3f} s"]
        reward = values.get(CUMULATIVE_REWARD)
        if reward is not None and reward.count > 0:
            parts.append(f"Mean Reward: {reward.mean:0.3f}")
            group = values.get(GROUP_CUMULATIVE_REWARD)
            if group is not None and group.count > 0:
                parts.append(f"Mean Group Reward: {group.mean:0.3f}")
            else:
                parts.append(f"Std of Reward: {reward.std:0.3f}")
            parts.append(is_training)
            elo = values.get(SELF_PLAY_ELO)
            if self._self_play.get(category, False) and elo is not None and elo.count > 0:
                parts.append(f"ELO: {elo.mean:0.3f}")
        else:
            parts.append("No episode was completed since last summary")
            parts.append(is_training)
        last_time, last_step = self._last.get(category, (self.start_time, 0))
        elapsed = now - last_time
        if elapsed > 0:
            parts.append(f"Agent Steps/s: {(step - last_step) / elapsed:0.1f}")
        if self._env_steps is not None:
            env_steps = self._env_steps()
            if elapsed > 0:
                last_env_steps = self._last_env_steps.get(category, self._env_steps_at_start)
                parts.append(f"Env Steps/s: {(env_steps - last_env_steps) / elapsed:0.1f}")
            self._last_env_steps[category] = env_steps
        self._last[category] = (now, step)
        return ". ".join(parts) + "."

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        self._log.info(self.format_line(category, values, step))

    def add_property(self, category: str, property_type: StatsProperty, value: Any) -> None:
        if property_type is StatsProperty.HYPERPARAMETERS:
            self._log.info("Hyperparameters for behavior name %s: \n%s", category, indented_text(value, 1))
        elif property_type is StatsProperty.IS_TRAINING:
            self._is_training[category] = bool(value)
        elif property_type is StatsProperty.SELF_PLAY:
            self._self_play[category] = bool(value)
        elif property_type is StatsProperty.START_STEP:
            self._last[category] = (self._clock(), int(value))
            if self._env_steps is not None:
                self._last_env_steps[category] = self._env_steps()
