"""The env manager: steps from a worker pool to the processors, actions from the policies,
batched across every worker that is ready.

Each ``advance()`` drains the policy queues, takes the steps of every worker that is ready (a
slow worker does not hold back the others), acts for all deciding agents of a behavior across
the ready workers in one batch, sends each worker its actions, and then hands the steps to each
behavior's AgentManager while the workers simulate. Faults come back from the pool as values;
a retriable one within the restart budget restarts that worker as a new generation, discarding
only its agents (``AgentManager.discard_worker``) so healthy workers keep their partial
trajectories.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Protocol

import attrs
from mlagents_envs.base_env import ActionTuple, BehaviorSpec

from envs.parameters import ParameterValue
from envs.workers import EnvWorkerPool, RestartBudget, WorkerFault, WorkerResult
from orchestration.build_generations import BuildGenerations
from orchestration.demo_recorder import DemoRecorder
from orchestration.stepping import (
    BehaviorStep,
    LastActions,
    decide_steps,
    read_steps,
    record_env_stats,
    record_step,
)
from processors import AgentManager, AgentManagerQueue
from stats import PerfKind, PerfStats, Timers, timed_method
from stats.timer_names import ENV_STEP, ENV_WAIT, PROCESS_STEPS, STEP_WORKERS, TAKE_STEP
from trainers.exceptions import RunEnvironmentError
from trainers.networks.policy import TorchPolicy, newest_updates

logger = logging.getLogger(__name__)


@attrs.define
class BehaviorRuntime:
    """The env-side objects of one behavior id: its AgentManager and inference policy."""

    manager: AgentManager
    policy: TorchPolicy  # the inference copy (CPU), refreshed from the policy queue
    weights_version: int = 0  # counts the weights loaded into ``policy`` (local-inference clients refresh on it)


class StepSource(Protocol):
    """What the controller drives: :class:`EnvManager` (a worker pool, inference here) or
    ``orchestration.ray_env_manager.RayEnvManager`` (runners that act where they are)."""

    agent_steps_by_behavior: dict[str, int]

    def start(self) -> None: ...

    def advance(self, timeout: float = 1.0) -> int: ...

    def request_reset(self) -> None: ...

    def set_env_parameters(self, parameters: Mapping[str, ParameterValue]) -> None: ...

    def close(self) -> None: ...


def allow_restart(fault: WorkerFault, restarts: RestartBudget, now: float, *, starting: bool) -> None:
    """Record a restart of the fault's worker, or raise RunEnvironmentError saying why there is
    none: the fault is not retriable, the worker failed while ``starting`` (a setting to fix,
    not retried), or it is past its restart budget."""
    worker_id = fault.worker_id
    if not fault.retriable:
        raise RunEnvironmentError(fault.message)
    if starting:
        raise RunEnvironmentError(f"{fault.message} (while starting worker {worker_id}; not retried)")
    if not restarts.allows(worker_id, now):
        raise RunEnvironmentError(
            f"worker {worker_id} {fault.kind.value} and is past its restart limit "
            f"({restarts.describe()}): {fault.message}"
        )
    restarts.record(worker_id, now)


class EnvManager:
    """Drives a pool for the trainer controller; see the module docstring.

    ``create_runtime(behavior_id, spec)`` is called the first time a behavior appears (on any
    worker). ``perf`` receives env-wait, inference and processing intervals. ``recorder``
    (``--record-demo``) is handed every step with the ActionInfo it follows, and closed by
    :meth:`close`.

    Actions go out before the steps they answer are recorded, so an environment that steps
    elsewhere (a build, a worker process) simulates while the processors record and the
    trainers update. ``serial=True`` (``--debug``) records first, as ML-Agents does; the
    actions, trajectories and updates are the same either way. ``started``: the run started the
    pool already, so its builds boot while the trainers load.
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
        recorder: DemoRecorder | None = None,
        serial: bool = False,
        started: bool = False,
    ):
        self.pool = pool
        self.serial = serial
        self._create_runtime = create_runtime
        self._generations = BuildGenerations()
        self.restarts = restarts if restarts is not None else RestartBudget()
        self.perf = perf if perf is not None else PerfStats()
        self.timers = timers if timers is not None else Timers()
        self._clock = clock
        self.recorder = recorder
        self.runtimes: dict[str, BehaviorRuntime] = {}
        self._last_action: LastActions = {}
        self._has_stepped: set[int] = set()
        self.agent_steps = 0
        self.agent_steps_by_behavior: dict[str, int] = defaultdict(int)
        self.restart_count = 0
        self.reset_count = 0
        self._started = started  # the pool was started already (its first results come from poll)
        self._reset_pending: set[int] = set()
        self._reset_unsupported = False

    def start(self) -> None:
        """Open every environment (once; later calls do nothing)."""
        if self._started:
            return
        self.pool.start()
        self._started = True

    @property
    def env_steps(self) -> int:
        """Worker steps processed so far (counted once, by ``perf``)."""
        return self.perf.env_steps_total()

    def _load_policies(self) -> None:
        for runtime in self.runtimes.values():
            weights, stats = newest_updates(runtime.manager.policy_queue.drain())
            if weights is not None:
                runtime.policy.load_weights(weights)
                runtime.weights_version += 1
            if stats is not None:  # the trainer's normalisers moved since (no new model for clients)
                runtime.policy.load_normalizer_stats(stats)

    def set_env_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        """Send environment parameters (a curriculum's new lesson) to every worker, with its
        next step or reset, and to every worker restarted later."""
        self.pool.set_parameters(parameters)

    def request_reset(self) -> None:
        """Reset every environment (self-play's learning team changed, or a curriculum lesson
        that requires it, as ML-Agents does): each worker's next result is dropped, with its
        agents' unfinished trajectories (nothing is published, as ML-Agents' forced reset), and
        the worker is reset instead of stepped."""
        if self._reset_unsupported:
            return
        self._reset_pending = set(range(self.pool.num_workers))

    def _take_specs(self, result: WorkerResult) -> None:
        """The behaviors a worker sends for the first time (a spec is only ever sent once per
        worker): checked against the run's builds, and a runtime for each one new to the run."""
        for behavior_id, spec in result.new_specs.items():
            self._generations.check(result.worker_id, behavior_id, spec)
            if self.recorder is not None:
                self.recorder.note_build(behavior_id, spec.unity_package)
            if behavior_id not in self.runtimes:
                self.runtimes[behavior_id] = self._create_runtime(behavior_id, spec.to_spec())

    def _reset_worker(self, result: WorkerResult) -> bool:
        """Reset the worker of ``result`` (dropping its steps); False when the pool cannot
        (the result is then processed as usual, and no reset is requested again)."""
        worker_id = result.worker_id
        self._reset_pending.discard(worker_id)
        try:
            self.pool.reset(worker_id)
        except NotImplementedError as error:
            logger.warning("%s; environments are not reset when a reset is asked for", error)
            self._reset_unsupported = True
            self._reset_pending.clear()
            return False
        self._take_specs(result)
        self._forget_worker(worker_id)
        self.reset_count += 1
        return True

    @timed_method(ENV_STEP)
    def advance(self, timeout: float = 1.0) -> int:
        """One round: the steps of every ready worker processed, their next actions sent.
        Returns how many worker steps were processed (0 if none came back in ``timeout`` s)."""
        if not self._started:
            self.start()
        self._load_policies()
        with self.perf.measure(PerfKind.ENV_WAIT), self.timers.scope(ENV_WAIT):
            events = self.pool.poll(timeout)
        results: list[WorkerResult] = []
        for event in events:
            if isinstance(event, WorkerFault):
                self._handle_fault(event)
            elif event.generation == self.pool.generation(event.worker_id):
                reset = event.worker_id in self._reset_pending and self._reset_worker(event)
                if not reset:
                    results.append(event)
        if not results:
            return 0
        with self.perf.measure(PerfKind.PROCESSING), self.timers.scope(PROCESS_STEPS):
            steps = self._read(results)
        if self.serial:
            self._record(steps, results)
        with self.perf.measure(PerfKind.INFERENCE):
            actions = self._act(steps)
        # An in-process pool steps its environment here (or starts to, in a background thread);
        # a subprocess pool only sends.
        with self.perf.measure(PerfKind.ENV_WAIT), self.timers.scope(STEP_WORKERS):
            for result in results:
                self.pool.step(result.worker_id, actions.get(result.worker_id, {}))
        if not self.serial:
            self._record(steps, results)
        self.perf.add_env_steps(len(results))
        return len(results)

    def _read(self, results: list[WorkerResult]) -> list[BehaviorStep]:
        """Each ready worker's steps by behavior, with the actions they follow (new behaviors
        get their runtime first)."""
        steps = []
        for result in results:
            self._has_stepped.add(result.worker_id)
            self._take_specs(result)
            steps += read_steps(result, self.runtimes, self._last_action)
        return steps

    def _record(self, steps: list[BehaviorStep], results: list[WorkerResult]) -> None:
        """The steps into their behaviors' processors (and the demonstration recorder), and the
        environments' stats."""
        with self.perf.measure(PerfKind.PROCESSING), self.timers.scope(PROCESS_STEPS):
            for step in steps:
                n = record_step(step)
                self.agent_steps += n
                self.agent_steps_by_behavior[step.behavior_id] += n
                if self.recorder is not None:
                    spec = step.behavior.policy.behavior_spec
                    self.recorder.record(
                        step.worker_id, step.behavior_id, spec, step.decision, step.terminal, step.previous
                    )
            for result in results:
                record_env_stats(result, self.runtimes)

    @timed_method(TAKE_STEP)
    def _act(self, steps: list[BehaviorStep]) -> dict[int, dict[str, ActionTuple]]:
        """Each behavior's actions for its deciding agents on every ready worker, in one batch
        (before the steps are recorded, unless ``serial``: the memories are the same)."""
        return decide_steps(steps, self._last_action, recorded=self.serial, timers=self.timers)

    def _handle_fault(self, fault: WorkerFault) -> None:
        worker_id = fault.worker_id
        if fault.generation != self.pool.generation(worker_id):
            return
        starting = fault.generation == 0 and worker_id not in self._has_stepped
        allow_restart(fault, self.restarts, self._clock(), starting=starting)
        logger.warning("Restarting worker[%d] after '%s'", worker_id, fault.message)
        self.restart_count += 1
        self._forget_worker(worker_id)
        self._has_stepped.discard(worker_id)
        self.pool.restart(worker_id)

    def _forget_worker(self, worker_id: int) -> None:
        """Drop what the worker's agents had under way (trajectories, demonstration steps, the
        actions they were sent): it starts afresh, reset or restarted."""
        for runtime in self.runtimes.values():
            runtime.manager.discard_worker(worker_id)
        if self.recorder is not None:
            self.recorder.discard_worker(worker_id)
        for key in [k for k in self._last_action if k[0] == worker_id]:
            del self._last_action[key]

    def trajectory_queues(self) -> Iterator[AgentManagerQueue]:
        for runtime in self.runtimes.values():
            yield runtime.manager.trajectory_queue

    def close(self) -> None:
        """End every environment; nothing collected is published (the run is over). The
        demonstration files being recorded are completed."""
        try:
            self.pool.close()
        finally:
            if self.recorder is not None:
                self.recorder.close()
