"""An env runner: one worker's environment, a CPU copy of each behavior's policy, and that
behavior's AgentProcessor, stepped in place. The learner gets whole trajectories back with the
stats and episode rewards they produced, never a per-step round trip; this is what a Ray actor
runs (:mod:`orchestration.ray_env_manager`), and it is plain Python so tests drive it directly.

A runner acts with the weights it was last sent; it stops a sample early when its environment
shows a behavior it has no policy for yet (the learner creates the trainer from the spec it
ships and sends the policy). Environment errors come back as a :class:`WorkerFault` value, as
from any pool, so the learner decides on restarts.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple
from torch import Tensor

from envs.parameters import ParameterValue
from envs.workers import (
    EnvLaunch,
    OpenEnv,
    SpecRecord,
    WorkerFault,
    WorkerResult,
    classify_error,
    open_environment,
    worker_port,
)
from envs.workers.pool import apply_and_step, observe, with_parameters
from orchestration.stepping import LastActions, decide_steps, read_steps, record_env_stats, record_step
from processors import AgentManager, BehaviorIdentifiers, Trajectory
from stats import StatsAggregationMethod, StatsReporter
from trainers.networks.policy import NormalizerStats, PolicyBlueprint, TorchPolicy
from trainers.seeding import team_seed


@attrs.frozen
class ReportedStat:
    """One call a runner's processor made on its stats reporter, replayed on the learner's."""

    key: str
    values: np.ndarray
    aggregation: StatsAggregationMethod


class RecordingReporter(StatsReporter):
    """A stats reporter that keeps the calls made on it, to be shipped and replayed."""

    __slots__ = ("calls",)

    def __init__(self, category: str) -> None:
        super().__init__(category)
        self.calls: list[ReportedStat] = []

    def add_stat(
        self, key: str, value: float, aggregation: StatsAggregationMethod = StatsAggregationMethod.AVERAGE
    ) -> None:
        self.calls.append(ReportedStat(key, np.asarray([value], np.float64), aggregation))

    def add_stats(
        self,
        key: str,
        values: np.ndarray | Sequence[float],
        aggregation: StatsAggregationMethod = StatsAggregationMethod.AVERAGE,
    ) -> None:
        self.calls.append(ReportedStat(key, np.array(values, np.float64).reshape(-1), aggregation))

    def take(self) -> list[ReportedStat]:
        calls, self.calls = self.calls, []
        return calls


@attrs.frozen
class RunnerBatch:
    """What one call on a runner produced. Per behavior id: finished trajectories (uint8
    images stay uint8), stats calls, the cumulative rewards of episodes that ended, agent
    steps; plus specs first seen, env steps taken, and a fault if the environment failed."""

    worker_id: int
    generation: int
    trajectories: dict[str, list[Trajectory]]
    stats: dict[str, list[ReportedStat]]
    episode_rewards: dict[str, list[np.ndarray]]
    agent_steps: dict[str, int]
    new_specs: dict[str, SpecRecord]
    env_steps: int
    env_seconds: float
    fault: WorkerFault | None = None


@attrs.define
class _Behavior:
    policy: TorchPolicy
    manager: AgentManager
    reporter: RecordingReporter
    rewards: list[np.ndarray]


class EnvRunner:
    """Worker ``worker_id`` (generation ``generation``) of ``launch``: see the module docstring.

    ``policy_seed``: the stream this runner's policies sample from (distinct per runner).
    """

    def __init__(self, launch: EnvLaunch, worker_id: int, generation: int, policy_seed: int) -> None:
        self.worker_id = worker_id
        self.generation = generation
        self._launch = launch
        self._policy_seed = policy_seed
        self._opened: OpenEnv | None = None
        self._known: set[str] = set()
        self._pending: WorkerResult | None = None  # the observation not yet acted on
        self._behaviors: dict[str, _Behavior] = {}
        self._last_action: LastActions = {}
        self._new_specs: dict[str, SpecRecord] = {}
        self._agent_steps: dict[str, int] = defaultdict(int)

    # ------------------------------------------------------------------ set-up

    def add_behavior(self, behavior_id: str, blueprint: PolicyBlueprint, time_horizon: int) -> None:
        """Act for ``behavior_id`` with a policy built from ``blueprint`` from now on."""
        if behavior_id in self._behaviors:
            self._behaviors[behavior_id].policy.load_weights(blueprint.weights)
            return
        team = BehaviorIdentifiers.from_name_behavior_id(behavior_id).team_id
        policy = blueprint.build(seed=team_seed(self._policy_seed, team))
        reporter = RecordingReporter(behavior_id)
        manager = AgentManager(policy, behavior_id, reporter, time_horizon, threaded=False)
        rewards: list[np.ndarray] = []
        manager.episode_reward_listeners.append(lambda r: rewards.append(np.array(r, np.float32)))
        self._behaviors[behavior_id] = _Behavior(policy, manager, reporter, rewards)

    def set_weights(self, behavior_id: str, weights: Mapping[str, Tensor]) -> None:
        """Act for ``behavior_id`` with these weights from the next step on."""
        self._behaviors[behavior_id].policy.load_weights(weights)

    def set_normalizer_stats(self, behavior_id: str, stats: NormalizerStats) -> None:
        """Normalise ``behavior_id``'s observations with the trainer's statistics from the next
        step on (the weights stay), as a local run acts with them after every trajectory."""
        self._behaviors[behavior_id].policy.load_normalizer_stats(stats)

    def set_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        """Environment parameters for the environment (and for a reopened one)."""
        self._launch = with_parameters(self._launch, parameters)
        if self._opened is not None:
            self._opened.set_parameters(parameters)

    # ------------------------------------------------------------------ stepping

    def start(self) -> RunnerBatch:
        """Open the environment and take its first observation."""
        started = time.perf_counter()
        try:
            if self._launch.log_folder is not None:  # on another node the run's folder may not exist
                os.makedirs(self._launch.log_folder, exist_ok=True)
            self._opened = open_environment(self._launch, self.worker_id)
            self._observe(time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - a fault value
            return self._batch(0, 0.0, self._fault(error))
        return self._batch(0, time.perf_counter() - started)

    def reset(self) -> RunnerBatch:
        """Reset the environment: unfinished trajectories are dropped, nothing is published."""
        if self._opened is None:
            return self.start()
        started = time.perf_counter()
        try:
            self._opened.env.reset()
            for behavior in self._behaviors.values():
                behavior.manager.discard_worker(self.worker_id)
            self._last_action.clear()
            self._observe(time.perf_counter() - started)
        except Exception as error:  # noqa: BLE001 - a fault value
            return self._batch(0, 0.0, self._fault(error))
        return self._batch(0, time.perf_counter() - started)

    def sample(self, max_env_steps: int, max_seconds: float) -> RunnerBatch:
        """Step the environment up to ``max_env_steps`` times (or ``max_seconds``), acting with
        the local policies; stops early at a behavior without a policy yet."""
        started = time.perf_counter()
        env_seconds = 0.0
        steps = 0
        try:
            while steps < max_env_steps and self._pending is not None:
                pending = self._pending
                if any(b not in self._behaviors for b in pending.steps):
                    break
                actions = self._process(pending)
                assert self._opened is not None
                seconds = apply_and_step(self._opened, actions)
                env_seconds += seconds
                self._observe(seconds)
                steps += 1
                if time.perf_counter() - started >= max_seconds:
                    break
        except Exception as error:  # noqa: BLE001 - a fault value
            return self._batch(steps, env_seconds, self._fault(error))
        return self._batch(steps, env_seconds)

    def close(self) -> None:
        """End the environment."""
        opened, self._opened = self._opened, None
        if opened is not None:
            opened.env.close()

    def _observe(self, env_seconds: float) -> None:
        assert self._opened is not None
        result = observe(self._opened, self._known, self.worker_id, self.generation, env_seconds)
        self._new_specs.update(result.new_specs)
        self._pending = result

    def _process(self, result: WorkerResult) -> dict[str, ActionTuple]:
        """Decide the next actions, then hand the steps to the processors (the env manager's
        order and parts: :mod:`orchestration.stepping`)."""
        steps = read_steps(result, self._behaviors, self._last_action)
        actions = decide_steps(steps, self._last_action, recorded=False).get(self.worker_id, {})
        for step in steps:
            self._agent_steps[step.behavior_id] += record_step(step)
        record_env_stats(result, self._behaviors)
        return actions

    def _fault(self, error: BaseException) -> WorkerFault:
        kind, message, retriable = classify_error(error, self.worker_id, worker_port(self._launch, self.worker_id))
        self._pending = None
        return WorkerFault(self.worker_id, self.generation, kind, message, retriable)

    def _batch(self, env_steps: int, env_seconds: float, fault: WorkerFault | None = None) -> RunnerBatch:
        trajectories: dict[str, list[Trajectory]] = {}
        stats: dict[str, list[ReportedStat]] = {}
        rewards: dict[str, list[np.ndarray]] = {}
        for behavior_id, behavior in self._behaviors.items():
            trajectories[behavior_id] = behavior.manager.trajectory_queue.drain()
            stats[behavior_id] = behavior.reporter.take()
            rewards[behavior_id], behavior.rewards[:] = list(behavior.rewards), []
        batch = RunnerBatch(
            worker_id=self.worker_id,
            generation=self.generation,
            trajectories=trajectories,
            stats=stats,
            episode_rewards=rewards,
            agent_steps=dict(self._agent_steps),
            new_specs=self._new_specs,
            env_steps=env_steps,
            env_seconds=env_seconds,
            fault=fault,
        )
        self._new_specs = {}
        self._agent_steps = defaultdict(int)
        return batch
