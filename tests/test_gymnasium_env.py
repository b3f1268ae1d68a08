"""Gymnasium environments as a BaseEnv (envs.gymnasium): space mappings, episode ends, seeds,
masks, refusals and errors, on tiny environments defined here and on CartPole-v1; and
CartPole-v1, Pendulum-v1 and Hopper-v5 row for row against gymnasium stepped by hand."""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.wrappers import Autoreset
from mlagents_envs.base_env import ActionSpec, ActionTuple
from mlagents_envs.exception import UnityActionException, UnityEnvironmentException

from envs.builtin.checks import EpisodeReturns, StepChecker, random_action, rollout
from envs.gymnasium import GymnasiumEnvError, check_gymnasium, gymnasium_env
from envs.gymnasium.vector_env import copy_seeds
from envs.parameters import ParameterKind, ParameterValue

SPACES_ID = "agents_learn_tests/Spaces-v0"
COUNTING_ID = "agents_learn_tests/Counting-v0"
AUTORESET_ID = "agents_learn_tests/Autoreset-v0"
SPACES_NAME = "agents_learn_tests_Spaces-v0?team=0"


class SpacesEnv(gymnasium.Env):
    """Any spaces. Step t (1, 2, ...) gives reward t and observation ``observe(t)`` (reset gives
    ``observe(0)``); the episode ends after ``length`` steps, terminated or (``truncate``)
    truncated. ``mask(t)``, when given, goes into info as ``action_mask``. Records the actions
    received, the reset arguments and whether it was closed; ``made`` counts resets and steps
    of all instances (to show refusals come before any)."""

    made: dict[str, int] = defaultdict(int)

    def __init__(
        self,
        observation_space: spaces.Space | None = None,
        action_space: spaces.Space | None = None,
        observe: Callable[[int], Any] | None = None,
        length: int = 3,
        truncate: bool = False,
        mask: Callable[[int], Any] | None = None,
    ) -> None:
        self.observation_space = observation_space or spaces.Box(-np.inf, np.inf, (1,), np.float32)
        self.action_space = action_space or spaces.Discrete(2)
        self.observe = observe or (lambda t: np.array([t], dtype=np.float32))
        self.length = length
        self.truncate = truncate
        self.mask = mask
        self.actions: list[Any] = []
        self.resets: list[dict[str, Any]] = []
        self.closed = False
        self.t = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        SpacesEnv.made["resets"] += 1
        self.resets.append({"seed": seed, "options": options})
        self.t = 0
        return self.observe(0), self._info()

    def step(self, action):
        SpacesEnv.made["steps"] += 1
        self.actions.append(action)
        self.t += 1
        done = self.t >= self.length
        return self.observe(self.t), float(self.t), done and not self.truncate, done and self.truncate, self._info()

    def close(self) -> None:
        self.closed = True

    def _info(self) -> dict[str, Any]:
        return {} if self.mask is None else {"action_mask": self.mask(self.t)}


