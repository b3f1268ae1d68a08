"""run_logs/timers.json of a real short run reads like mlagents-learn 0.28's: the timer tree under
ML-Agents' scope names and nesting (a threaded trainer's under trainer_threads/thread_root), a
``Step`` gauge per behavior beside the other summary gauges, and ML-Agents' metadata keys."""

from __future__ import annotations

import json

import attrs
import pytest

from orchestration import build_run
from stats.timers import METADATA_ORDER
from trainers.settings import load_run_options

MAX_STEPS = 1200


def children(node: dict, *path: str) -> dict:
    for name in path:
        node = node["children"][name]
    return node.get("children", {})


@pytest.fixture(scope="module")
def timers_json(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """Built-in TwoBehaviors in this process: LineWalker threaded, Reacher in the main loop."""
    results = tmp_path_factory.mktemp("results")
    options = load_run_options("config/ppo/TwoBehaviors.yaml")
    small = {"max_steps": MAX_STEPS, "summary_freq": 400, "time_horizon": 16}
    walker = attrs.evolve(options.behaviors["LineWalker"], threaded=True, **small)
    reacher = options.behaviors["Reacher"]
    reacher = attrs.evolve(
        reacher, hyperparameters=attrs.evolve(reacher.hyperparameters, buffer_size=256, batch_size=32), **small
    )
    options = attrs.evolve(
        options,
        behaviors={"LineWalker": walker, "Reacher": reacher},
        env_settings=attrs.evolve(options.env_settings, seed=5),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(results), run_id="two"),
    )
    outcome = build_run(options, console=False).run()
    assert all(steps >= MAX_STEPS for steps in outcome.steps.values())
    return json.loads((results / "two/run_logs/timers.json").read_text())


@pytest.mark.slow
def test_timer_tree_has_ml_agents_names_and_nesting(timers_json: dict) -> None:
    assert timers_json["name"] == "root"
    assert list(children(timers_json)) == ["TrainerController.start_learning"]
    learning = children(timers_json, "TrainerController.start_learning")
    assert set(learning) == {
        "TrainerController._reset_env",
        "TrainerController.advance",
        "trainer_threads",
        "TrainerController._save_models",
    }
    advance = ("TrainerController.start_learning", "TrainerController.advance")
    assert set(children(timers_json, *advance)) == {"env_step", "trainer_advance"}
    env_step = children(timers_json, *advance, "env_step")
    assert "SubprocessEnvManager._take_step" in env_step
    assert set(env_step) - {"SubprocessEnvManager._take_step"} == {"env_wait", "process_steps", "step_workers"}  # ours
    assert list(children(timers_json, *advance, "env_step", "SubprocessEnvManager._take_step")) == [
        "TorchPolicy.evaluate"
    ]
    # Reacher (unthreaded) advances in the loop, LineWalker in its thread.
    assert {"process_trajectory", "_update_policy"} <= set(children(timers_json, *advance, "trainer_advance"))
    thread_root = children(timers_json, "TrainerController.start_learning", "trainer_threads")["thread_root"]
    assert thread_root["is_parallel"] is True and thread_root["count"] == 1
    assert {"process_trajectory", "_update_policy"} <= set(thread_root["children"]["trainer_advance"]["children"])
    saves = children(timers_json, "TrainerController.start_learning", "TrainerController._save_models")
    assert saves["RLTrainer._checkpoint"]["count"] == 2  # one final checkpoint per behavior
    step = timers_json["children"]["TrainerController.start_learning"]["children"]["TrainerController.advance"]
    assert step["count"] > 100 and step["total"] <= timers_json["total"]


@pytest.mark.slow
def test_step_gauge_per_behavior_with_the_summary_gauges(timers_json: dict) -> None:
    gauges = timers_json["gauges"]
    for behavior in ("LineWalker", "Reacher"):
        step = gauges[f"{behavior}.Step.mean"]
        assert set(step) == {"value", "min", "max", "count"}
        assert step["count"] == MAX_STEPS // 400  # one per summary
        assert 0 < step["min"] < 400 <= step["max"] < MAX_STEPS  # the step before the summary's trajectory
        assert gauges[f"{behavior}.Step.sum"]["value"] == step["value"]
        for stat in ("Environment.CumulativeReward", "Losses.PolicyLoss", "IsTraining"):
            assert f"{behavior}.{stat}.mean" in gauges and f"{behavior}.{stat}.sum" in gauges


@pytest.mark.slow
def test_metadata_as_mlagents_learn_writes_it(timers_json: dict) -> None:
    meta = timers_json["metadata"]
    assert list(meta)[: len(METADATA_ORDER)] == list(METADATA_ORDER)  # spelled out in test_stats_timers
    assert list(meta)[-1] == "end_time_seconds"
    assert (meta["timer_format_version"], meta["communication_protocol_version"]) == ("0.1.0", "1.5.0")
    assert int(meta["start_time_seconds"]) <= int(meta["end_time_seconds"])
