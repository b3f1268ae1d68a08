"""Env managers: environments on a small worker-pool interface, steps to the processors, actions
from the policies, batched across every worker that is ready.

A pool (:class:`EnvWorkerPool`) owns environments, one per worker id, and knows nothing about
policies: ``step(worker_id, actions)`` starts a step, ``poll(timeout)`` returns whatever steps
(or faults) have come back. Two backends: :class:`InProcessPool` (one environment in this
process; tests, built-in envs, the Editor) and :class:`SubprocessPool` (one process per worker,
``--num-envs``). Across the pool boundary travel plain numpy records per behavior
(:class:`StepsRecord`, :class:`SpecRecord`), never mlagents objects; arrays keep their dtype,
so uint8 images stay uint8. A fault (crashed / hung / quit / lost / error) comes back as a
:class:`WorkerFault` value and the :class:`EnvManager` decides whether to restart the worker.

:class:`EnvManager` is the policy side: each ``advance()`` drains the policy queues, takes
the steps of every worker that is ready (a slow worker does not hold back the others), hands
them to each behavior's AgentManager, acts for all deciding agents of a behavior across the
ready workers in one batch, and sends each worker its actions. A restarted worker starts a
new generation: only its agents are discarded (``AgentManager.discard_worker``); healthy
workers keep their partial trajectories.
"""

from __future__ import annotations

import abc
import enum
import logging
import multiprocessing
import signal
import sys
import time
from collections import defaultdict, deque
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

import attrs
import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)

from processors import ActionInfo, AgentManager, AgentManagerQueue
from processors.agent_processor import allowed_actions
from stats import PerfKind, PerfStats, Timers
from trainers.exceptions import RunEnvironmentError

logger = logging.getLogger(__name__)

BUILTIN_PREFIX = "builtin:"
EDITOR_PORT = 5004
LOOPBACK = "127.0.0.1"


# ------------------------------------------------------------------------------ records


class SpecRecord(NamedTuple):
    """A BehaviorSpec as plain values (one entry per sensor in the obs tuples)."""

    obs_shapes: tuple[tuple[int, ...], ...]
    dimension_properties: tuple[tuple[int, ...], ...]
    observation_types: tuple[int, ...]
    observation_names: tuple[str, ...]
    continuous_size: int
    discrete_branches: tuple[int, ...]

    @staticmethod
    def from_spec(spec: BehaviorSpec) -> SpecRecord:
        sensors = spec.observation_specs
        return SpecRecord(
            tuple(tuple(int(s) for s in o.shape) for o in sensors),
            tuple(tuple(int(d.value) for d in o.dimension_property) for o in sensors),
            tuple(int(o.observation_type.value) for o in sensors),
            tuple(str(o.name) for o in sensors),
            int(spec.action_spec.continuous_size),
            tuple(int(b) for b in spec.action_spec.discrete_branches),
        )

    def to_spec(self) -> BehaviorSpec:
        sensors = [
            ObservationSpec(shape, tuple(DimensionProperty(d) for d in dims), ObservationType(kind), name)
            for shape, dims, kind, name in zip(self.obs_shapes, self.dimension_properties,
                                               self.observation_types, self.observation_names)
        ]
        return BehaviorSpec(sensors, ActionSpec(self.continuous_size, self.discrete_branches))


