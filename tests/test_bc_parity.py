"""Behavioral cloning against ML-Agents 0.28's ``BCModule`` on a PPO actor: the same weights, the
same demonstrations, the same losses, learning rates and Adam steps (``bc_parity.json``, made by
``tests/fixtures/mlagents_0_28/make_bc_parity.py``).

The randomness is pinned as the script pins it: the demonstrations are the fixture's rows (no
``.demo`` file), each epoch's shuffle is the fixture's order of the original rows (ML-Agents
shuffles its buffer in place, so the script recorded the order its buffer ended up in), and the
continuous sampling noise is a fixed function of the draw's count and shape.
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

import trainers.reward_signals.behavioral_cloning
from tests.fixtures.mlagents_0_28.pinned_values import sampling_noise, weight_values
from tests.support.parity import assert_parameters_match, assert_stats_match
from trainers.files.demonstrations import Demonstrations
from trainers.networks.policy import TorchPolicy
from trainers.reward_signals.behavioral_cloning import BehavioralCloning
from trainers.settings import BehavioralCloningSettings, NetworkSettings

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "bc_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
RTOL = ATOL = 1e-5
CASES = sorted(RECORD["cases"])


def behavior(case: dict) -> BehaviorSpec:
    observations = [
        ObservationSpec((n,), (DimensionProperty.NONE,), ObservationType.DEFAULT, f"vector{i}")
        for i, n in enumerate(RECORD["obs_sizes"])
    ]
    return BehaviorSpec(observations, ActionSpec(case["continuous_size"], tuple(case["branches"])))


def demonstrations(case: dict) -> Demonstrations:
    """The case's rows, as ``training_demonstrations`` would return them."""
    data = case["demonstrations"]
    rows = len(data["dones"])
    return Demonstrations(
        behavior_name="B",
        files=("pinned.demo",),
        obs=tuple(np.asarray(o, np.float32) for o in data["obs"]),
        continuous_actions=np.asarray(data["continuous_actions"], np.float32).reshape(rows, case["continuous_size"]),
        discrete_actions=np.asarray(data["discrete_actions"], np.int32).reshape(rows, len(case["branches"])),
        action_masks=np.ones((rows, sum(case["branches"])), bool),
        rewards=np.zeros(rows, np.float32),
        done=np.asarray(data["dones"], bool),
        interrupted=np.zeros(rows, bool),
        number_steps=rows + 1,
        number_episodes=1,
        mean_reward=0.0,
    )


class Pinned:
    """The fixture's shuffles and noise in place of ``torch.randperm`` and ``torch.randn``."""

    def __init__(self, case: dict) -> None:
        self.orders = iter(case["orders"])
        self.noise_draws = 0

    def randperm(self, n: int, *_: Any, **__: Any) -> Tensor:
        order = next(self.orders)
        assert n == len(order)
        return torch.tensor(order)

    def randn(self, size: Any, *_: Any, **__: Any) -> Tensor:
        values = sampling_noise(self.noise_draws, tuple(size))
        self.noise_draws += 1
        return torch.as_tensor(values)


def build(case: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[BehavioralCloning, list[float], Pinned]:
    """Our cloning with the case's settings, the fixture's weights and demonstrations, the
    randomness pinned; the list the learning rate of every Adam step goes to; the pins."""
    monkeypatch.setattr(
        trainers.reward_signals.behavioral_cloning, "training_demonstrations", lambda *_, **__: demonstrations(case)
    )
    network = NetworkSettings(hidden_units=RECORD["hidden_units"], num_layers=RECORD["num_layers"])
    policy = TorchPolicy(behavior(case), network, seed=0)
    params = dict(policy.actor.named_parameters())
    assert sorted(params) == sorted(case["parameters"][0])
    with torch.no_grad():
        for name, param in params.items():
            param.copy_(torch.as_tensor(weight_values(name, tuple(param.shape))))
    settings = BehavioralCloningSettings(demo_path="pinned.demo", **case["settings"])
    cloning = BehavioralCloning(
        policy, settings, learning_rate=RECORD["learning_rate"], batch_size=RECORD["batch_size"], seed=0
    )
    rates: list[float] = []
    adam_step = cloning.optimizer.step

    def step(*args: Any, **kwargs: Any) -> Any:
        rates.append(float(cloning.optimizer.param_groups[0]["lr"]))
        return adam_step(*args, **kwargs)

    monkeypatch.setattr(cloning.optimizer, "step", step)
    pinned = Pinned(case)
    monkeypatch.setattr(torch, "randperm", pinned.randperm)
    monkeypatch.setattr(torch, "randn", pinned.randn)
    return cloning, rates, pinned


@pytest.mark.parametrize("name", CASES)
def test_losses_learning_rates_and_adam_steps_match_mlagents(name, monkeypatch):
    case = RECORD["cases"][name]
    cloning, rates, pinned = build(case, monkeypatch)
    params = dict(cloning.policy.actor.named_parameters())
    for update, trainer_step in enumerate(case["steps"]):
        before = len(rates)
        stats = cloning.update(trainer_step)
        assert_stats_match(stats, case["stats"][update], RTOL)
        ran = rates[before:]
        assert len(ran) == case["adam_steps"][update]
        if ran:
            np.testing.assert_allclose(ran, case["learning_rates"][update], rtol=1e-9)
        # the rate the next update runs at: ML-Agents' decayed rate takes effect from there
        assert cloning.learning_rate == pytest.approx(case["next_learning_rates"][update], rel=1e-9)
        assert_parameters_match(params, case["parameters"][update], rtol=RTOL, atol=ATOL)
    # as many shuffles and noise draws as ML-Agents made
    assert next(pinned.orders, None) is None
    assert pinned.noise_draws == case["noise_draws"]
