"""Policy server throughput, fairness and model lag. Prints one JSON object.

- ``clients``: agent steps per second the run takes from 1, 4 and 16 concurrent clients
  (separate processes, remote inference: one round trip per step) on ML-Agents'
  SimpleEnvironment task driven from outside (1 float observation, 1 continuous action,
  episodes of at most 20 decisions), through the real env manager, processor and a
  TorchPolicy (1 x 32 hidden, 1 torch thread); no trainer.
- ``local_inference_clients``: the same with clients acting with the ONNX policy they fetched
  (steps sent in batches of 64), while a stand-in trainer publishes a new model version every
  ``--publish-every`` agent steps (a PPO buffer): ``model_lag_versions`` is the mean, over the
  local steps taken, of the version then published less the version the client acted with.
- ``mixed_clients``: 2 remote + 2 local clients as above; ``episodes_per_client`` shows how
  the server shares its steps between them (remote first).
- ``training``: PPO through the real run wiring (``build_run``, ML-Agents' PPO test settings:
  buffer 64, batch 16, lr 5e-3, 1 x 32) on a fast 4-decision task (3 goals one-hot, 1 per
  right choice: best 4.0, random 1.33) for 6,000 steps, fed by 4 remote clients or by 2 remote
  + 2 local ones, per seed: the mean reward of each 1,000-step summary, each client's finished
  episodes, and the mean model lag of the local steps per summary.

    .venv/bin/python benchmarks/policy_server.py [--seconds 3.0] [--clients 1 4 16]
        [--local-clients 4] [--publish-every 2048] [--training-seeds 1 2 3]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: envs, tests.support

from envs.external.server import LAG_STAT  # noqa: E402


def client_process(address: str, seconds: float, seed: int, inference: str, episodes: Any) -> None:
    """One simulator: episodes as fast as the server answers, for ``seconds``; puts
    ``(seed, finished episodes)`` on ``episodes``."""
    import numpy as np

    from envs.external import PolicyClient, PolicyServerError

    rng = np.random.default_rng(seed)
    client = PolicyClient(address, "Simple", [(1,)], continuous_size=1, inference=inference)
    end = time.monotonic() + seconds
    finished = 0
    try:
        while time.monotonic() < end:
            episode = client.start_episode()
            goal = np.array([rng.choice([-1.0, 1.0])], np.float32)
            position = 0.0
            for _ in range(20):
                continuous, _ = client.get_action(episode, [goal])
                position = float(np.clip(position + 0.5 * continuous[0], -1, 1))
                if abs(position) >= 1:
                    break
                client.log_returns(episode, -0.01)
            client.log_returns(episode, 1.06 * position * float(goal[0]))
            client.end_episode(episode, [goal])
            finished += 1
    except (OSError, PolicyServerError):
        pass
    finally:
        client.close()
        episodes.put((seed, finished))


def measure(inferences: list[str], seconds: float, publish_every: int) -> dict[str, Any]:
    """Agent steps/s (and env steps/s: server steps, each a batch) over ``seconds`` after a
    one-second warm-up, with one client process per entry of ``inferences``."""
    import torch

    from envs.external import PolicyServerEnv
    from envs.workers import InProcessPool, OpenEnv
    from orchestration.env_manager import BehaviorRuntime, EnvManager
    from orchestration.external import OnnxModels
    from processors import AgentManager, AgentManagerQueue
    from stats import StatsReporter
    from trainers.networks.policy import TorchPolicy
    from trainers.settings import NetworkSettings

    torch.set_num_threads(1)
    env = PolicyServerEnv(0, step_wait_s=0.05)
    runtimes: dict[str, BehaviorRuntime] = {}

    def create(behavior_id, spec):
        policy = TorchPolicy(spec, NetworkSettings(num_layers=1, hidden_units=32), seed=0)
        manager = AgentManager(policy, behavior_id, StatsReporter(behavior_id), 64, threaded=False)
        runtimes[behavior_id] = BehaviorRuntime(manager, policy)
        return runtimes[behavior_id]

    manager = EnvManager(InProcessPool(opener=lambda worker_id: OpenEnv(env, dict)), create)
    models = OnnxModels()
    models.attach(manager.runtimes)
    env.serve_models(models)
    context = multiprocessing.get_context("spawn")
    episodes = context.Queue()
    processes = [
        context.Process(target=client_process, args=(env.address, seconds + 3.0, i, inference, episodes))
        for i, inference in enumerate(inferences)
    ]
    for process in processes:
        process.start()

    def advance() -> None:
        manager.advance(0.0)
        for runtime in runtimes.values():
            while True:
                try:
                    runtime.manager.trajectory_queue.get_nowait()
                except AgentManagerQueue.Empty:
                    break
            if manager.agent_steps >= (runtime.weights_version + 1) * publish_every:
                runtime.weights_version += 1  # the stand-in trainer publishes (the weights stay)

    try:
        while manager.agent_steps == 0:  # the clients are starting
            manager.advance(0.0)
        warm_end = time.monotonic() + 1.0
        while time.monotonic() < warm_end:
            advance()
        env.get_and_reset_stats()
        steps0, env_steps0, start = manager.agent_steps, manager.env_steps, time.perf_counter()
        while time.perf_counter() - start < seconds:
            advance()
        elapsed = time.perf_counter() - start
        agent_steps, env_steps = manager.agent_steps - steps0, manager.env_steps - env_steps0
        lag = env.get_and_reset_stats().get(LAG_STAT)
    finally:
        manager.close()
        for process in processes:
            process.join(timeout=10)
    finished = dict(episodes.get(timeout=10) for _ in processes)
    result: dict[str, Any] = {
        "agent_steps_per_s": round(agent_steps / elapsed, 1),
        "server_steps_per_s": round(env_steps / elapsed, 1),
        "agents_per_server_step": round(agent_steps / max(env_steps, 1), 2),
        "episodes_per_client": [finished[i] for i in range(len(inferences))],
    }
    if lag:
        result["model_lag_versions"] = round(lag[0][0], 3)
    return result


def train(seed: int, inferences: tuple[str, ...]) -> dict[str, Any]:
    """One 6,000-step PPO run of the 4-decision task fed by ``inferences`` clients."""
    import attrs

    from orchestration.run import build_run
    from stats import StatsWriter
    from tests.support.policy_clients import pick_the_goal
    from trainers.settings import NetworkSettings, PPOSettings, RunOptions, ScheduleType, TrainerSettings

    class Summaries(StatsWriter):
        def __init__(self) -> None:
            self.rewards: list[float] = []
            self.lags: list[float] = []

        def write_stats(self, category, values, step):
            if "Environment/Cumulative Reward" in values:
                self.rewards.append(round(float(values["Environment/Cumulative Reward"].mean), 2))
            if LAG_STAT in values:
                self.lags.append(round(float(values[LAG_STAT].mean), 2))

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    settings = TrainerSettings(
        trainer_type="ppo",
        hyperparameters=PPOSettings(
            learning_rate=5.0e-3, learning_rate_schedule=ScheduleType.CONSTANT, batch_size=16, buffer_size=64
        ),
        network_settings=NetworkSettings(num_layers=1, hidden_units=32),
        summary_freq=1000,
        max_steps=6000,
        threaded=False,
    )
    summaries = Summaries()
    counts = [0] * len(inferences)
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as results:
        options = RunOptions(default_settings=settings)
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, env_path=f"external:{port}", seed=seed),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="bench"),
        )
        run = build_run(options, writers=[summaries], console=False)

        def client(i: int, inference: str) -> None:
            counts[i] = pick_the_goal(f"127.0.0.1:{port}", inference, seed * 100 + i, stop)

        threads = [threading.Thread(target=client, args=(i, inference)) for i, inference in enumerate(inferences)]
        for thread in threads:
            thread.start()
        start = time.perf_counter()
        try:
            run.run()
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
    return {
        "rewards": summaries.rewards,
        "episodes_per_client": counts,
        "model_lag_versions": summaries.lags,
        "seconds": round(time.perf_counter() - start, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, nargs="*", default=[1, 4, 16])
    parser.add_argument("--local-clients", type=int, nargs="*", default=[4])
    parser.add_argument("--publish-every", type=int, default=2048, help="agent steps between model versions")
    parser.add_argument("--training-seeds", type=int, nargs="*", default=[1, 2, 3])
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    remote = {str(n): measure(["remote"] * n, args.seconds, args.publish_every) for n in args.clients}
    local = {str(n): measure(["local"] * n, args.seconds, args.publish_every) for n in args.local_clients}
    mixed = measure(["remote", "remote", "local", "local"], args.seconds, args.publish_every)
    training = {
        name: {str(seed): train(seed, inferences) for seed in args.training_seeds}
        for name, inferences in (("remote_4", ("remote",) * 4), ("remote_2_local_2", ("remote",) * 2 + ("local",) * 2))
    }
    print(
        json.dumps(
            {
                "benchmark": "policy_server",
                "seconds": args.seconds,
                "publish_every": args.publish_every,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "clients": remote,
                "local_inference_clients": local,
                "mixed_clients": mixed,
                "training": training,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
