"""ML-Agents' POCA example configs (``poca/*.yaml``) train from the command line on a
Unity-protocol stand-in build of their scene's shape: agent groups sent over the real protocol
(``mlagents_envs`` hands ``group_id`` over as a list), the scene's behavior names, teams, group
sizes, vector widths and action branches (``tests/support/standin.py``). This is the path on
which every grouped scene used to crash at its first grouped step.

Each config is the verbatim file with only its length cut (max_steps, summaries, checkpoints;
buffer 2048 and batch 512, as ``tests/test_poca_example_configs.py`` cuts the self-play ones for
the same reason; the learning team changes after one update, so both teams of an asymmetric
game train). Learning itself is ``tests/test_poca_learning.py``'s business.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.paths import MLAGENTS_CONFIGS
from tests.test_e2e_standin import free_port_pair

pytestmark = pytest.mark.slow  # runs the CLI and a build in subprocesses

# config -> the stand-in scene of its shape
SCENES = {
    "DungeonEscape": "dungeon_escape",
    "PushBlockCollab": "push_block_collab",
    "SoccerTwos": "soccer_twos",
    "StrikersVsGoalie": "strikers_vs_goalie",
}


def cut(behavior: dict) -> dict:
    """The behavior's settings with one update's length (see the module docstring)."""
    behavior = {**behavior, "hyperparameters": {**behavior["hyperparameters"], "buffer_size": 2048, "batch_size": 512}}
    # A stand-in episode is at most 100 steps, and up to 3 agents of a team (a group) publish a
    # time horizon's trajectory at the same step: the step count can jump 3 horizons at once,
    # and a jump past max_steps before the buffer is full would end the run without an update.
    steps = 2048 + 4 * min(behavior["time_horizon"], 100)
    behavior.update(max_steps=steps, summary_freq=steps, checkpoint_interval=steps)
    if "self_play" in behavior:
        behavior["self_play"] = {**behavior["self_play"], "team_change": steps}
    return behavior


def scalar_tags(folder: Path) -> set[str]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(folder))
    events.Reload()
    return set(events.Tags()["scalars"])


@pytest.mark.parametrize("config", sorted(SCENES))
def test_poca_example_config_trains_on_a_grouped_unity_build(config, tmp_path):
    from tests.support.standin import write_launcher

    options = yaml.safe_load((MLAGENTS_CONFIGS / f"poca/{config}.yaml").read_text())
    options["behaviors"] = {name: cut(settings) for name, settings in options["behaviors"].items()}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(options))
    launcher = write_launcher(str(tmp_path), scene=SCENES[config], name=f"{config}.x86_64")
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", "config.yaml", "--env", launcher, "--run-id=poca"]
        + ["--seed", "1", "--base-port", str(free_port_pair()), "--timeout-wait", "30"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    run = tmp_path / "results/poca"
    for name, settings in options["behaviors"].items():
        assert (run / f"{name}.onnx").exists(), name
        tags = scalar_tags(run / name)
        expected = {"Losses/Baseline Loss", "Losses/Policy Loss", "Environment/Group Cumulative Reward"}
        if "self_play" in settings:
            expected.add("Self-play/ELO")
        assert expected <= tags, (name, sorted(tags))
