"""Two generations of Unity builds, one image layout inside (issue 26).

A package 2.x build sends images ``[H, W, C]``, a package 3.x/4.x build ``[C, H, W]``, over the
same protocol. The stand-in player sends both (``--package-version``); the fixture
``tests/fixtures/unity3/`` (made by ``tests/support/make_unity3_fixture.py``) holds its
messages for the ``visual`` and ``grid`` scenes with what mlagents-envs 0.28 (2.x messages)
and mlagents-envs 1.1 (3.x messages) decode from them. ``envs.unity.images.decode_steps`` must
give what 0.28 gives from 2.x messages, and what 1.1 gives, transposed to ``[H, W, C]``, from
3.x messages.
"""

from __future__ import annotations

import numpy as np
import pytest

import envs.unity  # noqa: F401  (protocol modules under this protobuf)
from tests.support import make_unity3_fixture as fixture
from tests.support import standin

# isort: split
from mlagents_envs import rpc_utils
from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto

NONE, TE = 1, 2  # DimensionProperty values on the wire
CASES = [(scene, generation) for scene in fixture.SCENES for generation in fixture.GENERATIONS]


def _outputs(scene: str, generation: str) -> list:
    return [UnityOutputProto.FromString(m) for m in fixture.read_messages(fixture.messages_path(scene, generation))]


def _first_message(scene: str, package_version: str, **overrides: str):
    """The stand-in's first message (the reset's) for ``scene``, built in-process."""
    args = ["--scene", scene, "--package-version", package_version]
    for flag, value in overrides.items():
        args += [f"--{flag.replace('_', '-')}", value]
    options = standin.parse_args(args)
    pb = standin._Protocol()
    academy = standin.Academy(
        standin.make_groups(options, np.random.default_rng(3), {}),
        pb,
        channels_first=standin.channels_first(package_version),
    )
    academy.reset()
    message = pb.UnityMessageProto()
    academy.run_until_message(message.unity_output)
    return message.unity_output


# ---------------------------------------------------------------------------------------------
# The stand-in speaks both generations


def test_package_version_flag_and_environment(monkeypatch):
    monkeypatch.delenv("STANDIN_PACKAGE_VERSION", raising=False)
    assert standin.parse_args([]).package_version == standin.PACKAGE_VERSION == "2.3.0-exp.3"
    monkeypatch.setenv("STANDIN_PACKAGE_VERSION", "3.0.0")
    assert standin.parse_args([]).package_version == "3.0.0"
    assert standin.parse_args(["--package-version", "4.0.0"]).package_version == "4.0.0"
    assert [standin.channels_first(v) for v in ("2.3.0-exp.3", "3.0.0", "4.0.0", "1.0.8")] == [
        False,
        True,
        True,
        False,
    ]
    with pytest.raises(SystemExit):
        standin.parse_args(["--package-version", "latest"])


@pytest.mark.parametrize("scene", ["visual", "grid"])
def test_3x_sends_channels_first_and_2x_is_unchanged(scene):
    old = _first_message(scene, "2.3.0-exp.3")
    new = _first_message(scene, "4.0.0")
    old_infos = old.rl_output.agentInfos
    new_infos = new.rl_output.agentInfos
    assert list(old_infos) == list(new_infos)
    images = 0
    for name in old_infos:
        for old_info, new_info in zip(old_infos[name].value, new_infos[name].value, strict=True):
            for a, b in zip(old_info.observations, new_info.observations, strict=True):
                assert a.name == b.name
                if len(a.shape) != 3:
                    assert a == b
                    continue
                images += 1
                h, w, c = a.shape
                assert list(a.dimension_properties) == [TE, TE, NONE]
                assert list(b.shape) == [c, h, w]
                assert list(b.dimension_properties) == [NONE, TE, TE]
                assert a.compression_type == b.compression_type
                assert list(a.compressed_channel_mapping) == list(b.compressed_channel_mapping)
                if a.compression_type:  # PNG: the same bytes
                    assert a.compressed_data == b.compressed_data and a.compressed_data
                else:  # floats in C, H, W order: the same pixels
                    hwc = np.array(a.float_data.data, dtype=np.float32).reshape(h, w, c)
                    chw = np.array(b.float_data.data, dtype=np.float32).reshape(c, h, w)
                    np.testing.assert_array_equal(chw, hwc.transpose(2, 0, 1))
    assert images > 0
    # Everything else (ids, rewards, masks, brain parameters, side channel) is the same.
    for infos in (old_infos, new_infos):
        for name in infos:
            for info in infos[name].value:
                del info.observations[:]
    assert old == new


