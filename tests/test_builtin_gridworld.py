"""GridWorld: the image shows the grid, masks match the walls, shortest paths beat Unity's 0.8."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import random_action, rollout

GRID = "GridWorld?team=0"
MOVES = {1: (-1, 0), 2: (1, 0), 3: (0, -1), 4: (0, 1)}  # up, down, left, right


def decode(image):
    """One HWC image -> (walls, pit, goal, agent) on the cell grid (4 pixels per cell)."""
    blocks = image.reshape(image.shape[0] // 4, 4, image.shape[1] // 4, 4, 3)
    cells = blocks[:, 0, :, 0, :]
    assert (blocks == cells[:, None, :, None, :]).all(), "a cell is not a uniform 4x4 block"
    walls = (cells == 0.5).all(axis=2)
    find = lambda channel: tuple(np.argwhere(cells[:, :, channel] == 1.0)[0])
    return walls, find(0), find(1), find(2)


def shortest_path_action(image):
    walls, pit, goal, agent = decode(image)
    size = walls.shape[0]
    first_move = {agent: 0}
    queue = deque([agent])
    while queue:
        cell = queue.popleft()
        if cell == goal:
            return first_move[cell]
        for action, (dr, dc) in MOVES.items():
            nxt = (cell[0] + dr, cell[1] + dc)
            if 0 <= nxt[0] < size and 0 <= nxt[1] < size and not walls[nxt] and nxt != pit and nxt not in first_move:
                first_move[nxt] = first_move[cell] or action
                queue.append(nxt)
    raise AssertionError("no path to the goal")


def shortest_path_policy(name, decision):
    actions = [shortest_path_action(image) for image in decision.obs[0]]
    return ActionTuple(discrete=np.array(actions, np.int32)[:, None])


def test_spec_image_and_masks_match_the_grid():
    env = make_env("GridWorld", seed=0)
    spec = env.behavior_specs[GRID]
    assert [o.shape for o in spec.observation_specs] == [(20, 20, 3)]
    assert spec.action_spec.discrete_branches == (5,)
    for _ in range(30):
        decision = env.get_steps(GRID)[0]
        assert len(decision) == 9
        for image, mask in zip(decision.obs[0], decision.action_mask[0]):
            walls, pit, goal, (row, col) = decode(image)
            assert not walls.any() and len({pit, goal, (row, col)}) == 3
            assert mask.tolist() == [False, row == 0, row == 4, col == 0, col == 4]
        env.set_actions(GRID, shortest_path_policy(GRID, decision))
        env.step()


def test_shortest_paths_score_above_unity_target():
    env = make_env("GridWorld", seed=1)
    returns = rollout(env, shortest_path_policy, 200)
    assert len(returns.returns[GRID]) > 200
    assert returns.mean(GRID) > 0.9
    assert min(returns.returns[GRID]) > 0.9  # never the pit, never interrupted
    assert env.get_and_reset_stats()["GridWorld/Goal Reached"] == [(1.0, StatsAggregationMethod.AVERAGE)] * len(
        returns.returns[GRID]
    )


def test_random_actions_score_far_below():
    env = make_env("GridWorld", seed=2)
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[GRID]
    returns = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=True), 300)
    assert len(returns.returns[GRID]) > 100
    assert returns.mean(GRID) < 0.3


def test_moves_into_walls_are_ignored():
    env = make_env("GridWorld", seed=3)
    for _ in range(6):  # six moves up: everyone ends at the top row (or an episode ended)
        env.set_actions(GRID, ActionTuple(discrete=np.full((9, 1), 1, np.int32)))
        env.step()
    decision = env.get_steps(GRID)[0]
    masked_up = decision.action_mask[0][:, 1]
    rows = [decode(image)[3][0] for image in decision.obs[0]]
    assert masked_up.tolist() == [row == 0 for row in rows]
    env.set_actions(GRID, ActionTuple(discrete=np.full((9, 1), 1, np.int32)))
    env.step()
    after = env.get_steps(GRID)[0]
    same_ids = np.isin(after.agent_id, decision.agent_id[masked_up])
    for image in after.obs[0][same_ids]:
        assert decode(image)[3][0] == 0


def test_grid_size_parameter_shrinks_the_grid_inside_the_image():
    env = make_env("GridWorld", seed=4)
    env.set_env_parameter("gridSize", 3)
    env.reset()
    returns = rollout(env, shortest_path_policy, 30)
    decision = env.get_steps(GRID)[0]
    for image, mask in zip(decision.obs[0], decision.action_mask[0]):
        walls, _, _, (row, col) = decode(image)
        assert walls.sum() == 25 - 9 and not walls[:3, :3].any()
        assert mask.tolist() == [False, row == 0, row == 2, col == 0, col == 2]
    assert returns.mean(GRID) > 0.95  # paths are shorter on a 3 x 3 grid
    assert env.get_and_reset_stats()["GridWorld/Grid Size"] == [(3.0, StatsAggregationMethod.MOST_RECENT)]


def test_grid_size_at_construction_sets_the_image_size():
    env = make_env("GridWorld", seed=5, env_parameters={"gridSize": 7})
    assert env.behavior_specs[GRID].observation_specs[0].shape == (28, 28, 3)
    assert rollout(env, shortest_path_policy, 60).mean(GRID) > 0.9


@pytest.mark.parametrize("size", [20, 2])
def test_grid_size_is_clamped(size):
    env = make_env("GridWorld", seed=5, env_parameters={"gridSize": size})
    side = 40 if size > 10 else 12
    assert env.behavior_specs[GRID].observation_specs[0].shape == (side, side, 3)
