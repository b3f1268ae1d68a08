"""Anchor benchmark: ML-Agents 0.28's own recurrent PPO update on 3DBall-sized data.

What is measured
----------------
``mlagents.trainers.ppo.trainer.PPOTrainer`` is built as ``mlagents-learn`` builds it
(``RunOptions.from_dict`` on ML-Agents' config/ppo/3DBall.yaml plus
``network_settings.memory: {memory_size: 128, sequence_length: 64}``, ``PPOTrainer(...)``,
``trainer.create_policy`` -> ``TorchPolicy``, ``trainer.add_policy`` ->
``TorchPPOOptimizer``). Its update buffer is filled through ML-Agents' own ingestion:
synthetic ``Trajectory`` objects (shaped as ``AgentProcessor`` builds them for a recurrent
continuous-action agent: 8 observation floats, 2 continuous actions, a random [128] memory
per step) go to ``PPOTrainer._process_trajectory``, which updates the normalisers, runs the
recurrent critic sequence by sequence with its carried memory
(``_evaluate_by_sequence``), computes GAE and resequences the trajectory into the update
buffer (64-step sequences, the last one padded).

The data matches ``benchmarks/ppo_update.py``'s ``recurrent_update``: 12096 samples as 12
trajectories of 1000 steps (3DBall's time_horizon) and one of 96, distinct agent ids, every
other one ending its episode. That is 12416 buffer rows (194 sequences) and, with batch 64
(one sequence per minibatch) and 3 epochs, 582 minibatch steps per ``_update_policy()``.

Each repeat times ``_process_trajectory`` over the 13 trajectories, checks
``update_buffer.num_experiences``, then times one ``_update_policy()`` (which clears the
buffer at its end, as in training). Probes split the time: ``get_trajectory_value_estimates``
inside processing; ``update_buffer.shuffle``, ``make_mini_batch`` and ``optimizer.update``
inside the update. Medians of the repeats are reported.

Note that on import ML-Agents itself calls ``torch.set_num_threads(max(min(cpus // 2, 4),
1))``, i.e. mlagents-learn trains with 1 torch thread on a 2-core machine; the script times
at 1 torch thread (and at 2).

How to run
----------
It needs the separate venv with mlagents==0.28.0 (never the project's venv) that
``benchmarks/mlagents_sac_anchor.py``'s docstring sets up (including its cattrs patch).
From the repository root::

    /tmp/mla/bin/python benchmarks/mlagents_recurrent_anchor.py

It prints one JSON object to stdout (about 1 minute on 2 cores).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import mlagents.trainers
import mlagents.trainers.trainer  # noqa: F401  (must precede ppo.trainer: circular import)
import numpy as np
import torch
from _mlagents_trajectory import continuous_trajectory  # this folder: the scripts run from it
from _probe import Probe
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.ppo.trainer import PPOTrainer
from mlagents.trainers.settings import RunOptions
from mlagents.trainers.trajectory import Trajectory
from mlagents_envs import logging_util
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

NAME = "3DBall"
OBS_SIZE = 8
ACT_SIZE = 2
MEMORY_SIZE = 128
SEQUENCE_LENGTH = 64
SAMPLES = 12_096
TIME_HORIZON = 1_000
CONFIG: dict[str, Any] = {  # ML-Agents' config/ppo/3DBall.yaml + memory
    "trainer_type": "ppo",
    "hyperparameters": {
        "batch_size": 64,
        "buffer_size": 12000,
        "learning_rate": 0.0003,
        "beta": 0.001,
        "epsilon": 0.2,
        "lambd": 0.99,
        "num_epoch": 3,
        "learning_rate_schedule": "linear",
    },
    "network_settings": {
        "normalize": True,
        "hidden_units": 128,
        "num_layers": 2,
        "vis_encode_type": "simple",
        "memory": {"memory_size": MEMORY_SIZE, "sequence_length": SEQUENCE_LENGTH},
    },
    "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
    "keep_checkpoints": 5,
    "max_steps": 100_000_000,  # (3DBall: 500000) so that repeats never reach it
    "time_horizon": TIME_HORIZON,
    "summary_freq": 12000,
}


def make_trainer(artifact_dir: str) -> PPOTrainer:
    """Build PPOTrainer + TorchPolicy + TorchPPOOptimizer as mlagents-learn does."""
    options = RunOptions.from_dict({"behaviors": {NAME: CONFIG}})
    trainer_settings = options.behaviors[NAME]
    trainer = PPOTrainer(NAME, 1, trainer_settings, True, False, 0, artifact_dir)
    spec = BehaviorSpec(
        observation_specs=[
            ObservationSpec(
                shape=(OBS_SIZE,),
                dimension_property=(DimensionProperty.NONE,),
                observation_type=ObservationType.DEFAULT,
                name="VectorSensor",
            )
        ],
        action_spec=ActionSpec.create_continuous(ACT_SIZE),
    )
    behavior_id = BehaviorIdentifiers.from_name_behavior_id(f"{NAME}?team=0")
    policy = trainer.create_policy(behavior_id, spec)
    trainer.add_policy(behavior_id, policy)
    assert policy.use_recurrent and policy.sequence_length == SEQUENCE_LENGTH
    return trainer


def synthetic_trajectory(rng: np.random.Generator, index: int, length: int) -> Trajectory:
    """A trajectory shaped like AgentProcessor's output for a recurrent continuous agent."""
    obs = rng.standard_normal((length + 1, OBS_SIZE), dtype=np.float32)
    actions = rng.standard_normal((length, ACT_SIZE), dtype=np.float32)
    log_probs = -0.5 * actions**2 - 0.92
    memories = rng.standard_normal((length, MEMORY_SIZE), dtype=np.float32)
    return continuous_trajectory(
        obs,
        actions,
        log_probs,
        np.full(length, 0.1, np.float32),
        terminated=index % 2 == 0,
        agent_id=f"agent_0-{index}",
        behavior_id=f"{NAME}?team=0",
        memories=memories,
    )