def test_visual_scene_2x_layout_is_the_one_tests_rely_on():
    """The 2.x visual scene as test_unity_environment expects it: an RGB camera PNG with
    mapping [0, 1, 2] and a raw one-channel camera, [H, W, C] with (TE, TE, NONE)."""
    info = _first_message("visual", "2.3.0-exp.3").rl_output.agentInfos["Corridor?team=0"].value[0]
    vector, camera, raw = info.observations
    assert (list(vector.shape), list(vector.dimension_properties)) == ([3], [NONE])
    assert (list(camera.shape), list(camera.dimension_properties)) == ([16, 16, 3], [TE, TE, NONE])
    assert list(camera.compressed_channel_mapping) == [0, 1, 2]
    assert camera.compressed_data.startswith(standin.PNG_SIGNATURE)
    assert camera.compressed_data.count(standin.PNG_SIGNATURE) == 1
    assert (list(raw.shape), len(raw.float_data.data)) == ([8, 8, 1], 64)


def test_grid_scene_sends_images_as_unity_sensors_do():
    """GridSensorBase: ceil(C/3) PNGs, no mapping; grayscale CameraSensor: one RGB PNG, no
    mapping; StackingSensor over it: one RGB PNG per frame, mapping [0, 0, 0, 1, 1, 1]."""
    info = _first_message("grid", "4.0.0").rl_output.agentInfos["Grid?team=0"].value[0]
    by_name = {o.name: o for o in info.observations}
    expected = {
        "GridSensor": ([5, 8, 8], 2, []),
        "GrayscaleCamera": ([1, 8, 8], 1, []),
        "StackedGrayscale": ([2, 8, 8], 2, [0, 0, 0, 1, 1, 1]),
    }
    for name, (shape, pngs, mapping) in expected.items():
        obs = by_name[name]
        assert list(obs.shape) == shape
        assert obs.compressed_data.count(standin.PNG_SIGNATURE) == pngs
        assert list(obs.compressed_channel_mapping) == mapping
    assert list(by_name["RawGridSensor"].shape) == [5, 8, 8]
    assert len(by_name["RawGridSensor"].float_data.data) == 5 * 8 * 8


# ---------------------------------------------------------------------------------------------
# The fixture is current and self-consistent


@pytest.mark.parametrize(("scene", "generation"), CASES)
def test_fixture_messages_are_what_the_standin_sends(scene, generation):
    stored = fixture.read_messages(fixture.messages_path(scene, generation))
    assert len(stored) == fixture.MESSAGES
    assert fixture.standin_messages(scene, fixture.GENERATIONS[generation]) == stored, (
        "the stand-in changed: regenerate with tests/support/make_unity3_fixture.py"
    )


@pytest.mark.parametrize("scene", fixture.SCENES)
def test_fixture_decoders_agree_on_the_pixels(scene):
    """0.28 on 2.x messages == 1.1 on 3.x messages, transposed: one scene, two layouts."""
    old = np.load(fixture.decoded_path(scene, "2x"))
    new = np.load(fixture.decoded_path(scene, "3x"))
    assert str(old["mlagents_envs_version"]) == "0.28.0" and str(new["mlagents_envs_version"]) == "1.1.0"
    assert sorted(old.files) == sorted(new.files)
    terminals = 0
    for key in old.files:
        if key.endswith("version"):
            continue
        a, b = old[key], new[key]
        np.testing.assert_array_equal(a, b.transpose(0, 2, 3, 1) if b.ndim == 4 else b, err_msg=key)
        terminals += len(a) if key.startswith("terminal_") and key.endswith("_agent_id") else 0
    assert terminals > 0


# ---------------------------------------------------------------------------------------------
# agents-learn decodes both as the matching mlagents-envs does


def _compare(decoded, expected, key: str, channels_first: bool) -> None:
    want = expected[key]
    if channels_first and want.ndim == 4:
        want = want.transpose(0, 2, 3, 1)
    got = np.asarray(decoded)
    assert got.shape == want.shape, key
    np.testing.assert_allclose(got.astype(np.float32), want, rtol=0, atol=1e-6, err_msg=key)


