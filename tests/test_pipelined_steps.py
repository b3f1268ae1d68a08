"""Actions sent before the step is recorded: the same actions, memories and trajectories, seed
for seed, as recording first (``--debug``'s serial order), whether the pool steps in the caller
or in a background thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import attrs
import numpy as np
import pytest
import torch
import yaml
from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps

from envs.builtin import make_env
from envs.workers import InProcessPool, OpenEnv, WorkerFault, WorkerResult
from orchestration.env_manager import BehaviorRuntime, EnvManager
from processors import AgentManager, Trajectory
from stats import StatsReporter
from tests.steps import behavior_spec, decision_steps, terminal_steps
from trainers.networks.policy import TorchPolicy
from trainers.settings import MemorySettings, NetworkSettings


class SameIdRestarts:
    """Six agents whose episodes end every 3 to 5 steps, each ending agent deciding again in the
    same step under the same id (as Unity sends an agent that ends and starts an episode within
    one step); agent 5 decides every other step. Observations come from a seeded generator."""

    NAME = "Restarts?team=0"

    def __init__(self) -> None:
        self.behavior_specs = {self.NAME: behavior_spec([(3,)], continuous=1)}
        self._rng = np.random.default_rng(3)
        self._age = np.zeros(6, int)
        self._t = 0

    def get_steps(self, name: str) -> tuple[DecisionSteps, TerminalSteps]:
        ended = np.flatnonzero(self._age >= 3 + np.arange(6) % 3) if self._t else np.zeros(0, int)
        self._age[ended] = 0
        deciding = [i for i in range(6) if i != 5 or self._t % 2 == 0]
        terminal = terminal_steps(
            ended.tolist(),
            [self._rng.normal(size=(len(ended), 3)).astype(np.float32)],
            [1.0] * len(ended),
            (ended % 2 == 0).tolist(),
        )
        decision = decision_steps(
            deciding, [self._rng.normal(size=(len(deciding), 3)).astype(np.float32)], [0.1] * len(deciding)
        )
        return decision, terminal

    def set_actions(self, name: str, actions: ActionTuple) -> None:
        pass

    def step(self) -> None:
        self._t += 1
        self._age += 1

    def close(self) -> None:
        pass


MEMORY = NetworkSettings(hidden_units=8, num_layers=1, memory=MemorySettings(memory_size=4, sequence_length=4))


def open_simple(worker_id: int) -> OpenEnv:
    """Four areas of Simple, whose episodes end every 6 to 12 steps."""
    return OpenEnv(make_env("Simple", seed=5, num_areas=4, continuous_size=1, discrete_branches=2, max_step=12), dict)


def open_restarts(worker_id: int) -> OpenEnv:
    return OpenEnv(SameIdRestarts(), dict)  # type: ignore[arg-type]


def trajectories(
    opener: Callable[[int], OpenEnv], serial: bool, background: bool, network: NetworkSettings, steps: int = 80
) -> list[Trajectory]:
    """What a policy (seeded) collects in ``steps`` rounds of the env manager."""

    managers: list[AgentManager] = []

    def create(behavior_id, spec):
        policy = TorchPolicy(spec, network, seed=11)
        manager = AgentManager(policy, behavior_id, StatsReporter(behavior_id), 5, threaded=False)
        managers.append(manager)
        return BehaviorRuntime(manager, policy)

    env_manager = EnvManager(InProcessPool(opener=opener, background=background), create, serial=serial)
    try:
        for _ in range(steps):
            env_manager.advance(timeout=5.0)
    finally:
        env_manager.close()
    (manager,) = managers
    return manager.trajectory_queue.drain()


def fields(trajectory: Trajectory) -> dict[str, np.ndarray]:
    values = {field.name: getattr(trajectory, field.name) for field in attrs.fields(Trajectory)}
    arrays = {name: value for name, value in values.items() if isinstance(value, np.ndarray)}
    arrays.update({f"obs{i}": o for i, o in enumerate(trajectory.obs)})
    arrays.update({f"next_obs{i}": o for i, o in enumerate(trajectory.next_obs)})
    return arrays


@pytest.mark.parametrize("opener", [open_simple, open_restarts], ids=["simple", "same-id-restarts"])
@pytest.mark.parametrize("background", [False, True], ids=["in-caller", "background"])
@pytest.mark.parametrize("network", [MEMORY, NetworkSettings(hidden_units=8, num_layers=1)], ids=["lstm", "mlp"])
def test_sending_actions_first_changes_no_trajectory(opener, background, network):
    serial = trajectories(opener, serial=True, background=False, network=network)
    pipelined = trajectories(opener, serial=False, background=background, network=network)
    assert len(serial) == len(pipelined) > 40
    for one, other in zip(serial, pipelined, strict=True):
        assert one.agent_id == other.agent_id
        a, b = fields(one), fields(other)
        assert a.keys() == b.keys()
        for name in a:
            np.testing.assert_array_equal(a[name], b[name], err_msg=f"{one.agent_id}: {name}")
    if network.memory is not None:  # the memories compared are the policy's, not zeros
        assert any(np.abs(t.memories).sum() > 0 for t in serial)


STANDIN_RECURRENT = {
    "behaviors": {
        "Balance": {
            "trainer_type": "ppo",
            "hyperparameters": {"batch_size": 32, "buffer_size": 240, "learning_rate": 3e-4, "num_epoch": 2},
            "network_settings": {
                "normalize": True,
                "hidden_units": 16,
                "num_layers": 1,
                "memory": {"memory_size": 8, "sequence_length": 4},
            },
            "max_steps": 1200,
            "time_horizon": 16,
            "summary_freq": 600,
        }
    }
}


@pytest.mark.slow
def test_a_unity_build_trains_the_same_policy_stepped_in_the_background_as_in_debugs_serial_order(tmp_path):
    """The stand-in build (the real protocol; agents decide every 5 steps and come back under
    new ids each episode), a recurrent policy, five updates: the weights after the pipelined
    run equal those of ``--debug``'s serial run, bit for bit."""
    from orchestration.run import build_run
    from tests.support.standin import write_launcher
    from trainers.settings import load_run_options

    config = tmp_path / "balance.yaml"
    config.write_text(yaml.safe_dump(STANDIN_RECURRENT))
    launcher = write_launcher(str(tmp_path))
    weights = {}
    for debug in (False, True):
        options = load_run_options(config)
        options = attrs.evolve(
            options,
            debug=debug,
            env_settings=attrs.evolve(options.env_settings, env_path=launcher, seed=3, base_port=0, timeout_wait=60),
            checkpoint_settings=attrs.evolve(
                options.checkpoint_settings, results_dir=str(tmp_path / "results"), run_id=f"debug-{debug}"
            ),
        )
        run = build_run(options, console=False)
        assert isinstance(run.env_manager, EnvManager) and run.env_manager.serial is debug
        run.run()
        trainer = run.controller.trainers["Balance"]
        assert trainer.step >= 1200
        weights[debug] = {k: v.clone() for k, v in trainer.policy.actor.state_dict().items()}
    assert weights[False].keys() == weights[True].keys()
    for name, tensor in weights[True].items():
        assert torch.equal(weights[False][name], tensor), name


