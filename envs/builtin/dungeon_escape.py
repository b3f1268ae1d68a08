"""DungeonEscape: a cooperative escape that needs a sacrifice, like ML-Agents' DungeonEscape (for POCA).

Every area is a ``size`` x ``size`` grid room (4 x 4 by default) with ``num_agents`` agents (3)
in one group (Unity's ``SimpleMultiAgentGroup``: group id ``area + 1``), a dragon and a locked
door, all on distinct random cells drawn at each group episode start. The behavior is
``DungeonEscape?team=0``.

Each decision every agent moves one cell (one discrete branch of 5: 0 stay, 1 +x, 2 -x, 3 +y,
4 -y; a move into a wall leaves it in place; nothing is masked; agents may share cells). Then,
in this order:

1. an agent on the dragon's cell is eaten (of several, the one in the lowest slot): it leaves
   the group at once with a TerminalStep, not interrupted, individual reward 0 (ML-Agents
   deactivates the agent: Unity reports that as done, not max-step), and the dragon disappears
   leaving the key on its cell (ML-Agents' ``KilledByBaddie``);
2. a living agent on the key's cell picks it up (of several, the lowest slot);
3. if the agent carrying the key is on the door's cell, the door opens (ML-Agents'
   ``UnlockDoor``): every remaining member gets group reward +1 and TerminalSteps (not
   interrupted), and the group restarts on the same step with fresh agent ids.

The door opens only with the key and only eating the dragon drops the key, so every escape
costs one agent: a sacrifice. Every trainer sees the group reward (PPO, SAC and POCA add it to
the extrinsic reward, as ML-Agents does), but the agent that dies leaves the group at once and
never receives the +1 the others get later: PPO, which credits each agent with the rewards of
its own episode, sees dying as worth 0 and learns to avoid the dragon, while POCA bootstraps the
value of an agent that left early from the group's value and so credits its sacrifice. The
group is interrupted (interrupted True for all remaining, no reward) after ``max_step``
decisions (30) and restarts.

Time penalty: ML-Agents' DungeonEscapeEnvController gives none (only ``AddGroupReward(1f)``
on unlocking; the ``AddGroupReward(-1f / MaxEnvironmentSteps)`` of other ML-Agents examples is
absent from it). Here ``time_penalty`` (0 by default, as ML-Agents) is a total spread as group
reward ``-time_penalty / max_step`` to every member alive at each decision. Leave it at 0 for
the POCA-versus-PPO comparison: with a time penalty, dying early ends an agent's penalties,
which pays the sacrifice for PPO too.

``absorbing_state`` (0 by default; ML-Agents' ``absorbing_state`` environment parameter): the
eaten agent is not removed but teleported out of the room (ML-Agents moves it far away): it
stays in the group, keeps deciding (its moves do nothing, its observation is all zeros,
teammates see it as absent), receives the group's rewards and ends with the group. Its
episode then holds the +1 of the escape it made possible, so even PPO is credited for the
sacrifice: a check that the task is learnable, not the POCA comparison.

Observation: one vector of ``11 + 4 * (num_agents - 1)`` floats (19 with 3 agents), with
coordinates divided by ``size - 1`` (so in [0, 1], differences in [-1, 1]): own x, y; holding
the key (0/1); dragon alive (0/1), dragon x, y minus own x, y (0, 0 once it is dead); key on
the floor (0/1), key minus own position (0, 0 unless on the floor); door minus own position;
then, for each teammate in slot order starting after one's own (cyclic): present (0/1), its
position minus own, holding the key (0/1) (all 0 once it has left).

Parameters (constructor options, or environment parameters of the same names): ``size`` (4,
a whole number >= 3) and ``num_agents`` (3, a whole number >= 2) fix the specs and are read
once, at construction (a sampler draws once then; later values are ignored); ``max_step``
(30, >= 1), ``time_penalty`` (0, >= 0) and ``absorbing_state`` (0 or 1) are read per area at
each group episode start (a sampler draws for every area starting one; the values in use are
``max_step``, ``time_penalty`` and ``absorbing_state``, [areas] each). A constructor option
overrides the parameter for good. Bad values raise ValueError naming the option; a sampler's
draws are instead rounded (whole options) and clamped into range, as a draw cannot be refused.

Stats, once per group episode: ``DungeonEscape/Escaped`` (AVERAGE: 1 if the door opened, else
0), ``DungeonEscape/Dragon Slain`` (AVERAGE: 1 if an agent was eaten) and
``DungeonEscape/Episode Length`` (AVERAGE, decisions). ``escapes`` lists every finished group
episode's outcome (True when the door opened), in order.

How hard, with the defaults (tests/test_builtin_dungeon_escape.py): a scripted policy (the
agent in the lowest slot walks to the dragon, the survivor nearest the key fetches it and
opens the door) escapes in every episode, in about 7.3 decisions; a uniform random policy
escapes in about 18% of episodes (the dragon eats someone in 89%). PPO with
config/ppo/DungeonEscape.yaml (8 areas), which sees the +1 as group reward, learns to avoid
the dragon: escapes fall from 17-22% of the first fifth of its episodes to 6%, 6% and 11% of
the last 300 at 300k steps (seeds 1-3, about 15 s of CPU each). The same settings with
``absorbing_state`` 1 escape in every episode from about 250k steps (seeds 1, 2): the task is
learnable once the sacrifice is credited, which is POCA's job without absorbing states.
Compare trainers on ``DungeonEscape/Escaped``: the rewards differ between them (the +1 is a
group reward, so ``Environment/Cumulative Reward``, individual rewards only, stays 0).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import BehaviorSpec
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.builtin._core import (
    BuiltinEnv,
    ParameterInput,
    action_spec_discrete,
    construction_parameters,
    vector_obs_spec,
    whole_option,
)

#: Cell offsets (x, y) of the 5 actions: stay, +x, -x, +y, -y.
MOVES = np.array([[0, 0], [1, 0], [-1, 0], [0, 1], [0, -1]], dtype=np.int64)

DEFAULT_SIZE = 4
DEFAULT_AGENTS = 3
DEFAULT_MAX_STEP = 30

#: The options read at each group episode start, with their defaults.
EPISODE_OPTIONS = {"max_step": DEFAULT_MAX_STEP, "time_penalty": 0.0, "absorbing_state": 0.0}

#: Group reward to every remaining member when the door opens (ML-Agents' ``AddGroupReward(1f)``).
ESCAPE_REWARD = 1.0


def _whole(option: str, value: float, minimum: int) -> int:
    return whole_option("DungeonEscape", option, value, minimum)


def obs_size(num_agents: int) -> int:
    """Floats in one agent's observation."""
    return 11 + 4 * (num_agents - 1)


