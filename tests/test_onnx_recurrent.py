"""A recurrent policy's ONNX model, run as Unity runs it: step by step in onnxruntime, each
agent's ``recurrent_out`` fed back as its next ``recurrent_in``, over whole episodes of a
built-in environment; it must act as the torch policy does with the processor's memories."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from mlagents_envs.base_env import ActionTuple

from envs.builtin import make_env
from tests.test_onnx_export import unity_layout
from trainers.files.onnx_export import export_policy_onnx
from trainers.networks.policy import TorchPolicy
from trainers.settings import ConditioningType, MemorySettings, NetworkSettings

MEMORY = 24
# Simple's observations: one vector (the default), or a goal vector beside an entity buffer
# (attention, hypernetwork goal conditioning) for the memory to sit on top of.
OBSERVATIONS = {
    "ppo": {},
    "sac": {},
    "ppo_entities_goal": {"num_var_len": 1, "var_len_obs_size": (4, 3), "goal_indices": (0,)},
}


@pytest.fixture(scope="module", params=list(OBSERVATIONS))
def recurrent(request, tmp_path_factory):
    options = OBSERVATIONS[request.param]
    env = make_env("Simple", seed=5, num_areas=4, continuous_size=1, discrete_branches=2, max_step=12, **options)
    ((name, spec),) = env.behavior_specs.items()
    settings = NetworkSettings(
        hidden_units=16,
        num_layers=1,
        normalize=True,
        memory=MemorySettings(memory_size=MEMORY, sequence_length=8),
        goal_conditioning_type=ConditioningType.HYPER,
    )
    squashed = request.param == "sac"
    policy = TorchPolicy(spec, settings, seed=11, conditional_sigma=squashed, tanh_squash=squashed)
    policy.update_normalization([np.random.default_rng(0).normal(size=(40, *s.shape)) for s in spec.observation_specs])
    path = tmp_path_factory.mktemp("onnx") / "recurrent.onnx"
    export_policy_onnx(policy, path)
    return env, name, policy, path


def test_graph_has_the_recurrent_input_and_output_unity_reads(recurrent):
    _, _, policy, path = recurrent
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim] for i in model.graph.input}
    assert inputs["recurrent_in"] == ["batch", 1, MEMORY]
    outputs = [o.name for o in model.graph.output]
    assert outputs[-1] == "recurrent_out" and outputs[:2] == ["version_number", "memory_size"]
    out = next(o for o in model.graph.output if o.name == "recurrent_out")
    assert [d.dim_param or d.dim_value for d in out.type.tensor_type.shape.dim] == ["batch", 1, MEMORY]
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    specs = policy.behavior_spec.observation_specs
    feeds = {f"obs_{i}": unity_layout(np.zeros((2, *spec.shape), np.float32)) for i, spec in enumerate(specs)}
    feeds |= {
        "action_masks": np.ones((2, 4), np.float32),
        "recurrent_in": np.zeros((2, 1, MEMORY), np.float32),
    }
    result = dict(zip(outputs, session.run(None, feeds)))
    np.testing.assert_array_equal(result["memory_size"], [float(MEMORY)])


def test_step_by_step_onnx_reproduces_the_torch_policy_over_whole_episodes(recurrent):
    env, name, policy, path = recurrent
    env.reset()
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    outputs = [o.name for o in session.get_outputs()]
    torch_memory: dict[int, np.ndarray] = {}  # per agent, as the processor keeps them
    onnx_memory: dict[int, np.ndarray] = {}  # per agent, Unity's side: fed back from recurrent_out
    finished = steps = 0
    while finished < 8:
        decision, terminal = env.get_steps(name)
        for agent in terminal.agent_id.tolist():  # an episode's end: the next one starts from zeros
            torch_memory.pop(agent, None)
            onnx_memory.pop(agent, None)
            finished += 1
        ids = decision.agent_id.tolist()
        zeros = np.zeros(MEMORY, np.float32)
        info = policy.act(
            decision.obs,
            None,
            decision.agent_id,
            np.stack([torch_memory.get(a, zeros) for a in ids]),
            deterministic=True,
        )
        feeds = {f"obs_{i}": unity_layout(o) for i, o in enumerate(decision.obs)}
        feeds |= {
            "action_masks": np.ones((len(ids), 4), np.float32),
            "recurrent_in": np.stack([onnx_memory.get(a, zeros) for a in ids])[:, None, :],
        }
        result = dict(zip(outputs, session.run(None, feeds)))
        np.testing.assert_allclose(
            result["deterministic_continuous_actions"], info.env_actions.continuous, rtol=1e-4, atol=1e-5
        )
        np.testing.assert_array_equal(result["deterministic_discrete_actions"], info.discrete_actions)
        np.testing.assert_allclose(result["recurrent_out"][:, 0], info.memories, rtol=1e-4, atol=1e-5)
        for row, agent in enumerate(ids):
            torch_memory[agent] = info.memories[row]
            onnx_memory[agent] = result["recurrent_out"][row, 0]
        env.set_actions(name, ActionTuple(continuous=info.env_actions.continuous, discrete=info.discrete_actions))
        env.step()
        steps += 1
        assert steps < 200
    assert steps > 12  # several episodes, memories carried over many steps and reset between them
