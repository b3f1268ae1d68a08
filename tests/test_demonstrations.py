"""Demonstration files: Unity's layout read exactly, our writer's files read back exactly (and
as ML-Agents 0.28 reads them), spec mismatches refused, and ``--record-demo`` on a real run."""

from __future__ import annotations

import io
import json
from pathlib import Path

import attrs
import numpy as np
import pytest
import yaml
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import AgentInfoActionPairProto
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import ActionSpecProto, BrainParametersProto
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto
from mlagents_envs.communicator_objects.observation_pb2 import NONE, PNG, ObservationProto
from mlagents_envs.rpc_utils import process_pixels
from PIL import Image

from envs.builtin import make_env
from orchestration.run import build_run
from tests.support.demo_fixture import FIXTURE_DEMO, fixture_spec, write_fixture_demo
from tests.support.python_envs import make_basic
from trainers.exceptions import ConfigError
from trainers.files.demonstrations import (
    INITIAL_POS,
    DemonstrationWriter,
    delimited,
    load_demonstrations,
    read_demo_file,
)
from trainers.settings import load_run_options

LOADER_JSON = FIXTURE_DEMO.parent.parent / "demo_loader.json"


def sensor(shape: tuple[int, ...], name: str) -> ObservationSpec:
    return ObservationSpec(shape, (DimensionProperty.UNSPECIFIED,) * len(shape), ObservationType.DEFAULT, name)


# ---------------------------------------------------------------- Unity's layout


def png(image: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return out.getvalue()


def test_a_file_laid_out_as_unity_writes_it_loads_exactly(tmp_path: Path) -> None:
    """As DemonstrationWriter.cs: meta at 0, brain parameters at MetaDataBytes + 1, one pair per
    step, and (WriteMetadata) the meta's raw bytes once more at the end."""
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(4, 2, 3, 3), dtype=np.uint8)
    vectors = rng.normal(size=(4, 2)).astype(np.float32)
    rewards = [0.0, 0.5, -1.0, 2.0]
    dones = [False, False, True, False]
    continuous = [[0.25], [-0.5], [0.0], [1.0]]
    discrete = [[1], [0], [0], [2]]
    masked = [[False, False, True], [False, True, False], [False, False, False], [True, False, False]]
    meta = DemonstrationMetaProto(
        api_version=1, demonstration_name="Rec", number_steps=4, number_episodes=2, mean_reward=0.75
    )
    brain = BrainParametersProto(
        brain_name="Ball",
        is_training=False,
        action_spec=ActionSpecProto(num_continuous_actions=1, num_discrete_actions=1, discrete_branch_sizes=[3]),
    )
    out = io.BytesIO()
    out.write(delimited(meta))
    out.seek(INITIAL_POS)
    out.write(delimited(brain))
    for t in range(4):
        vector = ObservationProto(shape=[2], compression_type=NONE)
        vector.float_data.data.extend(vectors[t].tolist())
        visual = ObservationProto(shape=[2, 3, 3], compression_type=PNG, compressed_data=png(images[t]))
        info = AgentInfoProto(reward=rewards[t], done=dones[t], id=7, action_mask=masked[t])
        info.observations.extend([vector, visual])
        action = AgentActionProto(continuous_actions=continuous[t], discrete_actions=discrete[t])
        out.write(delimited(AgentInfoActionPairProto(agent_info=info, action_info=action)))
    out.write(meta.SerializeToString())
    path = tmp_path / "Ball.demo"
    path.write_bytes(out.getvalue())

    spec = BehaviorSpec([sensor((2,), "v"), sensor((2, 3, 3), "cam")], ActionSpec(1, (3,)))
    demo = load_demonstrations(path, spec)
    assert len(demo) == 3 and demo.behavior_name == "Ball" and demo.files == (str(path),)
    np.testing.assert_array_equal(demo.obs[0], vectors[:3])
    np.testing.assert_array_equal(demo.obs[1], images[:3].astype(np.float32) / np.float32(255.0))
    np.testing.assert_array_equal(demo.continuous_actions, np.array(continuous[:3], np.float32))
    np.testing.assert_array_equal(demo.discrete_actions, np.array(discrete[:3], np.int32))
    np.testing.assert_array_equal(demo.action_masks, ~np.array(masked[:3]))
    np.testing.assert_array_equal(demo.rewards, np.array(rewards[1:], np.float32))  # of the next step
    np.testing.assert_array_equal(demo.done, np.array(dones[1:]))
    assert (demo.number_steps, demo.number_episodes, demo.mean_reward) == (4, 2, 0.75)


