"""Stable-Baselines3's PPO choices as agents-learn keys (docs/gymnasium.md), in PPO and POCA:
``adam_epsilon`` reaches the optimiser, ``epsilon_floor`` ends the linear clip schedule,
``max_grad_norm`` clips every minibatch's gradient, and ``advantage_normalization: minibatch``
normalises each minibatch's advantages, ``log_std_init`` starts the Gaussian's spread in the
environment's units; unset, each is ML-Agents' (1e-8, 0.1, no clipping, over the buffer, log
standard deviation 0 on the policy's side). The activation is tested with the networks (tests/test_networks.py), the learning
they bring with CartPole (tests/test_gymnasium_run.py)."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
import torch

import trainers.poca.algorithm
import trainers.ppo.algorithm
from stats import StatsReporter
from tests.steps import behavior_spec
from tests.test_poca_run import grouped_trajectories
from tests.test_ppo_trainer import SPEC, settings, trajectory
from trainers.exceptions import ConfigError
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.ppo.maths import clipped_surrogate_loss, normalized_advantages
from trainers.settings import (
    POCASettings,
    PPOSettings,
    TrainerSettings,
    structure_run_options,
    unstructure_run_options,
)

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


@pytest.mark.parametrize("make", [ppo, poca], ids=["ppo", "poca"])
@pytest.mark.parametrize("where", ["buffer", "minibatch"])
def test_advantages_are_normalised_over_the_buffer_or_each_minibatch(make, where, monkeypatch):
    """What reaches the surrogate: per minibatch, every minibatch at mean 0 and standard
    deviation 1; over the buffer (the default), the whole update's advantages are, a minibatch
    in general not."""
    seen: list[torch.Tensor] = []

    def recording_loss(log_probs, old_log_probs, advantages, epsilon, mask=None):
        seen.append(advantages.detach().clone())
        return clipped_surrogate_loss(log_probs, old_log_probs, advantages, epsilon, mask)

    for module in (trainers.ppo.algorithm, trainers.poca.algorithm):
        monkeypatch.setattr(module, "clipped_surrogate_loss", recording_loss)
    learner = make() if where == "buffer" else make(advantage_normalization=where)
    assert learner.hyperparameters.advantage_normalization == where
    whole = learner.buffer.to_batch(torch.device("cpu"))
    over_buffer = (whole.agent if isinstance(learner, POCA) else whole).advantages
    learner.update(10)
    assert len(seen) >= 2 and all(len(a) >= 2 for a in seen)
    means = torch.stack([a.mean() for a in seen])
    if where == "minibatch":
        stds = torch.stack([a.std(correction=0) for a in seen])
        assert torch.allclose(means, torch.zeros_like(means), atol=1e-5)
        assert torch.allclose(stds, torch.ones_like(stds), atol=1e-4)
    else:
        assert all(torch.isin(a, over_buffer).all() for a in seen)  # the buffer's values, as they are
        assert not torch.allclose(means, torch.zeros_like(means), atol=1e-3)


def test_a_minibatch_normalises_over_its_real_rows_and_leaves_padding_at_zero():
    advantages = torch.tensor([1.0, 3.0, 99.0, 5.0])
    real = torch.tensor([True, True, False, True])
    out = normalized_advantages(advantages, real)
    expected = (torch.tensor([1.0, 3.0, 5.0]) - 3.0) / torch.tensor([1.0, 3.0, 5.0]).std(correction=0)
    assert torch.allclose(out[real], expected) and out[2] == 0
    assert torch.equal(normalized_advantages(torch.tensor([7.0])), torch.tensor([7.0]))  # one row: as it is


@pytest.mark.parametrize("make", [ppo, poca], ids=["ppo", "poca"])
def test_log_std_init_sets_the_starting_spread_in_the_environments_units(make):
    """SB3's ``log_std_init: -2``: actions reach the environment with a standard deviation of
    e^-2 (the policy's own Gaussian is 3 times wider: its actions are divided by 3 on the way);
    unset, ML-Agents' start (log standard deviation 0 on the policy's side)."""
    assert torch.equal(make().policy.actor.log_std, torch.zeros_like(make().policy.actor.log_std))
    learner = make(log_std_init=-2.0)
    assert torch.allclose(learner.policy.actor.log_std, torch.full_like(learner.policy.actor.log_std, -2 + math.log(3)))
    size = learner.policy.behavior_spec.observation_specs[0].shape[0]
    rows = 20_000
    one_observation = [np.zeros((rows, size), np.float32)]
    actions = learner.policy.act(one_observation, None, np.arange(rows)).env_actions.continuous
    assert np.allclose(actions.std(axis=0), math.exp(-2), rtol=0.03)


def test_log_std_init_is_refused_where_there_are_no_continuous_actions_or_for_sac():
    discrete = behavior_spec(continuous=0, branches=(3,))
    behavior = settings(hyperparameters=PPOSettings(log_std_init=-1.0))
    with pytest.raises(ConfigError, match=r"behaviors\.Grid\.hyperparameters\.log_std_init: Grid has no continuous"):
        PPO(behavior_name="Grid", behavior_spec=discrete, settings=behavior, stats_reporter=StatsReporter("G"))
    with pytest.raises(ConfigError, match="log_std_init"):
        structure_run_options({"behaviors": {"B": {"trainer_type": "sac", "hyperparameters": {"log_std_init": -2}}}})
    written = unstructure_run_options(
        structure_run_options({"behaviors": {"A": {"hyperparameters": {"log_std_init": -2}}, "B": {}}})
    )
    assert written["behaviors"]["A"]["hyperparameters"]["log_std_init"] == -2
    assert "log_std_init" not in written["behaviors"]["B"]["hyperparameters"]  # ML-Agents 0.28 loads the file
