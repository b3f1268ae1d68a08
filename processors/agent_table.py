"""Per-agent storage for the processor: one slot per live agent, arrays indexed by slot.

Every per-agent field lives in a numpy array whose axis 0 is the slot, so a whole batch of
agents is read or written with one fancy-indexed operation (and a single agent with plain
integer indexing, several times cheaper). Fields are attributes of typed records
(:class:`StepColumns`, :class:`ActionColumns`, :class:`AgentColumns`), never looked up by a
name. Agents are found by an int64 key (worker id in the high 32 bits, local agent id in
the low 32) kept in a sorted array, so looking up a batch of ids is one ``searchsorted``;
a dict from key to slot serves lookups of one agent at a time. Slots of agents that
terminate are cleared and reused: a run in which every episode brings fresh agent ids holds
only as many slots as agents were alive at once.

Large observations (images) are not packed: each slot owns one ``[T, *shape]`` buffer that
the published trajectory takes over (see :class:`BufferedObs`), so every image is copied
once, from the step into the buffer.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

import attrs
import numpy as np

_LOCAL_ID_BITS = 32
_LOCAL_ID_MASK = (1 << _LOCAL_ID_BITS) - 1

BUFFERED_OBS_BYTES = 4096
"""An observation of at least this many bytes per agent-step is stored in per-slot buffers
handed to the trajectory (one copy); smaller ones are packed (fast batched writes, and a
copy when published)."""


def agent_keys(worker_id: int, agent_ids: np.ndarray) -> np.ndarray:
    """[N] int64 keys unique across workers for local ``agent_ids`` of ``worker_id``."""
    return (np.int64(worker_id) << _LOCAL_ID_BITS) | (agent_ids.astype(np.int64) & _LOCAL_ID_MASK)


def key_workers(keys: np.ndarray) -> np.ndarray:
    """[N] the worker ids of keys made by :func:`agent_keys`."""
    return keys >> _LOCAL_ID_BITS


def split_key(key: int) -> tuple[int, int]:
    """(worker_id, local agent id) of a key made by :func:`agent_keys`."""
    local = key & _LOCAL_ID_MASK
    if local >= 1 << (_LOCAL_ID_BITS - 1):  # local ids are int32 in mlagents_envs
        local -= 1 << _LOCAL_ID_BITS
    return key >> _LOCAL_ID_BITS, local


# ---------------------------------------------------------------------- typed records


@attrs.define(slots=True, eq=False)
class ActionColumns:
    """Per-step arrays of one action kind (continuous or discrete), ``[S, T, w]``."""

    actions: np.ndarray  # as sampled by the policy
    log_probs: np.ndarray  # float32
    previous: np.ndarray  # the agent's previous action of this kind (zeros at episode start)

    @property
    def width(self) -> int:
        return int(self.actions.shape[2])


@attrs.define(slots=True, eq=False)
class StepColumns:
    """Per-step fields other than observations, each ``[S, T, ...]`` (slot, row)."""

    reward: np.ndarray  # [S, T] float32
    done: np.ndarray  # [S, T] bool, written on some rows only: cleared on release
    interrupted: np.ndarray  # [S, T] bool, likewise
    group_id: np.ndarray  # [S, T] int32
    group_reward: np.ndarray  # [S, T] float32
    continuous: ActionColumns  # [S, T, c]
    discrete: ActionColumns  # [S, T, b]
    action_mask: np.ndarray  # [S, T, m] bool
    memory: np.ndarray  # [S, T, k] float32


@attrs.define(slots=True, eq=False)
class AgentColumns:
    """Per-agent state that is not per step, each ``[S, ...]``; zeroed on release."""

    count: np.ndarray  # [S] int64 transitions in the trajectory under construction
    acted: np.ndarray  # [S] bool: an action is recorded for the latest decision
    episode_reward: np.ndarray  # [S] float64
    episode_transitions: np.ndarray  # [S] int64
    last_continuous: np.ndarray  # [S, c] float32
    last_discrete: np.ndarray  # [S, b] int32
    memory_state: np.ndarray  # [S, k] float32: memory to feed with the next observation
    published: np.ndarray  # [S] bool: a trajectory of the agent's current episode went out


_Record = TypeVar("_Record", StepColumns, AgentColumns, ActionColumns)


def _arrays(record: StepColumns | AgentColumns | ActionColumns) -> Iterator[np.ndarray]:
    """Every array of a record, nested records included."""
    for value in attrs.astuple(record, recurse=False):
        if isinstance(value, np.ndarray):
            yield value
        else:
            yield from _arrays(value)


def _replace_arrays(record: _Record, change: Callable[[np.ndarray], np.ndarray]) -> None:
    """Replace every array of ``record`` (nested records included) by ``change(array)``,
    in place, so references to the record stay valid."""
    for field in attrs.fields(type(record)):
        value = getattr(record, field.name)
        if isinstance(value, np.ndarray):
            setattr(record, field.name, change(value))
        else:
            _replace_arrays(value, change)


def _grown(array: np.ndarray, axis: int, size: int) -> np.ndarray:
    shape = list(array.shape)
    old = shape[axis]
    shape[axis] = size
    grown = np.zeros(shape, array.dtype)
    grown[(slice(None),) * axis + (slice(0, old),)] = array
    return grown


# ---------------------------------------------------------------------- observations


class PackedObs:
    """One observation of every slot in one array ``[S, T, *shape]``; a published
    trajectory gets a copy of its rows."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, slots: int, time: int):
        self.dtype = dtype
        self.data = np.zeros((slots, time, *shape), dtype)

    def write(self, slots: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
        self.data[slots, rows] = values

    def write_one(self, slot: int, row: int, value: np.ndarray) -> None:
        self.data[slot, row] = value

    def read(self, slots: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """[N, *shape] copy of one row per slot."""
        return self.data[slots, rows]

    def take(self, slots: np.ndarray, counts: list[int], length: int) -> list[np.ndarray]:
        """Rows [0, count) of each slot, as arrays the slots no longer touch."""
        if len(counts) == 1:
            return [self.data[int(slots[0]), : counts[0]].copy()]
        gathered = self.data[slots, :length]
        return [gathered[k, :count] for k, count in enumerate(counts)]

    def grow_slots(self, capacity: int) -> None:
        self.data = _grown(self.data, 0, capacity)

    def grow_time(self, capacity: int) -> None:
        self.data = _grown(self.data, 1, capacity)


class BufferedObs:
    """One large observation (an image): a ``[T, *shape]`` buffer per slot.

    A published trajectory takes its slot's buffer (the slot gets another at its next
    write), so each observation is copied once. A trajectory using at most a quarter of
    the buffer gets a copy of its rows instead and the slot keeps the buffer, so a short
    trajectory never pins a long buffer.

    Buffers lent to trajectories are reused once nothing else refers to them (the
    trajectory and every view of it are gone, as after a trainer has copied it into its
    own buffer): writing into fresh memory costs a page fault per page, more than the copy.
    """

    _LENT_CHECKS = 2  # lent buffers examined per buffer needed
    _LENT_MAX = 64  # at most this many lent buffers are watched; older ones are let go

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, slots: int, time: int):
        self.shape = shape
        self.dtype = dtype
        self.time = time
        self.buffers: list[np.ndarray | None] = [None] * slots
        self._lent: deque[np.ndarray] = deque()

    def _buffer(self, slot: int) -> np.ndarray:
        buffer = self.buffers[slot]
        if buffer is None:
            buffer = self._returned()
            if buffer is None:
                buffer = np.empty((self.time, *self.shape), self.dtype)
            self.buffers[slot] = buffer
        return buffer

    def _returned(self) -> np.ndarray | None:
        """A lent buffer no one refers to any more, if one of the oldest is."""
        lent = self._lent
        for _ in range(min(self._LENT_CHECKS, len(lent))):
            buffer = lent.popleft()
            # References: ``buffer`` here and getrefcount's argument. Any view still held
            # (numpy views keep their base alive) would add one.
            if sys.getrefcount(buffer) == 2:
                return buffer
            lent.append(buffer)
        return None

    def write(self, slots: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
        for k, (slot, row) in enumerate(zip(slots.tolist(), rows.tolist())):
            self._buffer(slot)[row] = values[k]

    def write_one(self, slot: int, row: int, value: np.ndarray) -> None:
        self._buffer(slot)[row] = value

    def read(self, slots: np.ndarray, rows: np.ndarray) -> np.ndarray:
        out = np.empty((slots.shape[0], *self.shape), self.dtype)
        for k, (slot, row) in enumerate(zip(slots.tolist(), rows.tolist())):
            out[k] = self._buffer(slot)[row]
        return out

    def take(self, slots: np.ndarray, counts: list[int], length: int) -> list[np.ndarray]:
        taken = []
        for slot, count in zip(slots.tolist(), counts):
            buffer = self._buffer(slot)
            if 4 * count <= buffer.shape[0]:
                taken.append(buffer[:count].copy())
            else:
                taken.append(buffer[:count])
                self.buffers[slot] = None
                self._lent.append(buffer)
                if len(self._lent) > self._LENT_MAX:
                    self._lent.popleft()
        return taken

    def grow_slots(self, capacity: int) -> None:
        self.buffers.extend([None] * (capacity - len(self.buffers)))

    def grow_time(self, capacity: int) -> None:
        self.time = capacity
        self.buffers = [None if b is None else _grown(b, 0, capacity) for b in self.buffers]
        self._lent.clear()


ObsColumn = PackedObs | BufferedObs


# ---------------------------------------------------------------------- the table


class AgentTable:
    """Slots for live agents plus the trajectory under construction of each.

    ``obs`` holds one column per observation, ``steps`` the other per-step fields
    (``[slots, time, ...]``), ``agent`` the per-agent state (``[slots, ...]``). Time
    capacity grows on demand up to ``max_time``.
    """

    def __init__(
        self,
        obs_layouts: Sequence[tuple[tuple[int, ...], np.dtype]],
        continuous_size: int,
        branches: int,
        mask_width: int,
        memory_size: int,
        max_time: int,
        initial_slots: int = 16,
        initial_time: int = 64,
    ):
        self.max_time = max_time
        self.time_capacity = t = min(max_time, initial_time)
        self.slot_capacity = 0
        c, b, m, k = continuous_size, branches, mask_width, memory_size
        f32, i32 = np.float32, np.int32
        self.obs: list[ObsColumn] = [
            (BufferedObs if int(np.prod(shape)) * dtype.itemsize >= BUFFERED_OBS_BYTES else PackedObs)(
                shape, dtype, 0, t
            )
            for shape, dtype in obs_layouts
        ]
        self.steps = StepColumns(
            reward=np.zeros((0, t), f32),
            done=np.zeros((0, t), bool),
            interrupted=np.zeros((0, t), bool),
            group_id=np.zeros((0, t), i32),
            group_reward=np.zeros((0, t), f32),
            continuous=ActionColumns(np.zeros((0, t, c), f32), np.zeros((0, t, c), f32), np.zeros((0, t, c), f32)),
            discrete=ActionColumns(np.zeros((0, t, b), i32), np.zeros((0, t, b), f32), np.zeros((0, t, b), i32)),
            action_mask=np.zeros((0, t, m), bool),
            memory=np.zeros((0, t, k), f32),
        )
        self.agent = AgentColumns(
            count=np.zeros(0, np.int64),
            acted=np.zeros(0, bool),
            episode_reward=np.zeros(0, np.float64),
            episode_transitions=np.zeros(0, np.int64),
            last_continuous=np.zeros((0, c), f32),
            last_discrete=np.zeros((0, b), i32),
            memory_state=np.zeros((0, k), f32),
            published=np.zeros(0, bool),
        )
        self._agent_arrays_to_clear = [a for a in _arrays(self.agent) if a.shape[1:] != (0,)]
        self.slot_key = np.zeros(0, np.int64)
        self.slot_of: dict[int, int] = {}  # key -> slot of every live agent
        self._sorted_keys = np.zeros(0, np.int64)
        self._sorted_slots = np.zeros(0, np.int64)
        self._free: list[int] = []
        self._grow_slots(initial_slots)

    @property
    def live_count(self) -> int:
        """Number of agents holding a slot."""
        return int(self._sorted_keys.shape[0])

    def live_slots(self) -> np.ndarray:
        """[L] slots of every live agent."""
        return self._sorted_slots.copy()

    def find(self, keys: np.ndarray) -> np.ndarray:
        """[N] slot of each key, -1 where the agent holds none."""
        sorted_keys = self._sorted_keys
        if sorted_keys.shape[0] == 0:
            return np.full(keys.shape[0], -1, np.int64)
        pos = sorted_keys.searchsorted(keys)
        np.minimum(pos, sorted_keys.shape[0] - 1, out=pos)
        return np.where(sorted_keys[pos] == keys, self._sorted_slots[pos], -1)

    def find_few(self, worker_id: int, agent_ids: list[int]) -> list[int]:
        """:meth:`find` for a few local ids of one worker, by dictionary lookups: cheaper than
        array operations for a handful of agents."""
        slot_of, base = self.slot_of, worker_id << _LOCAL_ID_BITS
        return [slot_of.get(base | (agent_id & _LOCAL_ID_MASK), -1) for agent_id in agent_ids]

    def allocate(self, keys: np.ndarray) -> np.ndarray:
        """Give each (distinct, currently unknown) key a cleared slot; returns [N] slots."""
        n = keys.shape[0]
        while len(self._free) < n:
            self._grow_slots(2 * self.slot_capacity)
        slots = np.array(self._free[-n:][::-1], np.int64)
        del self._free[-n:]
        self.slot_key[slots] = keys
        self.slot_of.update(zip(keys.tolist(), slots.tolist()))
        all_keys = np.concatenate([self._sorted_keys, keys])
        all_slots = np.concatenate([self._sorted_slots, slots])
        order = np.argsort(all_keys, kind="stable")
        self._sorted_keys = all_keys[order]
        self._sorted_slots = all_slots[order]
        return slots

    def release(self, slots: np.ndarray) -> None:
        """Make ``slots`` available again, zeroing their per-agent fields and step flags.

        Other per-step rows are overwritten before they are read, so they are left as
        they are: clearing whole image buffers of every terminating agent would cost more
        than the step itself.
        """
        if slots.shape[0] == 0:
            return
        keys = self.slot_key[slots]
        keep = np.ones(self._sorted_keys.shape[0], bool)
        keep[self._sorted_keys.searchsorted(keys)] = False
        self._sorted_keys = self._sorted_keys[keep]
        self._sorted_slots = self._sorted_slots[keep]
        slot_of = self.slot_of
        for key in keys.tolist():
            del slot_of[key]
        self.steps.done[slots] = False
        self.steps.interrupted[slots] = False
        for array in self._agent_arrays_to_clear:
            array[slots] = 0
        self._free.extend(slots.tolist())

    def ensure_time(self, needed: int) -> None:
        """Make room for ``needed`` rows per agent (never beyond ``max_time``)."""
        if needed <= self.time_capacity:
            return
        capacity = min(self.max_time, max(needed, 2 * self.time_capacity))
        if capacity == self.time_capacity:
            return
        _replace_arrays(self.steps, lambda array: _grown(array, 1, capacity))
        for column in self.obs:
            column.grow_time(capacity)
        self.time_capacity = capacity

    def _grow_slots(self, capacity: int) -> None:
        old = self.slot_capacity
        capacity = max(capacity, 1)
        _replace_arrays(self.steps, lambda array: _grown(array, 0, capacity))
        _replace_arrays(self.agent, lambda array: _grown(array, 0, capacity))
        self._agent_arrays_to_clear = [a for a in _arrays(self.agent) if a.shape[1:] != (0,)]
        for column in self.obs:
            column.grow_slots(capacity)
        self.slot_key = _grown(self.slot_key, 0, capacity)
        # Hand out low slots first (allocate pops from the end).
        self._free = list(range(capacity - 1, old - 1, -1)) + self._free
        self.slot_capacity = capacity


def take_rows(array: np.ndarray, slots: np.ndarray, length: int) -> np.ndarray:
    """[K, length, ...] copy of the first ``length`` rows of ``slots`` of a per-step array
    (for a zero-width field, a view of nothing: there is nothing to copy)."""
    if array.size == 0:
        return array[: slots.shape[0], :length]
    if slots.shape[0] == 1:  # basic slicing and a copy: cheaper than fancy indexing
        slot = int(slots[0])
        return array[slot : slot + 1, :length].copy()
    return array[slots, :length]
