"""SAC's maths, number by number, as ML-Agents' discrete/hybrid SAC defines each term."""

from __future__ import annotations

import math

import pytest
import torch

from trainers.sac import maths as sac_math


def test_target_entropies_are_mlagents():
    continuous, discrete = sac_math.target_entropies(3, (5, 2))
    assert continuous == -3.0
    assert discrete == pytest.approx([0.2 * math.log(5), 0.2 * math.log(2)])


def test_chosen_q_averages_each_branch_chosen_action():
    q = torch.tensor([[[1.0, 2.0, 3.0, 10.0, 20.0]]])  # B=1, S=1, branches (3, 2)
    assert sac_math.chosen_q(q, torch.tensor([[2, 0]]), (3, 2)).item() == pytest.approx((3.0 + 10.0) / 2)
    assert sac_math.chosen_q(torch.tensor([[[7.0]]]), torch.zeros((1, 0), dtype=torch.long), ()).item() == 7.0


def test_expected_q_is_the_mean_over_branches_of_each_expectation():
    q = torch.tensor([[[1.0, 2.0, 3.0, 10.0, 20.0], [0.0, 0.0, 0.0, 0.0, 4.0]]])  # S=2
    probs = torch.tensor([[0.5, 0.5, 0.0, 0.25, 0.75]])
    expected = sac_math.expected_q(q, probs, (3, 2))
    assert expected.tolist()[0] == pytest.approx([(1.5 + 17.5) / 2, (0.0 + 3.0) / 2])


@pytest.mark.parametrize(
    ("ends_at_done", "expected"),
    [([1.0, 1.0], [2.8, 2.5, 1.0, 0.5]), ([1.0, 0.0], [2.8, 2.5, 1.0, 2.5])],
    ids=["both-streams-end", "second-ignores-done"],
)
def test_q_backup_bootstraps_unless_the_episode_ended_for_that_stream(ends_at_done, expected):
    # a stream that ignores done (curiosity, RND) bootstraps through the end: ML-Agents' use_dones_in_backup
    rewards = torch.tensor([[1.0, 0.5], [1.0, 0.5]])
    dones = torch.tensor([0.0, 1.0])
    next_values = torch.tensor([[2.0, 4.0], [2.0, 4.0]])
    backup = sac_math.q_backup(rewards, dones, torch.tensor([0.9, 0.5]), next_values, torch.tensor(ends_at_done))
    assert backup.flatten().tolist() == pytest.approx(expected)


def test_losses_are_half_the_mean_squared_error():
    assert sac_math.q_loss(torch.tensor([[1.0], [3.0]]), torch.tensor([[0.0], [1.0]])).item() == pytest.approx(1.25)
    assert sac_math.value_loss(torch.tensor([[2.0]]), torch.tensor([[0.0]])).item() == pytest.approx(2.0)


def test_value_target_subtracts_the_entropy_terms_of_continuous_or_discrete_actions():
    min_q = torch.tensor([[3.0]])
    continuous = sac_math.value_target(
        min_q, torch.tensor([[-1.0, -2.0]]), torch.tensor([0.5]), None, torch.zeros(0), ()
    )
    assert continuous.item() == pytest.approx(3.0 + 0.5 * 3)
    discrete_log_probs = torch.log(torch.tensor([[0.5, 0.5]]))
    discrete = sac_math.value_target(
        min_q, torch.zeros(1, 0), torch.tensor([0.5]), discrete_log_probs, torch.tensor([0.1]), (2,)
    )
    assert discrete.item() == pytest.approx(3.0 + 0.1 * math.log(2))


def test_hybrid_value_target_adds_the_continuous_term_as_mlagents_does():
    # ML-Agents 0.28: v_backup = min_q - mean(discrete bonus); v_backup += sum(alpha_c log pi_c)
    min_q = torch.tensor([[3.0]])
    continuous_log_probs = torch.tensor([[-1.0, -2.0]])
    discrete_log_probs = torch.log(torch.tensor([[0.5, 0.5]]))
    target = sac_math.value_target(
        min_q, continuous_log_probs, torch.tensor([0.5]), discrete_log_probs, torch.tensor([0.1]), (2,)
    )
    # 3 + 0.5 * (-1 - 2) - 0.1 * (2 * 0.5 * log 0.5)
    assert target.item() == pytest.approx(3.0 - 1.5 + 0.1 * math.log(2))


