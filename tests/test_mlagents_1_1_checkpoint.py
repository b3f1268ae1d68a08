"""``--initialize-from`` an mlagents-learn 1.1 run (Unity package 3.x/4.x) works as for 0.28.

The fixtures are real mlagents-learn 1.1 checkpoints with ML-Agents 1.1's own outputs next to
them, written by ``tests/fixtures/mlagents_1_1/make_checkpoints.py`` (run by hand with ML-Agents
1.1 installed; CI only reads the files). 1.1 saves the same modules under the same keys as
0.28; what changed is the image layout its networks take: ``[N, C, H, W]``, as a 3.x/4.x build
sends it, where ours take ``[N, H, W, C]`` (the build's images are turned at the edge, see
``envs/unity/images.py``). So the expected outputs were computed on ``[C, H, W]`` pixels and our
networks are fed the same pixels as ``[H, W, C]``.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
import torch

from stats import StatsReporter
from tests.test_mlagents_checkpoint import FIXTURES as FIXTURES_0_28
from tests.test_mlagents_checkpoint import TOLERANCE, assert_refused_whole, masks_of, mismatch, recurrent_of, spec
from trainers.files import mlagents_checkpoint
from trainers.files.checkpoints import load_state
from trainers.loop.trainer import Trainer
from trainers.ppo.algorithm import PPO
from trainers.settings import (
    EncoderType,
    ExtrinsicSettings,
    MemorySettings,
    NetworkSettings,
    PPOSettings,
    RewardSignalType,
    TrainerSettings,
)

FIXTURES = Path(__file__).parent / "fixtures" / "mlagents_1_1"

# As make_checkpoints.py built each case, in our layout (Visual's [3, 28, 36] camera is
# [28, 36, 3] here): (behavior spec, network settings, shared critic).
CASES = {
    "3DBall": (spec([(8,)], 2, ()), NetworkSettings(hidden_units=24, num_layers=2, normalize=True), False),
    "Visual": (
        spec([(28, 36, 3), (4,)], 0, (3,)),
        NetworkSettings(hidden_units=16, num_layers=1, normalize=True, vis_encode_type=EncoderType.SIMPLE),
        True,
    ),
    "Recurrent": (
        spec([(6,)], 2, (3,)),
        NetworkSettings(hidden_units=16, num_layers=1, memory=MemorySettings(memory_size=16, sequence_length=4)),
        False,
    ),
    "Hybrid": (spec([(5,)], 2, (3, 2)), NetworkSettings(hidden_units=12, num_layers=1, normalize=True), True),
}


def make_trainer(case: str, *, behavior_spec=None, **network_changes) -> Trainer:
    """A PPO trainer configured as ``case`` was in mlagents-learn 1.1, with ``network_changes``."""
    case_spec, network, shared = CASES[case]
    settings = TrainerSettings(
        hyperparameters=PPOSettings(batch_size=16, buffer_size=64, shared_critic=shared),
        network_settings=attrs.evolve(network, **network_changes),
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings()},
    )
    reporter = StatsReporter(case)
    ppo = PPO(behavior_name=case, behavior_spec=behavior_spec or case_spec, settings=settings, stats_reporter=reporter)
    return Trainer(behavior_name=case, settings=settings, algorithm=ppo, stats_reporter=reporter, checkpoints=None)


def expected(case: str) -> dict:
    return torch.load(FIXTURES / f"{case}.expected.pt", weights_only=True)


def channels_last(obs: list[torch.Tensor]) -> list[torch.Tensor]:
    """1.1's inputs in our layout: each image [N, C, H, W] -> [N, H, W, C], the same pixels."""
    return [x.permute(0, 2, 3, 1) if x.ndim == 4 else x for x in obs]


@pytest.mark.parametrize("case", list(CASES))
def test_mlagents_1_1_checkpoints_are_recognised(case):
    state = load_state(FIXTURES / f"{case}.pt")  # torch.load(weights_only=True)
    assert mlagents_checkpoint.is_mlagents_checkpoint(state)
    assert set(state) == {"Policy", "global_step", "Optimizer:value_optimizer", "Optimizer:critic"}


@pytest.mark.parametrize("case", ["3DBall", "Recurrent"])
def test_1_1_saves_what_0_28_saved_for_the_same_network(case):
    # the same network, seeds and steps in both scripts: the same keys, and even the same values
    new, old = load_state(FIXTURES / f"{case}.pt"), load_state(FIXTURES_0_28 / f"{case}.pt")
    for module in ("Policy", "Optimizer:critic"):
        assert list(new[module]) == list(old[module])
        assert all(torch.equal(new[module][key], old[module][key]) for key in new[module])


