"""Training through the policy server: several simulators call in at once (some asking for
every action, some acting with the ONNX policy they fetched) and PPO solves their task."""

from __future__ import annotations

import socket
import tempfile
import threading
import time

import attrs
import numpy as np
import pytest

from envs.external import PolicyClient, PolicyServerError
from orchestration.run import build_run
from tests.support.learning import PPO_TEST_CONFIG, RewardLog
from trainers.settings import RunOptions

pytestmark = pytest.mark.slow  # trains a policy


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def simulate(address: str, inference: str, seed: int, stop: threading.Event) -> int:
    """ML-Agents' SimpleEnvironment with one discrete branch, driven from outside: the goal
    (+-1) is the observation; action 1 moves +0.5, 0 moves -0.5; reaching an end pays
    1.06 * position * goal, each other decision -0.01 (best return 1.05, in two decisions).
    Runs episodes until the run ends; returns how many it finished."""
    rng = np.random.default_rng(seed)
    episodes = 0
    try:
        client = PolicyClient(
            address, "Simple", [(1,)], discrete_branches=(2,), inference=inference, refresh_s=0.5, flush_steps=8
        )
    except (OSError, PolicyServerError):
        return 0
    try:
        while not stop.is_set():
            episode = client.start_episode()
            goal = np.array([rng.choice([-1.0, 1.0])], np.float32)
            position = 0.0
            for _ in range(20):
                time.sleep(0.002)  # the simulator's own work: local inference does not outrun the others
                _, discrete = client.get_action(episode, [goal])
                position = float(np.clip(position + (0.5 if discrete[0] == 1 else -0.5), -1.0, 1.0))
                if abs(position) >= 1.0:
                    client.log_returns(episode, 1.06 * position * float(goal[0]))
                    client.end_episode(episode, [goal])
                    break
                client.log_returns(episode, -0.01)
            else:
                client.end_episode(episode, [goal], interrupted=True)
            episodes += 1
    except (OSError, PolicyServerError):  # the run ended and the server with it
        pass
    finally:
        client.close()
    return episodes


def train_through_server(
    seed: int, inferences: tuple[str, ...], *, max_steps: int = 6000, learning_rate: float = 5e-3
) -> tuple[list[float], list[int]]:
    """Mean episode rewards of each summary (training stops above 0.9), and each client's
    finished episodes."""
    port = free_port()
    log = RewardLog(until=lambda curve: curve[-1][1] > 0.9)
    settings = attrs.evolve(
        PPO_TEST_CONFIG,
        max_steps=max_steps,
        summary_freq=400,
        hyperparameters=attrs.evolve(PPO_TEST_CONFIG.hyperparameters, learning_rate=learning_rate),
    )
    options = RunOptions(default_settings=settings)
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, env_path=f"external:{port}", seed=seed),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="server"),
        )
        run = build_run(options, writers=[log], console=False, stop=log.stop)
        watchdog = threading.Timer(120.0, log.stop.set)  # a stuck run fails the test instead of hanging it
        watchdog.start()
        done = threading.Event()
        counts = [0] * len(inferences)

        def client_thread(i: int, inference: str) -> None:
            counts[i] = simulate(f"127.0.0.1:{port}", inference, seed * 100 + i, done)

        threads = [threading.Thread(target=client_thread, args=(i, inf)) for i, inf in enumerate(inferences)]
        for thread in threads:
            thread.start()
        try:
            run.run()
        finally:
            watchdog.cancel()
            done.set()
            for thread in threads:
                thread.join(timeout=30)
        assert (run.run_dir / "Simple.onnx").exists()
    return log.rewards, counts


def test_ppo_solves_simple_through_remote_and_local_clients():
    rewards, episodes = train_through_server(seed=1, inferences=("remote", "remote", "local", "local"))
    assert rewards and rewards[-1] > 0.9, rewards  # random play scores about 0
    assert all(n > 0 for n in episodes), episodes  # every client took part


def test_control_without_learning_stays_unsolved():
    rewards, _ = train_through_server(seed=1, inferences=("remote", "local"), max_steps=1600, learning_rate=0.0)
    assert max(rewards) < 0.5, rewards