class StepsRecord(NamedTuple):
    """One behavior's DecisionSteps and TerminalSteps of one worker as plain arrays.

    ``d_*``: N deciding agents (obs one [N, *shape] per sensor; ``d_mask`` one [N, branch]
    bool per branch, True = masked, or None); ``t_*``: M agents whose episode ended.
    """

    d_obs: tuple[np.ndarray, ...]
    d_reward: np.ndarray
    d_agent_id: np.ndarray
    d_mask: tuple[np.ndarray, ...] | None
    d_group_id: np.ndarray
    d_group_reward: np.ndarray
    t_obs: tuple[np.ndarray, ...]
    t_reward: np.ndarray
    t_interrupted: np.ndarray
    t_agent_id: np.ndarray
    t_group_id: np.ndarray
    t_group_reward: np.ndarray

    @staticmethod
    def from_steps(decision: DecisionSteps, terminal: TerminalSteps) -> StepsRecord:
        mask = decision.action_mask
        return StepsRecord(
            tuple(decision.obs), decision.reward, decision.agent_id,
            None if mask is None else tuple(mask), decision.group_id, decision.group_reward,
            tuple(terminal.obs), terminal.reward, terminal.interrupted, terminal.agent_id,
            terminal.group_id, terminal.group_reward,
        )

    def to_steps(self) -> tuple[DecisionSteps, TerminalSteps]:
        decision = DecisionSteps(list(self.d_obs), self.d_reward, self.d_agent_id,
                                 None if self.d_mask is None else list(self.d_mask),
                                 self.d_group_id, self.d_group_reward)
        terminal = TerminalSteps(list(self.t_obs), self.t_reward, self.t_interrupted, self.t_agent_id,
                                 self.t_group_id, self.t_group_reward)
        return decision, terminal


class FaultKind(enum.Enum):
    """Why a worker stopped answering."""

    CRASHED = "crashed"  # the environment process exited or the connection broke
    HUNG = "hung"  # no answer within the time limit
    QUIT = "quit"  # the environment ended the session (Application.Quit, Editor closed)
    LOST = "lost"  # the worker process itself died
    ERROR = "error"  # anything else: a bug or a bad setting, never retried


@attrs.frozen
class WorkerResult:
    """One step of one worker: every behavior's steps, specs of behaviors new to this worker,
    custom env stats ``{key: [(value, aggregation int)]}``, seconds the env step took."""

    worker_id: int
    generation: int
    steps: dict[str, StepsRecord]
    new_specs: dict[str, SpecRecord]
    env_stats: dict[str, list[tuple[float, int]]]
    env_seconds: float = 0.0


@attrs.frozen
class WorkerFault:
    """A worker that failed; ``retriable`` faults may be restarted within the budget."""

    worker_id: int
    generation: int
    kind: FaultKind
    message: str
    retriable: bool


# ------------------------------------------------------------------------------ launching


@attrs.frozen(kw_only=True)
class EnvLaunch:
    """Everything a worker needs to open its environment (picklable; sent to child processes).

    env_path: a Unity build, ``builtin:<Name>``, or None for the Editor on port 5004.
    seed: the run's seed; worker i uses ``seed + i``. Worker i's port is ``base_port + i``.
    engine: (width, height, quality_level, time_scale, target_frame_rate, capture_frame_rate).
    env_parameters: EnvironmentParameters values sent at start.
    log_folder: absolute folder for ``Player-<worker>.log``. bind_address: where our gRPC server
    listens (loopback unless asked).
    """

    env_path: str | None
    seed: int
    base_port: int = 5005
    num_areas: int = 1
    timeout_wait: float = 60.0
    env_args: tuple[str, ...] = ()
    no_graphics: bool = False
    no_graphics_monitor: bool = False
    engine: tuple[int, int, int, float, int, int] = (84, 84, 5, 20.0, -1, 60)
    env_parameters: tuple[tuple[str, float], ...] = ()
    log_folder: str | None = None
    bind_address: str = LOOPBACK

    @property
    def is_builtin(self) -> bool:
        return self.env_path is not None and self.env_path.startswith(BUILTIN_PREFIX)

    def port(self, worker_id: int) -> int:
        return EDITOR_PORT if self.env_path is None else self.base_port + worker_id


class OpenEnv(NamedTuple):
    """An open environment and how to read its custom stats since the last call."""

    env: BaseEnv
    get_stats: Callable[[], Mapping[str, Sequence[tuple[float, Any]]]]


