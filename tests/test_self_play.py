"""Self-play (the ghost trainer): ELO arithmetic against hand-worked numbers, the snapshot /
swap / team-change schedule on a counting trainer double, the state's round trip through a
checkpoint, and a real run with two teams: ``Self-play/ELO`` written and shown on the
console, --resume restoring the ratings and the snapshot window."""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import attrs
import numpy as np
import pytest
import torch

from envs.builtin import make_env
from orchestration.run import build_run
from processors import AgentManagerQueue
from processors.trajectory import Trajectory
from stats import ConsoleWriter, StatsHub, StatsProperty, StatsWriter
from stats.tags import SELF_PLAY_ELO
from tests.support.learning import PPO_TEST_CONFIG
from trainers.exceptions import ConfigError
from trainers.files.checkpoints import load_state
from trainers.files.status import TrainingStatus
from trainers.loop.ghost import (
    CHECKPOINT_KEY,
    LATEST,
    GhostController,
    GhostTrainer,
    elo_change,
    elo_expected_score,
    episode_result,
)
from trainers.networks.policy import NormalizerStats
from trainers.settings import RunOptions, SelfPlaySettings, TrainerSettings, structure_run_options

# ---------------------------------------------------------------- ELO, by hand


def test_expected_score_by_hand():
    # equal ratings: 0.5; +200: 1 / (1 + 10^(-200/400)) = 1 / (1 + 0.316228) = 0.759747
    assert elo_expected_score(1200, 1200) == 0.5
    assert elo_expected_score(1400, 1200) == pytest.approx(0.759747, abs=1e-6)
    assert elo_expected_score(1200, 1400) == pytest.approx(0.240253, abs=1e-6)
    # -100: 1 / (1 + 10^(100/400)) = 1 / (1 + 1.778279) = 0.359935
    assert elo_expected_score(1200, 1300) == pytest.approx(0.359935, abs=1e-6)


def test_elo_change_is_result_minus_expected_with_k_1():
    assert elo_change(1200, 1200, 1.0) == 0.5
    assert elo_change(1200, 1200, 0.0) == -0.5
    assert elo_change(1200, 1200, 0.5) == 0.0
    assert elo_change(1400, 1200, 0.0) == pytest.approx(-0.759747, abs=1e-6)
    assert elo_change(1200, 1400, 0.5) == pytest.approx(0.5 - 0.240253, abs=1e-6)


@pytest.mark.parametrize(("reward", "result"), [(1.0, 1.0), (1e-6, 1.0), (0.0, 0.5), (-0.2, 0.0)])
def test_result_is_the_sign_of_the_final_reward(reward, result):
    assert episode_result(reward) == result


# ---------------------------------------------------------------- test doubles


def trajectory(behavior_id: str, length: int, final_reward: float = 0.0, *, done=True, interrupted=False):
    t = length
    rewards = np.zeros(t, np.float32)
    rewards[-1] = final_reward
    flags = np.zeros(t, bool)
    flags[-1] = done
    cut = np.zeros(t, bool)
    cut[-1] = done and interrupted
    empty = np.zeros((t, 0), np.float32)
    return Trajectory(
        behavior_id=behavior_id,
        agent_id="agent_0-0",
        obs=(np.zeros((t, 1), np.float32),),
        next_obs=(np.zeros(1, np.float32),),
        rewards=rewards,
        done=flags,
        interrupted=cut,
        continuous_actions=empty,
        discrete_actions=np.zeros((t, 0), np.int32),
        continuous_log_probs=empty,
        discrete_log_probs=empty,
        action_masks=np.zeros((t, 0), bool),
        prev_continuous_actions=empty,
        prev_discrete_actions=np.zeros((t, 0), np.int32),
        memories=empty,
    )


class CountingPolicy:
    """A policy whose weights are its version number."""

    def __init__(self):
        self.version = 0

    def get_weights(self):
        return {"version": torch.tensor(self.version)}


