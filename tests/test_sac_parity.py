"""SAC's gradient step against ML-Agents 0.28's ``TorchSACOptimizer.update``: the same weights, the
same minibatch, the same sampling noise give the same losses, entropy coefficients, learning rate
and parameters after two Adam steps and soft updates (``sac_parity.json``, made by
``tests/fixtures/mlagents_0_28/make_sac_parity.py``), for continuous (3 dimensions), hybrid and
discrete actions, with ``normalize`` and with memory, with an extrinsic stream and a curiosity
one (``ignore_done``: its Q target bootstraps through an episode's end, as ML-Agents'
``use_dones_in_backup``).

The recurrent cases (2 sequences of 3, the actor's and the value network's memories as
stored) match too, but for the one deliberate difference: a padding row (``recurrent_padded``)
is left out of the Q and value losses here, averaged into them by ML-Agents.

The minibatch is handed to :meth:`SAC.update` as the replay buffer's sample, with its rewards
as recorded (ML-Agents' optimizer takes them from the minibatch: the trainer rewarded it before).
ML-Agents reports an entropy coefficient for a kind of action the behavior lacks (the discrete
one as NaN, the continuous one unchanged); agents-learn reports only those it trains.
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

from stats import StatsReporter
from tests.fixtures.mlagents_0_28.pinned_values import sampling_noise, weight_values
from tests.support.parity import (
    assert_normalizer_matches,
    assert_parameters_match,
    assert_stats_match,
    start_normalizers_like_mlagents,
)
from trainers.sac.algorithm import SAC
from trainers.sac.replay_buffer import ReplayBatch
from trainers.settings import (
    CuriositySettings,
    ExtrinsicSettings,
    MemorySettings,
    NetworkSettings,
    RewardSignalType,
    SACSettings,
    ScheduleType,
    TrainerSettings,
)

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "sac_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
RTOL = ATOL = 1e-5
CASES = sorted(RECORD["cases"])


def settings(case: dict[str, Any]) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(
            batch_size=len(case["batch"]["done"]),
            buffer_size=100,
            buffer_init_steps=0,
            learning_rate=RECORD["learning_rate"],
            learning_rate_schedule=ScheduleType.LINEAR,
            tau=RECORD["tau"],
            init_entcoef=RECORD["init_entcoef"],
        ),
        network_settings=NetworkSettings(
            hidden_units=RECORD["hidden_units"],
            num_layers=RECORD["num_layers"],
            normalize=case["normalize"],
            memory=MemorySettings(sequence_length=case["sequence_length"], memory_size=case["memory_size"])
            if case["memory_size"]
            else None,
        ),
        reward_signals={
            RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=RECORD["gammas"]["extrinsic"]),
            RewardSignalType.CURIOSITY: CuriositySettings(gamma=RECORD["gammas"]["curiosity"], strength=0.1),
        },
        max_steps=RECORD["max_steps"],
        time_horizon=64,
    )


def behavior(case: dict[str, Any]) -> BehaviorSpec:
    observation = ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")
    return BehaviorSpec([observation], ActionSpec(case["continuous_size"], tuple(case["branches"])))


def replay_batch(case: dict[str, Any]) -> ReplayBatch:
    data = case["batch"]
    rows = len(data["done"])
    return ReplayBatch(
        obs=(torch.tensor(data["obs"], dtype=torch.float32),),
        next_obs=(torch.tensor(data["next_obs"], dtype=torch.float32),),
        action_masks=torch.tensor(data["action_masks"]).reshape(rows, -1) == 1,
        continuous_actions=torch.tensor(data["continuous_actions"], dtype=torch.float32).reshape(rows, -1),
        discrete_actions=torch.tensor(data["discrete_actions"], dtype=torch.int64).reshape(rows, -1),
        rewards=torch.tensor([data["rewards"][s] for s in RECORD["streams"]], dtype=torch.float32).T.contiguous(),
        dones=torch.tensor(data["done"], dtype=torch.float32),
        loss_masks=torch.tensor(data["loss_masks"]) == 1 if case["memory_size"] else None,
        memories=torch.tensor(data.get("memories", np.zeros((rows, 0))), dtype=torch.float32),
        critic_memories=torch.tensor(data.get("critic_memories", np.zeros((rows, 0))), dtype=torch.float32),
    )


class PinnedNoise:
    """The fixture's continuous sampling noise in place of ``torch.randn``."""

    def __init__(self) -> None:
        self.draws = 0

    def randn(self, size: Any, *_: Any, **__: Any) -> Tensor:
        values = sampling_noise(self.draws, tuple(size))
        self.draws += 1
        return torch.as_tensor(values)