def open_environment(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Open worker ``worker_id``'s environment; raises the environment's own exceptions."""
    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig

    engine = EngineConfig(*launch.engine)
    seed = launch.seed + worker_id
    if launch.is_builtin:
        from envs.builtin import make_env

        env = make_env(launch.env_path, seed=seed, worker_id=worker_id,
                       env_parameters=dict(launch.env_parameters), num_areas=launch.num_areas)
        env.set_engine_config(engine)
        return OpenEnv(env, env.get_and_reset_stats)

    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
    from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    from envs.unity import UnityEnvironment

    engine_channel = EngineConfigurationChannel()
    engine_channel.set_configuration(engine)
    parameters_channel = EnvironmentParametersChannel()
    for key, value in launch.env_parameters:
        parameters_channel.set_float_parameter(key, float(value))
    stats_channel = StatsSideChannel()
    no_graphics = launch.no_graphics or (launch.no_graphics_monitor and worker_id > 0)
    editor = launch.env_path is None
    env = UnityEnvironment(
        file_name=launch.env_path,
        worker_id=0 if editor else worker_id,
        base_port=EDITOR_PORT if editor else launch.base_port,
        seed=seed,
        no_graphics=no_graphics,
        timeout_wait=int(max(1, round(launch.timeout_wait))),
        additional_args=list(launch.env_args),
        side_channels=[engine_channel, parameters_channel, stats_channel],
        log_folder=None if editor else launch.log_folder,
        num_areas=launch.num_areas,
        bind_address=launch.bind_address,
    )
    return OpenEnv(env, stats_channel.get_and_reset_stats)


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
        return (FaultKind.ERROR, f"worker {worker_id}: port {port} is already in use (another training "
                f"run or Unity process?); choose other ports with --base-port", False)
    if isinstance(error, UnityBuildCrashedError):
        return FaultKind.CRASHED, text, True
    if isinstance(error, UnityTimeOutException):
        return FaultKind.HUNG, text, True
    if isinstance(error, UnityCommunicatorStoppedException):
        return FaultKind.QUIT, text, True
    if isinstance(error, (UnityCommunicationException, UnityEnvironmentException)):
        return FaultKind.CRASHED, text, True
    return FaultKind.ERROR, f"worker {worker_id}: {type(error).__name__}: {text}", False


def _observe(opened: OpenEnv, known: set[str], worker_id: int, generation: int,
             env_seconds: float) -> WorkerResult:
    env = opened.env
    specs = env.behavior_specs
    new_specs = {}
    steps = {}
    for behavior_id in list(specs):
        if behavior_id not in known:
            known.add(behavior_id)
            new_specs[behavior_id] = SpecRecord.from_spec(specs[behavior_id])
        steps[behavior_id] = StepsRecord.from_steps(*env.get_steps(behavior_id))
    stats = {key: [(float(v), int(getattr(agg, "value", agg))) for v, agg in values]
             for key, values in opened.get_stats().items()}
    return WorkerResult(worker_id, generation, steps, new_specs, stats, env_seconds)


def _apply_and_step(opened: OpenEnv, actions: Mapping[str, ActionTuple]) -> float:
    start = time.perf_counter()
    for behavior_id, action in actions.items():
        opened.env.set_actions(behavior_id, action)
    opened.env.step()
    return time.perf_counter() - start


# ------------------------------------------------------------------------------ pools


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
    """One environment (worker 0) stepped in the calling thread.

    ``opener`` returns the environment (default: :func:`open_environment` of ``launch``).
    """

    num_workers = 1

    def __init__(self, launch: EnvLaunch | None = None, *,
                 opener: Callable[[int], OpenEnv] | None = None):
        if opener is None:
            if launch is None:
                raise ValueError("InProcessPool needs an EnvLaunch or an opener")
            opener = lambda worker_id: open_environment(launch, worker_id)  # noqa: E731
        self._opener = opener
        self._launch = launch
        self._opened: OpenEnv | None = None
        self._generation = 0
        self._known: set[str] = set()
        self._ready: deque[WorkerResult | WorkerFault] = deque()

    @property
    def env(self) -> BaseEnv | None:
        return None if self._opened is None else self._opened.env

    def _fault(self, error: BaseException) -> WorkerFault:
        port = self._launch.port(0) if self._launch is not None else 0
        kind, message, retriable = classify_error(error, 0, port)
        logger.debug("worker 0 failed", exc_info=error)
        return WorkerFault(0, self._generation, kind, message, retriable)

    def start(self) -> None:
        self._known = set()
        try:
            self._opened = self._opener(0)
            self._ready.append(_observe(self._opened, self._known, 0, self._generation, 0.0))
        except Exception as error:  # noqa: BLE001 - a fault value
            self._ready.append(self._fault(error))

    def step(self, worker_id: int, actions: Mapping[str, ActionTuple]) -> None:
        if self._opened is None:
            return
        try:
            seconds = _apply_and_step(self._opened, actions)
            self._ready.append(_observe(self._opened, self._known, 0, self._generation, seconds))
        except Exception as error:  # noqa: BLE001 - a fault value
            self._ready.append(self._fault(error))

    def poll(self, timeout: float) -> list[WorkerResult | WorkerFault]:
        out = list(self._ready)
        self._ready.clear()
        return out

    def restart(self, worker_id: int) -> None:
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
        self._close_env()
        self._ready.clear()


# Messages parent -> child.
_STEP, _CLOSE = "step", "close"


def _worker_main(conn: Connection, launch: EnvLaunch, worker_id: int, generation: int) -> None:
    """A child process: open the env, answer each step with a WorkerResult (or a WorkerFault)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    # The child's log lines go where the parent's go (stdout), in the same format; stderr is
    # kept for the run's one-line error.
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("[%(levelname)s] %(message)s"))
    logging.getLogger().handlers[:] = [handler]
    logging.getLogger().setLevel(logging.INFO)
    opened: OpenEnv | None = None
    known: set[str] = set()

    def fault(error: BaseException) -> WorkerFault:
        kind, message, retriable = classify_error(error, worker_id, launch.port(worker_id))
        return WorkerFault(worker_id, generation, kind, message, retriable)

    try:
        try:
            opened = open_environment(launch, worker_id)
            conn.send(_observe(opened, known, worker_id, generation, 0.0))
        except Exception as error:  # noqa: BLE001 - a fault value
            conn.send(fault(error))
            return
        while True:
            message = conn.recv()
            if message[0] == _CLOSE:
                return
            try:
                seconds = _apply_and_step(opened, message[1])
                conn.send(_observe(opened, known, worker_id, generation, seconds))
            except Exception as error:  # noqa: BLE001 - a fault value
                conn.send(fault(error))
                return
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        if opened is not None:
            try:
                opened.env.close()
            except Exception:  # noqa: BLE001
                pass


