"""``agents-learn --env external:PORT`` as a user runs it: clients with the token train it to
max_steps and the results are complete; a client without the token, one naming a behavior the
run does not train, and one opening episodes without end are refused while the others train;
refused settings are one line before any work."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.external import PolicyClient, PolicyServerError

REPO = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def config(tmp_path: Path, max_steps: int) -> Path:
    data = {
        "behaviors": {
            "Simple": {
                "trainer_type": "ppo",
                "hyperparameters": {"batch_size": 16, "buffer_size": 64, "learning_rate": 5.0e-3},
                "network_settings": {"num_layers": 1, "hidden_units": 16},
                "max_steps": max_steps,
                "summary_freq": 200,
                "threaded": False,
            }
        }
    }
    path = tmp_path / "simple.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def start_cli(tmp_path: Path, *args: str, token: str | None = None) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    env.pop("AGENTS_LEARN_SERVER_TOKEN", None)
    if token is not None:
        env["AGENTS_LEARN_SERVER_TOKEN"] = token
    return subprocess.Popen(
        [sys.executable, "-m", "orchestration.cli", *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def play(address: str, token: str | None) -> int:
    """Episodes of the goal task until the run ends; how many were finished."""
    rng = np.random.default_rng(0)
    episodes = 0
    client = PolicyClient(address, "Simple", [(1,)], discrete_branches=(2,), token=token, connect_timeout_s=60)
    try:
        while True:
            episode = client.start_episode()
            goal = np.array([rng.choice([-1.0, 1.0])], np.float32)
            for _ in range(3):
                client.get_action(episode, [goal])
                client.log_returns(episode, -0.01)
            client.end_episode(episode, [goal])
            episodes += 1
    except (OSError, PolicyServerError):  # the run is over
        return episodes
    finally:
        client.close()


@pytest.mark.slow
def test_a_run_of_external_clients_completes_with_its_results(tmp_path):
    port = free_port()
    process = start_cli(
        tmp_path, str(config(tmp_path, 600)), f"--env=external:{port}", "--run-id=ext", "--seed=1", token="s3cret"
    )
    try:
        finished: list[int] = []
        players = [
            threading.Thread(target=lambda: finished.append(play(f"127.0.0.1:{port}", "s3cret"))) for _ in range(2)
        ]
        for player in players:
            player.start()
        with pytest.raises(PolicyServerError, match="wrong or missing token"):
            PolicyClient(f"127.0.0.1:{port}", "Simple", [(1,)], discrete_branches=(2,), token="", connect_timeout_s=60)
        stdout, stderr = process.communicate(timeout=120)
        for player in players:
            player.join(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr[-3000:]
    assert len(finished) == 2 and all(n > 0 for n in finished), finished
    run_dir = tmp_path / "results" / "ext"
    for name in ("Simple.onnx", "Simple/checkpoint.pt", "configuration.yaml", "run_logs/stats.jsonl"):
        assert (run_dir / name).exists(), name
    assert "Simple. Step: 600." in stdout


@pytest.mark.slow
def test_a_misnamed_or_greedy_client_leaves_the_others_run_unharmed(tmp_path):
    port = free_port()
    address = f"127.0.0.1:{port}"
    process = start_cli(tmp_path, str(config(tmp_path, 600)), f"--env=external:{port}", "--run-id=ext", "--seed=1")
    try:
        greedy = PolicyClient(address, "Simple", [(1,)], discrete_branches=(2,), connect_timeout_s=60)
        opened = 0
        with pytest.raises(PolicyServerError, match="this connection has 256 episodes open"):
            while opened < 2000:  # more than the whole server holds
                greedy.start_episode()
                opened += 1
        with pytest.raises(
            PolicyServerError, match=r"behavior 'Evil' is not in the run configuration \(configured: Simple\)"
        ):
            PolicyClient(address, "Evil", [(1,)], discrete_branches=(2,))
        finished: list[int] = []
        honest = threading.Thread(target=lambda: finished.append(play(address, None)))
        honest.start()
        stdout, stderr = process.communicate(timeout=120)
        honest.join(timeout=30)
        greedy.close()
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr[-3000:]
    assert opened == 256 and finished and finished[0] > 0, (opened, finished)
    assert "Simple. Step: 600." in stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--env=external:99999"], "--env (env_settings.env_path): external:99999: expected external:PORT"),
        (["--env=external:9900", "--num-envs=2"], "the policy server is one environment"),
    ],
)
def test_refused_settings_are_one_line(tmp_path, args, message):
    process = start_cli(tmp_path, str(config(tmp_path, 600)), *args, "--check")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 1
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("agents-learn: error: ") and message in lines[0], stderr
