"""SAC gradient steps per second, as the trainer takes them. Prints JSON.

Settings (issue 12): ``3dball`` is ML-Agents' config/sac/3DBall.yaml (batch 64, 2 layers of 64,
normalize, 8 observation floats, 2 continuous actions, a 200k replay buffer); ``walker`` is
Walker-sized (batch 256, 3 layers of 256, normalize, 243 floats, 39 continuous actions, 200k);
``hybrid_test`` is the size of the hybrid learning tests on Simple (batch 256, 1 layer of 16, 2
floats, 1 continuous action and two discrete branches of 2, no normalisation), where a step is
nearly all per-op overhead.
The replay buffer is filled with random transitions first, then ``SAC.update`` runs the gradient
steps that ``steps_per_update`` makes due, each on a minibatch drawn from the full buffer:
exactly the trainer's work per gradient step (sample, rewards, losses, optimiser, target
update). ``sample_ms`` is a minibatch draw alone, timed separately.

The anchor is ML-Agents 0.28's own trainer loop on the same settings
(``benchmarks/mlagents_sac_anchor.py``, run with a venv holding mlagents 0.28).

Usage: ``PYTHONPATH=. python benchmarks/sac_update.py [--seconds S] [--threads 1 2]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from processors.trajectory import Trajectory  # noqa: E402 - after the path set-up
from stats import StatsReporter  # noqa: E402
from tests.steps import behavior_spec  # noqa: E402
from trainers.sac.algorithm import SAC  # noqa: E402
from trainers.settings import NetworkSettings, SACSettings, TrainerSettings  # noqa: E402

SETTINGS = {
    "3dball": {"batch_size": 64, "hidden_units": 64, "num_layers": 2, "obs": 8, "continuous": 2},
    "walker": {"batch_size": 256, "hidden_units": 256, "num_layers": 3, "obs": 243, "continuous": 39},
    "pendulum": {
        "batch_size": 256,
        "hidden_units": 256,
        "num_layers": 2,
        "obs": 3,
        "continuous": 1,
        "normalize": False,
    },
    "hybrid_test": {
        "batch_size": 256,
        "hidden_units": 16,
        "num_layers": 1,
        "obs": 2,
        "continuous": 1,
        "branches": (2, 2),
        "normalize": False,
    },
}
BUFFER_SIZE = 200_000
CHUNK = 1000  # transitions per synthetic trajectory while filling


def build(name: str) -> SAC:
    config = SETTINGS[name]
    settings = TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(batch_size=config["batch_size"], buffer_size=BUFFER_SIZE, steps_per_update=1.0),
        network_settings=NetworkSettings(
            normalize=config.get("normalize", True),
            hidden_units=config["hidden_units"],
            num_layers=config["num_layers"],
        ),
        max_steps=10**9,
    )
    branches = tuple(config.get("branches", ()))
    spec = behavior_spec(obs_shapes=((config["obs"],),), continuous=config["continuous"], branches=branches)
    sac = SAC(behavior_name="Bench", behavior_spec=spec, settings=settings, stats_reporter=StatsReporter("Bench"))
    rng = np.random.default_rng(0)
    for i in range(BUFFER_SIZE // CHUNK):
        done = np.zeros(CHUNK, bool)
        done[-1] = True
        discrete = np.zeros((CHUNK, len(branches)), np.int32)
        for b, n in enumerate(branches):
            discrete[:, b] = rng.integers(0, n, CHUNK)
        sac.replay.add(
            Trajectory(
                behavior_id="Bench?team=0",
                agent_id=f"agent_0-{i}",
                obs=(rng.standard_normal((CHUNK, config["obs"]), np.float32),),
                next_obs=(rng.standard_normal(config["obs"], np.float32),),
                rewards=rng.standard_normal(CHUNK, np.float32),
                done=done,
                interrupted=np.zeros(CHUNK, bool),
                continuous_actions=rng.uniform(-1, 1, (CHUNK, config["continuous"])).astype(np.float32),
                discrete_actions=discrete,
                continuous_log_probs=np.zeros((CHUNK, config["continuous"]), np.float32),
                discrete_log_probs=np.zeros((CHUNK, len(branches)), np.float32),
                action_masks=np.ones((CHUNK, sum(branches)), bool),
                prev_continuous_actions=np.zeros((CHUNK, config["continuous"]), np.float32),
                prev_discrete_actions=np.zeros((CHUNK, len(branches)), np.int32),
                memories=np.zeros((CHUNK, 0), np.float32),
            ),
            rng.standard_normal((CHUNK, 1)).astype(np.float32),
        )
    sac.policy.update_normalization([rng.standard_normal((1000, config["obs"]), np.float32)])
    sac.steps = BUFFER_SIZE
    return sac


def measure(sac: SAC, seconds: float) -> dict:
    """Gradient steps per second through ``SAC.update``, and a minibatch draw on its own."""
    steps_per_call = 50
    sac.update_steps = sac.steps - steps_per_call - 20  # 20 warm-up steps first
    sac.update(0)
    taken, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        sac.update_steps = sac.steps - steps_per_call
        sac.update(0)
        taken += steps_per_call - 1  # the ratio stops one short of the step count
    elapsed = time.perf_counter() - start
    draws, sample_start = 0, time.perf_counter()
    while time.perf_counter() - sample_start < 0.5:
        sac.replay.sample(sac.hyperparameters.batch_size, sac._sampling)
        draws += 1
    sample_ms = (time.perf_counter() - sample_start) / draws * 1e3
    return {
        "grad_steps_per_s": round(taken / elapsed, 1),
        "ms_per_step": round(elapsed / taken * 1e3, 3),
        "sample_ms": round(sample_ms, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("settings", nargs="*", default=list(SETTINGS))
    args = parser.parse_args()
    results: dict = {"torch": torch.__version__, "buffer_size": BUFFER_SIZE, "settings": {}}
    for name in args.settings:
        sac = build(name)
        results["settings"][name] = {}
        for threads in args.threads:
            torch.set_num_threads(threads)
            results["settings"][name][f"threads_{threads}"] = measure(sac, args.seconds)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
