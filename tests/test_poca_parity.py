"""MA-POCA against ML-Agents 0.28: the same weights and inputs, the same critic values and
baselines, losses, Adam steps, per-trajectory targets, reported stats and update
(``poca_parity.json``, made by ``tests/fixtures/mlagents_0_28/make_poca_parity.py``, which says
what each case holds).

The behavior: a vector observation of size 3 (case ``visual`` adds a 20x20x1 visual one, case
``normalized`` normalises), 2 continuous actions and discrete branches (3, 2), hidden 16 x 2
layers, groups of 3 with absent mates, two reward streams (``extrinsic``, and ``curiosity`` with
its rewards pinned: its network is checked elsewhere; what matters here is a second stream with
its own gamma and ``ignore_done``).

ML-Agents 0.28's ``RewardSignalUtil.value_estimates_key`` is its ``returns_key``: the old value
estimates its update reads are the returns, which makes its value loss the unclipped squared
error (the baseline loss is clipped around the old baselines, a field of its own). agents-learn
trains with that same loss (``trainers.ppo.maths.value_loss``), so the update tests compare our
own update, every minibatch, with ML-Agents'.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import trainers.poca.algorithm
from processors.groups import Groupmates
from processors.trajectory import Trajectory
from stats import StatsReporter
from tests.support import parity
from tests.support.parity import assert_normalizers_match, assert_parameters_match, assert_stats_match
from trainers.poca.algorithm import POCA
from trainers.poca.buffer import POCABatch
from trainers.poca.networks import GroupObservations
from trainers.ppo.buffer import PPOBatch
from trainers.ppo.maths import gae
from trainers.settings import POCASettings, ScheduleType

FIXTURE = Path(__file__).parent / "fixtures" / "mlagents_0_28" / "poca_parity.json"
RECORD = json.loads(FIXTURE.read_text(encoding="utf-8"))
RTOL = ATOL = 1e-5
CASES = sorted(RECORD["cases"])
WITH = {
    part: [name for name in CASES if part in RECORD["cases"][name]] for part in ("critic", "update", "trajectories")
}
STREAMS = RECORD["streams"]


def build(visual: bool, *, normalize: bool = False, batch_size: int = 8, num_epoch: int = 1) -> POCA:
    """Our POCA with the fixture's settings and weights (a fresh critic: max_members 1), its
    normalisers started where ML-Agents' start, the curiosity stream's training switched off."""
    settings = parity.recorded_trainer_settings(
        RECORD,
        "poca",
        POCASettings,
        batch_size=batch_size,
        buffer_size=batch_size,
        num_epoch=num_epoch,
        schedule=ScheduleType.CONSTANT,
        max_steps=100000,
        normalize=normalize,
    )
    behavior = parity.recorded_behavior(RECORD, visual)
    poca = POCA(behavior_name="B", behavior_spec=behavior, settings=settings, stats_reporter=StatsReporter("B"))
    parity.pin_as_recorded(poca, STREAMS)
    assert float(poca.critic.max_members) == 1.0
    return poca


def f32(values: Any) -> torch.Tensor:
    return torch.as_tensor(np.asarray(values, np.float32))


def group(inputs: dict) -> tuple[list[torch.Tensor], GroupObservations]:
    """Own observations and the mates as the fixture's inputs hold them (absent: zeros)."""
    own = [f32(o) for o in inputs["obs"]]
    mates = GroupObservations(
        [f32(o) for o in inputs["mate_obs"]],
        torch.as_tensor(np.asarray(inputs["present"], bool)),
        f32(inputs["mate_continuous"]),
        torch.as_tensor(np.asarray(inputs["mate_discrete"], np.int64)),
    )
    return own, mates


# The attention's key bias has no gradient in exact arithmetic (it adds the same q.b to every
# logit of a query, which the softmax ignores): what it gets is float noise (about 1e-10), which
# Adam divides by sqrt(v) + 1e-8, so its steps (about 1e-4 each at this learning rate, against
# 3e-3 for the others) are the noise of each implementation's summation order: held to a
# quarter of the learning rate per step, every other parameter to 1e-6.
NOISE_ONLY = "attention.fc_k.bias"


def assert_adam_steps_match(module: torch.nn.Module, recorded: dict, steps: int = 1) -> None:
    params = dict(module.named_parameters())
    assert {name for name, param in params.items() if param.requires_grad} == recorded.keys()
    assert_parameters_match(params, {k: v for k, v in recorded.items() if k != NOISE_ONLY})
    if NOISE_ONLY in recorded:
        noise = 0.25 * steps * RECORD["learning_rate"]
        assert_parameters_match(params, {NOISE_ONLY: recorded[NOISE_ONLY]}, atol=noise)


