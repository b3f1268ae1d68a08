"""Self-play learns, ML-Agents' ghost tests re-expressed (test_simple_rl.py: test_simple_ghost,
test_simple_ghost_fails, test_simple_asymm_ghost, test_simple_asymm_ghost_fails) on the
built-in Simple environment with two teams: each team solves its own task, so a team trains
only while it learns, or while it acts with a snapshot of a trained policy. As ML-Agents, a
behavior id is solved when the mean of its last 5 episode returns exceeds 0.9.

The "fails" tests are the controls: the schedule keeps one team on the untrained initial
policy until the end, so one behavior id is solved and another is not.

- symmetric fails: swap_steps (4000) is beyond max_steps (2500), so team 1 never leaves the
  initial snapshot;
- asymmetric fails uses ML-Agents' own numbers (latest ratio 0, save/swap 5000, team_change
  2000, max_steps 3000): the teams alternate every 2000 steps; after Simple's max_steps its
  steps still count, so at 4000 SimpleOpp learns its last 1000 steps while Simple plays a
  random snapshot of its window, which holds only the initial policy (no save before 5000).

Then a real competitive game, built-in LineSoccer (config/ppo/LineSoccer.yaml and, two per team
in groups, config/poca/LineSoccer.yaml): the ELO rises, and the learning policy beats random
play; with a learning rate of 0 (the control) neither happens.

Each claim, a control's included where it also asks a team to learn, holds on seed 1, else on
seed 2 (``first_or_second_seed``: a seed's run differs between CPUs' kernels). The asymmetric
learning runs stop once both behaviors have held above 0.9 for HOLD_STEPS environment steps
(each trainer counts only its learning team's steps); the controls run to max_steps.
"""

from __future__ import annotations

import tempfile

import attrs
import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from stats.tags import SELF_PLAY_ELO
from tests.support.learning import PPO_TEST_CONFIG, SAC_TEST_CONFIG, HeldAbove, first_or_second_seed, train_env
from trainers.settings import SelfPlaySettings, TrainerSettings, load_run_options

pytestmark = pytest.mark.slow  # trains policies

SUCCESS = 0.9
ACTIONS = {"discrete": {"continuous_size": 0, "discrete_branches": 1}, "continuous": {}}


def final_returns(
    actions: str,
    self_play: SelfPlaySettings,
    max_steps: int,
    *,
    asymmetric: bool = False,
    seed: int = 1,
    base: TrainerSettings = PPO_TEST_CONFIG,
    threaded: bool = False,
    last: int = 5,
    hold: bool = False,
) -> dict[str, float]:
    """Train Simple with two teams; the mean of the ``last`` returns per behavior id (ML-Agents
    takes 5). With ``hold`` the run stops once every behavior id has scored above SUCCESS for
    HOLD_STEPS steps of the environment (each trainer counts only its learning team's steps)."""
    env = make_env("Simple", seed=seed, num_teams=2, asymmetric=asymmetric, **ACTIONS[actions])
    settings = attrs.evolve(base, self_play=self_play, max_steps=max_steps, threaded=threaded)

    def scores() -> dict[str, float]:
        return {name: float(np.mean(returns[-last:])) for name, returns in env.episode_returns_by_behavior.items()}

    def lowest_score() -> float:
        if any(len(returns) < last for returns in env.episode_returns_by_behavior.values()):
            return float("-inf")
        return min(scores().values())

    until = HeldAbove(lowest_score, SUCCESS, clock=lambda: env.steps_taken) if hold else None
    train_env(env, settings, seed=seed, until=until)
    return scores()


def simple_ghost(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=2000, swap_steps=2000)
    return final_returns(actions, sp, 2500, seed=seed)


def simple_ghost_fails(actions: str, seed: int = 1) -> dict[str, float]:
    """Team 1 never swaps in a snapshot: it plays its initial policy. Over its last 5 episodes a
    random policy can look solved (continuous, seeds 1-6: 0.92 and 0.77 among them, once each
    team draws its own actions); over its last 20 it scores at most 0.36, the learner 1.02."""
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=2000, swap_steps=4000)
    return final_returns(actions, sp, 2500, seed=seed, last=20)


