"""End to end through the CLI with the stand-in Unity build (the real gRPC protocol) and
``--num-envs 2``: results complete, engine settings reach the build, a crashed worker is
restarted and training finishes, past the restart limit the run stops with saved checkpoints,
a curriculum's lessons reach both builds,
and no build process outlives the run."""

from __future__ import annotations

import json
import os
import re
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow  # trains policies / runs the CLI in subprocesses

BALANCE = {
    "behaviors": {
        "Balance": {
            "trainer_type": "ppo",
            "hyperparameters": {"batch_size": 64, "buffer_size": 1200, "learning_rate": 3e-4, "num_epoch": 3},
            "network_settings": {"normalize": True, "hidden_units": 64, "num_layers": 2},
            "max_steps": 4000,
            "time_horizon": 100,
            "summary_freq": 1000,
        }
    }
}


def free_port_pair() -> int:
    """A base port p with p and p+1 free on loopback."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no free pair of ports")


def setup(tmp_path: Path, crash_once_after: int | None = None) -> tuple[Path, str]:
    from tests.support.standin import write_launcher

    config = tmp_path / "balance.yaml"
    config.write_text(yaml.safe_dump(BALANCE))
    launcher = write_launcher(str(tmp_path), name="Real.x86_64")
    if crash_once_after is None:
        return config, launcher
    # The first build launched (either worker) crashes; every later one runs normally.
    wrapper = tmp_path / "CrashOnce.x86_64"
    wrapper.write_text(
        "#!/bin/sh\n"
        f'if mkdir "{tmp_path}/crashed" 2>/dev/null; then exec "{launcher}" --crash-after {crash_once_after} "$@"; fi\n'
        f'exec "{launcher}" "$@"\n'
    )
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    return config, str(wrapper)


def run_cli(tmp_path: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    common = ["--num-envs", "2", "--seed", "2", "--base-port", str(free_port_pair()), "--timeout-wait", "30"]
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli", *common, *args],  # --env-args comes last
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )


def build_pids(run_dir: Path) -> list[int]:
    pids = []
    for log in (run_dir / "run_logs").glob("Player-*.log"):
        pids += [int(p) for p in re.findall(r"\[standin\] pid (\d+)", log.read_text())]
    return pids


def assert_no_build_alive(run_dir: Path) -> None:
    pids = build_pids(run_dir)
    assert pids
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        status = Path(f"/proc/{pid}/status")
        assert not status.exists() or "zombie" in status.read_text(), f"build {pid} still running"


def test_two_standin_builds_train_with_complete_results(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    config, launcher = setup(tmp_path)
    result = run_cli(
        tmp_path, str(config), "--env", launcher, "--run-id=ball", "--width", "100", "--env-args", "--agents", "6"
    )
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    # One line per worker: mlagents_envs' own handlers used to print each of its lines twice.
    assert result.stdout.count("[INFO] Connected to Unity environment with package version") == 2
    assert result.stdout.count("[INFO] Connected new brain: Balance?team=0") == 2
    run = tmp_path / "results/ball"
    for path in (
        "configuration.yaml",
        "Balance.onnx",
        "Balance/checkpoint.pt",
        "run_logs/timers.json",
        "run_logs/training_status.json",
        "run_logs/stats.jsonl",
        "run_logs/Player-0.log",
        "run_logs/Player-1.log",
    ):
        assert (run / path).exists(), path
    status = json.loads((run / "run_logs/training_status.json").read_text())
    assert status["Balance"]["final_checkpoint"]["steps"] >= 4000
    events = EventAccumulator(str(run / "Balance"))
    events.Reload()
    tags = set(events.Tags()["scalars"])
    assert {
        "Environment/Cumulative Reward",
        "Environment/Episode Length",
        "Policy/Entropy",
        "Policy/Learning Rate",
        "Losses/Policy Loss",
        "Losses/Value Loss",
        "Perf/mean_env_wait_ms",
        "Perf/agent_steps_per_s",
        "StandIn/width",
    } <= tags, tags
    assert events.Scalars("StandIn/width")[-1].value == 100.0  # --width reached both builds
    assert "--agents" in (run / "run_logs/Player-1.log").read_text()  # --env-args reached the build
    assert_no_build_alive(run)


def test_a_crashed_worker_is_restarted_and_training_finishes(tmp_path):
    config, launcher = setup(tmp_path, crash_once_after=30)
    result = run_cli(tmp_path, str(config), "--env", launcher, "--run-id=crash")
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    assert re.search(r"Restarting worker\[[01]\] after '.*SIGSEGV", result.stdout)
    status = json.loads((tmp_path / "results/crash/run_logs/training_status.json").read_text())
    assert status["Balance"]["final_checkpoint"]["steps"] >= 4000
    assert_no_build_alive(tmp_path / "results/crash")


def test_past_the_restart_limit_the_run_stops_with_saved_checkpoints(tmp_path):
    config, launcher = setup(tmp_path)
    result = run_cli(
        tmp_path,
        str(config),
        "--env",
        launcher,
        "--run-id=limit",
        "--max-lifetime-restarts",
        "1",
        "--restarts-rate-limit-n",
        "-1",
        env={"STANDIN_CRASH_AFTER": "40"},
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert re.match(
        r"agents-learn: error: worker [01] crashed and is past its restart limit "
        r"\(--max-lifetime-restarts 1",
        lines[0],
    ), lines
    run = tmp_path / "results/limit"
    assert (run / "Balance/checkpoint.pt").exists() and (run / "Balance.onnx").exists()
    assert_no_build_alive(run)


def test_a_hung_build_is_detected_within_timeout_wait(tmp_path):
    config, launcher = setup(tmp_path)
    result = run_cli(
        tmp_path,
        str(config),
        "--env",
        launcher,
        "--run-id=hang",
        "--timeout-wait",
        "3",
        "--max-lifetime-restarts",
        "0",
        env={"STANDIN_HANG_AFTER": "40"},
    )
    assert result.returncode == 1
    assert re.match(r"agents-learn: error: worker [01] hung and is past its restart limit", result.stderr), (
        result.stderr
    )
    assert (tmp_path / "results/hang/Balance.onnx").exists()
    assert_no_build_alive(tmp_path / "results/hang")


def test_debug_lines_are_printed_once_in_the_debug_format_by_every_process(tmp_path):
    config, launcher = setup(tmp_path)
    short = yaml.safe_load(config.read_text())
    short["behaviors"]["Balance"]["max_steps"] = 500
    config.write_text(yaml.safe_dump(short))
    result = run_cli(tmp_path, str(config), "--env", launcher, "--run-id=dbg", "--debug")
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    connected = [line for line in result.stdout.splitlines() if "Connected to Unity environment" in line]
    assert len(connected) == 2, connected  # one per worker process
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d INFO \[environment.py:\d+\] ", line) for line in connected)
    assert sum("Connected new brain: Balance?team=0" in line for line in result.stdout.splitlines()) == 2


def test_a_curriculum_reaches_both_builds(tmp_path):
    """The lesson's values go through the EnvironmentParameters channel: both builds open with
    the first lesson's gravity and get the second's when the lesson changes (a restarted worker
    opening with the current lesson is tests/test_curriculum_run.py's, on both pools)."""
    config, launcher = setup(tmp_path)
    data = yaml.safe_load(config.read_text())
    data["environment_parameters"] = {
        "gravity": {
            "curriculum": [
                {
                    "name": "heavy",
                    "value": 9.81,
                    "completion_criteria": {"behavior": "Balance", "measure": "progress", "threshold": 0.05},
                },
                {"name": "light", "value": 3.0},
            ]
        }
    }
    config.write_text(yaml.safe_dump(data))
    result = run_cli(tmp_path, str(config), "--env", launcher, "--run-id=lessons")
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    assert "Parameter 'gravity' is now in lesson 1, 'light' (3)" in result.stdout
    run = tmp_path / "results/lessons"
    assert json.loads((run / "run_logs/training_status.json").read_text())["gravity"] == {"lesson_num": 1}
    for worker in (0, 1):
        log = (run / f"run_logs/Player-{worker}.log").read_text()
        values = [round(float(v), 2) for v in re.findall(r"StandIn/param/gravity = ([0-9.]+)", log)]
        assert values == [9.81, 3.0], (worker, values)
    assert_no_build_alive(run)


LAUNCH_PROBE = """
import json, sys
import envs.workers.pool as pool
opened = pool.InProcessPool.start
torch_loaded_at_launch = []
def start(self):
    torch_loaded_at_launch.append("torch" in sys.modules)
    opened(self)
pool.InProcessPool.start = start
from orchestration.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "torch_loaded_at_launch": torch_loaded_at_launch}))
"""


def test_a_unity_build_is_launched_before_torch_loads_so_it_boots_while_the_trainers_load(tmp_path):
    config, launcher = setup(tmp_path)
    config.write_text(yaml.safe_dump({"behaviors": {"Balance": {**BALANCE["behaviors"]["Balance"], "max_steps": 300}}}))
    args = [str(config), "--env", launcher, "--run-id=early", "--seed", "1", "--torch-device", "cpu"]
    result = subprocess.run(
        [sys.executable, "-c", LAUNCH_PROBE, *args, "--base-port", str(free_port_pair())],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert result.returncode == 0, result.stderr + result.stdout[-3000:]
    probe = json.loads(result.stdout.splitlines()[-1])
    assert probe == {"code": 0, "torch_loaded_at_launch": [False]}
    assert (tmp_path / "results" / "early" / "Balance.onnx").is_file()
    assert_no_build_alive(tmp_path / "results" / "early")