@pytest.mark.parametrize("case", list(CASES))
def test_initialize_from_a_1_1_checkpoint_computes_what_mlagents_1_1_computed(case):
    trainer = make_trainer(case)
    trainer.initialize_from(FIXTURES / f"{case}.pt")
    assert trainer.step == 0
    out = expected(case)
    ppo = trainer.algorithm
    assert isinstance(ppo, PPO)
    actor, critic = ppo.policy.actor, ppo.critic
    obs, masks, recurrent = channels_last(out["obs"]), masks_of(out), recurrent_of(out)
    with torch.no_grad():
        features, memories = actor.features(obs, **recurrent)
        assert mismatch(features, out["encoding"]) < TOLERANCE
        dist = actor(obs, masks, **recurrent)
        continuous = out.get("continuous_actions", torch.zeros((len(obs[0]), 0)))
        discrete = out.get("discrete_actions", torch.zeros((len(obs[0]), 0), dtype=torch.int64))
        cont_log_probs, disc_log_probs, entropy = actor.evaluate_actions(obs, masks, continuous, discrete, **recurrent)
        assert mismatch(entropy, out["entropy"]) < TOLERANCE
        if out["continuous_size"]:
            assert mismatch(dist.mean, out["mean"]) < TOLERANCE
            assert mismatch(cont_log_probs, out["continuous_log_probs"]) < TOLERANCE
        if out["discrete_branches"]:
            # ML-Agents takes log(p + 1e-7); probabilities compare without that offset's blow-up
            assert mismatch(disc_log_probs.exp(), out["discrete_log_probs"].exp()) < TOLERANCE
            for ours, theirs in zip(dist.log_probs, out["probs"]):
                assert mismatch(ours.exp(), theirs) < TOLERANCE
            deterministic = actor.sample(obs, masks, deterministic=True, **recurrent).discrete
            assert torch.equal(deterministic, out["deterministic_discrete"])
        if recurrent:
            assert mismatch(memories, out["memories_out"]) < TOLERANCE
            sequence_length = out["sequence_length"]
            values = critic(obs, out["critic_memories"], sequence_length)
            _, critic_out = critic.features(obs, out["critic_memories"], sequence_length)
            assert mismatch(critic_out, out["critic_memories_out"]) < TOLERANCE
        else:
            values = critic(obs)
        assert mismatch(values["extrinsic"], out["values"]["extrinsic"]) < TOLERANCE


def test_the_same_numbers_in_another_layout_are_another_image():
    # control for the test above: 1.1's [C, H, W] buffer read as [H, W, C] (no permutation)
    # is an image of the right shape with the pixels elsewhere, and the encoding differs
    trainer = make_trainer("Visual")
    trainer.initialize_from(FIXTURES / "Visual.pt")
    out = expected("Visual")
    image, vector = out["obs"]
    misread = image.reshape(image.shape[0], 28, 36, 3)
    with torch.no_grad():
        features, _ = trainer.algorithm.policy.actor.features([misread, vector])
    assert mismatch(features, out["encoding"]) > 0.01


@pytest.mark.parametrize("case", ["3DBall", "Visual", "Hybrid"])
def test_imported_normalisers_continue_as_mlagents_1_1_would(case):
    trainer = make_trainer(case)
    trainer.initialize_from(FIXTURES / f"{case}.pt")
    update = expected(case)["normalizer_update"]
    normalizer = trainer.algorithm.policy.actor.encoder.inputs[update["index"]].normalizer
    normalizer.update(update["batch"])
    assert mismatch(normalizer.mean, update["mean"]) < TOLERANCE
    assert mismatch(normalizer.var, update["var"]) < TOLERANCE
    assert int(normalizer.count) == int(update["count"])


MISMATCHES = [
    # case, trainer changes, what the message must say
    ("3DBall", {"hidden_units": 32}, ["hidden_units: 24 in the checkpoint, 32 configured"]),
    (
        "Visual",
        {"vis_encode_type": "fully_connected"},
        ["vis_encode_type: simple in the checkpoint (observation 0), fully_connected configured"],
    ),
    (
        "Visual",  # a one-channel camera where the run had three
        {"behavior_spec": spec([(28, 36, 1), (4,)], 0, (3,))},
        [
            ": observation 0 is an image of 3 channel(s) in the checkpoint, 1 here; ",
            "Policy network_body.observation_encoder.processors.0.conv_layers.0.weight is (16, 3, 8, 8), "
            "encoder.inputs.0.convs.0.weight here is (16, 1, 8, 8)",
        ],
    ),
    (
        "Recurrent",
        {"memory": MemorySettings(memory_size=32, sequence_length=4)},
        [": memory_size: 16 in the checkpoint, 32 configured; "],
    ),
    (
        "Hybrid",
        {"behavior_spec": spec([(5,)], 2, (3,))},
        ["actions: 2 continuous and discrete branches (3, 2) in the checkpoint, "],
    ),
]


@pytest.mark.parametrize(("case", "changes", "phrases"), MISMATCHES)
def test_a_1_1_checkpoint_that_does_not_fit_is_the_same_one_error(case, changes, phrases):
    assert_refused_whole(make_trainer(case, **changes), FIXTURES / f"{case}.pt", case, phrases)