class CountingTrainer:
    """The trainer loop's face: counts the steps of every trajectory it takes (up to
    max_steps, as Trainer does) and makes each one an update that bumps the policy version."""

    def __init__(self, name: str, settings: TrainerSettings, reporter):
        self.behavior_name = name
        self.settings = settings
        self.stats_reporter = reporter
        self.checkpoints = None
        self.perf = None
        self.timers = None
        self.policy = CountingPolicy()
        self.step = 0
        self.taken: list[Trajectory] = []
        self.checkpoint_extensions = {}
        self._in: list[AgentManagerQueue] = []
        self._out: list[AgentManagerQueue] = []

    @property
    def should_still_train(self):
        return self.step < self.settings.max_steps

    def subscribe_trajectory_queue(self, q):
        self._in.append(q)

    def publish_policy_queue(self, q):
        self._out.append(q)

    def close_queues(self):
        pass

    def advance(self, timeout=0.0):
        worked = False
        for q in self._in:
            while not q.empty():
                t = q.get_nowait()
                worked = True
                if self.should_still_train:
                    self.taken.append(t)
                    self.step += t.length
                    self.policy.version += 1
                    for out in self._out:
                        out.put(self.policy.get_weights())
        return worked


def team(behavior_id: str, maxlen: int = 0) -> SimpleNamespace:
    """A team's AgentManager: ``maxlen`` bounds its trajectory queue, as a threaded trainer's."""
    return SimpleNamespace(
        trajectory_queue=AgentManagerQueue(behavior_id, maxlen=maxlen),
        policy_queue=AgentManagerQueue(behavior_id),
        id=behavior_id,
    )


def versions(manager) -> list[int]:
    out = []
    while not manager.policy_queue.empty():
        out.append(int(manager.policy_queue.get_nowait()["version"]))
    return out


def ghost(name="Game", controller=None, *, max_steps=10_000, status=None, hub=None, **self_play):
    settings = attrs.evolve(PPO_TEST_CONFIG, max_steps=max_steps, self_play=SelfPlaySettings(**self_play))
    hub = hub if hub is not None else StatsHub()
    trainer = CountingTrainer(name, settings, hub.reporter(name))
    return GhostTrainer(trainer=trainer, controller=controller or GhostController(), seed=3, status=status), trainer


# ---------------------------------------------------------------- controller


def test_teams_rotate_in_the_order_they_appeared():
    c = GhostController()
    a, b = object(), object()
    c.subscribe_team(0, a)
    c.subscribe_team(1, b)
    c.subscribe_team(1, a)  # a team keeps its first trainer
    c.subscribe_team(2, a)
    assert c.learning_team == 0
    seen = []
    for step in range(6):
        c.change_learning_team(step)
        seen.append(c.learning_team)
    assert seen == [1, 2, 0, 1, 2, 0]
    assert c.should_reset() and not c.should_reset()
    assert c.changes == 6


def test_a_newer_saved_rotation_is_adopted_an_older_one_is_not():
    c = GhostController()
    c.subscribe_team(0, object())
    c.subscribe_team(1, object())
    c.load_state({"learning_team": 1, "queue": [0], "changes": 3})
    assert c.learning_team == 1 and c.changes == 3
    c.load_state({"learning_team": 0, "queue": [1], "changes": 2})
    assert c.learning_team == 1
    c.change_learning_team(0)
    assert c.learning_team == 0


# ---------------------------------------------------------------- the schedule


