"""What a scheduled hyperparameter is worth at a step (``learning_rate_schedule``,
``beta_schedule``, ``epsilon_schedule``, behavioral cloning's ``strength`` schedule), as
ML-Agents decays them."""

from __future__ import annotations

from trainers.settings.schema import ScheduleType


def decayed_value(schedule: ScheduleType, initial: float, minimum: float, step: int, max_steps: int) -> float:
    """A hyperparameter at ``step``: constant, or linear from ``initial`` down to ``minimum``
    at ``max_steps`` (and held there)."""
    if schedule == ScheduleType.CONSTANT or max_steps <= 0:
        return float(initial)
    fraction = min(max(step, 0) / max_steps, 1.0)
    return float(initial - (initial - minimum) * fraction)
