"""SAC's replay buffer: preallocated arrays, a ring of ``capacity`` transitions.

Each field is one tensor with transitions on axis 0, allocated once (observations when the
first trajectory shows their dtype: uint8 images stay uint8). A trajectory is written with
one slice assignment per field (two where it wraps around the end); a minibatch is one
``index_select`` per field at indices drawn uniformly, with replacement, from a seeded
``torch.Generator``. Nothing is done per transition in Python.

Storage is allocated with ``torch.empty``, so memory is committed as the ring fills, not up
front. It lives on the device the buffer is given (SAC's training device where it fits there):
a minibatch is then gathered where it is trained on, its row indices (drawn on the CPU, so
every device draws the same) the only copy, without waiting for the GPU. The oldest
transitions are overwritten once the ring is full, so it always holds the ``capacity`` most
recent ones (ML-Agents instead cuts its list back to 80% of ``buffer_size`` whenever it
overflows, so it holds between 80% and 100%).

For a recurrent policy (``sequence_length`` L > 1) transitions are stored as ML-Agents stores
them: each trajectory padded to whole sequences of L (``loss_masks`` False on padding), with the
actor's and the value network's memory at each sequence's start; the capacity is rounded up to
whole sequences, so sequences stay aligned in the ring, and a minibatch is ``batch_size / L``
whole sequences drawn uniformly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import attrs
import numpy as np
import torch
from torch import Tensor

from processors.trajectory import Trajectory
from trainers.networks.sequences import padded_length, sequence_rows
from trainers.reward_signals.base import SignalBatch


class ReplayBatch(NamedTuple):
    """Transitions for SAC's losses; ``[B]`` transitions on axis 0 of every tensor."""

    obs: tuple[Tensor, ...]  # one [B, *shape] per sensor
    next_obs: tuple[Tensor, ...]  # what followed each transition (for the target value)
    action_masks: Tensor  # [B, m] bool, True = allowed (when ``obs`` was seen)
    continuous_actions: Tensor  # [B, c] as the policy produced them
    discrete_actions: Tensor  # [B, b] int64
    rewards: Tensor  # [B, S] one column per reward signal, strength applied
    dones: Tensor  # [B] float, 1 where the episode truly ended (nothing to bootstrap)
    loss_masks: Tensor | None  # [B] bool, False on padding rows (None: not recurrent)
    memories: Tensor  # [B, k] actor memory, read at each sequence's first row ([B, 0] without)
    critic_memories: Tensor  # [B, k'] value network memory, likewise

    def signal_batch(self) -> SignalBatch:
        """What a reward signal rewards and trains on."""
        return SignalBatch(
            self.obs, self.next_obs, self.continuous_actions, self.discrete_actions, self.dones, self.loss_masks
        )

    def to(self, device: torch.device) -> ReplayBatch:
        if device.type == "cpu":
            return self
        return ReplayBatch(
            obs=tuple(o.to(device) for o in self.obs),
            next_obs=tuple(o.to(device) for o in self.next_obs),
            action_masks=self.action_masks.to(device),
            continuous_actions=self.continuous_actions.to(device),
            discrete_actions=self.discrete_actions.to(device),
            rewards=self.rewards.to(device),
            dones=self.dones.to(device),
            loss_masks=None if self.loss_masks is None else self.loss_masks.to(device),
            memories=self.memories.to(device),
            critic_memories=self.critic_memories.to(device),
        )


def transition_bytes(
    obs_shapes: Sequence[tuple[int, ...]],
    continuous_size: int,
    discrete_branches: Sequence[int],
    streams: int,
    memory_sizes: tuple[int, int] = (0, 0),
) -> int:
    """Bytes one stored transition takes at least (images counted as uint8, vectors as float32):
    observation and next observation, actions, masks, rewards, done, loss mask, memories."""
    obs = sum((1 if len(shape) == 3 else 4) * int(np.prod(shape)) for shape in obs_shapes)
    actions = 4 * continuous_size + 8 * len(discrete_branches) + int(sum(discrete_branches))
    return 2 * obs + actions + 4 * streams + 4 + 1 + 4 * sum(memory_sizes)


