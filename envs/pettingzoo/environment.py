"""One PettingZoo environment as a BuiltinEnv: its agents in slots of their behaviors.

BuiltinEnv gives agent ids, DecisionSteps and TerminalSteps, action validation, groups and
environment parameters; a driver (``ParallelDriver`` or ``AECDriver``) steps the PettingZoo
environment and says which rows to publish.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from envs.builtin._core import BehaviorAgents, BuiltinEnv, ParameterInput, stacked_observations
from envs.pettingzoo.aec import AECDriver
from envs.pettingzoo.episodes import DecisionRow, EpisodeBook, Reports, TerminalRow
from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.making import label, make_env
from envs.pettingzoo.parallel import ParallelDriver
from envs.pettingzoo.roster import build_roster
from envs.pettingzoo.specs import Api, PettingZooSpecs

#: The group id every agent has with ``groups=True`` (0 means no group in mlagents_envs).
GROUP_ID = 1


def first_seed(seed: int, worker_id: int) -> int:
    """The seed of the first reset (< 2**32), from SeedSequence([seed, worker_id])."""
    return int(np.random.SeedSequence([seed, worker_id]).generate_state(1)[0])


class PettingZooEnv(BuiltinEnv):
    """``target``'s environment, reset and ready for ``get_steps`` (``envs.pettingzoo`` states
    the rules).

    The first reset is seeded with ``first_seed(seed, worker_id)``; later ones (episode ends,
    ``reset()``) pass no seed, so the environment continues its generator. Environment
    parameters reach every reset once set as ``options={key: float}`` (a sampler drawn anew
    each time); without any, resets get ``options=None``.
    """

    def __init__(
        self,
        target: str,
        *,
        seed: int,
        worker_id: int = 0,
        env_kwargs: Mapping[str, Any] | None = None,
        env_parameters: Mapping[str, ParameterInput] | None = None,
        groups: bool = False,
    ) -> None:
        self.env_name = label(target)
        for what, value in (("seed", seed), ("worker_id", worker_id)):
            if value < 0:
                raise PettingZooEnvError(f"{self.env_name}: {what} must be >= 0 (got {value})")
        self.target = target
        self.groups = groups
        self._first_seed: int | None = first_seed(seed, worker_id)
        made = make_env(target, env_kwargs)
        self._env = made.env
        self._env_closed = False
        try:
            self._roster = build_roster(target, made.api, made.env)
            if groups and self._roster.two_teams:
                raise PettingZooEnvError(
                    f"{self.env_name}: groups=True makes every agent one cooperative group sharing the mean reward, "
                    "but this game's two players are opponents (teams 0 and 1); train it with self-play instead"
                )
            self._book = EpisodeBook(groups=groups)
            driver_type = ParallelDriver if made.api is Api.PARALLEL else AECDriver
            self._driver = driver_type(made.env, self._roster, self._book, self._reset_options)
            self._deciding: list[str] = []
            super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters)
        except BaseException:
            self._close_env()
            raise

    @property
    def env(self) -> Any:
        """The PettingZoo environment (to inspect; stepping it directly desynchronises us)."""
        return self._env

    @property
    def specs(self) -> PettingZooSpecs:
        """The behaviors and their specs, as ``check_pettingzoo`` reports them."""
        return self._roster.specs

    def close(self) -> None:
        """Close the PettingZoo environment; later ``step``/``reset`` calls raise. Safe to call twice."""
        super().close()
        self._close_env()

    # ---- BuiltinEnv hooks ------------------------------------------------------------------

    def _setup(self) -> None:
        self._slots_of: dict[str, BehaviorAgents] = {}
        for behavior in self._roster.specs.behaviors:
            base, _, team = behavior.behavior_name.partition("?team=")  # Name?team=N, as Unity sends it
            agents = self._add_behavior(base, behavior.behavior_spec, len(behavior.agents), team=int(team))
            if self.groups:
                agents.set_group(np.arange(agents.n_slots), GROUP_ID)
            self._slots_of[agents.name] = agents

    def _reset_world(self) -> None:
        seed, self._first_seed = self._first_seed, None
        self._publish(self._driver.reset(seed))

    def _advance(self) -> None:
        actions = {}
        for agent in self._deciding:
            seat = self._roster.seat(agent)
            agents = self._slots_of[seat.behavior]
            actions[agent] = seat.actions.to_env(agents.continuous[seat.slot], agents.discrete[seat.slot])
        self._publish(self._driver.step(actions))

    # ---- internals -------------------------------------------------------------------------

    def _reset_options(self) -> dict[str, float] | None:
        """The environment parameters as reset options (each sampler drawn once), None without any."""
        return {key: self._param(key, 0.0) for key in self._params} or None

    def _publish(self, reports: Reports) -> None:
        """Publish ``reports`` behavior by behavior: terminal rows (old ids), then new episodes'
        ids, then decision rows."""
        for name, agents in self._slots_of.items():
            terminals = [row for row in reports.terminals if self._roster.seat(row.agent).behavior == name]
            decisions = [row for row in reports.decisions if self._roster.seat(row.agent).behavior == name]
            if terminals:
                self._publish_terminals(agents, terminals)
            if decisions:
                self._publish_decisions(agents, decisions)
        self._deciding = [row.agent for row in reports.decisions]

    def _publish_terminals(self, agents: BehaviorAgents, rows: list[TerminalRow]) -> None:
        slots = self._slots(rows)
        agents.reward[slots] = [row.reward for row in rows]
        agents.group_reward[slots] = [row.group_reward for row in rows]
        agents.end(
            slots,
            stacked_observations([row.obs for row in rows]),
            np.array([row.interrupted for row in rows], dtype=bool),
        )
        agents.remove(slots)

    def _publish_decisions(self, agents: BehaviorAgents, rows: list[DecisionRow]) -> None:
        slots = self._slots(rows)
        agents.start(slots[[row.first for row in rows]])
        agents.reward[slots] = [row.reward for row in rows]
        agents.group_reward[slots] = [row.group_reward for row in rows]
        masks = None
        if any(row.mask is not None for row in rows):
            width = int(sum(agents.spec.action_spec.discrete_branches))
            masks = np.stack([np.zeros(width, bool) if row.mask is None else row.mask for row in rows])
        agents.decide(slots, stacked_observations([row.obs for row in rows]), masks)

    def _slots(self, rows: list[TerminalRow] | list[DecisionRow]) -> np.ndarray:
        return np.array([self._roster.seat(row.agent).slot for row in rows], dtype=np.intp)

    def _close_env(self) -> None:
        if self._env_closed:
            return
        self._env_closed = True
        self._env.close()
