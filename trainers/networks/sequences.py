"""Training a recurrent network on sequences, as ML-Agents does: what PPO and SAC share.

A trajectory is cut from its start into sequences of ``sequence_length`` steps, the last one
padded at its end; losses average over real steps only (``masked_mean``). A recurrent critic
is run over each agent's trajectories in order, its memory carried from one trajectory of the
agent to the next and reset when an episode starts (``CriticMemories``); the memory at each
sequence's start is stored with the experience, so an update can restart every sequence
where the data was collected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

from processors.trajectory import Trajectory

# (observations [n, ...] per sensor, memory [1, k], sequence length) -> (values {stream: [n]},
# memory after the sequence [1, k])
CriticPass = Callable[[list[Tensor], Tensor, int], tuple[dict[str, Tensor], Tensor]]


def masked_mean(values: Tensor, mask: Tensor | None) -> Tensor:
    """Mean of ``values`` ([B] or [B, k]) over the rows where ``mask`` ([B] bool) holds, or
    over every row when ``mask`` is None. A recurrent batch's padding rows are masked out."""
    if mask is None:
        return values.mean()
    weights = mask.to(values.dtype)
    if values.dim() == 2:
        weights = weights.unsqueeze(1).expand_as(values)
    return (values * weights).sum() / torch.clamp(weights.sum(), min=1.0)


def padded_length(length: int, sequence_length: int) -> int:
    """Rows a trajectory of ``length`` steps takes once its last sequence is padded."""
    return -(-length // sequence_length) * sequence_length


def sequence_rows(starts: Tensor, sequence_length: int) -> Tensor:
    """Every row of the sequences that begin at ``starts`` [N], sequence by sequence [N * L]."""
    if sequence_length == 1:
        return starts
    offsets = torch.arange(sequence_length, device=starts.device)
    return (starts.unsqueeze(1) + offsets).reshape(-1)


class CriticMemories:
    """A recurrent critic's memory per agent, between that agent's trajectories (ML-Agents'
    ``critic_memory_dict``). Dropped when the agent's episode ends."""

    def __init__(self, memory_size: int, sequence_length: int, device: torch.device) -> None:
        self.memory_size = int(memory_size)
        self.sequence_length = int(sequence_length)
        self.device = device
        self._memories: dict[str, Tensor] = {}

    def __len__(self) -> int:
        return len(self._memories)

    def evaluate(
        self, trajectory: Trajectory, obs_with_next: Sequence[Tensor], critic_pass: CriticPass
    ) -> tuple[dict[str, Tensor], Tensor]:
        """Values of every step and of ``next_obs`` ({stream: [T + 1]}) from the agent's carried
        memory, run sequence by sequence; and the memory at each sequence's start
        [ceil(T / L), k]. The memory after the trajectory is kept for the agent's next one."""
        t, length = trajectory.length, self.sequence_length
        memory = None if trajectory.episode_start else self._memories.get(trajectory.agent_id)
        if memory is None:
            memory = torch.zeros((1, self.memory_size), device=self.device)
        starts, chunks = [], []
        for start in range(0, t, length):
            stop = min(start + length, t)
            starts.append(memory)
            values, memory = critic_pass([o[start:stop] for o in obs_with_next], memory, stop - start)
            chunks.append(values)
        next_values, _ = critic_pass([o[t:] for o in obs_with_next], memory, 1)
        chunks.append(next_values)
        if trajectory.done_reached:
            self._memories.pop(trajectory.agent_id, None)
        else:
            self._memories[trajectory.agent_id] = memory
        values = {name: torch.cat([chunk[name] for chunk in chunks]) for name in chunks[0]}
        return values, torch.cat(starts)