class Stalling:
    """One agent; ``step`` waits until ``release`` is set (or ``close`` is called), as a build
    that is busy (or gone) does."""

    NAME = "Stall?team=0"

    def __init__(self) -> None:
        self.behavior_specs = {self.NAME: behavior_spec([(1,)], continuous=1)}
        self.release = threading.Event()
        self.closed = False

    def get_steps(self, name: str) -> tuple[DecisionSteps, TerminalSteps]:
        return decision_steps([0], [np.zeros((1, 1), np.float32)], [0.0]), TerminalSteps.empty(
            self.behavior_specs[name]
        )

    def set_actions(self, name: str, actions: ActionTuple) -> None:
        pass

    def step(self) -> None:
        if not self.release.wait(30):
            raise TimeoutError("never released")
        if self.closed:
            raise RuntimeError("the environment was closed")

    def close(self) -> None:
        self.closed = True
        self.release.set()


def test_a_background_step_leaves_the_caller_free_and_its_result_or_fault_comes_from_poll():
    env = Stalling()
    pool = InProcessPool(opener=lambda worker_id: OpenEnv(env, dict), background=True)  # type: ignore[arg-type]
    pool.start()
    assert len(pool.poll(5.0)) == 1
    pool.step(0, {})  # returns at once: the step waits in the background
    assert pool.poll(0.05) == []
    env.release.set()
    [result] = pool.poll(5.0)
    assert isinstance(result, WorkerResult) and result.worker_id == 0
    env.release.clear()
    pool.step(0, {})
    start = time.monotonic()
    pool.close()  # the stalled step ends when the environment closes; close does not wait it out
    assert time.monotonic() - start < 5.0 and env.closed