def test_snapshots_swaps_and_team_changes_follow_the_step_counts():
    g, trainer = ghost(save_steps=10, swap_steps=10, team_change=25, window=3, play_against_latest_model_ratio=1.0)
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    assert g.learning_team == 0 and [int(s["version"]) for s in g.snapshots] == [0]
    assert versions(blue) == [0] and versions(red) == []
    history = []
    for n in range(1, 13):
        blue.trajectory_queue.put(trajectory(blue.id, 5))
        red.trajectory_queue.put(trajectory(red.id, 5))
        g.advance()
        history.append((n, g.learning_team, versions(blue), versions(red)))
    # Advance n: the learning team's trajectory is update n (policy version n); 5 steps each.
    # Team 0 learns until the trainer step exceeds team_change 25 (advance 6, step 30);
    # team 1 then learns from the latest policy (6) while team 0 plays it too (ratio 1).
    # Swaps: when the ghost steps (the other team's) exceed the last swap by > 10: 15, 30(team
    # change), 45, 60 ...; team 1 then learns and step 30 + 25 < 60 -> the next change at 12.
    assert history[:6] == [
        (1, 0, [1], []),
        (2, 0, [2], []),
        (3, 0, [3], [3]),  # ghost step 15 > 10: red swapped to the latest policy
        (4, 0, [4], []),
        (5, 0, [5], []),
        (6, 1, [6], [6]),  # step 30 > 25: team 1 learns (gets the latest); team 0 swapped to it
    ]
    assert history[6:] == [
        (7, 1, [], [7]),
        (8, 1, [], [8]),
        (9, 1, [9], [9]),  # ghost step (team 0 now) 45 - 30 > 10: team 0 swapped
        (10, 1, [], [10]),
        (11, 1, [], [11]),
        (12, 0, [12], [12]),  # step 60 - 30 > 25: back to team 0 (red swapped to the latest)
    ]
    # trajectories are routed before the team changes: advances 1-6 team 0's, 7-12 team 1's
    assert [t.behavior_id for t in trainer.taken] == [blue.id] * 6 + [red.id] * 6
    # snapshots every > 10 steps: steps 15 (v3), 30 (v6), 45 (v9), 60 (v12) in a window of 3
    assert [int(s["version"]) for s in g.snapshots] == [9, 12, 6]
    assert g.snapshot_counter == 2


class NormalizingTrainer(CountingTrainer):
    """Publishes normaliser statistics (a count of the trajectories taken) after every
    trajectory and new weights only after every second one, as a trainer with ``normalize``."""

    def advance(self, timeout=0.0):
        worked = False
        for q in self._in:
            while not q.empty():
                self.taken.append(q.get_nowait())
                worked = True
                if len(self.taken) % 2 == 0:
                    self.policy.version += 1
                    for out in self._out:
                        out.put(self.policy.get_weights())
                for out in self._out:
                    out.put(NormalizerStats({"count": torch.tensor(len(self.taken))}))
        return worked


def test_normaliser_statistics_reach_the_learning_team_only_and_snapshots_keep_their_update():
    settings = attrs.evolve(PPO_TEST_CONFIG, self_play=SelfPlaySettings(save_steps=4, swap_steps=100, team_change=1000))
    trainer = NormalizingTrainer("Game", settings, StatsHub().reporter("Game"))
    g = GhostTrainer(trainer=trainer, controller=GhostController(), seed=3)
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    blue.policy_queue.drain()
    received = []
    for _ in range(3):
        blue.trajectory_queue.put(trajectory(blue.id, 5))
        g.advance()
        received.append(
            [
                ("stats", int(u.state["count"])) if isinstance(u, NormalizerStats) else ("weights", int(u["version"]))
                for u in blue.policy_queue.drain()
            ]
        )
    assert received == [[("stats", 1)], [("weights", 1), ("stats", 2)], [("stats", 3)]]
    assert all(not isinstance(u, NormalizerStats) for u in red.policy_queue.drain())
    assert all(set(snapshot) == {"version"} for snapshot in g.snapshots)  # full weights, as updated
    assert g.current_weights is not None and int(g.current_weights["version"]) == 1


