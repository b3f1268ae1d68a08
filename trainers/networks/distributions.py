"""The action distributions' maths as pure functions on tensors.

Shape convention: ``B`` batch rows, ``c`` continuous action size, ``b`` discrete branches,
``m`` total discrete choices (sum of branch sizes), ``n_i`` the size of branch ``i``.

Every function here is built from ops that torch's opset-9 ONNX exporter handles, so the
actor's graph can be exported as is. Log-probabilities and entropies are exact (no epsilon
added), so they agree with ``torch.distributions`` to float rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor
from torch.nn import functional as F

# A disallowed discrete action's logit: far below any real logit, so its probability is
# exactly 0 in float32 after the softmax, yet finite so that 0 * logit stays 0 (no NaN).
MASKED_LOGIT = 1e8

_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def gaussian_log_prob(actions: Tensor, mean: Tensor, log_std: Tensor) -> Tensor:
    """Log-density of ``actions`` [B, c] under independent normals, per dimension: [B, c].

    ``log_std`` is [B, c] or broadcastable to it ([1, c] for a state-independent std).
    """
    z = (actions - mean) * torch.exp(-log_std)
    return -0.5 * z * z - log_std - _HALF_LOG_2PI


def standard_normal_log_prob(z: Tensor) -> Tensor:
    """Log-density of standard-normal draws ``z``, elementwise. A sample ``mean + z * std``
    has log-prob ``standard_normal_log_prob(z) - log_std`` (cheaper than from the sample)."""
    return -0.5 * z * z - _HALF_LOG_2PI


def tanh_log_abs_det(u: Tensor) -> Tensor:
    """``log |d tanh(u) / du|`` = ``log(1 - tanh(u)^2)``, elementwise, written as
    ``2 (log 2 - u - softplus(-2u))`` so it stays finite where tanh(u) rounds to +-1. A
    tanh-squashed sample ``tanh(u)`` has log-prob ``log_prob(u) - tanh_log_abs_det(u)``."""
    return 2.0 * (math.log(2.0) - u - F.softplus(-2.0 * u))


def atanh_clamped(actions: Tensor, epsilon: float = 1e-6) -> Tensor:
    """The pre-squash value of tanh-squashed ``actions``, clamped inside (-1, 1) first so an
    action of exactly +-1 maps to a finite value."""
    return torch.atanh(torch.clamp(actions, -1.0 + epsilon, 1.0 - epsilon))


def gaussian_entropy(log_std: Tensor) -> Tensor:
    """Entropy (nats) of each normal dimension: ``0.5 + 0.5 log(2 pi) + log_std``, same shape."""
    return log_std + (0.5 + _HALF_LOG_2PI)


def mask_logits(logits: Tensor, masks: Tensor | None) -> Tensor:
    """Push disallowed actions' logits to ``-MASKED_LOGIT``: [B, m] -> [B, m].

    ``masks`` is [B, m] bool or float with True/1 where the action is ALLOWED (Unity's own mask
    is the opposite; the processor inverts it), or None for "everything allowed". Written as
    ``logits * m - (1 - m) * MASKED_LOGIT`` so the exported graph computes the same numbers
    from Unity's float mask.
    """
    if masks is None:
        return logits
    if masks.dtype == torch.bool:  # one op, the same numbers and gradients as the formula
        return torch.where(masks, logits, -MASKED_LOGIT)
    m = masks if masks.dtype == logits.dtype else masks.to(logits.dtype)
    return logits * m - (1.0 - m) * MASKED_LOGIT


def branch_log_probs(logits: Tensor, branches: Sequence[int]) -> tuple[Tensor, ...]:
    """Normalised log-probabilities of each branch: [B, m] -> one [B, n_i] per branch."""
    if len(branches) == 1:
        return (torch.log_softmax(logits, dim=1),)
    return tuple(torch.log_softmax(part, dim=1) for part in torch.split(logits, list(branches), dim=1))


def categorical_entropy(log_probs: Tensor, probs: Tensor | None = None) -> Tensor:
    """Entropy (nats) of one branch from its normalised log-probs [B, n]: [B]. ``probs``:
    ``exp(log_probs)`` when the caller has it already (a draw needs it too)."""
    if probs is None:
        probs = torch.exp(log_probs)
    return -(probs * log_probs).sum(dim=1)


def categorical_sample(probs: Tensor, generator: torch.Generator | None = None) -> Tensor:
    """One draw from each row of ``probs`` [B, n] -> [B, 1] int64: the index whose probability
    over an Exp(1) noise is largest (an exponential race, an exact categorical draw).

    This is the race ``torch.multinomial(probs, 1)`` itself runs, so the draws are the same,
    seed for seed (``tests/test_policy.py`` holds it to that), without multinomial's checks of
    the probabilities, which cost three times the draw: a one-agent decision pays them per branch.
    """
    noise = torch.empty_like(probs).exponential_(1.0, generator=generator)
    return torch.argmax(probs / noise, dim=1, keepdim=True)


def gather_log_probs(log_probs: Sequence[Tensor], actions: Tensor) -> Tensor:
    """Log-prob of the chosen index in each branch: actions [B, b] int -> [B, b]."""
    actions = actions.long()
    return torch.cat([lp.gather(1, actions[:, i : i + 1]) for i, lp in enumerate(log_probs)], dim=1)
