"""Which environment failures are worth a restart, and how many restarts a worker gets."""

from __future__ import annotations

from collections import defaultdict

import attrs

from envs.workers.records import FaultKind


def classify_error(error: BaseException, worker_id: int, port: int) -> tuple[FaultKind, str, bool]:
    """(kind, one-line message, retriable) for an exception an environment raised.

    As in ML-Agents only Unity communication, time-out, environment and stopped-communicator
    errors are retried; anything else is a bug or a bad setting and stops the run.
    """
    from mlagents_envs.exception import (
        UnityCommunicationException,
        UnityCommunicatorStoppedException,
        UnityEnvironmentException,
        UnityTimeOutException,
        UnityWorkerInUseException,
    )

    from envs.exceptions import UnityBuildCrashedError

    text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, UnityWorkerInUseException):
        return (
            FaultKind.ERROR,
            f"worker {worker_id}: port {port} is already in use (another training "
            f"run or Unity process?); choose other ports with --base-port",
            False,
        )
    if isinstance(error, UnityBuildCrashedError):
        return FaultKind.CRASHED, text, True
    if isinstance(error, UnityTimeOutException):
        return FaultKind.HUNG, text, True
    if isinstance(error, UnityCommunicatorStoppedException):
        return FaultKind.QUIT, text, True
    if isinstance(error, (UnityCommunicationException, UnityEnvironmentException)):
        return FaultKind.CRASHED, text, True
    return FaultKind.ERROR, f"worker {worker_id}: {type(error).__name__}: {text}", False


@attrs.define
class RestartBudget:
    """REFERENCE 1.11: a worker may restart while its lifetime restarts are fewer than
    ``max_lifetime_restarts`` and its restarts within the last ``period_s`` seconds fewer
    than ``rate_limit_n``; -1 turns either limit off."""

    max_lifetime_restarts: int = 10
    rate_limit_n: int = 1
    period_s: float = 60.0
    history: dict[int, list[float]] = attrs.field(factory=lambda: defaultdict(list))

    def allows(self, worker_id: int, now: float) -> bool:
        times = self.history[worker_id]
        if self.max_lifetime_restarts != -1 and len(times) >= self.max_lifetime_restarts:
            return False
        if self.rate_limit_n != -1:
            recent = sum(1 for t in times if now - t < self.period_s)
            if recent >= self.rate_limit_n:
                return False
        return True

    def record(self, worker_id: int, now: float) -> None:
        self.history[worker_id].append(now)

    def describe(self) -> str:
        return (
            f"--max-lifetime-restarts {self.max_lifetime_restarts}, --restarts-rate-limit-n "
            f"{self.rate_limit_n} per --restarts-rate-limit-period-s {self.period_s:g}"
        )