def assert_close(ours: Any, expected: Any, what: str) -> None:
    np.testing.assert_allclose(
        np.asarray(ours, np.float64), np.asarray(expected, np.float64), rtol=RTOL, atol=ATOL, err_msg=what
    )


# ---------------------------------------------------------------------- 1. critic


@pytest.mark.parametrize("name", WITH["critic"])
def test_values_and_baselines_match_mlagents_with_absent_mates_and_member_scaling(name):
    case = RECORD["cases"][name]
    critic = build(case["visual"]).critic
    for i, call in enumerate(case["critic"]["calls"]):
        own, mates = group(call["inputs"])
        with torch.no_grad():
            out = critic.values(own, mates) if call["kind"] == "values" else critic.baselines(own, mates)
        for stream in STREAMS:
            assert_close(out[stream].numpy(), call["output"][stream], f"call {i} {call['kind']} {stream}")
        assert float(critic.max_members) == call["max_agents"], i


# ---------------------------------------------------------------------- 2. one update


def update_batch(update: dict) -> POCABatch:
    own, mates = group(update["inputs"])
    rows = len(update["advantages"])

    def columns(per_stream: dict[str, list[float]]) -> torch.Tensor:
        return f32(np.stack([per_stream[s] for s in STREAMS], axis=1))

    agent = PPOBatch(
        obs=tuple(own),
        action_masks=torch.as_tensor(np.asarray(update["action_masks"]) == 1),
        continuous_actions=f32(update["continuous_actions"]),
        discrete_actions=torch.as_tensor(np.asarray(update["discrete_actions"], np.int64)),
        old_log_probs=f32(update["old_log_probs"]),
        advantages=f32(update["advantages"]),
        returns=columns(update["returns"]),
        loss_masks=None,
        memories=torch.zeros((rows, 0)),
        critic_memories=torch.zeros((rows, 0)),
        next_obs=(),
        dones=torch.zeros(rows),
    )
    return POCABatch(
        agent=agent,
        old_baselines=columns(update["old_baselines"]),
        baseline_memories=torch.zeros((rows, 0)),
        group=mates,
    )


@pytest.mark.parametrize("name", WITH["update"])
def test_losses_and_adam_step_match_mlagents_update(name):
    case = RECORD["cases"][name]
    update = case["update"]
    poca = build(case["visual"])
    # ML-Agents' update reads its returns as the old values (see the module docstring): its
    # value loss is the unclipped one we train with
    batch = update_batch(update)
    policy_loss, value_loss, baseline_loss, loss = poca.losses(batch, RECORD["beta"], RECORD["epsilon"])
    policy_loss, value_loss, baseline_loss = policy_loss.detach(), value_loss.detach(), baseline_loss.detach()
    assert float(poca.critic.max_members) == update["max_agents"]
    stats = update["stats"]
    assert abs(float(policy_loss)) == pytest.approx(stats["Losses/Policy Loss"], rel=RTOL, abs=ATOL)
    assert float(value_loss) == pytest.approx(stats["Losses/Value Loss"], rel=RTOL, abs=ATOL)
    assert float(baseline_loss) == pytest.approx(stats["Losses/Baseline Loss"], rel=RTOL, abs=ATOL)
    assert float(loss.detach()) == pytest.approx(update["total_loss"], rel=RTOL, abs=ATOL)
    poca.optimizer.zero_grad(set_to_none=True)
    loss.backward()
    poca.optimizer.step()
    assert_adam_steps_match(poca.policy.actor, update["actor"])
    assert_adam_steps_match(poca.critic, update["critic"])


# ---------------------------------------------------------------------- 3. trajectories


def trajectory(data: dict) -> Trajectory:
    """The recorded trajectory, with its mates where it is in a group."""
    mates = None
    if data["grouped"]:
        mates = Groupmates(
            present=np.asarray(data["present"], bool),
            obs=(np.asarray(data["mate_obs"], np.float32),),
            continuous_actions=np.asarray(data["mate_continuous"], np.float32),
            discrete_actions=np.asarray(data["mate_discrete"], np.int32),
            rewards=np.asarray(data["mate_rewards"], np.float32),
            done=np.asarray(data["mate_done"], bool),
            next_obs=(np.asarray(data["next_mate_obs"], np.float32),),
        )
    return parity.recorded_trajectory(data, RECORD, group_id=1 if data["grouped"] else 0, groupmates=mates)


