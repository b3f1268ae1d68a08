"""Environment parameters through a run (ML-Agents' EnvironmentParameterManager): each
parameter's current lesson and value, when a lesson is complete, and the lesson numbers kept in
``run_logs/training_status.json`` so ``--resume`` continues in the lesson it stopped in.

A constant or a sampler is a curriculum of one lesson. A lesson ends when its
``completion_criteria`` hold for the behavior they name:

- ``measure: progress``: the behavior's trainer step / its ``max_steps`` exceeds ``threshold``;
- ``measure: reward``: the mean reward of the behavior's last episodes (at most
  ``min_lesson_length`` of them, the reward buffer) exceeds ``threshold``, smoothed as
  ``0.25 * previous + 0.75 * mean`` with ``signal_smoothing``;

and in both cases only once at least ``min_lesson_length`` episodes finished since the last
lesson change (the buffer is emptied at every change, as ML-Agents clears its trainers'
reward buffers). The final lesson never ends. A sampler's ``seed`` of -1 becomes the run's seed
plus the lesson value's position among the run's lesson values without a seed (constants
counted too), as ML-Agents numbers them.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Mapping
from typing import NamedTuple

import numpy as np

from envs.parameters import ParameterKind, ParameterValue
from trainers.files.status import TrainingStatus
from trainers.settings import (
    ConstantSampler,
    EnvironmentParameterSettings,
    GaussianSampler,
    MeasureType,
    MultiRangeUniformSampler,
    Sampler,
    UniformSampler,
)

logger = logging.getLogger(__name__)

#: The key of a parameter's lesson in training_status.json (ML-Agents' StatusType.LESSON_NUM).
LESSON_NUM = "lesson_num"


def parameter_value(sampler: Sampler, seed: int) -> ParameterValue:
    """A configured value as the environment receives it."""
    if isinstance(sampler, ConstantSampler):
        return ParameterValue.constant(sampler.value)
    if isinstance(sampler, UniformSampler):
        return ParameterValue(ParameterKind.UNIFORM, (sampler.min_value, sampler.max_value), seed)
    if isinstance(sampler, GaussianSampler):
        return ParameterValue(ParameterKind.GAUSSIAN, (sampler.mean, sampler.st_dev), seed)
    if isinstance(sampler, MultiRangeUniformSampler):
        bounds = tuple(float(bound) for interval in sampler.intervals for bound in interval)
        return ParameterValue(ParameterKind.MULTIRANGEUNIFORM, bounds, seed)
    raise TypeError(f"unknown sampler {sampler!r}")


class LessonChange(NamedTuple):
    """What :meth:`Curriculum.update` did: the parameters that moved to a new lesson (name ->
    lesson number), and whether one of those lessons asks for the environments to be reset."""

    lessons: dict[str, int]
    must_reset: bool


class Curriculum:
    """Lessons of every environment parameter of a run.

    ``status``: where lesson numbers are saved (and, with ``resume``, read from).
    """

    def __init__(
        self,
        settings: Mapping[str, EnvironmentParameterSettings],
        *,
        run_seed: int,
        status: TrainingStatus | None = None,
        resume: bool = False,
    ) -> None:
        self.settings = dict(settings)
        self.status = status
        self._values: dict[str, list[ParameterValue]] = {}
        offset = 0
        for name, parameter in self.settings.items():
            values = []
            for lesson in parameter.curriculum:
                seed = lesson.value.seed
                if seed == -1:  # constants too take a place in the count, as in ML-Agents
                    seed, offset = run_seed + offset, offset + 1
                values.append(parameter_value(lesson.value, seed))
            self._values[name] = values
        self.lessons = {name: 0 for name in self.settings}
        if resume and status is not None:
            for name, parameter in self.settings.items():
                saved = status.parameter(name, LESSON_NUM)
                if saved is not None:
                    self.lessons[name] = min(max(int(saved), 0), len(parameter.curriculum) - 1)
        self._smoothed = {name: 0.0 for name in self.settings}
        self._rewards: dict[str, deque[float]] = {}
        for parameter in self.settings.values():
            for lesson in parameter.curriculum:
                criteria = lesson.completion_criteria
                if criteria is not None:
                    size = max(int(criteria.min_lesson_length), 1)
                    current = self._rewards.get(criteria.behavior)
                    if current is None or (current.maxlen or 0) < size:
                        self._rewards[criteria.behavior] = deque(maxlen=size)

    @property
    def has_lessons(self) -> bool:
        """Whether any parameter has more than one lesson (something can change mid-run)."""
        return any(len(p.curriculum) > 1 for p in self.settings.values())

    def values(self) -> dict[str, ParameterValue]:
        """Every parameter's value in its current lesson."""
        return {name: values[self.lessons[name]] for name, values in self._values.items()}

    def watches(self, behavior: str) -> bool:
        """Whether some lesson's criteria read ``behavior``'s episode rewards."""
        return behavior in self._rewards

    def add_episode_rewards(self, behavior: str, rewards: np.ndarray) -> None:
        """Finished episodes' cumulative rewards of ``behavior`` (the reward buffer)."""
        buffer = self._rewards.get(behavior)
        if buffer is not None:
            buffer.extend(float(r) for r in rewards)

    def update(self, progress: Mapping[str, float]) -> LessonChange:
        """Move every parameter whose lesson is complete to its next lesson. ``progress``:
        behavior name -> trainer step / max_steps (behaviors without a trainer yet left out)."""
        changed: dict[str, int] = {}
        must_reset = False
        for name, parameter in self.settings.items():
            number = self.lessons[name]
            lesson = parameter.curriculum[number]
            criteria = lesson.completion_criteria
            if criteria is None or number + 1 >= len(parameter.curriculum) or criteria.behavior not in progress:
                continue
            rewards = self._rewards[criteria.behavior]
            if len(rewards) < criteria.min_lesson_length:
                continue
            if criteria.measure == MeasureType.PROGRESS:
                measure = progress[criteria.behavior]
                complete = measure > criteria.threshold
            else:
                if not rewards:
                    continue
                measure = float(np.mean(rewards))
                if criteria.signal_smoothing:
                    measure = 0.25 * self._smoothed[name] + 0.75 * measure
                    self._smoothed[name] = measure
                complete = measure > criteria.threshold
            if complete:
                self.lessons[name] = number + 1
                changed[name] = number + 1
                must_reset = must_reset or criteria.require_reset
                next_lesson = parameter.curriculum[number + 1]
                logger.info(
                    "Parameter '%s' is now in lesson %d, '%s' (%s): %s's %s reached %.3g (threshold %g)",
                    name,
                    number + 1,
                    next_lesson.name,
                    _describe(self._values[name][number + 1]),
                    criteria.behavior,
                    criteria.measure.value,
                    measure,
                    criteria.threshold,
                )
                if self.status is not None:
                    self.status.set_parameter(name, LESSON_NUM, number + 1)
        if changed:
            for buffer in self._rewards.values():
                buffer.clear()
        return LessonChange(changed, must_reset)


def _describe(value: ParameterValue) -> str:
    if value.is_constant:
        return f"{value.numbers[0]:g}"
    return f"{value.kind.value} {', '.join(f'{n:g}' for n in value.numbers)}"
