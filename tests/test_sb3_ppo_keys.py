"""Stable-Baselines3's PPO choices as agents-learn keys (docs/gymnasium.md), in PPO and POCA:
``adam_epsilon`` reaches the optimiser, ``epsilon_floor`` ends the linear clip schedule, and
``max_grad_norm`` clips every minibatch's gradient; unset, each is ML-Agents' (1e-8, 0.1, no
clipping). The activation is tested with the networks (tests/test_networks.py), the learning
they bring with CartPole (tests/test_gymnasium_run.py)."""

from __future__ import annotations

import attrs
import pytest
import torch

from stats import StatsReporter
from tests.steps import behavior_spec
from tests.test_poca_run import grouped_trajectories
from tests.test_ppo_trainer import SPEC, settings, trajectory
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.settings import POCASettings, PPOSettings, TrainerSettings

SB3 = {"epsilon_floor": 0.0, "max_grad_norm": 0.5, "adam_epsilon": 1e-5}


def ppo(**keys) -> PPO:
    behavior = settings(hyperparameters=PPOSettings(batch_size=16, buffer_size=32, num_epoch=2, **keys))
    learner = PPO(behavior_name="Walker", behavior_spec=SPEC, settings=behavior, stats_reporter=StatsReporter("W"))
    for seed in range(5):
        learner.add(trajectory(seed))
    return learner


def poca(**keys) -> POCA:
    behavior = TrainerSettings(
        trainer_type="poca", hyperparameters=POCASettings(batch_size=2, buffer_size=2, num_epoch=3, **keys)
    )
    learner = POCA(
        behavior_name="T", behavior_spec=behavior_spec(), settings=behavior, stats_reporter=StatsReporter("T")
    )
    for group_trajectory in grouped_trajectories().values():
        learner.add(group_trajectory)
    return learner


@pytest.mark.parametrize("make", [ppo, poca], ids=["ppo", "poca"])
@pytest.mark.parametrize("keys", [{}, SB3], ids=["ml-agents", "sb3"])
def test_each_key_reaches_the_update_and_unset_is_mlagents(make, keys, monkeypatch):
    clipped_at: list[float] = []
    clip = torch.nn.utils.clip_grad_norm_

    def recording_clip(parameters, max_norm, *args, **kwargs):
        clipped_at.append(max_norm)
        return clip(parameters, max_norm, *args, **kwargs)

    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", recording_clip)
    learner = make(**keys)
    max_steps = learner.settings.max_steps
    assert learner.optimizer.param_groups[0]["eps"] == keys.get("adam_epsilon", 1e-8)
    start, end = learner.schedules(0)[2], learner.schedules(max_steps)[2]
    assert (start, end) == (0.2, keys.get("epsilon_floor", 0.1))
    minibatches = len(learner.buffer) // learner.hyperparameters.batch_size * learner.hyperparameters.num_epoch
    learner.update(max_steps // 2)
    assert clipped_at == ([0.5] * minibatches if keys else [])


def test_a_clipped_update_differs_from_an_unclipped_one():
    """The clip changes the step (Adam undoes one uniform rescaling, not the changing ones)."""
    clipped, plain = ppo(max_grad_norm=1e-3), ppo()
    clipped.update(10)
    plain.update(10)
    after = dict(clipped.policy.actor.named_parameters())
    assert any(not torch.equal(after[name], p) for name, p in plain.policy.actor.named_parameters())
    assert attrs.evolve(plain.hyperparameters, max_grad_norm=1e-3) == clipped.hyperparameters
