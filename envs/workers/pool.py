"""The worker-pool interface and its simplest backend, one environment in this process.

A pool owns environments, one per worker id, and knows nothing about policies:
``step(worker_id, actions)`` starts a step, ``poll(timeout)`` returns whatever steps (or
faults) have come back. Backends: :class:`InProcessPool` (tests, built-in envs, the Editor),
:class:`envs.workers.subprocess_pool.SubprocessPool` (``--num-envs``); a Ray pool drops in
beside them.
"""

from __future__ import annotations

import abc
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import cast

import attrs
from mlagents_envs.base_env import ActionTuple, BaseEnv

from envs.parameters import ParameterValue
from envs.workers.extras import ActsItself, ReportsPackage, StepsInHalves
from envs.workers.faults import classify_error
from envs.workers.launch import EnvLaunch, OpenEnv
from envs.workers.records import SpecRecord, StepsRecord, WorkerFault, WorkerResult
from envs.workers.sources import open_environment, worker_port

logger = logging.getLogger(__name__)

#: Seconds ``InProcessPool.close`` lets a background step finish before it closes the environment.
_CLOSE_WAIT_S = 1.0


def observe(opened: OpenEnv, known: set[str], worker_id: int, generation: int, env_seconds: float) -> WorkerResult:
    """The environment's current steps of every behavior as a :class:`WorkerResult`; specs of
    behaviors not in ``known`` (which is updated) ride along. An environment whose clients
    choose some actions themselves (the policy server) says which through a
    ``taken_actions(behavior_id) -> TakenActions | None`` method, read with the steps."""
    env = opened.env
    acts_itself = _acts_itself(type(env))
    specs = env.behavior_specs
    new_specs = {}
    steps = {}
    for behavior_id in list(specs):
        if behavior_id not in known:
            known.add(behavior_id)
            package = env.package_version if isinstance(env, ReportsPackage) else ""
            new_specs[behavior_id] = SpecRecord.from_spec(specs[behavior_id], package)
        decision, terminal = env.get_steps(behavior_id)
        taken = env.taken_actions(behavior_id) if acts_itself else None
        steps[behavior_id] = StepsRecord.from_steps(decision, terminal, taken)
    stats = {
        key: [(float(v), int(getattr(agg, "value", agg))) for v, agg in values]
        for key, values in opened.get_stats().items()
    }
    return WorkerResult(worker_id, generation, steps, new_specs, stats, env_seconds)


_ACTS_ITSELF: dict[type, bool] = {}


def _acts_itself(env_type: type) -> bool:
    """Whether environments of ``env_type`` are :class:`ActsItself`, asked once per class: the
    protocol's ``isinstance`` inspects the object anew each time, and ``observe`` runs every step."""
    known = _ACTS_ITSELF.get(env_type)
    if known is None:
        known = _ACTS_ITSELF[env_type] = issubclass(env_type, ActsItself)
    return known


_STEPS_IN_HALVES: dict[type, bool] = {}


def _steps_in_halves(env_type: type) -> bool:
    """Whether environments of ``env_type`` are :class:`StepsInHalves` (asked once per class)."""
    known = _STEPS_IN_HALVES.get(env_type)
    if known is None:
        known = _STEPS_IN_HALVES[env_type] = issubclass(env_type, StepsInHalves)
    return known


def with_parameters(launch: EnvLaunch, parameters: Mapping[str, ParameterValue]) -> EnvLaunch:
    """``launch`` opening environments with ``parameters`` (over the ones it had)."""
    merged = dict(launch.env_parameters)
    merged.update(parameters)
    return attrs.evolve(launch, env_parameters=tuple(merged.items()))


def apply_and_step(opened: OpenEnv, actions: Mapping[str, ActionTuple]) -> float:
    """Set every behavior's actions and step; returns the seconds it took."""
    start = time.perf_counter()
    for behavior_id, action in actions.items():
        opened.env.set_actions(behavior_id, action)
    opened.env.step()
    return time.perf_counter() - start