class CountingEnv(gymnasium.Env):
    """Episodes of 2..6 steps drawn from the env's generator, random float rewards; even
    lengths terminate, odd ones truncate. Observation [episode step, total steps]. Records every
    finished episode's (return, length, truncated) and the total number of steps."""

    observation_space = spaces.Box(-np.inf, np.inf, (2,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self) -> None:
        self.episodes: list[tuple[float, int, bool]] = []
        self.total = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        self.length = int(self.np_random.integers(2, 7))
        self.t = 0
        self.ret = 0.0
        return self._obs(), {}

    def step(self, action):
        reward = float(self.np_random.random())
        self.t += 1
        self.total += 1
        self.ret += reward
        done = self.t >= self.length
        truncated = done and self.length % 2 == 1
        if done:
            self.episodes.append((self.ret, self.t, truncated))
        return self._obs(), reward, done and not truncated, truncated, {}

    def _obs(self) -> np.ndarray:
        return np.array([self.t, self.total], dtype=np.float32)


def _register() -> None:
    if SPACES_ID not in gymnasium.registry:
        gymnasium.register(SPACES_ID, entry_point=SpacesEnv)
        gymnasium.register(COUNTING_ID, entry_point=CountingEnv)
        gymnasium.register(AUTORESET_ID, entry_point=SpacesEnv, additional_wrappers=(Autoreset.wrapper_spec(),))


_register()


def spaces_env(copies: int = 1, seed: int = 0, **env_kwargs: Any):
    return gymnasium_env(SPACES_ID, copies=copies, seed=seed, env_kwargs=env_kwargs)


def inner(env, i: int = 0) -> Any:
    """Copy ``i``'s own environment object (under gymnasium.make's wrappers)."""
    return env.envs[i].unwrapped


def act(env, continuous=None, discrete=None) -> None:
    """Set one action for every decision row (zeros where not given) and step."""
    name = next(iter(env.behavior_specs))
    spec = env.behavior_specs[name].action_spec
    n = len(env.get_steps(name)[0])
    c = np.zeros((n, spec.continuous_size), np.float32) if continuous is None else np.asarray(continuous, np.float32)
    d = np.zeros((n, spec.discrete_size), np.int32) if discrete is None else np.asarray(discrete, np.int32)
    env.set_actions(name, ActionTuple(continuous=c, discrete=d))
    env.step()


# ---- observations ----------------------------------------------------------------------------

IMAGE = np.arange(4 * 5 * 3, dtype=np.uint8).reshape(4, 5, 3)
OBSERVATIONS = {
    "box float64 rank 1": (
        spaces.Box(-1.0, 1.0, (3,), np.float64),
        np.array([0.25, -0.5, 1.0]),
        [("obs", [0.25, -0.5, 1.0])],
    ),
    "box rank 2 flattened": (
        spaces.Box(-9.0, 9.0, (2, 3), np.float32),
        np.arange(6, dtype=np.float32).reshape(2, 3),
        [("obs", [0, 1, 2, 3, 4, 5])],
    ),
    "uint8 image": (spaces.Box(0, 255, (4, 5, 3), np.uint8), IMAGE, [("obs", IMAGE / 255.0)]),
    "uint8 grey image": (
        spaces.Box(0, 255, (4, 5), np.uint8),
        IMAGE[:, :, 0],
        [("obs", IMAGE[:, :, :1] / 255.0)],
    ),
    "int box as raw floats": (
        spaces.Box(-5, 500, (3,), np.int32),
        np.array([-5, 7, 500], np.int32),
        [("obs", [-5, 7, 500])],
    ),
    "discrete with start": (spaces.Discrete(3, start=-1), np.int64(0), [("obs", [0, 1, 0])]),
    "multidiscrete": (
        spaces.MultiDiscrete([2, 3], start=[1, 0]),
        np.array([2, 1], np.int64),
        [("obs", [0, 1, 0, 1, 0])],
    ),
    "multibinary": (spaces.MultiBinary(3), np.array([1, 0, 1], np.int8), [("obs", [1, 0, 1])]),
    "dict in key order, mask left out": (
        spaces.Dict(
            {
                "position": spaces.Box(-1.0, 1.0, (2,), np.float32),
                "action_mask": spaces.MultiBinary(2),
                "goal": spaces.Discrete(2),
            }
        ),
        {"position": np.array([0.5, -0.5], np.float32), "action_mask": np.array([1, 1], np.int8), "goal": np.int64(1)},
        [("goal", [0, 1]), ("position", [0.5, -0.5])],
    ),
    "tuple": (
        spaces.Tuple((spaces.Box(-1.0, 1.0, (1,), np.float32), spaces.Discrete(2))),
        (np.array([0.75], np.float32), np.int64(0)),
        [("0", [0.75]), ("1", [1, 0])],
    ),
    "nested depth-first": (
        spaces.Dict(
            {
                "x": spaces.Tuple((spaces.Discrete(2), spaces.Box(0.0, 1.0, (1,), np.float32))),
                "y": spaces.MultiBinary(1),
            }
        ),
        {"x": (np.int64(1), np.array([0.5], np.float32)), "y": np.array([1], np.int8)},
        [("x/0", [0, 1]), ("x/1", [0.5]), ("y", [1])],
    ),
}


@pytest.mark.parametrize("case", list(OBSERVATIONS))
def test_observation_space_mapping(case):
    space, value, expected = OBSERVATIONS[case]
    specs = check_gymnasium(SPACES_ID, {"observation_space": space, "observe": lambda t: value})
    obs_specs = specs.behavior_spec.observation_specs
    assert [o.name for o in obs_specs] == [name for name, _ in expected]
    assert [s.path for s in specs.observations] == [name for name, _ in expected]
    env = spaces_env(observation_space=space, observe=lambda t: value)
    decision, _ = env.get_steps(SPACES_NAME)
    assert len(decision.obs) == len(expected)
    for obs, obs_spec, (_, want) in zip(decision.obs, obs_specs, expected):
        assert obs.dtype == np.float32
        assert obs.shape == (1,) + tuple(obs_spec.shape)
        np.testing.assert_allclose(obs[0], np.asarray(want, np.float32).reshape(obs_spec.shape), rtol=1e-6)
    env.close()


def test_images_are_visual_observations():
    specs = check_gymnasium(SPACES_ID, {"observation_space": spaces.Box(0, 255, (4, 5), np.uint8)})
    (spec,) = specs.behavior_spec.observation_specs
    assert spec.shape == (4, 5, 1)
    assert len(spec.dimension_property) == 3 and spec.dimension_property[0] != spec.dimension_property[2]


# ---- actions ---------------------------------------------------------------------------------


def test_box_action_maps_onto_bounds_exactly():
    box = spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([3.0, 10.0], np.float32))
    env = spaces_env(action_space=box, length=100)
    assert env.behavior_specs[SPACES_NAME].action_spec == ActionSpec(2, ())
    for a, want in (
        ([-1, 1], [-2, 10]),
        ([0, 0], [0.5, 5]),
        ([1, -1], [3, 0]),
        ([5, -7], [3, 0]),
        ([0.5, 0.2], [1.75, 6]),
    ):
        act(env, continuous=[a])
        got = inner(env).actions[-1]
        assert got.dtype == np.float32 and got.shape == (2,)
        np.testing.assert_array_equal(got, np.asarray(want, np.float32))
        assert box.contains(got)


