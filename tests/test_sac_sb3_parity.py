"""SAC with ``target_critic: q`` against Stable-Baselines3 2.9's own ``SAC.train``: from the same
weights, on the same minibatches, with the same sampling noise, five gradient steps leave every
parameter where SB3's leave them (``sac_parity.json``, made by
``tests/fixtures/stable_baselines3_2_9/make_sac_parity.py``; its docstring says what it records).

What it pins down, beyond the formulas ``tests/test_sac_target_q.py`` writes out: SB3's order.
The entropy coefficient and the critic step first, and the policy's loss takes the stepped Q
networks, with the coefficient as the step began. ML-Agents' single step of all three, kept for
``target_critic: value``, ends the actor 9e-5 away instead of 5e-7 (``test_mlagents_order_differs``;
the learning rate is 3e-3, ten times SB3's default, so that the order shows in five steps).

One difference stays, below this test's tolerance: SB3 takes the tanh correction as
``log(1 - tanh(u)^2 + 1e-6)``, agents-learn (as ML-Agents) exactly. It matters only where an action
saturates (``|u|`` past about 5); the recorded noise keeps ``|u|`` below that.

Weights map by position: SB3's ``latent_pi`` is the actor's body, ``mu`` and ``log_std`` its
heads; each ``qf<i>`` takes ``[observation, action]``, whose first layer is our Q network's
observation columns and ``action_weights``; ``critic_target`` the target Q networks.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor

from stats import StatsReporter, tags
from tests.test_sac_trainer import SPECS
from trainers.sac.algorithm import SAC
from trainers.sac.replay_buffer import ReplayBatch
from trainers.settings import (
    Activation,
    ExtrinsicSettings,
    NetworkSettings,
    RewardSignalType,
    SACSettings,
    ScheduleType,
    TargetCritic,
    TrainerSettings,
)

FIXTURE = Path(__file__).parent / "fixtures" / "stable_baselines3_2_9" / "sac_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
SETTINGS = RECORD["settings"]
OBSERVATION_SIZE = 3
TOLERANCE = 2e-6  # parameters move up to 3e-3 a step; SB3's order lands within 5e-7


def sb3_like_sac() -> SAC:
    """Our SAC with SB3's settings and starting weights."""
    settings = TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(
            batch_size=len(RECORD["batches"][0]["dones"]),
            buffer_size=100,
            buffer_init_steps=0,
            learning_rate=SETTINGS["learning_rate"],
            learning_rate_schedule=ScheduleType.CONSTANT,
            tau=SETTINGS["tau"],
            init_entcoef=1.0,
            target_critic=TargetCritic.Q,
        ),
        network_settings=NetworkSettings(
            hidden_units=SETTINGS["hidden_units"],
            num_layers=SETTINGS["num_layers"],
            normalize=False,
            activation=Activation.RELU,
        ),
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=SETTINGS["gamma"])},
        max_steps=1000,
    )
    sac = SAC(
        behavior_name="B",
        behavior_spec=SPECS["continuous"],
        settings=settings,
        stats_reporter=StatsReporter("B"),
        seed=0,
    )
    assert sac.continuous_target == SETTINGS["target_entropy"]
    with torch.no_grad():
        for param, value in zip(ours(sac).values(), sb3_values(RECORD["before"]).values(), strict=True):
            param.copy_(value)
    return sac


def ours(sac: SAC) -> dict[str, Tensor]:
    """Every tensor SB3 trains or follows, in :func:`sb3_values`' order."""
    assert sac.q_targets is not None
    named: dict[str, Tensor] = {f"actor.{k}": v for k, v in sac.policy.actor.named_parameters()}
    for prefix, network in {
        "q1": sac.q1,
        "q2": sac.q2,
        "q1_target": sac.q_targets[0],
        "q2_target": sac.q_targets[1],
    }.items():
        parameters = dict(network.named_parameters())
        for name in ("encoder.body.layers.0.weight", "action_weights", "encoder.body.layers.0.bias"):
            named[f"{prefix}.{name}"] = parameters[name]
        for name in ("encoder.body.layers.1.weight", "encoder.body.layers.1.bias", "heads.weight", "heads.bias"):
            named[f"{prefix}.{name}"] = parameters[name]
        assert len(parameters) == 7
    named["continuous_log_alpha"] = sac.continuous_log_alpha
    return named


