"""Driving a PettingZoo ParallelEnv: every live agent decides at every step.

An agent leaves when ``terminations`` or ``truncations`` says so, or when it vanishes from
``env.agents``: its terminal row carries the step's final observation (its last one if the step
gave none) and reward, interrupted = truncated and not terminated (an agent that vanishes
without either flag counts as terminated, as Unity reports a disabled agent). An agent that
appears in ``env.agents`` starts an episode in the same step. When no live agent is left, the
environment is reset at once (unseeded) and every agent starts a new episode in that step.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from envs.pettingzoo.episodes import EpisodeBook, Reports
from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.making import label
from envs.pettingzoo.roster import Roster


class ParallelDriver:
    """Steps one ParallelEnv; ``reset`` and ``step`` return the rows to publish."""

    def __init__(
        self, env: Any, roster: Roster, book: EpisodeBook, options: Callable[[], dict[str, float] | None]
    ) -> None:
        self._env = env
        self._roster = roster
        self._book = book
        self._options = options
        self._acting: list[str] = []
        self._last_obs: dict[str, list[np.ndarray]] = {}

    def reset(self, seed: int | None) -> Reports:
        """Reset the environment (with ``seed`` when given): every agent decides."""
        self._book.clear()
        reports = Reports(self._book)
        self._restart(reports, seed)
        return reports

    def step(self, actions: Mapping[str, Any]) -> Reports:
        """Step with one action per agent that decided last (``actions``, PettingZoo's form)."""
        reports = Reports(self._book)
        acting = self._acting
        obs, rewards, terminations, truncations, infos = self._env.step(dict(actions))
        for agent in acting:
            self._book.credit(agent, float(rewards.get(agent, 0.0)))
        present = set(self._env.agents)
        for agent in acting:
            terminated, truncated = bool(terminations.get(agent, False)), bool(truncations.get(agent, False))
            if terminated or truncated or agent not in present:
                final = self._roster.seat(agent).read(obs[agent]) if agent in obs else self._last_obs[agent]
                reports.end(agent, final, interrupted=truncated and not terminated)
        reports.seal()
        live = [a for a in self._env.agents if not (terminations.get(a, False) or truncations.get(a, False))]
        if not live:
            self._restart(reports, None)
            return reports
        known = set(acting)
        for agent in live:
            if agent not in known:
                self._book.join(agent)
        self._decide(reports, live, obs, infos)
        return reports

    def _restart(self, reports: Reports, seed: int | None) -> None:
        obs, infos = self._env.reset(seed=seed, options=self._options())
        agents = list(self._env.agents)
        if not agents:
            raise PettingZooEnvError(f"{label(self._roster.specs.target)}: reset() left no agent in env.agents")
        for agent in agents:
            self._book.join(agent)
        self._decide(reports, agents, obs, infos)

    def _decide(self, reports: Reports, agents: list[str], obs: Mapping[str, Any], infos: Mapping[str, Any]) -> None:
        for agent in agents:
            seat = self._roster.seat(agent)
            if agent not in obs:
                raise PettingZooEnvError(
                    f"{label(self._roster.specs.target)}: no observation for live agent {agent!r} (got {sorted(obs)})"
                )
            rows = seat.read(obs[agent])
            self._last_obs[agent] = rows
            reports.decide(agent, rows, seat.mask(obs[agent], infos.get(agent) or {}))
        self._acting = list(agents)
