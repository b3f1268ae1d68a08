"""GAIL (and VAIL) against ML-Agents 0.28's ``GAILRewardProvider``: the same weights, the same
policy minibatch and expert rows, the same rewards, losses and Adam steps (``gail_parity.json``,
made by ``tests/fixtures/mlagents_0_28/make_gail_parity.py``).

The randomness is pinned as the script pins it: the demonstrations are the fixture's expert rows
(no ``.demo`` file), each update draws the rows the fixture names, the gradient penalty's
interpolation weights and VAIL's code noise are fixed functions of the requested shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
from torch import Tensor

import trainers.reward_signals.gail
from tests.fixtures.mlagents_0_28.pinned_values import code_noise, interpolation, weight_values
from tests.support.parity import (
    assert_parameters_match,
    assert_stats_match,
    start_normalizers_like_mlagents,
)
from trainers.files.demonstrations import Demonstrations
from trainers.networks.actor_critic import Normalizer
from trainers.reward_signals.base import SignalBatch
from trainers.reward_signals.gail import GAILReward
from trainers.settings import GAILSettings, NetworkSettings

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "gail_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
RTOL = ATOL = 1e-5
# VAIL's beta: ML-Agents computes ``beta * (KL - 0.5)`` and then rebinds ``beta.data`` to the
# stepped beta, so the loss's backward reads the new beta (0.159 at the first update, not 0);
# trainers.reward_signals.gail steps beta first and multiplies by the stepped value, which the VAIL cases check.
CASES = sorted(RECORD["cases"])


def behavior() -> BehaviorSpec:
    observations = [
        ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vector{i}")
        for i, n in enumerate(RECORD["obs_sizes"])
    ]
    return BehaviorSpec(observations, ActionSpec(RECORD["continuous_size"], tuple(RECORD["branches"])))


def demonstrations() -> Demonstrations:
    """The fixture's expert rows, as ``training_demonstrations`` would return them."""
    expert = RECORD["expert"]
    rows = len(expert["dones"])
    return Demonstrations(
        behavior_name="B",
        files=("pinned.demo",),
        obs=tuple(np.asarray(o, np.float32) for o in expert["obs"]),
        continuous_actions=np.asarray(expert["continuous_actions"], np.float32),
        discrete_actions=np.asarray(expert["discrete_actions"], np.int32),
        action_masks=np.ones((rows, sum(RECORD["branches"])), bool),
        rewards=np.zeros(rows, np.float32),
        done=np.asarray(expert["dones"], bool),
        interrupted=np.zeros(rows, bool),
        number_steps=rows + 1,
        number_episodes=1,
        mean_reward=0.0,
    )


def pin_randomness(monkeypatch: pytest.MonkeyPatch, signal: GAILReward) -> None:
    """Expert rows, interpolation weights and code noise as the script pins them."""
    draws = iter(RECORD["expert_index"])
    take = signal._expert.take

    def fixed_take(index: Tensor, device: torch.device) -> tuple[list[Tensor], Tensor, Tensor, Tensor]:
        rows = next(draws)
        assert index.shape == (len(rows),)
        return take(torch.tensor(rows), device)

    def rand(size: Any, *_: Any, **__: Any) -> Tensor:
        return torch.as_tensor(interpolation(tuple(size)))

    def randn(size: Any, *_: Any, **__: Any) -> Tensor:
        return torch.as_tensor(code_noise(tuple(size)))

    monkeypatch.setattr(signal._expert, "take", fixed_take)
    monkeypatch.setattr(torch, "rand", rand)
    monkeypatch.setattr(torch, "randn", randn)


def build(case: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[GAILReward, dict[str, torch.nn.Parameter]]:
    """Our signal with the case's settings and the fixture's weights and expert rows; the
    discriminator's parameters by name."""
    monkeypatch.setattr(trainers.reward_signals.gail, "training_demonstrations", lambda *_, **__: demonstrations())
    settings = GAILSettings(
        strength=RECORD["strength"],
        learning_rate=RECORD["learning_rate"],
        demo_path="pinned.demo",
        use_actions=case["use_actions"],
        use_vail=case["use_vail"],
        network_settings=NetworkSettings(
            hidden_units=RECORD["hidden_units"], num_layers=RECORD["num_layers"], normalize=case["normalize"]
        ),
    )
    signal = GAILReward(behavior(), settings)
    params = dict(signal.discriminator.named_parameters())
    assert sorted(params) == sorted(case["parameters"][0])
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(torch.as_tensor(weight_values(name, tuple(param.shape))))
    start_normalizers_like_mlagents(signal.discriminator)
    pin_randomness(monkeypatch, signal)
    return signal, params


def policy_batch() -> SignalBatch:
    policy = RECORD["policy"]
    obs = tuple(torch.tensor(o, dtype=torch.float32) for o in policy["obs"])
    return SignalBatch(
        obs,
        obs,  # GAIL does not read next observations
        torch.tensor(policy["continuous_actions"], dtype=torch.float32),
        torch.tensor(policy["discrete_actions"], dtype=torch.int64),
        torch.tensor(policy["dones"], dtype=torch.float32),
        None,
    )


@pytest.mark.parametrize("name", CASES)
def test_rewards_losses_and_adam_steps_match_mlagents(name, monkeypatch):
    case = RECORD["cases"][name]
    signal, params = build(case, monkeypatch)
    minibatch = policy_batch()
    # ML-Agents' evaluate() leaves strength to the trainer; ours returns the rewards with it.
    expected = np.asarray(case["rewards"], np.float64) * RECORD["strength"]
    np.testing.assert_allclose(signal.evaluate(minibatch).numpy(), expected[0], rtol=RTOL, atol=ATOL)
    for update in range(2):
        stats = signal.update(minibatch)
        assert_stats_match(stats, case["stats"][update], RTOL)
        assert_parameters_match(params, case["parameters"][update])
        np.testing.assert_allclose(signal.evaluate(minibatch).numpy(), expected[update + 1], rtol=RTOL, atol=ATOL)
    for encoder_name, recorded in case.get("normalizers", {}).items():
        index = int(encoder_name.rpartition(".inputs.")[2])
        normalizer = signal.discriminator.encoder.inputs[index].normalizer
        assert isinstance(normalizer, Normalizer)
        np.testing.assert_allclose(normalizer.mean.numpy(), recorded["mean"], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(normalizer.var.numpy(), recorded["var"], rtol=1e-6, atol=1e-6)
        assert float(normalizer.count) == recorded["count"]
