"""Parity reference: ML-Agents 0.28's own SAC trainer on its ``test_hybrid_sac``, run on our built-in Simple env.

What is measured
----------------
ML-Agents' trainer test ``test_hybrid_sac`` (``mlagents/trainers/tests/torch/test_hybrid.py``; the
harness is ``check_env_trains.check_environment_trains``, neither ships in the wheel) is reproduced
here with ML-Agents' own trainer stack: ``TrainerFactory`` + ``TrainerController`` +
``SimpleEnvManager(env, EnvironmentParametersChannel())``, output (the final checkpoint) to a
temporary directory and ``StatsReporter.writers`` cleared (no summaries are written).  The config is
``dummy_config._SAC_CONFIG`` (lr 5e-3 constant, tau 0.01, init_entcoef 0.01, 1 layer of 16 units,
summary_freq 100, unthreaded) evolved as the test does: buffer_size 50000, batch_size 256,
buffer_init_steps 0, max_steps 10000.

The environment is not ML-Agents' ``SimpleEnvironment`` but our re-implementation of it,
``envs.builtin.make_env("Simple", seed=seed, continuous_size=c, discrete_branches=d, step_size=0.8)``.
For action sizes (c, d) in (1, 1), (2, 2), (1, 2), (2, 1) and seeds 1..5 (the env seed and
the training seed both = seed; ML-Agents' test itself uses the single training seed 1337), a run
passes when the mean of the last 5 finished episodes' returns (``env.episode_returns``, ML-Agents'
``env.final_rewards[brain]``) exceeds 0.9, as ``default_reward_processor`` + ``success_threshold``.

At the end of a run ``TrainerController`` saves the model, which includes an ONNX export; with the
venv's torch that needs ``onnxscript`` (not installed), so ``ModelSerializer.export_policy_model``
is replaced by a no-op here (the export happens after training and does not affect it).

Runs are sequential, one training at a time.  On import ML-Agents calls
``torch.set_num_threads(max(min(cpus // 2, 4), 1))`` (1 on a 2-core machine); this script also
sets 1 explicitly and reports ``torch.get_num_threads()``.

How to run
----------
It needs the separate ML-Agents 0.28 venv described in ``benchmarks/mlagents_sac_anchor.py``'s
docstring (never the project's venv).  From the repository root::

    PYTHONPATH=. /tmp/mla/bin/python benchmarks/mlagents_hybrid_sac.py

It prints one JSON object to stdout and one progress line per run to stderr (20 runs of about
75-95 s each, about 26 minutes in all, on 2 cores with 1 torch thread).
"""

from __future__ import annotations

import json
import math
import platform
import sys
import tempfile
import time
from typing import Any

import attr
import mlagents.trainers
import mlagents.trainers.trainer  # noqa: F401  (must precede sac.trainer: circular import)
import numpy as np
import torch
from mlagents.trainers.environment_parameter_manager import EnvironmentParameterManager
from mlagents.trainers.settings import NetworkSettings, SACSettings, ScheduleType, TrainerSettings, TrainerType
from mlagents.trainers.simple_env_manager import SimpleEnvManager
from mlagents.trainers.stats import StatsReporter
from mlagents.trainers.torch.model_serialization import ModelSerializer
from mlagents.trainers.trainer import TrainerFactory
from mlagents.trainers.trainer_controller import TrainerController
from mlagents_envs import logging_util
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel

from envs.builtin import make_env

ACTION_SIZES: list[tuple[int, int]] = [(1, 1), (2, 2), (1, 2), (2, 1)]
SEEDS: list[int] = [1, 2, 3, 4, 5]
STEP_SIZE = 0.8
MAX_STEPS = 10_000
LAST_N = 5
SUCCESS_THRESHOLD = 0.9

