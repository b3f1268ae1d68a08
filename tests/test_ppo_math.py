"""PPO's maths on hand-computed numbers."""

import numpy as np
import pytest
import torch

from trainers.ppo.maths import clipped_surrogate_loss, clipped_value_loss, gae, value_loss
from trainers.settings import ScheduleType
from trainers.settings.schedules import decayed_value

REWARDS = [1.0, 0.0, 2.0]
VALUES = [0.5, 0.4, 0.3]


def test_gae_truncated_bootstraps_from_next_value():
    # deltas: 1 + .9*.4 - .5 = .86; 0 + .9*.3 - .4 = -.13; 2 + .9*1.0 - .3 = 2.6; decay .9*.8 = .72
    advantages, returns = gae(REWARDS, VALUES, next_value=1.0, terminated=False, gamma=0.9, lambd=0.8)
    np.testing.assert_allclose(advantages, [2.11424, 1.742, 2.6], rtol=1e-6)
    np.testing.assert_allclose(returns, np.array([2.11424, 1.742, 2.6]) + VALUES, rtol=1e-6)


def test_gae_terminated_ignores_next_value():
    # last delta: 2 - .3 = 1.7
    advantages, _ = gae(REWARDS, VALUES, next_value=1000.0, terminated=True, gamma=0.9, lambd=0.8)
    np.testing.assert_allclose(advantages, [1.64768, 1.094, 1.7], rtol=1e-6)


def test_gae_with_lambda_one_is_discounted_return_minus_value():
    advantages, returns = gae(REWARDS, VALUES, next_value=0.5, terminated=False, gamma=0.5, lambd=1.0)
    expected_returns = [1 + 0.5 * 0 + 0.25 * 2 + 0.125 * 0.5, 0 + 0.5 * 2 + 0.25 * 0.5, 2 + 0.5 * 0.5]
    np.testing.assert_allclose(returns, expected_returns, rtol=1e-6)


def test_clipped_surrogate_takes_pessimistic_side():
    ratio = torch.tensor([1.5, 0.5])
    loss = clipped_surrogate_loss(torch.log(ratio), torch.zeros(2), torch.tensor([1.0, -1.0]), epsilon=0.2)
    # unclipped [1.5, -0.5], clipped [1.2, -0.8] -> min [1.2, -0.8] -> mean 0.2
    assert loss.item() == pytest.approx(-0.2)


def test_clipped_surrogate_per_dimension_clips_each_dimension_on_its_own():
    # [B=2, k=2]; row 0 (advantage +1) ratios [1.5, 0.9]: min(r, clip(r)) = [1.2, 0.9];
    # row 1 (advantage -1) ratios [0.5, 1.1]: min(-r, -clip(r)) = [-0.8, -1.1]; mean over 4 = 0.05
    ratios = torch.tensor([[1.5, 0.9], [0.5, 1.1]])
    log_probs = torch.log(ratios).requires_grad_()
    loss = clipped_surrogate_loss(log_probs, torch.zeros(2, 2), torch.tensor([1.0, -1.0]), epsilon=0.2)
    assert loss.item() == pytest.approx(-0.05)
    loss.backward()
    # d(-r * A / 4)/d(log r) = -r * A / 4 where unclipped; 0 where the clip binds
    torch.testing.assert_close(log_probs.grad, torch.tensor([[0.0, -0.225], [0.0, 0.275]]))


def test_clipped_surrogate_joint_ratio_clips_the_whole_action():
    # the same numbers summed per row: joint ratios 1.35 (-> 1.2) and 0.55 (-> min(-0.55, -0.8))
    ratios = torch.tensor([[1.5, 0.9], [0.5, 1.1]])
    log_probs = torch.log(ratios).sum(dim=1).requires_grad_()
    loss = clipped_surrogate_loss(log_probs, torch.zeros(2), torch.tensor([1.0, -1.0]), epsilon=0.2)
    assert loss.item() == pytest.approx(-0.2)
    loss.backward()
    torch.testing.assert_close(log_probs.grad, torch.zeros(2))  # both clipped: no gradient at all


def test_value_loss_is_the_squared_error_that_mlagents_clipped_loss_computes():
    """ML-Agents clips around its stored "old values", which are the returns: the worse of the
    two errors is then always the unclipped one, whatever the estimates."""
    values = torch.tensor([1.0, -3.0, 2.05, 7.0])
    returns = torch.tensor([2.0, 4.0, 2.0, 7.0])
    expected = torch.tensor([1.0, 49.0, 0.0025, 0.0]).mean()
    torch.testing.assert_close(value_loss(values, returns), expected)
    torch.testing.assert_close(clipped_value_loss(values, returns, returns, epsilon=0.2), expected)
    mask = torch.tensor([True, False, True, True])
    torch.testing.assert_close(value_loss(values, returns, mask), torch.tensor([1.0, 0.0025, 0.0]).mean())


def test_clipped_value_loss_takes_worse_error():
    loss = clipped_value_loss(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([2.0]), epsilon=0.2)
    assert loss.item() == pytest.approx(3.24)  # clipped estimate 0.2: (2 - 0.2)^2 > (2 - 1)^2


def test_schedules():
    assert decayed_value(ScheduleType.CONSTANT, 3e-4, 1e-10, 500, 1000) == 3e-4
    assert decayed_value(ScheduleType.LINEAR, 0.2, 0.1, 500, 1000) == pytest.approx(0.15)
    assert decayed_value(ScheduleType.LINEAR, 0.2, 0.1, 5000, 1000) == pytest.approx(0.1)