def pinned_sac(case: dict[str, Any], batch: ReplayBatch, monkeypatch: pytest.MonkeyPatch) -> SAC:
    """Our SAC with the script's weights, its update fed ``batch`` once per call, rewards as recorded."""
    sac = SAC(
        behavior_name="B",
        behavior_spec=behavior(case),
        settings=settings(case),
        stats_reporter=StatsReporter("B"),
        seed=0,
    )
    assert [signal.name for signal in sac.reward_signals] == RECORD["streams"]
    networks = {"": sac.policy.actor, "q1.": sac.q1, "q2.": sac.q2, "value.": sac.value}
    with torch.no_grad():
        for prefix, network in networks.items():
            for name, param in network.named_parameters():
                param.copy_(torch.as_tensor(weight_values(prefix + name, tuple(param.shape))))
        sac.target_value.load_state_dict(sac.value.state_dict())
    start_normalizers_like_mlagents(sac.policy.actor)
    sac.policy.update_normalization([batch.obs[0].numpy()])  # once, as the script did (no-op without)
    curiosity = sac.reward_signals[1]
    monkeypatch.setattr(curiosity, "evaluate", lambda signal_batch: batch.rewards[:, 1])
    monkeypatch.setattr(sac, "updates_due", lambda: 1)
    monkeypatch.setattr(sac, "signal_updates_due", lambda: 0)
    monkeypatch.setattr(sac.replay, "sample", lambda batch_size, generator: batch)
    return sac


def parameters(sac: SAC) -> dict[str, Tensor]:
    """Every trained tensor under the fixture's names."""
    named = dict(sac.policy.actor.named_parameters())
    for prefix, network in {
        "q1.": sac.q1,
        "q2.": sac.q2,
        "value.": sac.value,
        "target_value.": sac.target_value,
    }.items():
        named.update({prefix + name: param for name, param in network.named_parameters()})
    named["continuous_log_alpha"] = sac.continuous_log_alpha
    named["discrete_log_alphas"] = sac.discrete_log_alphas
    return named


@pytest.mark.parametrize("name", [name for name in CASES if not name.endswith("_padded")])
def test_gradient_steps_match_mlagents(name, monkeypatch):
    case = RECORD["cases"][name]
    batch = replay_batch(case)
    sac = pinned_sac(case, batch, monkeypatch)
    noise = PinnedNoise()
    monkeypatch.setattr(torch, "randn", noise.randn)
    for recorded in case["stats"]:
        stats = sac.update(RECORD["step"])
        assert stats.keys() <= recorded.keys()
        assert_stats_match(stats, {tag: recorded[tag] for tag in stats}, RTOL)
    assert noise.draws == case["noise_draws"]
    assert_parameters_match(parameters(sac), case["parameters"], rtol=RTOL, atol=ATOL)
    if case["normalize"]:
        assert_normalizer_matches(sac.policy.actor.encoder.inputs[0].normalizer, case["normalizer"])


def test_padding_rows_are_left_out_of_the_q_and_value_losses_only(monkeypatch):
    # ML-Agents' ModelUtils.masked_mean of an mse_loss that already averaged every row counts the
    # padding in; ours leaves it out (docs/coming-from-mlagents.md, benchmarks/sac_recurrent_padding.json)
    case = RECORD["cases"]["recurrent_padded"]
    batch = replay_batch(case)
    assert not bool(batch.loss_masks.all())
    sac = pinned_sac(case, batch, monkeypatch)
    monkeypatch.setattr(torch, "randn", PinnedNoise().randn)
    stats, recorded = sac.update(RECORD["step"]), case["stats"][0]
    same = {tag for tag in stats if "Loss" not in tag} | {"Losses/Policy Loss"}
    assert_stats_match({tag: stats[tag] for tag in same}, {tag: recorded[tag] for tag in same}, RTOL)
    for tag in ("Losses/Q1 Loss", "Losses/Q2 Loss", "Losses/Value Loss"):
        assert stats[tag] != pytest.approx(recorded[tag], rel=0.01), tag
