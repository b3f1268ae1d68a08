"""PettingZoo environments as a BaseEnv (envs.pettingzoo): behavior naming and teams, parallel
episodes (leaving, joining, resets), turn-based AEC play (turns, masks, rewards between turns),
groups, seeds and errors, on tiny environments defined here, MPE's simple_spread and classic
connect_four."""

from __future__ import annotations

import sys
import types
from collections import defaultdict
from typing import Any

import numpy as np
import pytest
from gymnasium import spaces
from mlagents_envs.base_env import ActionTuple, BaseEnv, DecisionSteps
from pettingzoo.utils import AgentSelector
from pettingzoo.utils.env import AECEnv, ParallelEnv

from envs.builtin.checks import StepChecker, random_action, rollout
from envs.pettingzoo import Api, PettingZooEnvError, check_pettingzoo, pettingzoo_env
from envs.pettingzoo.environment import first_seed
from envs.pettingzoo.roster import behavior_base

# connect_four_v3 warns at import that PettingZoo prefers its registry; we import by module path.
pytestmark = pytest.mark.filterwarnings("ignore:The old environment creation API:DeprecationWarning")

SPREAD = "mpe2.simple_spread_v3"
CONNECT_FOUR = "pettingzoo.classic.connect_four_v3"
WALKERS = "agents_learn_pz_walkers"
TURNS = "agents_learn_pz_turns"


class WalkersEnv(ParallelEnv):
    """walker_0..2 start; at step t (1, 2, ...) walker i gets reward 10 * i + t and observes
    [i, t] (reset: [i, 0]). Step 1: walker_3 joins. Step 2: walker_1 terminates. Step 3:
    walker_2 is truncated. Step 4: walker_0 terminates and walker_3 vanishes from ``agents``
    without a flag or an observation (but with its reward): nobody is left. Records the actions
    and reset arguments it receives; ``spaces`` overrides an agent's (observation, action) spaces;
    ``mask`` goes into every info as ``action_mask``."""

    metadata = {"name": "walkers"}

    def __init__(self, spaces_of: dict[str, tuple[spaces.Space, spaces.Space]] | None = None, mask: Any = None):
        self.possible_agents = [f"walker_{i}" for i in range(4)]
        self.agents: list[str] = []
        self.spaces_of = spaces_of or {}
        self.mask = mask
        self.actions: list[dict[str, Any]] = []
        self.resets: list[dict[str, Any]] = []
        self.closed = False
        self.t = 0

    def observation_space(self, agent):
        return self.spaces_of.get(agent, (spaces.Box(-np.inf, np.inf, (2,), np.float32), None))[0]

    def action_space(self, agent):
        return self.spaces_of.get(agent, (None, spaces.Discrete(3)))[1]

    def reset(self, seed=None, options=None):
        self.resets.append({"seed": seed, "options": options})
        self.t = 0
        self.agents = ["walker_0", "walker_1", "walker_2"]
        return {a: self._obs(a) for a in self.agents}, {a: self._info() for a in self.agents}

    def step(self, actions):
        self.actions.append(dict(actions))
        self.t = t = self.t + 1
        rewards = {a: float(10 * int(a[-1]) + t) for a in self.agents}
        terminations = dict.fromkeys(self.agents, False)
        truncations = dict.fromkeys(self.agents, False)
        leaving: list[str] = []
        if t == 1:
            self.agents.append("walker_3")
        if t == 2:
            terminations["walker_1"] = True
            leaving.append("walker_1")
        if t == 3:
            truncations["walker_2"] = True
            leaving.append("walker_2")
        if t == 4:
            terminations["walker_0"] = True
            leaving.append("walker_0")
            self.agents.remove("walker_3")
            del terminations["walker_3"], truncations["walker_3"]
        obs = {a: self._obs(a) for a in self.agents}
        infos = {a: self._info() for a in self.agents}
        self.agents = [a for a in self.agents if a not in leaving]
        return obs, rewards, terminations, truncations, infos

    def close(self):
        self.closed = True

    def _obs(self, agent: str) -> np.ndarray:
        return np.array([int(agent[-1]), self.t], dtype=np.float32)

    def _info(self) -> dict[str, Any]:
        return {} if self.mask is None else {"action_mask": np.asarray(self.mask)}


