"""Variable-length observations: entity masks, attention invariances, ML-Agents' sizes and
outputs, and behaviors with var-len + vector + visual observations built and updated by PPO and SAC."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from processors import Trajectory
from stats import StatsReporter
from tests.fixtures.mlagents_0_28.pinned_values import weight_values
from trainers.networks.actor_critic import ObservationEncoder, UnsupportedNetworkError
from trainers.networks.attention import (
    ATTENTION_EMBEDDING_SIZE,
    EntityEmbedding,
    ResidualSelfAttention,
    entity_mask,
    layer_norm,
)
from trainers.ppo.algorithm import PPO
from trainers.sac.algorithm import SAC
from trainers.settings import (
    ExtrinsicSettings,
    NetworkSettings,
    PPOSettings,
    RewardSignalType,
    SACSettings,
    TrainerSettings,
)

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "attention_parity.json"
SMALL = NetworkSettings(hidden_units=16, num_layers=2)


def entities_spec(n: int, size: int, name: str = "buffer", kind=ObservationType.DEFAULT) -> ObservationSpec:
    return ObservationSpec((n, size), (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE), kind, name)


def vector_spec(n: int, kind=ObservationType.DEFAULT) -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), kind, "vector")


def visual_spec(h: int, w: int, c: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.DEFAULT, "camera")


def seeded(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- blocks


def test_entity_mask_marks_zero_rows_absent():
    x = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.05, 0.05], [0.0, -0.2]]])
    # ML-Agents' test: sum of squares below 0.01 (0.005 is absent, 0.04 present)
    assert entity_mask(x).tolist() == [[1.0, 0.0, 1.0, 0.0]]


def test_layer_norm_matches_torch_without_affine():
    x = torch.randn(3, 5, 8) * 4 + 2
    torch.testing.assert_close(layer_norm(x), torch.nn.functional.layer_norm(x, (8,), eps=1e-5))


def attention_pool(embed: EntityEmbedding, rsa: ResidualSelfAttention, x_self, entities):
    return rsa(embed(x_self, entities), entity_mask(entities))


def test_absent_entities_do_not_change_the_output_whatever_else_holds():
    g = seeded(1)
    embed = EntityEmbedding(3, 6, 32, self_size=4, generator=g)
    rsa = ResidualSelfAttention(32, 6, generator=g)
    x_self = torch.randn(5, 4)
    present = torch.randn(5, 2, 3)
    # the same two present entities, padded with absent rows in different places
    a = torch.zeros(5, 6, 3)
    a[:, :2] = present
    b = torch.zeros(5, 6, 3)
    b[:, 3] = present[:, 0]
    b[:, 5] = present[:, 1]
    with torch.no_grad():
        out_a = attention_pool(embed, rsa, x_self, a)
        out_b = attention_pool(embed, rsa, x_self, b)
        # negative control: a third present entity does change it
        c = a.clone()
        c[:, 4] = torch.randn(5, 3)
        out_c = attention_pool(embed, rsa, x_self, c)
    torch.testing.assert_close(out_a, out_b, rtol=1e-5, atol=1e-6)
    assert (out_a - out_c).abs().max() > 1e-3


def test_permuting_present_entities_does_not_change_the_pooled_output():
    g = seeded(2)
    embed = EntityEmbedding(4, 5, 16, generator=g)
    rsa = ResidualSelfAttention(16, 5, generator=g)
    entities = torch.randn(7, 5, 4)
    entities[:, 3] = 0.0
    with torch.no_grad():
        out = attention_pool(embed, rsa, None, entities)
        shuffled = attention_pool(embed, rsa, None, entities[:, torch.tensor([4, 2, 3, 0, 1])])
        # the x_self changes it (negative control of the invariance being trivial)
        other = attention_pool(embed, rsa, None, entities * 1.5)
    torch.testing.assert_close(out, shuffled, rtol=1e-5, atol=1e-6)
    assert (out - other).abs().max() > 1e-3


def test_no_present_entity_pools_to_zeros_not_nan():
    g = seeded(3)
    embed = EntityEmbedding(2, 3, 8, generator=g)
    rsa = ResidualSelfAttention(8, 3, generator=g)
    with torch.no_grad():
        out = attention_pool(embed, rsa, None, torch.zeros(2, 3, 2))
    assert torch.equal(out, torch.zeros(2, 8))


def test_attention_initialisation_is_mlagents_tfixup():
    rsa = ResidualSelfAttention(128, 10, generator=seeded(0))
    for layer in (rsa.fc_q, rsa.fc_k, rsa.fc_v, rsa.fc_out):
        assert float(layer.weight.detach().std()) == pytest.approx(math.sqrt(0.125 / 128), rel=0.05)
        assert torch.equal(layer.bias, torch.zeros(128))
    embed = EntityEmbedding(6, 4, 128, self_size=128, generator=seeded(0))
    assert tuple(embed.dense.weight.shape) == (128, 134)
    assert float(embed.dense.weight.detach().std()) == pytest.approx(math.sqrt(0.125 / 128), rel=0.05)


# ---------------------------------------------------------------- the encoder, against ML-Agents


# Parameter totals of ML-Agents 0.28's NetworkBody(hidden_units=16, num_layers=2) for these
# behaviors (built with /tmp/mla/bin/python): attention embedding 128 whatever hidden_units.
MLAGENTS_PARAMETERS = {
    "entities": (lambda: [entities_spec(5, 4)], 69024),
    "vector_entities": (lambda: [vector_spec(3), entities_spec(5, 4)], 85968),
    "vector_entities_goal_visual": (
        lambda: [
            vector_spec(3),
            entities_spec(5, 4),
            vector_spec(2, ObservationType.GOAL_SIGNAL),
            visual_spec(20, 20, 1),
        ],
        102768,
    ),
}


@pytest.mark.parametrize("case", list(MLAGENTS_PARAMETERS))
def test_parameter_count_matches_mlagents(case):
    make_specs, expected = MLAGENTS_PARAMETERS[case]
    encoder = ObservationEncoder(make_specs(), SMALL)
    assert sum(p.numel() for p in encoder.parameters()) == expected
    assert encoder.attention is not None and encoder.attention.embedding_size == ATTENTION_EMBEDDING_SIZE
    assert (
        encoder.inputs_width
        == sum({1: s.shape[0], 3: 16, 2: 0}[len(s.shape)] for s in make_specs()) + ATTENTION_EMBEDDING_SIZE
    )


def test_outputs_match_mlagents_with_two_entity_sets_and_a_hyper_goal():
    record = json.loads(FIXTURE.read_text(encoding="utf-8"))
    specs = [
        vector_spec(3),
        entities_spec(5, 4, "entities"),
        vector_spec(2, ObservationType.GOAL_SIGNAL),
        entities_spec(3, 2, "more_entities"),
    ]
    settings = NetworkSettings(hidden_units=record["hidden_units"], num_layers=record["num_layers"])
    encoder = ObservationEncoder(specs, settings)
    assert sorted(name for name, _ in encoder.named_parameters()) == record["ours"]
    state = {name: torch.as_tensor(weight_values(name, tuple(p.shape))) for name, p in encoder.named_parameters()}
    encoder.load_state_dict(state, strict=True)
    obs = [torch.tensor(o, dtype=torch.float32) for o in record["obs"]]
    with torch.no_grad():
        out = encoder(obs)
    np.testing.assert_allclose(out.numpy(), np.array(record["output"], dtype=np.float32), rtol=1e-4, atol=1e-5)


def test_var_len_observations_are_not_normalised():
    specs = [vector_spec(2), entities_spec(3, 2)]
    encoder = ObservationEncoder(specs, NetworkSettings(hidden_units=8, normalize=True))
    obs = [torch.randn(4, 2) * 10, torch.randn(4, 3, 2) * 10]
    encoder.update_normalization(obs)
    normalised = encoder.normalize(obs)
    assert float(encoder.inputs[0].normalizer.count) == 4
    assert normalised[1] is obs[1]
    assert not any("inputs.1" in key and "normal" in key for key in encoder.state_dict())


def test_rank_2_observation_without_variable_size_is_refused_by_name():
    spec = ObservationSpec((5, 4), (DimensionProperty.NONE, DimensionProperty.NONE), ObservationType.DEFAULT, "Grid")
    with pytest.raises(UnsupportedNetworkError, match="observation 0 .*Grid.*variable-length"):
        ObservationEncoder([spec], SMALL)


def test_a_variable_length_goal_is_an_ordinary_input_as_in_mlagents():
    # ML-Agents counts a var-len goal's encoding size as 0: no hypernetwork, the attention reads it
    goal = entities_spec(4, 2, "GoalBuffer", ObservationType.GOAL_SIGNAL)
    encoder = ObservationEncoder([goal, vector_spec(2)], SMALL)
    assert type(encoder.body).__name__ == "MLP" and encoder.attention is not None
    # next to a vector goal, only the vector goal conditions
    both = ObservationEncoder([goal, vector_spec(2, ObservationType.GOAL_SIGNAL)], SMALL)
    assert type(both.body).__name__ == "ConditionalEncoder" and both.goal_slices == ((0, 2),)
    assert both([torch.randn(3, 4, 2), torch.randn(3, 2)]).shape == (3, 16)


# ---------------------------------------------------------------- PPO and SAC build and update


MIXED = BehaviorSpec(
    [vector_spec(3), entities_spec(4, 3), visual_spec(20, 20, 1)],
    ActionSpec(2, (3,)),
)


def mixed_observations(n: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    entities = rng.normal(size=(n, 4, 3)).astype(np.float32)
    entities[:, 2:] = 0.0
    return [
        rng.normal(size=(n, 3)).astype(np.float32),
        entities,
        rng.random((n, 20, 20, 1), dtype=np.float32),
    ]


def trajectory_from_policy(policy, obs: list[np.ndarray], seed: int) -> Trajectory:
    """A trajectory of the observations ``obs`` (one [T + 1, *shape] per sensor, the last row
    the next observation) with the actions ``policy`` takes there."""
    length = obs[0].shape[0] - 1
    rows = [o[:-1] for o in obs]
    info = policy.act(rows, None, np.arange(length))
    rng = np.random.default_rng(seed)
    done = np.zeros(length, bool)
    done[-1] = True
    return Trajectory(
        behavior_id="Mixed?team=0",
        agent_id="agent_0-0",
        obs=tuple(rows),
        next_obs=tuple(o[-1] for o in obs),
        rewards=rng.standard_normal(length).astype(np.float32),
        done=done,
        interrupted=np.zeros(length, bool),
        continuous_actions=info.continuous_actions,
        discrete_actions=info.discrete_actions,
        continuous_log_probs=info.continuous_log_probs,
        discrete_log_probs=info.discrete_log_probs,
        action_masks=np.ones((length, sum(policy.discrete_branches)), bool),
        prev_continuous_actions=np.zeros_like(info.continuous_actions),
        prev_discrete_actions=np.zeros_like(info.discrete_actions),
        memories=np.zeros((length, 0), np.float32),
    )


def update_once(trainer_type: str, spec: BehaviorSpec, make_obs, network: NetworkSettings) -> dict[str, float]:
    """Build ``trainer_type``'s algorithm for ``spec``, feed it a few trajectories and run one
    update; returns its stats (finite losses) after checking the weights moved."""
    if trainer_type == "ppo":
        hyperparameters = PPOSettings(batch_size=16, buffer_size=32, num_epoch=1)
        algorithm_class = PPO
    else:
        hyperparameters = SACSettings(batch_size=8, buffer_size=100, buffer_init_steps=0, steps_per_update=4.0)
        algorithm_class = SAC
    settings = TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=hyperparameters,
        network_settings=network,
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings()},
        time_horizon=16,
    )
    algorithm = algorithm_class(
        behavior_name="Mixed", behavior_spec=spec, settings=settings, stats_reporter=StatsReporter("Mixed"), seed=0
    )
    before = {k: v.clone() for k, v in algorithm.policy.actor.state_dict().items()}
    for seed in range(3):
        algorithm.add(trajectory_from_policy(algorithm.policy, make_obs(17, seed), seed))
    assert algorithm.ready()
    stats = algorithm.update(48)
    assert all(math.isfinite(v) for v in stats.values()), stats
    after = algorithm.policy.actor.state_dict()
    moved = [k for k in before if not torch.equal(before[k], after[k])]
    assert any(k.startswith("encoder.attention.") or ".layers." in k for k in moved), moved
    return stats


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
def test_var_len_vector_and_visual_behavior_builds_and_updates(trainer_type):
    stats = update_once(trainer_type, MIXED, mixed_observations, NetworkSettings(hidden_units=16, num_layers=1))
    assert stats
