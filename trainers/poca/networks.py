"""MA-POCA's centralised critic: values of a whole group, and each agent's counterfactual
baseline, from attention over a variable number of group members.

Shapes: ``B`` rows (one agent's step each), ``M`` group mates (padded: ``present`` [B, M]
says which columns hold a mate), ``S`` reward streams.

As ML-Agents 0.28 builds it (``MultiAgentNetworkBody`` + ``POCAValueNetwork``; our code):

* every agent's observations go through one observation encoder without hidden layers
  (ML-Agents' ``ObservationEncoder``: vector normalisers, visual encoders, var-len attention),
  shared by all members;
* **value** (``critic_pass``): every member's encoding, the agent's own first, is embedded as an
  entity by ``obs_encoder`` (Linear(h) + Swish, T-Fixup initialised);
* **baseline** of an agent: its own encoding alone by ``obs_encoder``, each mate's encoding
  joined with the mate's action (continuous, then one-hot per discrete branch) by
  ``obs_action_encoder``: the agent's own action is left out, which makes it its
  counterfactual baseline;
* one :class:`~trainers.networks.attention.ResidualSelfAttention` (h wide) pools the entities (absent
  mates masked), then ``num_layers`` x (Linear(h) + Swish) initialised with gain
  sqrt(0.125 / h), then (with ``network_settings.memory``) an LSTM, then the number of members
  present scaled to [-1, 1] by the most ever seen (a saved buffer-like parameter), then one
  linear value head per reward stream.

Values and baselines share every layer, the LSTM included, but not their memories: the trainer
carries one memory for each, per agent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, ObservationSpec
from torch import Tensor, nn
from torch.nn import functional as F

from trainers.networks.actor_critic import MLP, ObservationEncoder, ValueHeads, init_dense, memory_module
from trainers.networks.attention import EntityEmbedding, ResidualSelfAttention
from trainers.networks.initialization import initialize
from trainers.settings import NetworkSettings


class GroupObservations:
    """The group around each row: mates' observations, actions and presence (tensors)."""

    def __init__(
        self,
        obs: Sequence[Tensor],
        present: Tensor,
        continuous_actions: Tensor,
        discrete_actions: Tensor,
    ) -> None:
        self.obs = list(obs)  # one [B, M, *shape] per sensor
        self.present = present  # [B, M] bool
        self.continuous_actions = continuous_actions  # [B, M, c]
        self.discrete_actions = discrete_actions  # [B, M, b] int64

    @property
    def size(self) -> int:
        return int(self.present.shape[1])


