"""The maths of SAC as pure functions on tensors, so tests can feed numbers and check numbers.

ML-Agents' discrete SAC is followed term by term (so configurations tuned for it behave the
same): a Q head has one output per discrete action of every branch, the Q of a choice is the
mean over branches of each branch's chosen action, expectations under the policy are taken
branch by branch, and each branch has its own entropy coefficient and target.

Shapes: ``B`` transitions, ``S`` reward streams, ``c`` continuous action dimensions, ``m``
discrete actions over all branches, ``K`` Q outputs per stream (``m``, or 1 when there are no
discrete branches).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import Tensor

from trainers.networks.sequences import masked_mean

# ML-Agents' target entropies: -1 per continuous dimension, and 0.2 * log(n) for a discrete
# branch of n actions ("roughly an epsilon-greedy 0.05").
CONTINUOUS_TARGET_ENTROPY_SCALE = 1.0
DISCRETE_TARGET_ENTROPY_SCALE = 0.2


def target_entropies(continuous_size: int, discrete_branches: Sequence[int]) -> tuple[float, list[float]]:
    """(continuous target, one target per branch), as ML-Agents sets them."""
    continuous = -CONTINUOUS_TARGET_ENTROPY_SCALE * float(continuous_size)
    discrete = [DISCRETE_TARGET_ENTROPY_SCALE * math.log(n) for n in discrete_branches]
    return continuous, discrete


class _BranchLayout(NamedTuple):
    """Where each branch's actions sit among the ``m`` discrete outputs, so per-branch sums and
    picks are one tensor op each instead of one per branch (a gradient step is op-bound)."""

    offsets: Tensor  # [nb] the first output of each branch
    branch_of_output: Tensor  # [m] the branch of each output
    one_hot: Tensor  # [m, nb] float: x @ one_hot sums x's outputs branch by branch


@functools.lru_cache(maxsize=64)
def _layout(branches: tuple[int, ...], device: torch.device, dtype: torch.dtype) -> _BranchLayout:
    with torch.inference_mode(False):  # cached: usable in autograd even if first made under inference
        sizes = torch.tensor(branches, dtype=torch.long)
        branch_of_output = torch.repeat_interleave(torch.arange(len(branches)), sizes)
        offsets = torch.cumsum(sizes, dim=0) - sizes
        one_hot = torch.nn.functional.one_hot(branch_of_output, len(branches)).to(dtype)
        return _BranchLayout(offsets.to(device), branch_of_output.to(device), one_hot.to(device))


def _branch_layout(branches: Sequence[int], like: Tensor) -> _BranchLayout:
    return _layout(tuple(int(n) for n in branches), like.device, like.dtype)


@functools.lru_cache(maxsize=64)
def _constant(values: tuple[float, ...], device: torch.device, dtype: torch.dtype) -> Tensor:
    with torch.inference_mode(False):
        return torch.tensor(values, device=device, dtype=dtype)


def _total(terms: list[Tensor], like: Tensor, shape: Sequence[int]) -> Tensor:
    """The sum of ``terms``, zeros of ``shape`` if there are none (no op for a single term)."""
    if not terms:
        return like.new_zeros(tuple(shape))
    return functools.reduce(torch.add, terms)


def _per_branch_sums(x: Tensor, branches: Sequence[int]) -> Tensor:
    """[B, m] -> [B, nb]: the sum of each branch's outputs."""
    return x @ _branch_layout(branches, x).one_hot


def chosen_q(q: Tensor, discrete_actions: Tensor, branches: Sequence[int]) -> Tensor:
    """The Q of the actions taken: ``q`` [B, S, K], ``discrete_actions`` [B, b] -> [B, S].
    Continuous-only (no branches): the single output."""
    if not branches:
        return q[..., 0]
    index = discrete_actions.long() + _branch_layout(branches, q).offsets  # [B, b] output of each choice
    return q.gather(2, index.unsqueeze(1).expand(-1, q.shape[1], -1)).mean(dim=2)


def expected_q(q: Tensor, probs: Tensor | None, branches: Sequence[int]) -> Tensor:
    """The Q of the policy's choice: per branch the expectation over its actions (``probs``
    [B, m]), averaged over branches; [B, S, K] -> [B, S]. Continuous-only: the single output."""
    if probs is None or not branches:
        return q[..., 0]
    return (q * probs.unsqueeze(1)).sum(dim=2) / len(branches)


def q_backup(rewards: Tensor, dones: Tensor, gammas: Tensor, next_values: Tensor, ends_at_done: Tensor) -> Tensor:
    """Targets for the Q networks: ``r + gamma * (1 - done) * V_target(s')``, where a stream
    that ignores the episode's end (``ends_at_done`` 0: curiosity, RND) bootstraps through it,
    as ML-Agents' ``use_dones_in_backup``; rewards and next_values [B, S], dones [B], gammas
    and ends_at_done [S] -> [B, S]."""
    return rewards + (1.0 - dones.unsqueeze(1) * ends_at_done) * gammas * next_values


def q_loss(q: Tensor, backup: Tensor, mask: Tensor | None = None) -> Tensor:
    """Half the squared error, averaged over transitions (those of ``mask`` [B], if given) and
    streams: [B, S] x 2 -> []."""
    return 0.5 * masked_mean((q - backup) ** 2, mask)


