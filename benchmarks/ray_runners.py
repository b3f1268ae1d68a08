"""Sampling throughput on one machine: the subprocess pool (inference batched in the learner)
against Ray env runners (each acts with its own policy copy and ships trajectories), same
scene and worker count, no training (the policy stays fixed; trajectories are drained as they
arrive). Scenes: built-in 3DBall (12 agents per worker) and the stand-in Unity build (balance
scene, 12 agents, the real gRPC protocol).

Also the bytes per agent step that cross the process boundary: pickled ``WorkerResult`` plus
actions for the subprocess pool, pickled ``RunnerBatch`` (trajectories with their stats) for a
runner.

Prints one JSON document.

    .venv/bin/python benchmarks/ray_runners.py [--agent-steps 60000] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import platform
import sys
import tempfile
import time
from pathlib import Path

import attrs

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
HORIZON = 64


def create_runtime_factory():
    from orchestration.env_manager import BehaviorRuntime
    from processors import AgentManager
    from stats import StatsReporter
    from trainers.networks.policy import TorchPolicy
    from trainers.settings import NetworkSettings

    def create_runtime(behavior_id, spec):
        policy = TorchPolicy(spec, NetworkSettings(normalize=True, hidden_units=128, num_layers=2), seed=1)
        manager = AgentManager(policy, behavior_id, StatsReporter(behavior_id), HORIZON, threaded=False)
        return BehaviorRuntime(manager, policy)

    return create_runtime


def drain(manager) -> int:
    return sum(len(t) for queue in manager.trajectory_queues() for t in queue.drain())


def throughput(manager, agent_steps: int) -> dict:
    """Agent steps/s once every worker has stepped (start-up excluded)."""
    manager.start()
    while manager.agent_steps < 2_000:
        manager.advance(timeout=1.0)
        drain(manager)
    start_steps, start = manager.agent_steps, time.perf_counter()
    while manager.agent_steps - start_steps < agent_steps:
        manager.advance(timeout=1.0)
        drain(manager)
    elapsed = time.perf_counter() - start
    return {"agent_steps_per_s": round((manager.agent_steps - start_steps) / elapsed, 1)}


def measure(launch, workers: int, agent_steps: int, backend: str) -> dict:
    from envs.workers import InProcessPool, SubprocessPool
    from orchestration.env_manager import EnvManager
    from orchestration.ray_env_manager import RayEnvManager

    create_runtime = create_runtime_factory()
    if backend == "subprocess":
        pool = SubprocessPool(launch, workers) if workers > 1 else InProcessPool(launch)
        manager = EnvManager(pool, create_runtime)
    else:
        manager = RayEnvManager(launch, workers, create_runtime, address="local", policy_seed=1)
    try:
        return throughput(manager, agent_steps)
    finally:
        manager.close()


def wire_bytes(launch, env_steps: int = 200) -> dict:
    """Bytes per agent step: what a subprocess worker sends and receives per step, and what a
    runner ships per batch."""
    from envs.workers import InProcessPool
    from orchestration.env_manager import EnvManager
    from orchestration.env_runner import EnvRunner
    from orchestration.ray_env_manager import STEPS_PER_SAMPLE

    create_runtime = create_runtime_factory()
    pool = InProcessPool(launch)
    manager = EnvManager(pool, create_runtime)
    sent = received = 0
    step = pool.step

    def counting_step(worker_id, actions):
        nonlocal sent
        sent += len(pickle.dumps(actions, protocol=5))
        step(worker_id, actions)

    pool.step = counting_step  # type: ignore[method-assign]
    poll = pool.poll

    def counting_poll(timeout):
        nonlocal received
        out = poll(timeout)
        received += sum(len(pickle.dumps(r, protocol=5)) for r in out)
        return out

    pool.poll = counting_poll  # type: ignore[method-assign]
    for _ in range(env_steps):
        manager.advance()
    subprocess_bytes = (sent + received) / manager.agent_steps
    manager.close()

    # on other ports: the closed build's may not be free yet
    runner = EnvRunner(attrs.evolve(launch, base_port=launch.base_port + 2), 0, 0, policy_seed=1)
    shipped = steps = 0
    try:
        batch = runner.start()
        while steps < manager.agent_steps:
            if batch.fault is not None:
                raise RuntimeError(batch.fault.message)
            for behavior_id, spec in batch.new_specs.items():  # as the learner adds them
                runtime = create_runtime(behavior_id, spec.to_spec())
                runner.add_behavior(behavior_id, runtime.policy.blueprint(), HORIZON)
            batch = runner.sample(STEPS_PER_SAMPLE, 10.0)
            shipped += len(pickle.dumps(batch, protocol=5))
            steps += sum(batch.agent_steps.values())
    finally:
        runner.close()
    return {
        "subprocess_bytes_per_agent_step": round(subprocess_bytes, 1),
        "ray_runner_bytes_per_agent_step": round(shipped / steps, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent-steps", type=int, default=60_000)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()

    import torch

    from envs.workers import EnvLaunch
    from tests.support.standin import write_launcher

    torch.set_num_threads(1)
    results = {}
    with tempfile.TemporaryDirectory() as folder:
        scenes = {
            "builtin:3DBall": EnvLaunch(env_path="builtin:3DBall", seed=1),
            "standin balance": EnvLaunch(
                env_path=write_launcher(folder, name="Bench.x86_64"),
                seed=1,
                base_port=23000 + os.getpid() % 1000 * 10,
                env_args=("--agents", "12"),
                log_folder=folder,
            ),
        }
        for name, launch in scenes.items():
            case = {}
            for backend in ("subprocess", "ray"):
                case[backend] = measure(launch, args.workers, args.agent_steps, backend)
            case["ray_over_subprocess"] = round(
                case["ray"]["agent_steps_per_s"] / case["subprocess"]["agent_steps_per_s"], 3
            )
            case.update(wire_bytes(launch))
            results[name] = case
    print(
        json.dumps(
            {
                "benchmark": "ray_runners",
                "workers": args.workers,
                "agent_steps": args.agent_steps,
                "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
                "results": results,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