# ---------------------------------------------------------------- our writer


def spec_mixed() -> BehaviorSpec:
    return BehaviorSpec([sensor((3,), "v"), sensor((4, 4, 3), "cam")], ActionSpec(2, (3, 2)))


def test_our_writer_round_trips_through_our_reader(tmp_path: Path) -> None:
    """Two agents interleaved, episodes ending (one at max step), uint8 images stored as [0, 1]
    floats; the file holds each agent's episode in one piece, in the order episodes end."""
    rng = np.random.default_rng(1)
    # (agent, done, max_step_reached) per delivered step.
    schedule = [("a", False, False), ("b", False, False), ("a", False, False), ("b", True, True)]
    schedule += [("a", True, False), ("b", False, False), ("a", False, False), ("b", False, False)]
    steps = []
    path = tmp_path / "Mixed.demo"
    with DemonstrationWriter(path, behavior_name="Mixed", behavior_spec=spec_mixed()) as writer:
        for agent, done, max_step in schedule:
            step = {
                "agent": agent,
                "obs": (rng.normal(size=3).astype(np.float32), rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)),
                "reward": float(rng.normal()),
                "done": done,
                "max_step": max_step,
                "cont": rng.normal(size=2).astype(np.float32),
                "disc": np.array([rng.integers(3), rng.integers(2)], np.int32),
                "mask": rng.random(5) > 0.3,
            }
            steps.append(step)
            writer.add_step(
                agent,
                step["obs"],
                reward=step["reward"],
                done=done,
                max_step_reached=max_step,
                continuous_action=step["cont"],
                discrete_action=step["disc"],
                action_mask=step["mask"],
            )
    # File order: b's episode (ended first), a's, then the episodes open at close, in the order
    # they opened (b, then a).
    order = [steps[i] for i in (1, 3, 0, 2, 4, 5, 7, 6)]
    demo = load_demonstrations(path, spec_mixed())
    assert len(demo) == 7 and demo.number_steps == 8
    assert demo.number_episodes == 3 and demo.mean_reward == pytest.approx(sum(s["reward"] for s in steps) / 3)
    rows, nxt = order[:-1], order[1:]
    np.testing.assert_array_equal(demo.obs[0], np.stack([s["obs"][0] for s in rows]))
    np.testing.assert_array_equal(
        demo.obs[1], np.stack([s["obs"][1] for s in rows]).astype(np.float32) / np.float32(255.0)
    )
    np.testing.assert_array_equal(demo.continuous_actions, np.stack([s["cont"] for s in rows]))
    np.testing.assert_array_equal(demo.discrete_actions, np.stack([s["disc"] for s in rows]))
    np.testing.assert_array_equal(demo.action_masks, np.stack([s["mask"] for s in rows]))
    np.testing.assert_array_equal(demo.rewards, np.array([s["reward"] for s in nxt], np.float32))
    np.testing.assert_array_equal(demo.done, np.array([s["done"] for s in nxt]))
    np.testing.assert_array_equal(demo.interrupted, np.array([s["max_step"] for s in nxt]))
    # A folder of files reads as one sequence, in name order.
    second = tmp_path / "Z.demo"
    second.write_bytes(path.read_bytes())
    both = load_demonstrations(tmp_path, spec_mixed())
    assert len(both) == 15 and both.number_steps == 16 and both.number_episodes == 6
    np.testing.assert_array_equal(both.rewards[8:], demo.rewards)


def test_a_long_demonstration_name_is_shortened_to_fit_the_header(tmp_path: Path) -> None:
    path = tmp_path / "d.demo"
    with DemonstrationWriter(path, behavior_name="B", behavior_spec=spec_mixed(), demonstration_name="x" * 80) as w:
        w.add_step(0, (np.zeros(3, np.float32), np.zeros((4, 4, 3), np.uint8)), reward=1.0, done=False)
    meta = DemonstrationMetaProto.FromString(path.read_bytes()[1 : path.read_bytes()[0] + 1])
    assert 0 < len(meta.demonstration_name) < 80 and meta.number_steps == 1