class TurnsEnv(AECEnv):
    """seat_0, seat_1, seat_2 take turns. At turn n (1, 2, ...) every seat j receives reward
    100 * n + j (PettingZoo style: the mover's ``_cumulative_rewards`` restart at its move, so
    ``last()`` gives each seat what it got since it last moved). After ``turns`` turns the game
    ends for all (terminated, or truncated with ``truncate``). A seat observes [j, n]; the only
    legal action at turn n is n % 3 (``info["action_mask"]``); moves are recorded."""

    metadata = {"name": "turns", "is_parallelizable": False}

    def __init__(self, turns: int = 7, truncate: bool = False):
        super().__init__()
        self.possible_agents = ["seat_0", "seat_1", "seat_2"]
        self.turns = turns
        self.truncate = truncate
        self.moves: list[tuple[str, int]] = []
        self.resets: list[dict[str, Any]] = []
        self.closed = False

    def observation_space(self, agent):
        return spaces.Box(-np.inf, np.inf, (2,), np.float32)

    def action_space(self, agent):
        return spaces.Discrete(3)

    def reset(self, seed=None, options=None):
        self.resets.append({"seed": seed, "options": options})
        self.agents = list(self.possible_agents)
        self.n = 0
        self.rewards = dict.fromkeys(self.agents, 0.0)
        self._cumulative_rewards = dict.fromkeys(self.agents, 0.0)
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {"action_mask": self._mask()} for a in self.agents}
        self._selector = AgentSelector(self.agents)
        self.agent_selection = self._selector.reset()

    def observe(self, agent):
        return np.array([self.possible_agents.index(agent), self.n], dtype=np.float32)

    def step(self, action):
        if self.terminations[self.agent_selection] or self.truncations[self.agent_selection]:
            self._was_dead_step(action)
            return
        mover = self.agent_selection
        self._cumulative_rewards[mover] = 0.0
        self.n += 1
        self.moves.append((mover, int(action)))
        self.rewards = {a: 100.0 * self.n + self.possible_agents.index(a) for a in self.agents}
        if self.n >= self.turns:
            flags = self.truncations if self.truncate else self.terminations
            flags.update(dict.fromkeys(self.agents, True))
        self.infos = {a: {"action_mask": self._mask()} for a in self.agents}
        self.agent_selection = self._selector.next()
        self._accumulate_rewards()

    def close(self):
        self.closed = True

    def _mask(self) -> np.ndarray:
        mask = np.zeros(3, dtype=np.int8)
        mask[(self.n + 1) % 3] = 1  # the legal action of the coming turn
        return mask


def _module(monkeypatch, name: str, **factories: Any) -> types.ModuleType:
    """A PettingZoo-style environment module ``name`` with the given factories, importable."""
    module = types.ModuleType(name)
    for key, factory in factories.items():
        setattr(module, key, factory)
    monkeypatch.setitem(sys.modules, name, module)
    return module


@pytest.fixture
def walkers(monkeypatch) -> list[WalkersEnv]:
    """Registers module WALKERS (parallel_env -> a WalkersEnv); lists the envs it made."""
    made: list[WalkersEnv] = []

    def parallel_env(**kwargs):
        made.append(WalkersEnv(**kwargs))
        return made[-1]

    _module(monkeypatch, WALKERS, parallel_env=parallel_env)
    return made


@pytest.fixture
def turns(monkeypatch) -> list[TurnsEnv]:
    """Registers module TURNS (env -> a TurnsEnv); lists the envs it made."""
    made: list[TurnsEnv] = []

    def env(**kwargs):
        made.append(TurnsEnv(**kwargs))
        return made[-1]

    _module(monkeypatch, TURNS, env=env)
    return made


def _first_legal(spec, decision: DecisionSteps) -> ActionTuple:
    """The first action each row's mask leaves available."""
    action = spec.action_spec.empty_action(len(decision))
    if decision.action_mask is not None:
        for branch, mask in enumerate(decision.action_mask):
            action.discrete[:, branch] = (~mask).argmax(axis=1)
    return action


