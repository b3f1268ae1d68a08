"""Self-play: ML-Agents' ghost trainer and ghost controller.

In an adversarial game one team learns at a time; every other team is "ghosted": it acts with
a fixed snapshot of a past policy and does not learn. A :class:`GhostTrainer` wraps the
:class:`trainers.loop.trainer.Trainer` of one behavior name (any algorithm: the algorithm never
hears of self-play) and stands between it and the AgentManagers of that name's teams
(``Name?team=N``, one inference policy each):

- trajectories of the learning team go to the wrapped trainer (and, at episode ends, into the
  ELO rating); those of the other teams only count ghost steps (and their episode statistics,
  which the processors already reported);
- the learning team's inference policy follows the wrapped trainer's updates; every other
  team's acts with a snapshot: the latest policy with probability
  ``play_against_latest_model_ratio``, else a random one of the ``window`` snapshots kept;
- a snapshot of the learning policy is taken every ``save_steps`` trainer steps, the
  opponents' snapshot swapped every ``swap_steps`` ghost steps (steps of the ghosted teams),
  and the learning team changes every ``team_change`` trainer steps.

The :class:`GhostController` (one per run) decides which team learns, across every ghost
trainer of the run: an asymmetric game (``Striker?team=0`` against ``Goalie?team=1``) has one
ghost trainer per behavior name and only one of them learns at a time. It also computes the
ELO changes, since the opponent's rating may belong to another ghost trainer.

Steps are counted as ML-Agents counts them: a ghost trainer's step is its wrapped trainer's
(``max_steps``, summaries, checkpoints); the schedules (save, team change) run on the steps of
the learning team's trajectories, which keep counting after the wrapped trainer reached
``max_steps`` (ML-Agents' trainer counts steps it no longer trains on, and an asymmetric run
relies on it: the team that is done must still hand over to the one that is not).

State for ``--resume`` (ELO ratings, the snapshot window's weights, the current opponent, the
schedule counters, the learning team) is saved in every checkpoint of the wrapped trainer
under ``"self_play"`` (see :meth:`GhostTrainer.checkpoint_state`), and the learning policy's
ELO in ``run_logs/training_status.json`` as ML-Agents' ``elo``.
"""

from __future__ import annotations

import logging
import threading
import time
import zlib
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from processors import AgentManager, AgentManagerQueue, BehaviorIdentifiers
from processors.trajectory import Trajectory
from stats import StatsProperty
from stats.tags import SELF_PLAY_ELO
from trainers.exceptions import CheckpointError
from trainers.files.checkpoints import BehaviorCheckpoints
from trainers.files.status import CheckpointRecord, TrainingStatus
from trainers.loop.trainer import MAX_TRAJECTORIES_PER_ADVANCE, Trainer
from trainers.loop.wrapper import TrainerWrapper
from trainers.networks.policy import Weights, newest_updates
from trainers.seeding import Stream
from trainers.settings import SelfPlaySettings

logger = logging.getLogger(__name__)

# ML-Agents' ELO update moves a rating by (result - expected score): a K-factor of 1.
ELO_K_FACTOR = 1.0
# The key of the ghost's state in the wrapped trainer's checkpoints.
CHECKPOINT_KEY = "self_play"
# The key of the learning policy's ELO per behavior in training_status.json (ML-Agents').
STATUS_ELO_KEY = "elo"
# current_opponent when the opponents play the latest policy (ML-Agents: -1, the learning
# policy's own slot at the end of policy_elos).
LATEST = -1


# ---------------------------------------------------------------------- ELO, pure


def elo_expected_score(rating: float, opponent_rating: float) -> float:
    """The expected score (0-1) of a player rated ``rating`` against ``opponent_rating``:
    ``10^(r/400) / (10^(r/400) + 10^(o/400))``; 0.5 between equals, ~0.76 for +200."""
    r1 = 10.0 ** (rating / 400.0)
    r2 = 10.0 ** (opponent_rating / 400.0)
    return r1 / (r1 + r2)