@attrs.define
class _Worker:
    process: Any
    conn: Connection
    generation: int
    waiting_since: float | None  # when the outstanding request was sent (None: idle)


class SubprocessPool(EnvWorkerPool):
    """One child process per worker (``spawn``), each owning its environment.

    A worker that has not answered within ``hang_timeout_s`` (default ``timeout_wait`` + 30 s:
    a Unity worker times out by itself at ``timeout_wait``) is killed and reported HUNG; a
    worker whose pipe breaks is reported LOST.
    """

    def __init__(self, launch: EnvLaunch, num_workers: int, *, hang_timeout_s: float | None = None):
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        self.launch = launch
        self.num_workers = num_workers
        self.hang_timeout_s = float(hang_timeout_s if hang_timeout_s is not None else launch.timeout_wait + 30.0)
        self._context = multiprocessing.get_context("spawn")
        self._workers: dict[int, _Worker] = {}
        self._generations = [0] * num_workers
        self._closed = False

    def _launch(self, worker_id: int) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main, args=(child, self.launch, worker_id, self._generations[worker_id]),
            name=f"agents-learn-worker-{worker_id}", daemon=True,
        )
        process.start()
        child.close()
        self._workers[worker_id] = _Worker(process, parent, self._generations[worker_id], time.monotonic())

    def start(self) -> None:
        for worker_id in range(self.num_workers):
            self._launch(worker_id)

    def step(self, worker_id: int, actions: Mapping[str, ActionTuple]) -> None:
        worker = self._workers.get(worker_id)
        if worker is None:
            return
        try:
            worker.conn.send((_STEP, dict(actions)))
            worker.waiting_since = time.monotonic()
        except (BrokenPipeError, OSError):
            worker.waiting_since = time.monotonic() - self.hang_timeout_s  # reported by poll

    def poll(self, timeout: float) -> list[WorkerResult | WorkerFault]:
        waiting = {w.conn: wid for wid, w in self._workers.items() if w.waiting_since is not None}
        out: list[WorkerResult | WorkerFault] = []
        if waiting:
            for conn in wait(list(waiting), timeout=timeout):
                worker_id = waiting[conn]
                worker = self._workers[worker_id]
                try:
                    item = conn.recv()
                except (EOFError, OSError):
                    worker.process.join(1.0)
                    code = worker.process.exitcode
                    out.append(WorkerFault(worker_id, worker.generation, FaultKind.LOST,
                                           f"worker {worker_id}: its process ended unexpectedly "
                                           f"(exit code {code})", True))
                    self._end(worker_id)
                    continue
                worker.waiting_since = None
                out.append(item)
                if isinstance(item, WorkerFault):
                    self._end(worker_id)
        now = time.monotonic()
        for worker_id, worker in list(self._workers.items()):
            if worker.waiting_since is not None and now - worker.waiting_since > self.hang_timeout_s:
                out.append(WorkerFault(worker_id, worker.generation, FaultKind.HUNG,
                                       f"worker {worker_id}: no answer for {self.hang_timeout_s:.0f} s", True))
                self._end(worker_id, grace_s=0.0)
        return out

    def _end(self, worker_id: int, grace_s: float = 10.0) -> None:
        worker = self._workers.pop(worker_id, None)
        if worker is None:
            return
        try:
            worker.conn.send((_CLOSE,))
        except (BrokenPipeError, OSError):
            pass
        _stop_process(worker.process, grace_s)
        worker.conn.close()

    def restart(self, worker_id: int) -> None:
        self._end(worker_id)
        self._generations[worker_id] += 1
        self._launch(worker_id)

    def generation(self, worker_id: int) -> int:
        return self._generations[worker_id]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        workers = list(self._workers.items())
        self._workers = {}
        for _, worker in workers:
            try:
                worker.conn.send((_CLOSE,))
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 10.0
        for _, worker in workers:
            _stop_process(worker.process, max(0.0, deadline - time.monotonic()))
            worker.conn.close()


