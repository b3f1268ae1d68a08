"""``--ray-address``: the ``--num-envs`` workers as Ray actors (:class:`EnvRunner`) spread over
a cluster's nodes, each acting with its own CPU copy of the policies and shipping finished
trajectories, instead of one step at a time through the learner.

The learner side keeps what the env manager keeps: one AgentManager per behavior id (its
bounded trajectory queue is what the trainer reads: a full queue blocks this loop, so a slow
trainer holds back the next samples and nothing is dropped), the policy queues (new weights
are put in the object store once and sent to every runner, and so are the observation
normalisers' statistics the trainer publishes between them, so runners act with the
normalisers the local env manager's policies act with), the restart budget, resets and
environment parameters. A runner whose environment fails, whose actor dies (its node lost), or
that does not answer within ``timeout_wait`` is restarted as a new actor, anywhere the cluster
has room, losing only its own unfinished trajectories.

``ray`` is imported here only, and this module only when ``--ray-address`` is given.
"""

from __future__ import annotations

import copy
import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs
import ray
from mlagents_envs.base_env import BehaviorSpec

from envs.parameters import ParameterValue
from envs.workers import EnvLaunch, FaultKind, RestartBudget, WorkerFault
from envs.workers.pool import with_parameters
from orchestration.build_generations import BuildGenerations
from orchestration.env_manager import BehaviorRuntime, allow_restart
from orchestration.env_runner import EnvRunner, RunnerBatch
from processors import AgentManagerQueue
from stats import PerfKind, PerfStats, Timers, timed_method
from stats.timer_names import ENV_STEP, ENV_WAIT, PROCESS_STEPS
from trainers.exceptions import RunEnvironmentError
from trainers.networks.policy import newest_updates

logger = logging.getLogger(__name__)

# Each sample call steps a runner's environment this many times at most, or for this long:
# long enough that the round trip is small beside it, short enough that new weights and
# back-pressure reach the runners quickly. Measured on 3DBall PPO (48k steps, 2 runners,
# seeds 1-3): with 64 the policy lag cost a third of the reward (13-17 against the subprocess
# pool's 19-28); with 16, 32-72, at 1.03x the pool's sampling speed.
STEPS_PER_SAMPLE = 16
SECONDS_PER_SAMPLE = 0.1
# Seconds between looks at which of the cluster's nodes are alive.
NODE_CHECK_INTERVAL_S = 2.0
# Seconds a runner's own start-up may take beyond the environment's timeout_wait.
START_GRACE_S = 30.0


class RayRunner(EnvRunner):
    """The env runner as a Ray actor (one CPU), able to say which node it runs on."""

    def node_id(self) -> str:
        return str(ray.get_runtime_context().get_node_id())


_REMOTE_RUNNER: Any = None


def remote_runner() -> Any:
    """The Ray actor class of :class:`RayRunner` (made once)."""
    global _REMOTE_RUNNER
    if _REMOTE_RUNNER is None:
        _REMOTE_RUNNER = ray.remote(num_cpus=1, max_restarts=0)(RayRunner)
    return _REMOTE_RUNNER


def connect(address: str) -> bool:
    """Join the Ray cluster at ``address`` (``auto``: the running one; ``local``: start one on
    this machine) unless this process is connected already. Returns whether it connected
    (and so must disconnect at the end)."""
    if ray.is_initialized():
        return False
    if address == "local":
        ray.init(include_dashboard=False, log_to_driver=False)
    else:
        ray.init(address=address, log_to_driver=False)
    return True


@attrs.define
class _Runner:
    actor: Any
    generation: int
    call: Any  # the ObjectRef of the call in flight
    sent_at: float
    node: Any = None  # ObjectRef of the id of the node it runs on
    stepped: bool = False  # has returned env steps (a failure after that is retried)
    placed: bool = False  # it has returned steps, and its node has been logged
    reset_pending: bool = False