class EnvWorkerPool(abc.ABC):
    """Environments by worker id, stepped asynchronously; faults come back as values."""

    num_workers: int

    @abc.abstractmethod
    def start(self) -> None:
        """Open every worker's environment; each one's first observation comes from ``poll``."""

    @abc.abstractmethod
    def step(self, worker_id: int, actions: Mapping[str, ActionTuple]) -> None:
        """Send actions (behavior id -> actions for its deciding agents) and start a step."""

    @abc.abstractmethod
    def poll(self, timeout: float) -> list[WorkerResult | WorkerFault]:
        """What came back, waiting up to ``timeout`` seconds for the first item."""

    def reset(self, worker_id: int) -> None:
        """Reset the worker's environment instead of stepping it (every episode starts anew,
        agent ids may be reused); the first observation comes from ``poll`` like a step's.
        Backends that cannot raise NotImplementedError (the env manager then goes on without)."""
        raise NotImplementedError(f"{type(self).__name__} cannot reset its environments")

    @abc.abstractmethod
    def set_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        """Send environment parameters to every worker (before its next step or reset; they
        take effect as its environment reads them) and open every later (re)started worker
        with them too (a curriculum's lesson outlives a crashed worker)."""

    @abc.abstractmethod
    def restart(self, worker_id: int) -> None:
        """End the worker's environment and open a fresh one (a new generation)."""

    @abc.abstractmethod
    def generation(self, worker_id: int) -> int:
        """The current generation of ``worker_id`` (results of older ones are stale)."""

    @abc.abstractmethod
    def close(self) -> None:
        """End every environment (and process). Idempotent."""