def simple_asymm_ghost(actions: str, seed: int = 1) -> dict[str, float]:
    """Stops once both behaviors held (seeds 1-4: after 1,800-2,700 environment steps, every
    score 1.006-1.02; run to max_steps, 8,050-8,070 steps in 10-19 s, all 1.02)."""
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=10000, swap_steps=10000, team_change=400)
    return final_returns(actions, sp, 4000, asymmetric=True, seed=seed, hold=True)


def simple_asymm_ghost_fails(actions: str, seed: int = 1) -> dict[str, float]:
    sp = SelfPlaySettings(play_against_latest_model_ratio=0.0, save_steps=5000, swap_steps=5000, team_change=2000)
    return final_returns(actions, sp, 3000, asymmetric=True, seed=seed)


def all_solved(returns: dict[str, float]) -> bool:
    return all(r > SUCCESS for r in returns.values())


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_ghost(actions):
    returns = first_or_second_seed(lambda seed: simple_ghost(actions, seed), all_solved)
    assert list(returns) == ["Simple?team=0", "Simple?team=1"]


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_ghost_fails(actions):
    first_or_second_seed(
        lambda seed: simple_ghost_fails(actions, seed), lambda r: r["Simple?team=0"] > SUCCESS > r["Simple?team=1"]
    )


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_asymm_ghost(actions):
    returns = first_or_second_seed(lambda seed: simple_asymm_ghost(actions, seed), all_solved)
    assert list(returns) == ["Simple?team=0", "SimpleOpp?team=1"]


@pytest.mark.parametrize("actions", ["discrete", "continuous"])
def test_simple_asymm_ghost_fails(actions):
    first_or_second_seed(
        lambda seed: simple_asymm_ghost_fails(actions, seed),
        lambda r: r["SimpleOpp?team=1"] > SUCCESS > r["Simple?team=0"],
    )


# SAC collects one team turn (team_change 400) of the initial policy's play before its first
# gradient step. With the test config's 100, seed 1's SimpleOpp could fall into going one way
# whatever the goal: the goal is observed but not the position, so one step against that habit
# does not pay, and the entropy coefficient sinks (to 0.0004) before the habit is left.
THREADED_SAC = attrs.evolve(
    SAC_TEST_CONFIG, hyperparameters=attrs.evolve(SAC_TEST_CONFIG.hyperparameters, buffer_init_steps=400)
)


@pytest.mark.parametrize(("base", "max_steps"), [(PPO_TEST_CONFIG, 4000), (THREADED_SAC, 3000)], ids=["ppo", "sac"])
def test_asymm_ghost_with_threaded_trainers_of_either_algorithm(base, max_steps):
    """The ghost wraps whatever algorithm the trainer runs, in the trainer's own thread; the run
    stops once both behaviors have held above 0.9 for HOLD_STEPS environment steps.

    Threads make each run's course depend on the machine's timing. PPO, measured alone (6
    seeds), under a 20 ms GIL switch interval (which reproduced the loaded suite's failures) and
    beside two CPU-bound processes: every seed held 1.0 after 1,900-2,400 environment steps
    (4-5 s). SAC with buffer_init_steps 400, beside another run on the second core: seeds 1 and 2
    held in 5 of 5 runs each, seeds 3-10 once each (2-5 s); under a 20 ms switch interval, seed 1
    in 3 of 3 and seed 2 in 2 of 2 (before the ghost took every routed trajectory before its
    schedule's checks: seed 1 in 12 of 12, seed 2 in 8 of 8, seeds 3-20). With the test config's
    100, seed 1 fell short in 8 of 23 loaded runs (SimpleOpp -1.10 to 0.17), 1 of 5 after that
    change; seeds 2-20 never (30 runs). Before the ghost kept its trainer's bound
    (``test_a_threaded_trainer_behind_its_environment_holds_the_environment_back``),
    SAC's seed 1 fell short in every loaded suite run, with SimpleOpp at -0.25 after 32,604
    environment steps for 8,000 trainer steps."""
    sp = SelfPlaySettings(play_against_latest_model_ratio=1.0, save_steps=10000, swap_steps=10000, team_change=400)
    first_or_second_seed(
        lambda seed: final_returns(
            "discrete", sp, max_steps, asymmetric=True, base=base, threaded=True, seed=seed, hold=True
        ),
        all_solved,
    )


