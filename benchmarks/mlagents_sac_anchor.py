"""Anchor benchmark: ML-Agents 0.28's own SAC gradient-step rate on this machine.

What is measured
----------------
For each setting the script builds ``mlagents.trainers.sac.trainer.SACTrainer``
exactly as ``mlagents-learn`` does (``RunOptions.from_dict`` on the YAML config,
``SACTrainer(...)``, ``trainer.create_policy`` -> ``TorchPolicy`` with
``condition_sigma_on_obs=True, tanh_squash=True, separate_critic=True``, then
``trainer.add_policy`` -> ``TorchSACOptimizer``).  The replay buffer is filled
through ML-Agents' own ingestion path: random ``Trajectory`` objects (shaped like
``AgentProcessor`` builds them for a continuous-action agent) are fed to
``SACTrainer._process_trajectory``, which updates the normalizers, evaluates the
critic and appends to ``trainer.update_buffer``.

Timing then calls ``SACTrainer._update_sac_policy`` with ``_step`` set so that a
known number of gradient steps is due (10 per call, as a trainer that wakes up
after a few trajectories would see).  Each gradient step in that loop is
``update_buffer.sample_mini_batch`` + extrinsic ``reward_signal.evaluate`` +
``optimizer.update``; these three are wrapped with ``time.perf_counter`` probes
to split the per-step time.  ``grad_steps_per_s`` is computed from the wall
time of the whole ``_update_sac_policy`` calls (so it includes ML-Agents' per
step stats bookkeeping, reported as ``other_ms``); ``grad_steps_per_s_median_call``
uses the median ``_update_sac_policy`` call instead, to be robust to stalls caused
by other load on a shared machine.

Note that on import ML-Agents itself calls ``torch.set_num_threads(max(min(cpus // 2,
4), 1))``, i.e. mlagents-learn trains with 1 torch thread on a 2-core machine.

Settings: "3dball" (config/sac/3DBall.yaml: batch 64, 2x64 MLP, normalize,
8 obs floats, 2 continuous actions, 200k transitions, gamma 0.99) and "walker"
(batch 256, 3x256 MLP, normalize, 243 obs floats, 39 continuous actions, 200k
transitions; config/sac/Walker.yaml itself uses batch 1024), each at
``torch.set_num_threads(1)`` and ``(2)``. ``max_steps`` is raised so that
``should_still_train`` stays true while filling.

How to run
----------
It needs a separate venv with mlagents==0.28.0 (never the project's venv)::

    python3 -m venv /tmp/mla
    /tmp/mla/bin/pip install torch==2.13.0 'setuptools<81'
    /tmp/mla/bin/pip install --no-deps mlagents==0.28.0 mlagents-envs==0.28.0
    /tmp/mla/bin/pip install numpy==1.23.5 protobuf==3.20.3 cattrs==1.6.0 attrs \
        pyyaml grpcio cloudpickle pillow 'tensorboard<2.15' h5py filelock

cattrs 1.6.0 breaks on Python 3.11 (``functools.singledispatch.register``
raises ``TypeError`` for non-class types such as ``typing.Dict[...]``), so patch
``cattr/dispatch.py``, ``MultiStrategyDispatch.register_cls_list``: replace
``self._single_dispatch.register(cls, handler)`` with::

    try:
        self._single_dispatch.register(cls, handler)
    except TypeError:
        self._direct_dispatch[cls] = handler

Then, from the repository root::

    /tmp/mla/bin/python benchmarks/mlagents_sac_anchor.py

It prints one JSON object to stdout (about 1 minute on 2 cores; fill ~20 s, peak RSS ~1.2 GB).
"""

from __future__ import annotations

import json
import tempfile
import time
from typing import Any

import mlagents.trainers
import mlagents.trainers.trainer  # noqa: F401  (must precede sac.trainer: circular import)
import numpy as np
import torch
from _mlagents_trajectory import continuous_trajectory  # this folder: the scripts run from it
from _probe import Probe
from mlagents.trainers.behavior_id_utils import BehaviorIdentifiers
from mlagents.trainers.sac.trainer import SACTrainer
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