class RayEnvManager:
    """The env manager's interface (``start``, ``advance``, ``request_reset``,
    ``set_env_parameters``, ``close``) over Ray env runners; see the module docstring."""

    def __init__(
        self,
        launch: EnvLaunch,
        num_workers: int,
        create_runtime: Callable[[str, BehaviorSpec], BehaviorRuntime],
        *,
        address: str,
        policy_seed: int,
        restarts: RestartBudget | None = None,
        perf: PerfStats | None = None,
        timers: Timers | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._launch = launch
        self.num_workers = num_workers
        self._create_runtime = create_runtime
        self._generations = BuildGenerations()
        self.address = address
        self._policy_seed = policy_seed
        self.restarts = restarts if restarts is not None else RestartBudget()
        self.perf = perf if perf is not None else PerfStats()
        self.timers = timers if timers is not None else Timers()
        self._clock = clock
        self.runtimes: dict[str, BehaviorRuntime] = {}
        self.runners: dict[int, _Runner] = {}
        self.agent_steps = 0
        self.agent_steps_by_behavior: dict[str, int] = defaultdict(int)
        self.restart_count = 0
        self.reset_count = 0
        self._started = False
        self._connected = False
        self._closed = False
        self._alive_nodes: set[str] = set()
        self._nodes_checked_at = 0.0

    def start(self) -> None:
        """Join the cluster and start every runner (once)."""
        if self._started:
            return
        self._started = True
        try:
            self._connected = connect(self.address)
        except Exception as error:  # noqa: BLE001 - Ray's own errors, named for the user
            raise RunEnvironmentError(
                f"--ray-address {self.address}: cannot join the Ray cluster ({type(error).__name__}: {error}); "
                "start one with `ray start --head`, or use local"
            ) from error
        self._alive_nodes = {str(n["NodeID"]) for n in ray.nodes() if n.get("Alive")}
        self._nodes_checked_at = self._clock()
        logger.info(
            "Ray cluster at %s: %d node(s), %g CPU(s); placing %d env runner(s)",
            self.address,
            len(self._alive_nodes),
            ray.cluster_resources().get("CPU", 0.0),
            self.num_workers,
        )
        for worker_id in range(self.num_workers):
            self._spawn(worker_id, 0)

    def _spawn(self, worker_id: int, generation: int) -> None:
        seed = self._policy_seed + 1000 * (worker_id + 1) + generation  # a stream per runner
        actor = remote_runner().options(scheduling_strategy="SPREAD").remote(self._launch, worker_id, generation, seed)
        for behavior_id, runtime in self.runtimes.items():
            actor.add_behavior.remote(behavior_id, runtime.policy.blueprint(), runtime.manager.max_trajectory_length)
        self.runners[worker_id] = _Runner(
            actor, generation, actor.start.remote(), self._clock(), node=actor.node_id.remote()
        )

    # ------------------------------------------------------------------ the loop

    def _load_policies(self) -> None:
        for behavior_id, runtime in self.runtimes.items():
            weights, stats = newest_updates(runtime.manager.policy_queue.drain())
            if weights is not None:
                runtime.policy.load_weights(weights)
            if stats is not None:
                runtime.policy.load_normalizer_stats(stats)
            # Each runner's next sample acts with them (an actor runs its calls in order); the
            # weights carry the normalisers, fresher statistics alone go as they come.
            if weights is not None:
                ref = ray.put(runtime.policy.get_weights())  # once in the object store for every runner
                for runner in self.runners.values():
                    runner.actor.set_weights.remote(behavior_id, ref)
            elif stats is not None:
                stats_ref = ray.put(stats)
                for runner in self.runners.values():
                    runner.actor.set_normalizer_stats.remote(behavior_id, stats_ref)

    @timed_method(ENV_STEP)
    def advance(self, timeout: float = 1.0) -> int:
        """Take every batch that has come back, publish it, and start the runner's next
        sample. Returns how many env steps the batches held."""
        if not self._started:
            self.start()
        self._load_policies()
        calls = {runner.call: worker_id for worker_id, runner in self.runners.items()}
        with self.perf.measure(PerfKind.ENV_WAIT), self.timers.scope(ENV_WAIT):
            ready, _ = ray.wait(list(calls), num_returns=1, timeout=timeout)
            if ready:
                ready, _ = ray.wait(list(calls), num_returns=len(calls), timeout=0)
        env_steps = 0
        for ref in ready:
            worker_id = calls[ref]
            runner = self.runners[worker_id]
            try:
                batch: RunnerBatch = ray.get(ref)
            except ray.exceptions.RayError as error:
                self._handle_fault(self._lost(worker_id, runner, error))
                continue
            env_steps += self._take(runner, batch)
        self._check_hung()
        self._report_lost_nodes()
        self.perf.add_env_steps(env_steps)
        return env_steps

    def _take(self, runner: _Runner, batch: RunnerBatch) -> int:
        """Publish ``batch`` and send the runner on (or reset it, dropping the batch)."""
        for behavior_id, spec in batch.new_specs.items():
            self._generations.check(batch.worker_id, behavior_id, spec)
            if behavior_id not in self.runtimes:
                runtime = self._create_runtime(behavior_id, spec.to_spec())
                self.runtimes[behavior_id] = runtime
                blueprint = runtime.policy.blueprint()
                for other in self.runners.values():
                    other.actor.add_behavior.remote(behavior_id, blueprint, runtime.manager.max_trajectory_length)
        if runner.reset_pending and batch.fault is None:
            runner.reset_pending = False
            self.reset_count += 1
            self._send(runner, runner.actor.reset.remote())
            return 0
        if batch.env_steps > 0 and not runner.placed:
            runner.stepped = runner.placed = True
            self._log_placement(batch.worker_id, runner)
        with self.perf.measure(PerfKind.PROCESSING), self.timers.scope(PROCESS_STEPS):
            for behavior_id, trajectories in batch.trajectories.items():
                manager = self.runtimes[behavior_id].manager
                for call in batch.stats.get(behavior_id, ()):
                    manager.stats_reporter.add_stats(call.key, call.values, call.aggregation)
                for rewards in batch.episode_rewards.get(behavior_id, ()):
                    for listener in manager.episode_reward_listeners:
                        listener(rewards)
                for trajectory in trajectories:
                    # Arrays from Ray's object store are read-only views: the trainer gets its own.
                    manager.trajectory_queue.put(copy.deepcopy(trajectory))  # blocks while the trainer is behind
            for behavior_id, n in batch.agent_steps.items():
                self.agent_steps += n
                self.agent_steps_by_behavior[behavior_id] += n
        if batch.fault is not None:  # what it finished before failing is published above
            self._handle_fault(batch.fault)
            return batch.env_steps
        self._send(runner, runner.actor.sample.remote(STEPS_PER_SAMPLE, SECONDS_PER_SAMPLE))
        return batch.env_steps

    def _log_placement(self, worker_id: int, runner: _Runner) -> None:
        """Say which node a runner is stepping on (its first batch is in, so the node-id call
        queued behind its start has run)."""
        try:
            node_id = str(ray.get(runner.node, timeout=5.0))
        except ray.exceptions.RayError:
            return
        logger.info("Env runner[%d] (generation %d) steps on Ray node %s", worker_id, runner.generation, node_id[:12])

    def _send(self, runner: _Runner, call: Any) -> None:
        runner.call = call
        runner.sent_at = self._clock()

    def _check_hung(self) -> None:
        now = self._clock()
        limit = self._launch.timeout_wait + START_GRACE_S
        for worker_id, runner in list(self.runners.items()):
            if now - runner.sent_at > limit and not ray.wait([runner.call], timeout=0)[0]:
                ray.kill(runner.actor, no_restart=True)
                self._handle_fault(
                    WorkerFault(
                        worker_id,
                        runner.generation,
                        FaultKind.HUNG,
                        f"env runner {worker_id} did not answer in {limit:g} s (--timeout-wait "
                        f"{self._launch.timeout_wait:g} s and {START_GRACE_S:g} s for a runner's start-up; a "
                        "slow or busy node needs a longer --timeout-wait)",
                        True,
                    )
                )

    def _lost(self, worker_id: int, runner: _Runner, error: BaseException) -> WorkerFault:
        """The fault of a runner whose actor died or cannot be reached."""
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return WorkerFault(worker_id, runner.generation, FaultKind.LOST, f"env runner {worker_id} died: {text}", True)

    def _report_lost_nodes(self) -> None:
        """Log every node the cluster has lost since the last look (every few seconds)."""
        now = self._clock()
        if now - self._nodes_checked_at < NODE_CHECK_INTERVAL_S:
            return
        self._nodes_checked_at = now
        alive = {str(n["NodeID"]) for n in ray.nodes() if n.get("Alive")}
        for node_id in sorted(self._alive_nodes - alive):
            logger.warning(
                "Ray node %s was lost from the cluster; its env runners are placed again where there is room",
                node_id[:12],
            )
        self._alive_nodes = alive

    def _handle_fault(self, fault: WorkerFault) -> None:
        worker_id = fault.worker_id
        runner = self.runners[worker_id]
        if fault.generation != runner.generation:
            return
        # an environment that fails to start is a setting to fix; a runner lost before its
        # first batch (killed, its node gone) is retried like any other
        starting = fault.generation == 0 and not runner.stepped and fault.kind is not FaultKind.LOST
        allow_restart(fault, self.restarts, self._clock(), starting=starting)
        logger.warning("Restarting env runner[%d] after '%s'", worker_id, fault.message)
        self.restart_count += 1
        ray.kill(runner.actor, no_restart=True)
        self._spawn(worker_id, runner.generation + 1)
        self.runners[worker_id].stepped = True  # a restarted runner's start failures are retried

    # ------------------------------------------------------------------ controls

    def request_reset(self) -> None:
        """Reset every environment: each runner's batch in flight is dropped (with its
        unfinished trajectories, as the env manager's reset), then the runner resets."""
        for runner in self.runners.values():
            runner.reset_pending = True

    def set_env_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        """Send environment parameters to every runner and to every one started later."""
        self._launch = with_parameters(self._launch, parameters)
        for runner in self.runners.values():
            runner.actor.set_parameters.remote(dict(parameters))

    def trajectory_queues(self) -> Iterator[AgentManagerQueue]:
        for runtime in self.runtimes.values():
            yield runtime.manager.trajectory_queue

    def close(self) -> None:
        """End every runner (and the cluster, if this run started it). Idempotent."""
        if self._closed or not self._started or not ray.is_initialized():
            self._closed = True  # (never joined: any Ray call now would start a local cluster)
            return
        self._closed = True
        idle = [f"runner[{i}] (generation {r.generation})" for i, r in self.runners.items() if not r.placed]
        if idle:  # the run trains on whichever runner is ready: a short one can end before one starts
            logger.warning(
                "Env %s returned no steps before the run ended (still starting: a run shorter "
                "than a runner's start-up, or a slow node)",
                ", ".join(idle),
            )
        closing = [runner.actor.close.remote() for runner in self.runners.values()]
        try:
            ray.wait(closing, num_returns=len(closing), timeout=10.0)
        finally:
            for runner in self.runners.values():
                ray.kill(runner.actor, no_restart=True)
            self.runners.clear()
            if self._connected:
                ray.shutdown()
