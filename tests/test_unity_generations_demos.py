"""Demonstration files of both Unity package generations: a file recorded by package 3.x or
later (cameras declared ``[C, H, W]``, dimension properties NONE, TE, TE, raw pixels in that
order) reads into the same ``[H, W, C]`` arrays as the 2.x recording of the same pixels, and
``--record-demo`` from such a build writes what that build's own recorder would."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto
from mlagents_envs.communicator_objects.agent_info_action_pair_pb2 import AgentInfoActionPairProto
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.brain_parameters_pb2 import ActionSpecProto, BrainParametersProto
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto
from mlagents_envs.communicator_objects.observation_pb2 import NONE, PNG, ObservationProto

import envs.unity  # noqa: F401  (registers the protocol modules for this protobuf)
from trainers.files.demonstrations import (
    INITIAL_POS,
    DemonstrationWriter,
    delimited,
    load_demonstrations,
    read_demo_file,
)

TE, NO = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE
H, W = 4, 5
SPEC = BehaviorSpec(
    [
        ObservationSpec((2,), (NO,), ObservationType.DEFAULT, "vector"),
        ObservationSpec((H, W, 3), (TE, TE, NO), ObservationType.DEFAULT, "camera"),
        ObservationSpec((H, W, 2), (TE, TE, NO), ObservationType.DEFAULT, "raw"),
    ],
    ActionSpec(0, (3,)),
)


def png(image: np.ndarray) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.fromarray(image).save(out, format="PNG")
    return out.getvalue()


def recording(
    generation: int, cameras: np.ndarray, raws: np.ndarray, vectors: np.ndarray
) -> tuple[bytes, list[list[int]]]:
    """A ``.demo`` as a package of ``generation`` records it (cameras as PNG, raw pixels as
    floats), and the shapes it declares."""
    out = io.BytesIO()
    out.write(delimited(DemonstrationMetaProto(api_version=1, number_steps=len(vectors), number_episodes=1)))
    out.seek(INITIAL_POS)
    brain = BrainParametersProto(
        brain_name="Cam", action_spec=ActionSpecProto(num_discrete_actions=1, discrete_branch_sizes=[3])
    )
    out.write(delimited(brain))
    for t in range(len(vectors)):
        vector = ObservationProto(shape=[2], compression_type=NONE, dimension_properties=[1])
        vector.float_data.data.extend(vectors[t].tolist())
        if generation >= 3:
            camera = ObservationProto(shape=[3, H, W], dimension_properties=[1, 2, 2])
            raw = ObservationProto(shape=[2, H, W], dimension_properties=[1, 2, 2])
            raw.float_data.data.extend(raws[t].transpose(2, 0, 1).ravel().tolist())
        else:
            camera = ObservationProto(shape=[H, W, 3], dimension_properties=[2, 2, 1])
            raw = ObservationProto(shape=[H, W, 2], dimension_properties=[2, 2, 1])
            raw.float_data.data.extend(raws[t].ravel().tolist())
        camera.compression_type = PNG
        camera.compressed_data = png(cameras[t])
        camera.compressed_channel_mapping.extend([0, 1, 2])
        raw.compression_type = NONE
        info = AgentInfoProto(reward=float(t), id=3, done=t == len(vectors) - 1)
        info.observations.extend([vector, camera, raw])
        pair = AgentInfoActionPairProto(agent_info=info, action_info=AgentActionProto(discrete_actions=[t % 3]))
        out.write(delimited(pair))
    return out.getvalue(), [list(camera.shape), list(raw.shape)]


def test_a_package_3_recording_reads_as_the_package_2_recording_of_the_same_pixels(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    cameras = rng.integers(0, 256, (4, H, W, 3), dtype=np.uint8)
    raws = rng.random((4, H, W, 2), dtype=np.float32)
    vectors = rng.normal(size=(4, 2)).astype(np.float32)
    loaded = {}
    for generation in (2, 3):
        data, shapes = recording(generation, cameras, raws, vectors)
        assert shapes == ([[3, H, W], [2, H, W]] if generation == 3 else [[H, W, 3], [H, W, 2]])
        path = tmp_path / f"gen{generation}" / "Cam.demo"
        path.parent.mkdir()
        path.write_bytes(data)
        loaded[generation] = load_demonstrations(path, SPEC)
    old, new = loaded[2], loaded[3]
    np.testing.assert_array_equal(new.obs[1], cameras[:3].astype(np.float32) / np.float32(255.0))
    np.testing.assert_array_equal(new.obs[2], raws[:3])
    for a, b in zip(old.obs, new.obs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(old.discrete_actions, new.discrete_actions)


def test_our_writer_records_as_the_build_generation_does(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    steps = [
        (rng.normal(size=2).astype(np.float32), rng.integers(0, 256, (H, W, 3), np.uint8), rng.random((H, W, 2)))
        for _ in range(3)
    ]
    loaded = []
    for channels_first in (False, True):
        path = tmp_path / f"{channels_first}" / "Cam.demo"
        with DemonstrationWriter(path, behavior_name="Cam", behavior_spec=SPEC, channels_first=channels_first) as w:
            for t, obs in enumerate(steps):
                w.add_step("a", obs, reward=1.0, done=t == 2, discrete_action=np.array([t % 3]))
        first = read_demo_file(path).pairs[0].agent_info.observations
        if channels_first:
            assert [list(o.shape) for o in first[1:]] == [[3, H, W], [2, H, W]]
            assert [list(o.dimension_properties) for o in first[1:]] == [[1, 2, 2]] * 2
            raw = np.asarray(first[2].float_data.data, np.float32).reshape(2, H, W)
            np.testing.assert_array_equal(raw, steps[0][2].astype(np.float32).transpose(2, 0, 1))
        else:
            assert [list(o.shape) for o in first[1:]] == [[H, W, 3], [H, W, 2]]
        loaded.append(load_demonstrations(path, SPEC))
    for a, b in zip(*(d.obs for d in loaded)):
        np.testing.assert_array_equal(a, b)
