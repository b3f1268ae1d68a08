"""SAC through the public wiring: a run trains and saves its replay buffer with the checkpoint,
``--resume`` continues with that buffer, ``--inference`` acts with the trained policy and writes
nothing, and ``--initialize-from`` starts a new run from its weights (or gives ``--inference``
under a new run id its policy)."""

from __future__ import annotations

import threading

import attrs
import pytest

from orchestration import train
from stats import StatsWriter
from tests.support.python_envs import make_basic
from trainers.files.checkpoints import load_state
from trainers.settings import load_run_options

pytestmark = pytest.mark.slow  # runs training end to end


def options_for(tmp_path, max_steps: int, **checkpoint_changes):
    options = load_run_options("config/sac/Basic.yaml")
    settings = options.behavior_settings("Basic")
    settings = attrs.evolve(
        settings,
        hyperparameters=attrs.evolve(settings.hyperparameters, save_replay_buffer=True),
        max_steps=max_steps,
        summary_freq=500,
        checkpoint_interval=1_000,
    )
    return attrs.evolve(
        options,
        behaviors={"Basic": settings},
        env_settings=attrs.evolve(options.env_settings, env_path=None, seed=3),
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=str(tmp_path), run_id="sac", **checkpoint_changes
        ),
    )


class StopAfterSummaries(StatsWriter):
    def __init__(self, count: int) -> None:
        self.steps: list[int] = []
        self.count = count
        self.stop = threading.Event()

    def write_stats(self, category, values, step):
        self.steps.append(int(step))
        if len(self.steps) >= self.count:
            self.stop.set()


def test_train_resume_inference_and_initialize_from(tmp_path, caplog):
    outcome = train(options_for(tmp_path, 2_000), env_factory=make_basic, console=False)
    assert outcome.steps["Basic"] >= 2_000
    folder = tmp_path / "sac" / "Basic"
    assert (tmp_path / "sac" / "Basic.onnx").exists()
    saved = load_state(folder / "last_replay_buffer.pt")
    checkpoint = load_state(folder / "checkpoint.pt")
    assert saved["step"] == checkpoint["step"] == outcome.steps["Basic"]
    assert saved["replay_buffer"]["size"] == outcome.steps["Basic"]  # every transition kept (50000 fit)
    first_steps = checkpoint["sac_counters"]["update_steps"]

    resumed = train(options_for(tmp_path, 3_000, resume=True), env_factory=make_basic, console=False)
    assert resumed.steps["Basic"] >= 3_000
    after = load_state(folder / "checkpoint.pt")
    assert load_state(folder / "last_replay_buffer.pt")["replay_buffer"]["size"] == after["step"]
    assert after["sac_counters"]["update_steps"] > first_steps

    def checkpoint_files() -> list[str]:  # TensorBoard events grow in --inference too
        return sorted(p.name for p in folder.iterdir() if not p.name.startswith("events.out"))

    files_before = checkpoint_files()
    watcher = StopAfterSummaries(2)
    train(
        options_for(tmp_path, 3_000, inference=True),
        env_factory=make_basic,
        console=False,
        writers=[watcher],
        stop=watcher.stop,
    )
    assert watcher.steps[0] > after["step"]  # acting on from the checkpoint's step
    assert checkpoint_files() == files_before  # no checkpoint, no replay buffer written

    options = options_for(tmp_path, 500, initialize_from="sac")
    options = attrs.evolve(options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, run_id="sac-init"))
    train(options, env_factory=make_basic, console=False)
    assert (tmp_path / "sac-init" / "Basic.onnx").exists()

    # --inference under a new run id acts with --initialize-from's weights (it used to act untrained)
    options = options_for(tmp_path, 3_000, inference=True, initialize_from="sac")
    options = attrs.evolve(options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, run_id="watch"))
    watcher = StopAfterSummaries(1)
    with caplog.at_level("INFO"):
        train(options, env_factory=make_basic, console=False, writers=[watcher], stop=watcher.stop)
    assert f"Initialized Basic from {tmp_path / 'sac' / 'Basic'}" in caplog.text, caplog.text
    assert "untrained" not in caplog.text
