"""Steps in, trajectories out: one AgentProcessor per behavior.

The processor pairs each agent's observation and action at a decision with the reward and
done flag of the agent's next appearance, stores the transition in that agent's trajectory
under construction, and publishes the trajectory when it reaches the time horizon or the
episode ends. All per-agent state (the trajectory being built, previous action, recurrent
memory, episode reward and length) is held here, keyed by global agent id, so the policy
stays a pure function.

Work is done on the whole batch of agents of a step at once (see ``agent_table``); Python
touches individual agents only to wrap each finished trajectory.
"""

from __future__ import annotations

import sys
from typing import Any, Mapping, Sequence

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps

from processors.agent_table import AgentTable, agent_keys, split_key
from processors.behavior_id import get_global_agent_id
from processors.queue import AgentManagerQueue
from processors.trajectory import ActionInfo, Trajectory
from stats import StatsAggregationMethod, StatsReporter

CUMULATIVE_REWARD = "Environment/Cumulative Reward"
EPISODE_LENGTH = "Environment/Episode Length"
ENTROPY = "Policy/Entropy"

_FLAG_FIELDS = ("done", "interrupted")


def allowed_actions(decision_steps: DecisionSteps, mask_width: int) -> np.ndarray | None:
    """[N, m] True where an action is allowed (Unity's masks say where it is not); None when
    the behavior has no discrete branch or Unity sent no mask."""
    if mask_width == 0 or decision_steps.action_mask is None:
        return None
    return ~np.concatenate(decision_steps.action_mask, axis=1).astype(bool)


def _any(flags: np.ndarray) -> bool:
    """``flags.any()`` without its Python-level dispatch (which costs more than the work
    on the small batches of a typical step)."""
    return np.count_nonzero(flags) > 0