# ---------------------------------------------------------------- a competitive game


class EloLog(StatsWriter):
    """The summaries' Self-play/ELO means."""

    def __init__(self):
        self.elos: list[float] = []

    def write_stats(self, category, values, step):
        if SELF_PLAY_ELO in values:
            self.elos.append(float(values[SELF_PLAY_ELO].mean))


def line_soccer(config: str, max_steps: int, *, seed: int = 1, learning_rate: float | None = None):
    """Self-play on built-in LineSoccer with ``config`` (its env settings, 8 areas); the ELO
    log and the learning policy."""
    options = load_run_options(config)
    settings = {}
    for name, behavior in options.behaviors.items():
        hyper = behavior.hyperparameters
        if learning_rate is not None:
            hyper = attrs.evolve(hyper, learning_rate=learning_rate)
        settings[name] = attrs.evolve(behavior, max_steps=max_steps, summary_freq=10_000, hyperparameters=hyper)
    log = EloLog()
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options,
            behaviors=settings,
            env_settings=attrs.evolve(options.env_settings, seed=seed),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="soccer"),
        )
        run = build_run(options, writers=[log], console=False)
        run.run()
    return log, run.controller.trainers["LineSoccer"].policy


def wins_against_random(policy, *, players: int = 1, seed: int = 7, games: int = 400) -> float:
    """The share of ``games`` LineSoccer games (``players`` per team, 8 areas) the policy wins as
    team 0 against uniformly random team-1 play."""
    env = make_env("LineSoccer", seed=seed, num_areas=8, env_parameters={"players_per_team": players})
    rng = np.random.default_rng(seed)
    while len(env.results) < games:
        mine, _ = env.get_steps("LineSoccer?team=0")
        theirs, _ = env.get_steps("LineSoccer?team=1")
        if len(mine):
            env.set_actions("LineSoccer?team=0", policy.act(mine.obs, None, mine.agent_id).env_actions)
        if len(theirs):
            random = rng.integers(0, 3, (len(theirs), 1)).astype(np.int32)
            env.set_actions("LineSoccer?team=1", ActionTuple(discrete=random))
        env.step()
    return float((np.array(env.results[:games]) == 1).mean())


def elo_and_wins(config: str, max_steps: int, seed: int, *, players: int = 1) -> tuple[float, float]:
    """Self-play on LineSoccer: the last ELO and the share of wins against random play."""
    log, policy = line_soccer(config, max_steps, seed=seed)
    return log.elos[-1], wins_against_random(policy, players=players)


def test_ppo_self_play_on_line_soccer_raises_elo_and_beats_random_play():
    # measured (seeds 1-3): ELO 1434 / 1400 / 1467 after 60k steps; 98-99% wins against random
    first_or_second_seed(
        lambda seed: elo_and_wins("config/ppo/LineSoccer.yaml", 60_000, seed),
        lambda marks: marks[0] > 1350 and marks[1] > 0.9,
    )


def test_line_soccer_control_without_learning_stays_at_its_rating():
    log, policy = line_soccer("config/ppo/LineSoccer.yaml", 30_000, learning_rate=0.0)
    assert abs(log.elos[-1] - 1200) < 100, log.elos
    assert wins_against_random(policy) < 0.5  # random play: about 0.27


def test_poca_self_play_on_line_soccer_two_per_team_raises_elo_and_beats_random_play():
    """2 per team in groups: results come as group rewards, which the ELO must read."""
    # measured (seeds 1-3) after 100k steps: ELO 1331 / 1403 / 1365, 94% / 98% / 90% wins
    # against random play; again on 2026-11-27: ELO 1327 / 1324 / 1329, 92% / 93% / 80% wins,
    # which pass 80% only from 90k steps (82%, 86%, 77%; 64-69% at 30-40k): no shorter budget. (Before each team drew its own actions, the two teams of one
    # behavior sampled alike and the ELO read 1585 / 1494 / 1542, at 97-98% wins.)
    first_or_second_seed(
        lambda seed: elo_and_wins("config/poca/LineSoccer.yaml", 100_000, seed, players=2),
        lambda marks: marks[0] > 1250 and marks[1] > 0.8,
    )
