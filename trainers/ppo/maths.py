"""The maths of PPO as pure functions, so tests can feed numbers and check numbers.

Shapes: ``[T]`` one value per step of a trajectory, ``[B]`` one per sample of a minibatch.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

from trainers.networks.sequences import masked_mean


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_value: float,
    terminated: bool,
    gamma: float,
    lambd: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Generalised advantage estimates and lambda-returns of one trajectory.

    rewards: [T] float, reward following each step. values: [T] float, V(obs_t).
    next_value: V(next_obs), the value after the last step; ignored when ``terminated``
    (a true terminal has no future). A time-horizon cut or an interrupted (max-step)
    ending is truncation: pass ``terminated=False`` so the future is bootstrapped.
    Returns (advantages [T] float32, returns [T] float32) with returns = advantages + values.
    """
    rewards = np.asarray(rewards, np.float64)
    values = np.asarray(values, np.float64)
    following = np.append(values[1:], 0.0 if terminated else float(next_value))
    deltas = rewards + gamma * following - values
    advantages = np.empty_like(deltas)
    running = 0.0
    decay = gamma * lambd
    for t in range(deltas.shape[0] - 1, -1, -1):
        running = deltas[t] + decay * running
        advantages[t] = running
    return advantages.astype(np.float32), (advantages + values).astype(np.float32)


def normalized_advantages(advantages: Tensor, mask: Tensor | None = None) -> Tensor:
    """``advantages`` [B] at zero mean and unit (population) variance over the rows ``mask``
    keeps (None: all), with padding rows set to 0; a single row is left as it is. Stable-Baselines3's
    per-minibatch normalisation (the buffer's own is in ``UpdateBuffer.to_batch``)."""
    real = advantages if mask is None else advantages[mask]
    if real.numel() < 2:
        return advantages
    normalized = (advantages - real.mean()) / (real.std(correction=0) + 1e-10)
    return normalized if mask is None else torch.where(mask, normalized, torch.zeros_like(normalized))


def clipped_surrogate_loss(
    log_probs: Tensor, old_log_probs: Tensor, advantages: Tensor, epsilon: float, mask: Tensor | None = None
) -> Tensor:
    """PPO's clipped policy loss (to minimise), averaged over the batch (and action dimensions).

    log_probs, old_log_probs: [B, k] log-probability of each action dimension (each continuous
    dimension and each discrete branch, k = c + b), or [B] joint log-probabilities (summed over
    dimensions). advantages: [B]. With [B, k], every dimension gets its own ratio
    ``exp(log_prob - old_log_prob)``, clipped on its own, and the clipped objective is averaged
    over B x k, as ML-Agents does: one dimension moving far does not stop the others' gradient.
    With [B] it is the textbook joint-ratio PPO. ``mask`` [B] bool: rows to average over (None: all).
    """
    ratio = torch.exp(log_probs - old_log_probs)
    if ratio.dim() == 2:
        advantages = advantages.unsqueeze(1)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - epsilon, 1.0 + epsilon) * advantages
    return -masked_mean(torch.min(unclipped, clipped), mask)


def value_loss(values: Tensor, returns: Tensor, mask: Tensor | None = None) -> Tensor:
    """The squared error of the value estimates against the returns, averaged over the batch
    (over the rows of ``mask``, if given). All [B].

    This is the value loss ML-Agents trains PPO's and POCA's critics with. Its update means to
    clip around the estimates that collected the data (:func:`clipped_value_loss`), but it
    stores those estimates under the returns' buffer key (``value_estimates_key`` is
    ``returns_key``, in 0.28 and 1.1 alike), so it clips around the returns and the loss is this
    one. Matched because it shapes learning: with clipping, a critic moves at most ``epsilon``
    from its old estimates per update and trails returns of tens (3DBall with Unity's rewards
    reached its cap 50k steps later; ``benchmarks/mlagents_3dball_side_by_side.py``).
    """
    return masked_mean((returns - values) ** 2, mask)


def clipped_value_loss(
    values: Tensor, old_values: Tensor, returns: Tensor, epsilon: float, mask: Tensor | None = None
) -> Tensor:
    """Value loss with the estimate kept within ``epsilon`` of the one that collected the
    data (the worse of the clipped and unclipped squared errors), averaged over the batch
    (over the rows of ``mask``, if given). All [B]. POCA's baseline loss, as ML-Agents'."""
    clipped = old_values + torch.clamp(values - old_values, -epsilon, epsilon)
    return masked_mean(torch.max((returns - values) ** 2, (returns - clipped) ** 2), mask)
