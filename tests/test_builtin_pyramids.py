"""Pyramids: the goal appears only after the switch, far away; random play almost never finds it,
shortest paths score about 1.95 and a least-visited-cell explorer finds it in most episodes."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, DecisionSteps

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout
from envs.builtin.pyramids import DOWN, LEFT, RIGHT, STAY, UP, room_layout
from tests.support.learning import config, first_or_second_seed, train_env

PYRAMIDS = "Pyramids?team=0"
_MOVES = {UP: (-1, 0), DOWN: (1, 0), LEFT: (0, -1), RIGHT: (0, 1)}


def decode(obs: np.ndarray, free: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """[n] rows, [n] columns and [n] bool switch pressed of the observation rows."""
    height, width = free.shape
    return obs[:, :height].argmax(axis=1), obs[:, height : height + width].argmax(axis=1), obs[:, -1] > 0.5


def distances(free: np.ndarray, target: tuple[int, int]) -> np.ndarray:
    """[H, W] moves from each free cell to ``target`` (breadth-first), -1 on walls."""
    dist = np.full(free.shape, -1, dtype=np.int64)
    dist[target] = 0
    queue = deque([target])
    while queue:
        row, col = queue.popleft()
        for d_row, d_col in _MOVES.values():
            r, c = row + d_row, col + d_col
            if 0 <= r < free.shape[0] and 0 <= c < free.shape[1] and free[r, c] and dist[r, c] < 0:
                dist[r, c] = dist[row, col] + 1
                queue.append((r, c))
    return dist


def neighbours(free: np.ndarray, row: int, col: int) -> list[tuple[int, int, int]]:
    """(action, row, column) of the moves from (row, col) that do not hit a wall."""
    out = []
    for action, (d_row, d_col) in _MOVES.items():
        r, c = row + d_row, col + d_col
        if 0 <= r < free.shape[0] and 0 <= c < free.shape[1] and free[r, c]:
            out.append((action, r, c))
    return out


def scripted_policy(free, switch, goal):
    """Shortest path to the switch, then to the goal."""
    to_switch, to_goal = distances(free, switch), distances(free, goal)

    def policy(name: str, decision: DecisionSteps) -> ActionTuple:
        rows, cols, pressed = decode(decision.obs[0], free)
        actions = np.zeros((len(decision), 1), np.int32)
        for i, (row, col, done) in enumerate(zip(rows.tolist(), cols.tolist(), pressed.tolist())):
            dist = to_goal if done else to_switch
            actions[i, 0] = min(neighbours(free, row, col), key=lambda m: dist[m[1], m[2]])[0]
        return ActionTuple(discrete=actions)

    return policy


def explorer_policy(free, rng: np.random.Generator):
    """Steps to the least-visited neighbouring cell (ties at random), counting visits per episode
    (keyed by agent id) and per switch state, as a novelty bonus on observations would. It knows
    where walls are (a learned forward model learns that quickly), not where the switch or goal is."""
    counts: dict[int, np.ndarray] = {}

    def policy(name: str, decision: DecisionSteps) -> ActionTuple:
        rows, cols, pressed = decode(decision.obs[0], free)
        actions = np.zeros((len(decision), 1), np.int32)
        for i, agent_id in enumerate(decision.agent_id.tolist()):
            seen = counts.setdefault(agent_id, np.zeros((2,) + free.shape))
            state = int(pressed[i])
            seen[state, rows[i], cols[i]] += 1
            options = neighbours(free, int(rows[i]), int(cols[i]))
            keys = [(seen[state, r, c], rng.random()) for _, r, c in options]
            actions[i, 0] = options[min(range(len(options)), key=keys.__getitem__)][0]
        return ActionTuple(discrete=actions)

    return policy


def goal_rate(env) -> float:
    return float(np.mean([value for value, _ in env.get_and_reset_stats()["Pyramids/Goal Reached"]]))


def test_spec_layout_and_start():
    env = make_env("Pyramids", seed=0, num_areas=16)
    free, switch, goal = room_layout(5, 3)
    assert free.shape == (5, 17) and switch == (4, 16) and goal == (0, 0)
    assert free[:, [5, 11]].sum(axis=0).tolist() == [1, 1] and free[4, 5] and free[0, 11]  # zig-zag doors
    spec = env.behavior_specs[PYRAMIDS]
    assert [o.shape for o in spec.observation_specs] == [(5 + 17 + 1,)]
    assert spec.action_spec.discrete_branches == (5,)
    decision = env.get_steps(PYRAMIDS)[0]
    rows, cols, pressed = decode(decision.obs[0], free)
    assert (cols < 5).all() and len(set(zip(rows.tolist(), cols.tolist()))) > 1  # random cells of room 0
    assert not pressed.any() and not decision.action_mask[0].any()


def walk(env, moves, n_areas=1):
    """Apply ``moves`` (actions) in turn to every area; the last step's (decision, terminal)."""
    for action in moves:
        env.set_actions(PYRAMIDS, ActionTuple(discrete=np.full((n_areas, 1), action, np.int32)))
        env.step()
    return env.get_steps(PYRAMIDS)