class InProcessPool(EnvWorkerPool):
    """One environment (worker 0), stepped in this process.

    ``opener`` returns the environment (default: :func:`open_environment` of ``launch``).
    With ``background=True``, for an environment that simulates in another process (a Unity
    build, the Editor), the caller works while it does: opening it runs in a thread of its own
    (a run loads torch while its build boots), and so does each step, unless the environment
    :class:`StepsInHalves` (a Unity build): then ``step`` sends the actions and ``poll`` reads
    the reply, on the caller's thread. Nothing else touches the environment until a step is
    done: every other call waits for it first; closing the pool while it opens closes it once
    open.
    """

    num_workers = 1

    def __init__(
        self,
        launch: EnvLaunch | None = None,
        *,
        opener: Callable[[int], OpenEnv] | None = None,
        background: bool = False,
    ):
        if opener is None and launch is None:
            raise ValueError("InProcessPool needs an EnvLaunch or an opener")
        self._opener = opener
        self._launch = launch
        self._parameters: dict[str, ParameterValue] = {}  # sent since launch: resent on a restart
        self._opened: OpenEnv | None = None
        self._generation = 0
        self._known: set[str] = set()
        self._ready: deque[WorkerResult | WorkerFault] = deque()
        self._stepper = ThreadPoolExecutor(1, thread_name_prefix="env-step") if background else None
        self._stepping: Future[WorkerResult | WorkerFault] | None = None
        self._closing = threading.Lock()  # an open finishing in the background vs close()
        self._closed = False
        self._awaiting: OpenEnv | None = None  # a step sent whose reply is not read yet
        self._sent_at = 0.0

    @property
    def env(self) -> BaseEnv | None:
        return None if self._opened is None else self._opened.env

    def _fault(self, error: BaseException) -> WorkerFault:
        port = worker_port(self._launch, 0) if self._launch is not None else 0
        kind, message, retriable = classify_error(error, 0, port)
        logger.debug("worker 0 failed", exc_info=error)
        return WorkerFault(0, self._generation, kind, message, retriable)

    def start(self) -> None:
        self._finish_step()
        self._known = set()
        if self._stepper is None:
            self._ready.append(self._open())
        else:
            self._stepping = self._stepper.submit(self._open)

    def _open(self) -> WorkerResult | WorkerFault:
        try:
            if self._opener is not None:
                opened = self._opener(0)
            else:
                assert self._launch is not None
                opened = open_environment(self._launch, 0)
            with self._closing:
                if self._closed:  # closed while it opened: nobody else will close it
                    opened.env.close()
                    raise RuntimeError("the pool was closed while its environment opened")
                self._opened = opened
            if self._opener is not None and self._parameters:
                opened.set_parameters(self._parameters)
            return observe(opened, self._known, 0, self._generation, 0.0)
        except Exception as error:  # noqa: BLE001 - a fault value
            return self._fault(error)

    def step(self, worker_id: int, actions: Mapping[str, ActionTuple]) -> None:
        self._finish_step()
        opened = self._opened
        if opened is None:
            return
        if self._stepper is None:
            self._ready.append(self._step(opened, actions))
        elif _steps_in_halves(type(opened.env)):
            self._send(opened, actions)
        else:
            self._stepping = self._stepper.submit(self._step, opened, actions)

    def _send(self, opened: OpenEnv, actions: Mapping[str, ActionTuple]) -> None:
        try:
            for behavior_id, action in actions.items():
                opened.env.set_actions(behavior_id, action)
            self._sent_at = time.perf_counter()
            cast(StepsInHalves, opened.env).send_step()
            self._awaiting = opened
        except Exception as error:  # noqa: BLE001 - a fault value
            self._ready.append(self._fault(error))

    def _receive(self, opened: OpenEnv, within: float | None) -> None:
        """The reply to the step sent, into ``_ready`` (unless it did not come ``within`` s)."""
        try:
            if not cast(StepsInHalves, opened.env).receive_step(within):
                return
            result: WorkerResult | WorkerFault = observe(
                opened, self._known, 0, self._generation, time.perf_counter() - self._sent_at
            )
        except Exception as error:  # noqa: BLE001 - a fault value
            result = self._fault(error)
        self._awaiting = None
        self._ready.append(result)

    def _step(self, opened: OpenEnv, actions: Mapping[str, ActionTuple]) -> WorkerResult | WorkerFault:
        try:
            seconds = apply_and_step(opened, actions)
            return observe(opened, self._known, 0, self._generation, seconds)
        except Exception as error:  # noqa: BLE001 - a fault value
            return self._fault(error)

    def _finish_step(self, timeout: float | None = None) -> None:
        """Wait up to ``timeout`` seconds (None: as long as it takes) for a step (or an open)
        under way; its result is then ready for ``poll``."""
        if self._awaiting is not None:
            self._receive(self._awaiting, timeout)
            return
        stepping = self._stepping
        if stepping is None:
            return
        try:
            result = stepping.result(timeout)
        except TimeoutError:
            return
        self._stepping = None
        self._ready.append(result)

    def poll(self, timeout: float) -> list[WorkerResult | WorkerFault]:
        if not self._ready:
            self._finish_step(timeout)
        out = list(self._ready)
        self._ready.clear()
        return out

    def reset(self, worker_id: int) -> None:
        self._finish_step()
        if self._opened is None:
            return
        try:
            start = time.perf_counter()
            self._opened.env.reset()
            seconds = time.perf_counter() - start
            self._ready.append(observe(self._opened, self._known, 0, self._generation, seconds))
        except Exception as error:  # noqa: BLE001 - a fault value
            self._ready.append(self._fault(error))

    def set_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        self._finish_step()
        self._parameters.update(parameters)
        if self._launch is not None:
            self._launch = with_parameters(self._launch, parameters)
        if self._opened is not None:
            try:
                self._opened.set_parameters(parameters)
            except Exception as error:  # noqa: BLE001 - a fault value, as a failed step's
                self._ready.append(self._fault(error))
                self._close_env()

    def restart(self, worker_id: int) -> None:
        self._finish_step()
        self._close_env()
        self._generation += 1
        self.start()

    def generation(self, worker_id: int) -> int:
        return self._generation

    def _close_env(self) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            try:
                opened.env.close()
            except Exception:  # noqa: BLE001 - closing a broken env
                logger.debug("closing worker 0 failed", exc_info=True)

    def close(self) -> None:
        # A step still running ends when its environment closes (a wait for Unity's reply ends
        # when its connection closes); its result is not wanted. One still opening closes itself.
        with self._closing:
            self._closed = True
        self._awaiting = None  # its reply is not wanted
        self._finish_step(_CLOSE_WAIT_S)
        self._stepping = None
        self._close_env()
        self._ready.clear()
        if self._stepper is not None:
            self._stepper.shutdown(wait=False)