#: ``dummy_config._SAC_CONFIG`` of ML-Agents' trainer tests.
_SAC_CONFIG = TrainerSettings(
    trainer_type=TrainerType.SAC,
    hyperparameters=SACSettings(
        learning_rate=5.0e-3,
        learning_rate_schedule=ScheduleType.CONSTANT,
        batch_size=8,
        buffer_init_steps=100,
        buffer_size=5000,
        tau=0.01,
        init_entcoef=0.01,
    ),
    network_settings=NetworkSettings(num_layers=1, hidden_units=16),
    summary_freq=100,
    max_steps=1000,
    threaded=False,
)


def hybrid_sac_config() -> TrainerSettings:
    """The trainer settings of ``test_hybrid_sac``."""
    hyperparameters = attr.evolve(_SAC_CONFIG.hyperparameters, buffer_size=50000, batch_size=256, buffer_init_steps=0)
    return attr.evolve(_SAC_CONFIG, hyperparameters=hyperparameters, max_steps=MAX_STEPS)


def run_one(action_size: tuple[int, int], seed: int) -> dict[str, Any]:
    """Train once as ``check_environment_trains`` does; return the last-N mean, pass flag and timing."""
    continuous, discrete = action_size
    env = make_env("Simple", seed=seed, continuous_size=continuous, discrete_branches=discrete, step_size=STEP_SIZE)
    (behavior_id,) = env.behavior_specs.keys()
    brain_name = behavior_id.split("?")[0]
    param_manager = EnvironmentParameterManager()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as output_path:
        StatsReporter.writers.clear()
        trainer_factory = TrainerFactory(
            trainer_config={brain_name: hybrid_sac_config()},
            output_path=output_path,
            train_model=True,
            load_model=False,
            seed=seed,
            param_manager=param_manager,
            multi_gpu=False,
        )
        controller = TrainerController(
            trainer_factory=trainer_factory,
            output_path=output_path,
            run_id="id",
            param_manager=param_manager,
            train=True,
            training_seed=seed,
        )
        controller.start_learning(SimpleEnvManager(env, EnvironmentParametersChannel()))
    wall = time.perf_counter() - start
    returns = env.episode_returns
    last = float(np.array(returns[-LAST_N:], dtype=np.float32).mean())
    return {
        "last5_mean": round(last, 4),
        "passed": bool(not math.isnan(last) and last > SUCCESS_THRESHOLD),
        "last5": [round(r, 4) for r in returns[-LAST_N:]],
        "episodes": len(returns),
        "wall_s": round(wall, 1),
    }


def skip_onnx_export(self: ModelSerializer, output_filepath: str) -> None:
    """Stand-in for ``ModelSerializer.export_policy_model``: the final ONNX export needs onnxscript."""


def main() -> None:
    """Run every action size on every seed, one training at a time, and print one JSON object."""
    logging_util.set_log_level(logging_util.ERROR)
    ModelSerializer.export_policy_model = skip_onnx_export  # type: ignore[method-assign]
    torch.set_num_threads(1)
    sizes: dict[str, Any] = {}
    for action_size in ACTION_SIZES:
        runs: dict[str, dict[str, Any]] = {}
        for seed in SEEDS:
            runs[str(seed)] = run_one(action_size, seed)
            print(f"{action_size} seed {seed}: {runs[str(seed)]}", file=sys.stderr, flush=True)
        sizes[str(action_size)] = {
            "passes": sum(run["passed"] for run in runs.values()),
            "of": len(runs),
            "seeds": runs,
        }
    print(
        json.dumps(
            {
                "mlagents_version": mlagents.trainers.__version__,
                "torch": torch.__version__,
                "torch_threads": torch.get_num_threads(),
                "python": platform.python_version(),
                "test": {
                    "name": "test_hybrid_sac",
                    "step_size": STEP_SIZE,
                    "max_steps": MAX_STEPS,
                    "success": f"mean of last {LAST_N} episode returns > {SUCCESS_THRESHOLD}",
                },
                "sizes": sizes,
            }
        )
    )


if __name__ == "__main__":
    main()
