"""Behavior ids as Unity sends them and global agent ids."""

import pytest

from processors import BehaviorIdentifiers, create_name_behavior_id, get_global_agent_id


def test_parse_name_and_team():
    ids = BehaviorIdentifiers.from_name_behavior_id("3DBall?team=2")
    assert (ids.behavior_id, ids.brain_name, ids.team_id) == ("3DBall?team=2", "3DBall", 2)


def test_bare_name_is_team_zero():
    assert BehaviorIdentifiers.from_name_behavior_id("Walker").team_id == 0


def test_round_trip():
    assert BehaviorIdentifiers.from_name_behavior_id(create_name_behavior_id("Soccer", 1)).team_id == 1


def test_bad_team_names_the_id():
    with pytest.raises(ValueError, match=r"Soccer\?team=blue"):
        BehaviorIdentifiers.from_name_behavior_id("Soccer?team=blue")


def test_global_agent_id():
    assert get_global_agent_id(3, 17) == "agent_3-17"
