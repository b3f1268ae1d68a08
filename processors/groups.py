"""What an agent's group mates did at each of its steps: Unity's multi-agent groups.

Unity gives agents of a ``SimpleMultiAgentGroup`` one group id (0: no group). For each
transition of a grouped agent, the centralised critic of POCA needs the other members'
*status* at that step: the observation a mate acted on, its action, the reward and done flag
that followed (ML-Agents' ``AgentExperience.group_status``), and, after a trajectory's last
step, the mates' current observations (``next_group_obs``) to bootstrap from.

As in ML-Agents, a member's status is its latest completed transition: it is kept until the
member's episode ends, so a mate that skips a decision is still seen. A member whose episode
ends in an environment step is forgotten only once that step is recorded, as ML-Agents forgets
it only after the step's decision rows: every row of that step sees its terminal status
(``done`` set), and every trajectory published in that step, one cut by the time horizon
included, has its terminal observation among the mates' ``next_obs``. An id that ends an
episode and starts another in the same step is seen with its terminal status in that step,
and with its new episode's from the new episode's first completed transition on.

Unlike ML-Agents, the statuses of every transition completed in one environment step are
gathered before any of them is recorded: an agent whose episode ends sees its mates' fresh
statuses of that step, and its trajectory's ``next_obs`` holds their observations of that
step (ML-Agents hands a terminal step the mates' statuses and observations of the previous
step, because it records terminal rows before gathering the decision rows'). The fixture
``tests/fixtures/mlagents_0_28/group_parity.json`` holds ML-Agents' processor both as
released and with that one change.

Everything is kept in arrays indexed by the processor's slots (see ``agent_table``), and the
mates of every completing agent are found with one sort per environment step; nothing here
runs for behaviors whose agents were never in a group.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np
from mlagents_envs.base_env import DecisionSteps, TerminalSteps

from processors.agent_table import AgentTable, agent_keys


@attrs.frozen(slots=True, eq=False)
class Groupmates:
    """The other members of an agent's group at each step of one trajectory.

    ``M`` is the most mates the agent had at any step; column ``j`` of a row holds some mate
    (not always the same one from row to row: the critic attends over mates as a set), and
    ``present[t, j]`` says whether it holds one at all (absent columns are zeros).
    """

    present: np.ndarray  # [T, M] bool
    obs: tuple[np.ndarray, ...]  # one [T, M, *shape] per sensor: what each mate acted on
    continuous_actions: np.ndarray  # [T, M, c] float32, as sampled by the policy
    discrete_actions: np.ndarray  # [T, M, b] int32
    rewards: np.ndarray  # [T, M] float32: each mate's individual reward for that step
    done: np.ndarray  # [T, M] bool: the mate's episode ended with that step
    next_obs: tuple[np.ndarray, ...]  # one [M', *shape] per sensor: the mates' observations after the last step

    @property
    def size(self) -> int:
        """``M``."""
        return int(self.present.shape[1])

    @property
    def all_done_at_end(self) -> bool:
        """Every mate present at the last step was done with it (or there was none): the
        group's episode is over, as ML-Agents' ``all_group_dones_reached``."""
        last = self.present[-1]
        return bool(np.all(self.done[-1][last]))


def group_keys(worker_id: int, group_ids: np.ndarray) -> np.ndarray:
    """[N] int64 keys of groups unique across workers (0 stays 0: no group)."""
    keys = agent_keys(worker_id, group_ids)
    return np.where(group_ids == 0, 0, keys | (np.int64(1) << 62))


class GroupTable:
    """Group statuses of a processor's agents and, per transition row, their mates'.

    Sized like the processor's :class:`AgentTable` (slots x time rows), plus ``M`` mate
    columns that grow with the largest group seen.
    """

    def __init__(self, obs_layouts: Sequence[tuple[tuple[int, ...], np.dtype]], continuous_size: int, branches: int):
        self._layouts = [(tuple(shape), np.dtype(dtype)) for shape, dtype in obs_layouts]
        self._c, self._b = continuous_size, branches
        self._slots = self._time = self._mates = 0
        # per slot: the agent whose status it is (-1: none), its group, the status itself
        self.member_key = np.zeros(0, np.int64)
        self.group_key = np.zeros(0, np.int64)
        self.status_obs = [np.zeros((0, *shape), dtype) for shape, dtype in self._layouts]
        self.status_continuous = np.zeros((0, self._c), np.float32)
        self.status_discrete = np.zeros((0, self._b), np.int32)
        self.status_reward = np.zeros(0, np.float32)
        self.status_done = np.zeros(0, bool)
        self.current_obs = [np.zeros((0, *shape), dtype) for shape, dtype in self._layouts]
        self.ending = np.zeros(0, bool)  # per slot: its agent's episode ends in this step
        self._ending = np.zeros(0, np.int64)  # those slots (forgotten by end_step)
        # per (slot, row, mate column)
        self.present = np.zeros((0, 0, 0), bool)
        self.mate_obs = [np.zeros((0, 0, 0, *shape), dtype) for shape, dtype in self._layouts]
        self.mate_continuous = np.zeros((0, 0, 0, self._c), np.float32)
        self.mate_discrete = np.zeros((0, 0, 0, self._b), np.int32)
        self.mate_reward = np.zeros((0, 0, 0), np.float32)
        self.mate_done = np.zeros((0, 0, 0), bool)

    # ------------------------------------------------------------------ recording

    def record(
        self, table: AgentTable, worker_id: int, decision_steps: DecisionSteps, terminal_steps: TerminalSteps
    ) -> None:
        """Gather the statuses of every transition this environment step completes and write
        each completing agent's mates into its row. Call after the step's actions are
        recorded and before its terminal and decision rows are; :meth:`end_step` once they are."""
        self._fit(table)
        completing: list[np.ndarray] = []
        for steps, done in ((terminal_steps, True), (decision_steps, False)):
            if len(steps) == 0:
                continue
            keys = agent_keys(worker_id, steps.agent_id)
            slots = table.find(keys)
            known = slots >= 0
            acted = np.zeros_like(known)
            acted[known] = table.agent.acted[slots[known]]
            if done:
                self._ending = slots[known]
                self.ending[self._ending] = True
            elif self._ending.shape[0]:
                # an id that ended its episode above and starts a new one now: its slot still
                # holds the old episode, and the new one has completed no transition yet
                acted[known] &= ~self.ending[slots[known]]
            rows = np.flatnonzero(acted)
            if rows.shape[0] == 0:
                continue
            slots = slots[rows]
            counts = table.agent.count[slots]
            groups = group_keys(worker_id, steps.group_id[rows].astype(np.int64))
            for status, current, column, obs in zip(self.status_obs, self.current_obs, table.obs, steps.obs):
                status[slots] = column.read(slots, counts)
                current[slots] = obs[rows]
            self.status_continuous[slots] = table.steps.continuous.actions[slots, counts]
            self.status_discrete[slots] = table.steps.discrete.actions[slots, counts]
            self.status_reward[slots] = steps.reward[rows]
            self.status_done[slots] = done
            self.group_key[slots] = groups
            self.member_key[slots] = np.where(groups != 0, keys[rows], -1)
            self.present[slots, counts] = False
            grouped = groups != 0
            completing.append(np.stack([slots[grouped], counts[grouped]]))
        if completing:
            slots, counts = np.concatenate(completing, axis=1)
            if slots.shape[0]:
                self._write_mates(table, slots, counts)

    def end_step(self) -> None:
        """Forget the members whose episode ended in this environment step. Call once the
        step's terminal and decision rows are recorded (until then they are still seen)."""
        self.member_key[self._ending] = -1
        self.ending[self._ending] = False
        self._ending = self._ending[:0]

    def forget(self, slots: np.ndarray) -> None:
        """Forget the members in ``slots`` (agents the processor drops without a terminal step)."""
        self.member_key[slots[slots < self.member_key.shape[0]]] = -1

    def _members(self) -> np.ndarray:
        """Slots holding the status of a live (or, within this step, just ended) member."""
        return np.flatnonzero(self.member_key >= 0)

    def _write_mates(self, table: AgentTable, slots: np.ndarray, counts: np.ndarray) -> None:
        members = self._members()
        order = np.argsort(self.group_key[members], kind="stable")
        members = members[order]
        keys = self.group_key[members]
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        sizes = np.diff(np.r_[starts, keys.shape[0]])
        group_of = np.repeat(np.arange(starts.shape[0]), sizes)  # [members] group index
        position = np.arange(keys.shape[0]) - starts[group_of]  # place within its group
        width = int(sizes.max())
        table_of_groups = np.full((starts.shape[0], width), -1, np.int64)
        table_of_groups[group_of, position] = members
        index_of = np.full(self._slots, -1, np.int64)
        index_of[members] = np.arange(members.shape[0])
        me = index_of[slots]
        mates = width - 1
        if mates == 0:
            return
        self._fit(table, mates)
        columns = np.arange(mates)
        mate_position = columns[None, :] + (columns[None, :] >= position[me][:, None])  # skip oneself
        mate_slots = table_of_groups[group_of[me][:, None], mate_position]  # [C, mates], -1 absent
        present = mate_slots >= 0
        source = np.where(present, mate_slots, 0)
        rows, cols = slots[:, None], counts[:, None]
        self.present[rows, cols, columns] = present
        keep = present[..., None]
        for mate_obs, status in zip(self.mate_obs, self.status_obs):
            values = status[source]
            mate_obs[rows, cols, columns] = np.where(keep.reshape(keep.shape + (1,) * (values.ndim - 3)), values, 0)
        self.mate_continuous[rows, cols, columns] = np.where(keep, self.status_continuous[source], 0)
        self.mate_discrete[rows, cols, columns] = np.where(keep, self.status_discrete[source], 0)
        self.mate_reward[rows, cols, columns] = np.where(present, self.status_reward[source], 0)
        self.mate_done[rows, cols, columns] = present & self.status_done[source]

    # ------------------------------------------------------------------ publishing

    def take(self, table: AgentTable, slots: np.ndarray, counts: list[int]) -> list[Groupmates]:
        """Each slot's rows [0, count) of mates, with the mates' current observations."""
        self._fit(table)
        members = self._members()
        result = []
        for slot, count in zip(slots.tolist(), counts):
            present = self.present[slot, :count]
            used = np.flatnonzero(present.any(axis=0))
            width = int(used[-1]) + 1 if used.shape[0] else 0
            group = self.group_key[slot]
            mates = members[(self.group_key[members] == group) & (members != slot)] if group != 0 else members[:0]
            result.append(
                Groupmates(
                    present=present[:, :width].copy(),
                    obs=tuple(o[slot, :count, :width].copy() for o in self.mate_obs),
                    continuous_actions=self.mate_continuous[slot, :count, :width].copy(),
                    discrete_actions=self.mate_discrete[slot, :count, :width].copy(),
                    rewards=self.mate_reward[slot, :count, :width].copy(),
                    done=self.mate_done[slot, :count, :width].copy(),
                    next_obs=tuple(current[mates] for current in self.current_obs),
                )
            )
        return result

    # ------------------------------------------------------------------ storage

    def _fit(self, table: AgentTable, mates: int = 0) -> None:
        """Grow to the table's slots and rows and to ``mates`` mate columns."""
        slots, time = table.slot_capacity, table.time_capacity
        mates = max(mates, self._mates)
        if slots == self._slots and time == self._time and mates == self._mates:
            return
        if slots != self._slots:
            self.member_key = _fill(self.member_key, slots, -1)
            self.group_key = _fill(self.group_key, slots, 0)
            self.status_obs = [_fill(a, slots) for a in self.status_obs]
            self.current_obs = [_fill(a, slots) for a in self.current_obs]
            self.status_continuous = _fill(self.status_continuous, slots)
            self.status_discrete = _fill(self.status_discrete, slots)
            self.status_reward = _fill(self.status_reward, slots)
            self.status_done = _fill(self.status_done, slots)
            self.ending = _fill(self.ending, slots)
        shape = (slots, time, mates)
        self.present = _resized(self.present, shape)
        self.mate_obs = [_resized(a, shape) for a in self.mate_obs]
        self.mate_continuous = _resized(self.mate_continuous, shape)
        self.mate_discrete = _resized(self.mate_discrete, shape)
        self.mate_reward = _resized(self.mate_reward, shape)
        self.mate_done = _resized(self.mate_done, shape)
        self._slots, self._time, self._mates = slots, time, mates


def _fill(array: np.ndarray, size: int, value: int = 0) -> np.ndarray:
    """``array`` grown along axis 0 to ``size`` rows, new rows set to ``value``."""
    grown = np.full((size, *array.shape[1:]), value, array.dtype)
    grown[: array.shape[0]] = array
    return grown


def _resized(array: np.ndarray, leading: tuple[int, int, int]) -> np.ndarray:
    """``array`` with its first three axes grown to ``leading`` (contents kept)."""
    grown = np.zeros((*leading, *array.shape[3:]), array.dtype)
    s, t, m = array.shape[:3]
    grown[:s, :t, :m] = array
    return grown
