"""What an environment may offer beyond ``BaseEnv``, one protocol each, checked where it is read
(a user's ``python:`` factory may offer any of them; see docs/python-environments.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from envs.parameters import ParameterValue
from envs.workers.records import TakenActions


@runtime_checkable
class ReportsStats(Protocol):
    """Custom stats since the last call, as ``StatsSideChannel.get_and_reset_stats`` gives them."""

    def get_and_reset_stats(self) -> Mapping[str, Sequence[tuple[float, Any]]]: ...


@runtime_checkable
class TakesParameterValues(Protocol):
    """Environment parameters of every kind (a sampler or a constant), as built-ins take them."""

    def set_env_parameter_value(self, key: str, value: ParameterValue) -> None: ...


@runtime_checkable
class TakesParameters(Protocol):
    """Constant environment parameters, as ``EnvironmentParametersChannel.set_float_parameter``."""

    def set_env_parameter(self, key: str, value: float) -> None: ...


@runtime_checkable
class ActsItself(Protocol):
    """Some agents chose their actions themselves (the policy server's clients)."""

    def taken_actions(self, behavior_id: str) -> TakenActions | None: ...


@runtime_checkable
class ReportsPackage(Protocol):
    """The ML-Agents Unity package version of a build (``envs.unity.UnityEnvironment``)."""

    @property
    def package_version(self) -> str: ...


@runtime_checkable
class StepsInHalves(Protocol):
    """A step sent (``send_step``) and its reply read (``receive_step``) apart, as
    ``envs.unity.UnityEnvironment`` does: the build simulates while the caller works, and no
    thread stands between them (a hand-off each way costs more than the work it saves)."""

    def send_step(self) -> None: ...

    def receive_step(self, within: float | None = None) -> bool: ...