def elo_change(rating: float, opponent_rating: float, result: float) -> float:
    """How much ``rating`` gains (the opponent loses as much) for ``result``: 1 win, 0.5 draw,
    0 loss. ML-Agents' formula, K = 1: ``result - expected``."""
    return ELO_K_FACTOR * (result - elo_expected_score(rating, opponent_rating))


def episode_result(final_reward: float) -> float:
    """The result of an episode from its last step's reward (+ group reward), ML-Agents' rule:
    > 0 a win (1.0), < 0 a loss (0.0), 0 a draw (0.5)."""
    if final_reward > 0:
        return 1.0
    if final_reward < 0:
        return 0.0
    return 0.5


# ---------------------------------------------------------------------- the controller


class GhostController:
    """Which team learns, run-wide; and the ELO exchange between ghost trainers.

    Teams rotate in the order they first appeared: the first team learns first; every
    ``change_learning_team`` hands over to the next (ML-Agents' queue of team ids).
    Thread-safe: threaded ghost trainers call it from their own threads.
    """

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._learning_team = -1
        self._queue: deque[int] = deque()
        self._trainers: dict[int, GhostTrainer] = {}
        self._changes = 0
        self._changed = False

    @property
    def learning_team(self) -> int:
        """The team id that learns now (-1 before any team subscribed)."""
        with self._lock:
            return self._learning_team

    @property
    def changes(self) -> int:
        """How many times the learning team changed in this run (resumed runs included)."""
        with self._lock:
            return self._changes

    def subscribe_team(self, team_id: int, trainer: GhostTrainer) -> None:
        """``trainer`` manages ``team_id`` (the first trainer to subscribe a team keeps it: its
        ratings are the team's). A team new to the rotation joins the end of the queue."""
        with self._lock:
            if team_id in self._trainers:
                return
            self._trainers[team_id] = trainer
            if self._learning_team < 0:
                self._learning_team = team_id
            elif team_id != self._learning_team and team_id not in self._queue:
                self._queue.append(team_id)

    def change_learning_team(self, step: int) -> None:
        """Hand learning over to the next team in the rotation (``step``: the trainer step
        that asked, for the log)."""
        with self._lock:
            self._queue.append(self._learning_team)
            self._learning_team = self._queue.popleft()
            self._changes += 1
            self._changed = True
            logger.debug("Learning team changed to %d at step %d", self._learning_team, step)

    def should_reset(self) -> bool:
        """Whether the learning team changed since the last call (ML-Agents resets the
        environments then)."""
        with self._lock:
            changed, self._changed = self._changed, False
            return changed

    def record_result(self, rating: float, result: float) -> float:
        """The ELO change of the learning team, rated ``rating``, for ``result`` (1/0.5/0)
        against the current opponents; every other team's current opponent policy loses what
        the learning team gains (ML-Agents: with more than two teams the last one's rating
        is the opponent's)."""
        with self._lock:
            opponents = [t for team, t in self._trainers.items() if team != self._learning_team]
            opponent_rating = 0.0
            for trainer in opponents:
                opponent_rating = trainer.opponent_elo
            change = elo_change(rating, opponent_rating, result)
            for trainer in opponents:
                trainer.change_opponent_elo(change)
            return change

    def state(self) -> dict[str, Any]:
        with self._lock:
            return {"learning_team": self._learning_team, "queue": list(self._queue), "changes": self._changes}

    def load_state(self, state: Mapping[str, Any]) -> None:
        """Adopt a saved rotation when it is newer (more team changes) than the current one:
        each ghost trainer's checkpoint holds the rotation as it was then."""
        with self._lock:
            changes = int(state.get("changes", 0))
            if changes < self._changes:
                return
            self._learning_team = int(state["learning_team"])
            self._queue = deque(int(t) for t in state["queue"])
            self._changes = changes
            for team in self._trainers:  # teams seen this session but not in the saved rotation
                if team != self._learning_team and team not in self._queue:
                    self._queue.append(team)


