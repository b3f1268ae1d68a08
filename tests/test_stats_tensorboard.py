"""TensorBoardWriter: event files read back with tensorboard's own EventAccumulator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from processors import AgentManager
from stats import StatsAggregationMethod, StatsHub, StatsProperty, StatsReporter, TensorBoardWriter, tags
from tests.steps import NO_TERMINALS, action_info, behavior_spec, fake_policy, vector_steps, vector_terminals


def load(directory: Path) -> EventAccumulator:
    acc = EventAccumulator(str(directory), size_guidance={"scalars": 0, "histograms": 0, "tensors": 0})
    acc.Reload()
    return acc


def scalars(acc: EventAccumulator, tag: str) -> list[tuple[int, float]]:
    return [(e.step, e.value) for e in acc.Scalars(tag)]


ML_AGENTS_TAGS = [
    "Environment/Cumulative Reward",
    "Environment/Episode Length",
    "Policy/Entropy",
    "Policy/Learning Rate",
    "Policy/Extrinsic Reward",
    "Policy/Extrinsic Value Estimate",
    "Losses/Policy Loss",
    "Losses/Value Loss",
    "Environment/Lesson Number/wall_height",
]


def test_scalars_per_category_folder_with_steps_and_values(tmp_path: Path) -> None:
    hub = StatsHub([TensorBoardWriter(tmp_path)])
    ball, walker = StatsReporter("3DBall", hub), StatsReporter("Walker", hub)
    for step, base in ((12000, 1.0), (24000, 5.0)):
        for i, tag in enumerate(ML_AGENTS_TAGS):
            ball.add_stats(tag, [base + i, base + i + 2.0])  # mean = base + i + 1
        ball.add_stat("Is Training", 1.0)
        ball.add_stat("Step", float(step))
        ball.add_stat("Custom/Coins", 2.0, StatsAggregationMethod.SUM)
        ball.add_stat("Custom/Coins", 3.0, StatsAggregationMethod.SUM)
        ball.write_stats(step)
    walker.add_stat("Environment/Cumulative Reward", -4.0)
    walker.write_stats(7)
    hub.close()

    assert sorted(p.name for p in tmp_path.iterdir()) == ["3DBall", "Walker"]
    assert all(p.name.startswith("events.out.tfevents.") for p in (tmp_path / "3DBall").iterdir())
    ball_events = load(tmp_path / "3DBall")
    assert sorted(ball_events.Tags()["scalars"]) == sorted([*ML_AGENTS_TAGS, "Custom/Coins"])
    for i, tag in enumerate(ML_AGENTS_TAGS):
        assert scalars(ball_events, tag) == [(12000, 2.0 + i), (24000, 6.0 + i)]
    assert scalars(ball_events, "Custom/Coins") == [(12000, 5.0), (24000, 5.0)]  # SUM draws the sum
    assert scalars(load(tmp_path / "Walker"), "Environment/Cumulative Reward") == [(7, -4.0)]


def test_is_training_and_step_are_not_drawn(tmp_path: Path) -> None:
    writer = TensorBoardWriter(tmp_path)
    r = StatsReporter("B", StatsHub([writer]))
    r.set_stat(tags.IS_TRAINING, 1.0)
    r.set_stat(tags.STEP, 10.0)
    r.add_stat(tags.POLICY_ENTROPY, 1.5)
    r.write_stats(10)
    assert load(tmp_path / "B").Tags()["scalars"] == [tags.POLICY_ENTROPY]


def test_histogram_gets_hist_tag_and_mean_scalar(tmp_path: Path) -> None:
    r = StatsReporter("B", StatsHub([TensorBoardWriter(tmp_path)]))
    samples = np.arange(1.0, 101.0)
    r.add_stats("Env/Height", samples, StatsAggregationMethod.HISTOGRAM)
    r.write_stats(3)
    acc = load(tmp_path / "B")
    assert scalars(acc, "Env/Height") == [(3, 50.5)]
    [hist] = acc.Histograms("Env/Height_hist")
    h = hist.histogram_value
    assert (hist.step, h.min, h.max, h.num, h.sum) == (3, 1.0, 100.0, 100.0, 5050.0)
    assert h.sum_squares == float(np.dot(samples, samples))
    assert sum(h.bucket) == 100.0 and h.bucket_limit[-1] == 100.0


def test_episode_rewards_get_a_histogram_beside_the_mean(tmp_path: Path) -> None:
    """As in ML-Agents' files: scalar ``Environment/Cumulative Reward`` (the window's mean) and
    histogram ``Environment/Cumulative Reward_hist`` of the window's episode rewards."""
    r = StatsReporter("Ball", StatsHub([TensorBoardWriter(tmp_path)]))
    manager = AgentManager(fake_policy(behavior_spec()), "Ball?team=0", r, 100, threaded=False)
    manager.add_experiences(vector_steps([1, 2, 3], [0, 0, 0], [0, 0, 0]), NO_TERMINALS, 0, None)
    act = action_info([1, 2, 3], [[0.0]] * 3)
    manager.add_experiences(vector_steps([1, 2, 3], [1, 1, 1], [1.0, 2.0, 6.0]), NO_TERMINALS, 0, act)
    manager.add_experiences(vector_steps([], [], []), vector_terminals([1, 2, 3], [2, 2, 2], [0.0, 1.0, 3.0]), 0, act)
    r.write_stats(500)
    acc = load(tmp_path / "Ball")
    assert scalars(acc, tags.CUMULATIVE_REWARD) == [(500, pytest.approx(13.0 / 3))]
    assert acc.Tags()["histograms"] == [tags.CUMULATIVE_REWARD_HISTOGRAM] == ["Environment/Cumulative Reward_hist"]
    [hist] = acc.Histograms(tags.CUMULATIVE_REWARD_HISTOGRAM)
    h = hist.histogram_value
    assert (hist.step, h.num, h.min, h.max, h.sum) == (500, 3.0, 1.0, 9.0, 13.0)
    assert sum(h.bucket) == 3.0