def test_opponents_draw_snapshots_of_the_window_with_the_ratio():
    g, _ = ghost(save_steps=1, swap_steps=1, team_change=10**6, window=4, play_against_latest_model_ratio=0.25)
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    drawn = []
    for _ in range(400):
        blue.trajectory_queue.put(trajectory(blue.id, 2))
        red.trajectory_queue.put(trajectory(red.id, 2))
        g.advance()
        drawn.append(g.current_opponent)
    assert set(drawn) <= {LATEST, 0, 1, 2, 3}
    latest = drawn.count(LATEST) / len(drawn)
    assert 0.15 < latest < 0.35, latest  # 0.25 + a random snapshot never counts as latest
    assert {0, 1, 2, 3} <= set(drawn)
    # a snapshot opponent plays that snapshot's weights
    assert int(g._opponent_weights()["version"]) == int(g.snapshots[g.current_opponent]["version"]) or (
        g.current_opponent == LATEST
    )


def test_team_change_keeps_counting_after_max_steps():
    """The learning behavior reached max_steps: its steps still count (as ML-Agents'), so the
    other behavior of an asymmetric game gets its turn."""
    c = GhostController()
    striker, s_trainer = ghost("Striker", c, max_steps=20, team_change=30, save_steps=100, swap_steps=100)
    goalie, g_trainer = ghost("Goalie", c, max_steps=20, team_change=30, save_steps=100, swap_steps=100)
    s_team, g_team = team("Striker?team=0"), team("Goalie?team=1")
    striker.add_team(s_team.id, s_team)
    goalie.add_team(g_team.id, g_team)
    for _ in range(7):
        s_team.trajectory_queue.put(trajectory(s_team.id, 5))
        g_team.trajectory_queue.put(trajectory(g_team.id, 5))
        striker.advance()
        goalie.advance()
    assert s_trainer.step == 20 and not striker.should_still_train
    assert striker.schedule_step == 35 and c.learning_team == 1
    assert g_trainer.step == 0 and goalie.learning_team == 1
    assert versions(g_team)[-1] == 0  # the goalie learns on from its own latest policy


class OneAtATimeTrainer(CountingTrainer):
    """Takes one trajectory per advance: a trainer that updates slower than its environment
    steps (SAC updates once per step taken)."""

    def advance(self, timeout=0.0):
        for q in self._in:
            if not q.empty():
                self.taken.append(q.get_nowait())
                self.step += self.taken[-1].length
                return True
        return False


def test_a_threaded_trainer_behind_its_environment_holds_the_environment_back():
    """A threaded trainer's team queues are bounded so that a full one blocks the environment;
    the ghost hands its trainer no more than that bound at a time, and the trainer takes all of
    it before the ghost routes more, however slowly it updates. (It took everything into a queue
    of its own: in a threaded SAC self-play run the environment ran 32,604 steps ahead of 8,000
    trainer steps on stale policies, and SimpleOpp ended at -0.25.) The other team's
    trajectories are still only counted."""
    settings = attrs.evolve(PPO_TEST_CONFIG, self_play=SelfPlaySettings(team_change=1000))
    trainer = OneAtATimeTrainer("Game", settings, StatsHub().reporter("Game"))
    g = GhostTrainer(trainer=trainer, controller=GhostController(), seed=3)
    blue, red = team("Game?team=0", maxlen=3), team("Game?team=1", maxlen=3)
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    blue.trajectory_queue.put(trajectory(blue.id, 5))
    taken = []
    for _ in range(3):
        while blue.trajectory_queue.qsize() < 3:  # the environment fills what room there is
            blue.trajectory_queue.put(trajectory(blue.id, 5))
            red.trajectory_queue.put(trajectory(red.id, 5))
        assert g.advance(timeout=1.0)
        taken.append((len(trainer.taken), blue.trajectory_queue.qsize()))
    # each advance hands over the 3 the queue holds, and the trainer takes them one at a time
    assert taken == [(3, 0), (6, 0), (9, 0)]
    assert {t.behavior_id for t in trainer.taken} == {blue.id}
    assert red.trajectory_queue.empty() and g.ghost_step == 5 * (2 + 3 + 3)


