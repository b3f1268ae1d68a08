"""A recurrent behavior through the public wiring (config/ppo/Hallway.yaml on built-in Hallway):
checkpoints hold the LSTM's weights, ``--resume`` continues from them, ``--inference`` acts with
the recurrent policy and writes nothing, and the exported model carries the memory."""

from __future__ import annotations

import re

import attrs
import onnx
import pytest
import torch

from orchestration import train
from tests.test_sac_run import StopAfterSummaries
from trainers.files.checkpoints import load_state
from trainers.settings import load_run_options

pytestmark = pytest.mark.slow  # runs training end to end


def options_for(tmp_path, max_steps: int, **checkpoint_changes):
    options = load_run_options("config/ppo/Hallway.yaml")
    settings = attrs.evolve(
        options.behavior_settings("Hallway"), max_steps=max_steps, summary_freq=1_000, checkpoint_interval=2_000
    )
    return attrs.evolve(
        options,
        behaviors={"Hallway": settings},
        env_settings=attrs.evolve(options.env_settings, seed=3),
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=str(tmp_path), run_id="hallway", **checkpoint_changes
        ),
    )


def test_train_resume_and_inference_with_memory(tmp_path, caplog):
    outcome = train(options_for(tmp_path, 2_000), console=False)
    folder = tmp_path / "hallway" / "Hallway"
    checkpoint = load_state(folder / "checkpoint.pt")
    lstm = {k: v for k, v in checkpoint["actor"].items() if k.startswith("memory.lstm")}
    assert set(lstm) == {f"memory.lstm.{w}_l0" for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")}
    assert any(k.startswith("memory.lstm") for k in checkpoint["critic"])
    model = onnx.load(str(tmp_path / "hallway" / "Hallway.onnx"))
    assert "recurrent_in" in [i.name for i in model.graph.input]
    assert [o.name for o in model.graph.output][-1] == "recurrent_out"

    resumed = train(options_for(tmp_path, 3_000, resume=True), console=False)
    assert resumed.steps["Hallway"] >= 3_000 > outcome.steps["Hallway"]
    after = load_state(folder / "checkpoint.pt")
    assert not torch.equal(after["actor"]["memory.lstm.weight_hh_l0"], lstm["memory.lstm.weight_hh_l0"])

    files_before = sorted(p.name for p in folder.iterdir() if not p.name.startswith("events.out"))
    watcher = StopAfterSummaries(2)
    with caplog.at_level("INFO"):
        train(options_for(tmp_path, 3_000, inference=True), console=False, writers=[watcher], stop=watcher.stop)
    assert watcher.steps[0] > after["step"]  # acting on from the checkpoint's step
    said = re.search(r"Hallway: mean return (-?[0-9.]+) over ([0-9]+) episodes \(--inference\)", caplog.text)
    assert said is not None and int(said[2]) > 0 and -1.0 <= float(said[1]) <= 1.0, caplog.text[-2000:]
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("events.out")) == files_before