def _stop_process(process: Any, grace_s: float) -> None:
    """Wait for a child to exit, then SIGTERM (it closes its env), then SIGKILL."""
    process.join(grace_s)
    if process.exitcode is None:
        process.terminate()
        process.join(5.0)
    if process.exitcode is None:
        process.kill()
        process.join(5.0)


# ------------------------------------------------------------------------------ restarts


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
        return (f"--max-lifetime-restarts {self.max_lifetime_restarts}, --restarts-rate-limit-n "
                f"{self.rate_limit_n} per --restarts-rate-limit-period-s {self.period_s:g}")


# ------------------------------------------------------------------------------ the manager


@attrs.define
class BehaviorRuntime:
    """The env-side objects of one behavior id: its AgentManager and inference policy."""

    manager: AgentManager
    policy: Any  # TorchPolicy: act(), load_weights(), behavior_spec


def slice_action_info(info: ActionInfo, start: int, stop: int) -> ActionInfo:
    """Rows ``start:stop`` of ``info`` (one worker's share of a batched decision)."""
    s = slice(start, stop)
    return ActionInfo(
        agent_ids=info.agent_ids[s],
        env_actions=ActionTuple(continuous=info.env_actions.continuous[s], discrete=info.env_actions.discrete[s]),
        continuous_actions=info.continuous_actions[s],
        discrete_actions=info.discrete_actions[s],
        continuous_log_probs=info.continuous_log_probs[s],
        discrete_log_probs=info.discrete_log_probs[s],
        entropy=info.entropy[s],
        memories=info.memories[s],
    )


