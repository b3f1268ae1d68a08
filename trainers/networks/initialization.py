"""``network_settings.initialization``: which starting weights a network's layers draw.

ML-Agents' own (the default) is set where each layer is built (:mod:`trainers.networks.
actor_critic`: He-normal with per-role gains, zero biases). ``pytorch`` is what a network
gets from PyTorch when nothing is set, as Stable-Baselines3's SAC (and DQN) networks start:
every dense and convolutional layer's weights and biases uniform in
``+-1 / sqrt(fan_in)``, and an LSTM's every weight and bias uniform in
``+-1 / sqrt(hidden_size)``. It is applied over the finished network, drawn from the
network's own seeded generator, so a seed still fixes every weight. Parameters that belong to
no torch layer (PPO's state-independent log standard deviation, a goal hypernetwork's bias)
have no PyTorch default and keep their start (zero, or ``log_std_init``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from trainers.settings.schema import Initialization

if TYPE_CHECKING:
    from trainers.settings import NetworkSettings


def uniform_fan_in_(tensors: Sequence[Tensor], fan_in: int, generator: torch.Generator | None) -> None:
    """Each of ``tensors`` uniform in ``+-1 / sqrt(fan_in)`` (PyTorch's ``nn.Linear`` default:
    Kaiming-uniform with ``a = sqrt(5)`` for the weights, the same bound for the bias)."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    with torch.no_grad():
        for tensor in tensors:
            tensor.uniform_(-bound, bound, generator=generator)


def pytorch_initialization(module: nn.Module, generator: torch.Generator | None) -> None:
    """Every dense, convolutional and LSTM layer of ``module`` as PyTorch initialises it."""
    for layer in module.modules():
        if isinstance(layer, nn.Linear | nn.Conv1d | nn.Conv2d):
            fan_in = layer.weight[0].numel()
            uniform_fan_in_([layer.weight] + ([] if layer.bias is None else [layer.bias]), fan_in, generator)
        elif isinstance(layer, nn.LSTM):
            uniform_fan_in_(list(layer.parameters()), layer.hidden_size, generator)


def initialize(module: nn.Module, network_settings: NetworkSettings, generator: torch.Generator | None) -> None:
    """Re-draw ``module``'s layers as ``network_settings.initialization`` asks (nothing for
    ML-Agents', which the layers were built with)."""
    if network_settings.initialization == Initialization.PYTORCH:
        pytorch_initialization(module, generator)
