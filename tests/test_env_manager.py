"""Env managers: records across the pool boundary, batched inference across workers, restarts
that discard only the crashed worker's agents, restart budgets, child processes ended."""

from __future__ import annotations

import time

import attrs
import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from envs.builtin import make_env
from envs.workers import (
    EnvLaunch,
    EnvWorkerPool,
    FaultKind,
    InProcessPool,
    OpenEnv,
    RestartBudget,
    SpecRecord,
    StepsRecord,
    SubprocessPool,
    WorkerFault,
)
from orchestration.acting import slice_action_info
from orchestration.env_manager import BehaviorRuntime, EnvManager
from processors import ActionInfo, AgentManager
from stats import StatsReporter
from trainers.exceptions import RunEnvironmentError


class CountingPolicy:
    """Acts with zeros (continuous) / 0 (discrete) and records the batch size of each call."""

    memory_size = 0

    def __init__(self, spec):
        self.behavior_spec = spec
        self.calls: list[int] = []

    def act(self, obs, masks, agent_ids, memories=None):
        n = len(agent_ids)
        self.calls.append(n)
        c = self.behavior_spec.action_spec.continuous_size
        b = len(self.behavior_spec.action_spec.discrete_branches)
        cont = np.zeros((n, c), np.float32)
        disc = np.zeros((n, b), np.int32)
        sampled = np.zeros((n, c), np.float32)
        if c:
            sampled[:, 0] = np.arange(n)  # row of the batch, to check how rows are routed back
        return ActionInfo(
            np.asarray(agent_ids, np.int32),
            ActionTuple(cont, disc),
            sampled,
            disc,
            np.zeros((n, c), np.float32),
            np.zeros((n, b), np.float32),
            np.zeros(n, np.float32),
            np.zeros((n, 0), np.float32),
        )

    def load_weights(self, weights):
        raise AssertionError("no weights expected")


def runtimes_factory(store: dict):
    def create(behavior_id, spec):
        policy = CountingPolicy(spec)
        manager = AgentManager(policy, behavior_id, StatsReporter(behavior_id), 1000, threaded=False)
        store[behavior_id] = BehaviorRuntime(manager, policy)
        return store[behavior_id]

    return create


def test_records_round_trip_keep_dtypes():
    env = make_env("GridWorld", seed=3)
    name = next(iter(env.behavior_specs))
    spec = env.behavior_specs[name]
    decision, terminal = env.get_steps(name)
    assert SpecRecord.from_spec(spec).to_spec() == spec
    d2, t2 = StepsRecord.from_steps(decision, terminal).to_steps()
    for a, b in zip(decision.obs, d2.obs):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert [m.dtype for m in d2.action_mask] == [m.dtype for m in decision.action_mask]
    assert np.array_equal(d2.agent_id, decision.agent_id)
    assert len(t2) == len(terminal)


def test_restart_budget_lifetime_and_rate_limit():
    budget = RestartBudget(max_lifetime_restarts=2, rate_limit_n=1, period_s=60)
    assert budget.allows(0, 0.0)
    budget.record(0, 0.0)
    assert not budget.allows(0, 30.0)  # one restart in the last 60 s already
    assert budget.allows(1, 30.0)  # budgets are per worker
    assert budget.allows(0, 61.0)
    budget.record(0, 61.0)
    assert not budget.allows(0, 500.0)  # lifetime limit of 2 reached
    unlimited = RestartBudget(max_lifetime_restarts=-1, rate_limit_n=-1, period_s=60)
    for t in range(50):
        assert unlimited.allows(0, float(t))
        unlimited.record(0, float(t))


def test_slice_action_info_rows():
    policy = CountingPolicy(make_env("Basic", seed=0).behavior_specs["Basic?team=0"])
    info = policy.act(None, None, np.array([4, 5, 6]))
    part = slice_action_info(info, 1, 3)
    assert part.agent_ids.tolist() == [5, 6] and part.env_actions.discrete.shape == (2, 1)


def test_subprocess_pool_steps_workers_in_parallel_and_ends_children():
    runtimes: dict = {}
    launch = EnvLaunch(env_path="builtin:3DBall", seed=5)
    pool = SubprocessPool(launch, 2)
    manager = EnvManager(pool, runtimes_factory(runtimes))
    try:
        deadline = time.monotonic() + 60
        while manager.env_steps < 40 and time.monotonic() < deadline:
            manager.advance(timeout=5.0)
        processes = [w.process for w in pool._workers.values()]
    finally:
        manager.close()
    policy = runtimes["3DBall?team=0"].policy
    assert manager.env_steps >= 40
    # 12 agents per worker: one batch of 24 whenever both workers were ready together.
    assert set(policy.calls) <= {12, 24}
    assert all(not p.is_alive() for p in processes)


