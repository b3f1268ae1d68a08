"""Each agent's running episode (rewards not yet reported) and the rows one step reports.

The drivers (parallel, AEC) say what happens to agents in PettingZoo's terms; these two classes
turn it into ML-Agents rows with the right rewards, whatever order the environment does it in.

Rewards: an agent's row carries everything it received since its previous row. With
``groups``, every agent is in one group and its own rows carry 0: each reward ``r`` an agent
receives is shared out as group reward, ``r / n`` to each of the ``n`` agents of the episode
that have not ended before this step (an agent ending in this step still takes its share), so
per step the group reward is the mean of the agents' rewards.

An agent starts its ML-Agents episode (and takes a fresh id) with its first decision row. An
agent whose PettingZoo episode ends before it ever decided (the game was over before its first
turn) reports nothing at all, as a Unity agent that never requested a decision sends nothing.
"""

from __future__ import annotations

import attrs
import numpy as np


@attrs.frozen(eq=False)
class DecisionRow:
    """An agent asks for a decision. ``first``: the first row of its episode (it takes a new id)."""

    agent: str
    obs: list[np.ndarray]
    mask: np.ndarray | None
    reward: float
    group_reward: float
    first: bool


@attrs.frozen(eq=False)
class TerminalRow:
    """An agent's episode ends; ``interrupted``: truncated (bootstrap), not terminated."""

    agent: str
    obs: list[np.ndarray]
    interrupted: bool
    reward: float
    group_reward: float


class EpisodeBook:
    """Per agent of the current episode: reward and group reward received and not yet reported,
    and whether it has reported yet (module docstring for the reward rules)."""

    def __init__(self, *, groups: bool) -> None:
        self.groups = groups
        self._reward: dict[str, float] = {}
        self._group_reward: dict[str, float] = {}
        self._reported: dict[str, bool] = {}

    def clear(self) -> None:
        """Forget every agent (a full reset)."""
        self._reward.clear()
        self._group_reward.clear()
        self._reported.clear()

    def join(self, agent: str) -> None:
        """``agent`` starts an episode: nothing received, not reported yet."""
        self._reward[agent] = 0.0
        self._group_reward[agent] = 0.0
        self._reported[agent] = False

    def credit(self, agent: str, reward: float) -> None:
        """``agent`` received ``reward``: its own, or shared out as group reward."""
        if reward == 0.0:
            return
        if not self.groups:
            self._reward[agent] = self._reward.get(agent, 0.0) + reward
            return
        share = reward / len(self._group_reward) if self._group_reward else 0.0
        for member in self._group_reward:
            self._group_reward[member] += share

    def report(self, agent: str) -> tuple[float, float, bool]:
        """What ``agent``'s decision row carries: (reward, group reward, first row of its episode);
        both amounts start again from 0."""
        first = not self._reported.get(agent, False)
        self._reported[agent] = True
        reward, group_reward = self._reward.get(agent, 0.0), self._group_reward.get(agent, 0.0)
        self._reward[agent] = 0.0
        self._group_reward[agent] = 0.0
        return reward, group_reward, first

    def leave(self, agent: str) -> tuple[float, float] | None:
        """``agent``'s episode is over: what its terminal row carries (reward, group reward), or
        None when it never reported in this episode (so it reports nothing). It gets no further
        shares."""
        reward = self._reward.pop(agent, 0.0)
        group_reward = self._group_reward.pop(agent, 0.0)
        reported = self._reported.pop(agent, False)
        return (reward, group_reward) if reported else None


class Reports:
    """The rows one ``step()`` reports, in the order they happen.

    Call ``end`` as agents' episodes end, ``seal`` before the environment is reset and at the
    end of the step (it fixes the pending terminal rows' rewards, so an agent ending in this
    step still takes its share of rewards given in the same step), ``decide`` last for each
    agent asking for a decision.
    """

    def __init__(self, book: EpisodeBook) -> None:
        self._book = book
        self._ending: list[tuple[str, list[np.ndarray], bool]] = []
        self.terminals: list[TerminalRow] = []
        self.decisions: list[DecisionRow] = []

    def end(self, agent: str, obs: list[np.ndarray], *, interrupted: bool) -> None:
        """``agent``'s episode ends with observation ``obs`` (its row is written at ``seal``)."""
        self._ending.append((agent, obs, interrupted))

    def seal(self) -> None:
        """Write the pending terminal rows (rewards as of now); those agents leave the episode."""
        for agent, obs, interrupted in self._ending:
            amounts = self._book.leave(agent)
            if amounts is not None:
                self.terminals.append(TerminalRow(agent, obs, interrupted, *amounts))
        self._ending.clear()

    def decide(self, agent: str, obs: list[np.ndarray], mask: np.ndarray | None) -> None:
        """``agent`` asks for a decision, with what it received since its previous row."""
        reward, group_reward, first = self._book.report(agent)
        self.decisions.append(DecisionRow(agent, obs, mask, reward, group_reward, first))
