"""Driving a PettingZoo AECEnv: agents take turns, only the agent to move decides.

One ``step()`` applies the deciding agent's action, then advances to the next agent that needs
a decision (``env.agent_selection``). On the way, every agent the environment selects that is
terminated or truncated gets its terminal row (observation ``env.last()``, interrupted =
truncated and not terminated) and the ``step(None)`` PettingZoo requires of it. An agent's
reward is what ``env.last()`` reports on its turn: everything it received since it last acted
(PettingZoo's ``_cumulative_rewards``), so rewards given between its turns arrive with its next
row, and the winner's and loser's final rewards with their terminal rows. When ``env.agents``
is empty the game is over: the environment is reset (unseeded) and play goes on to the first
decision of the next game, in the same step. Agents that vanish from ``env.agents`` without
their dead step end as terminated, with their last observation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envs.builtin._core import MAX_SILENT_TICKS
from envs.pettingzoo.episodes import EpisodeBook, Reports
from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.making import label
from envs.pettingzoo.roster import Roster


class AECDriver:
    """Steps one AECEnv; ``reset`` and ``step`` return the rows to publish."""

    def __init__(
        self, env: Any, roster: Roster, book: EpisodeBook, options: Callable[[], dict[str, float] | None]
    ) -> None:
        self._env = env
        self._roster = roster
        self._book = book
        self._options = options
        self._playing: list[str] = []  # agents of this game that have not ended, in join order
        self._last_obs: dict[str, list[np.ndarray]] = {}
        self._turn: str | None = None

    def reset(self, seed: int | None) -> Reports:
        """Reset the environment (with ``seed`` when given) and play to the first decision."""
        self._book.clear()
        reports = Reports(self._book)
        self._restart(seed)
        self._to_next_decision(reports)
        return reports

    def step(self, actions: Mapping[str, Any]) -> Reports:
        """Apply the action of the agent whose turn it is (``actions`` maps it to its action)."""
        reports = Reports(self._book)
        agent = self._turn
        if agent is None or agent not in actions:
            raise PettingZooEnvError(f"{label(self._target)}: no action for {agent!r}, whose turn it is")
        self._turn = None
        self._env.step(actions[agent])
        self._to_next_decision(reports)
        return reports

    @property
    def _target(self) -> str:
        return self._roster.specs.target

    def _restart(self, seed: int | None) -> None:
        self._env.reset(seed=seed, options=self._options())
        self._playing = []
        self._join_newcomers()
        if not self._playing:
            raise PettingZooEnvError(f"{label(self._target)}: reset() left no agent in env.agents")

    def _join_newcomers(self) -> None:
        for agent in self._env.agents:
            if agent not in self._playing:
                self._roster.seat(agent)  # an unknown agent fails here, by name
                self._book.join(agent)
                self._playing.append(agent)

    def _to_next_decision(self, reports: Reports) -> None:
        """Advance until an agent needs a decision; report everything on the way."""
        restarted = False
        for _ in range(MAX_SILENT_TICKS):
            present = set(self._env.agents)
            for agent in [a for a in self._playing if a not in present]:
                self._playing.remove(agent)
                reports.end(agent, self._last_obs.get(agent, []), interrupted=False)
            if not present:
                reports.seal()
                if restarted:
                    raise PettingZooEnvError(
                        f"{label(self._target)}: a game ended right after reset, before any agent could act"
                    )
                self._restart(None)
                restarted = True
                continue
            self._join_newcomers()
            agent = self._env.agent_selection
            seat = self._roster.seat(agent)
            obs, reward, terminated, truncated, info = self._env.last()
            self._book.credit(agent, float(reward))
            if terminated or truncated:
                reports.end(agent, seat.read(obs), interrupted=bool(truncated and not terminated))
                if agent in self._playing:
                    self._playing.remove(agent)
                self._env.step(None)
                continue
            rows = seat.read(obs)
            self._last_obs[agent] = rows
            reports.seal()
            reports.decide(agent, rows, seat.mask(obs, info or {}))
            self._turn = agent
            return
        raise PettingZooEnvError(
            f"{label(self._target)}: no agent needed a decision within {MAX_SILENT_TICKS} turns of dead agents"
        )