@attrs.define
class TransitionColumns:
    """Every per-transition field besides the observations, one tensor each with transitions on
    axis 0: the ring's storage (``capacity`` rows) or one trajectory's rows. Declared once;
    copies, sampling and saving go through these fields."""

    action_masks: Tensor  # [N, m] bool, True = allowed (when the observation was seen)
    continuous_actions: Tensor  # [N, c] as the policy produced them
    discrete_actions: Tensor  # [N, b] int64 (a trajectory's int32 is cast on writing)
    rewards: Tensor  # [N, S] one column per reward signal, strength applied
    dones: Tensor  # [N] float, 1 where the episode truly ended
    loss_masks: Tensor  # [N] bool, False on a recurrent buffer's padding rows
    memories: Tensor  # [N, k] actor memory fed with the observation ([N, 0] without memory)
    critic_memories: Tensor  # [N, k'] value network memory at a sequence's start

    @staticmethod
    def empty(
        capacity: int,
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        memory_sizes: tuple[int, int] = (0, 0),
        device: torch.device | str = "cpu",
    ) -> TransitionColumns:
        # torch.empty: the memory is only committed as rows are written (a 2M-transition buffer
        # costs nothing until it fills); rows at or past the buffer's length are never read.
        def empty(*shape: int, dtype: torch.dtype = torch.float32) -> Tensor:
            return torch.empty(shape, dtype=dtype, device=device)

        return TransitionColumns(
            action_masks=empty(capacity, int(sum(discrete_branches)), dtype=torch.bool),
            continuous_actions=empty(capacity, continuous_size),
            discrete_actions=empty(capacity, len(discrete_branches), dtype=torch.int64),
            rewards=empty(capacity, streams),
            dones=empty(capacity),
            loss_masks=empty(capacity, dtype=torch.bool),
            memories=empty(capacity, memory_sizes[0]),
            critic_memories=empty(capacity, memory_sizes[1]),
        )

    @staticmethod
    def of(
        trajectory: Trajectory,
        rewards: np.ndarray,
        *,
        rows: int | None = None,
        critic_memories: np.ndarray | None = None,
        sequence_length: int = 1,
    ) -> TransitionColumns:
        """``trajectory``'s rows (views of its arrays where they are contiguous), or, with
        ``rows`` > T, padded to that many (zeros, every action allowed, ``loss_masks`` False).
        The last transition is done only when the episode truly ended: an interrupted
        (max-step) ending or a time-horizon cut bootstraps from ``next_obs``.
        ``critic_memories`` [ceil(T / L), k']: the value network's memory at each sequence's start."""
        n = trajectory.length
        total = n if rows is None else rows
        dones = np.zeros(total, np.float32)
        dones[n - 1] = float(trajectory.terminated)
        masks = np.zeros(total, bool)
        masks[:n] = True

        def tensor(array: np.ndarray, fill: float = 0) -> Tensor:
            if total > n:
                padded = np.full((total, *array.shape[1:]), fill, array.dtype)
                padded[:n] = array
                array = padded
            return torch.from_numpy(np.ascontiguousarray(array))

        critic = np.zeros((total, 0 if critic_memories is None else critic_memories.shape[1]), np.float32)
        if critic_memories is not None:
            critic[::sequence_length] = critic_memories
        return TransitionColumns(
            action_masks=tensor(trajectory.action_masks, fill=True),
            continuous_actions=tensor(trajectory.continuous_actions),
            discrete_actions=tensor(trajectory.discrete_actions),
            rewards=tensor(np.asarray(rewards, np.float32).reshape(n, -1)),
            dones=torch.from_numpy(dones),
            loss_masks=torch.from_numpy(masks),
            memories=tensor(trajectory.memories),
            critic_memories=torch.from_numpy(critic),
        )

    def named(self) -> list[tuple[str, Tensor]]:
        """(field name, tensor) in declaration order (the names of a saved buffer's entries)."""
        return [(field.name, getattr(self, field.name)) for field in attrs.fields(TransitionColumns)]

    def put(self, rows: slice | Tensor, source: TransitionColumns, source_rows: slice | Tensor) -> None:
        """Copy ``source``'s ``source_rows`` into this storage's ``rows``, field by field."""
        for name, tensor in self.named():
            tensor[rows] = getattr(source, name)[source_rows]

    def take(self, rows: Tensor | slice) -> TransitionColumns:
        """The rows ``rows`` (an index tensor: gathered copies; a slice: cloned)."""
        if isinstance(rows, slice):
            return TransitionColumns(*(tensor[rows].clone() for _, tensor in self.named()))
        return TransitionColumns(*(tensor.index_select(0, rows) for _, tensor in self.named()))


