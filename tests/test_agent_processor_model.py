"""Random interleavings through the processor, checked against a per-agent reference model.

The reference keeps one plain Python record per agent and applies the rules one agent at a
time, the obviously-correct way; the processor does the same work on whole batches. Every
trajectory and every episode statistic must agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from processors import AgentManager
from stats import StatsReporter
from tests.steps import action_info, behavior_spec, decision_steps, drain, fake_policy, terminal_steps

BRANCH = 3


@dataclass
class RefStep:
    obs: float
    mask: tuple[bool, ...]
    action: tuple[float, int]
    prev: tuple[float, int]
    reward: float
    group: int
    group_reward: float
    done: bool = False
    interrupted: bool = False


@dataclass
class RefAgent:
    obs: float
    mask: tuple[bool, ...]
    group: int
    action: tuple[float, int] | None = None
    prev: tuple[float, int] = (0.0, 0)
    last: tuple[float, int] = (0.0, 0)
    steps: list[RefStep] = field(default_factory=list)
    episode_reward: float = 0.0
    transitions: int = 0


class Reference:
    """The processor's rules, applied one agent at a time."""

    def __init__(self, horizon: int):
        self.horizon = horizon
        self.agents: dict[tuple[int, int], RefAgent] = {}
        self.trajectories: dict[str, list[tuple]] = {}
        self.episodes: list[tuple[float, int]] = []

    def _emit(self, key: tuple[int, int], steps: list[RefStep], next_obs: float) -> None:
        agent_id = f"agent_{key[0]}-{key[1]}"
        self.trajectories.setdefault(agent_id, []).append((tuple(steps), next_obs))

    def act(self, worker: int, ids: list[int], actions: list[tuple[float, int]]) -> None:
        for agent_id, action in zip(ids, actions):
            agent = self.agents.get((worker, agent_id))
            if agent is not None:
                agent.action, agent.prev, agent.last = action, agent.last, action

    def terminal(
        self, worker: int, agent_id: int, obs: float, reward: float, interrupted: bool, group_reward: float
    ) -> None:
        agent = self.agents.pop((worker, agent_id), None)
        if agent is None:
            return
        if agent.action is not None:
            agent.steps.append(
                RefStep(
                    agent.obs,
                    agent.mask,
                    agent.action,
                    agent.prev,
                    reward,
                    agent.group,
                    group_reward,
                    True,
                    interrupted,
                )
            )
            agent.episode_reward += reward
            self._emit((worker, agent_id), agent.steps, obs)
            self.episodes.append((agent.episode_reward, agent.transitions))
            return
        self._close_interrupted((worker, agent_id), agent)

    def _close_interrupted(self, key: tuple[int, int], agent: RefAgent) -> None:
        if agent.steps:
            last = agent.steps[-1]
            agent.steps[-1] = RefStep(
                last.obs, last.mask, last.action, last.prev, last.reward, last.group, last.group_reward, True, True
            )
            self._emit(key, agent.steps, agent.obs)
        if agent.transitions:
            self.episodes.append((agent.episode_reward, agent.transitions))

    def decision(
        self,
        worker: int,
        agent_id: int,
        obs: float,
        reward: float,
        mask: tuple[bool, ...],
        group: int,
        group_reward: float,
    ) -> None:
        agent = self.agents.get((worker, agent_id))
        if agent is None:
            self.agents[(worker, agent_id)] = RefAgent(obs, mask, group)
            return
        if agent.action is not None:
            agent.steps.append(
                RefStep(agent.obs, agent.mask, agent.action, agent.prev, reward, agent.group, group_reward)
            )
            agent.episode_reward += reward
            agent.transitions += 1
            if len(agent.steps) == self.horizon:
                self._emit((worker, agent_id), agent.steps, obs)
                agent.steps = []
        agent.obs, agent.mask, agent.action, agent.group = obs, mask, None, group

    def end_episode(self) -> None:
        for key, agent in self.agents.items():
            self._close_interrupted(key, agent)
        self.agents.clear()


