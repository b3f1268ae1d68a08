"""Goal conditioning by hypernetwork: the goal multiplies the last hidden layer, only that layer
is generated, sizes as ML-Agents builds them (actor, critic and SAC's Q network), PPO and SAC
update a behavior with goals, entities and an image."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from tests.test_attention import entities_spec, update_once, visual_spec
from trainers.networks.actor_critic import ObservationEncoder
from trainers.networks.conditioning import ConditionalEncoder, HyperNetwork
from trainers.sac.networks import QNetwork
from trainers.settings import ConditioningType, NetworkSettings


def vector_spec(n: int, goal: bool = False) -> ObservationSpec:
    kind = ObservationType.GOAL_SIGNAL if goal else ObservationType.DEFAULT
    return ObservationSpec((n,), (DimensionProperty.NONE,), kind, "goal" if goal else "vector")


def visual_goal(h: int, w: int, c: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.GOAL_SIGNAL, "goal_camera")


def settings(num_layers: int = 2, **changes) -> NetworkSettings:
    return NetworkSettings(hidden_units=16, num_layers=num_layers, **changes)


def test_hypernetwork_layer_is_linear_in_its_input_with_goal_dependent_weights():
    layer = HyperNetwork(5, 4, 3, 8, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        layer.bias.copy_(torch.arange(4.0))
        x1, x2 = torch.randn(6, 5), torch.randn(6, 5)
        goal, other_goal = torch.randn(6, 3), torch.randn(6, 3)
        # for a fixed goal, x -> x W(goal) + bias: additive in x, and the goal alone adds nothing
        torch.testing.assert_close(
            layer(x1 + x2, goal) - layer.bias, (layer(x1, goal) - layer.bias) + (layer(x2, goal) - layer.bias)
        )
        torch.testing.assert_close(layer(torch.zeros(6, 5), goal), layer.bias.expand(6, 4))
        # the goal changes the function (multiplicatively: the weights)
        assert (layer(x1, goal) - layer(x1, other_goal)).abs().min() > 0
        weights = layer.generated_weights(goal)
    assert weights.shape == (6, 5, 4)
    torch.testing.assert_close(layer(x1, goal), torch.einsum("bi,bio->bo", x1, weights) + layer.bias)


def test_hypernetwork_initialisation_is_mlagents():
    layer = HyperNetwork(20, 16, 3, 16, generator=torch.Generator().manual_seed(1))
    bound = math.sqrt(1 / (16 * 20))
    w = layer.weights.weight.detach()
    assert w.shape == (20 * 16, 16) and float(w.abs().max()) <= bound and float(w.abs().max()) > 0.9 * bound
    assert torch.equal(layer.weights.bias, torch.zeros(320)) and torch.equal(layer.bias, torch.zeros(16))
    assert [tuple(dense.weight.shape) for dense in layer.layers] == [(16, 3), (16, 16)]


@pytest.mark.parametrize(("num_layers", "plain"), [(0, 0), (1, 0), (3, 2)])
def test_only_the_last_layer_is_generated(num_layers, plain):
    body = ConditionalEncoder(7, 2, 16, num_layers)
    kinds = [type(layer).__name__ for layer in body.layers]
    assert kinds == ["Linear"] * plain + ["HyperNetwork"] and body.output_size == 16
    assert body(torch.randn(4, 7), torch.randn(4, 2)).shape == (4, 16)


# Parameter totals of ML-Agents 0.28's NetworkBody(hidden_units=16, num_layers, encoded_act_size)
# (built with /tmp/mla/bin/python): goals are ordinary inputs too and condition through their
# encodings (a visual goal's is its encoder's 16 outputs; several goals are joined).
MLAGENTS_PARAMETERS = [
    ("vector_goal", lambda: [vector_spec(3), vector_spec(2, goal=True)], 1, {0: 1696, 2: 2240}),
    ("vector_goal", lambda: [vector_spec(3), vector_spec(2, goal=True)], 3, {0: 5056, 2: 5088}),
    ("visual_goal", lambda: [vector_spec(3), visual_goal(20, 20, 1)], 1, {0: 15520, 2: 16064}),
    ("visual_goal", lambda: [vector_spec(3), visual_goal(20, 20, 1)], 3, {0: 15296, 2: 15328}),
    ("two_goals", lambda: [vector_spec(2, True), vector_spec(3), vector_spec(2, True)], 1, {0: 2272, 2: 2816}),
]


@pytest.mark.parametrize(("case", "make_specs", "num_layers", "expected"), MLAGENTS_PARAMETERS)
def test_parameter_counts_match_mlagents(case, make_specs, num_layers, expected):
    encoder = ObservationEncoder(make_specs(), settings(num_layers))
    assert sum(p.numel() for p in encoder.parameters()) == expected[0]
    # SAC's Q network: the continuous action joins the body's input, as ML-Agents' encoded_act_size
    q = QNetwork(make_specs(), settings(num_layers), ["extrinsic"], 2, ())
    assert sum(p.numel() for p in q.encoder.parameters()) == expected[2]


def test_goal_observations_stay_ordinary_inputs_and_a_changed_goal_changes_the_function():
    specs = [vector_spec(3), vector_spec(2, goal=True)]
    encoder = ObservationEncoder(specs, settings(1), generator=torch.Generator().manual_seed(0))
    assert encoder.inputs_width == 5 and encoder.goal_slices == ((3, 5),)
    x = torch.randn(8, 3)
    goal = torch.randn(1, 2).expand(8, 2)
    with torch.no_grad():
        out = encoder([x, goal])
        changed = encoder([x, goal + 1.0])
    assert (out - changed).abs().max() > 1e-3
    # negative control: with goal_conditioning_type none there is no hypernetwork
    plain = ObservationEncoder(specs, settings(1, goal_conditioning_type=ConditioningType.NONE))
    assert not any(isinstance(m, HyperNetwork) for m in plain.modules())


def test_q_network_with_a_conditioned_body_splits_the_same_way_as_it_runs_whole():
    specs = [vector_spec(3), entities_spec(4, 2), vector_spec(2, goal=True)]
    q = QNetwork(specs, settings(2), ["extrinsic", "curiosity"], 2, (3,), generator=torch.Generator().manual_seed(0))
    assert not q.split_first_layer and not hasattr(q, "action_weights")
    obs = [torch.randn(5, 3), torch.randn(5, 4, 2), torch.randn(5, 2)]
    actions, other = torch.randn(5, 2), torch.randn(5, 2)
    with torch.no_grad():
        values = q(obs, actions)
        part = q.observation_part(obs)
        assert values.shape == (5, 2, 3)
        torch.testing.assert_close(q.from_observation_part(part, actions), values)
        assert (q.from_observation_part(part, other) - values).abs().max() > 1e-4


GOALS = BehaviorSpec(
    [vector_spec(3), entities_spec(4, 3), visual_spec(20, 20, 1), vector_spec(2, goal=True)],
    ActionSpec(2, (3,)),
)


def goal_observations(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    entities = rng.normal(size=(n, 4, 3)).astype(np.float32)
    entities[:, 1:] = 0.0
    return [
        rng.normal(size=(n, 3)).astype(np.float32),
        entities,
        rng.random((n, 20, 20, 1), dtype=np.float32),
        np.eye(2, dtype=np.float32)[rng.integers(0, 2, n)],
    ]


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
def test_goal_entities_and_image_behavior_builds_and_updates(trainer_type):
    stats = update_once(trainer_type, GOALS, goal_observations, settings(1, normalize=True))
    assert stats