def _act_all(env: BaseEnv, choose=_first_legal) -> None:
    for name, spec in env.behavior_specs.items():
        decision, _ = env.get_steps(name)
        env.set_actions(name, choose(spec, decision))


# ---- behaviors and teams ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "base"),
    [
        ("piston_3", "piston"),
        ("agent_0", "agent"),
        ("adversary_1", "adversary"),
        ("solo", "solo"),
        ("a b_2", "a_b"),
        ("x_1_12", "x_1"),
    ],
)
def test_behavior_of_an_agent_name(agent, base):
    assert behavior_base(agent) == base


def test_simple_spread_is_one_behavior_of_three_agents():
    specs = check_pettingzoo(SPREAD)
    assert specs.api is Api.PARALLEL
    [behavior] = specs.behaviors
    assert behavior.behavior_name == "agent?team=0"
    assert behavior.agents == ("agent_0", "agent_1", "agent_2")
    assert behavior.behavior_spec.action_spec.discrete_branches == (5,)
    assert [o.shape for o in behavior.behavior_spec.observation_specs] == [(18,)]


def test_connect_four_is_two_teams_of_one_player_each():
    specs = check_pettingzoo(CONNECT_FOUR)
    assert specs.api is Api.AEC
    assert [(b.behavior_name, b.agents) for b in specs.behaviors] == [
        ("player?team=0", ("player_0",)),
        ("player?team=1", ("player_1",)),
    ]
    first, second = specs.behaviors
    assert first.behavior_spec == second.behavior_spec
    assert [o.path for o in first.observations] == ["observation"]  # action_mask is the mask, not an observation
    assert first.mask_source == "observation['action_mask']"


def test_turn_based_game_of_three_is_one_behavior(turns):
    [behavior] = check_pettingzoo(TURNS).behaviors
    assert (behavior.behavior_name, behavior.agents) == ("seat?team=0", ("seat_0", "seat_1", "seat_2"))


@pytest.mark.parametrize(("parallelizable", "api"), [(True, Api.PARALLEL), (False, Api.AEC), (None, Api.AEC)])
def test_module_with_both_apis_chooses_by_is_parallelizable(monkeypatch, parallelizable, api):
    def env():
        made = TurnsEnv()
        made.metadata = {} if parallelizable is None else {"is_parallelizable": parallelizable}
        return made

    _module(monkeypatch, "agents_learn_pz_both", env=env, parallel_env=WalkersEnv)
    specs = check_pettingzoo("agents_learn_pz_both")
    assert specs.api is api
    assert specs.behaviors[0].behavior_name == ("walker?team=0" if api is Api.PARALLEL else "seat?team=0")


# ---- parallel API -------------------------------------------------------------------------