def trajectory_record(trajectory) -> tuple:
    steps = tuple(
        RefStep(
            obs=float(trajectory.obs[0][t, 0]),
            mask=tuple(bool(x) for x in trajectory.action_masks[t]),
            action=(float(trajectory.continuous_actions[t, 0]), int(trajectory.discrete_actions[t, 0])),
            prev=(float(trajectory.prev_continuous_actions[t, 0]), int(trajectory.prev_discrete_actions[t, 0])),
            reward=float(trajectory.rewards[t]),
            group=int(trajectory.group_id[t]),
            group_reward=float(trajectory.group_rewards[t]),
            done=bool(trajectory.done[t]),
            interrupted=bool(trajectory.interrupted[t]),
        )
        for t in range(len(trajectory))
    )
    return steps, float(trajectory.next_obs[0][0])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_interleavings_match_reference(data):
    horizon = data.draw(st.integers(1, 4), label="horizon")
    workers = data.draw(st.integers(1, 2), label="workers")
    # 2 floats are packed in the table; 1100 (4400 bytes) go to per-agent buffers as images do.
    width = data.draw(st.sampled_from([2, 1100]), label="obs width")
    grouped = data.draw(st.booleans(), label="groups")
    spec = behavior_spec(obs_shapes=((width,),), continuous=1, branches=(BRANCH,))
    reporter = StatsReporter("B")
    manager = AgentManager(fake_policy(spec), "B?team=0", reporter, horizon, threaded=False)
    reference = Reference(horizon)
    live: list[list[int]] = [[] for _ in range(workers)]
    deciding: list[list[int]] = [[] for _ in range(workers)]
    next_id = [0] * workers
    counter = 0
    collected: dict[str, list[tuple]] = {}

    def collect() -> None:
        for trajectory in drain(manager.trajectory_queue):
            collected.setdefault(trajectory.agent_id, []).append(trajectory_record(trajectory))

    for _ in range(data.draw(st.integers(1, 30), label="steps")):
        if data.draw(st.integers(0, 19), label="reset") == 0:
            manager.end_episode()
            reference.end_episode()
            deciding = [[] for _ in range(workers)]
            continue
        w = data.draw(st.integers(0, workers - 1), label="worker")
        # Actions for (most of) the agents that decided at this worker's previous step.
        acted = [a for a in deciding[w] if data.draw(st.integers(0, 9), label="acted") > 0]
        actions = []
        for _agent in acted:
            counter += 1
            actions.append((counter + 0.5, counter % BRANCH))
        info = action_info(acted, [[a] for a, _ in actions], [[d] for _, d in actions]) if acted else None
        terminal_rows, decision_rows = [], []
        survivors = []
        for agent in live[w]:
            fate = data.draw(st.sampled_from(["decide", "decide", "absent", "end", "interrupt", "end_and_return"]))
            counter += 1
            if fate in ("end", "interrupt", "end_and_return"):
                group_reward = float(counter % 3) if grouped else 0.0
                terminal_rows.append((agent, float(counter), float(counter % 7 - 3), fate == "interrupt", group_reward))
                if fate == "end_and_return":  # Unity resets the agent at once, under the same id
                    decision_rows.append(agent)
                    survivors.append(agent)
            else:
                survivors.append(agent)
                if fate == "decide":
                    decision_rows.append(agent)
        for _ in range(data.draw(st.integers(0, 3), label="spawned")):
            survivors.append(next_id[w])
            decision_rows.append(next_id[w])
            next_id[w] += 1
        live[w] = survivors
        decisions = []
        for agent in decision_rows:
            counter += 1
            mask = tuple(data.draw(st.lists(st.booleans(), min_size=BRANCH, max_size=BRANCH), label="mask"))
            group = data.draw(st.integers(0, 2), label="group") if grouped else 0
            group_reward = float(counter % 4) / 2 if grouped else 0.0
            decisions.append((agent, float(counter), float(counter % 5 - 2), mask, group, group_reward))

        ds = decision_steps(
            [d[0] for d in decisions],
            [np.repeat(np.array([d[1] for d in decisions], np.float32).reshape(-1, 1), width, axis=1)],
            [d[2] for d in decisions],
            masks=[np.array([d[3] for d in decisions], bool).reshape(-1, BRANCH)],
            group_ids=[d[4] for d in decisions],
            group_rewards=[d[5] for d in decisions],
        )
        ts = terminal_steps(
            [t[0] for t in terminal_rows],
            [np.repeat(np.array([t[1] for t in terminal_rows], np.float32).reshape(-1, 1), width, axis=1)],
            [t[2] for t in terminal_rows],
            [t[3] for t in terminal_rows],
            group_ids=[0] * len(terminal_rows),
            group_rewards=[t[4] for t in terminal_rows],
        )
        manager.add_experiences(ds, ts, w, info)
        collect()

        reference.act(w, acted, actions)
        for agent, obs, reward, interrupted, group_reward in terminal_rows:
            reference.terminal(w, agent, obs, reward, interrupted, group_reward)
        for agent, obs, reward, mask, group, group_reward in decisions:
            # The processor stores masks as "allowed"; Unity sends "not allowed".
            reference.decision(w, agent, obs, reward, tuple(not m for m in mask), group, group_reward)
        deciding[w] = [d[0] for d in decisions]

    manager.end_episode()
    reference.end_episode()
    collect()
    assert collected == reference.trajectories
    rewards = reporter.get_stats_summaries("Environment/Cumulative Reward")
    lengths = reporter.get_stats_summaries("Environment/Episode Length")
    assert rewards.count == len(reference.episodes) == lengths.count
    if reference.episodes:
        assert rewards.sum == sum(r for r, _ in reference.episodes)
        assert lengths.sum == sum(n for _, n in reference.episodes)
        assert rewards.min == min(r for r, _ in reference.episodes)
    assert manager.live_agents == 0