def test_the_goal_is_absent_before_the_switch_and_pays_2_after_it():
    env = make_env("Pyramids", seed=1, env_parameters={"room_size": 3, "num_rooms": 1})
    free, switch, goal = room_layout(3, 1)
    assert switch == (2, 2)
    to_corner = [UP] * 2 + [LEFT] * 2  # to (0, 0) from anywhere: the goal cell, not yet there
    decision, terminal = walk(env, to_corner)
    assert len(terminal) == 0
    assert decode(decision.obs[0], free)[0].tolist() == [0] and decision.reward.tolist() == pytest.approx([-0.001])
    decision, terminal = walk(env, [DOWN, DOWN, RIGHT, RIGHT])  # onto the switch: no reward
    assert len(terminal) == 0 and decision.reward.tolist() == pytest.approx([-0.001])
    assert decision.obs[0][0, -1] == 1.0
    decision, terminal = walk(env, [STAY, UP, UP, LEFT])  # stays pressed
    assert len(terminal) == 0 and decision.obs[0][0, -1] == 1.0
    decision, terminal = walk(env, [LEFT])  # onto the goal: +2 replaces the step's cost, the episode ends
    assert terminal.reward.tolist() == [2.0] and terminal.interrupted.tolist() == [False]
    assert decision.obs[0][0, -1] == 0.0  # the next episode starts with the switch up
    stats = env.get_and_reset_stats()
    assert [v for v, _ in stats["Pyramids/Goal Reached"]] == [1.0]
    assert [v for v, _ in stats["Pyramids/Switch Pressed"]] == [1.0]


def test_walls_stop_the_agent_except_at_doors():
    env = make_env("Pyramids", seed=2, num_areas=4)
    free, _, _ = room_layout(5, 3)
    decision, _ = walk(env, [UP] * 4 + [RIGHT] * 8, 4)  # the wall after room 0 stops them on row 0
    assert decode(decision.obs[0], free)[1].tolist() == [4] * 4
    decision, _ = walk(env, [DOWN] * 4 + [RIGHT] * 3, 4)  # the door on the bottom row lets them through
    assert decode(decision.obs[0], free)[1].tolist() == [7] * 4
    decision, _ = walk(env, [UP] * 6 + [RIGHT] * 6, 4)  # the next door is on the top row
    assert decode(decision.obs[0], free)[1].tolist() == [13] * 4


def test_no_goal_is_interrupted_at_max_step():
    env = make_env("Pyramids", seed=3, num_areas=2, env_parameters={"max_step": 30})
    returns = rollout(env, lambda n, d: ActionTuple(discrete=np.full((2, 1), STAY, np.int32)), 60)
    assert returns.returns[PYRAMIDS] == pytest.approx([-0.03] * 4, abs=1e-6)
    assert returns.interrupted[PYRAMIDS] == [True] * 4
    stats = env.get_and_reset_stats()
    assert [v for v, _ in stats["Pyramids/Goal Reached"]] == [0.0] * 4