def add_trajectories(
    poca: POCA, name: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[list[dict], dict[str, list[float]]]:
    """Each of the case's trajectories through ``POCA.add``: per trajectory, ours beside
    ML-Agents'; and the stats ``add`` reported, per tag in order."""
    emitted = parity.record_stats(poca)
    results = []
    # the value estimates each stream's returns are computed from (the buffer keeps only returns)
    estimates: list[np.ndarray] = []

    def recording_gae(rewards: np.ndarray, values: np.ndarray, *args: Any) -> tuple[np.ndarray, np.ndarray]:
        estimates.append(np.asarray(values, np.float32).copy())
        return gae(rewards, values, *args)

    monkeypatch.setattr(trainers.poca.algorithm, "gae", recording_gae)
    for data in RECORD["cases"][name]["trajectories"]["trajectories"]:
        estimates.clear()
        parity.pin_curiosity_rewards(poca, data, RECORD, monkeypatch)
        item = trajectory(data)
        assert item.all_group_dones_reached == data["all_group_dones_reached"]
        start = len(poca.buffer)
        poca.add(item)
        rows = slice(start, len(poca.buffer))
        arrays = poca.buffer.agent._arrays
        results.append(
            {
                "data": data,
                "rewards": [signal.rewards(item) for signal in poca.reward_signals],
                "values": np.stack(estimates, axis=1),
                "baselines": poca.buffer.baselines[rows].copy(),
                "returns": arrays.returns[rows].copy(),
                "advantages": arrays.advantages[rows].copy(),
                "max_members": float(poca.critic.max_members),
            }
        )
    return results, emitted


@pytest.mark.parametrize("name", WITH["trajectories"])
def test_trajectory_targets_match_mlagents_process_trajectory(name, monkeypatch):
    """Values, baselines, rewards (own + group + mates'), lambda returns (bootstrapped from the
    group's next value unless the whole group is done; curiosity always), advantages, and the
    stats reported on the way."""
    case = RECORD["cases"][name]
    poca = build(False, normalize=case["normalize"])
    results, emitted = add_trajectories(poca, name, monkeypatch)
    for result in results:
        expected = result["data"]["expected"]
        who = result["data"]["agent_id"]
        assert result["max_members"] == expected["max_agents"], who
        for i, stream in enumerate(STREAMS):
            assert_close(result["rewards"][i], expected[stream]["rewards"], f"{who} {stream} rewards")
            assert_close(result["values"][:, i], expected[stream]["values"], f"{who} {stream} values")
            assert_close(result["baselines"][:, i], expected[stream]["baselines"], f"{who} {stream} baselines")
            assert_close(result["returns"][:, i], expected[stream]["returns"], f"{who} {stream} returns")
            stream_advantages = result["returns"][:, i] - result["baselines"][:, i]
            assert_close(stream_advantages, expected[stream]["advantages"], f"{who} {stream} advantages")
        assert_close(result["advantages"], expected["advantages"], f"{who} advantages")
    recorded = case["trajectories"]["stats"]
    assert emitted.keys() == recorded.keys()
    for tag, values in recorded.items():
        assert_close(emitted[tag], values, tag)


def run_update(name: str, monkeypatch: pytest.MonkeyPatch) -> tuple[POCA, dict, list[float]]:
    """The case's trajectories added, then ``POCA.update`` with each epoch in buffer order, as
    the script runs ML-Agents' ``_update_policy``. Returns the stats and every total loss
    minimised."""
    case = RECORD["cases"][name]
    recorded = case["trajectories"]["update"]
    poca = build(False, normalize=case["normalize"], batch_size=recorded["batch_size"], num_epoch=recorded["num_epoch"])
    add_trajectories(poca, name, monkeypatch)
    assert len(poca.buffer) == recorded["rows"]
    monkeypatch.setattr(torch, "randperm", lambda n, *_, **__: torch.arange(n))
    losses = poca.losses
    totals: list[float] = []

    def recording_losses(batch: POCABatch, beta: float, epsilon: float) -> tuple[torch.Tensor, ...]:
        result = losses(batch, beta, epsilon)
        totals.append(float(result[3].detach()))
        return result

    monkeypatch.setattr(poca, "losses", recording_losses)
    return poca, poca.update(0), totals


@pytest.mark.parametrize("name", WITH["trajectories"])
def test_update_over_the_trajectories_matches_mlagents_update_policy(name, monkeypatch):
    """The buffer of those trajectories, advantages normalised, 2 epochs of 2 minibatches in
    buffer order (the last row left out): every loss, the stats, the 4 Adam steps and the
    normalisers as ML-Agents' ``_update_policy``."""
    case = RECORD["cases"][name]
    recorded = case["trajectories"]["update"]
    poca, stats, totals = run_update(name, monkeypatch)
    assert_stats_match(stats, recorded["stats"], RTOL)
    assert_close(totals, recorded["total_losses"], "total losses")
    steps = len(recorded["total_losses"])
    assert steps == recorded["num_epoch"] * (recorded["rows"] // recorded["batch_size"])
    assert_adam_steps_match(poca.policy.actor, recorded["actor"], steps)
    assert_adam_steps_match(poca.critic, recorded["critic"], steps)
    assert_normalizers_match(
        case["trajectories"].get("normalizers", {}), poca.policy.actor.encoder, poca.critic.encoder
    )
