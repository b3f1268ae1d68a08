"""Which behavior and slot each PettingZoo agent fills, and how its spaces are mapped.

Behaviors come from agent names: the part before a trailing ``_<n>`` (``piston_3`` -> ``piston``,
``adversary_1`` -> ``adversary``; a name without ``_<n>`` is its own behavior), every character
other than letters, digits, ``_ . -`` replaced by ``_``. Agents of one behavior must share
observation and action spaces, mapped once by ``envs.gymnasium``; each agent is one slot, in
``possible_agents`` order. A turn-based (AEC) game of exactly two agents of one behavior
(connect_four's ``player_0``/``player_1``) is two teams of that behavior, ``player?team=0`` and
``player?team=1``, as ML-Agents' ghost trainer expects for self-play; every other behavior is
team 0.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces
from mlagents_envs.base_env import BehaviorSpec

from envs.builtin._core import behavior_name
from envs.gymnasium.actions import ActionLayout, map_action_space
from envs.gymnasium.errors import GymnasiumEnvError
from envs.gymnasium.making import label as gymnasium_label
from envs.gymnasium.observations import MASK_KEY, ObservationLayout, map_observation_space
from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.making import label
from envs.pettingzoo.specs import Api, PettingZooBehavior, PettingZooSpecs

_NUMBERED = re.compile(r"^(.+)_(\d+)$")
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


def behavior_base(agent: str) -> str:
    """The behavior an agent belongs to, without its team: ``piston_3`` -> ``piston``."""
    match = _NUMBERED.match(agent)
    return _NOT_IN_NAME.sub("_", match.group(1) if match else agent)


@attrs.frozen(eq=False)
class Seat:
    """One agent's place: its behavior (``Name?team=N``), its slot there, and how to read its
    observations and masks and write its actions."""

    target: str
    agent: str
    behavior: str
    slot: int
    observations: ObservationLayout
    actions: ActionLayout

    def read(self, obs: Any) -> list[np.ndarray]:
        """One float32 array per observation spec from one PettingZoo observation."""
        try:
            return self.observations.read(obs)
        except GymnasiumEnvError as error:
            raise _retagged(self.target, self.agent, error) from error

    def mask(self, obs: Any, info: Mapping[str, Any]) -> np.ndarray | None:
        """[sum(branches)] bool, True where NOT available, from the observation's or info's
        ``action_mask`` (the observation's wins); None without one or without discrete branches."""
        if self.actions.spec.discrete_size == 0:
            return None
        value = self.observations.mask(obs)
        if value is None:
            value = info.get(MASK_KEY)
        if value is None:
            return None
        try:
            return self.actions.mask(value)
        except GymnasiumEnvError as error:
            raise _retagged(self.target, self.agent, error) from error


@attrs.frozen(eq=False)
class Roster:
    """Every possible agent's seat (``seats``, in ``possible_agents`` order) and what
    ``check_pettingzoo`` reports (``specs``)."""

    seats: Mapping[str, Seat]
    specs: PettingZooSpecs
    #: Whether the agents are two teams of one behavior (a two-player turn-based game).
    two_teams: bool

    def seat(self, agent: Any) -> Seat:
        """The seat of ``agent``; PettingZooEnvError for an agent not in ``possible_agents``."""
        seat = self.seats.get(agent)
        if seat is None:
            target = self.specs.target
            raise PettingZooEnvError(
                f"{label(target)}: agent {agent!r} is not one of possible_agents {list(self.seats)}; "
                "every agent needs a slot, known before the first reset"
            )
        return seat


def build_roster(target: str, api: Api, env: Any) -> Roster:
    """Seat every agent of ``env.possible_agents`` (module docstring); PettingZooEnvError naming
    the agents whose spaces differ within a behavior or cannot be mapped. Nothing is reset."""
    agents = _possible_agents(target, env)
    members: dict[str, list[str]] = {}
    for agent in agents:
        members.setdefault(behavior_base(agent), []).append(agent)
    two_teams = api is Api.AEC and len(agents) == 2 and len(members) == 1
    seats: dict[str, Seat] = {}
    behaviors = []
    for base, names in members.items():
        observation_space, action_space = _shared_spaces(target, env, base, names)
        observations = _mapped(target, names[0], map_observation_space, observation_space)
        actions = _mapped(target, names[0], map_action_space, action_space)
        spec = BehaviorSpec([leaf.spec for leaf in observations.leaves], actions.spec)
        mask_source = None
        if actions.spec.discrete_size > 0:
            mask_source = f"observation[{MASK_KEY!r}]" if observations.has_mask else f"info[{MASK_KEY!r}] when present"
        teams = [[name] for name in names] if two_teams else [names]
        for team, team_names in enumerate(teams):
            full_name = behavior_name(base, team)
            for slot, name in enumerate(team_names):
                seats[name] = Seat(target, name, full_name, slot, observations, actions)
            behaviors.append(
                PettingZooBehavior(
                    behavior_name=full_name,
                    behavior_spec=spec,
                    agents=tuple(team_names),
                    observations=tuple(leaf.source for leaf in observations.leaves),
                    actions=actions.sources,
                    mask_source=mask_source,
                )
            )
    return Roster(seats, PettingZooSpecs(target=target, api=api, behaviors=tuple(behaviors)), two_teams)


def _possible_agents(target: str, env: Any) -> list[str]:
    try:
        agents = list(env.possible_agents)
    except AttributeError as error:
        raise PettingZooEnvError(
            f"{label(target)}: the environment has no possible_agents; every agent must be known before the first reset"
        ) from error
    if not agents:
        raise PettingZooEnvError(f"{label(target)}: possible_agents is empty")
    odd = [agent for agent in agents if not isinstance(agent, str)]
    if odd:
        raise PettingZooEnvError(f"{label(target)}: agent names must be strings (got {odd!r})")
    if len(set(agents)) != len(agents):
        raise PettingZooEnvError(f"{label(target)}: possible_agents repeats a name: {agents}")
    return agents


def _shared_spaces(target: str, env: Any, base: str, names: list[str]) -> tuple[spaces.Space, spaces.Space]:
    """The observation and action space every agent of behavior ``base`` has."""
    first = names[0]
    observation_space, action_space = env.observation_space(first), env.action_space(first)
    for name in names[1:]:
        for kind, want, got in (
            ("observation", observation_space, env.observation_space(name)),
            ("action", action_space, env.action_space(name)),
        ):
            if got != want:
                raise PettingZooEnvError(
                    f"{label(target)}: agents {first!r} and {name!r} are both behavior {base!r} (named {base}_<n>) "
                    f"but have different {kind} spaces ({want} vs {got}); agents of one behavior share one policy "
                    "and must share spaces"
                )
    return observation_space, action_space


def _mapped(target: str, agent: str, mapper: Any, space: spaces.Space) -> Any:
    try:
        return mapper(target, space)
    except GymnasiumEnvError as error:
        raise _retagged(target, agent, error) from error


def _retagged(target: str, agent: str, error: GymnasiumEnvError) -> PettingZooEnvError:
    """The gymnasium mapping's error, named after the PettingZoo target and agent."""
    detail = str(error).removeprefix(f"{gymnasium_label(target)}: ")
    return PettingZooEnvError(f"{label(target)}: agent {agent!r}: {detail}")
