"""What ``check_pettingzoo`` reports: the behaviors a PettingZoo environment becomes, which
agents fill them, and where each part of their observations and actions comes from. Plain
records, importable without pettingzoo."""

from __future__ import annotations

import enum

import attrs
from mlagents_envs.base_env import BehaviorSpec

from envs.gymnasium.specs import ActionSource, ObservationSource


class Api(enum.Enum):
    """Which PettingZoo API drives the environment."""

    #: ``parallel_env()``: every live agent acts at every step.
    PARALLEL = "parallel"
    #: ``env()`` (agent environment cycle): one agent acts at a time, in turns.
    AEC = "aec"


@attrs.frozen
class PettingZooBehavior:
    """One behavior: ``behavior_name`` as ``Name?team=N``; ``agents`` the PettingZoo agent
    names that fill it, one slot each, in ``possible_agents`` order; ``behavior_spec`` one
    ObservationSpec per entry of ``observations`` and the ActionSpec built from ``actions``
    (as ``envs.gymnasium`` maps the agents' shared spaces); ``mask_source`` where the action
    mask is read (None when the action has no discrete branch)."""

    behavior_name: str
    behavior_spec: BehaviorSpec
    agents: tuple[str, ...]
    observations: tuple[ObservationSource, ...]
    actions: tuple[ActionSource, ...]
    mask_source: str | None


@attrs.frozen
class PettingZooSpecs:
    """A PettingZoo environment as the trainer sees it: the API used and its behaviors, in
    order of their first agent in ``possible_agents``."""

    target: str
    api: Api
    behaviors: tuple[PettingZooBehavior, ...]
