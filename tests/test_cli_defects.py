"""Inputs that used to end in a raw traceback, a hang, or changes to an earlier run: each is one
line on stderr now, before any work, and leaves what was there untouched."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from stats import STATS_WRITER_GROUP
from tests.support.plugins import write_fake_plugin
from tests.test_cli import REPO, basic_config, one_line_error, run_cli

pytestmark = pytest.mark.slow  # trains policies / runs the CLI in subprocesses


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_failed_resume_changes_nothing_of_the_earlier_run(tmp_path):
    config = basic_config(tmp_path, 1_000, network_settings={"hidden_units": 16, "num_layers": 1})
    first = run_cli(tmp_path, str(config), "--run-id=r", "--seed", "1")
    assert first.returncode == 0, first.stderr
    run = tmp_path / "results/r"
    before = snapshot(run)
    wider = basic_config(tmp_path, 2_000, network_settings={"hidden_units": 32, "num_layers": 1})
    line = one_line_error(run_cli(tmp_path, str(wider), "--run-id=r", "--resume"))
    assert "checkpoint.pt: does not fit behavior 'Basic' as configured" in line and "network_settings" in line
    assert snapshot(run) == before  # configuration.yaml, timers, logs, checkpoints: all as they were


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_failed_resume_of_a_build_leaves_its_log_as_it_was(tmp_path):
    """The build of a refused --resume starts (its behavior's spec decides the refusal) but logs
    elsewhere: the earlier run's ``run_logs/Player-0.log`` survives, as does every other file of
    the results folder. A resume that works puts the new log in its place when it ends."""
    from tests.support.standin import write_launcher

    corridor = {
        "trainer_type": "ppo",
        "hyperparameters": {"batch_size": 32, "buffer_size": 64},
        "network_settings": {"hidden_units": 16, "num_layers": 1, "vis_encode_type": "fully_connected"},
        "time_horizon": 16,
        "summary_freq": 1000,
    }
    configs = {}
    for steps in (100, 300):
        configs[steps] = tmp_path / f"corridor-{steps}.yaml"
        configs[steps].write_text(yaml.safe_dump({"behaviors": {"Corridor": {**corridor, "max_steps": steps}}}))
    build = ["--env", write_launcher(str(tmp_path), scene="visual"), "--seed=1", "--timeout-wait=30"]

    def cli(steps: int, *args: str) -> subprocess.CompletedProcess:
        return run_cli(tmp_path, str(configs[steps]), "--run-id=r", *build, f"--base-port={free_port()}", *args)

    first = cli(100, "--env-args", "--image-size", "4")
    assert first.returncode == 0, first.stderr
    results = tmp_path / "results"
    before = snapshot(results)
    assert "[standin] scene visual" in before["r/run_logs/Player-0.log"].decode()

    refused = cli(300, "--resume", "--env-args", "--image-size", "6")  # cameras 6x6, not 4x4
    line = one_line_error(refused)
    assert "r/Corridor/checkpoint.pt: does not fit behavior 'Corridor'" in line
    assert snapshot(results) == before
    (staged,) = re.findall(r"the Unity logs of this attempt are in (\S+)", refused.stdout)
    assert (Path(staged) / "Player-0.log").is_file()
    shutil.rmtree(staged)

    resumed = cli(300, "--resume", "--env-args", "--image-size", "4")
    assert resumed.returncode == 0, resumed.stderr
    log = (results / "r/run_logs/Player-0.log").read_bytes()
    assert log != before["r/run_logs/Player-0.log"] and b"[standin] scene visual" in log
    assert not re.findall(r"the Unity logs of this attempt are in", resumed.stdout)


def test_a_checkpoint_of_random_bytes_is_refused_before_anything_changes(tmp_path):
    config = basic_config(tmp_path, 1_000)
    assert run_cli(tmp_path, str(config), "--run-id=r", "--seed", "1").returncode == 0
    run = tmp_path / "results/r"
    (run / "Basic/checkpoint.pt").write_bytes(os.urandom(2048))
    before = snapshot(run)
    line = one_line_error(run_cli(tmp_path, str(basic_config(tmp_path, 2_000)), "--run-id=r", "--resume"))
    assert "checkpoint.pt: not a checkpoint" in line
    assert snapshot(run) == before


def test_a_partial_checkpoint_write_is_cleaned_up_at_the_next_start(tmp_path):
    config = basic_config(tmp_path, 1_000)
    assert run_cli(tmp_path, str(config), "--run-id=r", "--seed", "1").returncode == 0
    leftover = tmp_path / "results/r/Basic/Basic-1500.pt.tmp"
    leftover.write_bytes(b"half a checkpoint")
    resumed = run_cli(tmp_path, str(basic_config(tmp_path, 2_000)), "--run-id=r", "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert not leftover.exists() and "interrupted checkpoint write" in resumed.stdout


def test_results_dir_that_is_a_file(tmp_path):
    (tmp_path / "results").write_text("not a folder")
    line = one_line_error(run_cli(tmp_path, "--env", "builtin:Basic", "--run-id=x"))
    assert "--results-dir (checkpoint_settings.results_dir): results is a file, not a folder" in line


def test_run_id_that_escapes_the_results_folder(tmp_path):
    line = one_line_error(run_cli(tmp_path, "--env", "builtin:Basic", "--run-id=../escaped"))
    assert "--run-id (checkpoint_settings.run_id)" in line
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "results").exists()


def test_absurd_network_is_refused_before_any_environment_starts(tmp_path):
    config = basic_config(tmp_path, 1_000, network_settings={"hidden_units": 1_000_000_000})
    line = one_line_error(run_cli(tmp_path, str(config), "--run-id=big"))
    assert "behaviors.Basic.network_settings" in line
    assert not (tmp_path / "results").exists()


def test_unsupported_sections_are_refused_together_before_any_work(tmp_path):
    data = yaml.safe_load((REPO / "config/ppo/Basic.yaml").read_text())
    signals = data["behaviors"]["Basic"]["reward_signals"]
    signals["rnd"] = {"network_settings": {"memory": {"memory_size": 8}}}
    signals["curiosity"] = {"network_settings": {"memory": {"memory_size": 8}}}
    signals["extrinsic"]["network_settings"] = {"hidden_units": 32}
    (tmp_path / "many.yaml").write_text(yaml.safe_dump(data))
    line = one_line_error(run_cli(tmp_path, "many.yaml", "--run-id=many"))
    assert "behaviors.Basic.reward_signals.rnd.network_settings.memory" in line
    assert "behaviors.Basic.reward_signals.curiosity.network_settings.memory" in line
    assert "behaviors.Basic.reward_signals.extrinsic.network_settings: the extrinsic reward has no network" in line
    assert not (tmp_path / "results").exists()


def test_deeply_nested_yaml(tmp_path):
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 3000 + "]" * 3000 + "\n")
    line = one_line_error(run_cli(tmp_path, "deep.yaml"))
    assert "deep.yaml: nested too deeply" in line


def test_a_stats_writer_plugin_that_raises_is_one_line(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    source = (
        "from stats import StatsWriter\n"
        "class Noisy(StatsWriter):\n"
        "    def write_stats(self, category, values, step):\n"
        "        raise ConnectionError('dashboard unreachable')\n"
        "def writers(options):\n    return [Noisy()]\n"
    )
    write_fake_plugin(site, "noisy", source, STATS_WRITER_GROUP, {"noisy": "noisy:writers"})
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", str(basic_config(tmp_path, 3_000)), "--run-id=noisy"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    line = one_line_error(result)
    assert "stats writer Noisy failed in write_stats: ConnectionError: dashboard unreachable" in line
    assert (tmp_path / "results/noisy/Basic.onnx").exists()  # saved before the run ended


def test_a_python_environment_factory_trains_from_the_command_line(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    command = [
        sys.executable,
        "-m",
        "orchestration.cli",
        str(basic_config(tmp_path, 2_000)),
        "--run-id=py",
        "--env",
        "python:tests.support.python_envs:make_basic",
    ]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "results/py/Basic.onnx").exists()
    missing = subprocess.run(
        [*command[:-1], "python:tests.support.python_envs:nope"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert "python_envs has no function 'nope'" in one_line_error(missing)