def test_a_turn_counts_every_trajectory_routed_before_the_team_changes():
    """ML-Agents' trainer takes its whole queue in one advance, then the ghost checks the team
    change: a trainer that takes one trajectory per advance (SAC) is advanced until it has taken
    everything routed, so its turn ends on the steps of all of them, not on the first that crossed
    team_change with the rest taken (and counted) during the other team's turn."""
    settings = attrs.evolve(PPO_TEST_CONFIG, self_play=SelfPlaySettings(team_change=25))
    trainer = OneAtATimeTrainer("Game", settings, StatsHub().reporter("Game"))
    controller = GhostController()
    g = GhostTrainer(trainer=trainer, controller=controller, seed=3)
    blue, red = team("Game?team=0", maxlen=20), team("Game?team=1", maxlen=20)
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    for _ in range(8):
        blue.trajectory_queue.put(trajectory(blue.id, 5))
    g.advance()
    assert trainer.step == 40 and controller.learning_team == 1
    assert g.last_team_change == 40 and g.schedule_step == 40
    # team 1's turn: 6 trajectories (step 70 > 40 + 25) hand it back to team 0
    for _ in range(6):
        red.trajectory_queue.put(trajectory(red.id, 5))
    g.advance()
    assert trainer.step == 70 and controller.learning_team == 0 and g.last_team_change == 70


# ---------------------------------------------------------------- ELO through the trainers


def test_asymmetric_elo_moves_both_behaviors_ratings():
    c = GhostController()
    striker, _ = ghost("Striker", c)
    goalie, _ = ghost("Goalie", c)
    s_team, g_team = team("Striker?team=0"), team("Goalie?team=1")
    striker.add_team(s_team.id, s_team)
    goalie.add_team(g_team.id, g_team)
    s_team.trajectory_queue.put(trajectory(s_team.id, 3, final_reward=1.0))
    striker.advance()
    # 1200 vs 1200: expected 0.5, a win moves 0.5 each way
    assert striker.current_elo == 1200.5 and goalie.opponent_elo == 1199.5
    s_team.trajectory_queue.put(trajectory(s_team.id, 3, final_reward=-1.0))
    striker.advance()
    # 1200.5 vs 1199.5: expected 1 / (1 + 10^(-1/400)) = 0.501439, a loss moves it
    assert striker.current_elo == pytest.approx(1200.5 - 0.501439, abs=1e-6)
    assert goalie.opponent_elo == pytest.approx(1199.5 + 0.501439, abs=1e-6)
    # interrupted episodes, cut trajectories and the ghosted team's episodes do not count
    s_team.trajectory_queue.put(trajectory(s_team.id, 3, final_reward=1.0, interrupted=True))
    s_team.trajectory_queue.put(trajectory(s_team.id, 3, final_reward=1.0, done=False))
    g_team.trajectory_queue.put(trajectory(g_team.id, 3, final_reward=1.0))
    before = striker.current_elo
    striker.advance()
    goalie.advance()
    assert striker.current_elo == before


def test_symmetric_elo_against_the_latest_policy_does_not_move_as_in_mlagents():
    """Against the latest policy the opponent's rating is the learner's own slot: ML-Agents
    adds and takes away the same change."""
    g, _ = ghost(play_against_latest_model_ratio=1.0, swap_steps=1)
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    assert g.current_opponent == 0  # the initial policy, snapshot 0
    red.trajectory_queue.put(trajectory(red.id, 3))
    g.advance()  # ghost step 3 > 1: swapped to the latest
    assert g.current_opponent == LATEST
    blue.trajectory_queue.put(trajectory(blue.id, 3, final_reward=1.0))
    g.advance()
    assert g.current_elo == 1200.0