def test_hyperparameters_text_summary_tagged_as_ml_agents(tmp_path: Path) -> None:
    """ML-Agents' add_text("Hyperparameters") lands as ``Hyperparameters/text_summary``: a text-plugin
    one-element string tensor at step 0."""
    r = StatsReporter("B", StatsHub([TensorBoardWriter(tmp_path)]))
    r.add_property(StatsProperty.HYPERPARAMETERS, {"trainer_type": "ppo", "hyperparameters": {"batch_size": 64}})
    r.add_property(StatsProperty.IS_TRAINING, True)  # not drawn
    acc = load(tmp_path / "B")
    assert acc.Tags()["tensors"] == ["Hyperparameters/text_summary"]
    [event] = acc.Tensors("Hyperparameters/text_summary")
    assert acc.SummaryMetadata("Hyperparameters/text_summary").plugin_data.plugin_name == "text"
    assert [d.size for d in event.tensor_proto.tensor_shape.dim] == [1]
    text = event.tensor_proto.string_val[0].decode()
    assert event.step == 0
    assert "| trainer_type | ppo |" in text and "| hyperparameters.batch_size | 64 |" in text


def test_clear_past_data_removes_old_event_files_only_when_asked(tmp_path: Path) -> None:
    for clear in (False, False, True):
        writer = TensorBoardWriter(tmp_path, clear_past_data=clear)
        r = StatsReporter("B", StatsHub([writer]))
        r.add_stat("x", 1.0)
        r.write_stats(1)
        writer.close()
        n_files = len(list((tmp_path / "B").glob("events.out.tfevents.*")))
    assert n_files == 1


def test_files_are_readable_before_close(tmp_path: Path) -> None:
    writer = TensorBoardWriter(tmp_path)
    r = StatsReporter("B", StatsHub([writer]))
    r.add_stat("x", 2.0)
    r.write_stats(5)
    assert scalars(load(tmp_path / "B"), "x") == [(5, 2.0)]
    writer.close()


@pytest.mark.parametrize("name", ["Policy/Extrinsic Reward", "Policy/Extrinsic Value Estimate"])
def test_tag_helpers_spell_ml_agents_names(name: str) -> None:
    assert name in (tags.reward_signal("Extrinsic"), tags.value_estimate("Extrinsic"))
    assert tags.lesson_number("wall_height") == "Environment/Lesson Number/wall_height"
