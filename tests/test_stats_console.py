"""ConsoleWriter: the ML-Agents summary line through logging (caplog), with a fake clock."""

from __future__ import annotations

import logging

import pytest

from stats import ConsoleWriter, StatsHub, StatsProperty, StatsReporter, tags

LOGGER = "stats.console_writer"


class Clock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def setup(caplog: pytest.LogCaptureFixture) -> tuple[Clock, StatsReporter, pytest.LogCaptureFixture]:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = Clock(1000.0)
    reporter = StatsReporter("3DBall", StatsHub([ConsoleWriter(clock=clock)]))
    return clock, reporter, caplog


def lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.INFO]


def test_the_ml_agents_line(setup) -> None:
    clock, r, caplog = setup
    r.add_stats(tags.CUMULATIVE_REWARD, [1.963, 0.463])  # mean 1.213, std 0.750
    r.set_stat(tags.IS_TRAINING, 1.0)
    clock.t = 1014.5
    r.write_stats(12000)
    assert lines(caplog) == [
        "3DBall. Step: 12000. Time Elapsed: 14.500 s. Mean Reward: 1.213. Std of Reward: 0.750. "
        "Training. Agent Steps/s: 827.6."
    ]


def test_no_episode_and_rates_since_previous_line(setup) -> None:
    clock, r, caplog = setup
    r.add_property(StatsProperty.IS_TRAINING, True)
    clock.t = 1010.0
    r.add_stat(tags.CUMULATIVE_REWARD, 2.0)
    r.write_stats(1000)
    clock.t = 1012.0
    r.write_stats(1500)
    r.add_property(StatsProperty.IS_TRAINING, False)
    clock.t = 1013.0
    r.write_stats(1600)
    assert lines(caplog)[1:] == [
        "3DBall. Step: 1500. Time Elapsed: 12.000 s. No episode was completed since last summary. "
        "Training. Agent Steps/s: 250.0.",
        "3DBall. Step: 1600. Time Elapsed: 13.000 s. No episode was completed since last summary. "
        "Not Training. Agent Steps/s: 100.0.",
    ]


def test_env_steps_per_second_over_the_same_interval_as_agent_steps(caplog: pytest.LogCaptureFixture) -> None:
    """12 agents deciding together: Env Steps/s is a twelfth of Agent Steps/s, line after line,
    counted from the resumed step's baseline (it once showed 0.6 at 5,444 agent steps/s)."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock, env_steps = Clock(1000.0), [500]
    reporter = StatsReporter("3DBall", StatsHub([ConsoleWriter(clock=clock, env_steps=lambda: env_steps[0])]))
    clock.t, env_steps[0] = 1001.0, 600
    reporter.add_property(StatsProperty.START_STEP, 6000)
    for step in (12000, 24000):
        clock.t += 2.0
        env_steps[0] += (step - 6000 if step == 12000 else 12000) // 12
        reporter.write_stats(step)
    assert [line.split("Agent ")[1] for line in lines(caplog)] == [
        "Steps/s: 3000.0. Env Steps/s: 250.0.",
        "Steps/s: 6000.0. Env Steps/s: 500.0.",
    ]


def test_is_training_stat_overrides_property(setup) -> None:
    clock, r, caplog = setup
    r.add_property(StatsProperty.IS_TRAINING, True)
    r.set_stat(tags.IS_TRAINING, 0.0)
    clock.t = 1001.0
    r.write_stats(10)
    assert "Not Training." in lines(caplog)[0]


def test_group_reward_replaces_std_and_self_play_shows_elo(setup) -> None:
    clock, r, caplog = setup
    r.add_property(StatsProperty.SELF_PLAY, True)
    r.add_stats(tags.CUMULATIVE_REWARD, [1.0, 3.0])
    r.add_stat(tags.GROUP_CUMULATIVE_REWARD, 4.25)
    r.add_stat(tags.SELF_PLAY_ELO, 1210.5)
    clock.t = 1002.0
    r.write_stats(400)
    assert lines(caplog)[0] == (
        "3DBall. Step: 400. Time Elapsed: 2.000 s. Mean Reward: 2.000. Mean Group Reward: 4.250. "
        "Not Training. ELO: 1210.500. Agent Steps/s: 200.0."
    )


def test_start_step_sets_the_rate_baseline_after_resume(setup) -> None:
    clock, r, caplog = setup
    clock.t = 1005.0
    r.add_property(StatsProperty.START_STEP, 50000)
    clock.t = 1010.0
    r.write_stats(51000)
    assert lines(caplog)[0].endswith("Agent Steps/s: 200.0.")


def test_hyperparameters_are_logged(setup) -> None:
    _, r, caplog = setup
    r.add_property(StatsProperty.HYPERPARAMETERS, {"trainer_type": "ppo", "hyperparameters": {"batch_size": 64}})
    [line] = lines(caplog)
    assert line.startswith("Hyperparameters for behavior name 3DBall:")
    assert "trainer_type:\tppo" in line and "    batch_size:\t64" in line


def test_hyperparameters_show_the_values_in_effect(setup) -> None:
    """Derived and unset-newer keys print what the run uses, never None."""
    from trainers.settings import structure_run_options

    _, r, caplog = setup
    options = structure_run_options(
        {"behaviors": {"3DBall": {"hyperparameters": {"learning_rate_schedule": "constant"}}}}
    )
    r.add_property(StatsProperty.HYPERPARAMETERS, options.behaviors["3DBall"])
    [line] = lines(caplog)
    for shown in (
        "beta_schedule:\tconstant",
        "epsilon_schedule:\tconstant",
        "shared_critic:\tFalse",
        "even_checkpoints:\tFalse",
    ):
        assert shown in line