SETTINGS: dict[str, dict[str, Any]] = {
    "3dball": {
        "obs_size": 8,
        "act_size": 2,
        "transitions": 200_000,
        "config": {
            "trainer_type": "sac",
            "hyperparameters": {
                "learning_rate": 0.0003,
                "learning_rate_schedule": "constant",
                "batch_size": 64,
                "buffer_size": 200_000,
                "buffer_init_steps": 0,
                "tau": 0.005,
                "steps_per_update": 10.0,
                "save_replay_buffer": False,
                "init_entcoef": 0.5,
                "reward_signal_steps_per_update": 10.0,
            },
            "network_settings": {
                "normalize": True,
                "hidden_units": 64,
                "num_layers": 2,
                "vis_encode_type": "simple",
            },
            "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
            "keep_checkpoints": 5,
            "max_steps": 100_000_000,
            "time_horizon": 1000,
            "summary_freq": 12_000,
        },
    },
    "walker": {
        "obs_size": 243,
        "act_size": 39,
        "transitions": 200_000,
        "config": {
            "trainer_type": "sac",
            "hyperparameters": {
                "learning_rate": 0.0003,
                "learning_rate_schedule": "constant",
                "batch_size": 256,
                "buffer_size": 200_000,
                "buffer_init_steps": 0,
                "tau": 0.005,
                "steps_per_update": 30.0,
                "save_replay_buffer": False,
                "init_entcoef": 1.0,
                "reward_signal_steps_per_update": 30.0,
            },
            "network_settings": {
                "normalize": True,
                "hidden_units": 256,
                "num_layers": 3,
                "vis_encode_type": "simple",
            },
            "reward_signals": {"extrinsic": {"gamma": 0.99, "strength": 1.0}},
            "keep_checkpoints": 5,
            "max_steps": 100_000_000,
            "time_horizon": 1000,
            "summary_freq": 30_000,
        },
    },
}

WARMUP_STEPS = 20
STEPS_PER_CALL = 10
MIN_SECONDS = 3.0


def make_trainer(name: str, setting: dict[str, Any], artifact_dir: str) -> SACTrainer:
    """Build SACTrainer + TorchPolicy + TorchSACOptimizer as mlagents-learn does."""
    options = RunOptions.from_dict({"behaviors": {name: setting["config"]}})
    trainer_settings = options.behaviors[name]
    trainer = SACTrainer(name, 1, trainer_settings, True, False, 0, artifact_dir)
    spec = BehaviorSpec(
        observation_specs=[
            ObservationSpec(
                shape=(setting["obs_size"],),
                dimension_property=(DimensionProperty.NONE,),
                observation_type=ObservationType.DEFAULT,
                name="VectorSensor",
            )
        ],
        action_spec=ActionSpec.create_continuous(setting["act_size"]),
    )
    behavior_id = BehaviorIdentifiers.from_name_behavior_id(f"{name}?team=0")
    policy = trainer.create_policy(behavior_id, spec)
    trainer.add_policy(behavior_id, policy)
    return trainer


def random_trajectory(rng: np.random.Generator, name: str, obs_size: int, act_size: int, length: int) -> Trajectory:
    """A trajectory shaped like AgentProcessor's output for a continuous agent."""
    obs = rng.standard_normal((length + 1, obs_size), dtype=np.float32)
    actions = rng.uniform(-1.0, 1.0, (length, act_size)).astype(np.float32)
    log_probs = rng.standard_normal((length, act_size), dtype=np.float32)
    rewards = rng.standard_normal(length, dtype=np.float32)
    return continuous_trajectory(
        obs, actions, log_probs, rewards, terminated=True, agent_id="agent-0", behavior_id=f"{name}?team=0"
    )


