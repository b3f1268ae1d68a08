"""Steps in, trajectories out: one AgentProcessor per behavior.

The processor pairs each agent's observation and action at a decision with the reward and
done flag of the agent's next appearance, stores the transition in that agent's trajectory
under construction, and publishes the trajectory when it reaches the time horizon or the
episode ends. All per-agent state (the trajectory being built, previous action, recurrent
memory, episode reward and length) is held here, keyed by global agent id, so the policy
stays a pure function.

Work is done on the whole batch of agents of a step at once (see ``agent_table``); Python
touches individual agents only to wrap each finished trajectory, to copy large observations
into their buffers, and in small scenes (at most ``_SMALL_BATCH`` agents deciding), where
integer indexing one agent at a time beats fancy indexing the batch. Group ids and group
rewards are written only once some agent of the behavior has been in a group.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps

from processors.agent_table import AgentTable, agent_keys, key_workers, split_key, take_rows
from processors.behavior_id import get_global_agent_id
from processors.groups import GroupTable
from processors.queue import AgentManagerQueue
from processors.trajectory import ActionInfo, Trajectory
from stats import StatsAggregationMethod, StatsReporter
from stats.tags import CUMULATIVE_REWARD, EPISODE_LENGTH, POLICY_ENTROPY

_SMALL_BATCH = 4
"""Decision and action batches of at most this many agents are recorded one agent at a
time (integer indexing); larger ones with one fancy-indexed operation per field."""


class UnrecordedStep(NamedTuple):
    """A worker's step not yet recorded, as far as its agents' memories go: recording it gives
    each agent the memory its previous action produced, and a new episode's agent (an id in
    ``ended`` and deciding again) zeros."""

    previous: ActionInfo | None  # the action the step follows (add_experiences' previous_action)
    ended: np.ndarray  # the step's terminal agent ids


def allowed_actions(decision_steps: DecisionSteps, mask_width: int) -> np.ndarray | None:
    """[N, m] True where an action is allowed (Unity's masks say where it is not); None when
    the behavior has no discrete branch or Unity sent no mask."""
    if mask_width == 0 or decision_steps.action_mask is None:
        return None
    return ~np.concatenate(decision_steps.action_mask, axis=1).astype(bool)


def _any(flags: np.ndarray) -> bool:
    """``flags.any()`` without its Python-level dispatch (which costs more than the work
    on the small batches of a typical step)."""
    return bool(np.count_nonzero(flags) > 0)


def _all(flags: np.ndarray) -> bool:
    return bool(np.count_nonzero(flags) == flags.size)


def _integers(values: Any, field: str) -> np.ndarray:
    """An integer array of ``values`` (a list, or an array of any integer width, kept as is)."""
    array = np.asarray(values)
    if array.dtype.kind in "iu":
        return array
    if array.size == 0:
        return array.astype(np.int32)
    raise TypeError(f"{field} must hold integers, got {array.dtype}")


def _arrays_already(steps: DecisionSteps | TerminalSteps) -> bool:
    """Every per-agent field of ``steps`` is an ndarray, ids of an integer dtype (what our
    env boundary and built-in environments give: the check is all the hot path pays)."""
    ids, groups = steps.agent_id, steps.group_id
    return (
        type(ids) is np.ndarray
        and type(groups) is np.ndarray
        and ids.dtype.kind in "iu"
        and groups.dtype.kind in "iu"
        and type(steps.reward) is np.ndarray
        and type(steps.group_reward) is np.ndarray
        and all(type(o) is np.ndarray for o in steps.obs)
    )


def as_decision_arrays(steps: DecisionSteps) -> DecisionSteps:
    """``steps`` with every field an array, as ``mlagents_envs`` builds them or not (its
    ``steps_from_proto`` gives ``group_id`` as a list; a user's environment may give lists
    or ids of any integer width)."""
    if _arrays_already(steps) and (steps.action_mask is None or all(type(m) is np.ndarray for m in steps.action_mask)):
        return steps
    mask = steps.action_mask
    return DecisionSteps(
        [np.asarray(o) for o in steps.obs],
        np.asarray(steps.reward, np.float32),
        _integers(steps.agent_id, "DecisionSteps.agent_id"),
        None if mask is None else [np.asarray(m, bool) for m in mask],
        _integers(steps.group_id, "DecisionSteps.group_id"),
        np.asarray(steps.group_reward, np.float32),
    )


def as_terminal_arrays(steps: TerminalSteps) -> TerminalSteps:
    """:func:`as_decision_arrays` for TerminalSteps."""
    if _arrays_already(steps) and type(steps.interrupted) is np.ndarray:
        return steps
    return TerminalSteps(
        [np.asarray(o) for o in steps.obs],
        np.asarray(steps.reward, np.float32),
        np.asarray(steps.interrupted, bool),
        _integers(steps.agent_id, "TerminalSteps.agent_id"),
        _integers(steps.group_id, "TerminalSteps.group_id"),
        np.asarray(steps.group_reward, np.float32),
    )


def _has_groups(steps: DecisionSteps | TerminalSteps) -> bool:
    """Some agent of ``steps`` is in a group or got a group reward."""
    return bool(np.count_nonzero(steps.group_id) > 0 or np.count_nonzero(steps.group_reward) > 0)


class AgentProcessor:
    """Turns one behavior's DecisionSteps/TerminalSteps into :class:`Trajectory` objects.

    ``policy`` supplies the behavior's spec (``policy.behavior_spec``) and its recurrent
    memory size (``policy.memory_size``, 0 if absent); the processor never calls it.
    ``max_trajectory_length`` is the time horizon: a trajectory is published as soon as it
    holds that many transitions.
    """

    def __init__(
        self,
        policy: Any,
        behavior_id: str,
        stats_reporter: StatsReporter,
        max_trajectory_length: int = sys.maxsize,
    ):
        if max_trajectory_length < 1:
            raise ValueError(f"max_trajectory_length must be at least 1, got {max_trajectory_length}")
        self.policy = policy
        self.behavior_id = behavior_id
        self._stats_reporter = stats_reporter
        self._max_trajectory_length = max_trajectory_length
        self._trajectory_queues: list[AgentManagerQueue[Trajectory]] = []
        spec: BehaviorSpec = policy.behavior_spec
        self._continuous_size = spec.action_spec.continuous_size
        self._branches = tuple(spec.action_spec.discrete_branches)
        self._mask_width = int(sum(self._branches))
        self._memory_size = int(getattr(policy, "memory_size", 0) or 0)
        self._observation_specs = spec.observation_specs
        self._table: AgentTable | None = None  # built at the first observations (their dtypes)
        # Group ids and rewards are written from the first step that has any: until then
        # the table's group columns are all zeros, which is what they would hold.
        self._grouped = False
        self._groups: GroupTable | None = None  # the group mates' statuses, from the first grouped step
        self._zero_groups = (np.zeros(0, np.int32), np.zeros(0, np.float32))
        # Called with the cumulative rewards of the episodes that end, in each step that ends
        # some (a curriculum's reward buffer).
        self.episode_reward_listeners: list[Callable[[np.ndarray], None]] = []
        # Per worker: the agent ids and slots of the latest decision, which the next
        # ActionInfo normally covers, so its lookup can be skipped.
        self._last_decision: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ public API

    @property
    def stats_reporter(self) -> StatsReporter:
        """Where this processor reports episode and environment stats."""
        return self._stats_reporter

    @property
    def max_trajectory_length(self) -> int:
        """The time horizon: the most transitions in one trajectory."""
        return self._max_trajectory_length

    def publish_trajectory_queue(self, trajectory_queue: AgentManagerQueue[Trajectory]) -> None:
        """Every trajectory from now on is also put on ``trajectory_queue``."""
        self._trajectory_queues.append(trajectory_queue)

    def add_experiences(
        self,
        decision_steps: DecisionSteps,
        terminal_steps: TerminalSteps,
        worker_id: int,
        previous_action: ActionInfo | None,
    ) -> None:
        """Record one environment step of worker ``worker_id`` for this behavior.

        ``previous_action`` is what the agents of this worker were told to do after their
        previous decision. Terminal rows are handled before decision rows, so an id in both
        ends an episode and starts a new one. The steps are taken as ``mlagents_envs`` builds
        them (lists or arrays, ids of any integer width).
        """
        decision_steps, terminal_steps = as_decision_arrays(decision_steps), as_terminal_arrays(terminal_steps)
        n_decisions, n_terminals = len(decision_steps), len(terminal_steps)
        if self._table is None:
            if n_decisions == 0 and n_terminals == 0:
                return  # nobody has been seen yet, so no action can be pending either
            self._table = self._new_table(decision_steps, terminal_steps)
        table = self._table
        if not self._grouped:
            self._grouped = (n_decisions > 0 and _has_groups(decision_steps)) or (
                n_terminals > 0 and _has_groups(terminal_steps)
            )
        if previous_action is not None and len(previous_action) > 0:
            self._record_actions(table, worker_id, previous_action)
        if self._grouped:
            self._group_table().record(table, worker_id, decision_steps, terminal_steps)
        if n_terminals > 0:
            self._record_terminals(table, worker_id, terminal_steps)
        if n_decisions > _SMALL_BATCH:
            self._record_decisions(table, worker_id, decision_steps)
        elif n_decisions > 0:
            self._record_few_decisions(table, worker_id, decision_steps)
        if n_terminals > 0 and self._groups is not None:
            self._groups.end_step()

    def end_episode(self) -> None:
        """End every agent's episode now: publish what each collected, then forget every agent.

        Unfinished trajectories go out ending in an interrupted step (the trainer bootstraps
        them) and their episodes are reported; ML-Agents' method of this name discards them.
        The run's forced reset (the env manager's ``request_reset``) does not call this: it
        forgets each reset worker's agents with :meth:`discard_worker`, publishing nothing, as
        ML-Agents' forced reset does.
        """
        table = self._table
        if table is None or table.live_count == 0:
            return
        slots = table.live_slots()
        counts = table.agent.count[slots]
        has_steps = counts > 0
        emit, rows = slots[has_steps], counts[has_steps]
        table.steps.done[emit, rows - 1] = True
        table.steps.interrupted[emit, rows - 1] = True
        self._report_episodes(table, slots, terminal_transition=np.zeros(slots.shape[0], bool))
        self._publish(table, emit, rows, self._pending_obs(table, emit, rows))
        table.release(slots)
        if self._groups is not None:
            self._groups.forget(slots)
        self._last_decision.clear()

    def discard_worker(self, worker_id: int) -> None:
        """Forget the agents of a worker whose environment was restarted or reset (a forced
        reset), publishing nothing.

        A fresh environment process numbers its agents from 0 again; none of them must
        meet the old process's per-agent state.
        """
        table = self._table
        if table is None or table.live_count == 0:
            return
        slots = table.live_slots()
        workers = key_workers(table.slot_key[slots])
        table.release(slots[workers == worker_id])
        if self._groups is not None:
            self._groups.forget(slots[workers == worker_id])
        self._last_decision.pop(worker_id, None)

    def get_memories(
        self,
        worker_id: int,
        agent_ids: np.ndarray,
        *,
        unrecorded: UnrecordedStep | None = None,
    ) -> np.ndarray:
        """[N, k] memory to feed the policy with these agents' current observations: those
        recorded so far, or with ``unrecorded`` (acting on a step before it is recorded, as the
        env manager does to send actions first) those that recording the step will leave.
        """
        out = np.zeros((agent_ids.shape[0], self._memory_size), np.float32)
        if self._table is None or not self._memory_size:
            return out
        slots = self._table.find(agent_keys(worker_id, agent_ids))
        known = slots >= 0
        out[known] = self._table.agent.memory_state[slots[known]]
        if unrecorded is None:
            return out
        previous, ended = unrecorded.previous, unrecorded.ended
        if previous is not None and len(previous) > 0:
            order = np.argsort(previous.agent_ids, kind="stable")
            sorted_ids = previous.agent_ids[order]
            at = np.minimum(np.searchsorted(sorted_ids, agent_ids), sorted_ids.shape[0] - 1)
            covered = known & (sorted_ids[at] == agent_ids)
            out[covered] = previous.memories[order[at[covered]]]
        if ended.shape[0] > 0:
            out[np.isin(agent_ids, ended)] = 0.0
        return out

    def get_previous_actions(self, worker_id: int, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """([N, c], [N, b]) the agents' previous actions this episode (zeros at its start)."""
        cont = np.zeros((agent_ids.shape[0], self._continuous_size), np.float32)
        disc = np.zeros((agent_ids.shape[0], len(self._branches)), np.int32)
        if self._table is not None:
            slots = self._table.find(agent_keys(worker_id, agent_ids))
            known = slots >= 0
            cont[known] = self._table.agent.last_continuous[slots[known]]
            disc[known] = self._table.agent.last_discrete[slots[known]]
        return cont, disc

    def record_environment_stats(self, env_stats: Mapping[str, Sequence[tuple[float, Any]]], worker_id: int) -> None:
        """Pass custom stats from the environment (StatsSideChannel) to the stats reporter.

        MOST_RECENT values are taken from worker 0 only, as ML-Agents does, so the value
        shown is one environment's rather than whichever worker reported last.
        """
        for key, values in env_stats.items():
            for value, aggregation in values:
                method = StatsAggregationMethod(int(aggregation.value))
                if method == StatsAggregationMethod.MOST_RECENT and worker_id != 0:
                    continue
                self._stats_reporter.add_stat(key, float(value), method)

    @property
    def live_agents(self) -> int:
        """Agents whose state the processor currently holds."""
        return 0 if self._table is None else self._table.live_count

    # ------------------------------------------------------------------ the three phases

    def _record_actions(self, table: AgentTable, worker_id: int, info: ActionInfo) -> None:
        last_ids, last_slots = self._last_decision.pop(worker_id, (None, None))
        slots: np.ndarray
        if (
            last_ids is not None
            and last_slots is not None
            and (last_ids is info.agent_ids or np.array_equal(last_ids, info.agent_ids))
        ):
            slots = last_slots
        elif len(info) <= _SMALL_BATCH:
            slots = np.array(table.find_few(worker_id, info.agent_ids.tolist()), np.int64)
        else:
            slots = table.find(agent_keys(worker_id, info.agent_ids))
        steps, agent = table.steps, table.agent
        kinds = []
        if self._continuous_size:
            kinds.append((steps.continuous, agent.last_continuous, info.continuous_actions, info.continuous_log_probs))
        if self._branches:
            kinds.append((steps.discrete, agent.last_discrete, info.discrete_actions, info.discrete_log_probs))
        if slots.shape[0] <= _SMALL_BATCH:
            count, acted, memory_state = agent.count, agent.acted, agent.memory_state
            for j, slot in enumerate(slots.tolist()):
                if slot < 0:  # no observation waiting for this action
                    continue
                row = count[slot]
                for columns, last, actions, log_probs in kinds:
                    columns.previous[slot, row] = last[slot]
                    columns.actions[slot, row] = actions[j]
                    columns.log_probs[slot, row] = log_probs[j]
                    last[slot] = actions[j]
                if self._memory_size:
                    memory_state[slot] = info.memories[j]
                acted[slot] = True
        else:
            waiting = slots >= 0  # every live agent has an observation waiting for its action
            everyone = _all(waiting)

            def rows_of(values: np.ndarray) -> np.ndarray:
                return values if everyone else values[waiting]

            slots = rows_of(slots)
            rows = agent.count[slots]
            for columns, last, actions, log_probs in kinds:
                actions = rows_of(actions)
                columns.previous[slots, rows] = last[slots]
                columns.actions[slots, rows] = actions
                columns.log_probs[slots, rows] = rows_of(log_probs)
                last[slots] = actions
            if self._memory_size:
                agent.memory_state[slots] = rows_of(info.memories)
            agent.acted[slots] = True
        if info.entropy.shape[0]:
            self._stats_reporter.add_stats(POLICY_ENTROPY, info.entropy)

    def _record_terminals(self, table: AgentTable, worker_id: int, terminal_steps: TerminalSteps) -> None:
        slots = table.find(agent_keys(worker_id, terminal_steps.agent_id))
        rewards, interrupted, obs = terminal_steps.reward, terminal_steps.interrupted, terminal_steps.obs
        group_rewards = terminal_steps.group_reward
        known = slots >= 0
        if not _all(known):  # agents that never decided: nothing to record or free
            slots, rewards, interrupted = slots[known], rewards[known], interrupted[known]
            group_rewards = group_rewards[known]
            obs = [o[known] for o in obs]
            if slots.shape[0] == 0:
                return
        agent, steps = table.agent, table.steps
        acted = agent.acted[slots]
        everyone_acted = _all(acted)
        if not everyone_acted:
            # An agent that collected steps but got no action for its last decision ends
            # without a terminal transition: its trajectory goes out as interrupted.
            counts = agent.count[slots]
            stranded = ~acted & (counts > 0)
            stranded_slots, stranded_counts = slots[stranded], counts[stranded]
            steps.done[stranded_slots, stranded_counts - 1] = True
            steps.interrupted[stranded_slots, stranded_counts - 1] = True
            self._publish(
                table, stranded_slots, stranded_counts, self._pending_obs(table, stranded_slots, stranded_counts)
            )
            rewards, interrupted, group_rewards = rewards[acted], interrupted[acted], group_rewards[acted]
            obs = [o[acted] for o in obs]
        completing = slots if everyone_acted else slots[acted]
        rows = agent.count[completing]
        steps.reward[completing, rows] = rewards
        steps.done[completing, rows] = True
        steps.interrupted[completing, rows] = interrupted
        if self._grouped:
            steps.group_reward[completing, rows] = group_rewards
        agent.episode_reward[completing] += rewards
        agent.episode_transitions[completing] += 1
        self._report_episodes(table, slots, terminal_transition=acted)
        self._publish(table, completing, rows + 1, obs)
        table.release(slots)

    def _record_decisions(self, table: AgentTable, worker_id: int, decision_steps: DecisionSteps) -> None:
        keys = agent_keys(worker_id, decision_steps.agent_id)
        slots = table.find(keys)
        new = slots < 0
        if _any(new):
            slots[new] = table.allocate(keys[new])
        agent, steps = table.agent, table.steps
        acted = agent.acted[slots]
        if _any(acted):
            everyone_acted = _all(acted)
            completing = slots if everyone_acted else slots[acted]
            rewards = decision_steps.reward if everyone_acted else decision_steps.reward[acted]
            rows = agent.count[completing]
            steps.reward[completing, rows] = rewards
            if self._grouped:
                group_rewards = decision_steps.group_reward
                steps.group_reward[completing, rows] = group_rewards if everyone_acted else group_rewards[acted]
            counts = rows + 1
            agent.count[completing] = counts
            agent.episode_reward[completing] += rewards
            agent.episode_transitions[completing] += 1
            longest = int(counts.max())
            if longest >= self._max_trajectory_length:
                full = counts >= self._max_trajectory_length
                full_rows = np.flatnonzero(acted)[full]
                self._publish(table, completing[full], counts[full], [o[full_rows] for o in decision_steps.obs])
                agent.count[completing[full]] = 0
            elif longest == table.time_capacity:
                table.ensure_time(table.time_capacity + 1)
        rows = agent.count[slots]
        for column, obs in zip(table.obs, decision_steps.obs):
            column.write(slots, rows, obs)
        if self._mask_width:
            steps.action_mask[slots, rows] = self._allowed(decision_steps, slots.shape[0])
        if self._memory_size:
            steps.memory[slots, rows] = agent.memory_state[slots]
        if self._grouped:
            steps.group_id[slots, rows] = decision_steps.group_id
        agent.acted[slots] = False
        self._last_decision[worker_id] = (decision_steps.agent_id, slots)

    def _record_few_decisions(self, table: AgentTable, worker_id: int, decision_steps: DecisionSteps) -> None:
        """:meth:`_record_decisions` one agent at a time, for the few agents of a small scene:
        integer indexing costs a fraction of a fancy-indexed operation on tiny batches (the
        1-agent scene of ``benchmarks/processor.py``: 71k agent steps/s, 36k batched)."""
        agent_ids = decision_steps.agent_id.tolist()
        slot_list = table.find_few(worker_id, agent_ids)
        if -1 in slot_list:
            new = np.array([agent_id for agent_id, slot in zip(agent_ids, slot_list) if slot < 0], np.int64)
            fresh = iter(table.allocate(agent_keys(worker_id, new)).tolist())
            slot_list = [next(fresh) if slot < 0 else slot for slot in slot_list]
        agent, steps = table.agent, table.steps  # the agent arrays stay; step arrays may grow
        count, acted, episode_reward, episode_transitions = (
            agent.count,
            agent.acted,
            agent.episode_reward,
            agent.episode_transitions,
        )
        rewards = decision_steps.reward.tolist()
        grouped = self._grouped
        if grouped:
            group_rewards = decision_steps.group_reward.tolist()
            group_ids = decision_steps.group_id.tolist()
        allowed = self._allowed(decision_steps, len(slot_list)) if self._mask_width else None
        horizon = self._max_trajectory_length
        for j, slot in enumerate(slot_list):
            row = int(count[slot])
            if acted[slot]:
                steps.reward[slot, row] = rewards[j]
                if grouped:
                    steps.group_reward[slot, row] = group_rewards[j]
                row += 1
                count[slot] = row
                episode_reward[slot] += rewards[j]
                episode_transitions[slot] += 1
                if row >= horizon:
                    self._publish(
                        table, np.array([slot]), np.array([row]), [o[j : j + 1].copy() for o in decision_steps.obs]
                    )
                    row = 0
                    count[slot] = 0
                elif row == table.time_capacity:
                    table.ensure_time(row + 1)
                acted[slot] = False
            for column, obs in zip(table.obs, decision_steps.obs):
                column.write_one(slot, row, obs[j])
            if allowed is not None:
                steps.action_mask[slot, row] = allowed[j]
            if self._memory_size:
                steps.memory[slot, row] = agent.memory_state[slot]
            if grouped:
                steps.group_id[slot, row] = group_ids[j]
        self._last_decision[worker_id] = (decision_steps.agent_id, np.array(slot_list, np.int64))

    # ------------------------------------------------------------------ helpers

    def _allowed(self, decision_steps: DecisionSteps, n: int) -> np.ndarray:
        """[N, m] True where an action is allowed (all of them when Unity sends no mask)."""
        allowed = allowed_actions(decision_steps, self._mask_width)
        return np.ones((n, self._mask_width), bool) if allowed is None else allowed

    def _pending_obs(self, table: AgentTable, slots: np.ndarray, rows: np.ndarray) -> list[np.ndarray]:
        """The stored observation that followed each agent's last transition.

        Every live agent's row ``count`` holds the observation of its latest decision.
        """
        return [column.read(slots, rows) for column in table.obs]

    def _report_episodes(self, table: AgentTable, slots: np.ndarray, terminal_transition: np.ndarray) -> None:
        """Episode reward and length for agents whose episode ends now (if they acted in it).

        Episode length counts the episode's transitions but the terminal one, as ML-Agents.
        Rewards are kept as a histogram (TensorBoard ``Environment/Cumulative Reward_hist``
        beside the mean), as ML-Agents' trainers report them.
        """
        transitions = table.agent.episode_transitions[slots]
        played = transitions > 0
        if not _any(played):
            return
        rewards = table.agent.episode_reward[slots][played]
        lengths = transitions[played] - terminal_transition[played]
        self._stats_reporter.add_stats(CUMULATIVE_REWARD, rewards, StatsAggregationMethod.HISTOGRAM)
        for listener in self.episode_reward_listeners:
            listener(rewards)
        self._stats_reporter.add_stats(EPISODE_LENGTH, lengths.astype(np.float64))

    def _publish(self, table: AgentTable, slots: np.ndarray, counts: np.ndarray, next_obs: list[np.ndarray]) -> None:
        """Wrap rows [0, count) of each slot as a Trajectory and put it on every queue."""
        if slots.shape[0] == 0:
            return
        count_list = counts.tolist()
        length = max(count_list)
        steps = table.steps
        obs = [column.take(slots, count_list, length) for column in table.obs]
        reward, done, interrupted, mask, memory = (
            take_rows(a, slots, length)
            for a in (steps.reward, steps.done, steps.interrupted, steps.action_mask, steps.memory)
        )
        cont, disc = steps.continuous, steps.discrete
        cont_actions, cont_log_probs, cont_previous = (
            take_rows(a, slots, length) for a in (cont.actions, cont.log_probs, cont.previous)
        )
        disc_actions, disc_log_probs, disc_previous = (
            take_rows(a, slots, length) for a in (disc.actions, disc.log_probs, disc.previous)
        )
        if self._grouped:
            ids, rewards = take_rows(steps.group_id, slots, length), take_rows(steps.group_reward, slots, length)
            group_ids = [ids[k, :count] for k, count in enumerate(count_list)]
            group_rewards = [rewards[k, :count] for k, count in enumerate(count_list)]
        else:  # read-only zeros, shared
            ids, rewards = self._no_group(length)
            group_ids = [ids[:count] for count in count_list]
            group_rewards = [rewards[:count] for count in count_list]
        mates = self._group_table().take(table, slots, count_list) if self._grouped else [None] * len(count_list)
        keys = table.slot_key[slots].tolist()
        starts = (~table.agent.published[slots]).tolist()
        table.agent.published[slots] = True
        trajectories = [
            Trajectory(
                behavior_id=self.behavior_id,
                agent_id=get_global_agent_id(*split_key(key)),
                obs=tuple(o[k] for o in obs),
                next_obs=tuple(o[k] for o in next_obs),
                rewards=reward[k, :count],
                done=done[k, :count],
                interrupted=interrupted[k, :count],
                continuous_actions=cont_actions[k, :count],
                discrete_actions=disc_actions[k, :count],
                continuous_log_probs=cont_log_probs[k, :count],
                discrete_log_probs=disc_log_probs[k, :count],
                action_masks=mask[k, :count],
                prev_continuous_actions=cont_previous[k, :count],
                prev_discrete_actions=disc_previous[k, :count],
                memories=memory[k, :count],
                group_id=group_ids[k],
                group_rewards=group_rewards[k],
                episode_start=starts[k],
                groupmates=mates[k],
            )
            for k, (count, key) in enumerate(zip(count_list, keys))
        ]
        for trajectory_queue in self._trajectory_queues:
            trajectory_queue.put_many(trajectories)

    def _group_table(self) -> GroupTable:
        if self._groups is None:
            table = self._table
            assert table is not None
            self._groups = GroupTable(
                [(tuple(spec.shape), column.dtype) for spec, column in zip(self._observation_specs, table.obs)],
                self._continuous_size,
                len(self._branches),
            )
        return self._groups

    def _no_group(self, length: int) -> tuple[np.ndarray, np.ndarray]:
        """Read-only zeros, at least ``length`` long, for the group ids and group rewards of
        trajectories while no agent of this behavior has been in a group."""
        if self._zero_groups[0].shape[0] < length:
            ids, rewards = np.zeros(length, np.int32), np.zeros(length, np.float32)
            ids.flags.writeable = rewards.flags.writeable = False
            self._zero_groups = (ids, rewards)
        ids, rewards = self._zero_groups
        return ids, rewards

    def _new_table(self, decision_steps: DecisionSteps, terminal_steps: TerminalSteps) -> AgentTable:
        sample = decision_steps if len(decision_steps) > 0 else terminal_steps
        return AgentTable(
            [(tuple(spec.shape), np.dtype(sample.obs[i].dtype)) for i, spec in enumerate(self._observation_specs)],
            continuous_size=self._continuous_size,
            branches=len(self._branches),
            mask_width=self._mask_width,
            memory_size=self._memory_size,
            max_time=self._max_trajectory_length,
            initial_slots=max(16, len(decision_steps) + len(terminal_steps)),
        )


class AgentManager(AgentProcessor):
    """An AgentProcessor with its own queues: trajectories out, policies back in.

    The trajectory queue is bounded (20) when the trainer runs in its own thread, so a
    slow trainer applies back-pressure; unbounded when it runs in the main loop (it would
    otherwise block the only thread that drains it). The policy queue is unbounded.
    """

    def __init__(
        self,
        policy: Any,
        behavior_id: str,
        stats_reporter: StatsReporter,
        max_trajectory_length: int = sys.maxsize,
        threaded: bool = True,
    ):
        super().__init__(policy, behavior_id, stats_reporter, max_trajectory_length)
        self.trajectory_queue: AgentManagerQueue[Trajectory] = AgentManagerQueue(
            behavior_id, maxlen=20 if threaded else 0
        )
        self.policy_queue: AgentManagerQueue[Any] = AgentManagerQueue(behavior_id)
        self.publish_trajectory_queue(self.trajectory_queue)
