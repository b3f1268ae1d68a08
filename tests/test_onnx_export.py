"""ONNX export: the graph Unity's inference engine reads (names, order, shapes, constants,
opset 9, batch axis) and, run with onnxruntime, the torch policy's deterministic actions."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)
from onnx import TensorProto

from trainers.files.onnx_export import export_policy_onnx
from trainers.networks.policy import TorchPolicy
from trainers.settings import EncoderType, NetworkSettings


def vector_spec(n: int) -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vector{n}")


def visual_spec(h: int, w: int, c: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.DEFAULT, "camera")


def entities_spec(n: int, size: int) -> ObservationSpec:
    props = (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE)
    return ObservationSpec((n, size), props, ObservationType.DEFAULT, "buffer")


def goal_spec(n: int) -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")


def visual_goal_spec(h: int, w: int, c: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.GOAL_SIGNAL, "goal_camera")


CASES = {
    "vector_continuous": (BehaviorSpec([vector_spec(8)], ActionSpec(2, ())), EncoderType.SIMPLE),
    "discrete_masks": (BehaviorSpec([vector_spec(5), vector_spec(3)], ActionSpec(0, (3, 2, 4))), EncoderType.SIMPLE),
    "hybrid": (BehaviorSpec([vector_spec(6)], ActionSpec(2, (4, 3))), EncoderType.SIMPLE),
    "visual_simple": (BehaviorSpec([visual_spec(20, 24, 3), vector_spec(4)], ActionSpec(1, (3,))), EncoderType.SIMPLE),
    "visual_resnet": (BehaviorSpec([vector_spec(2), visual_spec(15, 15, 1)], ActionSpec(0, (5,))), EncoderType.RESNET),
    "visual_match3": (BehaviorSpec([visual_spec(6, 5, 4)], ActionSpec(2, ())), EncoderType.MATCH3),
    # SAC's actor: a state-dependent sigma and tanh-squashed continuous actions
    "sac_hybrid": (BehaviorSpec([vector_spec(6)], ActionSpec(2, (4, 3))), EncoderType.SIMPLE),
    "sac_visual": (BehaviorSpec([visual_spec(20, 20, 3), vector_spec(4)], ActionSpec(3, ())), EncoderType.SIMPLE),
    # attention over entity sets (some entities absent), hypernetwork goal conditioning, both
    "var_len": (
        BehaviorSpec([vector_spec(3), entities_spec(5, 4), entities_spec(3, 2)], ActionSpec(2, (3,))),
        EncoderType.SIMPLE,
    ),
    "var_len_only": (BehaviorSpec([entities_spec(6, 3)], ActionSpec(0, (4,))), EncoderType.SIMPLE),
    # Stable-Baselines3's hidden activations (network_settings.activation), in a plain and a goal-conditioned body
    "tanh_hybrid": (BehaviorSpec([vector_spec(6)], ActionSpec(2, (4, 3))), EncoderType.SIMPLE),
    "relu_hyper_goal": (BehaviorSpec([vector_spec(4), goal_spec(3)], ActionSpec(2, (3,))), EncoderType.SIMPLE),
    "hyper_goal": (BehaviorSpec([vector_spec(4), goal_spec(3)], ActionSpec(2, (3,))), EncoderType.SIMPLE),
    "sac_var_len_hyper_goals": (
        BehaviorSpec(
            [goal_spec(2), entities_spec(4, 3), vector_spec(3), visual_goal_spec(20, 20, 1)], ActionSpec(2, (2,))
        ),
        EncoderType.SIMPLE,
    ),
}


def make_inputs(spec: BehaviorSpec, n: int, seed: int) -> tuple[list[np.ndarray], np.ndarray | None]:
    rng = np.random.default_rng(seed)
    obs = []
    for s in spec.observation_specs:
        if len(s.shape) == 1:
            obs.append((rng.normal(size=(n, *s.shape)) * 3 + 1).astype(np.float32))
        elif len(s.shape) == 2:  # entities: a random number present in each row, the rest zeros
            entities = rng.normal(size=(n, *s.shape)).astype(np.float32)
            entities[np.arange(s.shape[0])[None, :] >= rng.integers(0, s.shape[0] + 1, (n, 1))] = 0.0
            obs.append(entities)
        else:
            obs.append(rng.random((n, *s.shape), dtype=np.float32))
    branches = spec.action_spec.discrete_branches
    if not branches:
        return obs, None
    masks = rng.random((n, sum(branches))) > 0.4
    start = 0
    for size in branches:
        masks[np.arange(n), start + rng.integers(0, size, n)] = True
        start += size
    return obs, masks


def unity_layout(o: np.ndarray) -> np.ndarray:
    """Images NCHW; entity buffers [B, n, s] as Unity's runtime fills ML-Agents' graphs' input
    (the graph transposes the last two axes and reshapes back: the values, entity by entity,
    laid out over a [B, s, n] tensor, then transposed to the declared [B, n, s])."""
    if o.ndim == 4:
        return o.transpose(0, 3, 1, 2).copy()
    if o.ndim == 3:
        b, n, s = o.shape
        return o.reshape(b, s, n).transpose(0, 2, 1).copy()
    return o


def feeds(spec: BehaviorSpec, obs: list[np.ndarray], masks: np.ndarray | None) -> dict[str, np.ndarray]:
    out = {f"obs_{i}": unity_layout(o) for i, o in enumerate(obs)}
    if spec.action_spec.discrete_branches:
        out["action_masks"] = masks.astype(np.float32)
    return out


@pytest.fixture(scope="module", params=list(CASES))
def exported(request, tmp_path_factory):
    spec, kind = CASES[request.param]
    activation = next((name for name in ("tanh", "relu") if request.param.startswith(f"{name}_")), "swish")
    settings = NetworkSettings(
        hidden_units=16, num_layers=2, normalize=True, vis_encode_type=kind, activation=activation
    )
    squashed = request.param.startswith("sac_")
    policy = TorchPolicy(spec, settings, seed=3, conditional_sigma=squashed, tanh_squash=squashed)
    obs, _ = make_inputs(spec, 50, seed=1)
    policy.update_normalization(obs)  # non-trivial statistics, which must be inside the graph
    path = tmp_path_factory.mktemp("onnx") / f"{request.param}.onnx"
    export_policy_onnx(policy, path)
    return spec, policy, path


def dims(value_info) -> list:
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


def test_graph_names_shapes_and_constants_as_unity_reads_them(exported):
    spec, policy, path = exported
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert [op.version for op in model.opset_import if op.domain in ("", "ai.onnx")] == [9]
    c, branches = spec.action_spec.continuous_size, tuple(spec.action_spec.discrete_branches)

    expected_inputs = []
    for i, s in enumerate(spec.observation_specs):
        shape = list(s.shape) if len(s.shape) < 3 else [s.shape[2], s.shape[0], s.shape[1]]  # NCHW
        expected_inputs.append((f"obs_{i}", ["batch", *shape]))
    if branches:
        expected_inputs.append(("action_masks", ["batch", sum(branches)]))
    assert [(i.name, dims(i)) for i in model.graph.input] == expected_inputs
    assert all(i.type.tensor_type.elem_type == TensorProto.FLOAT for i in model.graph.input)

    expected_outputs = [("version_number", [1]), ("memory_size", [1])]
    if c:
        expected_outputs += [
            ("continuous_actions", ["batch", c]),
            ("continuous_action_output_shape", [1]),
            ("deterministic_continuous_actions", ["batch", c]),
        ]
    if branches:
        expected_outputs += [
            ("discrete_actions", ["batch", len(branches)]),
            ("discrete_action_output_shape", [1, len(branches)]),
            ("deterministic_discrete_actions", ["batch", len(branches)]),
        ]
    assert [(o.name, dims(o)) for o in model.graph.output] == expected_outputs
    for o in model.graph.output:
        expected_type = TensorProto.INT64 if "discrete_actions" in o.name else TensorProto.FLOAT
        assert o.type.tensor_type.elem_type == expected_type, o.name

    # Unity has no float64: the float64 normaliser statistics are folded into float32 constants
    assert {t.data_type for t in model.graph.initializer} <= {TensorProto.FLOAT, TensorProto.INT64}
    ops = {n.op_type for n in model.graph.node}
    assert ("RandomNormalLike" in ops) == bool(c) and ("Multinomial" in ops) == bool(branches)

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs, masks = make_inputs(spec, 3, seed=9)
    result = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds(spec, obs, masks))))
    np.testing.assert_array_equal(result["version_number"], [3.0])
    np.testing.assert_array_equal(result["memory_size"], [0.0])
    if c:
        np.testing.assert_array_equal(result["continuous_action_output_shape"], [float(c)])
    if branches:
        np.testing.assert_array_equal(result["discrete_action_output_shape"], [list(map(float, branches))])
    assert not any("recurrent" in n for n in result)


@pytest.mark.parametrize("batch", [1, 37])
def test_deterministic_outputs_match_torch_policy(exported, batch):
    spec, policy, path = exported
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs, masks = make_inputs(spec, batch, seed=100 + batch)
    result = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds(spec, obs, masks))))
    torch_info = policy.act(obs, masks, np.arange(batch), deterministic=True)
    if spec.action_spec.continuous_size:
        np.testing.assert_allclose(
            result["deterministic_continuous_actions"], torch_info.env_actions.continuous, rtol=1e-5, atol=1e-6
        )
    if spec.action_spec.discrete_branches:
        np.testing.assert_array_equal(result["deterministic_discrete_actions"], torch_info.discrete_actions)


def test_stochastic_outputs_are_in_range_and_respect_masks(exported):
    spec, _, path = exported
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs, masks = make_inputs(spec, 400, seed=5)
    result = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds(spec, obs, masks))))
    if spec.action_spec.continuous_size:
        sample = result["continuous_actions"]
        assert np.abs(sample).max() <= 1.0
        assert not np.allclose(sample, result["deterministic_continuous_actions"])  # it is a sample
    if spec.action_spec.discrete_branches:
        chosen = result["discrete_actions"]
        start = 0
        for i, size in enumerate(spec.action_spec.discrete_branches):
            assert ((chosen[:, i] >= 0) & (chosen[:, i] < size)).all()
            assert masks[np.arange(len(chosen)), start + chosen[:, i]].all()
            start += size


def test_entity_buffers_are_read_in_mlagents_layout_not_the_declared_one(tmp_path):
    # ML-Agents' graphs transpose an entity input's last two axes and reshape it back (the
    # layout Unity's runtime fills); ours must too, or Unity would scramble the entities.
    spec, _ = CASES["var_len_only"]
    policy = TorchPolicy(spec, NetworkSettings(hidden_units=16, num_layers=1), seed=5)
    path = tmp_path / "entities.onnx"
    export_policy_onnx(policy, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    obs, masks = make_inputs(spec, 64, seed=11)
    expected = policy.act(obs, masks, np.arange(64), deterministic=True).discrete_actions
    column = {o.name: i for i, o in enumerate(session.get_outputs())}["deterministic_discrete_actions"]
    unity = session.run(None, feeds(spec, obs, masks))[column]
    declared = session.run(None, {"obs_0": obs[0], "action_masks": masks.astype(np.float32)})[column]
    np.testing.assert_array_equal(unity, expected)
    assert (declared != expected).any()
