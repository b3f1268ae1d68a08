"""Environment parameters in the built-in environments: constants and samplers (ParameterValue),
drawn per agent at episode starts as Unity's samplers are, reproducible per seed and different
per worker; a value set mid-run applies from the next episode start."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import make_env
from envs.builtin.checks import random_action, rollout
from envs.parameters import ParameterKind, ParameterValue

BALL = "3DBall?team=0"


def uniform(low: float, high: float, seed: int = 0) -> ParameterValue:
    return ParameterValue(ParameterKind.UNIFORM, (low, high), seed)


def gaussian(mean: float, st_dev: float, seed: int = 0) -> ParameterValue:
    return ParameterValue(ParameterKind.GAUSSIAN, (mean, st_dev), seed)


def multirange(*bounds: float, seed: int = 0) -> ParameterValue:
    return ParameterValue(ParameterKind.MULTIRANGEUNIFORM, tuple(bounds), seed)


def tilt(name, decision):
    """Tilt every platform fully: every ball drops within a few decisions."""
    return ActionTuple(continuous=np.tile(np.float32([1.0, 0.0]), (len(decision), 1)))


def uniform_policy(env, seed=0):
    rng = np.random.default_rng(seed)
    return lambda name, decision: random_action(env.behavior_specs[name], decision, rng, respect_masks=True)


def masses_over_resets(env, resets: int) -> np.ndarray:
    """[resets + 1, 12] the masses of the construction's episodes, then of each reset's."""
    rows = [env.mass.copy()]
    for _ in range(resets):
        env.reset()
        rows.append(env.mass.copy())
    return np.array(rows)


# ---- the three sampler kinds, on 3DBall's mass (one draw per ball) ---------------------------


def test_a_uniform_sampler_gives_every_ball_its_own_mass_within_range():
    env = make_env("3DBall", seed=0, env_parameters={"mass": uniform(0.5, 10.0)})
    masses = masses_over_resets(env, 20)
    assert ((masses >= 0.5) & (masses < 10.0)).all()
    assert len(np.unique(masses[0])) == 12  # per ball, not per area
    assert len(np.unique(masses)) == masses.size  # new draws at every episode start
    assert abs(masses.mean() - 5.25) < 0.6 and masses.std() > 2.0  # uniform: mean 5.25, sd 2.74


def test_a_gaussian_sampler_draws_around_its_mean():
    env = make_env("3DBall", seed=0, env_parameters={"gravity": gaussian(9.81, 2.0)})
    gravity = [env.gravity.copy()]
    for _ in range(30):
        env.reset()
        gravity.append(env.gravity.copy())
    gravity = np.array(gravity)
    assert abs(gravity.mean() - 9.81) < 0.4
    assert 1.6 < gravity.std() < 2.4
    assert len(np.unique(gravity)) == gravity.size


def test_a_multirange_sampler_draws_in_its_intervals_in_proportion_to_their_widths():
    env = make_env("3DBall", seed=0, env_parameters={"mass": multirange(0.5, 1.0, 8.0, 10.0)})
    masses = masses_over_resets(env, 60).ravel()
    low, high = (masses >= 0.5) & (masses < 1.0), (masses >= 8.0) & (masses < 10.0)
    assert (low | high).all()
    assert 0.12 < low.mean() < 0.28  # width 0.5 of 2.5: a fifth of the draws


def test_mass_and_scale_samplers_of_3dball_randomize_yaml_draw_per_ball_and_change_the_physics():
    env = make_env("3DBall", seed=3, env_parameters={"mass": uniform(0.5, 10.0), "scale": uniform(0.75, 3.0)})
    assert ((env.scale >= 0.75) & (env.scale < 3.0)).all() and len(np.unique(env.scale)) == 12
    # the same seed for both keys does not make mass and scale draw in lockstep
    assert not np.allclose((env.mass - 0.5) / 9.5, (env.scale - 0.75) / 2.25)
    obs = env.get_steps(BALL)[0].obs[0]
    plain = make_env("3DBall", seed=3).get_steps(BALL)[0].obs[0]
    np.testing.assert_allclose(obs[:, 3] - plain[:, 3], 0.5 * (env.scale - 1.0), atol=1e-6)  # ball height
    np.testing.assert_array_equal(obs[:, [0, 1, 2, 4]], plain[:, [0, 1, 2, 4]])  # no other draw moved


def test_3dball_records_the_drawn_mass_and_scale_per_episode_start():
    env = make_env("3DBall", seed=1, env_parameters={"mass": uniform(0.5, 10.0), "scale": uniform(0.75, 3.0)})
    stats = env.get_and_reset_stats()
    assert stats["3DBall/Mass"] == [(m, StatsAggregationMethod.AVERAGE) for m in env.mass.tolist()]
    assert stats["3DBall/Scale"] == [(s, StatsAggregationMethod.AVERAGE) for s in env.scale.tolist()]
    before = env.mass.copy()
    ended = 0
    while ended == 0:
        env.set_actions(BALL, tilt(BALL, env.get_steps(BALL)[0]))
        env.step()
        ended = len(env.get_steps(BALL)[1])
    restarted = env.mass != before
    assert restarted.sum() == ended
    stats = env.get_and_reset_stats()
    assert [m for m, _ in stats["3DBall/Mass"]] == env.mass[restarted].tolist()
    assert stats["3DBall/Gravity"] == [(9.81, StatsAggregationMethod.MOST_RECENT)]


# ---- reproducibility and workers --------------------------------------------------------------


def test_draws_are_reproducible_for_one_sampler_seed_and_worker():
    first = masses_over_resets(make_env("3DBall", seed=0, worker_id=2, env_parameters={"mass": uniform(0.5, 10.0)}), 3)
    again = masses_over_resets(make_env("3DBall", seed=0, worker_id=2, env_parameters={"mass": uniform(0.5, 10.0)}), 3)
    np.testing.assert_array_equal(first, again)
    # the sampler's own seed picks its stream: the environment's seed does not
    other_env_seed = make_env("3DBall", seed=9, worker_id=2, env_parameters={"mass": uniform(0.5, 10.0)})
    np.testing.assert_array_equal(other_env_seed.mass, first[0])
    other_sampler_seed = make_env("3DBall", seed=0, worker_id=2, env_parameters={"mass": uniform(0.5, 10.0, seed=1)})
    assert not np.isin(other_sampler_seed.mass, first).any()


def test_every_worker_draws_differently():
    masses = [
        make_env("3DBall", seed=0, worker_id=w, env_parameters={"mass": uniform(0.5, 10.0)}).mass for w in range(4)
    ]
    assert len(np.unique(np.concatenate(masses))) == 48


@pytest.mark.parametrize(
    "sampler", [uniform(0.5, 10.0, seed=3), gaussian(5.0, 1.0, seed=3), multirange(0.5, 1.0, 8.0, 10.0, seed=3)]
)
def test_every_kind_is_reproducible_per_worker_and_differs_between_workers(sampler):
    def masses(worker_id):
        return masses_over_resets(make_env("3DBall", seed=0, worker_id=worker_id, env_parameters={"mass": sampler}), 2)

    np.testing.assert_array_equal(masses(1), masses(1))
    assert not np.isin(masses(1), masses(2)).any()


def test_a_negative_sampler_seed_as_mlagents_defaults_to_is_accepted():
    env = make_env("3DBall", seed=0, env_parameters={"mass": uniform(0.5, 10.0, seed=-1)})
    assert ((env.mass >= 0.5) & (env.mass < 10.0)).all()


def test_a_sampler_changes_no_other_random_draw():
    plain = make_env("3DBall", seed=4)
    sampled = make_env("3DBall", seed=4, env_parameters={"mass": uniform(0.5, 10.0)})
    for _ in range(3):  # start tilts and positions come from the simulation's own generator
        np.testing.assert_array_equal(
            sampled.get_steps(BALL)[0].obs[0][:, [0, 1, 2, 4]], plain.get_steps(BALL)[0].obs[0][:, [0, 1, 2, 4]]
        )
        plain.reset()
        sampled.reset()


# ---- values changed mid-run -----------------------------------------------------------------


def test_a_sampler_set_mid_run_applies_from_each_balls_next_episode_start():
    env = make_env("3DBall", seed=2)
    env.set_env_parameter_value("mass", uniform(0.5, 10.0))
    np.testing.assert_array_equal(env.mass, 1.0)  # episodes under way keep their mass
    rollout(env, tilt, 30)  # every ball has dropped and restarted by now
    assert ((env.mass >= 0.5) & (env.mass < 10.0)).all() and len(np.unique(env.mass)) == 12
    env.set_env_parameter("mass", 2.0)
    env.reset()
    np.testing.assert_array_equal(env.mass, 2.0)


def test_a_new_sampler_restarts_its_stream_and_the_same_one_sent_again_does_not():
    given = make_env("3DBall", seed=0, env_parameters={"mass": uniform(0.5, 10.0)})
    env = make_env("3DBall", seed=0)
    env.set_env_parameter_value("mass", uniform(0.5, 10.0))
    env.reset()
    np.testing.assert_array_equal(env.mass, given.mass)  # a fresh stream: its first draws
    env.set_env_parameter_value("mass", uniform(0.5, 10.0))  # re-sent unchanged (every reset)
    env.reset()
    given.reset()
    np.testing.assert_array_equal(env.mass, given.mass)  # the stream went on
    env.set_env_parameter_value("mass", uniform(0.5, 10.0, seed=5))
    env.set_env_parameter_value("mass", uniform(0.5, 10.0))  # replaced, then back: restarts
    env.reset()
    np.testing.assert_array_equal(
        env.mass, make_env("3DBall", seed=0, env_parameters={"mass": uniform(0.5, 10.0)}).mass
    )


def test_constants_as_parameter_values_behave_as_floats():
    def trace(env):
        returns = rollout(env, uniform_policy(env), 150)
        return returns.returns[BALL], env.get_steps(BALL)[0].obs[0].tolist()

    as_float = trace(make_env("3DBall", seed=6, env_parameters={"gravity": 20.0, "mass": 0.3}))
    as_value = trace(
        make_env(
            "3DBall",
            seed=6,
            env_parameters={"gravity": ParameterValue.constant(20.0), "mass": ParameterValue.constant(0.3)},
        )
    )
    assert as_value == as_float
    env = make_env("3DBall", seed=6)
    env.set_env_parameter_value("gravity", ParameterValue.constant(20.0))
    env.set_env_parameter("mass", 0.3)
    env.reset()
    other = make_env("3DBall", seed=6)
    other.set_env_parameter("gravity", 20.0)
    other.set_env_parameter("mass", 0.3)
    other.reset()
    assert trace(env) == trace(other)


# ---- the other environments ---------------------------------------------------------------------


def test_basic_draws_a_start_cell_per_agent():
    env = make_env("Basic", seed=0, num_areas=16, env_parameters={"start_position": uniform(2.0, 17.0)})
    start = env.get_steps("Basic?team=0")[0].obs[0].argmax(axis=1)
    assert ((start >= 2) & (start <= 17)).all() and len(np.unique(start)) > 5


def test_gridworld_sizes_its_image_for_the_largest_draw_and_draws_a_grid_per_agent():
    env = make_env("GridWorld", seed=0, env_parameters={"gridSize": uniform(3.0, 7.0)})
    assert env.behavior_specs["GridWorld?team=0"].observation_specs[0].shape == (28, 28, 3)
    sizes = [env.grid_size.copy()]
    for _ in range(10):
        env.reset()
        sizes.append(env.grid_size.copy())
    sizes = np.concatenate(sizes)
    assert set(sizes.tolist()) == {3, 4, 5, 6, 7}
    gaussian_env = make_env("GridWorld", seed=0, env_parameters={"gridSize": gaussian(5.0, 3.0)})
    assert gaussian_env.behavior_specs["GridWorld?team=0"].observation_specs[0].shape == (40, 40, 3)
    assert ((gaussian_env.grid_size >= 3) & (gaussian_env.grid_size <= 10)).all()


@pytest.mark.parametrize("name", ["Hallway", "Pyramids", "Collect"])
def test_max_step_is_drawn_per_agent(name):
    env = make_env(name, seed=0, num_areas=32, env_parameters={"max_step": uniform(10.0, 40.0)})
    assert ((env.max_step >= 10) & (env.max_step <= 40)).all() and len(np.unique(env.max_step)) > 10


def test_hallway_cue_steps_are_drawn_per_agent_and_its_length_is_fixed_at_construction():
    env = make_env(
        "Hallway",
        seed=0,
        num_areas=32,
        env_parameters={"hallway_length": uniform(6.0, 9.0), "cue_steps": uniform(1.0, 4.0)},
    )
    assert 6 <= env.length <= 9
    assert set(env.cue_steps.tolist()) == {1, 2, 3, 4}
    spec = env.behavior_specs["Hallway?team=0"]
    env.set_env_parameter_value("hallway_length", uniform(12.0, 14.0))
    env.reset()
    assert env.behavior_specs["Hallway?team=0"] == spec and 6 <= env.length <= 9


def test_a_construction_setting_draws_once_per_worker():
    lengths = {
        make_env("Hallway", seed=0, worker_id=w, env_parameters={"hallway_length": uniform(2.0, 20.0)}).length
        for w in range(8)
    }
    assert len(lengths) > 2
    steps = {
        make_env("Simple", seed=0, worker_id=w, env_parameters={"step_size": uniform(0.1, 0.5)}).step_size
        for w in range(4)
    }
    assert len(steps) == 4 and all(0.1 <= s < 0.5 for s in steps)


def test_two_behaviors_draws_a_reacher_radius_per_reacher():
    env = make_env("TwoBehaviors", seed=0, num_areas=8, env_parameters={"reacher_radius": uniform(0.1, 0.5)})
    rollout(env, uniform_policy(env), 4)  # the Reachers appear at tick 3
    radius = env.reacher_radius
    assert ((radius >= 0.1) & (radius < 0.5)).all() and len(np.unique(radius)) == 16
    rollout(env, uniform_policy(env), 120)
    recorded = env.get_and_reset_stats()["Reacher/Radius"]
    assert recorded[0][0] in env.reacher_radius.tolist()


def test_spawner_draws_its_probabilities_every_tick():
    env = make_env("Spawner", seed=0, env_parameters={"spawn_probability": uniform(0.2, 0.4)})
    seen = set()
    for _ in range(20):
        rollout(env, uniform_policy(env), 1)
        seen.add(env.spawn_probability)
    assert len(seen) == 20 and all(0.2 <= p < 0.4 for p in seen)


def test_dungeon_and_soccer_round_and_clamp_sampled_options_per_area():
    dungeon = make_env(
        "DungeonEscape",
        seed=0,
        num_areas=16,
        env_parameters={
            "max_step": uniform(5.0, 50.0),
            "absorbing_state": uniform(0.0, 1.0),
            "time_penalty": gaussian(0, 1),
        },
    )
    assert ((dungeon.max_step >= 5) & (dungeon.max_step <= 50)).all() and len(np.unique(dungeon.max_step)) > 5
    assert dungeon.absorbing_state.any() and not dungeon.absorbing_state.all()
    assert (dungeon.time_penalty >= 0).all() and (dungeon.time_penalty > 0).any()
    rollout(dungeon, uniform_policy(dungeon), 60)
    soccer = make_env("LineSoccer", seed=0, num_areas=16, env_parameters={"kick": gaussian(2.0, 2.0)})
    assert (soccer.kick >= 1).all() and len(np.unique(soccer.kick)) > 2
    rollout(soccer, uniform_policy(soccer), 60)
    with pytest.raises(ValueError, match="max_step must be a whole number"):
        make_env("LineSoccer", seed=0, env_parameters={"max_step": ParameterValue.constant(2.5)})