def test_symmetric_elo_against_a_snapshot():
    g, _ = ghost(play_against_latest_model_ratio=0.0, initial_elo=1000.0)
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    assert g.current_opponent == 0  # red plays the initial policy, snapshot 0, rated 1000
    blue.trajectory_queue.put(trajectory(blue.id, 3, final_reward=0.0))
    g.advance()  # a draw between equals: no change
    assert g.current_elo == 1000.0
    blue.trajectory_queue.put(trajectory(blue.id, 3, final_reward=2.0))
    g.advance()
    assert g.current_elo == 1000.5 and g.policy_elos[0] == 999.5


# ---------------------------------------------------------------- checkpoints


def test_state_round_trips_through_a_checkpoint_file(tmp_path):
    status = TrainingStatus(tmp_path / "run_logs" / "training_status.json")
    g, _ = ghost(
        status=status, save_steps=4, swap_steps=4, team_change=12, window=3, play_against_latest_model_ratio=0.5
    )
    blue, red = team("Game?team=0"), team("Game?team=1")
    g.add_team(blue.id, blue)
    g.add_team(red.id, red)
    for n in range(9):
        blue.trajectory_queue.put(trajectory(blue.id, 3, final_reward=(-1.0) ** n))
        red.trajectory_queue.put(trajectory(red.id, 3, final_reward=1.0))
        g.advance()
    path = tmp_path / "checkpoint.pt"
    torch.save({"step": 1, CHECKPOINT_KEY: g.checkpoint_state()}, path)
    assert json.loads(status.path.read_text())["Game"]["elo"] == g.current_elo

    again, _ = ghost(save_steps=4, swap_steps=4, team_change=12, window=3, play_against_latest_model_ratio=0.5)
    again.load_checkpoint_state(load_state(path)[CHECKPOINT_KEY], path)
    for field in (
        "policy_elos",
        "snapshot_counter",
        "current_opponent",
        "learning_team",
        "ghost_step",
        "steps_past_max",
        "last_save",
        "last_swap",
        "last_team_change",
    ):
        assert getattr(again, field) == getattr(g, field), field
    assert [int(s["version"]) for s in again.snapshots] == [int(s["version"]) for s in g.snapshots]
    assert again.controller.state() == g.controller.state()
    assert [again._draw_opponent() for _ in range(20)] == [g._draw_opponent() for _ in range(20)]


def test_a_smaller_window_keeps_the_newest_snapshots(tmp_path):
    g, _ = ghost(save_steps=1, swap_steps=100, team_change=10**6, window=4)
    blue = team("Game?team=0")
    g.add_team(blue.id, blue)
    for _ in range(6):  # snapshots of versions 0, 1, ... in a ring of 4
        blue.trajectory_queue.put(trajectory(blue.id, 2))
        g.advance()
    ages = [int(g.snapshots[(g.snapshot_counter + i) % 4]["version"]) for i in range(4)]
    small, _ = ghost(save_steps=1, swap_steps=100, team_change=10**6, window=2)
    small.load_checkpoint_state(g.checkpoint_state(), tmp_path / "x.pt")
    assert [int(s["version"]) for s in small.snapshots] == ages[-2:]
    assert len(small.policy_elos) == 3 and small.snapshot_counter == 0


# ---------------------------------------------------------------- validation


def test_bad_self_play_values_are_refused_with_their_key_paths():
    with pytest.raises(ConfigError) as info:
        structure_run_options(
            {
                "behaviors": {
                    "A": {
                        "self_play": {
                            "window": 0,
                            "play_against_latest_model_ratio": 1.5,
                            "swap_steps": -3,
                            "team_change": 0,
                            "save_steps": 0,
                        }
                    }
                }
            }
        )
    text = str(info.value)
    for line in (
        "behaviors.A.self_play.window: must be > 0 (got 0)",
        "behaviors.A.self_play.play_against_latest_model_ratio: must be between 0 and 1 (got 1.5)",
        "behaviors.A.self_play.swap_steps: must be > 0 (got -3)",
        "behaviors.A.self_play.team_change: must be > 0 (got 0)",
        "behaviors.A.self_play.save_steps: must be > 0 (got 0)",
    ):
        assert line in text


