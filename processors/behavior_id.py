"""Names Unity gives behaviors and agents, and the global ids we key per-agent state by.

Unity sends behavior names as ``Name?team=N``; configs and trainers are keyed by ``Name``.
Local agent ids are unique only within one environment process, so every per-agent map
uses the global id ``agent_{worker_id}-{agent_id}``.
"""

from __future__ import annotations

import attrs

_TEAM_SEPARATOR = "?team="


@attrs.frozen
class BehaviorIdentifiers:
    """A parsed behavior id: ``behavior_id`` is what Unity sends, ``brain_name`` the config key."""

    behavior_id: str
    brain_name: str
    team_id: int

    @staticmethod
    def from_name_behavior_id(name_behavior_id: str) -> BehaviorIdentifiers:
        """Parse ``Name?team=N`` (or a bare ``Name``, team 0).

        Raises ValueError naming the id when the team part is not an integer.
        """
        name, sep, team = name_behavior_id.partition(_TEAM_SEPARATOR)
        if not sep:
            return BehaviorIdentifiers(name_behavior_id, name_behavior_id, 0)
        try:
            team_id = int(team)
        except ValueError:
            raise ValueError(
                f"behavior id {name_behavior_id!r}: team {team!r} is not an integer (expected 'Name{_TEAM_SEPARATOR}N')"
            ) from None
        return BehaviorIdentifiers(name_behavior_id, name, team_id)


def create_name_behavior_id(name: str, team_id: int) -> str:
    """The behavior id Unity would send for ``name`` on team ``team_id``."""
    return f"{name}{_TEAM_SEPARATOR}{team_id}"


def get_global_agent_id(worker_id: int, agent_id: int) -> str:
    """The run-wide id of a local agent: ``agent_{worker_id}-{agent_id}``."""
    return f"agent_{worker_id}-{agent_id}"
