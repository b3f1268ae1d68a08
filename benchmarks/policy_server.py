"""Policy server throughput: agent steps per second the run takes from 1, 4 and 16
concurrent clients (separate processes, remote inference: one round trip per step) on
ML-Agents' SimpleEnvironment task driven from outside (1 float observation, 1 continuous
action, episodes of at most 20 decisions), through the real env manager, processor and a
TorchPolicy (1 x 32 hidden, 1 torch thread); no trainer. Also local inference (ONNX in the
client, steps sent in batches of 64) for ``--local-clients``. Prints one JSON object.

    .venv/bin/python benchmarks/policy_server.py [--seconds 3.0] [--clients 1 4 16] [--local-clients 4]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import time


def client_process(address: str, seconds: float, seed: int, inference: str) -> None:
    """One simulator: episodes as fast as the server answers, for ``seconds``."""
    import numpy as np

    from envs.external import PolicyClient, PolicyServerError

    rng = np.random.default_rng(seed)
    client = PolicyClient(address, "Simple", [(1,)], continuous_size=1, inference=inference)
    end = time.monotonic() + seconds
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
    except (OSError, PolicyServerError):
        pass
    finally:
        client.close()


def measure(clients: int, seconds: float, inference: str = "remote") -> dict[str, float]:
    """Agent steps/s (and env steps/s: server steps, each a batch) over ``seconds`` after a
    one-second warm-up, with ``clients`` client processes."""
    import torch

    from envs.external import PolicyServerEnv
    from envs.workers import InProcessPool, OpenEnv
    from orchestration.env_manager import BehaviorRuntime, EnvManager
    from orchestration.external import OnnxModels
    from processors import AgentManager, AgentManagerQueue
    from stats import StatsReporter
    from trainers.policy import TorchPolicy
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
    processes = [
        context.Process(target=client_process, args=(env.address, seconds + 3.0, i, inference)) for i in range(clients)
    ]
    for process in processes:
        process.start()

    def drain() -> None:
        for runtime in runtimes.values():
            while True:
                try:
                    runtime.manager.trajectory_queue.get_nowait()
                except AgentManagerQueue.Empty:
                    break

    try:
        while manager.agent_steps == 0:  # the clients are starting
            manager.advance(0.0)
        warm_end = time.monotonic() + 1.0
        while time.monotonic() < warm_end:
            manager.advance(0.0)
            drain()
        steps0, env_steps0, start = manager.agent_steps, manager.env_steps, time.perf_counter()
        while time.perf_counter() - start < seconds:
            manager.advance(0.0)
            drain()
        elapsed = time.perf_counter() - start
        agent_steps, env_steps = manager.agent_steps - steps0, manager.env_steps - env_steps0
    finally:
        manager.close()
        for process in processes:
            process.join(timeout=10)
    return {
        "agent_steps_per_s": round(agent_steps / elapsed, 1),
        "server_steps_per_s": round(env_steps / elapsed, 1),
        "agents_per_server_step": round(agent_steps / max(env_steps, 1), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--local-clients", type=int, nargs="*", default=[4])
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    results = {str(n): measure(n, args.seconds) for n in args.clients}
    local = {str(n): measure(n, args.seconds, "local") for n in args.local_clients}
    print(
        json.dumps(
            {
                "benchmark": "policy_server",
                "inference": "remote (clients); local (local_inference_clients)",
                "seconds": args.seconds,
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "clients": results,
                "local_inference_clients": local,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