# ---------------------------------------------------------------- a real run


class Keep(StatsWriter):
    def __init__(self):
        self.rows = []
        self.properties = []

    def write_stats(self, category, values, step):
        self.rows.append((category, step, dict(values)))

    def add_property(self, category, property_type, value):
        self.properties.append((category, property_type, value))


def run_options(tmp_path, *, max_steps: int, resume: bool = False) -> RunOptions:
    settings = attrs.evolve(
        PPO_TEST_CONFIG,
        max_steps=max_steps,
        checkpoint_interval=1000,
        self_play=SelfPlaySettings(
            save_steps=300, swap_steps=200, team_change=700, window=3, play_against_latest_model_ratio=0.3
        ),
    )
    options = RunOptions(default_settings=settings)
    cp = attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="sp", resume=resume)
    return attrs.evolve(options, checkpoint_settings=cp, env_settings=attrs.evolve(options.env_settings, seed=5))


def simple_two_teams(worker_id, seed):
    return make_env("Simple", seed=seed, worker_id=worker_id, num_teams=2, discrete_branches=1, continuous_size=0)


def test_a_two_team_run_writes_elo_and_resume_restores_the_window(tmp_path, caplog):
    keep = Keep()
    console = ConsoleWriter(log=logging.getLogger("test.console"))
    run = build_run(
        run_options(tmp_path, max_steps=1500), env_factory=simple_two_teams, writers=[keep, console], console=False
    )
    with caplog.at_level(logging.INFO, logger="test.console"):
        outcome = run.run()
    assert outcome.steps == {"Simple": pytest.approx(1500, abs=64)}
    first = run.controller.trainers["Simple"]
    assert isinstance(first, GhostTrainer)
    assert sorted(m.behavior_id for m in run.controller.managers["Simple"]) == ["Simple?team=0", "Simple?team=1"]
    assert ("Simple", StatsProperty.SELF_PLAY, True) in keep.properties
    elos = [values[SELF_PLAY_ELO].mean for category, _, values in keep.rows if SELF_PLAY_ELO in values]
    assert len(elos) >= 2 and len(set(elos)) > 1  # against snapshots the rating moves
    assert any("ELO: " in record.getMessage() for record in caplog.records)
    assert first.controller.changes == 2  # team_change 700: at steps > 700 and > 1400
    assert run.env_manager.reset_count == 2  # each change resets the environment (ML-Agents)
    status = json.loads((tmp_path / "sp" / "run_logs" / "training_status.json").read_text())
    assert status["Simple"]["elo"] == pytest.approx(first.current_elo)
    assert (tmp_path / "sp" / "Simple.onnx").exists()

    resumed = build_run(run_options(tmp_path, max_steps=2500, resume=True), env_factory=simple_two_teams, console=False)
    resumed.env_manager.advance(timeout=1.0)  # the behaviors appear: trainers created and resumed
    second = resumed.controller.trainers["Simple"]
    assert second.step == first.step
    assert second.policy_elos == first.policy_elos
    assert len(second.snapshots) == len(first.snapshots) == 3
    for a, b in zip(second.snapshots, first.snapshots):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for field in ("current_opponent", "learning_team", "ghost_step", "last_save", "last_swap", "last_team_change"):
        assert getattr(second, field) == getattr(first, field), field
    assert second.controller.state() == first.controller.state()
    outcome = resumed.run()
    assert outcome.steps["Simple"] >= 2500


def test_team_changes_reset_every_worker_process(tmp_path):
    options = run_options(tmp_path, max_steps=1200)
    options = attrs.evolve(options, env_settings=attrs.evolve(options.env_settings, num_envs=2))
    run = build_run(options, env_factory=simple_two_teams, console=False)
    outcome = run.run()
    assert outcome.steps["Simple"] >= 1200
    changes = run.controller.ghost_controller.changes
    assert changes == 1
    assert run.env_manager.reset_count == 2 * changes  # both workers, once per change
    assert run.env_manager.restart_count == 0


