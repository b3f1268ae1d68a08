"""Per-agent storage for the processor: one slot per live agent, arrays indexed by slot.

Every per-agent field lives in a numpy array whose axis 0 is the slot, so a whole batch of
agents is read or written with one fancy-indexed operation. Agents are found by an int64
key (worker id in the high 32 bits, local agent id in the low 32) kept in a sorted array,
so looking up a batch of ids is one ``searchsorted``. Slots of agents that terminate are
cleared and reused: a run in which every episode brings fresh agent ids holds only as many
slots as agents were alive at once.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

_LOCAL_ID_BITS = 32
_LOCAL_ID_MASK = (1 << _LOCAL_ID_BITS) - 1


def agent_keys(worker_id: int, agent_ids: np.ndarray) -> np.ndarray:
    """[N] int64 keys unique across workers for local ``agent_ids`` of ``worker_id``."""
    return (np.int64(worker_id) << _LOCAL_ID_BITS) | (agent_ids.astype(np.int64) & _LOCAL_ID_MASK)


def split_key(key: int) -> tuple[int, int]:
    """(worker_id, local agent id) of a key made by :func:`agent_keys`."""
    local = key & _LOCAL_ID_MASK
    if local >= 1 << (_LOCAL_ID_BITS - 1):  # local ids are int32 in mlagents_envs
        local -= 1 << _LOCAL_ID_BITS
    return key >> _LOCAL_ID_BITS, local


class AgentTable:
    """Slots for live agents plus the trajectory under construction of each.

    ``fields`` maps a name to (per-step shape, dtype): each becomes an array
    ``[slots, time, *shape]`` reachable as ``table.steps[name]``. Per-agent scalars and
    vectors that are not per step live in ``table.agent[name]`` (``[slots, *shape]``).
    Time capacity grows on demand up to ``max_time``.
    """

    def __init__(
        self,
        step_fields: dict[str, tuple[tuple[int, ...], np.dtype]],
        agent_fields: dict[str, tuple[tuple[int, ...], np.dtype]],
        max_time: int,
        initial_slots: int = 16,
        initial_time: int = 64,
    ):
        self._step_fields = step_fields
        self._agent_fields = agent_fields
        self.max_time = max_time
        self.time_capacity = min(max_time, initial_time)
        self.slot_capacity = 0
        self.steps: dict[str, np.ndarray] = {
            name: np.zeros((0, self.time_capacity, *shape), dtype) for name, (shape, dtype) in step_fields.items()
        }
        self.agent: dict[str, np.ndarray] = {
            name: np.zeros((0, *shape), dtype) for name, (shape, dtype) in agent_fields.items()
        }
        self.slot_key = np.zeros(0, np.int64)
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

    def allocate(self, keys: np.ndarray) -> np.ndarray:
        """Give each (distinct, currently unknown) key a cleared slot; returns [N] slots."""
        n = keys.shape[0]
        while len(self._free) < n:
            self._grow_slots(2 * self.slot_capacity)
        slots = np.array(self._free[-n:][::-1], np.int64)
        del self._free[-n:]
        self.slot_key[slots] = keys
        all_keys = np.concatenate([self._sorted_keys, keys])
        all_slots = np.concatenate([self._sorted_slots, slots])
        order = np.argsort(all_keys, kind="stable")
        self._sorted_keys = all_keys[order]
        self._sorted_slots = all_slots[order]
        return slots

    def release(self, slots: np.ndarray, clear_steps: Sequence[str] = ()) -> None:
        """Make ``slots`` available again, zeroing their per-agent fields.

        Per-step rows are overwritten before they are read, so only the step fields named
        in ``clear_steps`` (flags written on some rows only) are zeroed: clearing whole
        image buffers of every terminating agent would cost more than the step itself.
        """
        if slots.shape[0] == 0:
            return
        keep = np.ones(self._sorted_keys.shape[0], bool)
        keep[self._sorted_keys.searchsorted(self.slot_key[slots])] = False
        self._sorted_keys = self._sorted_keys[keep]
        self._sorted_slots = self._sorted_slots[keep]
        for name in clear_steps:
            self.steps[name][slots] = 0
        for array in self.agent.values():
            if array.size:  # zero-width fields (no memory, no discrete actions) hold nothing
                array[slots] = 0
        self._free.extend(slots.tolist())

    def ensure_time(self, needed: int) -> None:
        """Make room for ``needed`` rows per agent (never beyond ``max_time``)."""
        if needed <= self.time_capacity:
            return
        capacity = min(self.max_time, max(needed, 2 * self.time_capacity))
        if capacity == self.time_capacity:
            return
        for name, array in self.steps.items():
            grown = np.zeros((array.shape[0], capacity, *array.shape[2:]), array.dtype)
            grown[:, : self.time_capacity] = array
            self.steps[name] = grown
        self.time_capacity = capacity

    def _grow_slots(self, capacity: int) -> None:
        old = self.slot_capacity
        capacity = max(capacity, 1)
        for name, array in self.steps.items():
            grown = np.zeros((capacity, *array.shape[1:]), array.dtype)
            grown[:old] = array
            self.steps[name] = grown
        for name, array in self.agent.items():
            grown = np.zeros((capacity, *array.shape[1:]), array.dtype)
            grown[:old] = array
            self.agent[name] = grown
        key = np.zeros(capacity, np.int64)
        key[:old] = self.slot_key
        self.slot_key = key
        # Hand out low slots first (allocate pops from the end).
        self._free = list(range(capacity - 1, old - 1, -1)) + self._free
        self.slot_capacity = capacity

    def gather(self, name: str, slots: np.ndarray, length: int) -> np.ndarray:
        """[K, length, ...] copy of the first ``length`` rows of ``slots`` (for a zero-width
        field, a view of nothing: there is nothing to copy)."""
        array = self.steps[name]
        if array.size == 0:
            return array[: slots.shape[0], :length]
        return array[slots, :length]