class _StatsAggregation(NamedTuple):
    value: int


class EnvManager:
    """Drives a pool for the trainer controller; see the module docstring.

    ``create_runtime(behavior_id, spec)`` is called the first time a behavior appears (on any
    worker). ``perf`` receives env-wait, inference and processing intervals. ``on_restart``
    is told of each worker restart (worker id, fault).
    """

    def __init__(
        self,
        pool: EnvWorkerPool,
        create_runtime: Callable[[str, BehaviorSpec], BehaviorRuntime],
        *,
        restarts: RestartBudget | None = None,
        perf: PerfStats | None = None,
        timers: Timers | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.pool = pool
        self._create_runtime = create_runtime
        self.restarts = restarts if restarts is not None else RestartBudget()
        self.perf = perf if perf is not None else PerfStats()
        self.timers = timers if timers is not None else Timers()
        self._clock = clock
        self.runtimes: dict[str, BehaviorRuntime] = {}
        self._last_action: dict[tuple[int, str], ActionInfo] = {}
        self._has_stepped: set[int] = set()
        self.env_steps = 0
        self.agent_steps = 0
        self.agent_steps_by_behavior: dict[str, int] = defaultdict(int)
        self.restart_count = 0
        self._started = False

    def start(self) -> None:
        """Open every environment (once; later calls do nothing)."""
        if self._started:
            return
        self.pool.start()
        self._started = True

    def _load_policies(self) -> None:
        for runtime in self.runtimes.values():
            weights = None
            while True:
                try:
                    weights = runtime.manager.policy_queue.get_nowait()
                except AgentManagerQueue.Empty:
                    break
            if weights is not None:
                runtime.policy.load_weights(weights)

    def advance(self, timeout: float = 1.0) -> int:
        """One round: the steps of every ready worker processed, their next actions sent.
        Returns how many worker steps were processed (0 if none came back in ``timeout`` s)."""
        if not self._started:
            self.start()
        self._load_policies()
        with self.perf.measure(PerfKind.ENV_WAIT), self.timers.scope("env_wait"):
            events = self.pool.poll(timeout)
        results: list[WorkerResult] = []
        for event in events:
            if isinstance(event, WorkerFault):
                self._handle_fault(event)
            elif event.generation == self.pool.generation(event.worker_id):
                results.append(event)
        if not results:
            return 0
        with self.perf.measure(PerfKind.PROCESSING), self.timers.scope("process_steps"):
            deciding = self._process(results)
        with self.perf.measure(PerfKind.INFERENCE), self.timers.scope("inference"):
            actions = self._act(deciding)
        # An in-process pool steps its environment here; a subprocess pool only sends.
        with self.perf.measure(PerfKind.ENV_WAIT), self.timers.scope("env_step"):
            for result in results:
                self.pool.step(result.worker_id, actions.get(result.worker_id, {}))
        self.env_steps += len(results)
        self.perf.add_env_steps(len(results))
        return len(results)

    def _process(self, results: list[WorkerResult]) -> dict[str, list[tuple[int, DecisionSteps]]]:
        deciding: dict[str, list[tuple[int, DecisionSteps]]] = defaultdict(list)
        for result in results:
            worker_id = result.worker_id
            self._has_stepped.add(worker_id)
            for behavior_id, spec in result.new_specs.items():
                if behavior_id not in self.runtimes:
                    self.runtimes[behavior_id] = self._create_runtime(behavior_id, spec.to_spec())
            for behavior_id, record in result.steps.items():
                runtime = self.runtimes.get(behavior_id)
                if runtime is None:  # the spec came in a generation that was dropped
                    continue
                decision, terminal = record.to_steps()
                previous = self._last_action.pop((worker_id, behavior_id), None)
                runtime.manager.add_experiences(decision, terminal, worker_id, previous)
                n = len(decision) + len(terminal)
                self.agent_steps += n
                self.agent_steps_by_behavior[behavior_id] += n
                if len(decision) > 0:
                    deciding[behavior_id].append((worker_id, decision))
            if result.env_stats:
                stats = {k: [(v, _StatsAggregation(a)) for v, a in values] for k, values in result.env_stats.items()}
                for runtime in self.runtimes.values():
                    runtime.manager.record_environment_stats(stats, worker_id)
        return deciding

    def _act(self, deciding: dict[str, list[tuple[int, DecisionSteps]]]) -> dict[int, dict[str, ActionTuple]]:
        actions: dict[int, dict[str, ActionTuple]] = defaultdict(dict)
        for behavior_id, parts in deciding.items():
            runtime = self.runtimes[behavior_id]
            spec = runtime.policy.behavior_spec
            mask_width = int(sum(spec.action_spec.discrete_branches))
            if len(parts) == 1:
                worker_id, decision = parts[0]
                info = runtime.policy.act(decision.obs, allowed_actions(decision, mask_width), decision.agent_id)
                self._last_action[(worker_id, behavior_id)] = info
                actions[worker_id][behavior_id] = info.env_actions
                continue
            n_sensors = len(spec.observation_specs)
            obs = [np.concatenate([d.obs[i] for _, d in parts]) for i in range(n_sensors)]
            masks = None
            if mask_width:
                masks = np.concatenate([
                    m if (m := allowed_actions(d, mask_width)) is not None else np.ones((len(d), mask_width), bool)
                    for _, d in parts
                ])
            agent_ids = np.concatenate([d.agent_id for _, d in parts])
            info = runtime.policy.act(obs, masks, agent_ids)
            start = 0
            for worker_id, decision in parts:
                stop = start + len(decision)
                share = slice_action_info(info, start, stop)
                self._last_action[(worker_id, behavior_id)] = share
                actions[worker_id][behavior_id] = share.env_actions
                start = stop
        return actions

    def _handle_fault(self, fault: WorkerFault) -> None:
        worker_id = fault.worker_id
        if fault.generation != self.pool.generation(worker_id):
            return
        if not fault.retriable:
            raise RunEnvironmentError(fault.message)
        if fault.generation == 0 and worker_id not in self._has_stepped:
            raise RunEnvironmentError(f"{fault.message} (while starting worker {worker_id}; not retried)")
        now = self._clock()
        if not self.restarts.allows(worker_id, now):
            raise RunEnvironmentError(
                f"worker {worker_id} {fault.kind.value} and is past its restart limit "
                f"({self.restarts.describe()}): {fault.message}"
            )
        logger.warning("Restarting worker[%d] after '%s'", worker_id, fault.message)
        self.restarts.record(worker_id, now)
        self.restart_count += 1
        for runtime in self.runtimes.values():
            runtime.manager.discard_worker(worker_id)
        for key in [k for k in self._last_action if k[0] == worker_id]:
            del self._last_action[key]
        self._has_stepped.discard(worker_id)
        self.pool.restart(worker_id)

    def trajectory_queues(self) -> Iterator[AgentManagerQueue]:
        for runtime in self.runtimes.values():
            yield runtime.manager.trajectory_queue

    def close(self) -> None:
        """End every environment; nothing collected is published (the run is over)."""
        self.pool.close()