def test_a_background_step_that_fails_is_a_fault():
    def opener(worker_id):
        env = make_env("Basic", seed=0)
        env.close()  # stepping a closed env raises
        return OpenEnv(env, dict)

    pool = InProcessPool(opener=opener, background=True)
    pool.start()
    pool.poll(5.0)
    pool.step(0, {})
    [fault] = pool.poll(5.0)
    assert isinstance(fault, WorkerFault) and fault.worker_id == 0
    pool.close()


def test_a_background_pool_opens_its_environment_in_the_background_and_the_first_observation_comes_from_poll():
    booted = threading.Event()
    env = Stalling()

    def booting(worker_id: int) -> OpenEnv:
        if not booted.wait(30):  # a build that takes its time to start
            raise TimeoutError("never booted")
        return OpenEnv(env, dict)  # type: ignore[arg-type]

    pool = InProcessPool(opener=booting, background=True)
    start = time.monotonic()
    pool.start()  # returns at once: the caller loads its trainers meanwhile
    assert time.monotonic() - start < 1.0 and pool.poll(0.05) == []
    booted.set()
    [first] = pool.poll(5.0)
    assert isinstance(first, WorkerResult) and first.steps[Stalling.NAME].to_steps()[0].agent_id.tolist() == [0]
    pool.close()


def test_a_background_pool_closed_while_its_environment_opens_closes_it_once_open():
    booted = threading.Event()
    env = Stalling()

    def booting(worker_id: int) -> OpenEnv:
        booted.wait(30)
        return OpenEnv(env, dict)  # type: ignore[arg-type]

    pool = InProcessPool(opener=booting, background=True)
    pool.start()
    pool.close()  # the run failed to wire up, or was stopped, while the build booted
    assert not env.closed
    booted.set()  # the build connects after all: nobody else would close it
    deadline = time.monotonic() + 5.0
    while not env.closed and time.monotonic() < deadline:
        time.sleep(0.01)
    assert env.closed


class SteppedInHalves(Stalling):
    """``Stalling`` whose step is sent and read apart (as a Unity build's), recording the thread
    of each half."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: list[str] = []

    def send_step(self) -> None:
        self.threads.append(threading.current_thread().name)

    def receive_step(self, within: float | None = None) -> bool:
        self.threads.append(threading.current_thread().name)
        return self.release.wait(30 if within is None else within)


def test_an_environment_stepped_in_halves_is_sent_by_step_and_read_by_poll_on_the_callers_thread():
    env = SteppedInHalves()
    pool = InProcessPool(opener=lambda worker_id: OpenEnv(env, dict), background=True)  # type: ignore[arg-type]
    pool.start()
    assert len(pool.poll(5.0)) == 1
    pool.step(0, {})  # sent: the build simulates while the caller records
    assert pool.poll(0.05) == []
    env.release.set()
    [result] = pool.poll(5.0)
    assert isinstance(result, WorkerResult)
    assert set(env.threads) == {threading.current_thread().name} and len(env.threads) >= 3
    env.release.clear()
    pool.step(0, {})
    start = time.monotonic()
    pool.close()  # the reply to the step sent is not waited for
    assert time.monotonic() - start < 5.0 and env.closed