def synthetic_trajectories() -> list[Trajectory]:
    rng = np.random.default_rng(0)
    lengths = [TIME_HORIZON] * (SAMPLES // TIME_HORIZON) + [SAMPLES % TIME_HORIZON]
    return [synthetic_trajectory(rng, i, n) for i, n in enumerate(lengths)]


def install_probes(trainer: PPOTrainer) -> dict[str, Probe]:
    """Wrap the critic's evaluation in processing and the pieces of _update_policy."""
    buffer = trainer.update_buffer
    probes = {
        "value_estimates": Probe(trainer.optimizer.get_trajectory_value_estimates),
        "shuffle": Probe(buffer.shuffle),
        "make_mini_batch": Probe(buffer.make_mini_batch),
        "optimizer_update": Probe(trainer.optimizer.update),
    }
    trainer.optimizer.get_trajectory_value_estimates = probes["value_estimates"]
    buffer.shuffle = probes["shuffle"]
    buffer.make_mini_batch = probes["make_mini_batch"]
    trainer.optimizer.update = probes["optimizer_update"]
    return probes


def measure(threads: int, repeats: int, trajectories: list[Trajectory]) -> dict[str, Any]:
    torch.set_num_threads(threads)
    with tempfile.TemporaryDirectory() as artifact_dir:
        trainer = make_trainer(artifact_dir)
        probes = install_probes(trainer)
        runs: list[dict[str, float]] = []
        rows = steps = 0
        for _ in range(repeats):
            for probe in probes.values():
                probe.reset()
            start = time.perf_counter()
            for trajectory in trajectories:
                trainer._process_trajectory(trajectory)
            processing = time.perf_counter() - start
            rows = trainer.update_buffer.num_experiences
            assert 12_000 <= rows <= 12_500, rows
            assert trainer._is_ready_update()
            start = time.perf_counter()
            trainer._update_policy()
            update = time.perf_counter() - start
            assert trainer.update_buffer.num_experiences == 0
            steps = probes["optimizer_update"].calls
            runs.append(
                {
                    "trajectory_processing_seconds": processing,
                    "update_seconds": update,
                    **{f"{name}_seconds": probe.seconds for name, probe in probes.items()},
                }
            )
        del trainer
    return {
        "torch_threads": threads,
        "samples": SAMPLES,
        "buffer_rows": rows,
        "minibatch_steps": steps,
        **{key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]},
        "repeats": repeats,
    }


def main() -> None:
    logging_util.set_log_level(logging_util.ERROR)
    torch.manual_seed(0)
    np.random.seed(0)
    load = os.getloadavg()[0]
    trajectories = synthetic_trajectories()
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    results = [measure(1, repeats, trajectories), measure(2, max(repeats // 2, 1), trajectories)]
    print(
        json.dumps(
            {
                "benchmark": "mlagents_recurrent_ppo_update",
                "mlagents_version": mlagents.trainers.__version__,
                "torch": torch.__version__,
                "settings": "ML-Agents 3DBall PPO: batch 64, buffer 12000, 3 epochs, 2x128 hidden, normalize; "
                "memory_size 128, sequence_length 64; time_horizon 1000",
                "load_average_1min_at_start": round(load, 2),
                "recurrent_update": results,
            }
        )
    )


if __name__ == "__main__":
    main()