# ---------------------------------------------------------------- the behavior's spec


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            BehaviorSpec([sensor((4,), "v"), sensor((4, 4, 3), "c")], ActionSpec(2, (3, 2))),
            "observation 0 has shape (3,), the behavior's is (4,)",
        ),
        (
            BehaviorSpec([sensor((3,), "v")], ActionSpec(2, (3, 2))),
            "2 observations [(3,), (4, 4, 3)], the behavior has 1 [(3,)]",
        ),
        (
            BehaviorSpec([sensor((3,), "v"), sensor((4, 4, 3), "c")], ActionSpec(1, (3, 2))),
            "2 continuous actions, the behavior has 1",
        ),
        (
            BehaviorSpec([sensor((3,), "v"), sensor((4, 4, 3), "c")], ActionSpec(2, (3,))),
            "discrete branches (3, 2), the behavior has (3,)",
        ),
    ],
    ids=["obs-shape", "obs-count", "continuous", "discrete"],
)
def test_a_file_that_does_not_fit_the_behavior_is_one_config_error(
    tmp_path: Path, spec: BehaviorSpec, expected: str
) -> None:
    path = tmp_path / "Mixed.demo"
    with DemonstrationWriter(path, behavior_name="Mixed", behavior_spec=spec_mixed()) as w:
        for _ in range(2):
            w.add_step(0, (np.zeros(3, np.float32), np.zeros((4, 4, 3), np.uint8)), reward=0.0, done=False)
    with pytest.raises(ConfigError) as caught:
        load_demonstrations(path, spec, where="behaviors.Mixed.behavioral_cloning.demo_path")
    message = str(caught.value)
    assert message.startswith("behaviors.Mixed.behavioral_cloning.demo_path: ")
    assert f"{path}: {expected}" in message


def test_every_mismatch_of_every_file_is_in_the_one_error(tmp_path: Path) -> None:
    for name in ("a", "b"):
        with DemonstrationWriter(tmp_path / f"{name}.demo", behavior_name="M", behavior_spec=spec_mixed()) as w:
            w.add_step(0, (np.zeros(3, np.float32), np.zeros((4, 4, 3), np.uint8)), reward=0.0, done=False)
    spec = BehaviorSpec([sensor((5,), "v"), sensor((4, 4, 3), "c")], ActionSpec(0, (3, 2)))
    with pytest.raises(ConfigError) as caught:
        load_demonstrations(tmp_path, spec)
    lines = str(caught.value).splitlines()[1:]
    assert len(lines) == 4 and {line.split(": ")[0] for line in lines} == {
        str(tmp_path / "a.demo"),
        str(tmp_path / "b.demo"),
    }


def test_paths_that_name_no_demonstrations_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_demonstrations(tmp_path / "missing.demo", spec_mixed())
    with pytest.raises(ConfigError, match="no .demo files"):
        load_demonstrations(tmp_path, spec_mixed())
    (tmp_path / "x.txt").write_text("")
    with pytest.raises(ConfigError, match="not a .demo file"):
        load_demonstrations(tmp_path / "x.txt", spec_mixed())
    (tmp_path / "bad.demo").write_bytes(b"\x05abc")
    with pytest.raises(ConfigError, match="not a readable .demo file"):
        load_demonstrations(tmp_path / "bad.demo", spec_mixed())
    newer = delimited(DemonstrationMetaProto(api_version=7, number_steps=1)).ljust(INITIAL_POS, b"\0")
    (tmp_path / "newer.demo").write_bytes(newer + delimited(BrainParametersProto(brain_name="M")))
    with pytest.raises(
        ConfigError, match=r"newer.demo: unsupported demonstration api_version 7 \(readable: \[0, 1\]\)"
    ):
        load_demonstrations(tmp_path / "newer.demo", spec_mixed())


# ---------------------------------------------------------------- ML-Agents 0.28's loader


def test_the_fixture_file_is_still_what_our_writer_writes(tmp_path: Path) -> None:
    """Message for message; PNG images compared decoded (another zlib may compress them to
    other bytes)."""
    write_fixture_demo(tmp_path / "Fixture.demo")
    ours, fixture = read_demo_file(tmp_path / "Fixture.demo"), read_demo_file(FIXTURE_DEMO)
    assert (ours.meta, ours.brain) == (fixture.meta, fixture.brain)
    assert len(ours.pairs) == len(fixture.pairs) == 9
    for mine, theirs in zip(ours.pairs, fixture.pairs):
        for a, b in zip(mine.agent_info.observations, theirs.agent_info.observations):
            if a.compression_type == PNG:
                channels = a.shape[2]
                np.testing.assert_array_equal(
                    process_pixels(a.compressed_data, channels, list(a.compressed_channel_mapping)),
                    process_pixels(b.compressed_data, channels, list(b.compressed_channel_mapping)),
                )
                a.ClearField("compressed_data")
                b.ClearField("compressed_data")
        assert mine == theirs