class DungeonEscapeEnv(BuiltinEnv):
    """Sacrifice one agent to the dragon, carry its key to the door; see the module docstring."""

    env_name = "DungeonEscape"

    def __init__(
        self,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, ParameterInput] | None = None,
        num_areas: int = 1,
        size: int | None = None,
        num_agents: int | None = None,
        max_step: int | None = None,
        time_penalty: float | None = None,
        absorbing_state: bool | None = None,
    ) -> None:
        params = construction_parameters(env_parameters, worker_id)
        self.size = _whole("size", size if size is not None else params.get("size", DEFAULT_SIZE), 3)
        self.num_agents = _whole(
            "num_agents", num_agents if num_agents is not None else params.get("num_agents", DEFAULT_AGENTS), 2
        )
        # per-episode options: given to the constructor they override the parameters for good
        self._fixed = {
            key: value
            for key, value in (
                ("max_step", max_step),
                ("time_penalty", time_penalty),
                ("absorbing_state", absorbing_state),
            )
            if value is not None
        }
        self.escapes: list[bool] = []
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    # ---- options read at each group episode start ------------------------------------------

    def _episode_options(self, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """max_step, time_penalty, absorbing_state for ``n`` areas starting a group episode:
        [n] int64, [n] float64, [n] bool."""
        return (
            self._option("max_step", n).astype(np.int64),
            self._option("time_penalty", n),
            self._option("absorbing_state", n) == 1.0,
        )

    def _option(self, key: str, n: int) -> np.ndarray:
        """Episode option ``key`` for ``n`` areas: [n] float64. A constant (or constructor
        option) is checked (ValueError naming a bad one); a sampler's draws, one per area, are
        rounded (max_step, absorbing_state) and clamped into range."""
        default = EPISODE_OPTIONS[key]
        if key not in self._fixed and self._param_sampled(key):
            draws = self._param_array(key, default, n)
            if key == "max_step":
                return np.maximum(np.rint(draws), 1)
            if key == "absorbing_state":
                return np.clip(np.rint(draws), 0, 1)
            return np.maximum(draws, 0.0)
        value = float(self._fixed.get(key, self._param(key, default)))
        if key == "max_step":
            value = _whole("max_step", value, 1)
        elif key == "time_penalty" and not value >= 0:
            raise ValueError(f"DungeonEscape: time_penalty must be >= 0 (got {value!r})")
        elif key == "absorbing_state" and value not in (0.0, 1.0):
            raise ValueError(f"DungeonEscape: absorbing_state must be 0 or 1 (got {value!r})")
        return np.full(n, float(value))

    @property
    def max_step(self) -> np.ndarray:
        """[areas] int64, the decision limit of each area's current group episode."""
        return self._max_step

    @property
    def time_penalty(self) -> np.ndarray:
        """[areas] float64, the time penalty of each area's current group episode."""
        return self._penalty

    @property
    def absorbing_state(self) -> np.ndarray:
        """[areas] bool, whether each area's current group episode keeps eaten agents."""
        return self._absorbing

    # ---- world --------------------------------------------------------------------------------

    def _setup(self) -> None:
        n, k = self.num_areas, self.num_agents
        spec = BehaviorSpec([vector_obs_spec(obs_size(k))], action_spec_discrete(5))
        self._agents = self._add_behavior("DungeonEscape", spec, n * k)
        self._slots = np.arange(n * k)
        self._area = self._slots // k
        self._agents.set_group(self._slots, self._area + 1)
        self._pos = np.zeros((n * k, 2), dtype=np.int64)
        self._has_key = np.zeros(n * k, dtype=bool)
        self._absorbed = np.zeros(n * k, dtype=bool)
        self._dragon = np.zeros((n, 2), dtype=np.int64)
        self._dragon_alive = np.zeros(n, dtype=bool)
        self._key = np.zeros((n, 2), dtype=np.int64)
        self._key_on_floor = np.zeros(n, dtype=bool)
        self._door = np.zeros((n, 2), dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._max_step = np.zeros(n, dtype=np.int64)
        self._penalty = np.zeros(n)
        self._absorbing = np.zeros(n, dtype=bool)

    def _begin_groups(self, areas: np.ndarray) -> None:
        """Start a new group episode in ``areas`` (sorted): distinct random cells for the door,
        the dragon and every agent; fresh agent ids."""
        if len(areas) == 0:
            return
        k = self.num_agents
        cells = np.argsort(self._rng.random((len(areas), self.size * self.size)), axis=1)[:, : 2 + k]
        xy = np.stack([cells % self.size, cells // self.size], axis=-1)  # [areas, 2 + k, 2]
        self._door[areas] = xy[:, 0]
        self._dragon[areas] = xy[:, 1]
        slots = (areas[:, None] * k + np.arange(k)).ravel()
        self._pos[slots] = xy[:, 2:].reshape(-1, 2)
        self._has_key[slots] = False
        self._absorbed[slots] = False
        self._dragon_alive[areas] = True
        self._key_on_floor[areas] = False
        self._key[areas] = 0
        self._steps[areas] = 0
        max_step, penalty, absorbing = self._episode_options(len(areas))
        self._max_step[areas] = max_step
        self._penalty[areas] = penalty
        self._absorbing[areas] = absorbing
        self._agents.start(slots)

    def _observe(self, slots: np.ndarray) -> list[np.ndarray]:
        k, scale = self.num_agents, 1.0 / (self.size - 1)
        area = self._area[slots]
        own = self._pos[slots]
        obs = np.zeros((len(slots), obs_size(k)), dtype=np.float32)
        obs[:, 0:2] = own * scale
        obs[:, 2] = self._has_key[slots]
        alive = self._dragon_alive[area]
        obs[:, 3] = alive
        obs[:, 4:6] = np.where(alive[:, None], (self._dragon[area] - own) * scale, 0.0)
        on_floor = self._key_on_floor[area]
        obs[:, 6] = on_floor
        obs[:, 7:9] = np.where(on_floor[:, None], (self._key[area] - own) * scale, 0.0)
        obs[:, 9:11] = (self._door[area] - own) * scale
        present = self._agents.active & ~self._absorbed
        for j in range(1, k):
            mate = area * k + (slots % k + j) % k
            column = 11 + 4 * (j - 1)
            here = present[mate]
            obs[:, column] = here
            obs[:, column + 1 : column + 3] = np.where(here[:, None], (self._pos[mate] - own) * scale, 0.0)
            obs[:, column + 3] = here & self._has_key[mate]
        obs[self._absorbed[slots]] = 0.0  # teleported away: sees nothing
        return [obs]

    def _reset_world(self) -> None:
        self._begin_groups(np.arange(self.num_areas))
        self._agents.decide(self._slots, self._observe(self._slots))

    def _first_per_area(self, flags: np.ndarray) -> np.ndarray:
        """[slots] bool -> [slots] bool: only the lowest flagged slot of each area."""
        per_area = flags.reshape(self.num_areas, self.num_agents)
        first = np.zeros_like(per_area)
        areas = np.flatnonzero(per_area.any(axis=1))
        first[areas, per_area[areas].argmax(axis=1)] = True
        return first.ravel()

    def _advance(self) -> None:
        agents, k = self._agents, self.num_agents
        active = agents.active
        present = active & ~self._absorbed  # in the room
        moves = MOVES[agents.discrete[:, 0]] * present[:, None]
        self._pos = np.clip(self._pos + moves, 0, self.size - 1)
        self._steps += 1
        living = np.flatnonzero(active)
        penalty = self._penalty[self._area[living]] / self._max_step[self._area[living]]
        if penalty.any():
            self._agents.add_group_reward(living, -penalty)

        # 1. the dragon eats one agent and drops the key
        on_dragon = present & self._dragon_alive[self._area] & (self._pos == self._dragon[self._area]).all(axis=1)
        eaten = self._first_per_area(on_dragon)
        slain = self._area[eaten]
        self._dragon_alive[slain] = False
        self._key_on_floor[slain] = True
        self._key[slain] = self._dragon[slain]
        self._has_key[eaten] = False
        absorbed = eaten & self._absorbing[self._area]
        self._absorbed |= absorbed
        eaten &= ~absorbed
        alive = present & ~eaten & ~absorbed
        # 2. a living agent on the key picks it up
        on_key = alive & self._key_on_floor[self._area] & (self._pos == self._key[self._area]).all(axis=1)
        picker = self._first_per_area(on_key)
        self._has_key |= picker
        self._key_on_floor[self._area[picker]] = False
        # 3. the key carrier at the door opens it
        at_door = alive & self._has_key & (self._pos == self._door[self._area]).all(axis=1)
        escaped = at_door.reshape(self.num_areas, k).any(axis=1)
        timed_out = ~escaped & (self._steps >= self._max_step)
        winners = np.flatnonzero(active & ~eaten & escaped[self._area])
        if len(winners):
            self._agents.add_group_reward(winners, np.full(len(winners), ESCAPE_REWARD))

        over = escaped | timed_out
        ending = eaten | (active & ~eaten & over[self._area])
        if ending.any():
            slots = np.flatnonzero(ending)
            agents.end(slots, self._observe(slots), ~eaten[slots] & timed_out[self._area[slots]])
            agents.remove(slots)
        ended = np.flatnonzero(over)
        if len(ended):
            self.escapes.extend(escaped[ended].tolist())
            self._stats.add("DungeonEscape/Escaped", escaped[ended].astype(np.float64), StatsAggregationMethod.AVERAGE)
            slain_flags = ~self._dragon_alive[ended]
            self._stats.add(
                "DungeonEscape/Dragon Slain", slain_flags.astype(np.float64), StatsAggregationMethod.AVERAGE
            )
            self._stats.add(
                "DungeonEscape/Episode Length", self._steps[ended].astype(np.float64), StatsAggregationMethod.AVERAGE
            )
            self._begin_groups(ended)
        living = np.flatnonzero(agents.active)
        agents.decide(living, self._observe(living))
