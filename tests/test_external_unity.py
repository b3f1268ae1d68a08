"""``--env external-unity``: the run waits for builds the user starts (here stand-in builds
speaking the real gRPC protocol) on base_port ... base_port + N - 1 instead of launching them.
A build that vanishes is noticed after ``--timeout-wait`` (there is no process to watch), and
the restarted worker waits for the user to start another on the same port."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from tests.support.standin import write_launcher
from tests.test_e2e_standin import BALANCE, free_port_pair

pytestmark = pytest.mark.slow  # runs the CLI and stand-in builds in subprocesses


def test_two_user_started_builds_train_and_a_crashed_one_is_replaced_by_the_user(tmp_path):
    config = tmp_path / "balance.yaml"
    # long enough to span the crash, the 4 s until it is noticed, and the replacement
    config.write_text(
        yaml.safe_dump({"behaviors": {"Balance": {**BALANCE["behaviors"]["Balance"], "max_steps": 24_000}}})
    )
    launcher = write_launcher(str(tmp_path), name="Mine.x86_64")
    port = free_port_pair()

    def start_build(port: int, *extra: str) -> subprocess.Popen:
        return subprocess.Popen([launcher, "--mlagents-port", str(port), "--agents", "6", *extra])

    # the first one crashes mid-run, as a build on someone's desk might
    builds = [start_build(port, "--crash-after", "40"), start_build(port + 1)]
    command = [sys.executable, "-m", "orchestration.cli", str(config), "--env", "external-unity"]
    command += ["--num-envs", "2", "--base-port", str(port), "--timeout-wait", "4", "--seed", "2", "--run-id", "mine"]
    trainer = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        assert trainer.stdout is not None
        for line in trainer.stdout:  # the user watches the console
            lines.append(line)
            if "Restarting worker[0]" in line:
                builds.append(start_build(port))  # and starts another build on that port
        output = "".join(lines)
        assert trainer.wait(60) == 0, output[-3000:]
        assert f"Unity build(s) or Editor(s) you start to connect on 127.0.0.1 port(s) {port}-{port + 1}" in output
        assert output.count("Restarting worker[0]") == 1, output[-3000:]
        assert "no message from Unity for 4 s" in output
        assert (tmp_path / "results/mine/Balance.onnx").exists()
        assert not (tmp_path / "results/mine/run_logs/Player-0.log").exists()  # nothing was launched
        assert len(builds) == 3
        for build in builds[1:]:
            assert build.wait(30) == 0  # the run closed their connections; they quit by themselves
    finally:
        for process in (trainer, *builds):
            if process.poll() is None:
                process.kill()