class ScriptedPool(EnvWorkerPool):
    """Two built-in Basic workers stepped in this process; worker 1 faults on request."""

    num_workers = 2

    def __init__(self, fault: WorkerFault | None = None, fault_at: int = 3):
        self.pools = [
            InProcessPool(opener=lambda w, i=i: OpenEnv(make_env("3DBall", seed=i, worker_id=i), lambda: {}))
            for i in range(2)
        ]
        self.fault, self.fault_at, self.calls = fault, fault_at, 0
        self.restarted: list[int] = []
        self.generations = [0, 0]

    def start(self):
        for p in self.pools:
            p.start()

    def step(self, worker_id, actions):
        self.pools[worker_id].step(0, actions)

    def set_parameters(self, parameters):
        for p in self.pools:
            p.set_parameters(parameters)

    def poll(self, timeout):
        self.calls += 1
        out = []
        for worker_id, p in enumerate(self.pools):
            for item in p.poll(0):
                out.append(attrs.evolve(item, worker_id=worker_id, generation=self.generations[worker_id]))
        if self.fault is not None and self.calls == self.fault_at:
            out = [i for i in out if i.worker_id != 1] + [self.fault]
        return out

    def restart(self, worker_id):
        self.restarted.append(worker_id)
        self.generations[worker_id] += 1
        self.pools[worker_id].restart(0)

    def generation(self, worker_id):
        return self.generations[worker_id]

    def close(self):
        for p in self.pools:
            p.close()


def test_restart_discards_only_the_crashed_workers_agents():
    fault = WorkerFault(1, 0, FaultKind.CRASHED, "worker 1 crashed", True)
    runtimes: dict = {}
    pool = ScriptedPool(fault, fault_at=4)
    manager = EnvManager(pool, runtimes_factory(runtimes), restarts=RestartBudget(1, 1, 60))
    for _ in range(3):
        manager.advance()
    agent_manager = runtimes["3DBall?team=0"].manager
    assert agent_manager.live_agents == 24
    manager.advance()  # worker 1 faults: restarted, its 12 agents forgotten, worker 0's kept
    assert pool.restarted == [1]
    assert agent_manager.live_agents == 12
    for _ in range(3):
        manager.advance()
    assert agent_manager.live_agents == 24  # the fresh worker's agents arrived
    manager.close()


def test_fault_past_budget_stops_with_the_reason():
    fault = WorkerFault(1, 0, FaultKind.HUNG, "worker 1: no answer for 60 s", True)
    pool = ScriptedPool(fault, fault_at=3)
    manager = EnvManager(pool, runtimes_factory({}), restarts=RestartBudget(0, 1, 60))
    with pytest.raises(RunEnvironmentError, match=r"worker 1 hung and is past its restart limit .*no answer"):
        for _ in range(5):
            manager.advance()
    manager.close()


def test_non_retriable_fault_and_startup_fault_are_not_restarted():
    bug = WorkerFault(1, 0, FaultKind.ERROR, "worker 1: ValueError: bad action", False)
    pool = ScriptedPool(bug, fault_at=3)
    manager = EnvManager(pool, runtimes_factory({}))
    with pytest.raises(RunEnvironmentError, match="bad action"):
        for _ in range(5):
            manager.advance()
    assert pool.restarted == []
    startup = WorkerFault(1, 0, FaultKind.CRASHED, "worker 1: could not start", True)
    pool = ScriptedPool(startup, fault_at=1)
    manager = EnvManager(pool, runtimes_factory({}))
    with pytest.raises(RunEnvironmentError, match="while starting worker 1; not retried"):
        manager.advance()
    assert pool.restarted == []


def test_in_process_pool_reports_an_env_error_as_a_fault():
    def opener(worker_id):
        env = make_env("Basic", seed=0)
        env.close()  # stepping a closed env raises
        return OpenEnv(env, lambda: {})

    pool = InProcessPool(opener=opener)
    pool.start()
    [first] = pool.poll(0)
    pool.step(0, {})
    [fault] = pool.poll(0)
    assert isinstance(fault, WorkerFault) and fault.worker_id == 0


def test_inference_is_one_batch_across_ready_workers_and_actions_go_back_to_each():
    runtimes: dict = {}
    pool = ScriptedPool()
    manager = EnvManager(pool, runtimes_factory(runtimes))
    for _ in range(5):
        manager.advance()
    assert runtimes["3DBall?team=0"].policy.calls == [24] * 5  # both workers, one forward pass
    for worker_id in (0, 1):  # worker 0 got rows 0-11 of the batch, worker 1 rows 12-23
        info = manager._last_action[(worker_id, "3DBall?team=0")]
        assert info.continuous_actions[:, 0].tolist() == list(range(12 * worker_id, 12 * worker_id + 12))
    manager.close()