def _all(flags: np.ndarray) -> bool:
    return np.count_nonzero(flags) == flags.size


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
        # Per worker: the agent ids and slots of the latest decision, which the next
        # ActionInfo normally covers, so its lookup can be skipped.
        self._last_decision: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # ------------------------------------------------------------------ public API

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
        ends an episode and starts a new one.
        """
        if self._table is None and len(decision_steps) == 0 and len(terminal_steps) == 0:
            return  # nobody has been seen yet, so no action can be pending either
        table = self._table_for(decision_steps, terminal_steps)
        if previous_action is not None and len(previous_action) > 0:
            self._record_actions(table, worker_id, previous_action)
        if len(terminal_steps) > 0:
            self._record_terminals(table, worker_id, terminal_steps)
        if len(decision_steps) > 0:
            self._record_decisions(table, worker_id, decision_steps)

    def end_episode(self) -> None:
        """A forced reset: publish what every agent collected, then forget every agent.

        Unfinished trajectories go out ending in an interrupted step (the trainer
        bootstraps them) and their episodes are reported, instead of being thrown away.
        """
        table = self._table
        if table is None or table.live_count == 0:
            return
        slots = table.live_slots()
        counts = table.agent["count"][slots]
        has_steps = counts > 0
        emit, rows = slots[has_steps], counts[has_steps]
        table.steps["done"][emit, rows - 1] = True
        table.steps["interrupted"][emit, rows - 1] = True
        self._report_episodes(table, slots, terminal_transition=np.zeros(slots.shape[0], bool))
        self._publish(table, emit, rows, self._pending_obs(table, emit, rows))
        table.release(slots, _FLAG_FIELDS)
        self._last_decision.clear()

    def discard_worker(self, worker_id: int) -> None:
        """Forget the agents of a worker whose environment was restarted, publishing nothing.

        A fresh environment process numbers its agents from 0 again; none of them must
        meet the old process's per-agent state.
        """
        table = self._table
        if table is None or table.live_count == 0:
            return
        slots = table.live_slots()
        workers = table.slot_key[slots] >> 32
        table.release(slots[workers == worker_id], _FLAG_FIELDS)
        self._last_decision.pop(worker_id, None)

    def get_memories(self, worker_id: int, agent_ids: np.ndarray) -> np.ndarray:
        """[N, k] memory to feed the policy with these agents' current observations."""
        out = np.zeros((agent_ids.shape[0], self._memory_size), np.float32)
        if self._table is not None and self._memory_size:
            slots = self._table.find(agent_keys(worker_id, agent_ids))
            known = slots >= 0
            out[known] = self._table.agent["memory_state"][slots[known]]
        return out

    def get_previous_actions(self, worker_id: int, agent_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """([N, c], [N, b]) the agents' previous actions this episode (zeros at its start)."""
        cont = np.zeros((agent_ids.shape[0], self._continuous_size), np.float32)
        disc = np.zeros((agent_ids.shape[0], len(self._branches)), np.int32)
        if self._table is not None:
            slots = self._table.find(agent_keys(worker_id, agent_ids))
            known = slots >= 0
            cont[known] = self._table.agent["last_continuous"][slots[known]]
            disc[known] = self._table.agent["last_discrete"][slots[known]]
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
        if last_ids is not None and (last_ids is info.agent_ids or np.array_equal(last_ids, info.agent_ids)):
            slots = last_slots
        else:
            slots = table.find(agent_keys(worker_id, info.agent_ids))
        waiting = slots >= 0  # every live agent has an observation waiting for its action
        everyone = _all(waiting)

        def rows_of(values: np.ndarray) -> np.ndarray:
            return values if everyone else values[waiting]

        slots = rows_of(slots)
        rows = table.agent["count"][slots]
        steps, agent = table.steps, table.agent
        for kind, width, actions, log_probs in (
            ("continuous", self._continuous_size, info.continuous_actions, info.continuous_log_probs),
            ("discrete", len(self._branches), info.discrete_actions, info.discrete_log_probs),
        ):
            if width:
                actions = rows_of(actions)
                steps[f"prev_{kind}"][slots, rows] = agent[f"last_{kind}"][slots]
                steps[kind][slots, rows] = actions
                steps[f"{kind}_log_prob"][slots, rows] = rows_of(log_probs)
                agent[f"last_{kind}"][slots] = actions
        if self._memory_size:
            agent["memory_state"][slots] = rows_of(info.memories)
        agent["acted"][slots] = True
        if info.entropy.shape[0]:
            self._stats_reporter.add_stats(ENTROPY, info.entropy)

    def _record_terminals(self, table: AgentTable, worker_id: int, terminal_steps: TerminalSteps) -> None:
        slots = table.find(agent_keys(worker_id, terminal_steps.agent_id))
        rewards, interrupted, obs = terminal_steps.reward, terminal_steps.interrupted, terminal_steps.obs
        known = slots >= 0
        if not _all(known):  # agents that never decided: nothing to record or free
            slots, rewards, interrupted = slots[known], rewards[known], interrupted[known]
            obs = [o[known] for o in obs]
            if slots.shape[0] == 0:
                return
        agent, steps = table.agent, table.steps
        acted = agent["acted"][slots]
        everyone_acted = _all(acted)
        if not everyone_acted:
            # An agent that collected steps but got no action for its last decision ends
            # without a terminal transition: its trajectory goes out as interrupted.
            counts = agent["count"][slots]
            stranded = ~acted & (counts > 0)
            stranded_slots, stranded_counts = slots[stranded], counts[stranded]
            steps["done"][stranded_slots, stranded_counts - 1] = True
            steps["interrupted"][stranded_slots, stranded_counts - 1] = True
            self._publish(
                table, stranded_slots, stranded_counts, self._pending_obs(table, stranded_slots, stranded_counts)
            )
            rewards, interrupted = rewards[acted], interrupted[acted]
            obs = [o[acted] for o in obs]
        completing = slots if everyone_acted else slots[acted]
        rows = agent["count"][completing]
        steps["reward"][completing, rows] = rewards
        steps["done"][completing, rows] = True
        steps["interrupted"][completing, rows] = interrupted
        agent["episode_reward"][completing] += rewards
        agent["episode_transitions"][completing] += 1
        self._report_episodes(table, slots, terminal_transition=acted)
        self._publish(table, completing, rows + 1, obs)
        table.release(slots, _FLAG_FIELDS)

    def _record_decisions(self, table: AgentTable, worker_id: int, decision_steps: DecisionSteps) -> None:
        keys = agent_keys(worker_id, decision_steps.agent_id)
        slots = table.find(keys)
        new = slots < 0
        if _any(new):
            slots[new] = table.allocate(keys[new])
        agent, steps = table.agent, table.steps
        acted = agent["acted"][slots]
        if _any(acted):
            everyone_acted = _all(acted)
            completing = slots if everyone_acted else slots[acted]
            rewards = decision_steps.reward if everyone_acted else decision_steps.reward[acted]
            rows = agent["count"][completing]
            steps["reward"][completing, rows] = rewards
            counts = rows + 1
            agent["count"][completing] = counts
            agent["episode_reward"][completing] += rewards
            agent["episode_transitions"][completing] += 1
            longest = int(counts.max())
            if longest >= self._max_trajectory_length:
                full = counts >= self._max_trajectory_length
                full_rows = np.flatnonzero(acted)[full]
                self._publish(table, completing[full], counts[full], [o[full_rows] for o in decision_steps.obs])
                agent["count"][completing[full]] = 0
            elif longest == table.time_capacity:
                table.ensure_time(table.time_capacity + 1)
        rows = agent["count"][slots]
        for i, obs in enumerate(decision_steps.obs):
            steps[f"obs_{i}"][slots, rows] = obs
        if self._mask_width:
            steps["action_mask"][slots, rows] = self._allowed(decision_steps, slots.shape[0])
        if self._memory_size:
            steps["memory"][slots, rows] = agent["memory_state"][slots]
        agent["acted"][slots] = False
        self._last_decision[worker_id] = (decision_steps.agent_id, slots)

    # ------------------------------------------------------------------ helpers

    def _allowed(self, decision_steps: DecisionSteps, n: int) -> np.ndarray:
        """[N, m] True where an action is allowed (all of them when Unity sends no mask)."""
        allowed = allowed_actions(decision_steps, self._mask_width)
        return np.ones((n, self._mask_width), bool) if allowed is None else allowed

    def _pending_obs(self, table: AgentTable, slots: np.ndarray, rows: np.ndarray) -> list[np.ndarray]:
        """The stored observation that followed each agent's last transition.

        Every live agent's row ``count`` holds the observation of its latest decision.
        """
        return [table.steps[f"obs_{i}"][slots, rows] for i in range(len(self._observation_specs))]

    def _report_episodes(self, table: AgentTable, slots: np.ndarray, terminal_transition: np.ndarray) -> None:
        """Episode reward and length for agents whose episode ends now (if they acted in it).

        Episode length counts the episode's transitions but the terminal one, as ML-Agents.
        """
        transitions = table.agent["episode_transitions"][slots]
        played = transitions > 0
        if not _any(played):
            return
        rewards = table.agent["episode_reward"][slots][played]
        lengths = transitions[played] - terminal_transition[played]
        self._stats_reporter.add_stats(CUMULATIVE_REWARD, rewards)
        self._stats_reporter.add_stats(EPISODE_LENGTH, lengths.astype(np.float64))

    def _publish(self, table: AgentTable, slots: np.ndarray, counts: np.ndarray, next_obs: list[np.ndarray]) -> None:
        """Wrap rows [0, count) of each slot as a Trajectory and put it on every queue."""
        if slots.shape[0] == 0:
            return
        length = int(counts.max())
        gathered = {name: table.gather(name, slots, length) for name in table.steps}
        obs = [gathered[f"obs_{i}"] for i in range(len(self._observation_specs))]
        keys = table.slot_key[slots].tolist()
        trajectories = [
            Trajectory(
                behavior_id=self.behavior_id,
                agent_id=get_global_agent_id(*split_key(key)),
                obs=tuple(o[k, :count] for o in obs),
                next_obs=tuple(o[k] for o in next_obs),
                rewards=gathered["reward"][k, :count],
                done=gathered["done"][k, :count],
                interrupted=gathered["interrupted"][k, :count],
                continuous_actions=gathered["continuous"][k, :count],
                discrete_actions=gathered["discrete"][k, :count],
                continuous_log_probs=gathered["continuous_log_prob"][k, :count],
                discrete_log_probs=gathered["discrete_log_prob"][k, :count],
                action_masks=gathered["action_mask"][k, :count],
                prev_continuous_actions=gathered["prev_continuous"][k, :count],
                prev_discrete_actions=gathered["prev_discrete"][k, :count],
                memories=gathered["memory"][k, :count],
            )
            for k, (count, key) in enumerate(zip(counts.tolist(), keys))
        ]
        for trajectory_queue in self._trajectory_queues:
            trajectory_queue.put_many(trajectories)

    def _table_for(self, decision_steps: DecisionSteps, terminal_steps: TerminalSteps) -> AgentTable:
        if self._table is not None:
            return self._table
        sample = decision_steps if len(decision_steps) > 0 else terminal_steps
        c, b, m, k = self._continuous_size, len(self._branches), self._mask_width, self._memory_size
        step_fields: dict[str, tuple[tuple[int, ...], np.dtype]] = {
            f"obs_{i}": (tuple(spec.shape), np.dtype(sample.obs[i].dtype))
            for i, spec in enumerate(self._observation_specs)
        }
        step_fields.update(
            reward=((), np.dtype(np.float32)),
            done=((), np.dtype(bool)),
            interrupted=((), np.dtype(bool)),
            continuous=((c,), np.dtype(np.float32)),
            discrete=((b,), np.dtype(np.int32)),
            continuous_log_prob=((c,), np.dtype(np.float32)),
            discrete_log_prob=((b,), np.dtype(np.float32)),
            action_mask=((m,), np.dtype(bool)),
            prev_continuous=((c,), np.dtype(np.float32)),
            prev_discrete=((b,), np.dtype(np.int32)),
            memory=((k,), np.dtype(np.float32)),
        )
        agent_fields = {
            "count": ((), np.dtype(np.int64)),
            "acted": ((), np.dtype(bool)),
            "episode_reward": ((), np.dtype(np.float64)),
            "episode_transitions": ((), np.dtype(np.int64)),
            "last_continuous": ((c,), np.dtype(np.float32)),
            "last_discrete": ((b,), np.dtype(np.int32)),
            "memory_state": ((k,), np.dtype(np.float32)),
        }
        initial_slots = max(16, len(decision_steps) + len(terminal_steps))
        self._table = AgentTable(step_fields, agent_fields, self._max_trajectory_length, initial_slots)
        return self._table


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