def sb3_values(weights: dict[str, Any]) -> dict[str, Tensor]:
    """SB3's recorded weights under our names (see the module docstring)."""
    values = {
        "actor.encoder.body.layers.0.weight": weights["actor.latent_pi.0.weight"],
        "actor.encoder.body.layers.0.bias": weights["actor.latent_pi.0.bias"],
        "actor.encoder.body.layers.1.weight": weights["actor.latent_pi.2.weight"],
        "actor.encoder.body.layers.1.bias": weights["actor.latent_pi.2.bias"],
        "actor.mean_head.weight": weights["actor.mu.weight"],
        "actor.mean_head.bias": weights["actor.mu.bias"],
        "actor.log_std_head.weight": weights["actor.log_std.weight"],
        "actor.log_std_head.bias": weights["actor.log_std.bias"],
    }
    for prefix, source in {
        "q1": "critic.qf0",
        "q2": "critic.qf1",
        "q1_target": "critic_target.qf0",
        "q2_target": "critic_target.qf1",
    }.items():
        first = torch.tensor(weights[f"{source}.0.weight"])
        values[f"{prefix}.encoder.body.layers.0.weight"] = first[:, :OBSERVATION_SIZE]
        values[f"{prefix}.action_weights"] = first[:, OBSERVATION_SIZE:]
        values[f"{prefix}.encoder.body.layers.0.bias"] = weights[f"{source}.0.bias"]
        values[f"{prefix}.encoder.body.layers.1.weight"] = weights[f"{source}.2.weight"]
        values[f"{prefix}.encoder.body.layers.1.bias"] = weights[f"{source}.2.bias"]
        values[f"{prefix}.heads.weight"] = weights[f"{source}.4.weight"]
        values[f"{prefix}.heads.bias"] = weights[f"{source}.4.bias"]
    values["continuous_log_alpha"] = weights["log_ent_coef"]
    return {name: torch.as_tensor(value, dtype=torch.float32) for name, value in values.items()}


def replay_batch(recorded: dict[str, Any]) -> ReplayBatch:
    rows = len(recorded["dones"])
    return ReplayBatch(
        obs=(torch.tensor(recorded["obs"], dtype=torch.float32),),
        next_obs=(torch.tensor(recorded["next_obs"], dtype=torch.float32),),
        action_masks=torch.ones((rows, 0), dtype=torch.bool),
        continuous_actions=torch.tensor(recorded["actions"], dtype=torch.float32),
        discrete_actions=torch.zeros((rows, 0), dtype=torch.int64),
        rewards=torch.tensor(recorded["rewards"], dtype=torch.float32)[:, None],
        dones=torch.tensor(recorded["dones"], dtype=torch.float32),
        loss_masks=None,
        memories=torch.zeros((rows, 0)),
        critic_memories=torch.zeros((rows, 0)),
    )


def recorded_steps(sac: SAC, monkeypatch: pytest.MonkeyPatch) -> dict[str, float]:
    """One update of SB3's gradient steps, each on its recorded minibatch and noise."""
    batches = [replay_batch(b) for b in RECORD["batches"]]
    draws = [torch.tensor(n, dtype=torch.float32) for n in RECORD["noise"]]
    monkeypatch.setattr(sac.replay, "sample", lambda batch_size, generator: batches.pop(0))
    monkeypatch.setattr(sac, "updates_due", lambda: len(batches))
    monkeypatch.setattr(sac, "signal_updates_due", lambda: 0)
    monkeypatch.setattr(torch, "randn", lambda *args, **kwargs: draws.pop(0))
    stats = sac.update(step=100)
    assert not batches and not draws
    return stats


def test_gradient_steps_match_stable_baselines3(monkeypatch):
    sac = sb3_like_sac()
    stats = recorded_steps(sac, monkeypatch)
    expected = sb3_values(RECORD["after"])
    for name, param in ours(sac).items():
        torch.testing.assert_close(param.detach(), expected[name], rtol=0, atol=TOLERANCE, msg=name)
    # SB3 logs each loss's mean over the steps; its critic loss is the two Q losses' sum
    logged = RECORD["logged"]
    assert stats[tags.POLICY_LOSS] == pytest.approx(logged["train/actor_loss"], rel=1e-5)
    assert stats[tags.Q1_LOSS] + stats[tags.Q2_LOSS] == pytest.approx(logged["train/critic_loss"], rel=1e-5)


def test_mlagents_order_differs(monkeypatch):
    # the control: the same step with the policy's loss on the critic as it was, as ML-Agents
    # steps, leaves the actor measurably away from SB3's
    sac = sb3_like_sac()
    monkeypatch.setattr(sac, "_critic_steps_first", False)
    recorded_steps(sac, monkeypatch)
    expected = sb3_values(RECORD["after"])
    actual = ours(sac)
    actor_gap = max(float((actual[n].detach() - expected[n]).abs().max()) for n in expected if n.startswith("actor."))
    assert actor_gap > 20 * TOLERANCE