def test_continuous_policy_loss_is_alpha_times_the_whole_actions_log_pi_minus_q():
    """ML-Agents 0.28's ``_cont_ent_coef * torch.sum(cont_log_probs, dim=1) - all_mean_q1``:
    the sum over dimensions (an earlier port took their mean, weighing the entropy 1/c as much
    against Q for c dimensions, while the soft value and the entropy target sum)."""
    q1_policy = torch.tensor([[[1.0], [3.0]]])  # two streams: their mean, 2, is the Q
    loss = sac_math.policy_loss(q1_policy, torch.tensor([[-1.0, -3.0]]), torch.tensor([0.5]), None, torch.zeros(0), ())
    assert loss.item() == pytest.approx(0.5 * (-1 - 3) - 2)


def test_discrete_policy_loss_is_the_expectation_of_alpha_log_p_minus_q():
    probs = torch.tensor([[0.25, 0.75]])
    q1_policy = torch.tensor([[[1.0, 2.0]]])
    empty = torch.zeros((1, 0))
    loss = sac_math.policy_loss(q1_policy, empty, torch.tensor([1.0]), probs.log(), torch.tensor([0.1]), (2,))
    expected = 0.25 * (0.1 * math.log(0.25) - 1.0) + 0.75 * (0.1 * math.log(0.75) - 2.0)
    assert loss.item() == pytest.approx(expected)


def test_hybrid_policy_loss_adds_both_parts_with_the_discrete_expectation_as_q():
    probs = torch.tensor([[0.5, 0.5]])
    q1_policy = torch.tensor([[[1.0, 3.0]]])
    loss = sac_math.policy_loss(
        q1_policy, torch.tensor([[-1.0]]), torch.tensor([0.2]), probs.log(), torch.ones(1), (2,)
    )
    discrete = 0.5 * (math.log(0.5) - 1.0) + 0.5 * (math.log(0.5) - 3.0)
    continuous = 0.2 * -1.0 - (0.5 * 1.0 + 0.5 * 3.0)
    assert loss.item() == pytest.approx(discrete + continuous)


def test_entropy_coefficients_fall_when_the_policy_is_more_random_than_the_target():
    log_alpha = torch.tensor([math.log(0.5)], requires_grad=True)
    log_alphas = torch.tensor([0.0], requires_grad=True)
    continuous_log_probs = torch.tensor([[-1.0, -2.0]])  # entropy 3 > target -2
    uniform = torch.log(torch.full((1, 4), 0.25))  # entropy log 4 > 0.2 log 4
    loss = sac_math.entropy_coefficient_loss(
        log_alpha, continuous_log_probs, -2.0, log_alphas, uniform, [0.2 * math.log(4)], (4,)
    )
    loss.backward()
    assert log_alpha.grad.item() == pytest.approx(3.0 - (-2.0))  # -(log pi + target) = entropy - target
    assert log_alphas.grad.item() == pytest.approx(math.log(4) - 0.2 * math.log(4))
    assert log_alpha.grad > 0 and log_alphas.grad > 0  # gradient descent lowers both


def test_masked_actions_contribute_nothing_and_stay_finite():
    # a masked action's log-prob is about -1e8 (trainers.networks.distributions.mask_logits): p log p is 0
    log_probs = torch.log_softmax(torch.tensor([[0.0, 0.0, -1e8]]), dim=1)
    q = torch.tensor([[[1.0, 3.0, 1000.0]]])
    probs = log_probs.exp()
    assert sac_math.expected_q(q, probs, (3,)).item() == pytest.approx(2.0)
    loss = sac_math.policy_loss(q, torch.zeros((1, 0)), torch.ones(1), log_probs, torch.tensor([0.5]), (3,))
    assert math.isfinite(loss.item())
    assert loss.item() == pytest.approx(0.5 * math.log(0.5) - 2.0)