def test_box_action_of_any_rank_is_flattened():
    box = spaces.Box(-1.0, 1.0, (2, 2), np.float64)
    env = spaces_env(action_space=box)
    assert env.behavior_specs[SPACES_NAME].action_spec == ActionSpec(4, ())
    act(env, continuous=[[-1, -0.5, 0.5, 1]])
    got = inner(env).actions[-1]
    assert got.dtype == np.float64
    np.testing.assert_array_equal(got, [[-1, -0.5], [0.5, 1]])


@pytest.mark.parametrize(
    "space, branches, choice, want",
    [
        (spaces.Discrete(3, start=2), (3,), [1], np.int64(3)),
        (spaces.MultiDiscrete([[2, 3], [4, 5]], start=[[1, 0], [0, -2]]), (2, 3, 4, 5), [1, 2, 3, 4], [[2, 2], [3, 2]]),
        (spaces.MultiBinary(3), (2, 2, 2), [1, 0, 1], [1, 0, 1]),
    ],
)
@pytest.mark.filterwarnings("ignore:.*multi-dimensional MultiDiscrete")  # gymnasium's env checker calls len()
def test_discrete_actions(space, branches, choice, want):
    env = spaces_env(action_space=space)
    assert env.behavior_specs[SPACES_NAME].action_spec == ActionSpec(0, branches)
    act(env, discrete=[choice])
    got = inner(env).actions[-1]
    np.testing.assert_array_equal(got, want)
    assert space.contains(got)


def test_hybrid_tuple_and_dict_actions():
    space = spaces.Tuple(
        (
            spaces.Box(0.0, 2.0, (1,), np.float32),
            spaces.Dict({"turn": spaces.Discrete(3), "thrust": spaces.Box(-1.0, 1.0, (2,), np.float32)}),
            spaces.MultiDiscrete([2, 4]),
        )
    )
    specs = check_gymnasium(SPACES_ID, {"action_space": space})
    assert specs.behavior_spec.action_spec == ActionSpec(3, (3, 2, 4))
    assert [(s.path, s.mapping) for s in specs.actions] == [
        ("0", "continuous[0:1] onto [low, high]"),
        ("1/thrust", "continuous[1:3] onto [low, high]"),
        ("1/turn", "discrete branch 0"),
        ("2", "discrete branches 1..2"),
    ]
    env = spaces_env(action_space=space)
    act(env, continuous=[[1, -1, 0.5]], discrete=[[2, 1, 3]])
    box, parts, multi = inner(env).actions[-1]
    np.testing.assert_array_equal(box, [2.0])
    np.testing.assert_array_equal(parts["thrust"], [-1.0, 0.5])
    assert parts["turn"] == 2
    np.testing.assert_array_equal(multi, [1, 3])
    assert space.contains(inner(env).actions[-1])


