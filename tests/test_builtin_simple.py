"""Simple (ML-Agents' SimpleEnvironment): goal-end rewards, hybrid spec, the contract kept."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, DimensionProperty, ObservationType
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import StepChecker, random_action, rollout
from envs.builtin.simple import SUCCESS_REWARD

SIMPLE = "Simple?team=0"


def toward_goal(sign: float):
    """Every dimension moves toward ``sign * goal`` (continuous +-1, discrete 1/0)."""

    def policy(name, decision):
        goal = decision.obs[0][:, :1] * sign
        n = len(decision)
        return ActionTuple(
            continuous=np.repeat(goal, 2, axis=1).astype(np.float32),
            discrete=np.repeat(goal > 0, 2, axis=1).astype(np.int32).reshape(n, 2),
        )

    return policy


def test_hybrid_spec_and_goal_observation():
    env = make_env("Simple", seed=0, continuous_size=2, discrete_branches=2, step_size=0.8)
    spec = env.behavior_specs[SIMPLE]
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_branches == (2, 2)
    assert [o.shape for o in spec.observation_specs] == [(1,)]
    goal = env.get_steps(SIMPLE)[0].obs[0]
    assert goal.tolist() in ([[1.0]], [[-1.0]])


def test_reaching_the_goal_in_two_decisions_scores_105():
    env = make_env("Simple", seed=0, num_areas=3, continuous_size=2, discrete_branches=2, step_size=0.8)
    returns = rollout(env, toward_goal(1.0), 20)  # 10 episodes of 2 decisions per agent
    assert returns.returns[SIMPLE] == pytest.approx([SUCCESS_REWARD - 0.01] * 30, abs=1e-5)
    assert env.episode_returns == pytest.approx([1.05] * 30, abs=1e-5)


def test_the_wrong_end_scores_minus_106_and_slow_moves_cost_time():
    env = make_env("Simple", seed=0, continuous_size=2, discrete_branches=2, step_size=0.8)
    returns = rollout(env, toward_goal(-1.0), 4)
    assert returns.returns[SIMPLE] == pytest.approx([-1.07, -1.07], abs=1e-5)
    env = make_env("Simple", seed=0, continuous_size=1, step_size=0.2)  # 5 moves of 0.2
    returns = rollout(env, lambda n, d: ActionTuple(continuous=d.obs[0].copy()), 10)
    assert returns.returns[SIMPLE] == pytest.approx([1.06 - 0.04] * 2, abs=1e-5)


def test_no_length_limit_unless_asked():
    env = make_env("Simple", seed=0, discrete_branches=1, continuous_size=1)
    still = lambda n, d: ActionTuple(
        continuous=np.zeros((len(d), 1), np.float32),  # noqa: E731
        discrete=np.ones((len(d), 1), np.int32),
    )
    assert rollout(env, still, 500).returns.get(SIMPLE, []) == []
    env = make_env("Simple", seed=0, continuous_size=1, max_step=50)
    returns = rollout(env, lambda n, d: ActionTuple(continuous=np.zeros((len(d), 1), np.float32)), 100)
    assert returns.returns[SIMPLE] == pytest.approx([-0.5, -0.5], abs=1e-5)
    assert returns.interrupted[SIMPLE] == [True, True]


@pytest.mark.parametrize("sizes", [(1, 0), (0, 1), (2, 2), (1, 2)])
def test_random_play_keeps_the_contract(sizes):
    env = make_env(
        "Simple", seed=3, num_areas=4, continuous_size=sizes[0], discrete_branches=sizes[1], step_size=0.8, max_step=20
    )
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(0)
    spec = env.behavior_specs[SIMPLE]
    for _ in range(200):
        decision, _ = env.get_steps(SIMPLE)
        env.set_actions(SIMPLE, random_action(spec, decision, rng, respect_masks=True))
        env.step()
        checker.after_step()
    assert checker.terminals > 0


def test_options_from_environment_parameters_and_errors():
    env = make_env("Simple", seed=0, env_parameters={"continuous_size": 0, "discrete_branches": 3})
    assert env.behavior_specs[SIMPLE].action_spec.discrete_branches == (2, 2, 2)
    with pytest.raises(ValueError, match="at least one action"):
        make_env("Simple", seed=0, continuous_size=0)


def goal_filled(obs: np.ndarray, shape: tuple[int, ...], goals: np.ndarray) -> bool:
    """Whether ``obs`` is float32 [n, *shape] with row i filled with ``goals[i]``."""
    expected = np.broadcast_to(goals.reshape((-1,) + (1,) * len(shape)), (len(goals),) + shape)
    return obs.dtype == np.float32 and obs.shape == (len(goals),) + shape and np.array_equal(obs, expected)


@pytest.mark.parametrize(
    "options, shapes",
    [
        (dict(num_visual=1, num_vector=0), [(20, 20, 3)]),
        (dict(num_visual=2, num_vector=1), [(1,), (20, 20, 3), (20, 20, 3)]),
        (dict(num_visual=1, vis_obs_size=(36, 36, 3), num_vector=2, vec_obs_size=3), [(3,), (3,), (36, 36, 3)]),
        (dict(num_visual=1, num_vector=0, vis_obs_size=(5, 5, 5)), [(5, 5, 5)]),
    ],
)
def test_visual_and_vector_observations_hold_the_goal(options, shapes):
    env = make_env("Simple", seed=1, num_areas=8, step_size=1.0, **options)
    spec = env.behavior_specs[SIMPLE]
    assert [o.shape for o in spec.observation_specs] == shapes
    for o in spec.observation_specs:
        visual = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
        assert o.dimension_property == (visual if len(o.shape) == 3 else (DimensionProperty.NONE,))
        assert o.observation_type == ObservationType.DEFAULT
    seen = set()
    for _ in range(6):  # step_size 1: every episode ends after one decision, with a new goal
        decision, terminal = env.get_steps(SIMPLE)
        goals = env._goal[np.arange(8)].astype(np.float32)  # the goal of every decision row
        assert len(decision.obs) == len(shapes)
        assert all(goal_filled(obs, shape, goals) for obs, shape in zip(decision.obs, shapes))
        assert all(obs.shape == (len(terminal),) + shape for obs, shape in zip(terminal.obs, shapes))
        assert all(np.isin(obs, [-1.0, 1.0]).all() for obs in terminal.obs)
        seen.update(goals.tolist())
        env.set_actions(SIMPLE, ActionTuple(continuous=np.ones((len(decision), 1), np.float32)))
        env.step()
    assert seen == {-1.0, 1.0}
    assert len(env.episode_returns) == 6 * 8


def test_default_observation_is_one_goal_float():
    env = make_env("Simple", seed=0)
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(1,)]
    obs = env.get_steps(SIMPLE)[0].obs
    assert len(obs) == 1 and obs[0].dtype == np.float32 and obs[0].tolist() == [[env._goal[0]]]


def test_observation_options_from_environment_parameters():
    params = {"num_vector": 0, "num_visual": 2, "vis_obs_height": 8, "vis_obs_width": 6, "vis_obs_channels": 1}
    env = make_env("Simple", seed=0, env_parameters=params)
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(8, 6, 1), (8, 6, 1)]
    env = make_env("Simple", seed=0, env_parameters={"num_visual": 1, "vec_obs_size": 4, "vis_obs_width": 7})
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(4,), (20, 7, 3)]
    # constructor options win, and a constructor vis_obs_size overrides all three parameters
    env = make_env("Simple", seed=0, num_visual=1, vis_obs_size=(5, 5, 5), env_parameters={"num_visual": 3, **params})
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(5, 5, 5)]


@pytest.mark.parametrize(
    "options, word",
    [
        (dict(num_visual=-1), "num_visual"),
        (dict(num_vector=1.5), "num_vector"),
        (dict(vec_obs_size=0), "vec_obs_size"),
        (dict(num_visual=1, vis_obs_size=(20, 20)), "vis_obs_size"),
        (dict(num_visual=1, vis_obs_size=(20, 0, 3)), "vis_obs_size"),
        (dict(num_visual=1, vis_obs_size=20), "vis_obs_size"),
        (dict(env_parameters={"num_visual": 1, "vis_obs_channels": 2.5}), "vis_obs_channels"),
        (dict(env_parameters={"num_vector": -2}), "num_vector"),
        (dict(num_vector=0), "at least one observation"),
    ],
)
def test_bad_observation_options_name_the_option(options, word):
    with pytest.raises(ValueError, match=word):
        make_env("Simple", seed=0, **options)


def test_variable_length_observations_come_last_with_buffer_sensor_specs():
    env = make_env("Simple", seed=1, num_areas=4, num_visual=1, num_var_len=2, step_size=1.0)
    specs = env.behavior_specs[SIMPLE].observation_specs
    assert [o.shape for o in specs] == [(1,), (20, 20, 3), (10, 5), (10, 5)]  # ML-Agents' VAR_LEN_SIZE
    for o in specs[2:]:
        assert o.dimension_property == (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE)
        assert o.observation_type == ObservationType.DEFAULT
    decision = env.get_steps(SIMPLE)[0]
    goals = env._goal[np.arange(4)].astype(np.float32)
    assert all(goal_filled(obs, (10, 5), goals) for obs in decision.obs[2:])  # every row present


def test_variable_length_only_and_sizes_from_environment_parameters():
    params = {"num_vector": 0, "num_var_len": 1, "var_len_max_entities": 6, "var_len_entity_size": 3}
    env = make_env("Simple", seed=0, env_parameters=params)
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(6, 3)]
    env = make_env("Simple", seed=0, num_var_len=1, var_len_obs_size=(2, 4), env_parameters=params)
    assert [o.shape for o in env.behavior_specs[SIMPLE].observation_specs] == [(2, 4)]
    checker = StepChecker(env)
    checker.after_reset()
    rollout(env, lambda n, d: ActionTuple(continuous=np.ones((len(d), 1), np.float32)), 30, checker=checker)
    assert checker.terminals > 0


@pytest.mark.parametrize(
    "options, goal_types",
    [
        (dict(goal_indices=[0]), [True]),
        (dict(num_visual=1, num_var_len=1, goal_indices=(2,)), [False, False, True]),
        (dict(num_vector=2, num_var_len=1, goal_indices=[0, 2]), [True, False, True]),
        (dict(num_vector=2, env_parameters={"goal_index": 1}), [False, True]),
    ],
)
def test_goal_indices_mark_goal_signals_and_change_no_content(options, goal_types):
    env = make_env("Simple", seed=2, num_areas=4, **options)
    specs = env.behavior_specs[SIMPLE].observation_specs
    expected = [ObservationType.GOAL_SIGNAL if goal else ObservationType.DEFAULT for goal in goal_types]
    assert [o.observation_type for o in specs] == expected
    plain_options = {k: v for k, v in options.items() if k not in ("goal_indices", "env_parameters")}
    plain = make_env("Simple", seed=2, num_areas=4, **plain_options)
    assert [o.shape for o in plain.behavior_specs[SIMPLE].observation_specs] == [o.shape for o in specs]
    assert [o.dimension_property for o in plain.behavior_specs[SIMPLE].observation_specs] == [
        o.dimension_property for o in specs
    ]
    # as ML-Agents: the goal fills every observation, the goal signal and the others alike
    goals = env._goal[np.arange(4)].astype(np.float32)
    for obs, spec in zip(env.get_steps(SIMPLE)[0].obs, specs):
        assert goal_filled(obs, spec.shape, goals)


def memory_trace(env, n_decisions: int) -> list[float]:
    """The first observation value of agent 0 after reset and after each of ``n_decisions``
    decisions that never finish an episode (all positions stay inside (-1, 1))."""
    values = [float(env.get_steps(SIMPLE)[0].obs[0][0, 0])]
    spec = env.behavior_specs[SIMPLE].action_spec
    for i in range(n_decisions):
        sign = 1 if i % 2 == 0 else -1  # back and forth
        env.set_actions(
            SIMPLE,
            ActionTuple(
                continuous=np.full((1, spec.continuous_size), 0.1 * sign, np.float32),
                discrete=np.full((1, spec.discrete_size), int(sign > 0), np.int32),
            ),
        )
        env.step()
        values.append(float(env.get_steps(SIMPLE)[0].obs[0][0, 0]))
    return values


@pytest.mark.parametrize(
    "options, shown",
    [
        (dict(), 3),  # one action dimension: ML-Agents' step_count <= 2 for the first 3 observations
        (dict(continuous_size=0, discrete_branches=1, step_size=0.2), 3),
        (dict(continuous_size=1, discrete_branches=1), 2),  # step_count grows by 2 a decision
        (dict(continuous_size=2, discrete_branches=1), 1),
    ],
)
def test_memory_shows_the_goal_only_at_the_start(options, shown):
    env = make_env("Simple", seed=0, memory=True, **options)
    goal = float(env._goal[0])
    assert memory_trace(env, 6) == [goal] * shown + [0.0] * (7 - shown)


def test_memory_episode_with_the_goal_remembered_and_hidden_terminal_observation():
    env = make_env("Simple", seed=4, num_areas=8, env_parameters={"memory": 1.0})
    assert env.memory
    goals = env._goal.copy()  # a policy with memory: the goal seen first
    for decision_index in range(5):  # step 0.2: five decisions to reach an end
        decision, terminal = env.get_steps(SIMPLE)
        assert len(terminal) == 0
        if decision_index < 3:
            np.testing.assert_array_equal(decision.obs[0][:, 0], goals)
        else:
            assert not decision.obs[0].any()
        env.set_actions(SIMPLE, ActionTuple(continuous=goals[:, None].astype(np.float32)))
        env.step()
    decision, terminal = env.get_steps(SIMPLE)
    assert len(terminal) == 8 and not terminal.obs[0].any()  # ended at step_count 5: hidden
    np.testing.assert_allclose(terminal.reward, SUCCESS_REWARD, atol=1e-6)
    np.testing.assert_array_equal(decision.obs[0][:, 0], env._goal)  # new episodes show theirs
    assert env.episode_returns == pytest.approx([1.06 - 0.04] * 8, abs=1e-5)


def test_memory_off_by_default_and_hidden_variable_length_rows_are_empty():
    assert not make_env("Simple", seed=0).memory
    env = make_env("Simple", seed=0, memory=True, num_vector=0, num_var_len=1)
    for _ in range(3):
        env.set_actions(SIMPLE, ActionTuple(continuous=np.full((1, 1), 0.1, np.float32)))
        env.step()
    assert env.get_steps(SIMPLE)[0].obs[0].shape == (1, 10, 5)
    assert not env.get_steps(SIMPLE)[0].obs[0].any()  # hidden: no entity present


@pytest.mark.parametrize(
    "options, word",
    [
        (dict(num_var_len=-1), "num_var_len"),
        (dict(num_var_len=1, var_len_obs_size=(10,)), "var_len_obs_size"),
        (dict(num_var_len=1, var_len_obs_size=(0, 5)), "var_len_obs_size"),
        (dict(env_parameters={"num_var_len": 1, "var_len_entity_size": 0.5}), "var_len_entity_size"),
        (dict(env_parameters={"var_len_max_entities": -3}), "var_len_max_entities"),
        (dict(num_vector=0, num_var_len=0), "at least one observation"),
        (dict(memory=2), "memory"),
        (dict(env_parameters={"memory": 0.5}), "memory"),
        (dict(goal_indices=[1]), "goal_indices"),
        (dict(goal_indices=[-1]), "goal_indices"),
        (dict(goal_indices=0), "goal_indices"),
        (dict(env_parameters={"goal_index": 3}), "goal_indices"),
        (dict(env_parameters={"goal_index": 0.5}), "goal_index"),
    ],
)
def test_bad_memory_var_len_and_goal_options_name_the_option(options, word):
    with pytest.raises(ValueError, match=word):
        make_env("Simple", seed=0, **options)


# ---- teams (ML-Agents' test_simple_ghost / test_simple_asymm_ghost) ------------------------------


def toward(goal_sign: dict[int, float], env, name: str, decision) -> ActionTuple:
    """Continuous moves: agent id -> multiple of its goal (0 when not listed)."""
    agents = env._behaviors[name]
    rows = [int(np.flatnonzero(agents.ids == agent_id)[0]) for agent_id in decision.agent_id.tolist()]
    offset = env._teams.index(agents) * env._n_slots
    moves = [goal_sign.get(agent_id, 0.0) * env._goal[offset + row] for agent_id, row in zip(decision.agent_id, rows)]
    return ActionTuple(continuous=np.array(moves, np.float32).reshape(-1, 1))


def test_two_teams_are_two_behavior_ids_of_one_name_each_solving_its_own_task():
    env = make_env("Simple", seed=0, num_areas=2, num_teams=2, step_size=1.0)
    assert list(env.behavior_specs) == ["Simple?team=0", "Simple?team=1"]
    assert env.behavior_specs["Simple?team=0"] == env.behavior_specs["Simple?team=1"]
    first, second = (env.get_steps(n)[0] for n in env.behavior_specs)
    assert first.agent_id.tolist() == [0, 1] and second.agent_id.tolist() == [2, 3]
    assert first.group_id.tolist() == [0, 0] and second.group_reward.tolist() == [0.0, 0.0]
    # team 0 reaches its goals, team 1 the other ends
    env.set_actions("Simple?team=0", toward({0: 1.0, 1: 1.0}, env, "Simple?team=0", first))
    env.set_actions("Simple?team=1", toward({2: -1.0, 3: -1.0}, env, "Simple?team=1", second))
    env.step()
    (d0, t0), (d1, t1) = env.get_steps("Simple?team=0"), env.get_steps("Simple?team=1")
    assert t0.agent_id.tolist() == [0, 1] and t1.agent_id.tolist() == [2, 3]
    assert t0.reward == pytest.approx([SUCCESS_REWARD] * 2) and t1.reward == pytest.approx([-SUCCESS_REWARD] * 2)
    assert d0.agent_id.tolist() == [4, 5] and d1.agent_id.tolist() == [6, 7]
    assert list(env.episode_returns_by_behavior) == ["Simple?team=0", "Simple?team=1"]
    assert env.episode_returns_by_behavior["Simple?team=0"] == pytest.approx([1.06, 1.06])
    assert env.episode_returns_by_behavior["Simple?team=1"] == pytest.approx([-1.06, -1.06])
    assert env.episode_returns == pytest.approx([1.06, 1.06, -1.06, -1.06])


def test_asymmetric_teams_are_two_behavior_names():
    env = make_env("Simple", seed=0, env_parameters={"num_teams": 2, "asymmetric": 1})
    assert list(env.behavior_specs) == ["Simple?team=0", "SimpleOpp?team=1"]
    assert env.get_steps("SimpleOpp?team=1")[0].agent_id.tolist() == [1]
    returns = rollout(env, lambda n, d: ActionTuple(continuous=d.obs[0].copy()), 12)  # 5 decisions an episode
    for name in ("Simple?team=0", "SimpleOpp?team=1"):
        assert returns.returns[name] == pytest.approx([1.02, 1.02])
        assert env.episode_returns_by_behavior[name] == pytest.approx([1.02, 1.02])


def test_one_team_keeps_its_single_behavior():
    env = make_env("Simple", seed=0)
    assert list(env.behavior_specs) == [SIMPLE] and env.episode_returns_by_behavior == {SIMPLE: []}


# ---- num_agents (ML-Agents' MultiAgentEnvironment, test_simple_poca) ----------------------------


def steps_of(env, name=SIMPLE) -> tuple:
    """(decision ids, rewards, group ids, group rewards), (terminal ids, rewards, group ids,
    group rewards, interrupted), rounded."""
    decision, terminal = env.get_steps(name)
    r = lambda a: np.round(a.astype(np.float64), 5).tolist()  # noqa: E731
    return (
        (decision.agent_id.tolist(), r(decision.reward), decision.group_id.tolist(), r(decision.group_reward)),
        (
            terminal.agent_id.tolist(),
            r(terminal.reward),
            terminal.group_id.tolist(),
            r(terminal.group_reward),
            terminal.interrupted.tolist(),
        ),
    )


def act(env, moves: dict[int, float], name=SIMPLE) -> None:
    env.set_actions(name, toward(moves, env, name, env.get_steps(name)[0]))
    env.step()


def test_group_agents_leave_one_by_one_and_the_last_gets_the_group_reward():
    env = make_env("Simple", seed=0, num_agents=3, step_size=1.0)
    assert steps_of(env) == (([0, 1, 2], [0.0] * 3, [1, 1, 1], [0.0] * 3), ([], [], [], [], []))
    act(env, {0: 1.0})  # agent 0 reaches its goal first: it leaves with min(-0.01, 1.06)
    assert steps_of(env) == (([1, 2], [-0.01, -0.01], [1, 1], [0.0, 0.0]), ([0], [-0.01], [1], [0.0], [False]))
    act(env, {1: -1.0})  # agent 1 reaches the wrong end: it leaves with -1.06
    assert steps_of(env) == (([2], [-0.01], [1], [0.0]), ([1], [-1.06], [1], [0.0], [False]))
    act(env, {2: 0.5})  # half-way to the goal: no end yet
    assert steps_of(env) == (([2], [-0.01], [1], [0.0]), ([], [], [], [], []))
    act(env, {2: 1.0})  # the last agent: reward 0, group reward its own 1.06; the group restarts
    assert steps_of(env) == (([3, 4, 5], [0.0] * 3, [1, 1, 1], [0.0] * 3), ([2], [0.0], [1], [1.06], [False]))
    assert env.episode_returns == pytest.approx([1.06, -1.06, 1.06])
    assert env.get_and_reset_stats()["Simple/Episode Return"] == [
        (pytest.approx(v), StatsAggregationMethod.AVERAGE) for v in (1.06, -1.06, 1.06)
    ]


def test_group_finishing_together_the_highest_slot_is_last_and_areas_are_separate_groups():
    env = make_env("Simple", seed=0, num_areas=2, num_agents=2, step_size=1.0)
    assert steps_of(env)[0] == ([0, 1, 2, 3], [0.0] * 4, [1, 1, 2, 2], [0.0] * 4)
    act(env, {0: -1.0, 1: 1.0, 2: 1.0})  # area 1 ends together; in area 2 agent 2 leaves
    decision, terminal = steps_of(env)
    assert terminal == ([0, 1, 2], [-1.06, 0.0, -0.01], [1, 1, 2], [0.0, 1.06, 0.0], [False] * 3)
    assert decision == ([4, 5, 3], [0.0, 0.0, -0.01], [1, 1, 2], [0.0] * 3)  # slot order
    assert env.episode_returns == pytest.approx([-1.06, 1.06, 1.06])
    act(env, {3: 1.0, 4: 1.0, 5: 1.0})
    decision, terminal = steps_of(env)
    assert terminal == ([4, 5, 3], [-0.01, 0.0, 0.0], [1, 1, 2], [0.0, 1.06, 1.06], [False] * 3)
    assert decision == ([6, 7, 8, 9], [0.0] * 4, [1, 1, 2, 2], [0.0] * 4)


def test_group_max_step_interrupts_the_agents_left():
    env = make_env("Simple", seed=0, num_agents=2, step_size=1.0, max_step=3)
    act(env, {0: 1.0})
    act(env, {})
    assert steps_of(env) == (([1], [-0.01], [1], [0.0]), ([], [], [], [], []))
    act(env, {})  # third decision of agent 1: interrupted, the group restarts
    assert steps_of(env) == (([2, 3], [0.0, 0.0], [1, 1], [0.0, 0.0]), ([1], [-0.01], [1], [0.0], [True]))
    assert env.episode_returns == pytest.approx([1.06, -0.03])  # a finishing reward; a return


def test_groups_with_two_teams_and_discrete_actions():
    env = make_env(
        "Simple", seed=1, num_areas=2, num_agents=2, num_teams=2, continuous_size=2, discrete_branches=2, step_size=1.0
    )
    for name, groups in (("Simple?team=0", [1, 1, 2, 2]), ("Simple?team=1", [3, 3, 4, 4])):
        assert env.get_steps(name)[0].group_id.tolist() == groups
    checker = StepChecker(env)
    checker.after_reset()
    returns = rollout(env, toward_goal(1.0), 3, checker=checker)  # every agent finishes at once
    for name in env.behavior_specs:
        terminal_rewards = env.get_steps(name)[1]
        assert terminal_rewards.group_reward.tolist() == pytest.approx([0.0, SUCCESS_REWARD] * 2)
        assert terminal_rewards.reward.tolist() == pytest.approx([-0.01, 0.0] * 2)
        assert returns.returns[name] == pytest.approx([-0.01, 0.0] * 6)
    assert env.episode_returns_by_behavior["Simple?team=1"] == pytest.approx([1.06] * 12)


def test_groups_with_visual_observations():
    env = make_env("Simple", seed=1, num_agents=3, num_visual=1, vis_obs_size=(4, 4, 1), step_size=1.0)
    act(env, {0: 1.0})
    decision, terminal = env.get_steps(SIMPLE)
    assert [o.shape for o in decision.obs] == [(2, 1), (2, 4, 4, 1)]
    assert [o.shape for o in terminal.obs] == [(1, 1), (1, 4, 4, 1)]
    assert terminal.obs[1].ravel().tolist() == [env._goal[0]] * 16


def test_groups_with_memory_hide_the_goal_per_agent():
    env = make_env("Simple", seed=2, num_agents=2, memory=True)
    goals = env._goal.copy()
    for _ in range(3):
        act(env, {0: 0.1, 1: 0.1})
    assert not env.get_steps(SIMPLE)[0].obs[0].any()
    env = make_env("Simple", seed=2, num_agents=2, memory=True)
    assert env.get_steps(SIMPLE)[0].obs[0][:, 0].tolist() == goals.tolist()


@pytest.mark.parametrize(
    "options, word",
    [
        (dict(num_teams=3), "num_teams"),
        (dict(num_teams=0), "num_teams"),
        (dict(asymmetric=1), "asymmetric"),
        (dict(num_teams=2, asymmetric=2), "asymmetric"),
        (dict(num_agents=0), "num_agents"),
        (dict(env_parameters={"num_agents": 2.5}), "num_agents"),
    ],
)
def test_bad_team_and_group_options_name_the_option(options, word):
    with pytest.raises(ValueError, match=word):
        make_env("Simple", seed=0, **options)
