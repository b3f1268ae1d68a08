"""PPO's data path against ML-Agents 0.28: trajectory -> value estimates -> GAE and lambda
returns -> buffer -> advantage normalisation -> minibatch updates, from the same weights and the
same trajectories (``ppo_parity.json``, made by
``tests/fixtures/mlagents_0_28/make_ppo_parity.py`` with ML-Agents' own
``PPOTrainer._process_trajectory`` and ``_update_policy``; its docstring says what it records).

The behavior: a vector observation of size 3 (case ``normalized`` normalises it), 2 continuous
actions and discrete branches (3, 2), hidden 16 x 2, two reward streams (``extrinsic`` gamma
0.99, and ``curiosity`` gamma 0.9 with its rewards pinned: its network is checked elsewhere;
what matters here is a second stream with its own gamma and ``ignore_done``), linear schedules.
Four trajectories of three agents: cut by the time horizon, interrupted at max step (with a
group reward and a masked action), truly terminated (extrinsic not bootstrapped, curiosity
bootstrapped), cut again; then one update of 2 epochs of minibatches of 4 over the 14 rows (the
last 2 left out), each epoch in buffer order (``torch.randperm`` made the identity here, as the
script makes ML-Agents' shuffle), at step 400 of 1000.

Checked: per trajectory each stream's rewards, values, bootstrap value, lambda returns and
advantages; the stats ``_process_trajectory`` reports; per minibatch the normalised advantages
and the returns trained on, every total loss minimised, the update's stats and schedules, every
parameter after the 6 Adam steps, the normalisers.

ML-Agents buffers the mean of the streams' advantages, agents-learn their sum (S times the
mean, checked as such): the buffer-wide normalisation before the update makes them the same
advantages, compared minibatch by minibatch. ML-Agents 0.28 stores the old value estimates
under the returns' key, so its value loss is the unclipped one agents-learn trains with
(``trainers.ppo.maths.value_loss``).

``Policy/<Stream> Value Estimate`` is one mean per trajectory, as ML-Agents reports it (this
test found agents-learn reporting every step's estimate, which weighed long trajectories more).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import trainers.ppo.algorithm
from stats import StatsReporter
from tests.support import parity
from tests.support.parity import assert_normalizers_match, assert_parameters_match, assert_stats_match
from trainers.ppo.algorithm import PPO
from trainers.ppo.buffer import PPOBatch
from trainers.ppo.maths import gae
from trainers.settings import PPOSettings, ScheduleType

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "ppo_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
RTOL = ATOL = 1e-5
CASES = sorted(RECORD["cases"])
STREAMS: list[str] = RECORD["streams"]
VALUE_TAGS = [f"Policy/{s.capitalize()} Value Estimate" for s in STREAMS]


def build(normalize: bool) -> PPO:
    """Our PPO with the fixture's settings and weights, its normalisers started where
    ML-Agents' start, the curiosity stream's training switched off (as the script's)."""
    settings = parity.recorded_trainer_settings(
        RECORD,
        "ppo",
        PPOSettings,
        batch_size=RECORD["batch_size"],
        buffer_size=RECORD["buffer_size"],
        num_epoch=RECORD["num_epoch"],
        schedule=ScheduleType.LINEAR,
        max_steps=RECORD["max_steps"],
        normalize=normalize,
    )
    behavior = parity.recorded_behavior(RECORD)
    ppo = PPO(behavior_name="B", behavior_spec=behavior, settings=settings, stats_reporter=StatsReporter("B"))
    parity.pin_as_recorded(ppo, STREAMS)
    return ppo


def assert_close(ours: Any, expected: Any, what: str) -> None:
    np.testing.assert_allclose(
        np.asarray(ours, np.float64), np.asarray(expected, np.float64), rtol=RTOL, atol=ATOL, err_msg=what
    )


def add_trajectories(
    ppo: PPO, name: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict[str, Any]], dict[str, list[float]]]:
    """The case's trajectories through ``PPO.add``: per trajectory what it computed, and the
    stats it reported, per tag in order."""
    emitted = parity.record_stats(ppo)
    calls: list[dict[str, Any]] = []  # what each stream's GAE got and gave (the buffer keeps the sum)

    def recording_gae(
        rewards: np.ndarray, values: np.ndarray, next_value: float, terminated: bool, *args: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        advantages, returns = gae(rewards, values, next_value, terminated, *args)
        bootstrap = 0.0 if terminated else float(next_value)
        calls.append({"values": np.array(values), "bootstrap": bootstrap, "advantages": advantages})
        return advantages, returns

    monkeypatch.setattr(trainers.ppo.algorithm, "gae", recording_gae)
    results = []
    for data in RECORD["cases"][name]["trajectories"]:
        calls.clear()
        parity.pin_curiosity_rewards(ppo, data, RECORD, monkeypatch)
        # in a group where it has a group reward (PPO adds it to the extrinsic reward)
        item = parity.recorded_trajectory(data, RECORD, group_id=1 if any(data["group_rewards"]) else 0)
        start = len(ppo.buffer)
        ppo.add(item)
        rows = slice(start, len(ppo.buffer))
        arrays = ppo.buffer._arrays
        results.append(
            {
                "data": data,
                "rewards": [signal.rewards(item) for signal in ppo.reward_signals],
                "gae": list(calls),
                "returns": arrays.returns[rows].copy(),
                "advantages": arrays.advantages[rows].copy(),
            }
        )
    return results, emitted


@pytest.mark.parametrize("name", CASES)
def test_trajectory_targets_match_mlagents_process_trajectory(name, monkeypatch):
    """Rewards (the group reward added to the extrinsic one), values, the bootstrap value (none
    for extrinsic after a true terminal; curiosity always), lambda returns and advantages per
    stream, and the buffered advantage: our sum of the streams' is S times ML-Agents' mean."""
    results, _ = add_trajectories(build(RECORD["cases"][name]["normalize"]), name, monkeypatch)
    for result in results:
        expected = result["data"]["expected"]
        who = result["data"]["agent_id"]
        assert len(result["gae"]) == len(STREAMS)
        for i, stream in enumerate(STREAMS):
            recorded, call = expected[stream], result["gae"][i]
            assert_close(result["rewards"][i], recorded["rewards"], f"{who} {stream} rewards")
            assert_close(call["values"], recorded["values"], f"{who} {stream} values")
            assert_close(call["bootstrap"], recorded["value_next"], f"{who} {stream} bootstrap value")
            assert_close(result["returns"][:, i], recorded["returns"], f"{who} {stream} returns")
            assert_close(call["advantages"], recorded["advantages"], f"{who} {stream} advantages")
        assert_close(result["advantages"], len(STREAMS) * np.asarray(expected["advantages"]), f"{who} advantages")


@pytest.mark.parametrize("name", CASES)
def test_episode_reward_stats_match_mlagents(name, monkeypatch):
    """The tags ``_process_trajectory`` reports, and each signal's reward summed over an
    agent's episode (across its trajectories), reported when the episode ends."""
    _, emitted = add_trajectories(build(RECORD["cases"][name]["normalize"]), name, monkeypatch)
    recorded = RECORD["cases"][name]["stats"]
    assert emitted.keys() == recorded.keys()
    for tag in (f"Policy/{s.capitalize()} Reward" for s in STREAMS):
        assert_close(emitted[tag], recorded[tag], tag)


@pytest.mark.parametrize("name", CASES)
def test_value_estimate_stats_are_one_mean_per_trajectory_as_mlagents(name, monkeypatch):
    """``Policy/<Stream> Value Estimate``: one value per trajectory, the mean of its estimates,
    so a summary weighs trajectories equally whatever their length, as ML-Agents' does."""
    _, emitted = add_trajectories(build(RECORD["cases"][name]["normalize"]), name, monkeypatch)
    recorded = RECORD["cases"][name]["stats"]
    for tag in VALUE_TAGS:
        assert_close(emitted[tag], recorded[tag], tag)


@pytest.mark.parametrize("name", CASES)
def test_update_matches_mlagents_update_policy(name, monkeypatch):
    """The buffer of those trajectories, advantages normalised over it, 2 epochs of 3
    minibatches of 4 in buffer order (2 rows left out), at step 400 of 1000 on linear
    schedules: per minibatch the advantages and returns, every loss minimised, the stats, the
    schedules, the 6 Adam steps and the normalisers as ML-Agents' ``_update_policy``."""
    case = RECORD["cases"][name]
    recorded = case["update"]
    ppo = build(case["normalize"])
    add_trajectories(ppo, name, monkeypatch)
    assert len(ppo.buffer) == recorded["rows"]
    monkeypatch.setattr(torch, "randperm", lambda n, *_, **__: torch.arange(n))
    losses = ppo.losses
    totals: list[float] = []
    minibatches: list[PPOBatch] = []

    def recording_losses(batch: PPOBatch, beta: float, epsilon: float) -> tuple[torch.Tensor, ...]:
        result = losses(batch, beta, epsilon)
        minibatches.append(batch)
        totals.append(float(result[2].detach()))
        return result

    monkeypatch.setattr(ppo, "losses", recording_losses)
    step = recorded["step"]
    schedules = recorded["schedules"]
    assert ppo.schedules(step) == pytest.approx(
        (schedules["learning_rate"], schedules["beta"], schedules["epsilon"]), rel=1e-12, abs=1e-15
    )
    stats = ppo.update(step)

    rows, batch_size = recorded["rows"], RECORD["batch_size"]
    assert len(minibatches) == len(recorded["minibatches"]) == RECORD["num_epoch"] * (rows // batch_size)
    for i, (ours, theirs) in enumerate(zip(minibatches, recorded["minibatches"])):
        assert_close(ours.advantages.numpy(), theirs["advantages"], f"minibatch {i} advantages")
        for s, stream in enumerate(STREAMS):
            assert_close(ours.returns[:, s].numpy(), theirs["returns"][stream], f"minibatch {i} {stream} returns")
    assert_close(totals, recorded["total_losses"], "total losses")
    assert_stats_match(stats, recorded["stats"], RTOL)
    for module, sampled in ((ppo.policy.actor, recorded["actor"]), (ppo.critic, recorded["critic"])):
        params = dict(module.named_parameters())
        assert params.keys() == sampled.keys()
        assert_parameters_match(params, sampled)
    assert_normalizers_match(case.get("normalizers", {}), ppo.policy.actor.encoder, ppo.critic.encoder)
