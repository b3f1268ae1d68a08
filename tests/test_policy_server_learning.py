"""Training through the policy server: several simulators call in at once (some asking for
every action, some acting with the ONNX policy they fetched) and PPO solves their task; fast
local-inference simulators act with the newest policy and share the trainer fairly. A learning
claim holds on seed 1, else seed 2 (``first_or_second_seed``: runs differ between CPUs and
thread timings)."""

from __future__ import annotations

import socket
import tempfile
import threading
import time
from collections.abc import Callable

import attrs
import numpy as np
import pytest

from envs.external import PolicyClient, PolicyServerError
from envs.external.server import LAG_STAT
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.learning import PPO_TEST_CONFIG, RewardLog, first_or_second_seed
from tests.support.policy_clients import pick_the_goal
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
                time.sleep(0.002)  # the simulator's own work
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


class LagLog(StatsWriter):
    """The mean lag of local-inference steps of every summary that had some."""

    def __init__(self) -> None:
        self.means: list[float] = []

    def write_stats(self, category, values, step):
        if LAG_STAT in values:
            self.means.append(float(values[LAG_STAT].mean))


def train_through_server(
    seed: int,
    inferences: tuple[str, ...],
    *,
    simulator: Callable[[str, str, int, threading.Event], int] = simulate,
    solved: float = 0.9,
    max_steps: int = 6000,
    summary_freq: int = 400,
    learning_rate: float = 5e-3,
) -> tuple[list[float], list[int], list[float]]:
    """Mean episode rewards of each summary (training stops above ``solved``), each client's
    finished episodes, and the mean lag (model versions) of local-inference steps per summary."""
    port = free_port()
    log = RewardLog(until=lambda curve: curve[-1][1] > solved)
    lags = LagLog()
    settings = attrs.evolve(
        PPO_TEST_CONFIG,
        max_steps=max_steps,
        summary_freq=summary_freq,
        hyperparameters=attrs.evolve(PPO_TEST_CONFIG.hyperparameters, learning_rate=learning_rate),
    )
    options = RunOptions(default_settings=settings)
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, env_path=f"external:{port}", seed=seed),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="server"),
        )
        run = build_run(options, writers=[log, lags], console=False, stop=log.stop)
        watchdog = threading.Timer(120.0, log.stop.set)  # a stuck run fails the test instead of hanging it
        watchdog.start()
        done = threading.Event()
        counts = [0] * len(inferences)

        def client_thread(i: int, inference: str) -> None:
            counts[i] = simulator(f"127.0.0.1:{port}", inference, seed * 100 + i, done)

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
        assert list(run.run_dir.glob("*.onnx"))
    return log.rewards, counts, lags.means


def test_ppo_solves_simple_through_remote_and_local_clients():
    _, episodes, _ = first_or_second_seed(
        lambda seed: train_through_server(seed=seed, inferences=("remote", "remote", "local", "local")),
        lambda run: bool(run[0]) and run[0][-1] > 0.9,  # random play scores about 0
    )
    assert all(n > 0 for n in episodes), episodes  # every client took part


def test_control_without_learning_stays_unsolved():
    rewards, _, _ = train_through_server(seed=1, inferences=("remote", "local"), max_steps=1600, learning_rate=0.0)
    assert max(rewards) < 0.5, rewards


def test_fast_local_clients_act_on_the_newest_policy_and_leave_remote_ones_their_share():
    rewards, episodes, lags = first_or_second_seed(
        lambda seed: train_through_server(
            seed=seed,
            inferences=("remote", "remote", "local", "local"),
            simulator=pick_the_goal,
            solved=3.8,
            max_steps=4000,
            summary_freq=500,
        ),
        lambda run: run[0][-1] > 3.5,  # random play scores 1.33; on a stale policy it stayed there
    )
    # Remote ones are not crowded out (they were: 1 episode to a local one's 200). How many more a
    # local client finishes depends on the CPU left for a remote one's round trips: local/remote
    # 1.3 and 2.1 (seeds 1, 2) alone, 2.8 and 3.4 beside two busy cores, 4.4 and 4.9 in CI's suite.
    assert min(episodes[:2]) > max(episodes[2:]) / 10, episodes
    assert lags, "the lag of local-inference steps reaches the run's statistics"
