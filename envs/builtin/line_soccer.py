"""LineSoccer: a symmetric two-team soccer game on a line, for self-play (ghost trainers, ELO).

Every area is a line of ``length`` cells (7 by default) with a ball and two teams of
``players_per_team`` players (1 by default): team 0 (behavior ``LineSoccer?team=0``) defends
the left goal, behind cell 0, and attacks the right one, behind cell ``length - 1``; team 1
(``LineSoccer?team=1``, the same behavior name and spec) the reverse. A game starts with the
ball on the middle cell ``length // 2`` and every player on a random cell of its own half
(team 0 left of the middle, team 1 right of it, drawn independently).

Each decision every player moves one cell (one discrete branch of 3: 0 stay, 1 forward,
2 back, "forward" meaning toward the goal it attacks; moves off the line leave it in place;
nothing is masked; players and the ball may share cells). A player that steps forward onto
the ball's cell kicks the ball ``kick`` cells (2) forward (stepping back onto it, or standing
on it, does nothing: a player gets behind the ball by walking past it); kicks on the same step
add up, clamped to ``kick`` cells, so the two teams' kicks cancel. A ball kicked beyond the right end is a goal for team
0, beyond the left end for team 1.

Rewards and episode ends: a goal ends the game for every player (TerminalSteps, not
interrupted): +1 for every scoring player, -1 for every player of the other team. With
``players_per_team`` 2 each team of an area is a group (group ids ``2 * area + 1`` for team 0,
``2 * area + 2`` for team 1) and the +1 / -1 come as group rewards only (individual reward 0),
as Unity's SoccerTwos gives them (``AddGroupReward``); every trainer (PPO, SAC, POCA) adds the
group reward to the extrinsic reward, as ML-Agents does, and a self-play trainer reads a game's
result from reward + group reward (as ML-Agents' ghost trainer does). After ``max_step``
decisions (30) without a goal the game is a draw: every player is interrupted with reward 0.
There is no other reward. The next game starts on the same step with fresh agent ids.

Observation, from the player's own side (team 1 sees the line mirrored: cell x appears as
``length - 1 - x``, and its "forward" is toward lower cells), so one policy plays both sides:
one vector of ``2 + 2 * players_per_team`` floats (4 by default), positions divided by
``length - 1`` (in [0, 1]): own position; ball position; ball minus own position; then the
teammate's position (with 2 per team); then the opponents' positions, in slot order.

Parameters (constructor options, or environment parameters of the same names):
``players_per_team`` (1 or 2) and ``length`` (7, a whole number >= 5) fix the specs and are
read once, at construction (a sampler draws once then; later values are ignored); ``kick``
(2, >= 1) and ``max_step`` (30, >= 1) are read per area at each game start (a sampler draws for
every area starting a game; the values in use are ``kick`` and ``max_step``, [areas] each). A
constructor option overrides the parameter for good. Bad values raise ValueError naming the
option; a sampler's draws are instead rounded and clamped to >= 1, as a draw cannot be refused.

Stats, once per game: ``LineSoccer/Team 0 Wins``, ``LineSoccer/Team 1 Wins``,
``LineSoccer/Draws`` (AVERAGE, each 1 or 0) and ``LineSoccer/Episode Length`` (AVERAGE,
decisions). ``results`` lists every game's result in order: 1 team 0 won, -1 team 1 won,
0 draw.

How hard, with the defaults (tests/test_builtin_line_soccer.py): random against random,
team 0 wins about 27% of games, team 1 23%, 50% are draws (2 per team: 32% / 32% / 37%); a
scripted chaser (step forward while the ball is ahead, else back) beats random in 99% of
games, from either side, in about 5.4 decisions, and draws about half its games against
itself. PPO (config/ppo/LineSoccer.yaml without self-play, 8 areas) against a random team 1
wins 97% of games after 60k steps (about 6 s of CPU); with 2 per team (the results as group
rewards only), 98% and 95% after 100k steps (seeds 1, 2).
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

DEFAULT_LENGTH = 7
DEFAULT_KICK = 2
DEFAULT_MAX_STEP = 30

#: The field direction (+1 right, -1 left) of each action (stay, forward, back) for team 0;
#: team 1's are the opposite.
FORWARD = np.array([0, 1, -1], dtype=np.int64)


def _whole(option: str, value: float, minimum: int) -> int:
    return whole_option("LineSoccer", option, value, minimum)


class LineSoccerEnv(BuiltinEnv):
    """Kick the ball past the other team's end of the line; see the module docstring."""

    env_name = "LineSoccer"

    def __init__(
        self,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, ParameterInput] | None = None,
        num_areas: int = 1,
        players_per_team: int | None = None,
        length: int | None = None,
        kick: int | None = None,
        max_step: int | None = None,
    ) -> None:
        params = construction_parameters(env_parameters, worker_id)
        players = players_per_team if players_per_team is not None else params.get("players_per_team", 1)
        self.players_per_team = _whole("players_per_team", players, 1)
        if self.players_per_team > 2:
            raise ValueError(f"LineSoccer: players_per_team must be 1 or 2 (got {self.players_per_team})")
        self.length = _whole("length", length if length is not None else params.get("length", DEFAULT_LENGTH), 5)
        self._fixed = {key: value for key, value in (("kick", kick), ("max_step", max_step)) if value is not None}
        self.results: list[int] = []
        super().__init__(seed=seed, worker_id=worker_id, env_parameters=env_parameters, num_areas=num_areas)

    @property
    def grouped(self) -> bool:
        """Whether each team of an area is a group (2 players per team)."""
        return self.players_per_team > 1

    def _options(self, key: str, default: int, n: int) -> np.ndarray:
        """Option ``key`` for ``n`` areas starting a game: [n] int64. A constant (or constructor
        option) must be a whole number >= 1 (ValueError); a sampler's draws are rounded and
        clamped to >= 1."""
        if key not in self._fixed and self._param_sampled(key):
            return np.maximum(np.rint(self._param_array(key, default, n)), 1).astype(np.int64)
        return np.full(n, _whole(key, self._fixed.get(key, self._param(key, default)), 1), dtype=np.int64)

    @property
    def kick(self) -> np.ndarray:
        """[areas] int64, the kick distance of each area's current game."""
        return self._kick

    @property
    def max_step(self) -> np.ndarray:
        """[areas] int64, the decision limit of each area's current game."""
        return self._max_step

    def _setup(self) -> None:
        n, p = self.num_areas, self.players_per_team
        spec = BehaviorSpec([vector_obs_spec(2 + 2 * p)], action_spec_discrete(3))
        self._teams = [self._add_behavior("LineSoccer", spec, n * p, team=team) for team in (0, 1)]
        self._slots = np.arange(n * p)
        self._area = self._slots // p
        if self.grouped:
            for team, agents in enumerate(self._teams):
                agents.set_group(self._slots, 2 * self._area + 1 + team)
        self._pos = np.zeros((2, n * p), dtype=np.int64)  # [team, slot], field cells
        self._ball = np.zeros(n, dtype=np.int64)
        self._steps = np.zeros(n, dtype=np.int64)
        self._kick = np.zeros(n, dtype=np.int64)
        self._max_step = np.zeros(n, dtype=np.int64)

    def _begin_games(self, areas: np.ndarray) -> None:
        """Start a game in ``areas`` (sorted): ball in the middle, players in their own halves."""
        if len(areas) == 0:
            return
        p, middle = self.players_per_team, self.length // 2
        slots = (areas[:, None] * p + np.arange(p)).ravel()
        self._pos[0, slots] = self._rng.integers(0, middle, len(slots))
        self._pos[1, slots] = self.length - 1 - self._rng.integers(0, self.length - 1 - middle, len(slots))
        self._ball[areas] = middle
        self._steps[areas] = 0
        self._kick[areas] = self._options("kick", DEFAULT_KICK, len(areas))
        self._max_step[areas] = self._options("max_step", DEFAULT_MAX_STEP, len(areas))
        for agents in self._teams:
            agents.start(slots)

    def _observe(self, team: int, slots: np.ndarray) -> list[np.ndarray]:
        """Team ``team``'s view of ``slots``: positions mirrored for team 1."""
        p, last = self.players_per_team, self.length - 1

        def view(cells: np.ndarray) -> np.ndarray:
            return (cells if team == 0 else last - cells) / last

        area = self._area[slots]
        own = view(self._pos[team, slots])
        ball = view(self._ball[area])
        columns = [own, ball, ball - own]
        for j in range(1, p):  # teammates
            columns.append(view(self._pos[team, area * p + (slots % p + j) % p]))
        for j in range(p):  # opponents
            columns.append(view(self._pos[1 - team, area * p + j]))
        return [np.stack(columns, axis=1).astype(np.float32)]

    def _reset_world(self) -> None:
        self._begin_games(np.arange(self.num_areas))
        for team, agents in enumerate(self._teams):
            agents.decide(self._slots, self._observe(team, self._slots))

    def _advance(self) -> None:
        n, p = self.num_areas, self.players_per_team
        direction = np.stack([FORWARD[self._teams[0].discrete[:, 0]], -FORWARD[self._teams[1].discrete[:, 0]]])
        before = self._pos
        self._pos = np.clip(before + direction, 0, self.length - 1)
        ball = self._ball[self._area]  # [slot]
        forward = np.array([[1], [-1]])
        kicks = (direction == forward) & (self._pos != before) & (self._pos == ball)
        push = (np.where(kicks, direction, 0).sum(axis=0)).reshape(n, p).sum(axis=1)
        self._ball = self._ball + np.clip(push * self._kick, -self._kick, self._kick)
        self._steps += 1
        winner = np.where(self._ball >= self.length, 0, np.where(self._ball < 0, 1, -1))  # [area]
        scored = winner >= 0
        draw = ~scored & (self._steps >= self._max_step)
        over = scored | draw
        ended = np.flatnonzero(over)
        if len(ended):
            slots = (ended[:, None] * p + np.arange(p)).ravel()
            for team, agents in enumerate(self._teams):
                result = np.where(winner[self._area[slots]] == team, 1.0, -1.0) * scored[self._area[slots]]
                if self.grouped:
                    agents.add_group_reward(slots, result)
                else:
                    agents.reward[slots] += result.astype(np.float32)
                agents.end(slots, self._observe(team, slots), draw[self._area[slots]])
            results = np.where(winner[ended] == 0, 1, np.where(winner[ended] == 1, -1, 0))
            self.results.extend(results.tolist())
            for key, values in (
                ("LineSoccer/Team 0 Wins", results == 1),
                ("LineSoccer/Team 1 Wins", results == -1),
                ("LineSoccer/Draws", results == 0),
            ):
                self._stats.add(key, values.astype(np.float64), StatsAggregationMethod.AVERAGE)
            self._stats.add(
                "LineSoccer/Episode Length", self._steps[ended].astype(np.float64), StatsAggregationMethod.AVERAGE
            )
            self._begin_games(ended)
        for team, agents in enumerate(self._teams):
            agents.decide(self._slots, self._observe(team, self._slots))