# ---- episode ends ----------------------------------------------------------------------------


@pytest.mark.parametrize("truncate", [False, True])
def test_episode_end_gives_terminal_row_and_new_agent_in_same_step(truncate):
    env = spaces_env(length=3, truncate=truncate)
    returns = EpisodeReturns()
    returns.record(env)
    first = env.get_steps(SPACES_NAME)[0].agent_id.tolist()
    for _ in range(2):
        act(env)
        returns.record(env)
        decision, terminal = env.get_steps(SPACES_NAME)
        assert len(terminal) == 0 and decision.agent_id.tolist() == first
    act(env)
    returns.record(env)
    decision, terminal = env.get_steps(SPACES_NAME)
    assert terminal.agent_id.tolist() == first
    assert terminal.interrupted.tolist() == [truncate]
    assert terminal.obs[0].tolist() == [[3.0]]  # the final observation, not the reset's
    assert terminal.reward.tolist() == [3.0]  # that step's reward
    assert decision.agent_id.tolist() == [first[0] + 1]
    assert decision.obs[0].tolist() == [[0.0]] and decision.reward.tolist() == [0.0]
    assert returns.returns[SPACES_NAME] == [1.0 + 2.0 + 3.0]
    assert returns.interrupted[SPACES_NAME] == [truncate]
    assert len(inner(env).resets) == 2


def test_no_step_lost_or_doubled_with_copies_ending_at_different_times():
    copies, n_steps = 3, 80
    env = gymnasium_env(COUNTING_ID, copies=copies, seed=5)
    name = "agents_learn_tests_Counting-v0?team=0"
    checker = StepChecker(env)
    checker.after_reset()
    id_copy = dict(zip(env.get_steps(name)[0].agent_id.tolist(), range(copies)))
    rows: dict[int, list[float]] = defaultdict(list)  # rewards of every row after the first
    ended: dict[int, list[tuple[float, int, bool]]] = defaultdict(list)
    for _ in range(n_steps):
        act(env)
        checker.after_step()
        decision, terminal = env.get_steps(name)
        for agent_id, reward, interrupted in zip(terminal.agent_id, terminal.reward, terminal.interrupted):
            rows[agent_id].append(reward)
            ended[id_copy[agent_id]].append((sum(rows[agent_id]), len(rows[agent_id]), bool(interrupted)))
        for slot, (agent_id, reward) in enumerate(zip(decision.agent_id, decision.reward)):
            if agent_id in id_copy:
                rows[agent_id].append(reward)
            else:
                id_copy[agent_id] = slot
    lengths = set()
    for i in range(copies):
        counted = inner(env, i)
        assert counted.total == n_steps
        assert [(length, truncated) for _, length, truncated in counted.episodes] == [
            (length, truncated) for _, length, truncated in ended[i]
        ]
        np.testing.assert_allclose([r for r, _, _ in ended[i]], [r for r, _, _ in counted.episodes], rtol=1e-5)
        lengths.add(tuple(length for _, length, _ in counted.episodes))
    assert len(lengths) == copies  # the copies ended at different times
    assert checker.terminals > 10 and 0 < checker.interrupted < checker.terminals


# ---- seeds -----------------------------------------------------------------------------------


def cartpole_observations(seed: int, copies: int = 2, worker_id: int = 0, steps: int = 40) -> list[np.ndarray]:
    env = gymnasium_env("CartPole-v1", copies=copies, seed=seed, worker_id=worker_id)
    seen = [env.get_steps("CartPole-v1?team=0")[0].obs[0].copy()]
    for t in range(steps):
        act(env, discrete=[[t % 3 % 2]] * copies)
        decision, terminal = env.get_steps("CartPole-v1?team=0")
        seen += [decision.obs[0].copy(), terminal.obs[0].copy()]
    env.close()
    return seen


