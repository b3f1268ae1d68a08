"""TorchPolicy: batched act() for every observation/action mix, env-action clipping, masks,
seeds, weight round trips, normalisation and the errors a user meets."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
)

from processors.trajectory import ActionInfo
from trainers.networks.distributions import MASKED_LOGIT, categorical_sample, mask_logits
from trainers.networks.policy import TorchPolicy
from trainers.settings import EncoderType, MemorySettings, NetworkSettings


def vector_spec(n: int) -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vector{n}")


def visual_spec(h: int, w: int, c: int) -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.DEFAULT, "camera")


SMALL = NetworkSettings(hidden_units=16, num_layers=2, normalize=True)


def random_obs(spec: BehaviorSpec, n: int, rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.normal(size=(n, *s.shape)).astype(np.float32)
        if len(s.shape) == 1
        else rng.random((n, *s.shape), dtype=np.float32)
        for s in spec.observation_specs
    ]


def random_masks(spec: BehaviorSpec, n: int, rng: np.random.Generator) -> np.ndarray | None:
    branches = spec.action_spec.discrete_branches
    if not branches:
        return None
    masks = rng.random((n, sum(branches))) > 0.3
    start = 0
    for size in branches:  # keep at least one allowed action per branch
        masks[np.arange(n), start + rng.integers(0, size, n)] = True
        start += size
    return masks


MIXES = {
    "vector_continuous": BehaviorSpec([vector_spec(8)], ActionSpec(2, ())),
    "vector_discrete": BehaviorSpec([vector_spec(4), vector_spec(3)], ActionSpec(0, (3, 2, 5))),
    "hybrid": BehaviorSpec([vector_spec(6)], ActionSpec(3, (4,))),
    **{
        f"visual_{kind.value}": BehaviorSpec(
            [visual_spec(kind.min_resolution, kind.min_resolution, 2), vector_spec(2)], ActionSpec(1, (3,))
        )
        for kind in EncoderType
    },
}


@pytest.mark.parametrize("mix", list(MIXES))
def test_act_shapes_dtypes_and_env_clipping(mix):
    spec = MIXES[mix]
    kind = EncoderType(mix.removeprefix("visual_")) if mix.startswith("visual_") else EncoderType.SIMPLE
    settings = NetworkSettings(hidden_units=16, num_layers=2, normalize=True, vis_encode_type=kind)
    policy = TorchPolicy(spec, settings, seed=1)
    rng = np.random.default_rng(0)
    n = 5
    obs = random_obs(spec, n, rng)
    masks = random_masks(spec, n, rng)
    policy.update_normalization(obs)
    info = policy.act(obs, masks, np.arange(10, 10 + n))
    c, b = spec.action_spec.continuous_size, len(spec.action_spec.discrete_branches)
    assert isinstance(info, ActionInfo) and len(info) == n
    assert info.agent_ids.dtype == np.int32 and info.agent_ids.tolist() == list(range(10, 15))
    for name, shape, dtype in [
        ("continuous_actions", (n, c), np.float32),
        ("discrete_actions", (n, b), np.int32),
        ("continuous_log_probs", (n, c), np.float32),
        ("discrete_log_probs", (n, b), np.float32),
        ("entropy", (n,), np.float32),
        ("memories", (n, 0), np.float32),
    ]:
        value = getattr(info, name)
        assert value.shape == shape and value.dtype == dtype, name
    assert info.env_actions.continuous.shape == (n, c) and info.env_actions.continuous.dtype == np.float32
    assert info.env_actions.discrete.shape == (n, b) and info.env_actions.discrete.dtype == np.int32
    np.testing.assert_allclose(info.env_actions.continuous, np.clip(info.continuous_actions, -3, 3) / 3, rtol=1e-6)
    np.testing.assert_array_equal(info.env_actions.discrete, info.discrete_actions)
    if b:
        start = 0
        for i, size in enumerate(spec.action_spec.discrete_branches):
            chosen = info.discrete_actions[:, i]
            assert ((chosen >= 0) & (chosen < size)).all()
            assert masks[np.arange(n), start + chosen].all()  # only allowed actions
            start += size
    assert np.isfinite(info.entropy).all() and np.isfinite(info.continuous_log_probs).all()


def test_env_actions_are_clipped_to_unit_range():
    spec = BehaviorSpec([vector_spec(2)], ActionSpec(2, ()))
    policy = TorchPolicy(spec, SMALL, seed=0)
    with torch.no_grad():
        policy.actor.log_std.fill_(2.0)  # std e^2: most samples land outside [-3, 3]
    info = policy.act([np.zeros((500, 2), np.float32)], None, np.arange(500))
    assert np.abs(info.continuous_actions).max() > 3.0  # the unclipped sample is kept for training
    assert np.abs(info.env_actions.continuous).max() == pytest.approx(1.0)
    big = np.abs(info.continuous_actions) >= 3
    np.testing.assert_array_equal(info.env_actions.continuous[big], np.sign(info.continuous_actions[big]))


def test_masked_actions_never_sampled_in_a_large_batch():
    spec = BehaviorSpec([vector_spec(3)], ActionSpec(0, (3, 2)))
    policy = TorchPolicy(spec, SMALL, seed=5)
    n = 3000
    masks = np.ones((n, 5), bool)
    masks[:, 1] = False  # branch 0: action 1 never allowed
    masks[: n // 2, 4] = False  # branch 1: action 1 barred for the first half only
    info = policy.act([np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)], masks, np.arange(n))
    assert not (info.discrete_actions[:, 0] == 1).any()
    assert not (info.discrete_actions[: n // 2, 1] == 1).any()
    assert (info.discrete_actions[n // 2 :, 1] == 1).mean() > 0.3  # the control: allowed there
    assert set(np.unique(info.discrete_actions[:, 0])) == {0, 2}


def test_a_branch_draw_is_torch_multinomials_draw_seed_for_seed():
    """``categorical_sample`` runs the exponential race ``torch.multinomial(p, 1)`` runs inside,
    without its checks: the same draws from the same generator, so seeded runs and their learning
    tests stay as they were measured. (If a torch release draws otherwise, the sampler is still
    exact, but seeded trajectories move: re-measure the learning tests' seeds before updating.)"""
    source = torch.Generator().manual_seed(7)
    ours, theirs = torch.Generator().manual_seed(11), torch.Generator().manual_seed(11)
    for trial in range(300):
        rows, size = 1 + trial % 17, 1 + trial % 5
        logits = 3.0 * torch.randn(rows, size, generator=source)
        if trial % 3 == 0:
            logits[:, 0] = -MASKED_LOGIT
        probs = torch.softmax(logits, dim=1)
        torch.testing.assert_close(
            categorical_sample(probs, ours), torch.multinomial(probs, 1, generator=theirs), rtol=0, atol=0
        )
        # the generators stay in step: each draw consumed the same numbers
        torch.testing.assert_close(torch.rand(2, generator=ours), torch.rand(2, generator=theirs), rtol=0, atol=0)
    probs = torch.tensor([[0.1, 0.6, 0.0, 0.3]]).expand(40_000, 4)
    counts = torch.bincount(categorical_sample(probs, ours).flatten(), minlength=4) / 40_000
    torch.testing.assert_close(counts, probs[0], rtol=0, atol=0.01)


def test_a_bool_mask_gives_the_exported_formulas_logits_and_gradients():
    logits = torch.randn(6, 5, generator=torch.Generator().manual_seed(3), requires_grad=True)
    masks = torch.rand(6, 5, generator=torch.Generator().manual_seed(4)) > 0.4
    by_bool, by_float = mask_logits(logits, masks), mask_logits(logits, masks.float())
    torch.testing.assert_close(by_bool, by_float, rtol=0, atol=0)
    weights = torch.randn(6, 5)
    (grad_bool,) = torch.autograd.grad((by_bool * weights).sum(), logits)
    (grad_float,) = torch.autograd.grad((by_float * weights).sum(), logits)
    torch.testing.assert_close(grad_bool, grad_float, rtol=0, atol=0)


def test_same_seed_same_weights_and_actions_other_seed_differs():
    spec = MIXES["hybrid"]
    rng = np.random.default_rng(2)
    obs, masks = random_obs(spec, 20, rng), random_masks(spec, 20, rng)

    def run(seed):
        policy = TorchPolicy(spec, SMALL, seed=seed)
        return [policy.act(obs, masks, np.arange(20)) for _ in range(3)]

    a, b, c = run(7), run(7), run(8)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.continuous_actions, y.continuous_actions)
        np.testing.assert_array_equal(x.discrete_actions, y.discrete_actions)
    assert not np.array_equal(a[0].continuous_actions, c[0].continuous_actions)
    assert not np.array_equal(a[0].continuous_actions, a[1].continuous_actions)  # fresh draws each call


