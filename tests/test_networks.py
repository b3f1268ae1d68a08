"""Networks: normaliser statistics, encoders for every observation kind, the actor's
distributions (log-probs, entropy, masks), the critic's value heads and the hidden layers'
configured activation."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from trainers.exceptions import ConfigError
from trainers.networks.actor_critic import (
    MIN_RESOLUTION,
    Actor,
    Critic,
    Normalizer,
    ObservationEncoder,
    UnsupportedNetworkError,
    ValueHeads,
)
from trainers.networks.conditioning import ConditionalEncoder
from trainers.networks.policy import TorchPolicy
from trainers.poca.networks import POCACritic
from trainers.ppo.algorithm import _SharedCritic
from trainers.reward_signals.curiosity import CuriosityNetwork
from trainers.reward_signals.rnd import RNDReward
from trainers.sac.networks import QNetwork
from trainers.settings import (
    ConditioningType,
    CuriositySettings,
    EncoderType,
    MemorySettings,
    NetworkSettings,
    RNDSettings,
)


def vector_spec(n: int, name: str = "vector") -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, name)


def visual_spec(h: int, w: int, c: int, name: str = "camera") -> ObservationSpec:
    props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
    return ObservationSpec((h, w, c), props, ObservationType.DEFAULT, name)


SMALL = NetworkSettings(hidden_units=16, num_layers=2)


# ---------------------------------------------------------------- normaliser


def test_normalizer_matches_numpy_over_batches_merged_in_pieces():
    rng = np.random.default_rng(0)
    data = (rng.normal(size=(301, 4)) * [1.0, 10.0, 0.01, 3.0] + [0.0, -5.0, 2.0, 100.0]).astype(np.float32)
    norm = Normalizer(4)
    for lo, hi in [(0, 1), (1, 2), (2, 50), (50, 51), (51, 300), (300, 301)]:
        norm.update(torch.from_numpy(data[lo:hi]))
    expected = data.astype(np.float64)
    np.testing.assert_allclose(norm.mean.numpy(), expected.mean(axis=0), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(norm.var.numpy(), expected.var(axis=0), rtol=1e-10)
    assert float(norm.count) == 301
    # forward: (x - mean) / std in float32, clipped at 5 standard deviations
    x = torch.tensor([[0.0, -5.0, 2.0, 100.0]], dtype=torch.float32)
    y = norm(x)
    assert y.dtype == torch.float32
    ref = (x.numpy() - expected.mean(0)) / np.sqrt(expected.var(0) + 1e-8)
    np.testing.assert_allclose(y.numpy(), np.clip(ref, -5, 5), atol=1e-4)  # float32 maths
    far = norm(torch.tensor([[1e6, -1e6, 0.0, 100.0]]))
    assert far[0, 0] == 5.0 and far[0, 1] == -5.0


def test_normalizer_is_identity_before_update_and_saved_in_state_dict():
    norm = Normalizer(3)
    x = torch.tensor([[0.5, -1.0, 4.0]])
    torch.testing.assert_close(norm(x), x)
    norm.update(torch.empty(0, 3))  # an empty batch changes nothing
    assert float(norm.count) == 0
    norm.update(torch.tensor([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]))
    state = norm.state_dict()
    assert {k: v.dtype for k, v in state.items()} == {
        "mean": torch.float64,
        "var": torch.float64,
        "count": torch.float64,
    }
    other = Normalizer(3)
    other.load_state_dict(state)
    torch.testing.assert_close(other(x), norm(x))
    # a constant feature normalises to 0, not NaN
    assert norm(torch.tensor([[2.0, 2.0, 2.0]]))[0, 1] == 0.0


# ---------------------------------------------------------------- encoders


@pytest.mark.parametrize("kind", [e.value for e in EncoderType])
def test_each_visual_encoder_accepts_its_minimum_size(kind):
    side = MIN_RESOLUTION[kind]
    specs = [visual_spec(side, side + 1, 2), vector_spec(3)]
    settings = NetworkSettings(hidden_units=8, num_layers=1, vis_encode_type=EncoderType(kind))
    enc = ObservationEncoder(specs, settings)
    obs = [torch.rand(4, side, side + 1, 2), torch.randn(4, 3)]
    out = enc(obs)
    assert out.shape == (4, 8) and out.dtype == torch.float32
    # HWC input is permuted inside; the exported graph feeds NCHW directly
    nchw = [obs[0].permute(0, 3, 1, 2), obs[1]]
    torch.testing.assert_close(enc(nchw, channels_first=True), out)


@pytest.mark.parametrize("kind", ["simple", "nature_cnn", "resnet", "match3"])
def test_too_small_image_names_observation_and_minimum(kind):
    side = MIN_RESOLUTION[kind] - 1
    specs = [vector_spec(2), visual_spec(side, 64, 3, name="FrontCamera")]
    settings = NetworkSettings(vis_encode_type=EncoderType(kind))
    with pytest.raises(UnsupportedNetworkError) as info:
        ObservationEncoder(specs, settings)
    msg = str(info.value)
    minimum = MIN_RESOLUTION[kind]
    assert "observation 1" in msg and "FrontCamera" in msg
    assert f"{minimum}x{minimum}" in msg and kind in msg
    assert isinstance(info.value, ConfigError)


def mlagents_resnet_side(n: int) -> int:
    """ML-Agents' ResNetVisualEncoder: each of 3 stages max-pools 3x3, stride 2, unpadded
    (``pool_out_shape``: (n - 3) // 2 + 1)."""
    for _ in range(3):
        n = (n - 3) // 2 + 1
    return n


@pytest.mark.parametrize(("h", "w", "flat"), [(15, 15, 32), (15, 16, 32), (24, 32, 192), (84, 84, 2592)])
def test_resnet_flattens_to_mlagents_final_flat_size(h, w, flat):
    # ML-Agents' final_flat_size = 32 * h' * w' (15 -> 7 -> 3 -> 1, 84 -> 41 -> 20 -> 9)
    assert 32 * mlagents_resnet_side(h) * mlagents_resnet_side(w) == flat
    settings = NetworkSettings(hidden_units=8, vis_encode_type=EncoderType.RESNET)
    enc = ObservationEncoder([visual_spec(h, w, 3)], settings, generator=torch.Generator().manual_seed(0))
    resnet = enc.inputs[0]
    assert resnet.dense[0].in_features == flat
    assert [m.padding for m in resnet.modules() if isinstance(m, torch.nn.MaxPool2d)] == [0, 0, 0]
    # ML-Agents: relu(dense(...)), the dense layer drawn N(0, 1.41^2 / fan_in) with zero bias
    assert isinstance(resnet.dense[1], torch.nn.ReLU)
    assert torch.equal(resnet.dense[0].bias, torch.zeros(8))
    assert float(resnet.dense[0].weight.detach().std()) == pytest.approx(1.41 / math.sqrt(flat), rel=0.15)
    with torch.no_grad():
        encoded = resnet(torch.rand(5, 3, h, w) * 10 - 5)
    assert encoded.shape == (5, 8) and bool((encoded >= 0).all()) and bool((encoded == 0).any())


@pytest.mark.parametrize("num_layers", [0, 1, 3])
def test_num_layers_0_builds_one_hidden_layer_like_mlagents(num_layers):
    # ML-Agents' LinearEncoder builds its first layer, then num_layers - 1 more: 0 and 1 alike
    hidden = max(num_layers, 1)
    settings = NetworkSettings(hidden_units=8, num_layers=num_layers)
    actor = Actor([vector_spec(5), visual_spec(20, 20, 1)], settings, ActionSpec(1, (2,)))
    critic = Critic([vector_spec(5), visual_spec(20, 20, 1)], settings, ["extrinsic"])
    for network in (actor, critic):
        layers = network.encoder.body.dense_layers
        assert len(layers) == hidden and network.encoder.output_size == 8
        assert [tuple(layer.weight.shape) for layer in layers] == [(8, 13)] + [(8, 8)] * (hidden - 1)
    assert tuple(actor.mean_head.weight.shape) == (1, 8) and tuple(critic.value_heads.linear.weight.shape) == (1, 8)


def test_uint8_images_are_scaled_like_float_images():
    enc = ObservationEncoder([visual_spec(20, 20, 1)], SMALL)
    pixels = torch.randint(0, 256, (3, 20, 20, 1), dtype=torch.uint8)
    torch.testing.assert_close(enc([pixels]), enc([pixels.float() / 255.0]))


def test_normalisation_applies_only_when_asked():
    specs = [vector_spec(2)]
    x = torch.tensor([[100.0, -100.0], [102.0, -98.0]])
    plain = ObservationEncoder(specs, NetworkSettings(hidden_units=8, normalize=False))
    plain.update_normalization([x])
    assert not any("normalizer" in k for k in plain.state_dict())
    norm = ObservationEncoder(specs, NetworkSettings(hidden_units=8, normalize=True))
    norm.update_normalization([x])
    normalizer = norm.inputs[0].normalizer
    np.testing.assert_allclose(normalizer.mean.numpy(), [101.0, -99.0])
    np.testing.assert_allclose(normalizer.var.numpy(), [1.0, 1.0])


def test_generator_fixes_initial_weights():
    def build(seed):
        g = torch.Generator().manual_seed(seed)
        return Actor([vector_spec(3)], SMALL, ActionSpec(2, (3,)), generator=g).state_dict()

    a, b, c = build(1), build(1), build(2)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert not all(torch.equal(a[k], c[k]) for k in a)


# ---------------------------------------------------------------- actor


def hybrid_actor(seed: int = 0) -> Actor:
    g = torch.Generator().manual_seed(seed)
    return Actor([vector_spec(5)], SMALL, ActionSpec(2, (3, 2, 4)), generator=g)


def test_sample_log_probs_equal_evaluate_actions_and_are_differentiable():
    actor = hybrid_actor()
    obs = [torch.randn(64, 5)]
    masks = torch.ones(64, 9, dtype=torch.bool)
    masks[::2, 1] = False
    masks[1::3, 7] = False
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        out = actor.sample(obs, masks, generator=g)
    assert out.continuous.shape == (64, 2) and out.continuous.dtype == torch.float32
    assert out.discrete.shape == (64, 3) and out.discrete.dtype == torch.int64
    assert out.continuous_log_probs.shape == (64, 2) and out.discrete_log_probs.shape == (64, 3)
    assert out.entropy.shape == (64,)
    c_lp, d_lp, ent = actor.evaluate_actions(obs, masks, out.continuous, out.discrete)
    torch.testing.assert_close(c_lp, out.continuous_log_probs)
    torch.testing.assert_close(d_lp, out.discrete_log_probs)
    torch.testing.assert_close(ent, out.entropy)
    (c_lp.sum() + d_lp.sum() + ent.sum()).backward()
    assert actor.log_std.grad is not None and actor.logits_head.weight.grad.abs().sum() > 0


def test_log_probs_and_entropy_against_torch_distributions_on_hand_case():
    actor = Actor([vector_spec(1)], NetworkSettings(hidden_units=4, num_layers=1), ActionSpec(2, (3,)))
    with torch.no_grad():
        actor.mean_head.weight.zero_()
        actor.mean_head.bias.copy_(torch.tensor([0.5, -1.0]))
        actor.log_std.copy_(torch.tensor([[0.3, -0.7]]))
        actor.logits_head.weight.zero_()
        actor.logits_head.bias.copy_(torch.tensor([1.0, 2.0, 0.5]))
    obs = [torch.zeros(2, 1)]
    masks = torch.tensor([[True, True, True], [True, False, True]])
    cont = torch.tensor([[0.0, 0.0], [1.5, -2.0]])
    disc = torch.tensor([[1], [2]])
    c_lp, d_lp, ent = actor.evaluate_actions(obs, masks, cont, disc)
    normal = torch.distributions.Normal(torch.tensor([0.5, -1.0]), torch.exp(torch.tensor([0.3, -0.7])))
    torch.testing.assert_close(c_lp, normal.log_prob(cont))
    full = torch.distributions.Categorical(logits=torch.tensor([1.0, 2.0, 0.5]))
    allowed = torch.distributions.Categorical(logits=torch.tensor([1.0, 0.5]))  # action 1 masked
    torch.testing.assert_close(
        d_lp[:, 0], torch.stack([full.log_prob(torch.tensor(1)), allowed.log_prob(torch.tensor(1))])
    )
    gaussian_entropy = normal.entropy().mean()  # ML-Agents: mean over continuous dims, + each branch's
    torch.testing.assert_close(
        ent, torch.stack([gaussian_entropy + full.entropy(), gaussian_entropy + allowed.entropy()])
    )
    # by hand: N(., sigma) entropy is 0.5 log(2 pi e sigma^2); two equal-ish logits 1 and 0.5
    p = np.exp([1.0, 0.5]) / np.exp([1.0, 0.5]).sum()
    hand = sum(0.5 * math.log(2 * math.pi * math.e) + s for s in (0.3, -0.7)) / 2 - float((p * np.log(p)).sum())
    assert float(ent[1].detach()) == pytest.approx(hand, rel=1e-6)


def test_masked_action_is_never_sampled():
    actor = hybrid_actor(seed=4)
    with torch.no_grad():  # make the masked actions the most likely ones
        actor.logits_head.bias.copy_(torch.tensor([5.0, 0, 0, 0, 5.0, 0, 0, 0, 5.0]))
    n = 4000
    masks = torch.ones(n, 9, dtype=torch.bool)
    masks[:, 0] = False  # branch 0, action 0
    masks[:, 4] = False  # branch 1, action 1
    masks[:, 8] = False  # branch 2, action 3
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        out = actor.sample([torch.randn(n, 5)], masks, generator=g)
        free = actor.sample([torch.randn(n, 5)], None, generator=g)
    assert not (out.discrete[:, 0] == 0).any()
    assert not (out.discrete[:, 1] == 1).any()
    assert not (out.discrete[:, 2] == 3).any()
    assert set(out.discrete[:, 0].tolist()) == {1, 2}  # every allowed action still occurs
    # negative control: unmasked, the favoured actions dominate
    assert (free.discrete[:, 0] == 0).float().mean() > 0.9


def test_deterministic_sample_is_mean_and_argmax():
    actor = hybrid_actor()
    obs = [torch.randn(10, 5)]
    masks = torch.ones(10, 9, dtype=torch.bool)
    masks[:, 0] = False
    with torch.no_grad():
        out = actor.sample(obs, masks, deterministic=True)
        dist = actor(obs, masks)
    torch.testing.assert_close(out.continuous, dist.mean)
    expected = torch.stack([lp.argmax(1) for lp in dist.log_probs], dim=1)
    assert torch.equal(out.discrete, expected)
    assert not (out.discrete[:, 0] == 0).any()


def test_continuous_only_and_discrete_only_have_empty_other_half():
    cont = Actor([vector_spec(3)], SMALL, ActionSpec(2, ()))
    disc = Actor([vector_spec(3)], SMALL, ActionSpec(0, (4,)))
    obs = [torch.randn(6, 3)]
    with torch.no_grad():
        a = cont.sample(obs, None)
        b = disc.sample(obs, None)
        (log_probs,) = disc(obs).log_probs
    assert a.discrete.shape == (6, 0) and a.discrete_log_probs.shape == (6, 0)
    assert b.continuous.shape == (6, 0) and b.continuous_log_probs.shape == (6, 0)
    # state-independent std: every row has the same Gaussian entropy, mean of 0.5 log(2 pi e) per dim
    torch.testing.assert_close(a.entropy, torch.full((6,), 0.5 * math.log(2 * math.pi * math.e)))
    torch.testing.assert_close(b.entropy, torch.distributions.Categorical(logits=log_probs).entropy())
    assert bool((b.entropy > 0).all()) and bool((b.entropy <= math.log(4) + 1e-6).all())


def test_action_spec_without_actions_is_refused():
    with pytest.raises(UnsupportedNetworkError, match="no actions"):
        Actor([vector_spec(3)], SMALL, ActionSpec(0, ()))


# ---------------------------------------------------------------- critic


def test_critic_has_one_value_head_per_reward_signal():
    critic = Critic(
        [vector_spec(4), visual_spec(20, 20, 3)],
        NetworkSettings(hidden_units=8, normalize=True),
        ["extrinsic", "curiosity"],
    )
    obs = [torch.randn(7, 4), torch.rand(7, 20, 20, 3)]
    critic.update_normalization(obs)
    values = critic(obs)
    assert list(values) == ["extrinsic", "curiosity"]
    assert all(v.shape == (7,) and v.dtype == torch.float32 for v in values.values())
    assert not torch.equal(values["extrinsic"], values["curiosity"])
    assert float(critic.encoder.inputs[0].normalizer.count) == 7
    with pytest.raises(UnsupportedNetworkError, match="repeat"):
        ValueHeads(4, ["extrinsic", "extrinsic"])


def test_goal_observations_condition_the_body_only_with_hyper():
    # variable-length observations and hyper conditioning: tests/test_attention.py, tests/test_conditioning.py
    goal = ObservationSpec((2,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")
    hyper = Actor([vector_spec(3), goal], SMALL, ActionSpec(1, ()))
    assert type(hyper.encoder.body).__name__ == "ConditionalEncoder"
    plain = NetworkSettings(hidden_units=8, num_layers=1, goal_conditioning_type=ConditioningType.NONE)
    actor = Actor([vector_spec(3), goal], plain, ActionSpec(1, ()))  # goals as ordinary inputs, as asked
    assert actor.encoder.inputs_width == 5 and type(actor.encoder.body).__name__ == "MLP"


# ---------------------------------------------------------------- activation


@pytest.mark.parametrize(
    ("activation", "function"),
    [("swish", torch.nn.functional.silu), ("tanh", torch.tanh), ("relu", torch.nn.functional.relu)],
)
def test_every_hidden_layer_uses_the_configured_activation(activation, function):
    """``network_settings.activation``: the actor's and critic's hidden layers, SAC's Q networks
    (whose first layer runs split in observation and action columns), POCA's critic body, a
    goal-conditioned body and curiosity's models, each against the layers applied by hand."""
    settings = NetworkSettings(hidden_units=8, num_layers=2, activation=activation)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 5) * 3

    def by_hand(layers, h):
        for layer in layers:
            h = function(layer(h))
        return h

    actor = Actor([vector_spec(5)], settings, ActionSpec(2, (3,)), generator=generator)
    critic = Critic([vector_spec(5)], settings, ["extrinsic"], generator=generator)
    with torch.no_grad():
        for network in (actor, critic):
            torch.testing.assert_close(network.features([x])[0], by_hand(network.encoder.body.dense_layers, x))
        q = QNetwork([vector_spec(5)], settings, ["extrinsic"], 2, (), generator=generator)
        actions = torch.randn(4, 2)
        first, *rest = q.encoder.body.dense_layers
        h = function(first(x) + actions @ q.action_weights.T)
        torch.testing.assert_close(q(([x]), actions)[:, 0, 0], q.heads(by_hand(rest, h))[:, 0])
        poca = POCACritic([vector_spec(5)], settings, ActionSpec(2, ()), ["extrinsic"], generator=generator)
        assert poca.body.activation is function
        hidden = torch.randn(4, 8)
        torch.testing.assert_close(poca.body(hidden), by_hand(poca.body.dense_layers, hidden))
        goal = ObservationEncoder([vector_spec(5), goal_vector_spec(2)], settings, generator=generator)
        assert isinstance(goal.body, ConditionalEncoder) and goal.body.activation is function
        curiosity = CuriosityNetwork(
            BehaviorSpec([vector_spec(5)], ActionSpec(2, ())),
            CuriositySettings(network_settings=settings),
            generator,
        )
        state = torch.randn(4, 8)
        expected = curiosity.forward_output(function(curiosity.forward_hidden(torch.cat([state, actions], dim=1))))
        torch.testing.assert_close(curiosity.predicted_next(state, actions, torch.zeros(4, 0)), expected)


def goal_vector_spec(n: int) -> ObservationSpec:
    return ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")


# ---------------------------------------------------------------- initialization


def dense_layers(*networks: torch.nn.Module) -> list[torch.nn.Linear]:
    return [m for network in networks for m in network.modules() if isinstance(m, torch.nn.Linear)]


def test_pytorch_initialization_draws_every_layer_as_torch_does():
    """``network_settings.initialization: pytorch`` (Stable-Baselines3's SAC start): every dense
    layer of SAC's actor and Q networks, PPO's critic, POCA's critic and curiosity's models, weights
    and biases, uniform within ``1 / sqrt(fan_in)`` and spread as that uniform is (a standard
    deviation of the bound over sqrt 3); a Q network's first layer over its observation and action
    columns together; an LSTM within ``1 / sqrt(hidden)``, its forget bias no longer 1; PPO's free
    log standard deviation kept; the same seed, the same weights. Also the value heads of PPO's
    shared critic and RND's networks."""
    settings = NetworkSettings(hidden_units=64, num_layers=2, initialization="pytorch")
    spec, actions = [vector_spec(5)], ActionSpec(2, ())

    def build(seed: int) -> list[torch.nn.Module]:
        generator = torch.Generator().manual_seed(seed)
        return [
            Actor(spec, settings, actions, conditional_sigma=True, tanh_squash=True, generator=generator),
            Actor(spec, settings, ActionSpec(2, (3,)), generator=generator),
            QNetwork(spec, settings, ["extrinsic"], 2, (), generator=generator),
            Critic(spec, settings, ["extrinsic", "gail"], generator=generator),
            POCACritic(spec, settings, actions, ["extrinsic"], generator=generator),
            CuriosityNetwork(BehaviorSpec(spec, actions), CuriositySettings(network_settings=settings), generator),
            _SharedCritic(TorchPolicy(BehaviorSpec(spec, actions), settings, seed=seed), ["extrinsic"], generator),
            RNDReward(BehaviorSpec(spec, actions), RNDSettings(network_settings=settings), seed=seed).predictor,
        ]

    networks = build(seed=3)
    sac_actor, ppo_actor, q, *_ = networks
    for layer in dense_layers(*networks):
        if layer is q.encoder.body.dense_layers[0]:
            continue
        bound = 1.0 / math.sqrt(layer.in_features)
        for tensor in (layer.weight.detach(), layer.bias.detach()):
            assert 0 < float(tensor.abs().max()) <= bound
        if layer.weight.numel() >= 1000:
            assert float(layer.weight.detach().std()) == pytest.approx(bound / math.sqrt(3), rel=0.1)
    first = q.encoder.body.dense_layers[0]
    joined = torch.cat([first.weight, q.action_weights, first.bias[:, None]], dim=1).detach()
    assert 0.9 / math.sqrt(5 + 2) < float(joined.abs().max()) <= 1 / math.sqrt(5 + 2)  # not 1 / sqrt(5)
    assert float(ppo_actor.log_std.detach().abs().max()) == 0.0
    for a, b in zip(networks, build(seed=3), strict=True):
        for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
            torch.testing.assert_close(x, y, msg=name)

    recurrent = attrs.evolve(settings, memory=MemorySettings(sequence_length=4, memory_size=32))
    lstm = Actor(spec, recurrent, actions, generator=torch.Generator().manual_seed(3)).memory.lstm
    for tensor in lstm.parameters():
        tensor = tensor.detach()
        assert 0.9 / math.sqrt(16) < float(tensor.abs().max()) <= 1 / math.sqrt(16)


def test_mlagents_initialization_is_the_default_and_keeps_mlagents_gains():
    """Unset and ``initialization: mlagents`` build the same weights: ML-Agents' He-normal with
    zero biases (the mean head at gain 0.2), which the configurations tuned for ML-Agents expect."""
    spec, actions = [vector_spec(5)], ActionSpec(2, ())
    built = [
        Actor(
            spec,
            NetworkSettings(hidden_units=64, initialization=init),
            actions,
            generator=torch.Generator().manual_seed(3),
        )
        for init in (None, "mlagents")
    ]
    for (name, x), y in zip(built[0].state_dict().items(), built[1].state_dict().values(), strict=True):
        torch.testing.assert_close(x, y, msg=name)
    actor = built[0]
    assert all(float(layer.bias.detach().abs().max()) == 0.0 for layer in dense_layers(actor))
    assert float(actor.mean_head.weight.detach().std()) == pytest.approx(0.2 / math.sqrt(64), rel=0.25)