def test_same_seed_same_observations_and_copies_differ():
    a, b = cartpole_observations(3), cartpole_observations(3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert sum(len(x) for x in a[2::2]) > 0  # episodes ended along the way
    assert not np.array_equal(a[0][0], a[0][1])  # copies seeded differently
    assert not np.array_equal(a[0], cartpole_observations(4, steps=0)[0])
    assert not np.array_equal(a[0], cartpole_observations(3, worker_id=1, steps=0)[0])
    # a copy's seed depends on (seed, worker, index), not on the number of copies
    np.testing.assert_array_equal(cartpole_observations(3, copies=1, steps=0)[0][0], a[0][0])


def test_first_reset_seeded_later_resets_not():
    env = spaces_env(copies=2, seed=7, length=1)
    act(env)
    first, second = inner(env, 0).resets, inner(env, 1).resets
    assert first[0]["seed"] is not None and first[0]["seed"] != second[0]["seed"]
    assert [r["seed"] for r in first[1:]] == [None]


# ---- masks -----------------------------------------------------------------------------------


def test_mask_from_info_at_reset_and_step():
    masks = {0: np.array([1, 0, 1], np.int8), 1: np.array([0, 1, 1], np.int8)}
    env = spaces_env(action_space=spaces.Discrete(3), length=5, mask=lambda t: masks[t % 2])
    assert env.get_steps(SPACES_NAME)[0].action_mask[0].tolist() == [[False, True, False]]
    act(env)
    assert env.get_steps(SPACES_NAME)[0].action_mask[0].tolist() == [[True, False, False]]


@pytest.mark.parametrize(
    "mask",
    [(np.array([1, 0]), np.array([0, 1, 1])), np.array([1, 0, 0, 1, 1])],
    ids=["per branch", "flat"],
)
def test_multidiscrete_mask_per_branch_or_flat(mask):
    env = spaces_env(action_space=spaces.MultiDiscrete([2, 3]), mask=lambda t: mask)
    first, second = env.get_steps(SPACES_NAME)[0].action_mask
    assert first.tolist() == [[False, True]] and second.tolist() == [[True, False, False]]


def test_mask_from_dict_observation():
    space = spaces.Dict({"obs": spaces.Box(-1.0, 1.0, (2,), np.float32), "action_mask": spaces.MultiBinary(3)})
    observe = lambda t: {"obs": np.zeros(2, np.float32), "action_mask": np.array([0, 1, t % 2], np.int8)}
    env = spaces_env(observation_space=space, observe=observe, action_space=spaces.Discrete(3), length=10)
    specs = check_gymnasium(SPACES_ID, {"observation_space": space, "action_space": spaces.Discrete(3)})
    assert specs.mask_source == "observation['action_mask']"
    assert [o.shape for o in env.behavior_specs[SPACES_NAME].observation_specs] == [(2,)]
    assert env.get_steps(SPACES_NAME)[0].action_mask[0].tolist() == [[True, False, True]]
    act(env)
    assert env.get_steps(SPACES_NAME)[0].action_mask[0].tolist() == [[True, False, False]]


def test_copies_without_a_mask_mask_nothing():
    env = spaces_env(copies=2, action_space=spaces.Discrete(2), length=10, mask=lambda t: np.array([1, 0]))
    assert env.get_steps(SPACES_NAME)[0].action_mask[0].tolist() == [[False, True], [False, True]]
    plain = spaces_env(action_space=spaces.Discrete(2))
    assert not plain.get_steps(SPACES_NAME)[0].action_mask[0].any()


def test_wrong_size_mask_is_an_error():
    with pytest.raises(
        GymnasiumEnvError, match=r"gymnasium:agents_learn_tests/Spaces-v0: action_mask has 2 entries .* \(3,\) need 3"
    ):
        spaces_env(action_space=spaces.Discrete(3), mask=lambda t: np.array([1, 0]))


# ---- refusals and errors ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (
            {"action_space": spaces.Box(-np.inf, np.inf, (2,), np.float32)},
            r"action 'action' has space Box\(-inf, inf.*infinite bounds",
        ),
        (
            {"action_space": spaces.Box(0, 3, (2,), np.int64)},
            r"action 'action' has space Box\(0, 3, \(2,\), int64\): an integer Box",
        ),
        ({"action_space": spaces.Tuple((spaces.Discrete(2), spaces.Text(4)))}, r"action '1' has space Text\(1, 4"),
        ({"observation_space": spaces.Text(8)}, r"observation 'obs' has space Text\(1, 8"),
        (
            {"observation_space": spaces.Dict({"seq": spaces.Sequence(spaces.Discrete(2))})},
            r"observation 'seq' has space Sequence\(Discrete\(2\)",
        ),
        (
            {"observation_space": spaces.OneOf((spaces.Discrete(2), spaces.Discrete(3)))},
            r"observation 'obs' has space OneOf",
        ),
        (
            {"observation_space": spaces.Dict({"action_mask": spaces.MultiBinary(2)})},
            r"observation space Dict.* has no observation to learn from",
        ),
    ],
)
def test_unsupported_spaces_refused_before_any_step(kwargs, match):
    SpacesEnv.made.clear()
    for attempt in (lambda: check_gymnasium(SPACES_ID, kwargs), lambda: spaces_env(**kwargs)):
        with pytest.raises(GymnasiumEnvError, match=r"^gymnasium:agents_learn_tests/Spaces-v0: " + match):
            attempt()
    assert dict(SpacesEnv.made) == {}


