"""Simple: ML-Agents' learning-test environment (``SimpleEnvironment`` of its trainer tests),
with continuous, discrete or hybrid actions (1 agent per area by default) and vector, visual
and/or variable-length observations; optionally its ``MemoryEnvironment`` and goal-signal
variants, two teams (its ghost tests) and agent groups (its ``MultiAgentEnvironment``).

Each agent sees a goal, -1 or +1 (drawn at every episode start): by default as one float; in
general as ``num_vector`` vector observations of ``vec_obs_size`` floats, then ``num_visual``
visual observations of shape ``vis_obs_size`` (H, W, C), then ``num_var_len`` variable-length
observations of shape ``var_len_obs_size`` (max_entities, entity_size), every value equal to
the goal (as ML-Agents' ``_make_obs``: ones * goal, so images hold -1 too, not a camera's
[0, 1], and every entity row of a variable-length observation is present). The order and the
specs are those of ML-Agents' test envs: variable-length ones have ``dimension_property``
(VARIABLE_SIZE, NONE), as Unity's BufferSensor sends. It has one position per action
dimension (``continuous_size`` continuous dimensions, then ``discrete_branches`` branches of
2), each starting at 0 and clamped to [-1, 1]. Each decision moves every position: a
continuous action by its value, a discrete one by +1 (choice 1) or -1 (choice 0), each move
clamped to [-step_size, step_size]. The episode ends when every position sits at an end (+-1);
then the reward is ``1.06 * mean_i(position_i * goal)`` (+1.06 when all reached the goal's end,
-1.06 when all reached the other), before that every decision costs -0.01. As in ML-Agents,
there is no episode length limit (``max_step`` 0) unless one is given, in which case the
episode is interrupted after that many decisions.

With ML-Agents' hybrid test settings (``step_size`` 0.8) the best return is 1.06 - 0.01 = 1.05
(two decisions); ML-Agents' tests pass when the mean of the last 5 returns exceeds 0.9.

``memory`` (ML-Agents' ``MemoryEnvironment``, used by its test_recurrent_ppo/sac): the goal is
shown only while ``decisions * action_dimensions <= 2`` (ML-Agents counts ``step_count`` once
per action dimension per decision, and shows the goal while it is <= ``num_show_steps`` = 2);
after that every observation holds 0. With one action dimension the goal is in the first three
observations (after reset and after decisions 1 and 2), with two only in the first two; a
terminal observation shows it by the same rule. At the default ``step_size`` 0.2 the agent
needs 5 decisions, so it must remember the goal for the last two; a policy without memory acts
the same whatever the goal on those, so it cannot reach both ends in the minimum time.
(ML-Agents' MemoryEnvironment has the usual single vector float; here the option applies to
whatever observations are configured, all holding 0 once hidden, so a hidden variable-length
observation has every row zero, i.e. no entity present.)

``goal_indices`` (ML-Agents' SimpleEnvironment ``goal_indices``): the observations at these
indices (counted over vector, visual, variable-length, in that order) are typed
``ObservationType.GOAL_SIGNAL``, the rest DEFAULT. As in ML-Agents only the type changes: the
contents are unchanged, so the goal is in the goal observation and in every other one too.

``num_teams`` 2 (ML-Agents' test_simple_ghost, which builds ``SimpleEnvironment(["Simple?team=0",
"Simple?team=1"])``): two behavior ids of one behavior name, ``Simple?team=0`` and
``Simple?team=1``, with the same spec; each has its own agents in every area, each solving its
own independent task exactly as above (nothing is shared: the teams are rivals only through a
self-play trainer, which reads a positive final reward as a win). With ``asymmetric`` (ML-Agents'
test_simple_asymm_ghost: ``["Simple?team=0", "SimpleOpp?team=1"]``) team 1's behavior is
``SimpleOpp?team=1``, a second behavior name. Team 0's agents take their ids first.

``num_agents`` N > 1 (ML-Agents' ``MultiAgentEnvironment``, used by its test_simple_poca,
test_visual_poca, test_recurrent_poca): every area holds N agents in one group (group id
``1 + team * num_areas + area``: nonzero, distinct per area and team), each with its own goal
and positions as above; a running agent's decisions cost -0.01 (individual reward), group
reward 0. An agent that finishes while others of its group still run gets a TerminalStep (not
interrupted) with reward ``min(-0.01, r)``, r its finishing reward ``1.06 * mean(pos * goal)``,
and group reward 0, and leaves (no more decisions). The last agent to finish gets a TerminalStep
with reward 0 and group reward r; then the whole group restarts on the same step (fresh ids,
new goals, positions 0). Agents finishing on the same step leave in slot order, so the one in
the highest slot is the last (ML-Agents steps its agents in order). ``max_step`` (absent from
ML-Agents' version) interrupts every agent still running (interrupted, reward -0.01, group
reward 0) and restarts the group; agents that finish on that step leave as above. Decision and
terminal rows list agents in slot order (an area's slots are consecutive).

Constructor options (or environment parameters of the same names given at construction: the
specs cannot change later, so every parameter is read once, at construction, a sampler drawing
once then, and values sent later are ignored): ``continuous_size`` (1), ``discrete_branches`` (0),
``step_size`` (0.2), ``max_step`` (0), ``num_vector`` (1), ``vec_obs_size`` (1),
``num_visual`` (0), ``vis_obs_size`` ((20, 20, 3), ML-Agents' VIS_OBS_SIZE), ``num_var_len``
(0), ``var_len_obs_size`` ((10, 5), ML-Agents' VAR_LEN_SIZE), ``memory`` (off; 0 or 1 as a
parameter), ``goal_indices`` (none). An environment parameter is one float, so
``vis_obs_size`` comes from three: ``vis_obs_height``, ``vis_obs_width``,
``vis_obs_channels``, ``var_len_obs_size`` from two: ``var_len_max_entities``,
``var_len_entity_size`` (each defaulting to its part of the default size; all ignored when the
constructor gets the tuple), and ``goal_indices`` from ``goal_index`` (one index);
``num_teams`` (1; 1 or 2), ``asymmetric`` (off; 0 or 1, needs ``num_teams`` 2), ``num_agents``
(1; a whole number >= 1). Observation
counts and sizes must be whole numbers (counts >= 0, sizes >= 1, at least one observation),
goal indices must name existing observations, ``memory`` must be a bool (0 or 1), else
ValueError naming the option. Every finished episode's return is appended to
``episode_returns`` (ML-Agents' ``final_rewards``, all behaviors together) and to
``episode_returns_by_behavior[behavior id]`` (``"Simple?team=0"``...: ML-Agents' ``final_rewards``
is keyed by its names, which are behavior ids), and recorded as the stat
``Simple/Episode Return`` (AVERAGE). With ``num_agents`` > 1, as in ML-Agents, what is recorded
for an agent that finishes is its finishing reward r (not its summed rewards); for an
interrupted agent, its summed rewards (-0.01 per decision).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, ObservationSpec, ObservationType
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import (
    BuiltinEnv,
    ParameterInput,
    construction_parameters,
    var_len_obs_spec,
    vector_obs_spec,
    visual_obs_spec,
    whole_option,
)

#: ML-Agents' constants: reward per decision, and the success reward 1 + 6 * 0.01 (sized for
#: its default step 0.2, kept whatever ``step_size`` is, as ML-Agents does).
TIME_PENALTY = 0.01
SUCCESS_REWARD = 1.0 + (int(1.0 / 0.2) + 1) * TIME_PENALTY

#: The two goals an episode draws from (ML-Agents' ``random.choice([-1, 1])``).
_GOALS = np.array([-1.0, 1.0])

#: ML-Agents' default image shape (H, W, C) of the visual observations.
VIS_OBS_SIZE = (20, 20, 3)

#: The environment parameters that give ``vis_obs_size``, one per axis.
VIS_OBS_PARAMS = ("vis_obs_height", "vis_obs_width", "vis_obs_channels")

#: ML-Agents' default shape (max_entities, entity_size) of the variable-length observations.
VAR_LEN_SIZE = (10, 5)

#: The environment parameters that give ``var_len_obs_size``, one per axis.
VAR_LEN_PARAMS = ("var_len_max_entities", "var_len_entity_size")

#: ML-Agents' MemoryEnvironment ``num_show_steps``: the goal shows while its step count (one
#: per action dimension per decision) is at most this.
MEMORY_SHOW_STEPS = 2


def _whole(option: str, value: float, minimum: int) -> int:
    return whole_option("Simple", option, value, minimum)


def _sizes(
    option: str,
    given: tuple[int, ...] | None,
    params: Mapping[str, float],
    keys: tuple[str, ...],
    defaults: tuple[int, ...],
) -> tuple[int, ...]:
    """A shape option given whole to the constructor, else one environment parameter per axis."""
    if given is None:
        sizes = [params.get(key, size) for key, size in zip(keys, defaults)]
        names = list(keys)
    elif isinstance(given, tuple | list) and len(given) == len(keys):
        sizes, names = list(given), [option] * len(keys)
    else:
        raise ValueError(f"Simple: {option} must be a tuple of {len(keys)} sizes (got {given!r})")
    return tuple(_whole(name, size, 1) for name, size in zip(names, sizes))


def _flag(option: str, value: object) -> bool:
    """A bool option: True/False, or 1/0 as an environment parameter gives it."""
    if isinstance(value, bool | int | float | np.bool_ | np.integer | np.floating) and float(value) in (0.0, 1.0):
        return bool(value)
    raise ValueError(f"Simple: {option} must be a bool (0 or 1) (got {value!r})")


class SimpleEnv(BuiltinEnv):
    """Reach the observed goal's end on every action dimension; see the module docstring."""

    env_name = "Simple"

    def __init__(
        self,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, ParameterInput] | None = None,
        num_areas: int = 1,
        continuous_size: int | None = None,
        discrete_branches: int | None = None,
        step_size: float | None = None,
        max_step: int | None = None,
        num_vector: int | None = None,
        vec_obs_size: int | None = None,
        num_visual: int | None = None,
        vis_obs_size: tuple[int, int, int] | None = None,
        num_var_len: int | None = None,
        var_len_obs_size: tuple[int, int] | None = None,
        memory: bool | None = None,
        goal_indices: tuple[int, ...] | list[int] | None = None,
        num_teams: int | None = None,
        asymmetric: bool | None = None,
        num_agents: int | None = None,
    ) -> None:
        params = construction_parameters(env_parameters, worker_id)
        self.continuous_size = int(continuous_size if continuous_size is not None else params.get("continuous_size", 1))
        self.discrete_branches = int(
            discrete_branches if discrete_branches is not None else params.get("discrete_branches", 0)
        )
        self.step_size = float(step_size if step_size is not None else params.get("step_size", 0.2))
        self.max_step = int(max_step if max_step is not None else params.get("max_step", 0))
        if self.continuous_size < 0 or self.discrete_branches < 0 or self.continuous_size + self.discrete_branches == 0:
            raise ValueError(
                f"Simple: needs at least one action (continuous_size={self.continuous_size}, "
                f"discrete_branches={self.discrete_branches})"
            )
        if self.step_size <= 0:
            raise ValueError(f"Simple: step_size must be > 0 (got {self.step_size})")
        self.num_vector = _whole("num_vector", num_vector if num_vector is not None else params.get("num_vector", 1), 0)
        self.vec_obs_size = _whole(
            "vec_obs_size", vec_obs_size if vec_obs_size is not None else params.get("vec_obs_size", 1), 1
        )
        self.num_visual = _whole("num_visual", num_visual if num_visual is not None else params.get("num_visual", 0), 0)
        height, width, channels = _sizes("vis_obs_size", vis_obs_size, params, VIS_OBS_PARAMS, VIS_OBS_SIZE)
        self.vis_obs_size = (height, width, channels)
        self.num_var_len = _whole(
            "num_var_len", num_var_len if num_var_len is not None else params.get("num_var_len", 0), 0
        )
        entities, entity_size = _sizes("var_len_obs_size", var_len_obs_size, params, VAR_LEN_PARAMS, VAR_LEN_SIZE)
        self.var_len_obs_size = (entities, entity_size)
        n_obs = self.num_vector + self.num_visual + self.num_var_len
        if n_obs == 0:
            raise ValueError("Simple: needs at least one observation (num_vector=0, num_visual=0, num_var_len=0)")
        self.memory = _flag("memory", memory if memory is not None else params.get("memory", 0.0))
        if goal_indices is None:
            goal_index = params.get("goal_index")
            indices = [] if goal_index is None else [_whole("goal_index", goal_index, 0)]
        elif isinstance(goal_indices, tuple | list):
            indices = [_whole("goal_indices", index, 0) for index in goal_indices]
        else:
            raise ValueError(f"Simple: goal_indices must be a list of observation indices (got {goal_indices!r})")
        outside = [index for index in indices if index >= n_obs]
        if outside:
            raise ValueError(
                f"Simple: goal_indices {outside} name no observation (there are {n_obs}: "
                f"{self.num_vector} vector, {self.num_visual} visual, {self.num_var_len} variable-length)"
            )
        self.goal_indices = tuple(sorted(set(indices)))
        self.num_teams = _whole("num_teams", num_teams if num_teams is not None else params.get("num_teams", 1), 1)
        if self.num_teams > 2:
            raise ValueError(f"Simple: num_teams must be 1 or 2 (got {self.num_teams})")
        self.asymmetric = _flag("asymmetric", asymmetric if asymmetric is not None else params.get("asymmetric", 0.0))
        if self.asymmetric and self.num_teams != 2:
            raise ValueError(f"Simple: asymmetric needs num_teams 2 (got num_teams {self.num_teams})")
        self.num_agents = _whole("num_agents", num_agents if num_agents is not None else params.get("num_agents", 1), 1)
        #: Every finished episode's return (with ``num_agents`` > 1: every agent's finishing
        #: reward), all behaviors together, in the order they ended.
        self.episode_returns: list[float] = []
        #: The same, per behavior id (``Simple?team=0``...), ML-Agents' ``final_rewards[name]``.
        self.episode_returns_by_behavior: dict[str, list[float]] = {}
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    @property
    def grouped(self) -> bool:
        """Whether the agents of an area form a group (``num_agents`` > 1)."""
        return self.num_agents > 1

    def _setup(self) -> None:
        action_spec = ActionSpec(self.continuous_size, (2,) * self.discrete_branches)
        obs_specs = [vector_obs_spec(self.vec_obs_size)] * self.num_vector
        obs_specs += [visual_obs_spec(*self.vis_obs_size)] * self.num_visual
        obs_specs += [var_len_obs_spec(*self.var_len_obs_size)] * self.num_var_len
        for index in self.goal_indices:
            base = obs_specs[index]
            obs_specs[index] = ObservationSpec(
                shape=base.shape,
                dimension_property=base.dimension_property,
                observation_type=ObservationType.GOAL_SIGNAL,
                name=base.name,
            )
        spec = BehaviorSpec(obs_specs, action_spec)
        # slots per behavior: num_areas areas of num_agents; state rows: team * n_slots + slot
        n_slots = self.num_areas * self.num_agents
        names = ["Simple", "SimpleOpp" if self.asymmetric else "Simple"][: self.num_teams]
        self._teams = [self._add_behavior(name, spec, n_slots, team=team) for team, name in enumerate(names)]
        self._n_slots = n_slots
        self._slots = np.arange(n_slots)
        if self.grouped:  # one group per area and team: 1, 2, ...
            for team, agents in enumerate(self._teams):
                agents.set_group(self._slots, 1 + team * self.num_areas + self._slots // self.num_agents)
        self.episode_returns_by_behavior = {agents.name: [] for agents in self._teams}
        n = n_slots * self.num_teams
        self._goal = np.zeros(n)
        self._pos = np.zeros((n, self.continuous_size + self.discrete_branches))
        self._steps = np.zeros(n, dtype=np.int64)
        self._return = np.zeros(n)

    def _begin_episodes(self, rows: np.ndarray) -> None:
        """Start new episodes in state ``rows`` (sorted): fresh ids, goals, positions 0."""
        if len(rows) == 0:  # most ticks: nothing to start, and no random draw to take
            return
        for team, agents in enumerate(self._teams):
            agents.start(self._team_slots(rows, team))
        # each goal -1 or +1: the draw ``rng.choice([-1.0, 1.0])`` makes, at half its cost
        self._goal[rows] = _GOALS[self._rng.integers(0, 2, size=len(rows))]
        self._pos[rows] = 0.0
        self._steps[rows] = 0
        self._return[rows] = 0.0

    def _team_slots(self, rows: np.ndarray, team: int) -> np.ndarray:
        """The slots of behavior ``team`` among state ``rows``."""
        mine = (rows >= team * self._n_slots) & (rows < (team + 1) * self._n_slots)
        return rows[mine] - team * self._n_slots

    def _observe(self, rows: np.ndarray) -> list[np.ndarray]:
        """The goal filling every observation, one array each (a consumer may write into one);
        with ``memory``, 0 instead once the goal is hidden."""
        value = self._goal[rows].astype(np.float32)
        if self.memory:
            shown = self._steps[rows] * self._pos.shape[1] <= MEMORY_SHOW_STEPS
            value = np.where(shown, value, np.float32(0.0))
        shapes = (
            [(self.vec_obs_size,)] * self.num_vector
            + [self.vis_obs_size] * self.num_visual
            + [self.var_len_obs_size] * self.num_var_len
        )
        return [np.ones((len(rows), *shape), np.float32) * value.reshape((-1,) + (1,) * len(shape)) for shape in shapes]

    def _decide_all(self) -> None:
        for team, agents in enumerate(self._teams):
            slots = np.flatnonzero(agents.active)
            agents.decide(slots, self._observe(slots + team * self._n_slots))

    def _reset_world(self) -> None:
        self._begin_episodes(np.arange(self._n_slots * self.num_teams))
        self._decide_all()

    def _advance(self) -> None:
        teams = self._teams
        active = np.concatenate([agents.active for agents in teams])
        moves = np.concatenate(
            [
                np.concatenate([agents.continuous for agents in teams]).astype(np.float64),
                np.where(np.concatenate([agents.discrete for agents in teams]) > 0, 1.0, -1.0),
            ],
            axis=1,
        )
        # np.minimum/np.maximum: np.clip's numbers at a fraction of its call cost
        moves = np.minimum(np.maximum(moves, -self.step_size), self.step_size) * active[:, None]
        self._pos = np.minimum(np.maximum(self._pos + moves, -1.0), 1.0)
        self._steps += active
        finished = active & (np.abs(self._pos) >= 1.0).all(axis=1)
        final = SUCCESS_REWARD * (self._pos * self._goal[:, None]).mean(axis=1)
        interrupted = active & ~finished & (self._steps >= self.max_step) if self.max_step > 0 else active & False
        if self.grouped:
            last, restart = self._group_endings(active, finished, interrupted)
            leaver = finished & ~last
            reward = np.where(leaver, np.minimum(-TIME_PENALTY, final), np.where(last, 0.0, -TIME_PENALTY))
            group_reward = np.where(last, final, 0.0)
        else:
            reward = np.where(finished, final, -TIME_PENALTY)
            group_reward = np.zeros_like(reward)
            restart = finished | interrupted
        reward = np.where(active, reward, 0.0)
        self._return += reward
        ended = np.flatnonzero(finished | interrupted)
        # grouped: an agent's finishing reward; interrupted ones (and ungrouped): their return
        recorded = np.where(finished, final, self._return) if self.grouped else self._return
        for team, agents in enumerate(teams):
            rows = slice(team * self._n_slots, (team + 1) * self._n_slots)
            agents.reward += reward[rows].astype(np.float32)
            agents.add_group_reward(self._slots, group_reward[rows])
            slots = self._team_slots(ended, team)
            if len(slots):
                team_rows = slots + team * self._n_slots
                agents.end(slots, self._observe(team_rows), interrupted[team_rows])
                agents.remove(slots)
                self.episode_returns_by_behavior[agents.name].extend(recorded[team_rows].tolist())
        if len(ended):
            self.episode_returns.extend(recorded[ended].tolist())
            self._stats.add("Simple/Episode Return", recorded[ended], StatsAggregationMethod.AVERAGE)
        self._begin_episodes(np.flatnonzero(restart))
        self._decide_all()

    def _group_endings(
        self, active: np.ndarray, finished: np.ndarray, interrupted: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Which rows finish as their group's last agent, and which rows restart.

        A group ends when none of its agents runs on; without an interruption, its finisher
        with the highest slot among this tick's finishers is the last agent (ML-Agents steps
        its agents in order, so the others finished "before"). Every row of an ending group
        restarts, the agents that left earlier included. All arrays: [rows] bool.
        """
        size = self.num_agents
        running = (active & ~finished & ~interrupted).reshape(-1, size).any(axis=1)
        ends = active.reshape(-1, size).any(axis=1) & ~running
        fins = finished.reshape(-1, size)
        clean = ends & ~interrupted.reshape(-1, size).any(axis=1) & fins.any(axis=1)
        last_in_group = size - 1 - fins[:, ::-1].argmax(axis=1)
        last = np.zeros_like(finished)
        groups = np.flatnonzero(clean)
        last[groups * size + last_in_group[groups]] = True
        return last, np.repeat(ends, size)
