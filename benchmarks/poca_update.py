"""Seconds per POCA update beside PPO's on a 4-agent group task, printed as JSON.

The buffer holds 12096 synthetic samples of agents in groups of 4 (each sample carries its 3
mates' observations and actions): 8-float observations, 2 continuous actions, time horizon
1000, ML-Agents' 3DBall hyperparameters (batch 64, 3 epochs, 2x128 hidden, normalize) for both
trainers. Trajectory processing (normalisers, value and baseline estimates, returns) is timed
apart from the update. Medians of repeats, one torch thread unless given.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from pathlib import Path

import attrs
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.ppo_update import SAMPLES, SPEC, synthetic_trajectories
from processors import Trajectory
from processors.groups import Groupmates
from stats import StatsReporter
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.settings import POCASettings, load_run_options

MATES = 3


def grouped_trajectories(rng: np.random.Generator) -> list[Trajectory]:
    """ppo_update's synthetic trajectories, each agent with MATES group mates at every step."""
    grouped = []
    for trajectory in synthetic_trajectories(rng):
        n = trajectory.length
        mates = Groupmates(
            present=np.ones((n, MATES), bool),
            obs=(rng.standard_normal((n, MATES, 8)).astype(np.float32),),
            continuous_actions=rng.standard_normal((n, MATES, 2)).astype(np.float32),
            discrete_actions=np.zeros((n, MATES, 0), np.int32),
            rewards=np.zeros((n, MATES), np.float32),
            done=np.repeat(trajectory.done[:, None], MATES, axis=1),
            next_obs=(rng.standard_normal((MATES, 8)).astype(np.float32),),
        )
        grouped.append(attrs.evolve(trajectory, group_id=np.ones(n, np.int32), groupmates=mates))
    return grouped


def measure(trainer_type: str, threads: int, repeats: int) -> dict:
    torch.set_num_threads(threads)
    settings = load_run_options(Path(__file__).resolve().parents[1] / "config/ppo/3DBall.yaml").behavior_settings(
        "3DBall"
    )
    algorithm: PPO | POCA
    if trainer_type == "poca":
        hp = settings.hyperparameters
        poca_hp = POCASettings(
            **{name: getattr(hp, name) for name in attrs.fields_dict(POCASettings) if hasattr(hp, name)}
        )
        settings = attrs.evolve(settings, trainer_type="poca", hyperparameters=poca_hp)
        algorithm = POCA(
            behavior_name="Group", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("G"), seed=0
        )
    else:
        algorithm = PPO(
            behavior_name="Group", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("G"), seed=0
        )
    trajectories = grouped_trajectories(np.random.default_rng(0))
    update_seconds, processing_seconds = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        for trajectory in trajectories:
            algorithm.add(trajectory)
        processing_seconds.append(time.perf_counter() - start)
        start = time.perf_counter()
        algorithm.update(0)
        update_seconds.append(time.perf_counter() - start)
    return {
        "trainer_type": trainer_type,
        "torch_threads": threads,
        "samples": SAMPLES,
        "group_size": MATES + 1,
        "update_seconds": round(statistics.median(update_seconds), 3),
        "trajectory_processing_seconds": round(statistics.median(processing_seconds), 3),
        "repeats": repeats,
    }


def main() -> None:
    threads = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print(
        json.dumps(
            {
                "benchmark": "poca_update",
                "settings": "ML-Agents 3DBall hyperparameters; groups of 4; 12096 samples",
                "load_average_1min_at_start": round(os.getloadavg()[0], 2),
                "results": [measure("ppo", threads, 3), measure("poca", threads, 3)],
            }
        )
    )


if __name__ == "__main__":
    main()