def test_unknown_id():
    with pytest.raises(GymnasiumEnvError, match=r"^gymnasium:NoSuchEnvAtAll-v0: .*NoSuchEnvAtAll"):
        check_gymnasium("NoSuchEnvAtAll-v0")


def test_module_that_does_not_exist():
    with pytest.raises(
        GymnasiumEnvError,
        match=r"gymnasium:agents_learn_no_such_module:X-v0: importing module 'agents_learn_no_such_module' failed \(ModuleNotFoundError",
    ):
        gymnasium_env("agents_learn_no_such_module:X-v0", copies=1, seed=0)


def test_module_that_fails_to_import(tmp_path, monkeypatch):
    (tmp_path / "agents_learn_broken_envs.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        GymnasiumEnvError, match=r"importing module 'agents_learn_broken_envs' failed \(RuntimeError: broken on purpose"
    ):
        check_gymnasium("agents_learn_broken_envs:Broken-v0")


def test_module_colon_id_imports_then_makes(tmp_path, monkeypatch):
    (tmp_path / "agents_learn_more_envs.py").write_text(
        "import gymnasium\n"
        "gymnasium.register('AgentsLearnMore/Tiny-v0', entry_point='gymnasium.envs.classic_control:CartPoleEnv')\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    env = gymnasium_env("agents_learn_more_envs:AgentsLearnMore/Tiny-v0", copies=1, seed=0)
    assert list(env.behavior_specs) == ["AgentsLearnMore_Tiny-v0?team=0"]
    env.close()


def test_bad_kwargs():
    with pytest.raises(
        GymnasiumEnvError, match=r"^gymnasium:CartPole-v1: .*TypeError; check env_kwargs \{'no_such_option': 1\}"
    ):
        check_gymnasium("CartPole-v1", {"no_such_option": 1})


def test_gymnasium_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "gymnasium", None)
    with pytest.raises(
        GymnasiumEnvError,
        match=r"gymnasium:CartPole-v1: gymnasium is not installed; install the extra with `pip install -c constraints.txt -e '\.\[gymnasium\]'`",
    ):
        gymnasium_env("CartPole-v1", copies=1, seed=0)


def test_autoreset_wrapper_refused():
    with pytest.raises(GymnasiumEnvError, match="wrapped in Autoreset"):
        check_gymnasium(AUTORESET_ID)


@pytest.mark.parametrize("kwargs, match", [({"copies": 0}, "copies must be >= 1"), ({"seed": -1}, "seed must be >= 0")])
def test_bad_arguments(kwargs, match):
    with pytest.raises(GymnasiumEnvError, match=match):
        gymnasium_env("CartPole-v1", **{"copies": 1, "seed": 0, **kwargs})


# ---- mlagents_envs semantics end to end ------------------------------------------------------


def test_cartpole_end_to_end():
    env = gymnasium_env("CartPole-v1", copies=2, seed=1)
    assert list(env.behavior_specs) == ["CartPole-v1?team=0"]
    spec = env.behavior_specs["CartPole-v1?team=0"]
    assert [o.shape for o in spec.observation_specs] == [(4,)] and spec.action_spec == ActionSpec(0, (2,))
    decision, terminal = env.get_steps("CartPole-v1?team=0")
    assert len(decision) == 2 and len(terminal) == 0
    with pytest.raises(UnityActionException):
        env.set_actions("CartPole-v1?team=0", ActionTuple(discrete=np.zeros((3, 1), np.int32)))
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(0)
    returns = rollout(env, lambda name, d: random_action(spec, d, rng, respect_masks=True), 150, checker=checker)
    finished = returns.returns["CartPole-v1?team=0"]
    assert len(finished) >= 4 and all(r == int(r) and 8 <= r <= 100 for r in finished)  # +1 per step
    env.reset()
    checker.after_reset()
    decision, terminal = env.get_steps("CartPole-v1?team=0")
    assert len(decision) == 2 and len(terminal) == 0
    env.close()
    with pytest.raises(UnityEnvironmentException):
        env.step()


@pytest.mark.parametrize(
    ("env_id", "steps", "ending"),
    [("CartPole-v1", 600, "terminated"), ("Pendulum-v1", 600, "truncated"), ("Hopper-v5", 1500, "terminated")],
    ids=["terminates", "truncates", "mujoco"],
)
def test_rows_are_gymnasiums_own_steps_with_the_same_seed_and_actions(env_id, steps, ending):
    """One copy, random actions, against ``gymnasium.make`` stepped by hand with the copy's seed:
    every decision row, terminal row and reset observation is the environment's own (float32),
    ``terminated`` a terminal row, ``truncated`` an interrupted one. (The Hopper-v5 SAC runs
    against Stable-Baselines3 take this path.)"""
    env = gymnasium_env(env_id, copies=1, seed=11)
    name = f"{env_id}?team=0"
    spec = env.behavior_specs[name]
    reference = gymnasium.make(env_id)
    obs, _ = reference.reset(seed=copy_seeds(11, 0, 1)[0])
    np.testing.assert_array_equal(env.get_steps(name)[0].obs[0][0], obs.astype(np.float32))
    rng = np.random.default_rng(0)
    ends = {"terminated": 0, "truncated": 0}
    for _ in range(steps):
        if spec.action_spec.continuous_size:
            action = rng.uniform(-1, 1, (1, spec.action_spec.continuous_size)).astype(np.float32)
            env.set_actions(name, ActionTuple(continuous=action))
            low, high = reference.action_space.low.astype(np.float64), reference.action_space.high.astype(np.float64)
            mapped = low + (action[0].astype(np.float64) + 1.0) / 2.0 * (high - low)  # the documented map
            obs, reward, terminated, truncated, _ = reference.step(mapped.astype(np.float32))
        else:
            action = rng.integers(0, 2, (1, 1)).astype(np.int32)
            env.set_actions(name, ActionTuple(discrete=action))
            obs, reward, terminated, truncated, _ = reference.step(int(action[0, 0]))
        env.step()
        decision, terminal = env.get_steps(name)
        if terminated or truncated:
            ends["terminated" if terminated else "truncated"] += 1
            assert terminal.interrupted.tolist() == [not terminated]
            np.testing.assert_array_equal(terminal.obs[0][0], obs.astype(np.float32))
            assert terminal.reward[0] == np.float32(reward)
            obs, _ = reference.reset()
            assert decision.reward.tolist() == [0.0]
        else:
            assert len(terminal) == 0 and decision.reward[0] == np.float32(reward)
        np.testing.assert_array_equal(decision.obs[0][0], obs.astype(np.float32))
    env.close()
    reference.close()
    assert ends[ending] >= 3, ends


def test_reset_gives_fresh_ids_and_close_closes_every_copy():
    env = spaces_env(copies=2, length=10)
    before = env.get_steps(SPACES_NAME)[0].agent_id.tolist()
    act(env)
    env.reset()
    decision, terminal = env.get_steps(SPACES_NAME)
    assert len(terminal) == 0 and set(decision.agent_id.tolist()).isdisjoint(before)
    assert decision.obs[0].tolist() == [[0.0], [0.0]]
    env.close()
    env.close()
    assert all(inner(env, i).closed for i in range(2))


def test_environment_parameters_reach_reset_options():
    env = spaces_env(length=1)
    env.set_env_parameter_value("gravity", ParameterValue.constant(2.5))
    act(env)  # the episode ends: the copy resets with the parameter
    env.set_env_parameter_value("wind", ParameterValue(ParameterKind.UNIFORM, (0.0, 1.0), seed=3))
    env.reset()
    resets = inner(env).resets
    assert resets[0]["options"] is None
    assert resets[1]["options"] == {"gravity": 2.5}
    assert resets[2]["options"]["gravity"] == 2.5 and 0.0 <= resets[2]["options"]["wind"] <= 1.0


def test_check_reports_specs_and_sources():
    specs = check_gymnasium("CartPole-v1")
    assert specs.behavior_name == "CartPole-v1?team=0"
    assert [(s.path, s.mapping) for s in specs.observations] == [("obs", "vector")]
    assert specs.behavior_spec.action_spec == ActionSpec(0, (2,))
    assert specs.mask_source == "info['action_mask'] when present"
