"""Unity package 2.x and 3.x/4.x builds, from the command line: the same scene built with either
generation (the same pixels, laid out ``[H, W, C]`` or ``[C, H, W]`` on the wire) trains to the
same reward curve on the same seed and exports the same model, whose visual inputs are
``[batch, C, H, W]`` as both generations' inference engines feed them; a 4.x build with raw and
multi-PNG grid sensors trains to the end; a run whose builds report different generations is
refused, naming both."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.test_e2e_standin import free_port_pair

pytestmark = pytest.mark.slow  # runs the CLI and builds in subprocesses

FIXTURES = Path(__file__).parent / "fixtures" / "unity3"


def config(behavior: str, max_steps: int) -> dict:
    return {
        "behaviors": {
            behavior: {
                "trainer_type": "ppo",
                "hyperparameters": {"batch_size": 32, "buffer_size": 128, "num_epoch": 2},
                "network_settings": {"hidden_units": 32, "num_layers": 1, "vis_encode_type": "fully_connected"},
                "max_steps": max_steps,
                "time_horizon": 16,
                "summary_freq": max_steps // 4,
                "threaded": False,
            }
        }
    }


def train(tmp_path: Path, run_id: str, behavior: str, scene: str, *package_versions: str, max_steps: int = 600):
    """The CLI on ``len(package_versions)`` stand-in builds of ``scene``, worker i a build of
    ``package_versions[i]``."""
    from tests.support.standin import write_launcher

    (tmp_path / f"{run_id}.yaml").write_text(yaml.safe_dump(config(behavior, max_steps)))
    launcher = write_launcher(str(tmp_path), scene=scene, name=f"{run_id}-inner.x86_64")
    # worker i's build: the port tells it apart (base port + i)
    base = free_port_pair()
    wrapper = tmp_path / f"{run_id}.x86_64"
    cases = "".join(
        f'  *" {base + i} "*) exec "{launcher}" --package-version {v} "$@";;\n' for i, v in enumerate(package_versions)
    )
    wrapper.write_text(f'#!/bin/sh\ncase " $* " in\n{cases}esac\nexit 9\n')
    wrapper.chmod(0o755)
    return subprocess.run(
        [sys.executable, "-m", "orchestration.cli", f"{run_id}.yaml", "--env", str(wrapper), f"--run-id={run_id}"]
        + ["--seed", "3", "--base-port", str(base), "--num-envs", str(len(package_versions)), "--timeout-wait", "30"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )


def rewards(run: Path) -> list[tuple[int, float]]:
    """(step, mean cumulative reward) of every summary the run wrote."""
    records = [json.loads(line) for line in (run / "run_logs" / "stats.jsonl").read_text().splitlines()]
    return [(r["step"], r["mean"]) for r in records if r["key"] == "Environment/Cumulative Reward"]


def test_a_scene_built_with_either_generation_trains_alike_and_exports_one_model(tmp_path):
    import onnxruntime as ort

    results = {}
    for run_id, version in (("old", "2.3.0-exp.3"), ("new", "3.0.0")):
        result = train(tmp_path, run_id, "Corridor", "visual", version)
        assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
        assert f"Corridor?team=0 (Unity package {version}) sends images channels" in result.stdout + result.stderr
        results[run_id] = tmp_path / "results" / run_id
    curve = rewards(results["old"])
    assert len(curve) >= 3 and curve == rewards(results["new"])

    # The 3.x build's messages as 1.1 decodes them ([C, H, W]) are what Sentis feeds the model.
    decoded = np.load(FIXTURES / "visual_3x.mlagents_envs_1_1.npz")
    obs = [decoded[f"decision_0_obs{i}"] for i in range(3)]
    allowed = ~np.concatenate([decoded[f"decision_0_mask{b}"] for b in range(2)], axis=1)  # mlagents: True = masked
    actions = []
    for run in results.values():
        session = ort.InferenceSession(str(run / "Corridor.onnx"), providers=["CPUExecutionProvider"])
        shapes = {i.name: i.shape[1:] for i in session.get_inputs()}
        assert shapes["obs_1"] == [3, 16, 16] and shapes["obs_2"] == [1, 8, 8]
        feeds = {f"obs_{i}": o for i, o in enumerate(obs)} | {"action_masks": allowed.astype(np.float32)}
        actions.append(session.run(["deterministic_discrete_actions"], feeds)[0])
    np.testing.assert_array_equal(actions[0], actions[1])


def test_a_4x_build_with_grid_sensors_trains_to_the_end(tmp_path):
    result = train(tmp_path, "grid", "Grid", "grid", "4.0.0", max_steps=400)
    assert result.returncode == 0, result.stderr[-3000:] + result.stdout[-3000:]
    status = json.loads((tmp_path / "results/grid/run_logs/training_status.json").read_text())
    assert status["Grid"]["final_checkpoint"]["steps"] >= 400
    assert (tmp_path / "results/grid/Grid.onnx").exists()


def test_builds_of_two_generations_in_one_run_are_refused(tmp_path):
    result = train(tmp_path, "mixed", "Corridor", "visual", "2.3.0-exp.3", "4.0.0")
    assert result.returncode != 0
    error = result.stderr.strip().splitlines()[-1]
    assert "2.3.0-exp.3" in error and "4.0.0" in error and "one package version" in error, error
