"""The ``auto`` device: with no device set and a GPU at hand, each behavior trains where its own
training measured faster, says so with both timings, and keeps that device on ``--resume``;
an explicit device is obeyed; without a GPU nothing is measured. The choice is tested with
injected timings (CI has no GPU); the measurement itself runs on the CPU here for each built-in
algorithm, and on a GPU where one exists (tests/test_cuda.py has the rest of what a GPU does)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

import orchestration.controller as controller_module
from orchestration.checks import pick_device
from orchestration.run import build_run
from stats import StatsWriter
from trainers.loop.device_choice import (
    DeviceChoice,
    choose_device,
    probe,
    synthetic_trajectories,
    training_timing,
)
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.sac.algorithm import SAC
from trainers.settings import AUTO_DEVICE, TrainerSettings, structure_run_options

TE, NO = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE


def test_the_faster_device_is_chosen_and_both_timings_are_told():
    choice = choose_device({"cpu": 3e-4, "cuda": 1e-4}.__getitem__, ["cpu", "cuda"])
    assert choice == DeviceChoice("cuda", {"cpu": 3e-4, "cuda": 1e-4})
    assert choice.describe() == "on cuda (training per sample: cpu 300 µs, cuda 100 µs)"
    assert choose_device({"cpu": 1e-4, "cuda": 1e-4}.__getitem__, ["cpu", "cuda"]).device == "cpu"  # a tie: the CPU
    # a GPU must win by GPU_MARGIN (what the probe does not see costs more there)
    assert choose_device({"cpu": 1.2e-4, "cuda": 1e-4}.__getitem__, ["cpu", "cuda"]).device == "cpu"
    assert choose_device({"cpu": 1.3e-4, "cuda": 1e-4}.__getitem__, ["cpu", "cuda"]).device == "cuda"


def test_a_single_candidate_is_taken_without_measuring():
    def never(device: str) -> float:
        raise AssertionError("measured")

    assert choose_device(never, ["cpu"]) == DeviceChoice("cpu", {})


def test_an_explicit_device_is_obeyed_and_without_a_gpu_there_is_nothing_to_choose(monkeypatch):
    assert pick_device("cpu") == "cpu"
    monkeypatch.setattr("trainers.loop.device_choice.candidate_devices", lambda: ["cpu"])
    assert pick_device(None) == "cpu" and pick_device(AUTO_DEVICE) == "cpu"
    monkeypatch.setattr("trainers.loop.device_choice.candidate_devices", lambda: ["cpu", "cuda"])
    assert pick_device(None) == AUTO_DEVICE


def test_a_probe_is_a_few_minibatches_of_the_behaviors_own_settings():
    ppo = structure_run_options(
        {"behaviors": {"B": {"hyperparameters": {"batch_size": 64, "buffer_size": 12000, "num_epoch": 3}}}}
    ).behavior_settings("B")
    cut = probe(ppo)
    hp = cut.settings.hyperparameters
    assert (hp.buffer_size, hp.num_epoch, hp.batch_size, cut.samples, cut.update_scale) == (256, 3, 64, 257, 1.0)
    assert cut.settings.network_settings == ppo.network_settings
    sac = structure_run_options(
        {
            "behaviors": {
                "B": {
                    "trainer_type": "sac",
                    "hyperparameters": {"batch_size": 256, "buffer_init_steps": 5000, "steps_per_update": 2},
                }
            }
        }
    ).behavior_settings("B")
    cut = probe(sac)
    hp = cut.settings.hyperparameters
    # a round of one minibatch's samples owes at most 64 gradient steps: thinned 2x, timed 2x
    assert (hp.buffer_init_steps, hp.steps_per_update, cut.samples, cut.update_scale) == (0, 4.0, 256, 2.0)


SPECS = {
    "vector": BehaviorSpec([ObservationSpec((8,), (NO,), ObservationType.DEFAULT, "v")], ActionSpec(2, ())),
    "visual+hybrid": BehaviorSpec(
        [
            ObservationSpec((3,), (NO,), ObservationType.DEFAULT, "v"),
            ObservationSpec((20, 20, 3), (TE, TE, NO), ObservationType.DEFAULT, "camera"),
        ],
        ActionSpec(1, (3, 2)),
    ),
}


@pytest.mark.parametrize("algorithm", [PPO, SAC, POCA], ids=lambda a: a.__name__)
@pytest.mark.parametrize("spec", sorted(SPECS))
def test_the_measurement_trains_each_algorithm_on_its_real_shapes(algorithm, spec):
    trainer_type = {PPO: "ppo", SAC: "sac", POCA: "poca"}[algorithm]
    settings = structure_run_options(
        {
            "behaviors": {
                "B": {
                    "trainer_type": trainer_type,
                    "hyperparameters": {"batch_size": 16, "buffer_size": 1000},
                    "network_settings": {
                        "hidden_units": 16,
                        "num_layers": 1,
                        "memory": {"memory_size": 8, "sequence_length": 8},
                    },
                    "time_horizon": 24,
                }
            }
        }
    ).behavior_settings("B")
    updates: list[int] = []

    def counting(**kwargs):
        made = algorithm(**kwargs)
        update = made.update
        made.update = lambda step: updates.append(step) or update(step)
        return made

    timing = training_timing(counting, behavior_name="B", spec=SPECS[spec], settings=settings, seed=0)
    seconds = timing("cpu")
    assert 0 < seconds < 0.1
    assert len(updates) >= 2  # the warm-up round and the timed one both train


def test_synthetic_trajectories_have_the_specs_shapes():
    trajectories = synthetic_trajectories(SPECS["visual+hybrid"], 50, 24, 4, np.random.default_rng(0))
    assert [t.length for t in trajectories] == [24, 24, 2]
    first = trajectories[0]
    assert first.obs[1].shape == (24, 20, 20, 3) and first.discrete_actions.shape == (24, 2)
    assert first.memories.shape == (24, 4) and first.action_masks.shape == (24, 5) and first.done[-1]


class _Silent(StatsWriter):
    def write_stats(self, category, values, step):
        pass


def auto_run(tmp_path: Path, *, resume: bool, timings: dict[str, float], calls: list[str]):
    options = structure_run_options(
        {
            "behaviors": {
                "Basic": {
                    "hyperparameters": {"batch_size": 16, "buffer_size": 64},
                    "max_steps": 64 * (2 if resume else 1),
                }
            },
            "env_settings": {"env_path": "builtin:Basic", "seed": 1},
            "checkpoint_settings": {"results_dir": str(tmp_path), "run_id": "auto", "resume": resume},
        }
    )
    run = build_run(options, writers=[_Silent()], console=False)

    def timing(name: str, spec: BehaviorSpec, settings: TrainerSettings):
        calls.append(name)
        return timings.__getitem__

    run.controller.device = AUTO_DEVICE
    run.controller.device_timing = timing
    return run


def test_auto_records_the_choice_and_resume_keeps_it(tmp_path, monkeypatch, caplog):
    # Both "devices" are the CPU under two names, so the run can train where the choice says.
    monkeypatch.setattr(controller_module, "candidate_devices", lambda: ["cpu", "cpu:0"])
    calls: list[str] = []
    with caplog.at_level("INFO"):
        auto_run(tmp_path, resume=False, timings={"cpu": 2e-4, "cpu:0": 1e-4}, calls=calls).run()
    assert calls == ["Basic"]
    assert "Basic trains on cpu:0 (training per sample: cpu 200 µs, cpu:0 100 µs)" in caplog.text
    status = json.loads((tmp_path / "auto/run_logs/training_status.json").read_text())
    assert status["Basic"]["device"] == "cpu:0"
    calls.clear()
    caplog.clear()
    with caplog.at_level("INFO"):
        auto_run(tmp_path, resume=True, timings={"cpu": 1e-4, "cpu:0": 9e-4}, calls=calls).run()
    assert calls == []  # not measured again: the run it continues chose
    assert "Basic trains on cpu:0, as the run it continues chose" in caplog.text


@pytest.mark.parametrize(
    ("asked", "said"),
    [(None, "Basic trains on cpu: no CUDA device"), ("cpu", "Basic trains on cpu, as --torch-device")],
)
def test_without_a_choice_to_make_the_run_still_says_where_each_behavior_trains(
    tmp_path, caplog, monkeypatch, asked, said
):
    monkeypatch.setattr("trainers.loop.device_choice.candidate_devices", lambda: ["cpu"])  # no GPU, also where one is
    options = structure_run_options(
        {
            "behaviors": {"Basic": {"hyperparameters": {"batch_size": 16, "buffer_size": 64}, "max_steps": 64}},
            "env_settings": {"env_path": "builtin:Basic", "seed": 1},
            "torch_settings": {"device": asked},
            "checkpoint_settings": {"results_dir": str(tmp_path), "run_id": "said"},
        }
    )
    with caplog.at_level("INFO"):
        build_run(options, writers=[_Silent()], console=False).run()
    assert caplog.text.count(said) == 1, caplog.text


@pytest.mark.slow
def test_with_a_gpu_and_no_device_set_the_cli_chooses_and_says_so(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device on this machine: the choice is tested above with injected timings")
    config = {"behaviors": {"3DBall": {"hyperparameters": {"batch_size": 64, "buffer_size": 640}, "max_steps": 1280}}}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    result = subprocess.run(
        [sys.executable, "-m", "orchestration.cli", "c.yaml", "--env", "builtin:3DBall", "--run-id=gpu"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "3DBall trains on " in result.stdout + result.stderr and "cuda " in result.stdout + result.stderr
    status = json.loads((tmp_path / "results/gpu/run_logs/training_status.json").read_text())
    assert status["3DBall"]["device"] in ("cpu", "cuda")