def _entropy_terms(
    continuous_log_probs: Tensor,
    continuous_alpha: Tensor,
    discrete_log_probs: Tensor | None,
    discrete_alphas: Tensor,
    branches: Sequence[int],
) -> tuple[Tensor, Tensor]:
    """(sum_i alpha_c log pi_i [B], mean over branches of alpha_b sum_j p log p [B])."""
    batch = continuous_log_probs.shape[0]
    continuous = (continuous_alpha * continuous_log_probs).sum(dim=1)
    if discrete_log_probs is None or not branches:
        return continuous, continuous.new_zeros(batch)
    per_branch = _per_branch_sums(discrete_log_probs.exp() * discrete_log_probs, branches)  # [B, nb]
    return continuous, (discrete_alphas * per_branch).mean(dim=1)


def value_target(
    min_q: Tensor,
    continuous_log_probs: Tensor,
    continuous_alpha: Tensor,
    discrete_log_probs: Tensor | None,
    discrete_alphas: Tensor,
    branches: Sequence[int],
) -> Tensor:
    """The soft value the V network learns: min of the twin Qs of the policy's action minus
    the entropy terms; ``min_q`` [B, S] -> [B, S] (no gradient needed).

    As ML-Agents 0.28 writes it, hybrid actions *add* the continuous term (``v_backup +=
    sum(alpha_c log pi_c)`` after the discrete bonus), where continuous-only actions subtract
    it. Matched so tuned hybrid configurations behave the same: on ML-Agents' test_hybrid_sac,
    seeds 1-5 x four sizes, either sign passes 19 of 20 (``benchmarks/sac_hybrid_seeds.json``)."""
    continuous, discrete = _entropy_terms(
        continuous_log_probs, continuous_alpha, discrete_log_probs, discrete_alphas, branches
    )
    if discrete_log_probs is not None and branches:
        continuous = -continuous
    return min_q - (continuous + discrete).unsqueeze(1)


def value_loss(values: Tensor, target: Tensor, mask: Tensor | None = None) -> Tensor:
    """Half the squared error of V against its soft target, averaged (over the transitions of
    ``mask`` [B], if given): [B, S] x 2 -> []."""
    return 0.5 * masked_mean((values - target) ** 2, mask)


def policy_loss(
    q1_policy: Tensor,
    continuous_log_probs: Tensor,
    continuous_alpha: Tensor,
    discrete_log_probs: Tensor | None,
    discrete_alphas: Tensor,
    branches: Sequence[int],
    mask: Tensor | None = None,
) -> Tensor:
    """ML-Agents' SAC policy loss, averaged over the batch (the transitions of ``mask``).

    ``q1_policy`` [B, S, K]: the first Q network at the policy's own (reparameterised)
    continuous action, averaged over streams here. Discrete part: per branch
    ``sum_j p_j (alpha_b log p_j - Q_j)``, summed over branches; continuous part:
    ``alpha_c sum_i log pi_i - Q``, the whole action's log-probability (as the soft value and
    the entropy target take it, in ML-Agents 0.28 and 1.1 as in the SAC paper), where Q is the
    expectation over every branch's actions (a sum over branches, as ML-Agents writes it) or the
    single output.
    """
    mean_q1 = q1_policy.mean(dim=1)  # [B, K]
    terms = []
    if discrete_log_probs is not None and branches:
        probs = discrete_log_probs.exp()
        # every branch's sum_j p_j (alpha_b log p_j - Q_j), summed: one sum over all outputs
        alpha_of_output = discrete_alphas[_branch_layout(branches, probs).branch_of_output]  # [m]
        terms.append((probs * (alpha_of_output * discrete_log_probs - mean_q1)).sum(dim=1))
        q_of_policy = (probs * mean_q1).sum(dim=1)
    else:
        q_of_policy = mean_q1[:, 0]
    if continuous_log_probs.shape[1]:
        terms.append((continuous_alpha * continuous_log_probs).sum(dim=1) - q_of_policy)
    return masked_mean(_total(terms, mean_q1, mean_q1.shape[:1]), mask)


def entropy_coefficient_loss(
    continuous_log_alpha: Tensor,
    continuous_log_probs: Tensor,
    continuous_target: float,
    discrete_log_alphas: Tensor,
    discrete_log_probs: Tensor | None,
    discrete_targets: Sequence[float],
    branches: Sequence[int],
    mask: Tensor | None = None,
) -> Tensor:
    """Automatic entropy tuning: each log-coefficient moves so its part of the policy's
    entropy approaches the target (``-log_alpha * (log pi + target)``, averaged over the
    transitions of ``mask``, if given). Log-probs are treated as constants."""
    terms = []
    if discrete_log_probs is not None and branches:
        plogp = (discrete_log_probs.exp() * discrete_log_probs).detach()
        gap = _per_branch_sums(plogp, branches) + _constant(tuple(discrete_targets), plogp.device, plogp.dtype)
        terms.append(masked_mean((discrete_log_alphas * gap).mean(dim=1), mask))
    if continuous_log_probs.shape[1]:
        gap = continuous_log_probs.detach().sum(dim=1) + continuous_target
        terms.append(masked_mean(continuous_log_alpha * gap, mask))
    return -_total(terms, continuous_log_alpha, ())