def test_shortest_paths_always_reach_the_goal_near_2():
    free, switch, goal = room_layout(5, 3)
    env = make_env("Pyramids", seed=4, num_areas=8)
    checker = StepChecker(env)
    checker.after_reset()
    returns = rollout(env, scripted_policy(free, switch, goal), 400, checker=checker)
    got = np.array(returns.returns[PYRAMIDS])
    assert len(got) >= 8 * (400 // 56) and goal_rate(env) == 1.0
    assert returns.interrupted[PYRAMIDS] == [False] * len(got)
    lengths = np.round((2.0 - got) / 0.001).astype(int) + 1  # decisions per episode
    assert lengths.min() >= 48 and lengths.max() <= 56  # 28 - row - column to the switch, 28 back
    assert got.mean() == pytest.approx(1.949, abs=0.002)


def test_a_least_visited_explorer_finds_the_goal_in_most_episodes():
    free, _, _ = room_layout(5, 3)
    env = make_env("Pyramids", seed=5, num_areas=20)
    rollout(env, explorer_policy(free, np.random.default_rng(0)), 1200)
    assert goal_rate(env) > 0.85


def test_random_play_almost_never_reaches_the_goal():
    env = make_env("Pyramids", seed=6, num_areas=250)
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[PYRAMIDS]
    returns = rollout(env, lambda n, d: random_action(spec, d, rng, respect_masks=False), 400 * 8)  # 2000 episodes
    assert len(returns.returns[PYRAMIDS]) == 2000
    assert goal_rate(env) < 0.002  # measured: 2 in 20,000 (0.01%)
    assert np.mean(returns.returns[PYRAMIDS]) == pytest.approx(-0.4, abs=0.01)


def test_size_and_max_step_from_environment_parameters():
    env = make_env("Pyramids", seed=7, env_parameters={"room_size": 4, "num_rooms": 2, "max_step": 200})
    free, switch, goal = room_layout(4, 2)
    assert free.shape == (4, 9) and switch == (0, 8)
    assert [o.shape for o in env.behavior_specs[PYRAMIDS].observation_specs] == [(4 + 9 + 1,)]
    rollout(env, scripted_policy(free, switch, goal), 100)
    assert goal_rate(env) == 1.0
    env = make_env("Pyramids", seed=7, env_parameters={"room_size": 99, "num_rooms": 0, "max_step": -5})
    assert [o.shape for o in env.behavior_specs[PYRAMIDS].observation_specs] == [(10 + 10 + 1,)]  # clamped
    _, terminal = walk(env, [STAY])
    assert terminal.interrupted.tolist() == [True]  # max_step at least 1


@pytest.mark.slow
def test_extrinsic_ppo_solves_one_room_but_never_finds_the_goal_behind_three():
    """The shipped config learns the task once it sees the reward (one 5x5 room, switch in the
    far corner, 4 areas: summaries every 2k steps pass 1.9 from 16k, 16k and 14k on seeds 1-3,
    1.97-1.99 from 18k to 40k, measured), and without an exploration bonus it never sees it in
    the default three rooms (measured with one area: -0.4 at every summary to 200k steps, seeds
    1-3). One room is solved on seed 1, else seed 2 (``first_or_second_seed``): two summaries in
    a row above 1.9 within 40k steps."""

    def solved(last: list[tuple[int, float]]) -> bool:
        return len(last) == 2 and min(reward for _, reward in last) > 1.9

    def one_room(seed: int) -> list[float]:
        env = make_env("Pyramids", seed=seed, num_areas=4, env_parameters={"num_rooms": 1, "max_step": 100})
        settings = config("Pyramids", max_steps=40_000, summary_freq=2000)
        return train_env(env, settings, seed=seed, until=lambda curve: solved(curve[-2:])).rewards

    first_or_second_seed(one_room, lambda curve: curve[-1] > 1.9)  # shortest paths score about 1.99
    three_rooms = make_env("Pyramids", seed=1, num_areas=4)
    curve = train_env(three_rooms, config("Pyramids", max_steps=30_000), seed=1).rewards
    assert curve == pytest.approx([-0.4] * 3, abs=1e-6)


def test_one_hot_state_marks_the_cell_and_the_switch():
    env = make_env("Pyramids", seed=8, env_parameters={"room_size": 3, "num_rooms": 1, "one_hot_state": 1})
    assert [o.shape for o in env.behavior_specs[PYRAMIDS].observation_specs] == [(2 * 3 * 3,)]
    decision, _ = walk(env, [UP] * 2 + [LEFT] * 2)  # (0, 0), switch up: index 0
    assert decision.obs[0].tolist() == [[1.0] + [0.0] * 17]
    decision, _ = walk(env, [DOWN] * 2 + [RIGHT] * 2)  # onto the switch (2, 2): pressed, index 9 + 2 * 3 + 2
    assert decision.obs[0][0].tolist() == [1.0 if i == 17 else 0.0 for i in range(18)]
    decision, _ = walk(env, [UP])  # (1, 2), pressed: 9 + 3 + 2
    assert np.flatnonzero(decision.obs[0][0]).tolist() == [14] and decision.obs[0].sum() == 1.0
