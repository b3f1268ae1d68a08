"""What ``check_gymnasium`` reports: the behavior an environment becomes and where each part of
its observations and actions comes from. Plain records, importable without gymnasium."""

from __future__ import annotations

import attrs
from mlagents_envs.base_env import BehaviorSpec


@attrs.frozen
class ObservationSource:
    """One observation of the behavior: ``path`` is the part of the observation space it comes
    from (``obs`` for a whole non-composite space, else Dict keys and Tuple indices joined by
    ``/``: ``position``, ``0``, ``sensors/1``), ``space`` that part's repr, ``mapping`` how it
    is turned into float32 (``vector``, ``flattened vector``, ``image /255``, ``one-hot``...)."""

    path: str
    space: str
    mapping: str


@attrs.frozen
class ActionSource:
    """One part of the action space (``path`` as for observations, ``action`` for a whole
    non-composite space) and where the policy's action rows feed it (``mapping``, e.g.
    ``continuous[0:2] onto [low, high]`` or ``discrete branches 0..2``)."""

    path: str
    space: str
    mapping: str


@attrs.frozen
class GymnasiumSpecs:
    """A Gymnasium environment as the trainer sees it.

    behavior_name: ``Name?team=0``; behavior_spec: one ObservationSpec per entry of
    ``observations`` (same order), the ActionSpec built from ``actions`` (continuous parts
    first to last, then discrete branches first to last); mask_source: where the action mask
    is read (``None`` when the action has no discrete branch)."""

    env_id: str
    behavior_name: str
    behavior_spec: BehaviorSpec
    observations: tuple[ObservationSource, ...]
    actions: tuple[ActionSource, ...]
    mask_source: str | None