def fill_buffer(trainer: SACTrainer, name: str, setting: dict[str, Any]) -> float:
    """Feed random trajectories through _process_trajectory; return seconds."""
    rng = np.random.default_rng(0)
    horizon = setting["config"]["time_horizon"]
    start = time.perf_counter()
    while trainer.update_buffer.num_experiences < setting["transitions"]:
        left = setting["transitions"] - trainer.update_buffer.num_experiences
        trainer._process_trajectory(
            random_trajectory(
                rng,
                name,
                setting["obs_size"],
                setting["act_size"],
                min(horizon, left),
            )
        )
    return time.perf_counter() - start


def run_updates(trainer: SACTrainer, n_steps: int) -> None:
    """Call _update_sac_policy with exactly n_steps gradient steps due."""
    spu = trainer.steps_per_update
    init = trainer.hyperparameters.buffer_init_steps
    trainer._step = int(init + spu * (trainer.update_steps + n_steps))
    before = trainer.update_steps
    trainer._update_sac_policy()
    assert trainer.update_steps - before == n_steps


def install_probes(trainer: SACTrainer) -> dict[str, Probe]:
    """Wrap the three calls of the _update_sac_policy loop body with timers."""
    signal = trainer.optimizer.reward_signals["extrinsic"]
    probes = {
        "sample": Probe(trainer.update_buffer.sample_mini_batch),
        "reward": Probe(signal.evaluate),
        "update": Probe(trainer.optimizer.update),
    }
    trainer.update_buffer.sample_mini_batch = probes["sample"]
    signal.evaluate = probes["reward"]
    trainer.optimizer.update = probes["update"]
    return probes


def time_updates(trainer: SACTrainer, probes: dict[str, Probe], threads: int) -> dict[str, float]:
    """Warm up, then time gradient steps for at least MIN_SECONDS."""
    torch.set_num_threads(threads)
    run_updates(trainer, WARMUP_STEPS)
    for probe in probes.values():
        probe.reset()
    steps = 0
    call_seconds: list[float] = []
    start = time.perf_counter()
    while True:
        call_start = time.perf_counter()
        run_updates(trainer, STEPS_PER_CALL)
        call_seconds.append(time.perf_counter() - call_start)
        steps += STEPS_PER_CALL
        elapsed = time.perf_counter() - start
        if elapsed >= MIN_SECONDS:
            break
    assert all(p.calls == steps for p in probes.values())
    ms = {k: 1000.0 * p.seconds / steps for k, p in probes.items()}
    total_ms = 1000.0 * elapsed / steps
    return {
        "grad_steps_per_s": round(steps / elapsed, 2),
        # robust to stalls from other load on the machine: median over the calls
        "grad_steps_per_s_median_call": round(STEPS_PER_CALL / float(np.median(call_seconds)), 2),
        "sample_ms": round(ms["sample"], 3),
        "reward_eval_ms": round(ms["reward"], 3),
        "update_ms": round(ms["update"], 3),
        "other_ms": round(total_ms - sum(ms.values()), 3),
        "total_ms": round(total_ms, 3),
        "timed_steps": steps,
        "seconds": round(elapsed, 2),
    }


def main() -> None:
    """Run both settings at 1 and 2 torch threads and print one JSON object."""
    logging_util.set_log_level(logging_util.ERROR)
    torch.manual_seed(0)
    np.random.seed(0)
    results: dict[str, Any] = {}
    for name, setting in SETTINGS.items():
        with tempfile.TemporaryDirectory() as artifact_dir:
            torch.set_num_threads(1)
            trainer = make_trainer(name, setting, artifact_dir)
            fill_s = fill_buffer(trainer, name, setting)
            entry: dict[str, Any] = {
                "buffer_transitions": trainer.update_buffer.num_experiences,
                "buffer_keys": len(trainer.update_buffer),
                "fill_seconds": round(fill_s, 1),
                "batch_size": trainer.hyperparameters.batch_size,
            }
            probes = install_probes(trainer)
            for threads in (1, 2):
                entry[f"threads_{threads}"] = time_updates(trainer, probes, threads)
            results[name] = entry
            del trainer
    print(
        json.dumps(
            {
                "mlagents_version": mlagents.trainers.__version__,
                "torch": torch.__version__,
                "settings": results,
            }
        )
    )


if __name__ == "__main__":
    main()