@pytest.mark.parametrize(("scene", "generation"), CASES)
def test_decode_steps_matches_the_generations_mlagents_envs(scene, generation):
    from envs.unity.images import decode_steps

    channels_first = generation == "3x"
    expected = np.load(fixture.decoded_path(scene, generation))
    outputs = _outputs(scene, generation)
    brain = outputs[0].rl_initialization_output.brain_parameters[0]
    build_spec = rpc_utils.behavior_spec_from_proto(brain, outputs[0].rl_output.agentInfos[brain.brain_name].value[0])
    ranks = [len(o.shape) for o in build_spec.observation_specs]
    assert 3 in ranks
    for m, output in enumerate(outputs):
        decision, terminal = decode_steps(list(output.rl_output.agentInfos[brain.brain_name].value), build_spec)
        for kind, steps in (("decision", decision), ("terminal", terminal)):
            assert len(steps.obs) == len(ranks)
            for k, obs in enumerate(steps.obs):
                _compare(obs, expected, f"{kind}_{m}_obs{k}", channels_first)
            np.testing.assert_array_equal(steps.agent_id, expected[f"{kind}_{m}_agent_id"])
            np.testing.assert_array_equal(steps.reward, expected[f"{kind}_{m}_reward"])
        np.testing.assert_array_equal(terminal.interrupted, expected[f"terminal_{m}_interrupted"])
        for b, mask in enumerate(decision.action_mask or []):
            np.testing.assert_array_equal(mask, expected[f"decision_{m}_mask{b}"])


@pytest.mark.parametrize("scene", fixture.SCENES)
def test_decode_steps_leaves_the_messages_as_they_came(scene):
    """Decoding must not rewrite the build's protos: the same infos decode twice alike, and a
    spec read from them afterwards is still the build's ([C, H, W], (NONE, TE, TE))."""
    from envs.unity.images import decode_steps

    output = _outputs(scene, "3x")[0]
    brain = output.rl_initialization_output.brain_parameters[0]
    infos = list(output.rl_output.agentInfos[brain.brain_name].value)
    before = [info.SerializeToString(deterministic=True) for info in infos]
    build_spec = rpc_utils.behavior_spec_from_proto(brain, infos[0])
    first, _ = decode_steps(infos, build_spec)
    assert [info.SerializeToString(deterministic=True) for info in infos] == before
    again, _ = decode_steps(infos, build_spec)
    for a, b in zip(first.obs, again.obs, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_2x_and_a_3x_build_of_one_scene_look_the_same(tmp_path):
    """Over gRPC: the 3.x stand-in reports its package version in the handshake, and
    ``envs.unity.UnityEnvironment`` hands over the same [H, W, C] specs and observations as
    from the 2.x build of the same scene and seed."""
    from envs.unity import UnityEnvironment

    seen = {}
    for version in ("2.3.0-exp.3", "4.0.0"):
        folder = tmp_path / version
        folder.mkdir()
        launcher = standin.write_launcher(str(folder), scene="grid", extra_args=["--package-version", version])
        env = UnityEnvironment(file_name=launcher, base_port=0, timeout_wait=20, seed=5)
        try:
            env.reset()
            assert env.package_version == version
            (name,) = env.behavior_specs
            spec = env.behavior_specs[name]
            steps = []
            for _ in range(3):
                decision, terminal = env.get_steps(name)
                steps.append((decision.agent_id, decision.obs, terminal.agent_id, terminal.obs))
                env.set_actions(name, spec.action_spec.empty_action(len(decision)))
                env.step()
            seen[version] = ([tuple(o.shape) for o in spec.observation_specs], steps)
        finally:
            env.close()
    (shapes, old), (new_shapes, new) = seen.values()
    assert shapes == new_shapes == [(3,), (8, 8, 5), (8, 8, 5), (8, 8, 1), (8, 8, 2)]
    for a, b in zip(old, new, strict=True):
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_array_equal(a[2], b[2])
        for x, y in zip(a[1] + a[3], b[1] + b[3], strict=True):
            assert x.shape == y.shape
            np.testing.assert_array_equal(x, y)