def test_parallel_agents_leave_join_and_the_episode_restarts(walkers):
    """Every row of WalkersEnv's episode, by agent: rewards, interrupted flags, final
    observations, fresh ids after the reset, and the actions that reached the environment."""
    env = pettingzoo_env(WALKERS, seed=0)
    checker = StepChecker(env)
    checker.after_reset()
    name = "walker?team=0"
    rows: dict[int, list[tuple[str, float, list[float], bool | None]]] = defaultdict(list)
    owner: dict[int, int] = {}

    def record():
        decision, terminal = env.get_steps(name)
        for i, agent_id in enumerate(terminal.agent_id.tolist()):
            rows[agent_id].append(
                ("end", float(terminal.reward[i]), terminal.obs[0][i].tolist(), bool(terminal.interrupted[i]))
            )
        for i, agent_id in enumerate(decision.agent_id.tolist()):
            owner.setdefault(agent_id, int(decision.obs[0][i][0]))
            rows[agent_id].append(("decide", float(decision.reward[i]), decision.obs[0][i].tolist(), None))

    record()
    sent = []
    for _ in range(4):
        decision, _ = env.get_steps(name)
        choice = (decision.obs[0][:, 0] + decision.obs[0][:, 1]).astype(np.int32) % 3  # walker + t
        sent.append({f"walker_{int(w)}": int(c) for w, c in zip(decision.obs[0][:, 0], choice)})
        env.set_actions(name, ActionTuple(discrete=choice[:, None]))
        env.step()
        checker.after_step()
        record()

    made = walkers[0]
    assert made.actions == sent
    assert [sorted(step) for step in made.actions] == [
        ["walker_0", "walker_1", "walker_2"],
        ["walker_0", "walker_1", "walker_2", "walker_3"],
        ["walker_0", "walker_2", "walker_3"],
        ["walker_0", "walker_3"],
    ]
    first = {walker: agent_id for agent_id, walker in owner.items() if agent_id < 4}
    assert rows[first[0]] == [
        ("decide", 0.0, [0, 0], None),
        ("decide", 1.0, [0, 1], None),
        ("decide", 2.0, [0, 2], None),
        ("decide", 3.0, [0, 3], None),
        ("end", 4.0, [0, 4], False),
    ]
    assert rows[first[1]] == [
        ("decide", 0.0, [1, 0], None),
        ("decide", 11.0, [1, 1], None),
        ("end", 12.0, [1, 2], False),
    ]
    assert rows[first[2]] == [
        ("decide", 0.0, [2, 0], None),
        ("decide", 21.0, [2, 1], None),
        ("decide", 22.0, [2, 2], None),
        ("end", 23.0, [2, 3], True),
    ]
    # walker_3 joined at step 1 (its first row), vanished at step 4: last observation, terminated
    assert rows[first[3]] == [
        ("decide", 0.0, [3, 1], None),
        ("decide", 32.0, [3, 2], None),
        ("decide", 33.0, [3, 3], None),
        ("end", 34.0, [3, 3], False),
    ]
    # nobody left after step 4: reset in the same step, walkers 0..2 back with fresh ids
    decision, terminal = env.get_steps(name)
    assert len(terminal) == 2 and len(decision) == 3
    assert decision.obs[0].tolist() == [[0, 0], [1, 0], [2, 0]]
    assert decision.reward.tolist() == [0.0, 0.0, 0.0]
    assert set(decision.agent_id.tolist()).isdisjoint(first.values())
    assert len(made.resets) == 2
    env.close()
    assert made.closed


def test_parallel_mask_from_info(walkers):
    env = pettingzoo_env(WALKERS, seed=0, env_kwargs={"mask": [1, 0, 1]})
    decision, _ = env.get_steps("walker?team=0")
    assert decision.action_mask[0].tolist() == [[False, True, False]] * 3
    env.close()


def test_simple_spread_follows_the_base_env_contract():
    """25-step episodes (max_cycles) end truncated for all three agents at once, then restart."""
    env = pettingzoo_env(SPREAD, seed=3)
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(0)
    returns = rollout(
        env, lambda name, d: random_action(env.behavior_specs[name], d, rng, respect_masks=True), 50, checker=checker
    )
    assert checker.terminals == checker.interrupted == 6
    assert len(returns.returns["agent?team=0"]) == 6
    assert checker.decisions == 3 + 50 * 3
    env.close()


def test_same_seed_same_run_and_workers_differ():
    def first_obs(seed: int, worker_id: int) -> np.ndarray:
        env = pettingzoo_env(SPREAD, seed=seed, worker_id=worker_id)
        _act_all(env)
        env.step()
        obs = env.get_steps("agent?team=0")[0].obs[0]
        env.close()
        return obs

    assert np.array_equal(first_obs(5, 0), first_obs(5, 0))
    assert not np.array_equal(first_obs(5, 0), first_obs(5, 1))
    assert not np.array_equal(first_obs(5, 0), first_obs(6, 0))


def test_first_reset_seeded_later_resets_not_and_parameters_as_options(walkers):
    env = pettingzoo_env(WALKERS, seed=7, worker_id=2, env_parameters={"speed": 2.5})
    for _ in range(4):
        _act_all(env)
        env.step()
    env.reset()
    assert walkers[0].resets == [
        {"seed": first_seed(7, 2), "options": {"speed": 2.5}},
        {"seed": None, "options": {"speed": 2.5}},
        {"seed": None, "options": {"speed": 2.5}},
    ]
    env.close()