# ---------------------------------------------------------------------- the trainer


class GhostTrainer(TrainerWrapper):
    """Self-play around ``trainer`` (see the module docstring). Presents the trainer loop's
    interface to the controller (advance, step, should_still_train, checkpoints...).

    Wiring: the controller calls :meth:`add_team` with each team's behavior id and
    AgentManager (instead of subscribing the manager's queues to the trainer).
    ``seed``: the run seed (snapshot draws). ``status``: where the learning policy's ELO is
    recorded at every checkpoint (``training_status.json``), None for none.
    """

    def __init__(
        self,
        *,
        trainer: Trainer,
        controller: GhostController,
        seed: int,
        status: TrainingStatus | None = None,
    ) -> None:
        settings = trainer.settings.self_play
        if not isinstance(settings, SelfPlaySettings):
            raise ValueError(f"{trainer.behavior_name}: a ghost trainer needs a self_play section")
        super().__init__(trainer)
        self.controller = controller
        self.self_play = settings
        self.status = status
        self.window = int(settings.window)
        self.play_against_latest_model_ratio = float(settings.play_against_latest_model_ratio)
        if settings.team_change > trainer.settings.max_steps:
            logger.warning(
                "Behavior %s: team_change (%d) exceeds max_steps (%d): this team will not face an opponent "
                "that has trained, if the opponent is another behavior (an asymmetric game).",
                self.behavior_name,
                settings.team_change,
                trainer.settings.max_steps,
            )
        name_hash = zlib.crc32(self.behavior_name.encode())
        self._rng = np.random.default_rng(
            np.random.SeedSequence([int(seed) & 0xFFFFFFFF, int(Stream.SELF_PLAY_SWAPS), name_hash])
        )

        # the wrapped trainer's side: it takes only what the ghost hands it
        self._to_trainer: AgentManagerQueue[Trajectory] = AgentManagerQueue(self.behavior_name)
        self._from_trainer: AgentManagerQueue[Any] = AgentManagerQueue(self.behavior_name)
        trainer.subscribe_trajectory_queue(self._to_trainer)
        trainer.publish_policy_queue(self._from_trainer)
        trainer.checkpoint_extensions[CHECKPOINT_KEY] = self

        # the teams' side: behavior id -> (team, manager)
        self._teams: dict[str, tuple[int, AgentManager]] = {}
        self.reporter = trainer.stats_reporter
        self.reporter.add_property(StatsProperty.SELF_PLAY, True)

        self.ghost_step = 0  # steps of the ghosted teams' trajectories (swap schedule)
        self.steps_past_max = 0  # learning-team steps after the wrapped trainer's max_steps
        self.snapshots: list[Weights] = []
        self.snapshot_counter = 0
        self.current_weights: Weights | None = None  # the learning policy's latest weights
        self.policy_elos = [float(settings.initial_elo)] * (self.window + 1)
        self.current_opponent = 0  # the ghosted teams start with the initial policy, snapshot 0
        self.learning_team: int | None = None  # the team this ghost last acted on as learning
        self.last_save = 0
        self.last_swap = 0
        self.last_team_change = 0
        self._restored = False
        # add_team (main thread) and advance (the trainer's thread when threaded) take turns
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ the trainer's face

    @property
    def checkpoints(self) -> BehaviorCheckpoints | None:
        return self.trainer.checkpoints

    @property
    def step(self) -> int:
        """The wrapped trainer's step."""
        return self.trainer.step

    @property
    def should_still_train(self) -> bool:
        return self.trainer.should_still_train

    @property
    def schedule_step(self) -> int:
        """ML-Agents' trainer step: the learning team's steps, also those after max_steps."""
        return self.trainer.step + self.steps_past_max

    def close_queues(self) -> None:
        for _, manager in self._teams.values():
            manager.trajectory_queue.close()
        self.trainer.close_queues()

    def save_checkpoint(self) -> CheckpointRecord:
        return self.trainer.save_checkpoint()

    def save_final(self) -> Path | None:
        return self.trainer.save_final()

    def resume(self, *, replay_buffer: bool = True) -> None:
        """The wrapped trainer's resume; the self-play state comes back through
        :meth:`load_checkpoint_state` (ELO from training_status.json when the checkpoint has
        none)."""
        self.trainer.resume(replay_buffer=replay_buffer)
        if not self._restored and self.status is not None:
            elo = self.status.parameter(self.behavior_name, STATUS_ELO_KEY)
            if elo is not None:
                self.policy_elos = [float(elo)] * (self.window + 1)

    def initialize_from(self, path: str | Path) -> None:
        self.trainer.initialize_from(path)

    # ------------------------------------------------------------------ wiring

    def add_team(self, behavior_id: str, manager: AgentManager) -> None:
        """A team's AgentManager: its trajectories come to this ghost, its policy queue gets
        the learning policy's weights while its team learns, a snapshot's otherwise."""
        team = BehaviorIdentifiers.from_name_behavior_id(behavior_id).team_id
        with self._lock:
            first = not self._teams
            self._teams[behavior_id] = (team, manager)
            self.controller.subscribe_team(team, self)
            if first:
                self.current_weights = self.trainer.policy.get_weights()
                if not self._restored:
                    self._save_snapshot()  # the initial policy is the first snapshot
                if self.learning_team is None:
                    self.learning_team = self.controller.learning_team
            if team == self.learning_team:
                manager.policy_queue.put(self.current_weights)
            elif self._restored and self.snapshots:
                manager.policy_queue.put(self._opponent_weights())

    # ------------------------------------------------------------------ the loop

    def advance(self, timeout: float = 0.0) -> bool:
        """Route the teams' trajectories (waiting up to ``timeout`` s for the first), advance
        the wrapped trainer, then snapshots, team changes and swaps as due (ML-Agents' order).
        Returns whether anything was done."""
        with self._lock:
            if self._teams:
                return self._advance(timeout)
        time.sleep(timeout)  # no team yet: a threaded trainer starts before its first team
        return False

    def _advance(self, timeout: float) -> bool:
        worked = self._route(timeout)
        worked = self._train_on_routed() or worked
        if self.schedule_step - self.last_team_change > self.self_play.team_change:
            self.controller.change_learning_team(self.schedule_step)
            self.last_team_change = self.schedule_step
        next_team = self.controller.learning_team
        ours = self._managers_of(next_team)

        # the learning team acts with the trainer's latest weights and normalisers; snapshots
        # (and the latest policy as an opponent) keep the normalisers of their update, as ML-Agents'
        weights, stats = newest_updates(self._from_trainer.drain())
        if weights is not None:
            self.current_weights = weights
        if self.learning_team == next_team:
            for update in (weights, stats):
                if update is not None:
                    for manager in ours:
                        manager.policy_queue.put(update)
        if self.learning_team != next_team:
            for manager in ours:  # a team of ours starts learning: it gets the latest policy
                manager.policy_queue.put(self.current_weights)

        if self.schedule_step - self.last_save > self.self_play.save_steps:
            self._save_snapshot()
            self.last_save = self.schedule_step
        if self.learning_team != next_team or self.ghost_step - self.last_swap > self.self_play.swap_steps:
            self.learning_team = next_team
            self._swap_snapshots()
            self.last_swap = self.ghost_step
        return worked

    def _managers_of(self, team: int) -> list[AgentManager]:
        return [manager for t, manager in self._teams.values() if t == team]

    def _route(self, timeout: float) -> bool:
        """Hand the learning team's trajectories to the wrapped trainer, count the others'.

        A bounded team queue (a threaded trainer's) is the environment's back-pressure: the
        trainer is handed no more than that bound at a time, and the rest waits in the team's
        queue until the trainer has taken what it was handed (:meth:`_train_on_routed`), so a
        trainer that updates slower than the environment steps holds the environment back
        instead of falling ever further behind it on stale policies."""
        worked = False
        for team, manager in list(self._teams.values()):
            queue = manager.trajectory_queue
            learning = team == self.learning_team
            for i in range(MAX_TRAJECTORIES_PER_ADVANCE):
                if learning and 0 < queue.maxlen <= self._to_trainer.qsize():
                    worked = True  # the trainer has its fill to work through: no waiting
                    break
                try:
                    trajectory = queue.get(timeout=timeout if i == 0 and not worked else 0.0)
                except AgentManagerQueue.Empty:
                    break
                worked = True
                if learning:
                    if not self.trainer.should_still_train:
                        self.steps_past_max += trajectory.length
                    self._to_trainer.put(trajectory)
                    self._record_episode(trajectory)
                else:
                    self.ghost_step += trajectory.length
        return worked

    def _train_on_routed(self) -> bool:
        """Advance the wrapped trainer until it has taken every trajectory routed to it, as
        ML-Agents' trainer takes its whole queue in one advance, so the schedule's checks that
        follow count every trajectory routed while its team learned. (A trainer that updates
        between trajectories, SAC, takes one per advance: advanced once, it still held up to a
        queue's bound of them when its team's turn ended, and took them during the next team's
        turn, counting them, ~100 steps in the threaded SAC test, into its own next turn.)
        Returns whether it did anything."""
        worked = progressed = self.trainer.advance(0.0)
        while progressed and not self._to_trainer.empty():
            progressed = self.trainer.advance(0.0)
        return worked

    def _record_episode(self, trajectory: Trajectory) -> None:
        """ELO from a learning-team trajectory that ends its episode (not interrupted, every
        group mate done too): the final step's reward + group reward decides the result."""
        if not trajectory.done_reached or bool(trajectory.interrupted[-1]):
            return
        if not trajectory.all_group_dones_reached:
            return
        final_reward = float(trajectory.rewards[-1]) + float(trajectory.group_rewards[-1])
        change = self.controller.record_result(self.current_elo, episode_result(final_reward))
        self.policy_elos[-1] += change
        self.reporter.add_stat(SELF_PLAY_ELO, self.current_elo)

    # ------------------------------------------------------------------ ELO

    @property
    def current_elo(self) -> float:
        """The learning policy's rating (the last of ``policy_elos``)."""
        return self.policy_elos[-1]

    @property
    def opponent_elo(self) -> float:
        """The rating of the policy this ghost's ghosted teams act with now."""
        return self.policy_elos[self.current_opponent]

    def change_opponent_elo(self, change: float) -> None:
        """The opponent loses what the learning team gained."""
        self.policy_elos[self.current_opponent] -= change

    # ------------------------------------------------------------------ snapshots

    def _save_snapshot(self) -> None:
        """The learning policy's weights into the window (oldest replaced), rated as it is."""
        weights = self.current_weights if self.current_weights is not None else self.trainer.policy.get_weights()
        if self.snapshot_counter < len(self.snapshots):
            self.snapshots[self.snapshot_counter] = weights
        else:
            self.snapshots.append(weights)
        self.policy_elos[self.snapshot_counter] = self.current_elo
        self.snapshot_counter = (self.snapshot_counter + 1) % self.window

    def _draw_opponent(self) -> int:
        """ML-Agents' draw: a random snapshot with probability 1 - ratio, else the latest."""
        if self._rng.uniform() < 1.0 - self.play_against_latest_model_ratio:
            return int(self._rng.integers(len(self.snapshots)))
        return LATEST

    def _opponent_weights(self) -> Weights:
        if self.current_opponent == LATEST or self.current_opponent >= len(self.snapshots):
            return self.current_weights if self.current_weights is not None else self.trainer.policy.get_weights()
        return self.snapshots[self.current_opponent]

    def _swap_snapshots(self) -> None:
        """Every ghosted team of this trainer gets a newly drawn opponent policy."""
        teams = sorted({team for team, _ in self._teams.values()})
        for team in teams:
            if team == self.learning_team:
                continue
            self.current_opponent = self._draw_opponent()
            weights = self._opponent_weights()
            for manager in self._managers_of(team):
                manager.policy_queue.put(weights)
            logger.debug(
                "%s: ghost step %d: team %d now plays snapshot %s (team %s learning)",
                self.behavior_name,
                self.ghost_step,
                team,
                "latest" if self.current_opponent == LATEST else self.current_opponent,
                self.learning_team,
            )

    # ------------------------------------------------------------------ checkpoints

    def checkpoint_state(self) -> dict[str, Any]:
        """Everything --resume needs (saved in every checkpoint of the wrapped trainer); also
        records the learning policy's ELO in training_status.json."""
        if self.status is not None:
            self.status.set_parameter(self.behavior_name, STATUS_ELO_KEY, self.current_elo)
        return {
            "format": 1,
            "snapshots": [dict(s) for s in self.snapshots],
            "snapshot_counter": self.snapshot_counter,
            "policy_elos": list(self.policy_elos),
            "current_opponent": self.current_opponent,
            "learning_team": -1 if self.learning_team is None else self.learning_team,
            "ghost_step": self.ghost_step,
            "steps_past_max": self.steps_past_max,
            "last_save": self.last_save,
            "last_swap": self.last_swap,
            "last_team_change": self.last_team_change,
            "controller": self.controller.state(),
            "rng": self._rng.bit_generator.state,
        }

    def load_checkpoint_state(self, state: Mapping[str, Any] | None, path: Path) -> None:
        """Restore :meth:`checkpoint_state` (``path``: the checkpoint, for messages). A
        checkpoint without self-play state (the section was added later) starts self-play
        afresh, with a warning."""
        if state is None:
            logger.warning("%s: %s holds no self-play state; self-play starts afresh", self.behavior_name, path)
            return
        try:
            elos = [float(e) for e in state["policy_elos"]]
            snapshots = [dict(s) for s in state["snapshots"]]
            counters = {
                k: int(state[k])
                for k in (
                    "snapshot_counter",
                    "current_opponent",
                    "learning_team",
                    "ghost_step",
                    "steps_past_max",
                    "last_save",
                    "last_swap",
                    "last_team_change",
                )
            }
            controller = state["controller"]
            rng = state["rng"]
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f"{path}: its self-play state is incomplete ({error!r})") from None
        saved_window = len(elos) - 1
        if saved_window < 1 or len(snapshots) > saved_window:
            raise CheckpointError(
                f"{path}: its self-play state does not fit ({len(snapshots)} snapshots, {len(elos)} ratings)"
            )
        if saved_window != self.window:
            logger.warning(
                "%s: self_play.window changed from %d to %d; keeping the newest snapshots that fit",
                self.behavior_name,
                saved_window,
                self.window,
            )
            n = len(snapshots)
            oldest = counters["snapshot_counter"] if n == saved_window else 0
            kept = [(oldest + i) % n for i in range(n)][-self.window :]
            snapshots = [snapshots[i] for i in kept]
            unused = [float(self.self_play.initial_elo)] * (self.window - len(kept))
            elos = [elos[i] for i in kept] + unused + [elos[-1]]
            counters["snapshot_counter"] = len(snapshots) % self.window
            counters["current_opponent"] = LATEST
        self.snapshots = snapshots
        self.policy_elos = elos
        self.snapshot_counter = counters["snapshot_counter"]
        self.current_opponent = counters["current_opponent"]
        self.learning_team = None if counters["learning_team"] < 0 else counters["learning_team"]
        self.ghost_step = counters["ghost_step"]
        self.steps_past_max = counters["steps_past_max"]
        self.last_save = counters["last_save"]
        self.last_swap = counters["last_swap"]
        self.last_team_change = counters["last_team_change"]
        self.controller.load_state(controller)
        try:
            self._rng.bit_generator.state = rng
        except (TypeError, ValueError, KeyError):
            logger.warning("%s: could not restore the snapshot draws' random state", self.behavior_name)
        self._restored = True