# ---------------------------------------------------------------- environment resets


def test_a_reset_request_drops_the_next_steps_and_resets_the_environment():
    from envs.workers import InProcessPool, OpenEnv
    from orchestration.env_manager import EnvManager
    from tests.test_env_manager import runtimes_factory

    env = make_env("3DBall", seed=1)
    resets = []
    original = env.reset
    env.reset = lambda: (resets.append(1), original())[1]  # type: ignore[method-assign]
    runtimes: dict = {}
    manager = EnvManager(InProcessPool(opener=lambda w: OpenEnv(env, lambda: {})), runtimes_factory(runtimes))
    for _ in range(3):
        manager.advance()
    agents = runtimes["3DBall?team=0"].manager
    assert agents.live_agents == 12 and resets == []
    manager.request_reset()
    assert manager.advance() == 0  # the step is dropped with the agents' unfinished data
    assert resets == [1] and manager.reset_count == 1 and agents.live_agents == 0
    assert agents.trajectory_queue.empty()  # nothing published
    manager.advance()
    assert agents.live_agents == 12  # the reset's first observations
    manager.close()


def test_a_pool_that_cannot_reset_goes_on_without(caplog):
    from orchestration.env_manager import EnvManager
    from tests.test_env_manager import ScriptedPool, runtimes_factory

    runtimes: dict = {}
    manager = EnvManager(ScriptedPool(), runtimes_factory(runtimes))
    manager.advance()
    manager.request_reset()
    with caplog.at_level(logging.WARNING):
        assert manager.advance() == 2
    assert "cannot reset its environments" in caplog.text and manager.reset_count == 0
    manager.request_reset()
    assert manager.advance() == 2
    manager.close()


def test_inference_acts_with_the_learning_policy_on_every_team(tmp_path):
    build_run(run_options(tmp_path, max_steps=600), env_factory=simple_two_teams, console=False).run()
    options = run_options(tmp_path, max_steps=600)
    options = attrs.evolve(
        options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, inference=True, resume=True)
    )
    run = build_run(options, env_factory=simple_two_teams, console=False)
    for _ in range(5):
        run.controller.advance(run.env_manager)
    trainer = run.controller.trainers["Simple"]
    assert not isinstance(trainer, GhostTrainer)
    learned = load_state(tmp_path / "sp" / "Simple" / "checkpoint.pt")
    assert learned["step"] == trainer.step
    for runtime in run.env_manager.runtimes.values():
        weights = runtime.policy.get_weights()
        assert all(torch.equal(weights[k], v) for k, v in trainer.policy.get_weights().items())
    run.env_manager.close()


def test_initialize_from_starts_the_window_with_the_loaded_policy(tmp_path):
    build_run(run_options(tmp_path / "a", max_steps=600), env_factory=simple_two_teams, console=False).run()
    options = run_options(tmp_path / "b", max_steps=600)
    settings = attrs.evolve(options.default_settings, init_path=str(tmp_path / "a" / "sp" / "Simple"))
    run = build_run(attrs.evolve(options, default_settings=settings), env_factory=simple_two_teams, console=False)
    run.env_manager.advance(timeout=1.0)
    ghost_trainer = run.controller.trainers["Simple"]
    assert isinstance(ghost_trainer, GhostTrainer) and ghost_trainer.step == 0
    loaded = load_state(tmp_path / "a" / "sp" / "Simple" / "checkpoint.pt")
    first = ghost_trainer.snapshots[0]  # the initial snapshot is the loaded actor
    assert first.keys() == loaded["actor"].keys()
    assert all(torch.equal(first[k], loaded["actor"][k]) for k in first)
    run.env_manager.close()