def test_our_reader_reads_the_rows_mlagents_0_28_read_from_our_file() -> None:
    """demo_loader.json: what ``mlagents.trainers.demo_loader.demo_to_buffer`` made of the file
    (tests/fixtures/mlagents_0_28/make_demo_fixture.py)."""
    seen = json.loads(LOADER_JSON.read_text())
    demo = load_demonstrations(FIXTURE_DEMO, fixture_spec())
    spec = fixture_spec()
    assert seen["observation_shapes"] == [list(o.shape) for o in spec.observation_specs]
    assert (seen["continuous_size"], seen["discrete_branches"]) == (1, [3, 2])
    assert seen["number_steps"] == seen["pairs_read"] == demo.number_steps == 9
    assert seen["rows"] == len(demo) == 8
    for ours, theirs in zip(demo.obs, seen["obs"]):
        np.testing.assert_array_equal(ours, np.array(theirs, np.float32))
    np.testing.assert_array_equal(demo.continuous_actions, np.array(seen["continuous_actions"], np.float32))
    np.testing.assert_array_equal(demo.discrete_actions, np.array(seen["discrete_actions"], np.int32))
    np.testing.assert_array_equal(demo.rewards, np.array(seen["rewards"], np.float32))
    np.testing.assert_array_equal(demo.done, np.array(seen["dones"], bool))


# ---------------------------------------------------------------- --record-demo


def test_record_demo_writes_each_behaviors_experience(tmp_path: Path) -> None:
    options = load_run_options("config/ppo/Basic.yaml")
    behaviors = {"Basic": attrs.evolve(options.behavior_settings("Basic"), max_steps=300, summary_freq=150)}
    options = attrs.evolve(
        options,
        behaviors=behaviors,
        env_settings=attrs.evolve(options.env_settings, env_path=None, seed=5),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="rec"),
    )
    run = build_run(options, env_factory=make_basic, console=False, record_demo=tmp_path / "demos")
    run.run()
    assert [p.name for p in (tmp_path / "demos").iterdir()] == ["Basic.demo"]
    spec = make_env("Basic", seed=0).behavior_specs["Basic?team=0"]
    demo = load_demonstrations(tmp_path / "demos" / "Basic.demo", spec)
    # Every step the agents took is in the file, but the 4 agents' last decisions (their
    # actions never came back: the run ended).
    assert demo.number_steps == run.env_manager.agent_steps - 4 == len(demo) + 1
    header = read_demo_file(tmp_path / "demos" / "Basic.demo").meta
    assert header.number_steps == demo.number_steps
    assert demo.number_episodes == int(demo.done.sum()) + 1
    # Basic's rewards: 0 at an episode's first step, then the step penalty plus a goal's reward.
    assert np.isclose(demo.rewards[:, None], [0.0, -0.01, 0.09, 0.99]).any(axis=1).all()
    assert demo.discrete_actions.shape == (len(demo), 1) and set(np.unique(demo.discrete_actions)) <= {0, 1, 2}


def test_the_cli_records_a_training_run_and_an_inference_session(tmp_path: Path) -> None:
    """The real command: --record-demo with training, then with --inference stopped by Ctrl-C
    (the file is complete however the run ends); a file where the folder should be is refused."""
    from tests.test_cli import interrupt_after, one_line_error, run_cli

    data = yaml.safe_load((Path(__file__).resolve().parents[1] / "config/ppo/Basic.yaml").read_text())
    data["behaviors"]["Basic"].update(max_steps=400, summary_freq=200)
    config = tmp_path / "basic.yaml"
    config.write_text(yaml.safe_dump(data))
    args = [str(config), "--run-id=rec", "--env=builtin:Basic", "--num-areas=2", "--seed=3"]
    trained = run_cli(tmp_path, *args, "--record-demo=train")
    assert trained.returncode == 0, trained.stderr
    spec = make_env("Basic", seed=0).behavior_specs["Basic?team=0"]
    demo = load_demonstrations(tmp_path / "train" / "Basic.demo", spec)
    assert demo.number_steps >= 400 and len(demo) == demo.number_steps - 1

    interrupt_after(tmp_path, [*args, "--inference", "--record-demo=inference"], "Basic. Step: 800.")
    acted = load_demonstrations(tmp_path / "inference" / "Basic.demo", spec)
    assert acted.number_steps >= 400 and acted.number_episodes == int(acted.done.sum()) + 1

    (tmp_path / "taken").write_text("")
    line = one_line_error(run_cli(tmp_path, *args, "--force", "--record-demo=taken/demos"))
    assert "--record-demo: taken is a file, not a folder" in line
