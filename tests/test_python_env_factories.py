"""Python environment factories (``env_factory=``, ``--env python:...``) as users write them: the
environment they return is reset before its first steps (BaseEnv's contract), and a factory
that opens a Unity build (the stand-in) gets the run's side channels when it declares a
``side_channels`` parameter: engine settings and a curriculum's lessons reach the build, its
custom stats reach the run; one without them is warned about its stats channel once, not at
every step."""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from mlagents_envs.base_env import (
    ActionTuple,
    AgentId,
    BaseEnv,
    BehaviorMapping,
    BehaviorName,
    DecisionSteps,
    TerminalSteps,
)
from mlagents_envs.side_channel.side_channel import SideChannel

from envs.builtin import make_env
from envs.unity import UnityEnvironment
from orchestration import train
from stats import StatsSummary, StatsWriter
from tests.support.standin import write_launcher
from trainers.settings import RunOptions, load_run_options

pytestmark = pytest.mark.slow  # trains policies (a few seconds each)

BALANCE = {
    "behaviors": {
        "Balance": {
            "trainer_type": "ppo",
            "hyperparameters": {"batch_size": 32, "buffer_size": 128},
            "network_settings": {"hidden_units": 16, "num_layers": 1},
            "max_steps": 600,
            "time_horizon": 20,
            "summary_freq": 300,
        }
    },
    "environment_parameters": {
        "gravity": {
            "curriculum": [
                {
                    "name": "heavy",
                    "value": 9.81,
                    "completion_criteria": {"behavior": "Balance", "measure": "progress", "threshold": 0.3},
                },
                {"name": "light", "value": 3.0},
            ]
        }
    },
    "engine_settings": {"time_scale": 7.0},
}


class ResetFirst(BaseEnv):
    """Built-in Basic holding to BaseEnv's contract as a strict environment would: steps are
    read only after ``reset()``."""

    def __init__(self, seed: int) -> None:
        self._env = make_env("Basic", seed=seed)
        self._was_reset = False

    def reset(self) -> None:
        self._env.reset()
        self._was_reset = True

    def get_steps(self, behavior_name: BehaviorName) -> tuple[DecisionSteps, TerminalSteps]:
        if not self._was_reset:
            raise RuntimeError("call reset() before get_steps()")
        return self._env.get_steps(behavior_name)

    def step(self) -> None:
        self._env.step()

    def close(self) -> None:
        self._env.close()

    @property
    def behavior_specs(self) -> BehaviorMapping:
        return self._env.behavior_specs

    def set_actions(self, behavior_name: BehaviorName, action: ActionTuple) -> None:
        self._env.set_actions(behavior_name, action)

    def set_action_for_agent(self, behavior_name: BehaviorName, agent_id: AgentId, action: ActionTuple) -> None:
        self._env.set_action_for_agent(behavior_name, agent_id, action)


def run_options(tmp_path: Path, config: Mapping[str, Any]) -> RunOptions:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(dict(config)))
    options = load_run_options(path)
    return attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, seed=4),
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=str(tmp_path / "results"), run_id="f"
        ),
    )


class Tags(StatsWriter):
    """Every stat tag written."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        self.seen |= set(values)


def test_the_environment_a_factory_returns_is_reset_before_its_first_steps(tmp_path: Path) -> None:
    basic = yaml.safe_load(Path("config/ppo/Basic.yaml").read_text())
    basic["behaviors"]["Basic"].update(max_steps=200, summary_freq=100)
    outcome = train(run_options(tmp_path, basic), env_factory=lambda worker_id, seed: ResetFirst(seed), console=False)
    assert outcome.steps["Basic"] >= 200


def test_a_factory_that_declares_side_channels_opens_a_build_with_the_runs_channels(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    launcher = write_launcher(str(tmp_path), scene="balance", extra_args=["--max-step", "25"])
    logs = tmp_path / "logs"
    logs.mkdir()

    def open_build(worker_id: int, seed: int, side_channels: list[SideChannel]) -> BaseEnv:
        # No env_parameters argument: the run's environment parameters go through the channels.
        return UnityEnvironment(
            file_name=launcher,
            worker_id=worker_id,
            base_port=0,
            seed=seed,
            timeout_wait=30,
            side_channels=side_channels,
            log_folder=str(logs),
        )

    tags = Tags()
    with caplog.at_level(logging.WARNING):
        train(run_options(tmp_path, BALANCE), env_factory=open_build, writers=[tags], console=False)
    # The build's custom stats come back (its episode lengths, and the settings it received).
    assert {"StandIn/episode_length", "StandIn/time_scale", "StandIn/param/gravity"} <= tags.seen, sorted(tags.seen)
    log = (logs / "Player-0.log").read_text()
    assert re.findall(r"StandIn/time_scale = ([0-9.]+)", log) == ["7.0"]
    assert [round(float(v), 2) for v in re.findall(r"StandIn/param/gravity = ([0-9.]+)", log)] == [9.81, 3.0]
    assert not [r for r in caplog.records if "side channel" in r.getMessage()]


def test_a_build_opened_without_the_runs_channels_is_warned_about_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    launcher = write_launcher(str(tmp_path), scene="balance", extra_args=["--max-step", "10"])

    def open_build(worker_id: int, seed: int) -> BaseEnv:
        return UnityEnvironment(file_name=launcher, worker_id=worker_id, base_port=0, seed=seed, timeout_wait=30)

    config = {"behaviors": BALANCE["behaviors"]}
    with caplog.at_level(logging.WARNING):
        train(run_options(tmp_path, config), env_factory=open_build, console=False)
    # Every episode's end sends a stat: dozens of messages on the stats channel, one warning.
    (warning,) = [r.getMessage() for r in caplog.records if "Unknown side channel data received" in r.getMessage()]
    assert "a1d8f7b7-cec8-50f9-b78b-d3e165a78520" in warning and "stats channel" in warning
    assert "'side_channels' parameter" in warning