def test_no_parameters_no_options(walkers):
    pettingzoo_env(WALKERS, seed=0).close()
    assert walkers[0].resets == [{"seed": first_seed(0, 0), "options": None}]


# ---- AEC API ------------------------------------------------------------------------------


def test_aec_only_the_agent_to_move_decides_and_rewards_between_turns_arrive_with_its_next_row(turns):
    """Seven turns of TurnsEnv; seat j's rows carry 100 * n + j summed over the turns n since
    its previous row (hand-computed below), the last ones with its terminal row."""
    env = pettingzoo_env(TURNS, seed=0)
    checker = StepChecker(env)
    checker.after_reset()
    name = "seat?team=0"
    rows: dict[int, list[tuple[str, float]]] = defaultdict(list)
    movers = []

    def record():
        decision, terminal = env.get_steps(name)
        for agent_id, reward in zip(terminal.agent_id.tolist(), terminal.reward.tolist()):
            rows[agent_id].append(("end", reward))
        for agent_id, reward in zip(decision.agent_id.tolist(), decision.reward.tolist()):
            rows[agent_id].append(("decide", reward))

    record()
    for _ in range(7):
        decision, _ = env.get_steps(name)
        assert len(decision) == 1  # one seat moves at a time
        movers.append(int(decision.obs[0][0, 0]))
        env.set_actions(name, _first_legal(env.behavior_specs[name], decision))
        env.step()
        checker.after_step()
        record()

    made = turns[0]
    assert movers == [0, 1, 2, 0, 1, 2, 0]
    assert made.moves == [(f"seat_{m}", n % 3) for n, m in enumerate(movers, start=1)]  # masks obeyed
    seat_0, seat_1, seat_2 = 0, 1, 2  # ids in order of first decision
    assert rows[seat_0] == [("decide", 0.0), ("decide", 600.0), ("decide", 1500.0), ("end", 700.0)]
    assert rows[seat_1] == [("decide", 101.0), ("decide", 903.0), ("end", 1803.0)]
    assert rows[seat_2] == [("decide", 304.0), ("decide", 1206.0), ("end", 1304.0)]
    # the game is over: reset in the same step, seat_0 moves first under a fresh id
    decision, terminal = env.get_steps(name)
    assert sorted(terminal.agent_id.tolist()) == [0, 1, 2]
    assert terminal.interrupted.tolist() == [False, False, False]
    assert decision.agent_id.tolist() == [3] and decision.obs[0].tolist() == [[0.0, 0.0]]
    assert len(made.resets) == 2
    env.close()
    assert made.closed


def test_aec_truncated_game_ends_interrupted(turns):
    env = pettingzoo_env(TURNS, seed=0, env_kwargs={"turns": 2, "truncate": True})
    for _ in range(2):
        _act_all(env)
        env.step()
    _, terminal = env.get_steps("seat?team=0")
    assert terminal.interrupted.tolist() == [True, True]  # seat_2 never moved: it reports nothing
    env.close()


def test_aec_mask_from_info(turns):
    env = pettingzoo_env(TURNS, seed=0)
    decision, _ = env.get_steps("seat?team=0")
    assert decision.action_mask[0].tolist() == [[True, False, True]]  # turn 1: only action 1
    env.close()