class ReplayBuffer:
    """The ``capacity`` most recent transitions of one behavior (see the module docstring).

    ``streams``: reward signals (columns of ``rewards``). ``sequence_length`` and
    ``memory_sizes`` (actor, value network): the recurrent layout of the module docstring.
    ``device``: where the transitions are stored and minibatches gathered.
    """

    def __init__(
        self,
        capacity: int,
        obs_shapes: Sequence[tuple[int, ...]],
        continuous_size: int,
        discrete_branches: Sequence[int],
        streams: int,
        *,
        sequence_length: int = 1,
        memory_sizes: tuple[int, int] = (0, 0),
        device: torch.device | str = "cpu",
    ) -> None:
        if capacity < 1:
            raise ValueError(f"a replay buffer needs room for at least one transition, got capacity {capacity}")
        self.sequence_length = int(sequence_length)
        self.recurrent = self.sequence_length > 1 or any(size > 0 for size in memory_sizes)
        self.capacity = padded_length(int(capacity), self.sequence_length)
        capacity = self.capacity
        self._obs_shapes = [tuple(int(s) for s in shape) for shape in obs_shapes]
        self._obs: list[Tensor | None] = [None] * len(self._obs_shapes)
        self._next_obs: list[Tensor | None] = [None] * len(self._obs_shapes)
        self.device = torch.device(device)
        self._columns = TransitionColumns.empty(
            capacity, continuous_size, discrete_branches, streams, memory_sizes, self.device
        )
        self._size = 0
        self._next = 0  # the row the next transition goes to

    def __len__(self) -> int:
        return self._size

    # ------------------------------------------------------------------ writing

    def add(self, trajectory: Trajectory, rewards: np.ndarray, critic_memories: np.ndarray | None = None) -> None:
        """Store ``trajectory``'s T transitions with their per-signal ``rewards`` [T, S]
        (recurrent: padded to whole sequences, with the value network's memory at each
        sequence's start, ``critic_memories`` [ceil(T / L), k']).

        The last transition is done only when the episode truly ended: an interrupted
        (max-step) ending or a time-horizon cut bootstraps from ``next_obs``.
        """
        t = trajectory.length
        n = padded_length(t, self.sequence_length) if self.recurrent else t
        columns = TransitionColumns.of(
            trajectory, rewards, rows=n, critic_memories=critic_memories, sequence_length=self.sequence_length
        )
        obs = list(trajectory.obs)
        next_obs = [np.concatenate([o[1:], nxt[None]]) for o, nxt in zip(trajectory.obs, trajectory.next_obs)]
        if n > t:
            obs = [_pad(o, n) for o in obs]
            next_obs = [_pad(o, n) for o in next_obs]
        start = 0
        if n > self.capacity:  # only the newest ``capacity`` rows can stay
            start = n - self.capacity
        for lo, hi, row in self._spans(start, n):
            for i in range(len(obs)):
                self._obs_storage(self._obs, i, obs[i])[row : row + hi - lo] = torch.from_numpy(obs[i][lo:hi])
                self._obs_storage(self._next_obs, i, next_obs[i])[row : row + hi - lo] = torch.from_numpy(
                    next_obs[i][lo:hi]
                )
            self._columns.put(slice(row, row + hi - lo), columns, slice(lo, hi))
        self._next = (self._next + n - start) % self.capacity
        self._size = min(self._size + n - start, self.capacity)

    def _spans(self, start: int, end: int) -> list[tuple[int, int, int]]:
        """(source start, source end, buffer row) pieces for rows ``start:end`` of a
        trajectory written from ``self._next``, split where the ring wraps."""
        room = self.capacity - self._next
        count = end - start
        if count <= room:
            return [(start, end, self._next)]
        return [(start, start + room, self._next), (start + room, end, 0)]

    def _obs_storage(self, storage: list[Tensor | None], i: int, sample: np.ndarray) -> Tensor:
        stored = storage[i]
        if stored is None:
            dtype = torch.uint8 if sample.dtype == np.uint8 else torch.float32
            stored = storage[i] = torch.empty((self.capacity, *self._obs_shapes[i]), dtype=dtype, device=self.device)
        return stored

    # ------------------------------------------------------------------ sampling

    def sample(self, batch_size: int, generator: torch.Generator) -> ReplayBatch:
        """``batch_size`` transitions drawn uniformly with replacement (the rows drawn on the
        CPU, gathered on the buffer's device); recurrent: ``max(batch_size // L, 1)`` whole
        sequences, so drawn."""
        if self._size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        # rows 0 .. size-1 are filled (until the ring is full, then all of them are)
        length = self.sequence_length
        if self.recurrent:
            starts = torch.randint(self._size // length, (max(batch_size // length, 1),), generator=generator)
            rows = sequence_rows(starts * length, length)
        else:
            rows = torch.randint(self._size, (batch_size,), generator=generator)
        rows = rows.to(self.device, non_blocking=True)  # from pageable memory: staged at once, no wait
        columns = self._columns.take(rows)
        return ReplayBatch(
            obs=tuple(o.index_select(0, rows) for o in self._obs if o is not None),
            next_obs=tuple(o.index_select(0, rows) for o in self._next_obs if o is not None),
            action_masks=columns.action_masks,
            continuous_actions=columns.continuous_actions,
            discrete_actions=columns.discrete_actions,
            rewards=columns.rewards,
            dones=columns.dones,
            loss_masks=columns.loss_masks if self.recurrent else None,
            memories=columns.memories,
            critic_memories=columns.critic_memories,
        )

    # ------------------------------------------------------------------ saving

    def state(self) -> dict[str, Any]:
        """The stored transitions as laid out in the ring (for ``save_replay_buffer``): a buffer
        of the same capacity restored from it draws the very same minibatches."""
        rows = slice(0, self._size)
        state: dict[str, Any] = {"capacity": self.capacity, "size": self._size, "next": self._next}
        state.update((name, column.cpu()) for name, column in self._columns.take(rows).named())
        state["obs"] = [o[rows].to("cpu", copy=True) for o in self._obs if o is not None]
        state["next_obs"] = [o[rows].to("cpu", copy=True) for o in self._next_obs if o is not None]
        return state

    def load(self, state: Mapping[str, Any]) -> None:
        """Restore :meth:`state`. Into a buffer of another capacity the transitions go oldest
        first, and the newest ones stay when they do not all fit. Raises ValueError when the
        saved transitions do not fit this behavior's spec."""
        self._check_fits(state)
        size, capacity, next_row = int(state["size"]), int(state["capacity"]), int(state["next"])
        order = torch.arange(size)
        if capacity != self.capacity and size == capacity:  # oldest first: from the write position
            order = (order + next_row) % capacity
        keep = min(size, self.capacity)
        order = order[size - keep :]
        for i, (saved, saved_next) in enumerate(zip(state["obs"], state["next_obs"])):
            self._obs_storage(self._obs, i, saved.numpy())[:keep] = saved[order]
            self._obs_storage(self._next_obs, i, saved_next.numpy())[:keep] = saved_next[order]
        saved = TransitionColumns(*(_saved_column(state, name, size, column) for name, column in self._columns.named()))
        self._columns.put(slice(0, keep), saved, order)
        self._size = keep
        self._next = next_row if capacity == self.capacity else keep % self.capacity

    def _check_fits(self, state: Mapping[str, Any]) -> None:
        for name, target in self._columns.named():
            saved = _saved_column(state, name, int(state["size"]), target)
            if tuple(saved.shape[1:]) != tuple(target.shape[1:]):
                raise ValueError(
                    f"saved replay buffer field {name} has shape {list(saved.shape[1:])} per transition, "
                    f"this behavior needs {list(target.shape[1:])}"
                )
        if len(state["obs"]) != len(self._obs_shapes):
            raise ValueError(
                f"saved replay buffer has {len(state['obs'])} observations per transition, "
                f"this behavior has {len(self._obs_shapes)}"
            )
        for i, saved in enumerate(state["obs"]):
            if tuple(saved.shape[1:]) != self._obs_shapes[i]:
                raise ValueError(
                    f"saved replay buffer observation {i} has shape {list(saved.shape[1:])}, "
                    f"this behavior's is {list(self._obs_shapes[i])}"
                )


def _pad(array: np.ndarray, rows: int) -> np.ndarray:
    """``array`` [T, ...] with zero rows appended up to ``rows``."""
    padded = np.zeros((rows, *array.shape[1:]), array.dtype)
    padded[: array.shape[0]] = array
    return padded


def _saved_column(state: Mapping[str, Any], name: str, size: int, column: Tensor) -> Tensor:
    """A saved buffer's column; one saved before recurrent buffers existed has no loss masks
    (every row real) or memories (width 0)."""
    if name in state:
        return state[name]
    if name == "loss_masks":
        return torch.ones(size, dtype=torch.bool)
    return torch.zeros((size, *column.shape[1:]))
