"""Environment parameters as the EnvironmentParameters side channel carries them: a float, or a
sampler that the environment evaluates itself, once per draw (Unity's C# samplers; our
built-in environments draw at each episode start).

A :class:`ParameterValue` is plain data (picklable, sent to worker processes). How it reaches an
environment: :meth:`ParameterValue.send` queues it on a Unity connection's
``EnvironmentParametersChannel`` in the layout Unity reads; a built-in environment takes it
through ``set_env_parameter_value``; a Python factory gets the constants as floats.
"""

from __future__ import annotations

import enum

import attrs
import numpy as np
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel


class ParameterKind(enum.StrEnum):
    """What a parameter's value is: one of the side channel's kinds."""

    CONSTANT = "constant"
    UNIFORM = "uniform"
    GAUSSIAN = "gaussian"
    MULTIRANGEUNIFORM = "multirangeuniform"


@attrs.frozen
class ParameterValue:
    """One parameter's value. ``numbers``: constant (value,); uniform (min, max); gaussian
    (mean, st_dev); multirangeuniform (min_0, max_0, min_1, max_1, ...). ``seed`` seeds a
    sampler's draws (a constant has none)."""

    kind: ParameterKind
    numbers: tuple[float, ...]
    seed: int = 0

    @staticmethod
    def constant(value: float) -> ParameterValue:
        return ParameterValue(ParameterKind.CONSTANT, (float(value),))

    @property
    def is_constant(self) -> bool:
        return self.kind == ParameterKind.CONSTANT

    @property
    def intervals(self) -> list[tuple[float, float]]:
        """A multirangeuniform sampler's (min, max) pairs."""
        return [(self.numbers[i], self.numbers[i + 1]) for i in range(0, len(self.numbers), 2)]

    def send(self, key: str, channel: EnvironmentParametersChannel) -> None:
        """Queue this value for ``key`` on a Unity connection's parameters channel."""
        kind, numbers = self.kind, self.numbers
        if kind == ParameterKind.CONSTANT:
            channel.set_float_parameter(key, numbers[0])
        elif kind == ParameterKind.UNIFORM:
            channel.set_uniform_sampler_parameters(key, numbers[0], numbers[1], self.seed)
        elif kind == ParameterKind.GAUSSIAN:
            channel.set_gaussian_sampler_parameters(key, numbers[0], numbers[1], self.seed)
        else:
            channel.set_multirangeuniform_sampler_parameters(key, self.intervals, self.seed)

    def sample(self, rng: np.random.Generator, size: int | None = None) -> float | np.ndarray:
        """Draws as Unity's samplers make them (one float, or ``size`` of them): uniform in
        [min, max); normal(mean, st_dev); multirangeuniform: an interval chosen in proportion
        to its width, then uniform in it. A constant is its value."""
        kind, numbers = self.kind, self.numbers
        if kind == ParameterKind.CONSTANT:
            return numbers[0] if size is None else np.full(size, numbers[0])
        if kind == ParameterKind.UNIFORM:
            return rng.uniform(numbers[0], numbers[1], size)
        if kind == ParameterKind.GAUSSIAN:
            return rng.normal(numbers[0], numbers[1], size)
        intervals = np.array(self.intervals)
        widths = intervals[:, 1] - intervals[:, 0]
        total = widths.sum()
        chosen = rng.choice(len(widths), size=size, p=widths / total if total > 0 else None)
        low, high = intervals[chosen, 0], intervals[chosen, 1]
        return rng.uniform(low, high) if size is not None else float(rng.uniform(low, high))
