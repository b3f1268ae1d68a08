"""The hidden layers' nonlinearities by their configured name (``network_settings.activation``):
ML-Agents' Swish unless a configuration picks Stable-Baselines3's tanh (its PPO) or ReLU (its
SAC). Every one exports to ONNX as a single standard operator or two (Swish: x * sigmoid(x))."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.nn import functional as F

ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"swish": F.silu, "tanh": torch.tanh, "relu": F.relu}


def hidden_activation(name: str) -> Callable[[Tensor], Tensor]:
    """The function ``name`` (a :class:`trainers.settings.Activation` value) stands for."""
    return ACTIVATIONS[str(name)]
