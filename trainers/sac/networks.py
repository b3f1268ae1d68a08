"""SAC's Q networks over observations and continuous actions (SAC trains two: clipped double-Q).

A Q network is ML-Agents' ``ValueNetwork`` with actions: each observation encoded on its own,
the continuous action joined to the encodings before the hidden layers, then one head per
reward stream with an output per discrete action (over all branches), or a single output when
there are no discrete branches (the continuous action is an input, not an output). Variable-length
observations are pooled by the encoder's attention before the action is joined (the attention
does not see the action), as in ML-Agents.

SAC's networks share the actor's observation normaliser, as ML-Agents' do (it copies the
actor's statistics into them before every update): they are built without normalisers of
their own and are fed observations the actor's encoder normalised.

With ``network_settings.memory`` a Q network has an LSTM after its hidden layers, as
ML-Agents' does, started from zeros at every training sequence (SAC keeps no Q memories).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

import attrs
import torch
from mlagents_envs.base_env import ObservationSpec
from torch import Tensor, nn
from torch.nn import functional as F

from trainers.networks.actor_critic import MLP, ObservationEncoder, goal_conditioned, memory_module
from trainers.networks.initialization import initialize, uniform_fan_in_
from trainers.settings.schema import Initialization

if TYPE_CHECKING:
    from trainers.settings import NetworkSettings


def without_normalizer(network_settings: NetworkSettings) -> NetworkSettings:
    """The settings for a network fed observations normalised elsewhere (the actor's)."""
    return attrs.evolve(network_settings, normalize=False)


class QNetwork(nn.Module):
    """(observations, continuous actions) -> Q values [B, S, K]; see the module docstring.

    The first hidden layer takes the encoded observations and the action: its weights are the
    encoder's first layer (observation columns, with the bias) and ``action_weights`` (the
    action columns), initialised together as one layer of both widths, as ML-Agents' is.
    With hypernetwork goal conditioning the hidden layers are a conditioned body built for the
    action columns too (``extra_inputs``), and the action is joined to the encoded
    observations before it, as ML-Agents does; there is then no ``action_weights``.
    """

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        network_settings: NetworkSettings,
        stream_names: Sequence[str],
        continuous_size: int,
        discrete_branches: Sequence[int],
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.streams = len(stream_names)
        self.outputs = max(int(sum(discrete_branches)), 1)
        self.continuous_size = int(continuous_size)
        conditioned = goal_conditioned(observation_specs, network_settings)
        self.encoder = ObservationEncoder(
            observation_specs,
            without_normalizer(network_settings),
            extra_inputs=self.continuous_size if conditioned else 0,
            generator=generator,
        )
        # plain MLP body: the first layer split in observation and action columns (fast path)
        self.split_first_layer = isinstance(self.encoder.body, MLP)
        if self.split_first_layer:
            first = cast(MLP, self.encoder.body).dense_layers[0]
            self.action_weights = nn.Parameter(torch.empty(first.out_features, self.continuous_size))
            # N(0, 1 / fan_in) over the observation and action columns together (He-normal, linear gain)
            std = 1.0 / math.sqrt(first.in_features + self.continuous_size)
            with torch.no_grad():
                first.weight.normal_(0.0, std, generator=generator)
                self.action_weights.normal_(0.0, std, generator=generator)
        self.memory = memory_module(self.encoder.output_size, network_settings, generator)
        features = self.encoder.output_size if self.memory is None else self.memory.hidden_size
        self.heads = nn.Linear(features, self.streams * self.outputs)
        # Xavier-uniform per stream's head, zero bias (ML-Agents' value heads)
        bound = math.sqrt(6.0 / (features + self.outputs))
        nn.init.uniform_(self.heads.weight, -bound, bound, generator=generator)
        nn.init.zeros_(self.heads.bias)
        initialize(self, network_settings, generator)
        if self.split_first_layer and network_settings.initialization == Initialization.PYTORCH:
            # one layer over [observations, action] to PyTorch too: its fan-in is both widths
            first = cast(MLP, self.encoder.body).dense_layers[0]
            joined = first.in_features + self.continuous_size
            uniform_fan_in_([first.weight, first.bias, self.action_weights], joined, generator)

    def forward(self, obs: Sequence[Tensor], continuous_actions: Tensor, sequence_length: int = 1) -> Tensor:
        return self.from_observation_part(self.observation_part(obs), continuous_actions, sequence_length)

    def observation_part(self, obs: Sequence[Tensor]) -> Tensor:
        """What depends on the observations alone: the first hidden layer's pre-activation
        [B, hidden] (the encoded observations [B, inputs_width] for a conditioned body).
        Computed once and shared by every action evaluated on the same observations (the
        transitions' own and the policy's), which saves a third of a big network's work."""
        encoded = self.encoder.encode_inputs(obs)
        if not self.split_first_layer:
            return encoded
        first = cast(MLP, self.encoder.body).dense_layers[0]
        return F.linear(encoded, first.weight, first.bias)

    def from_observation_part(self, part: Tensor, continuous_actions: Tensor, sequence_length: int = 1) -> Tensor:
        """Q values [B, S, K] for ``continuous_actions`` [B, c] given :meth:`observation_part`
        (with memory: the batch is sequences of ``sequence_length``, each from zero memory)."""
        if not self.split_first_layer:
            if self.continuous_size:
                part = torch.cat([part, continuous_actions], dim=1)
            return self._heads(self.encoder.hidden(part), sequence_length)
        if self.continuous_size:
            part = part + F.linear(continuous_actions, self.action_weights)
        body = cast(MLP, self.encoder.body)
        h = body.activation(part)
        for layer in body.dense_layers[1:]:
            h = body.activation(F.linear(h, layer.weight, layer.bias))
        return self._heads(h, sequence_length)

    def _heads(self, h: Tensor, sequence_length: int) -> Tensor:
        """The hidden layers' output [B, hidden] (through the LSTM, from zeros, with memory)
        -> Q values [B, S, K]."""
        if self.memory is not None:
            h, _ = self.memory(h, None, sequence_length)
        return self.heads(h).view(-1, self.streams, self.outputs)
