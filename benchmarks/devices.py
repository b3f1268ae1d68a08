"""Training speed on the CPU (one torch thread) and on each GPU torch sees, and the device the
``auto`` choice picks, for four workloads: PPO with ML-Agents' 3DBall settings, PPO with an
84x84x3 camera through ``nature_cnn`` (batch 128), SAC Walker-sized (243 floats, 39 continuous
actions, 3x256, batch 256) and POCA with ML-Agents' DungeonEscape settings on the built-in
DungeonEscape's observations.

Per workload and device: ``gradient_steps_per_s`` (minibatch updates of the algorithm's own
``update``: PPO/POCA over a buffer of 8 minibatches and their epochs, SAC one gradient step per
sample) and ``training_us_per_sample`` (what ``auto`` measures: trajectory processing and
updates per training sample, trainers.loop.device_choice). Prints one JSON object. Needs no GPU: on
a machine without one it reports the CPU alone.

    python benchmarks/devices.py [--workload sac_walker_sized ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from envs.builtin import make_env
from stats import StatsReporter
from trainers.loop.device_choice import candidate_devices, choose_device, synthetic_trajectories, training_timing
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.sac.algorithm import SAC
from trainers.settings import TrainerSettings, structure_run_options

TE, NO = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE
MINIBATCHES = 8  # an on-policy buffer for the gradient-step rate
SAC_STEPS = 200


def vector(n: int) -> ObservationSpec:
    return ObservationSpec((n,), (NO,), ObservationType.DEFAULT, "vector")


def behavior_settings(behavior: dict) -> TrainerSettings:
    return structure_run_options({"behaviors": {"B": behavior}}).behavior_settings("B")


# ML-Agents' config/ppo/3DBall.yaml and config/poca/DungeonEscape.yaml, as far as they shape an update
MLAGENTS_3DBALL = {
    "hyperparameters": {"batch_size": 64, "buffer_size": 12000, "beta": 0.001, "lambd": 0.99, "num_epoch": 3},
    "network_settings": {"normalize": True, "hidden_units": 128, "num_layers": 2},
    "time_horizon": 1000,
}
MLAGENTS_DUNGEON_ESCAPE = {
    "trainer_type": "poca",
    "hyperparameters": {"batch_size": 1024, "buffer_size": 10240, "beta": 0.01, "num_epoch": 3},
    "network_settings": {"normalize": False, "hidden_units": 256, "num_layers": 2},
    "time_horizon": 64,
}


def workloads() -> dict[str, tuple[Any, BehaviorSpec, TrainerSettings]]:
    camera = ObservationSpec((84, 84, 3), (TE, TE, NO), ObservationType.DEFAULT, "camera")
    cnn = behavior_settings(
        {
            "hyperparameters": {"batch_size": 128, "buffer_size": 1024},
            "network_settings": {"vis_encode_type": "nature_cnn", "hidden_units": 256, "num_layers": 2},
        }
    )
    walker = behavior_settings(
        {
            "trainer_type": "sac",
            "hyperparameters": {"batch_size": 256, "buffer_size": 100_000, "steps_per_update": 1},
            "network_settings": {"hidden_units": 256, "num_layers": 3, "normalize": True},
        }
    )
    dungeon = make_env("DungeonEscape", seed=0)
    dungeon_spec = next(iter(dungeon.behavior_specs.values()))
    dungeon.close()
    return {
        "ppo_3dball": (
            PPO,
            BehaviorSpec([vector(8)], ActionSpec(2, ())),
            behavior_settings(MLAGENTS_3DBALL),
        ),
        "ppo_nature_cnn_84x84x3": (PPO, BehaviorSpec([camera], ActionSpec(0, (3,))), cnn),
        "sac_walker_sized": (SAC, BehaviorSpec([vector(243)], ActionSpec(39, ())), walker),
        "poca_dungeon_escape": (POCA, dungeon_spec, behavior_settings(MLAGENTS_DUNGEON_ESCAPE)),
    }


def gradient_steps_per_s(factory: Any, spec: BehaviorSpec, settings: TrainerSettings, device: str) -> float:
    hp: Any = settings.hyperparameters
    if factory is SAC:
        settings = attrs.evolve(settings, hyperparameters=attrs.evolve(hp, buffer_init_steps=0, steps_per_update=1))
        feed = [2 * hp.batch_size, SAC_STEPS]
    else:
        buffer = MINIBATCHES * hp.batch_size
        settings = attrs.evolve(settings, hyperparameters=attrs.evolve(hp, buffer_size=buffer))
        feed = [buffer + 1, buffer + 1]
    algorithm = factory(
        behavior_name="bench",
        behavior_spec=spec,
        settings=settings,
        stats_reporter=StatsReporter("bench"),
        seed=0,
        device=device,
    )
    rng = np.random.default_rng(0)
    memory = int(algorithm.policy.memory_size)
    elapsed, steps = 0.0, 0
    for i, samples in enumerate(feed):
        for trajectory in synthetic_trajectories(spec, samples, min(settings.time_horizon, samples), memory, rng):
            algorithm.add(trajectory)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        start = time.perf_counter()
        if factory is SAC:
            due = algorithm.updates_due()
        else:
            due = (MINIBATCHES * hp.batch_size // hp.batch_size) * int(getattr(hp, "num_epoch", 1))
        algorithm.update(0)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        if i > 0:  # the first round warms up
            elapsed += time.perf_counter() - start
            steps += due
    return steps / elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workload", action="append", help="workloads to measure (default: all four)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    devices = candidate_devices()
    results: dict[str, object] = {
        "benchmark": "devices",
        "torch": torch.__version__,
        "devices": {d: (torch.cuda.get_device_name(0) if d == "cuda" else "cpu, 1 torch thread") for d in devices},
        "workloads": {},
    }
    for name, (factory, spec, behavior) in workloads().items():
        if args.workload and name not in args.workload:
            continue
        timing = training_timing(factory, behavior_name=name, spec=spec, settings=behavior, seed=0)
        per_device = {}
        for device in devices:
            per_device[device] = {
                "gradient_steps_per_s": round(gradient_steps_per_s(factory, spec, behavior, device), 1),
                "training_us_per_sample": round(timing(device) * 1e6, 1),
            }
        measured = {device: rates["training_us_per_sample"] for device, rates in per_device.items()}
        choice = choose_device(measured.__getitem__, devices)
        results["workloads"][name] = {"per_device": per_device, "auto_picks": choice.device}  # type: ignore[index]
        print(name, json.dumps(per_device), file=sys.stderr, flush=True)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
