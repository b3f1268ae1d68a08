"""Goal conditioning by hypernetwork (``network_settings.goal_conditioning_type: hyper``).

A goal-conditioned hidden MLP (:class:`ConditionalEncoder`) is the ordinary one except that
its last layer's weights are not parameters: a small network (:class:`HyperNetwork`) computes
them from the goal, per batch row. The goal so multiplies the features instead of being one
more input added to them, which lets one policy behave very differently per goal.

Architecture and initialisation are ML-Agents 0.28's (``conditioning.py``; our own code):

* ``ConditionalEncoder``: ``num_layers`` layers of ``hidden_units`` with Swish (or the
  configured ``network_settings.activation``; the hypernetworks keep Swish); the last
  ``num_conditional_layers`` (ML-Agents' NetworkBody uses 1) are hypernetwork layers, the others
  Linear layers drawn N(0, 1 / fan_in) with zero bias, like the plain MLP's.
* ``HyperNetwork`` for a layer ``in -> out``: goal [B, g] -> Linear(hidden) + Swish ->
  Linear(hidden) + Swish (both N(0, 1 / fan_in), zero bias) -> layer norm (no learned gain)
  -> Linear(in * out) whose weights are uniform in +-sqrt(1 / (hidden * in)) and bias zero;
  the output, read as an [in, out] matrix per row, multiplies the layer's input; the layer's
  own bias is a parameter (zeros), not generated.

The hypernetwork's output layer holds ``hidden * in * out`` weights: 2.1 million for 128 hidden
units on a 128-wide input, as in ML-Agents.
"""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import Tensor, nn
from torch.nn import functional as F

from trainers.networks.activations import hidden_activation
from trainers.networks.attention import layer_norm

HYPERNETWORK_LAYERS = 2  # hidden layers of each hypernetwork (ML-Agents' value)


def _init_he(layer: nn.Linear, generator: torch.Generator | None) -> None:
    """N(0, 1 / fan_in) weights, zero bias (He-normal with a linear gain)."""
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear", generator=generator)
    nn.init.zeros_(layer.bias)


class HyperNetwork(nn.Module):
    """One layer ``input_size -> output_size`` whose weight matrix is computed from the goal:
    ``forward(x [B, in], goal [B, goal_size]) -> [B, out]`` = ``x @ W(goal) + bias``."""

    def __init__(
        self,
        input_size: int,
        output_size: int,
        goal_size: int,
        hidden_size: int,
        num_layers: int = HYPERNETWORK_LAYERS,
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.input_size = int(input_size)
        self.output_size = int(output_size)
        layers = []
        size = int(goal_size)
        for _ in range(num_layers):
            layers.append(nn.Linear(size, hidden_size))
            size = hidden_size
        self.layers = nn.ModuleList(layers)
        self.weights = nn.Linear(size, self.input_size * self.output_size)
        self.bias = nn.Parameter(torch.zeros(self.output_size))
        self.init_weights(generator)

    def init_weights(self, generator: torch.Generator | None) -> None:
        for layer in self.layers:
            _init_he(cast(nn.Linear, layer), generator)
        # small enough that the generated layer starts like a He-initialised one
        bound = math.sqrt(1.0 / (self.weights.in_features * self.input_size))
        nn.init.uniform_(self.weights.weight, -bound, bound, generator=generator)
        nn.init.zeros_(self.weights.bias)
        nn.init.zeros_(self.bias)

    def generated_weights(self, goal: Tensor) -> Tensor:
        """The layer's weight matrices for ``goal`` [B, goal_size] -> [B, in, out]."""
        h = goal
        for layer in self.layers:
            h = F.silu(cast(nn.Linear, layer)(h))
        return self.weights(layer_norm(h)).reshape(-1, self.input_size, self.output_size)

    def forward(self, x: Tensor, goal: Tensor) -> Tensor:
        product = torch.bmm(x.unsqueeze(1), self.generated_weights(goal))  # [B, 1, out]
        return product.reshape(-1, self.output_size) + self.bias


class ConditionalEncoder(nn.Module):
    """The hidden MLP with its last ``num_conditional_layers`` layers goal-conditioned:
    ``forward(x [B, input_size], goal [B, goal_size]) -> [B, hidden_size]``.

    ``num_layers`` 0 builds one layer, like 1, as our plain :class:`trainers.networks.actor_critic.MLP`
    (ML-Agents' ConditionalEncoder would build none and return its input, which its action
    heads, sized for ``hidden_units``, then reject). ``activation``: ``network_settings.activation``.
    """

    def __init__(
        self,
        input_size: int,
        goal_size: int,
        hidden_size: int,
        num_layers: int,
        num_conditional_layers: int = 1,
        *,
        activation: str = "swish",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.activation = hidden_activation(activation)
        count = max(int(num_layers), 1)
        layers: list[nn.Module] = []
        size = int(input_size)
        for i in range(count):
            if count - i <= num_conditional_layers:
                layers.append(HyperNetwork(size, hidden_size, goal_size, hidden_size))
            else:
                layers.append(nn.Linear(size, hidden_size))
            size = hidden_size
        self.layers = nn.ModuleList(layers)
        self.input_size = int(input_size)
        self.goal_size = int(goal_size)
        self.output_size = size
        self.init_weights(generator)

    def init_weights(self, generator: torch.Generator | None) -> None:
        for layer in self.layers:
            if isinstance(layer, HyperNetwork):
                layer.init_weights(generator)
            else:
                _init_he(cast(nn.Linear, layer), generator)

    def forward(self, x: Tensor, goal: Tensor) -> Tensor:
        for layer in self.layers:
            x = self.activation(layer(x, goal) if isinstance(layer, HyperNetwork) else layer(x))
        return x