class POCACritic(nn.Module):
    """The group's value and each agent's baseline, one head per reward stream."""

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        network_settings: NetworkSettings,
        action_spec: ActionSpec,
        stream_names: Sequence[str],
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        hidden = int(network_settings.hidden_units)
        self.discrete_branches = tuple(int(b) for b in action_spec.discrete_branches)
        self.encoder = ObservationEncoder(observation_specs, network_settings, hidden_layers=False, generator=generator)
        width = self.encoder.output_size
        action_width = int(action_spec.continuous_size) + sum(self.discrete_branches)
        self.obs_encoder = EntityEmbedding(width, 0, hidden, generator=generator)
        self.obs_action_encoder = EntityEmbedding(width + action_width, 0, hidden, generator=generator)
        self.attention = ResidualSelfAttention(hidden, 0, generator=generator)
        self.body = MLP(hidden, hidden, int(network_settings.num_layers), network_settings.activation)
        for dense in self.body.dense_layers:
            init_dense(dense, math.sqrt(0.125 / hidden), generator)
        self.memory = memory_module(self.body.output_size, network_settings, generator)
        self.memory_size = 0 if self.memory is None else self.memory.memory_size
        features = self.body.output_size if self.memory is None else self.memory.hidden_size
        self.value_heads = ValueHeads(features + 1, stream_names, generator=generator)
        # The most members ever seen in one row (ML-Agents keeps it as a frozen parameter, so it
        # is saved with the weights); the member count is scaled by it.
        self.max_members = nn.Parameter(torch.ones(()), requires_grad=False)
        initialize(self, network_settings, generator)

    @property
    def stream_names(self) -> tuple[str, ...]:
        return self.value_heads.stream_names

    def update_normalization(self, obs: Sequence[Tensor | np.ndarray]) -> None:
        """Merge the agents' own observations into the encoder's normalisers."""
        self.encoder.update_normalization(obs)

    # ------------------------------------------------------------------ passes

    def values(
        self, obs: Sequence[Tensor], group: GroupObservations, memories: Tensor | None = None, sequence_length: int = 1
    ) -> dict[str, Tensor]:
        """V(every member's observations) per stream, [B] each (with memory: ``memories`` [N, k]
        at the start of each of the N sequences of ``sequence_length`` rows)."""
        return self.values_and_memories(obs, group, memories, sequence_length)[0]

    def baselines(
        self, obs: Sequence[Tensor], group: GroupObservations, memories: Tensor | None = None, sequence_length: int = 1
    ) -> dict[str, Tensor]:
        """The agent's counterfactual baseline (its own observation, its mates' observations
        and actions) per stream, [B] each."""
        return self.baselines_and_memories(obs, group, memories, sequence_length)[0]

    def values_and_memories(
        self, obs: Sequence[Tensor], group: GroupObservations, memories: Tensor | None, sequence_length: int
    ) -> tuple[dict[str, Tensor], Tensor]:
        """:meth:`values`, and the memories after each sequence [N, k] ([N, 0] without memory)."""
        own = self.encoder(obs).unsqueeze(1)  # [B, 1, w]
        mates = self._encode_mates(group)  # [B, M, w]
        entities = self.obs_encoder(None, torch.cat([own, mates], dim=1))
        absent = torch.cat([self._nobody_absent(group), ~group.present], dim=1)
        return self._head(entities, absent, memories, sequence_length)

    def baselines_and_memories(
        self, obs: Sequence[Tensor], group: GroupObservations, memories: Tensor | None, sequence_length: int
    ) -> tuple[dict[str, Tensor], Tensor]:
        """:meth:`baselines`, and the memories after each sequence [N, k]."""
        own = self.obs_encoder(None, self.encoder(obs).unsqueeze(1))  # [B, 1, h]
        mates = torch.cat([self._encode_mates(group), self._flat_actions(group)], dim=2)
        entities = torch.cat([self.obs_action_encoder(None, mates), own], dim=1)
        absent = torch.cat([~group.present, self._nobody_absent(group)], dim=1)
        return self._head(entities, absent, memories, sequence_length)

    def values_and_baselines(
        self,
        obs: Sequence[Tensor],
        group: GroupObservations,
        value_memories: Tensor | None = None,
        baseline_memories: Tensor | None = None,
        sequence_length: int = 1,
    ) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
        """:meth:`values` and :meth:`baselines` of the same rows in one pass: every member is
        encoded once, and the two entity sets (which have the same size) go through the
        attention, hidden layers and LSTM as one batch. Entities are attended as a set, so the
        order within one (own first here) does not change the result."""
        rows = group.present.shape[0]
        own = self.encoder(obs).unsqueeze(1)  # [B, 1, w]
        mates = self._encode_mates(group)  # [B, M, w]
        embedded = self.obs_encoder(None, torch.cat([own, mates], dim=1))  # [B, 1 + M, h]
        with_actions = self.obs_action_encoder(None, torch.cat([mates, self._flat_actions(group)], dim=2))
        baseline_entities = torch.cat([embedded[:, :1], with_actions], dim=1)
        absent = torch.cat([self._nobody_absent(group), ~group.present], dim=1)
        memories = None
        if self.memory is not None and value_memories is not None and baseline_memories is not None:
            memories = torch.cat([value_memories, baseline_memories])
        both, _ = self._head(
            torch.cat([embedded, baseline_entities]), torch.cat([absent, absent]), memories, sequence_length
        )
        return (
            {name: v[:rows] for name, v in both.items()},
            {name: v[rows:] for name, v in both.items()},
        )

    @staticmethod
    def _nobody_absent(group: GroupObservations) -> Tensor:
        """[B, 1] False: the agent itself is always present."""
        return torch.zeros((group.present.shape[0], 1), dtype=torch.bool, device=group.present.device)

    def _encode_mates(self, group: GroupObservations) -> Tensor:
        rows, mates = group.present.shape
        if mates == 0:
            return torch.zeros((rows, 0, self.encoder.output_size), device=group.present.device)
        flat = [o.reshape(rows * mates, *o.shape[2:]) for o in group.obs]
        return self.encoder(flat).reshape(rows, mates, -1)

    def _flat_actions(self, group: GroupObservations) -> Tensor:
        parts = [group.continuous_actions.float()]
        for i, branch in enumerate(self.discrete_branches):
            parts.append(F.one_hot(group.discrete_actions[..., i].long(), branch).float())
        return torch.cat(parts, dim=2)

    def _head(
        self, entities: Tensor, absent: Tensor, memories: Tensor | None, sequence_length: int
    ) -> tuple[dict[str, Tensor], Tensor]:
        mask = absent.float()
        pooled = self.attention(entities, mask)
        members = torch.sum(1.0 - mask, dim=1, keepdim=True)
        with torch.no_grad():
            most = members.max() if members.numel() else self.max_members
            if most > self.max_members:
                self.max_members.copy_(most)
        scaled = members * 2.0 / self.max_members - 1.0
        features = self.body(pooled)
        if self.memory is None:
            memories_out = features.new_zeros((features.shape[0] // sequence_length, 0))
        else:
            features, memories_out = self.memory(features, memories, sequence_length)
        return self.value_heads(torch.cat([features, scaled], dim=1)), memories_out
