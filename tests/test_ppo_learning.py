"""PPO really learns: built-in tasks, through processors, queues and trainer threads, to a
reward that means "solved", with controls that must not get there."""

from __future__ import annotations

import threading

import attrs
import torch

from envs.builtin import make_env
from processors import AgentManager, BehaviorIdentifiers
from stats import StatsHub, StatsWriter
from trainers.in_process import BehaviorRuntime, InProcessEnvManager
from trainers.policy import TorchPolicy
from trainers.registry import TrainerRegistry
from trainers.settings import TrainerSettings, load_run_options
from trainers.trainer import TrainerThread


class RewardLog(StatsWriter):
    """Keeps the mean episode reward of every summary."""

    def __init__(self) -> None:
        self.rewards: list[float] = []

    def write_stats(self, category, values, step):
        if "Environment/Cumulative Reward" in values:
            self.rewards.append(values["Environment/Cumulative Reward"].mean)


def train(env_name: str, settings: TrainerSettings, *, seed: int = 1, num_areas: int = 1) -> list[float]:
    """Train one behavior of a built-in env with a threaded PPO trainer; summary rewards."""
    torch.set_num_threads(1)
    log = RewardLog()
    hub = StatsHub([log])
    registry = TrainerRegistry.with_plugins()
    stop = threading.Event()
    threads: list[TrainerThread] = []

    def create(behavior_id, spec):
        name = BehaviorIdentifiers.from_name_behavior_id(behavior_id).brain_name
        reporter = hub.reporter(name)
        trainer = registry.create(behavior_name=name, behavior_spec=spec, settings=settings,
                                  stats_reporter=reporter, checkpoints=None, seed=seed, device="cpu")
        policy = TorchPolicy(spec, settings.network_settings, seed=seed + 1)
        policy.load_weights(trainer.policy.get_weights())
        manager = AgentManager(policy, behavior_id, reporter, settings.time_horizon, threaded=True)
        trainer.subscribe_trajectory_queue(manager.trajectory_queue)
        trainer.publish_policy_queue(manager.policy_queue)
        thread = TrainerThread(trainer, stop)
        thread.start()
        threads.append(thread)
        return BehaviorRuntime(manager, policy)

    env_manager = InProcessEnvManager(make_env(env_name, seed=seed, num_areas=num_areas), create)
    try:
        while not threads or any(t.trainer.should_still_train for t in threads):
            env_manager.step()
            for thread in threads:
                thread.raise_if_failed()
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
        env_manager.close()
    return log.rewards


def config(name: str, **changes) -> TrainerSettings:
    settings = load_run_options(f"config/ppo/{name}.yaml").behavior_settings(name)
    return attrs.evolve(settings, threaded=True, **changes)


def test_ppo_solves_basic_discrete():
    rewards = train("Basic", config("Basic", max_steps=30_000, summary_freq=2_000), num_areas=8)
    assert rewards[-1] >= 0.9, rewards  # optimum 0.93; random play stays below 0.4


def test_basic_control_without_learning_stays_unsolved():
    frozen = config("Basic", max_steps=4_000, summary_freq=2_000)
    frozen = attrs.evolve(frozen, hyperparameters=attrs.evolve(frozen.hyperparameters, learning_rate=0.0))
    rewards = train("Basic", frozen, num_areas=8)
    assert max(rewards) < 0.6, rewards


def test_ppo_balances_3dball_continuous():
    settings = config("3DBall", max_steps=72_000, summary_freq=12_000)
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, buffer_size=4_000))
    rewards = train("3DBall", settings)
    assert rewards[-1] >= 10.0, rewards  # random play scores about 0.8; the optimum is 100
