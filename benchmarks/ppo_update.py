"""Seconds per PPO update with ML-Agents' 3DBall settings, and policy inference rates.

The update buffer holds 12096 synthetic samples (8-float observations, 2 continuous
actions): with batch 64 and 3 epochs that is 567 minibatch steps, the figure ML-Agents
0.28 needs about 2.8 s for on this kind of machine. Trajectory processing (normaliser,
value estimates, GAE) is timed separately. Printed as one JSON object; medians of repeats.

``recurrent_update``: the same spec and samples with ``network_settings.memory``
(memory_size 128, sequence_length 64). The trajectories keep 3DBall's time_horizon (1000
steps: 12 of 1000 and one of 96, distinct agent ids, random [T, 128] memories), so each is
cut into 64-step sequences with its last one padded: 194 sequences, 12416 buffer rows, and
with batch 64 one sequence per minibatch, 582 minibatch steps. Processing (PPO.add) runs
the recurrent critic sequence by sequence with the memory carried, as ML-Agents does.
ML-Agents 0.28's own figure on the same data: ``benchmarks/mlagents_recurrent_anchor.py``
(about 1.46 s per update and 0.39 s of processing at 1 torch thread on a 2-core machine with
the other core busy, against about 1.06 s and 0.045 s here). Both updates spend about 0.9 ms of
each minibatch step in the same two oneDNN LSTM kernels (actor and critic, forward and
backward over one 64-step sequence; about half of a step here, a third of ML-Agents'), which
bounds the update's speed-up well below the non-recurrent one's.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import attrs
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

import envs  # noqa: F401  (installs the protocol import hook that demonstration files need)
from processors import Trajectory
from stats import StatsReporter
from trainers.files.demonstrations import DemonstrationWriter
from trainers.ppo.algorithm import PPO
from trainers.settings import (
    BehavioralCloningSettings,
    CuriositySettings,
    GAILSettings,
    RewardSignalType,
    TrainerSettings,
    load_run_options,
)
from trainers.settings.schema import MemorySettings

SAMPLES = 12_096
DEMO_STEPS = 5_000
TRAJECTORY_LENGTH = 1_000  # 3DBall's time_horizon
MEMORY = MemorySettings(memory_size=128, sequence_length=64)
SPEC = BehaviorSpec(
    [ObservationSpec((8,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")], ActionSpec(2, ())
)


def synthetic_trajectories(rng: np.random.Generator, memory_size: int = 0) -> list[Trajectory]:
    lengths = [TRAJECTORY_LENGTH] * (SAMPLES // TRAJECTORY_LENGTH) + [SAMPLES % TRAJECTORY_LENGTH]
    trajectories = []
    for i, n in enumerate(lengths):
        actions = rng.standard_normal((n, 2)).astype(np.float32)
        done = np.zeros(n, bool)
        done[-1] = i % 2 == 0
        trajectories.append(
            Trajectory(
                behavior_id="3DBall?team=0",
                agent_id=f"agent_0-{i}",
                obs=(rng.standard_normal((n, 8)).astype(np.float32),),
                next_obs=(rng.standard_normal(8).astype(np.float32),),
                rewards=np.full(n, 0.1, np.float32),
                done=done,
                interrupted=np.zeros(n, bool),
                continuous_actions=actions,
                discrete_actions=np.zeros((n, 0), np.int32),
                continuous_log_probs=-0.5 * actions**2 - 0.92,
                discrete_log_probs=np.zeros((n, 0), np.float32),
                action_masks=np.zeros((n, 0), bool),
                prev_continuous_actions=np.zeros((n, 2), np.float32),
                prev_discrete_actions=np.zeros((n, 0), np.int32),
                memories=rng.standard_normal((n, memory_size)).astype(np.float32),
            )
        )
    return trajectories


def write_demo(path: Path, steps: int = DEMO_STEPS) -> Path:
    """A synthetic 3DBall demonstration of ``steps`` steps (episodes of 500)."""
    rng = np.random.default_rng(2)
    with DemonstrationWriter(path, behavior_name="3DBall", behavior_spec=SPEC) as writer:
        for t in range(steps):
            writer.add_step(
                0,
                [rng.standard_normal(8).astype(np.float32)],
                reward=0.1,
                done=(t + 1) % 500 == 0,
                continuous_action=rng.uniform(-1, 1, 2).astype(np.float32),
            )
    return path


def ball_settings(
    recurrent: bool = False, curiosity: bool = False, demo: Path | None = None, cloning: bool = False
) -> TrainerSettings:
    """config/ppo/3DBall.yaml's behavior, with MEMORY when ``recurrent``, with a curiosity signal
    (ML-Agents' defaults: 2 layers of 128, strength 0.02 as its Pyramids) when ``curiosity``,
    with a GAIL signal on ``demo`` (ML-Agents' defaults, strength 0.01 as its imitation configs)
    and, with ``cloning``, behavioral cloning on it (strength 0.5, ML-Agents' defaults)."""
    settings = load_run_options(Path(__file__).resolve().parents[1] / "config/ppo/3DBall.yaml").behavior_settings(
        "3DBall"
    )
    signals = dict(settings.reward_signals)
    if curiosity:
        signals[RewardSignalType.CURIOSITY] = CuriositySettings(strength=0.02)
    if demo is not None:
        signals[RewardSignalType.GAIL] = GAILSettings(strength=0.01, demo_path=str(demo))
        if cloning:
            settings = attrs.evolve(
                settings, behavioral_cloning=BehavioralCloningSettings(demo_path=str(demo), strength=0.5)
            )
    settings = attrs.evolve(settings, reward_signals=signals)
    if recurrent:
        network = attrs.evolve(settings.network_settings, memory=MEMORY)
        settings = attrs.evolve(settings, network_settings=network)
    return settings


def measure_update(
    threads: int,
    repeats: int,
    recurrent: bool = False,
    curiosity: bool = False,
    demo: Path | None = None,
    cloning: bool = False,
) -> dict:
    torch.set_num_threads(threads)
    settings = ball_settings(recurrent, curiosity, demo, cloning)
    ppo = PPO(
        behavior_name="3DBall", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("3DBall"), seed=0
    )
    memory_size = MEMORY.memory_size if recurrent else 0
    trajectories = synthetic_trajectories(np.random.default_rng(0), memory_size)
    update_seconds, processing_seconds = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for trajectory in trajectories:
            ppo.add(trajectory)
        processing_seconds.append(time.perf_counter() - start)
        rows = len(ppo.buffer)  # with memory: counting the padding of each trajectory's last sequence
        start = time.perf_counter()
        ppo.update(0)
        update_seconds.append(time.perf_counter() - start)
    hp = ppo.hyperparameters
    length = ppo.sequence_length
    per_minibatch = max(hp.batch_size // length, 1)
    return {
        "torch_threads": threads,
        "samples": SAMPLES,
        "buffer_rows": rows,
        "minibatch_steps": (rows // length // per_minibatch) * hp.num_epoch,
        "update_seconds": round(statistics.median(update_seconds), 3),
        "trajectory_processing_seconds": round(statistics.median(processing_seconds), 3),
        "repeats": repeats,
    }


def measure_inference(agents: int, threads: int, calls: int) -> dict:
    torch.set_num_threads(threads)
    settings = load_run_options(Path(__file__).resolve().parents[1] / "config/ppo/3DBall.yaml").behavior_settings(
        "3DBall"
    )
    policy = PPO(
        behavior_name="3DBall", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("3DBall"), seed=0
    ).policy
    obs = [np.random.default_rng(1).standard_normal((agents, 8)).astype(np.float32)]
    ids = np.arange(agents, dtype=np.int32)
    policy.act(obs, None, ids)
    rates = []
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            policy.act(obs, None, ids)
        rates.append(agents * calls / (time.perf_counter() - start))
    return {"agents": agents, "torch_threads": threads, "actions_per_s": round(statistics.median(rates))}


def main() -> None:
    demo = write_demo(Path(tempfile.mkdtemp()) / "3DBall.demo")
    results = {
        "benchmark": "ppo_update",
        "settings": "ML-Agents 3DBall: batch 64, buffer 12000, 3 epochs, 2x128 hidden, normalize",
        "load_average_1min_at_start": round(os.getloadavg()[0], 2),
        "update": [measure_update(1, 5), measure_update(2, 3)],
        "recurrent_settings": "as update, plus memory_size 128, sequence_length 64; time_horizon 1000",
        "recurrent_update": [measure_update(1, 5, recurrent=True), measure_update(2, 3, recurrent=True)],
        "curiosity_settings": "as update, plus a curiosity signal (2x128, strength 0.02) trained on every minibatch",
        "curiosity_update": [measure_update(1, 3, curiosity=True)],
        "gail_settings": f"as update, plus a GAIL signal (2x128, strength 0.01) on a {DEMO_STEPS}-step demonstration",
        "gail_update": [measure_update(1, 3, demo=demo)],
        "gail_cloning_settings": "as gail, plus behavioral cloning (strength 0.5, 3 epochs over the demonstration)",
        "gail_cloning_update": [measure_update(1, 3, demo=demo, cloning=True)],
        "inference": [measure_inference(n, 1, 300) for n in (1, 16, 256)],
    }
    print(json.dumps(results))


if __name__ == "__main__":
    main()