def test_weights_round_trip_gives_identical_actions():
    spec = MIXES["visual_simple"]
    rng = np.random.default_rng(3)
    obs, masks = random_obs(spec, 8, rng), random_masks(spec, 8, rng)
    source = TorchPolicy(spec, SMALL, seed=1)
    source.update_normalization(obs)
    target = TorchPolicy(spec, SMALL, seed=2)
    weights = source.get_weights()
    assert all(t.device.type == "cpu" for t in weights.values())
    assert any("normalizer.mean" in k for k in weights)
    before = target.act(obs, masks, np.arange(8), deterministic=True)
    target.load_weights(weights)
    source.reseed(11)
    target.reseed(11)
    for deterministic in (True, False):
        x = source.act(obs, masks, np.arange(8), deterministic=deterministic)
        y = target.act(obs, masks, np.arange(8), deterministic=deterministic)
        np.testing.assert_array_equal(x.continuous_actions, y.continuous_actions)
        np.testing.assert_array_equal(x.discrete_actions, y.discrete_actions)
        np.testing.assert_array_equal(x.continuous_log_probs, y.continuous_log_probs)
        if deterministic:  # control: before loading, the target's own weights acted otherwise
            assert not np.array_equal(before.continuous_actions, y.continuous_actions)
    # the handed-out weights are copies: changing the source later does not change them
    snapshot = {k: v.clone() for k, v in weights.items()}
    source.update_normalization([o + 5 for o in obs])
    with torch.no_grad():
        next(source.actor.parameters()).add_(1.0)
    assert all(torch.equal(snapshot[k], weights[k]) for k in weights)


