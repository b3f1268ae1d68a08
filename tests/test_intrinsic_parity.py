"""Curiosity and RND against ML-Agents 0.28's reward providers: the same weights, the same
minibatch, the same rewards, losses and Adam steps (``reward_signal_parity.json``, made by
``tests/fixtures/mlagents_0_28/make_reward_signal_parity.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from processors import Trajectory
from tests.fixtures.mlagents_0_28.pinned_values import weight_values
from tests.support.parity import (
    assert_parameters_match,
    assert_stats_match,
    start_normalizers_like_mlagents,
)
from trainers.reward_signals.base import SignalBatch
from trainers.reward_signals.curiosity import CuriosityReward
from trainers.reward_signals.rnd import RNDReward
from trainers.settings import CuriositySettings, NetworkSettings, RNDSettings

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "reward_signal_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
CASES = sorted(RECORD["cases"])
RTOL = ATOL = 1e-5


def behavior(case: dict) -> BehaviorSpec:
    observations = [
        ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vector{i}")
        for i, n in enumerate(RECORD["obs_sizes"])
    ]
    return BehaviorSpec(observations, ActionSpec(case["continuous_size"], tuple(case["branches"])))


def build(case: dict) -> tuple[CuriosityReward | RNDReward, dict[str, torch.nn.Parameter]]:
    """Our signal with the case's settings and the fixture's weights; its parameters by the
    names the fixture uses."""
    network = NetworkSettings(
        hidden_units=RECORD["hidden_units"], num_layers=RECORD["num_layers"], normalize=case["normalize"]
    )
    strength, lr = RECORD["strength"], RECORD["learning_rate"]
    signal: CuriosityReward | RNDReward
    if case["signal"] == "curiosity":
        signal = CuriosityReward(
            behavior(case), CuriositySettings(strength=strength, learning_rate=lr, network_settings=network)
        )
        params = {f"network.{n}": p for n, p in signal.network.named_parameters()}
    else:
        signal = RNDReward(behavior(case), RNDSettings(strength=strength, learning_rate=lr, network_settings=network))
        params = {f"{m}.{n}": p for m in ("target", "predictor") for n, p in getattr(signal, m).named_parameters()}
        start_normalizers_like_mlagents(signal.target)
        start_normalizers_like_mlagents(signal.predictor)
    assert sorted(params) == sorted(case["parameters"][0])
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(torch.as_tensor(weight_values(name, tuple(param.shape))))
    return signal, params


def batch(case: dict) -> SignalBatch:
    obs = [torch.tensor(o, dtype=torch.float32) for o in case["inputs"]["obs"]]
    rows = RECORD["rows"]
    return SignalBatch(
        tuple(o[:rows] for o in obs),
        tuple(o[1:] for o in obs),
        torch.tensor(case["inputs"]["continuous_actions"], dtype=torch.float32).reshape(rows, -1),
        torch.tensor(case["inputs"]["discrete_actions"], dtype=torch.int64).reshape(rows, -1),
        torch.zeros(rows),
        None,
    )


def trajectory(case: dict) -> Trajectory:
    """The minibatch as one agent's consecutive steps: ``next_obs`` is what followed the last."""
    obs = [np.asarray(o, np.float32) for o in case["inputs"]["obs"]]
    rows = RECORD["rows"]
    continuous = np.asarray(case["inputs"]["continuous_actions"], np.float32).reshape(rows, -1)
    discrete = np.asarray(case["inputs"]["discrete_actions"], np.int32).reshape(rows, -1)
    return Trajectory(
        behavior_id="B",
        agent_id="agent_0-0",
        obs=tuple(o[:rows] for o in obs),
        next_obs=tuple(o[rows] for o in obs),
        rewards=np.zeros(rows, np.float32),
        done=np.zeros(rows, bool),
        interrupted=np.zeros(rows, bool),
        continuous_actions=continuous,
        discrete_actions=discrete,
        continuous_log_probs=np.zeros_like(continuous),
        discrete_log_probs=np.zeros(discrete.shape, np.float32),
        action_masks=np.ones((rows, sum(case["branches"])), bool),
        prev_continuous_actions=np.zeros_like(continuous),
        prev_discrete_actions=np.zeros_like(discrete),
        memories=np.zeros((rows, 0), np.float32),
    )


@pytest.mark.parametrize("name", CASES)
def test_rewards_losses_and_adam_steps_match_mlagents(name):
    case = RECORD["cases"][name]
    signal, params = build(case)
    minibatch, steps = batch(case), trajectory(case)
    # ML-Agents' evaluate() leaves strength to the trainer (curiosity's cap at 1 / strength
    # aside); ours returns the rewards with it.
    expected = np.asarray(case["rewards"], np.float64) * RECORD["strength"]
    np.testing.assert_allclose(signal.rewards(steps), expected[0], rtol=RTOL, atol=ATOL)
    for update in range(2):
        stats = signal.update(minibatch)
        assert_stats_match(stats, case["stats"][update], RTOL)
        assert_parameters_match(params, case["parameters"][update])
        np.testing.assert_allclose(signal.rewards(steps), expected[update + 1], rtol=RTOL, atol=ATOL)
    for encoder_name, recorded in case.get("normalizers", {}).items():
        encoder, _, index = encoder_name.rpartition(".inputs.")
        normalizer = getattr(signal, encoder).inputs[int(index)].normalizer
        np.testing.assert_allclose(normalizer.mean.numpy(), recorded["mean"], rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(normalizer.var.numpy(), recorded["var"], rtol=1e-6, atol=1e-6)
        assert float(normalizer.count) == recorded["count"]
