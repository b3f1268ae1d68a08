"""Every built-in environment keeps the BaseEnv contract of a Unity build."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple, BaseEnv, DecisionSteps, TerminalSteps
from mlagents_envs.exception import UnityActionException, UnityEnvironmentException
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin import BuiltinEnv, UnknownBuiltinEnvError, available, make_env
from envs.builtin.checks import ContractViolation, StepChecker, random_action, rollout

ALL = [
    "3DBall",
    "Basic",
    "Collect",
    "DungeonEscape",
    "GridWorld",
    "Hallway",
    "LineSoccer",
    "Pyramids",
    "Simple",
    "Spawner",
    "TwoBehaviors",
]
#: Environments whose agents act in groups (nonzero group ids).
GROUPED = {"DungeonEscape"}
#: Parameters that end episodes within the tests' few hundred steps (Pyramids' 400-decision
#: episodes rarely end sooner under random play).
SHORT_EPISODES = {"Pyramids": {"max_step": 50}}


def uniform_policy(env: BaseEnv, seed: int = 0, respect_masks: bool = False):
    rng = np.random.default_rng(seed)

    def policy(name: str, decision: DecisionSteps) -> ActionTuple:
        return random_action(env.behavior_specs[name], decision, rng, respect_masks=respect_masks)

    return policy


def trace(env: BaseEnv, n_steps: int) -> list:
    """Everything the env delivers over ``n_steps`` random steps, for exact comparison."""
    policy = uniform_policy(env, seed=7)
    out = []
    for _ in range(n_steps):
        for name in sorted(env.behavior_specs):
            decision, terminal = env.get_steps(name)
            out.append(
                (
                    name,
                    decision.agent_id.tolist(),
                    decision.reward.tolist(),
                    [o.tolist() for o in decision.obs],
                    terminal.agent_id.tolist(),
                    terminal.reward.tolist(),
                    terminal.interrupted.tolist(),
                )
            )
            env.set_actions(name, policy(name, decision))
        env.step()
    return out


def test_available_lists_every_env():
    assert available() == ALL


def test_unknown_name_is_a_value_error_listing_the_names():
    with pytest.raises(UnknownBuiltinEnvError) as info:
        make_env("3DBal", seed=0)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert "'3DBal'" in message
    assert all(name in message for name in ALL)


def test_builtin_prefix_is_accepted():
    env = make_env("builtin:Basic", seed=0)
    assert list(env.behavior_specs) == ["Basic?team=0"]


@pytest.mark.parametrize(
    "bad, word",
    [(dict(seed=-1), "seed"), (dict(seed=0, worker_id=-2), "worker_id"), (dict(seed=0, num_areas=0), "num_areas")],
)
def test_bad_construction_arguments_name_the_argument(bad, word):
    with pytest.raises(ValueError, match=word):
        make_env("Basic", **bad)


@pytest.mark.parametrize("name", ALL)
def test_random_steps_and_resets_keep_the_contract(name):
    env = make_env(name, seed=3, num_areas=2, env_parameters=SHORT_EPISODES.get(name))
    assert isinstance(env, BaseEnv)
    checker = StepChecker(env)
    checker.after_reset()
    policy = uniform_policy(env)
    for _ in range(2):
        rollout(env, policy, 150, checker=checker)
        env.reset()
        checker.after_reset()
    assert checker.terminals > 0
    assert checker.decisions > 0
    env.close()


@pytest.mark.parametrize(
    "name, options",
    [
        ("Simple", dict(num_teams=2)),
        ("Simple", dict(num_teams=2, asymmetric=1, discrete_branches=1)),
        ("Simple", dict(num_agents=3, max_step=4, step_size=0.5)),
        ("Simple", dict(num_agents=2, num_teams=2, continuous_size=0, discrete_branches=2, step_size=0.5, memory=1)),
        ("DungeonEscape", dict(absorbing_state=1, time_penalty=1.0, size=3, max_step=10)),
        ("DungeonEscape", dict(num_agents=2, time_penalty=1.0)),
        ("LineSoccer", dict(players_per_team=2, max_step=10)),
    ],
)
def test_team_and_group_variants_keep_the_contract(name, options):
    env = make_env(name, seed=3, num_areas=3, **options)
    checker = StepChecker(env)
    checker.after_reset()
    policy = uniform_policy(env)
    for _ in range(2):
        rollout(env, policy, 100, checker=checker)
        env.reset()
        checker.after_reset()
    assert checker.terminals > 0


@pytest.mark.parametrize("name", [name for name in ALL if name not in GROUPED])
def test_ungrouped_envs_report_zero_group_ids_and_rewards(name):
    env = make_env(name, seed=1, num_areas=2, env_parameters=SHORT_EPISODES.get(name))
    policy = uniform_policy(env)
    for _ in range(100):
        for behavior in list(env.behavior_specs):
            decision, terminal = env.get_steps(behavior)
            for steps in (decision, terminal):
                assert steps.group_id.tolist() == [0] * len(steps) and steps.group_reward.tolist() == [0.0] * len(steps)
            env.set_actions(behavior, policy(behavior, decision))
        env.step()


@pytest.mark.parametrize("name", ALL)
def test_same_seed_same_steps_and_other_worker_differs(name):
    # Simple's and Hallway's only randomness is each episode's goal or cue (one of 2): 8 agents
    # make a tie between two streams unlikely
    areas = {"num_areas": 8} if name in ("Simple", "Hallway") else {}
    first = trace(make_env(name, seed=11, **areas), 60)
    assert first == trace(make_env(name, seed=11, **areas), 60)
    if name == "Basic":  # no randomness at all, as Unity's Basic: every stream is the same
        assert first == trace(make_env(name, seed=11, worker_id=1), 60)
        return
    assert first != trace(make_env(name, seed=11, worker_id=1, **areas), 60)
    assert first != trace(make_env(name, seed=12, **areas), 60)


@pytest.mark.parametrize("name", ALL)
def test_reset_gives_every_agent_a_new_id(name):
    env = make_env(name, seed=0)
    before = {n: set(env.get_steps(n)[0].agent_id.tolist()) for n in env.behavior_specs}
    env.reset()
    for n in env.behavior_specs:
        after = set(env.get_steps(n)[0].agent_id.tolist())
        assert after and not after & before[n]


def test_steps_taken_counts_every_step_across_resets():
    """A clock for whoever watches a run from outside (a learning test's hold)."""
    env = make_env("Simple", seed=0)
    rollout(env, uniform_policy(env), 7)
    env.reset()
    rollout(env, uniform_policy(env), 5)
    assert env.steps_taken == 12


@pytest.mark.parametrize("name", ALL)
def test_num_areas_multiplies_agents(name):
    one, three = make_env(name, seed=0), make_env(name, seed=0, num_areas=3)
    for n in one.behavior_specs:
        assert 3 * len(one.get_steps(n)[0]) == len(three.get_steps(n)[0])


@pytest.mark.parametrize("name", ALL)
def test_stats_have_the_stats_side_channel_types_and_mix_aggregations(name):
    env = make_env(name, seed=0, env_parameters=SHORT_EPISODES.get(name))
    rollout(env, uniform_policy(env), 300)
    stats = env.get_and_reset_stats()
    assert stats
    methods = set()
    for key, values in stats.items():
        assert isinstance(key, str) and values
        for value, method in values:
            assert type(value) is float
            assert isinstance(method, StatsAggregationMethod)
            methods.add(method)
    assert StatsAggregationMethod.AVERAGE in methods
    assert env.get_and_reset_stats() == {}


def test_both_average_and_most_recent_stats_exist():
    env = make_env("3DBall", seed=0)
    rollout(env, uniform_policy(env), 200)
    stats = env.get_and_reset_stats()
    assert {m for _, m in stats["3DBall/Ball Dropped"]} == {StatsAggregationMethod.AVERAGE}
    assert stats["3DBall/Gravity"] == [(9.81, StatsAggregationMethod.MOST_RECENT)]


def test_unknown_environment_parameters_are_ignored():
    plain = trace(make_env("Basic", seed=5), 40)
    env = make_env("Basic", seed=5, env_parameters={"no_such_parameter": 3.0})
    env.set_env_parameter("another_unknown", 1.0)
    assert trace(env, 40) == plain


def test_engine_settings_are_accepted_and_change_no_episode():
    plain = trace(make_env("3DBall", seed=0), 60)
    env = make_env("3DBall", seed=0)
    env.set_engine_config(EngineConfig(84, 84, 5, 100.0, -1, 60))  # time_scale 100, as a user may set
    assert trace(env, 60) == plain  # a simulation steps by decisions, not by wall-clock time


def test_unknown_behavior_and_wrong_action_shapes_are_refused():
    env = make_env("3DBall", seed=0)
    with pytest.raises(UnityActionException, match="Basic\\?team=0"):
        env.get_steps("Basic?team=0")
    with pytest.raises(UnityActionException, match="continuous input of dimension \\(12, 2\\)"):
        env.set_actions("3DBall?team=0", ActionTuple(continuous=np.zeros((11, 2), np.float32)))
    with pytest.raises(UnityActionException, match="\\(1, 2\\)"):
        env.set_action_for_agent("3DBall?team=0", 0, ActionTuple(continuous=np.zeros((1, 3), np.float32)))
    with pytest.raises(IndexError, match="agent_id 999"):
        env.set_action_for_agent("3DBall?team=0", 999, ActionTuple(continuous=np.zeros((1, 2), np.float32)))


def test_set_action_for_agent_moves_only_that_agent():
    a, b = make_env("Basic", seed=0, num_areas=3), make_env("Basic", seed=0, num_areas=3)
    ids = a.get_steps("Basic?team=0")[0].agent_id
    a.set_action_for_agent("Basic?team=0", int(ids[1]), ActionTuple(discrete=np.array([[2]])))
    b.set_actions("Basic?team=0", ActionTuple(discrete=np.array([[0], [2], [0]])))
    a.step()
    b.step()
    obs_a, obs_b = a.get_steps("Basic?team=0")[0].obs[0], b.get_steps("Basic?team=0")[0].obs[0]
    np.testing.assert_array_equal(obs_a, obs_b)
    assert obs_a[:, 10].tolist() == [1.0, 0.0, 1.0]  # rows 0 and 2 stayed, row 1 moved right
    assert obs_a[1, 11] == 1.0


def test_agents_without_actions_act_with_zeros():
    a, b = make_env("3DBall", seed=4), make_env("3DBall", seed=4)
    b.set_actions("3DBall?team=0", ActionTuple(continuous=np.zeros((12, 2), np.float32)))
    a.step()
    b.step()
    np.testing.assert_array_equal(a.get_steps("3DBall?team=0")[0].obs[0], b.get_steps("3DBall?team=0")[0].obs[0])


def test_closed_env_refuses_to_step():
    env = make_env("Spawner", seed=0)
    env.close()
    env.close()
    with pytest.raises(UnityEnvironmentException, match="closed"):
        env.step()
    with pytest.raises(UnityEnvironmentException, match="closed"):
        env.reset()


def test_observations_are_copies_not_views_of_the_state():
    env = make_env("3DBall", seed=0)
    first = env.get_steps("3DBall?team=0")[0].obs[0].copy()
    held = env.get_steps("3DBall?team=0")[0].obs[0]
    env.step()
    np.testing.assert_array_equal(held, first)


class _FakeEnv(BuiltinEnv):
    """A scripted env whose ``script`` says what each tick reports, to test the checker."""

    env_name = "Fake"

    def __init__(self, script, **kwargs):
        self.script = script
        super().__init__(seed=0, **kwargs)

    def _setup(self):
        from mlagents_envs.base_env import BehaviorSpec

        from envs.builtin._core import action_spec_discrete, vector_obs_spec

        self.agents = self._add_behavior("Fake", BehaviorSpec([vector_obs_spec(1)], action_spec_discrete(2)), 2)

    def _reset_world(self):
        self.agents.start(np.arange(2))
        self.agents.decide(np.arange(2), [np.zeros((2, 1), np.float32)])

    def _advance(self):
        self.script(self, self._tick)


def _ids(env):
    return env.get_steps("Fake?team=0")[0].agent_id.tolist()


def test_checker_accepts_a_well_behaved_script_and_silent_ticks_are_skipped():
    def script(env, tick):
        if tick % 3 == 0:  # decisions only every third tick
            env.agents.decide(np.arange(2), [np.full((2, 1), tick, np.float32)])

    env = _FakeEnv(script)
    checker = StepChecker(env)
    checker.after_reset()
    env.step()
    checker.after_step()
    assert env.get_steps("Fake?team=0")[0].obs[0][:, 0].tolist() == [3.0, 3.0]
    env.step()
    assert env.get_steps("Fake?team=0")[0].obs[0][:, 0].tolist() == [6.0, 6.0]


def _violations():
    def reuse_after_end(env, tick):
        slots = np.arange(1)
        if tick == 1:
            env.agents.end(slots, [np.zeros((1, 1), np.float32)], np.zeros(1, bool))
        env.agents.decide(slots, [np.zeros((1, 1), np.float32)])  # same id decides again

    def end_twice(env, tick):
        env.agents.end(np.arange(1), [np.zeros((1, 1), np.float32)], np.zeros(1, bool))

    def bad_dtype(env, tick):
        env.agents.decide(np.arange(2), [np.zeros((2, 1), np.float64)])

    def bad_shape(env, tick):
        env.agents.decide(np.arange(2), [np.zeros((2, 2), np.float32)])

    def all_masked(env, tick):
        env.agents.decide(np.arange(2), [np.zeros((2, 1), np.float32)], np.ones((2, 2), bool))

    return {
        "came back after its episode ended": reuse_after_end,
        "ended an episode twice": end_twice,
        "not float32": bad_dtype,
        "has shape": bad_shape,
        "every action masked": all_masked,
    }


@pytest.mark.parametrize("message", list(_violations()))
def test_checker_catches_violations(message):
    env = _FakeEnv(_violations()[message])
    checker = StepChecker(env)
    checker.after_reset()
    with pytest.raises(ContractViolation, match=message):
        for _ in range(3):
            env.step()
            checker.after_step()


def test_checker_catches_an_id_reused_after_reset():
    env = _FakeEnv(lambda env, tick: env.agents.decide(np.arange(2), [np.zeros((2, 1), np.float32)]))
    checker = StepChecker(env)
    checker.after_reset()
    old = env.agents.ids.copy()
    env.reset()
    checker.after_reset()
    env.agents.ids[:] = old  # pretend the ids restarted, as a naive env would do
    env.step()
    with pytest.raises(ContractViolation, match="came back"):
        checker.after_step()


def test_checker_catches_an_empty_step():
    class Silent(BaseEnv):
        behavior_specs = make_env("Basic", seed=0).behavior_specs

        def get_steps(self, name):
            spec = self.behavior_specs[name]
            return DecisionSteps.empty(spec), TerminalSteps.empty(spec)

        step = reset = close = set_actions = set_action_for_agent = lambda *a: None

    env = Silent()
    checker = StepChecker(env)
    checker.known = dict(env.behavior_specs)  # the behavior arrived earlier
    with pytest.raises(ContractViolation, match="without any decision or terminal row"):
        checker.after_step()


def test_group_ids_and_group_rewards_are_published_and_zeroed_when_reported():
    def script(env, tick):
        slots = np.arange(2)
        env.agents.add_group_reward(slots, [0.5, 0.25])
        env.agents.add_group_reward(np.array([0, 0]), 1.0)  # repeated slots add up
        env.agents.reward[:] += 0.1
        if tick == 2:
            env.agents.end(slots[1:], [np.zeros((1, 1), np.float32)], np.zeros(1, bool))
            env.agents.remove(slots[1:])
            env.agents.decide(slots[:1], [np.zeros((1, 1), np.float32)])
        else:
            env.agents.decide(slots[env.agents.active], [np.zeros((int(env.agents.active.sum()), 1), np.float32)])

    env = _FakeEnv(script)
    env.agents.set_group(np.arange(2), 7)
    decision = env.get_steps("Fake?team=0")[0]
    assert decision.group_id.tolist() == [0, 0] and decision.group_reward.tolist() == [0.0, 0.0]
    env.step()
    decision = env.get_steps("Fake?team=0")[0]
    assert decision.group_id.tolist() == [7, 7] and decision.group_reward.tolist() == [2.5, 0.25]
    env.step()
    decision, terminal = env.get_steps("Fake?team=0")
    assert decision.group_reward.tolist() == [2.5] and decision.group_id.tolist() == [7]
    assert terminal.group_reward.tolist() == [0.25] and terminal.group_id.tolist() == [7]
    assert terminal.group_id.dtype == np.int32 and terminal.group_reward.dtype == np.float32


def test_a_behavior_can_be_published_for_team_one():
    class TeamOne(_FakeEnv):
        def _setup(self):
            from mlagents_envs.base_env import BehaviorSpec

            from envs.builtin._core import action_spec_discrete, vector_obs_spec

            spec = BehaviorSpec([vector_obs_spec(1)], action_spec_discrete(2))
            self.agents = self._add_behavior("Fake", spec, 2, team=1)

    env = TeamOne(lambda env, tick: None)
    assert list(env.behavior_specs) == ["Fake?team=1"]