def test_deterministic_defaults_to_network_settings():
    spec = MIXES["hybrid"]
    rng = np.random.default_rng(4)
    obs, masks = random_obs(spec, 6, rng), random_masks(spec, 6, rng)
    policy = TorchPolicy(spec, NetworkSettings(hidden_units=16, deterministic=True), seed=0)
    first, second = policy.act(obs, masks, np.arange(6)), policy.act(obs, masks, np.arange(6))
    np.testing.assert_array_equal(first.continuous_actions, second.continuous_actions)
    explicit = policy.act(obs, masks, np.arange(6), deterministic=True)
    np.testing.assert_array_equal(first.discrete_actions, explicit.discrete_actions)
    stochastic = policy.act(obs, masks, np.arange(6), deterministic=False)
    assert not np.array_equal(first.continuous_actions, stochastic.continuous_actions)


def test_no_agents_gives_empty_action_info():
    spec = MIXES["hybrid"]
    policy = TorchPolicy(spec, SMALL, seed=0)
    info = policy.act([np.zeros((0, 6), np.float32)], np.zeros((0, 4), bool), np.zeros(0, np.int32))
    assert len(info) == 0
    assert info.continuous_actions.shape == (0, 3) and info.discrete_actions.shape == (0, 1)


def test_update_normalization_only_when_normalize():
    spec = MIXES["vector_continuous"]
    obs = [np.full((4, 8), 3.0, np.float32)]
    on = TorchPolicy(spec, SMALL, seed=0)
    on.update_normalization(obs)
    assert float(on.actor.encoder.inputs[0].normalizer.count) == 4
    np.testing.assert_allclose(on.actor.encoder.inputs[0].normalizer.mean.numpy(), 3.0)
    off = TorchPolicy(spec, NetworkSettings(hidden_units=16), seed=0)
    off.update_normalization(obs)  # no normaliser to update, no error
    assert off.actor.encoder.inputs[0].normalizer is None