def test_connect_four_full_game_with_random_legal_moves():
    """Random legal moves until a game ends: only the player to move decides, its mask is the
    board's open columns, and the terminal rows carry +1 for the last mover and -1 for the
    other (0 and 0 for a draw); the next game starts in the same step."""
    env = pettingzoo_env(CONNECT_FOUR, seed=1)
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(1)
    board = env.env.unwrapped
    teams = ["player?team=0", "player?team=1"]
    moves = 0
    while True:
        mover = teams[moves % 2]
        assert list(env.behavior_specs) == (teams[:1] if moves == 0 else teams)
        decision, _ = env.get_steps(mover)
        assert len(decision) == 1
        assert decision.action_mask[0][0].tolist() == [cell != 0 for cell in board.board[:7]]
        other = teams[(moves + 1) % 2]
        if moves > 0:
            assert len(env.get_steps(other)[0]) == 0
        env.set_actions(mover, random_action(env.behavior_specs[mover], decision, rng, respect_masks=True))
        env.step()
        checker.after_step()
        moves += 1
        if len(env.get_steps(mover)[1]):
            break
    mover_end, other_end = env.get_steps(mover)[1], env.get_steps(other)[1]
    if moves == 42 and mover_end.reward[0] == 0:
        assert other_end.reward.tolist() == [0.0]
    else:
        assert (mover_end.reward.tolist(), other_end.reward.tolist()) == ([1.0], [-1.0])
    assert (mover_end.interrupted.tolist(), other_end.interrupted.tolist()) == ([False], [False])
    next_game = env.get_steps(teams[0])[0]
    assert len(next_game) == 1 and next_game.obs[0].sum() == 0  # empty board, fresh id
    assert next_game.agent_id[0] not in (mover_end.agent_id[0], other_end.agent_id[0])
    env.close()


def test_connect_four_games_are_zero_sum():
    env = pettingzoo_env(CONNECT_FOUR, seed=2)
    checker = StepChecker(env)
    checker.after_reset()
    rng = np.random.default_rng(2)
    returns = rollout(
        env, lambda name, d: random_action(env.behavior_specs[name], d, rng, respect_masks=True), 150, checker=checker
    )
    first, second = returns.returns["player?team=0"], returns.returns["player?team=1"]
    assert len(first) == len(second) >= 3
    assert np.add(first, second).tolist() == [0.0] * len(first)
    assert set(first) <= {-1.0, 0.0, 1.0}
    env.close()


# ---- groups -------------------------------------------------------------------------------


def test_parallel_groups_share_the_mean_reward(walkers):
    """Step rewards (10 i + t) of the agents acting: step 1 walkers 0-2 (mean 11), step 2
    walkers 0-3 (mean 17), step 3 walkers 0, 2, 3 (59 / 3), step 4 walkers 0, 3 (mean 19);
    walker_3 joins after step 1's rewards."""
    env = pettingzoo_env(WALKERS, seed=0, groups=True)
    name = "walker?team=0"
    group_rows: dict[int, list[float]] = defaultdict(list)
    for step in range(5):
        decision, terminal = env.get_steps(name)
        for steps in (terminal, decision):
            assert steps.group_id.tolist() == [1] * len(steps)
            assert steps.reward.tolist() == [0.0] * len(steps)
        for walker, group_reward in zip(terminal.obs[0][:, 0].tolist(), terminal.group_reward.tolist()):
            group_rows[int(walker)].append(group_reward)
        if step < 4:
            for walker, group_reward in zip(decision.obs[0][:, 0].tolist(), decision.group_reward.tolist()):
                group_rows[int(walker)].append(group_reward)
            _act_all(env)
            env.step()
    assert group_rows[0] == pytest.approx([0, 11, 17, 59 / 3, 19])
    assert group_rows[1] == pytest.approx([0, 11, 17])
    assert group_rows[2] == pytest.approx([0, 11, 17, 59 / 3])
    assert group_rows[3] == pytest.approx([0, 17, 59 / 3, 19])
    env.close()


def test_aec_groups_give_every_agent_the_mean_return(turns):
    """Seven turns give 8421 in all (3 seats x 100 n + j): each seat's group rewards add up to
    8421 / 3, its own rewards to 0."""
    env = pettingzoo_env(TURNS, seed=0, groups=True)
    own: dict[int, float] = defaultdict(float)
    group: dict[int, float] = defaultdict(float)

    def record():
        for steps in env.get_steps("seat?team=0"):
            assert steps.group_id.tolist() == [1] * len(steps)
            for agent_id, reward, group_reward in zip(
                steps.agent_id.tolist(), steps.reward.tolist(), steps.group_reward.tolist()
            ):
                own[agent_id] += reward
                group[agent_id] += group_reward

    record()
    for _ in range(7):
        _act_all(env)
        env.step()
        record()
    assert {i: own[i] for i in range(3)} == {0: 0.0, 1: 0.0, 2: 0.0}
    assert [group[i] for i in range(3)] == pytest.approx([2807.0] * 3)
    env.close()