def test_recurrent_policy_returns_the_memory_to_feed_next():
    settings = NetworkSettings(hidden_units=16, memory=MemorySettings(sequence_length=16, memory_size=32))
    policy = TorchPolicy(MIXES["hybrid"], settings, seed=0)
    assert policy.memory_size == 32 and TorchPolicy(MIXES["hybrid"], SMALL).memory_size == 0
    obs = [
        np.random.default_rng(0).normal(size=(3, *spec.shape)).astype(np.float32)
        for spec in MIXES["hybrid"].observation_specs
    ]
    first = policy.act(obs, None, np.arange(3), deterministic=True)
    assert first.memories.shape == (3, 32) and np.abs(first.memories).sum() > 0
    # zeros are what a new agent is fed: the same as no memory at all
    again = policy.act(obs, None, np.arange(3), np.zeros((3, 32), np.float32), deterministic=True)
    np.testing.assert_array_equal(again.memories, first.memories)
    # the memory is an input: feeding it back changes the next decision on the same observation
    second = policy.act(obs, None, np.arange(3), first.memories, deterministic=True)
    assert not np.allclose(second.memories, first.memories)
    with pytest.raises(ValueError, match=r"memories: expected shape \[3, 32\]"):
        policy.act(obs, None, np.arange(3), np.zeros((3, 16), np.float32))


def test_wrong_observations_are_named():
    policy = TorchPolicy(MIXES["vector_discrete"], SMALL, seed=0)
    with pytest.raises(ValueError, match="expected 2 observation arrays"):
        policy.act([np.zeros((1, 4), np.float32)], None, np.arange(1))
    with pytest.raises(ValueError, match=r"observation 1: expected shape \[N, 3\]"):
        policy.act([np.zeros((1, 4), np.float32), np.zeros((1, 4), np.float32)], None, np.arange(1))


def test_an_update_trains_in_training_mode_and_the_policy_acts_in_eval_mode():
    """cuDNN differentiates an LSTM only in training mode; nested (behavioral cloning's update
    inside SAC's gradient steps) the outer update keeps training mode."""
    spec = BehaviorSpec([vector_spec(3)], ActionSpec(1, ()))
    policy = TorchPolicy(spec, NetworkSettings(memory=MemorySettings(memory_size=8, sequence_length=2)), seed=1)
    assert not policy.actor.training
    with policy.training():
        with policy.training():
            assert policy.actor.training
        assert policy.actor.training
    assert not policy.actor.training


def test_uniform_decisions_draw_the_action_space_uniformly_then_the_actor_acts():
    """A training run's acting copy with ``uniform_decisions`` (SAC's ``buffer_init_actions:
    uniform``) takes that many agents' decisions uniformly at random, a batch at a time:
    continuous actions spread evenly over [-1, 1], each branch's allowed actions equally often
    (never a masked one), the policy's log-probabilities of them, also where it is asked for its
    deterministic action; then the actor decides again."""
    spec = BehaviorSpec([vector_spec(3)], ActionSpec(1, (3, 2)))
    policy = TorchPolicy(spec, SMALL, seed=5, conditional_sigma=True, tanh_squash=True)
    n = 4000
    obs = [np.random.default_rng(1).normal(size=(n, 3)).astype(np.float32)]
    masks = np.ones((n, 5), bool)
    masks[:, 1] = False  # branch 0: action 1 never allowed
    policy.uniform_decisions = n + 10
    info = policy.act(obs, masks, np.arange(n))
    assert policy.uniform_decisions == 10
    continuous = info.continuous_actions[:, 0]
    assert np.histogram(continuous, bins=4, range=(-1, 1))[0] == pytest.approx([n / 4] * 4, rel=0.1)
    assert set(np.unique(info.discrete_actions[:, 0])) == {0, 2}
    assert (info.discrete_actions[:, 0] == 0).mean() == pytest.approx(0.5, abs=0.05)
    assert (info.discrete_actions[:, 1] == 1).mean() == pytest.approx(0.5, abs=0.05)
    taken = policy.act_taken(obs, masks, np.arange(n), None, info.env_actions.continuous, info.discrete_actions)
    np.testing.assert_allclose(info.continuous_log_probs, taken.continuous_log_probs, rtol=1e-6)
    np.testing.assert_array_equal(info.discrete_log_probs, taken.discrete_log_probs)

    last = policy.act([obs[0][:9]], masks[:9], np.arange(9), deterministic=True)  # 9 of the last 10: uniform still
    assert policy.uniform_decisions == 1 and np.abs(last.continuous_actions).max() > 0.5
    policy.uniform_decisions = 0
    mode = policy.act(obs, masks, np.arange(n), deterministic=True)  # the actor's mean: near 0 untrained
    assert np.abs(mode.continuous_actions).max() < 0.5