def test_groups_refused_for_two_player_games():
    with pytest.raises(
        PettingZooEnvError, match=r"^pettingzoo:pettingzoo\.classic\.connect_four_v3: groups=True .* opponents"
    ):
        pettingzoo_env(CONNECT_FOUR, seed=0, groups=True)


def test_without_groups_no_group_ids(walkers):
    env = pettingzoo_env(WALKERS, seed=0)
    decision, _ = env.get_steps("walker?team=0")
    assert decision.group_id.tolist() == [0, 0, 0]
    env.close()


# ---- errors -------------------------------------------------------------------------------


def test_module_that_does_not_exist():
    with pytest.raises(
        PettingZooEnvError,
        match=r"^pettingzoo:agents_learn_no_such_pz_module: importing module 'agents_learn_no_such_pz_module' failed \(ModuleNotFoundError",
    ):
        pettingzoo_env("agents_learn_no_such_pz_module", seed=0)


def test_module_that_fails_to_import(tmp_path, monkeypatch):
    (tmp_path / "agents_learn_broken_pz.py").write_text("raise RuntimeError('broken on purpose')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(
        PettingZooEnvError, match=r"importing module 'agents_learn_broken_pz' failed \(RuntimeError: broken on purpose"
    ):
        check_pettingzoo("agents_learn_broken_pz")


def test_module_without_env_or_parallel_env(monkeypatch):
    _module(monkeypatch, "agents_learn_pz_empty", raw_env=TurnsEnv)
    with pytest.raises(
        PettingZooEnvError, match=r"^pettingzoo:agents_learn_pz_empty: .*neither `parallel_env` nor `env`"
    ):
        check_pettingzoo("agents_learn_pz_empty")


def test_factory_returning_something_else(monkeypatch):
    _module(monkeypatch, "agents_learn_pz_odd", parallel_env=lambda: object())
    with pytest.raises(PettingZooEnvError, match=r"parallel_env\(\) returned object, not a pettingzoo ParallelEnv"):
        check_pettingzoo("agents_learn_pz_odd")


def test_bad_kwargs():
    with pytest.raises(
        PettingZooEnvError,
        match=r"^pettingzoo:mpe2\.simple_spread_v3: .*TypeError; check env_kwargs \{'no_such_option': 1\}",
    ):
        check_pettingzoo(SPREAD, {"no_such_option": 1})


def test_mismatched_spaces_within_a_behavior(walkers):
    odd = {"walker_2": (spaces.Box(-1.0, 1.0, (5,), np.float32), spaces.Discrete(3))}
    with pytest.raises(
        PettingZooEnvError,
        match=r"^pettingzoo:agents_learn_pz_walkers: agents 'walker_0' and 'walker_2' are both behavior 'walker' .*different observation spaces",
    ):
        pettingzoo_env(WALKERS, seed=0, env_kwargs={"spaces_of": odd})
    assert walkers[0].closed


def test_unmappable_space_names_the_agent(walkers):
    text = {f"walker_{i}": (spaces.Text(5), spaces.Discrete(3)) for i in range(4)}
    with pytest.raises(
        PettingZooEnvError, match=r"^pettingzoo:agents_learn_pz_walkers: agent 'walker_0': observation .*Text"
    ):
        check_pettingzoo(WALKERS, {"spaces_of": text})


def test_pettingzoo_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "pettingzoo", None)
    with pytest.raises(
        PettingZooEnvError,
        match=r"^pettingzoo:mpe2\.simple_spread_v3: pettingzoo is not installed; install the extra with `pip install -c constraints.txt -e '\.\[pettingzoo\]'`",
    ):
        pettingzoo_env(SPREAD, seed=0)


@pytest.mark.parametrize(
    ("kwargs", "match"), [({"seed": -1}, "seed must be >= 0"), ({"worker_id": -1}, "worker_id must be >= 0")]
)
def test_bad_arguments(walkers, kwargs, match):
    with pytest.raises(PettingZooEnvError, match=match):
        pettingzoo_env(WALKERS, **{"seed": 0, **kwargs})
    assert walkers == []
