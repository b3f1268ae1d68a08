"""``normalize: true`` on a reward signal (PPO, POCA): rewards learned divided by the running
standard deviation of the discounted return, step for step as Stable-Baselines3's
``VecNormalize`` scales one environment's rewards; the raw rewards still reported; the statistics
in checkpoints; refused for SAC before any work."""

from __future__ import annotations

import math

import attrs
import numpy as np
import pytest
import torch

from stats import StatsReporter
from tests.steps import behavior_spec
from tests.test_poca_run import grouped_trajectories
from tests.test_ppo_trainer import SPEC, settings, trajectory
from trainers.exceptions import ConfigError
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.ppo.maths import gae
from trainers.reward_signals.return_scale import ReturnScale
from trainers.sac.algorithm import SAC
from trainers.settings import (
    ExtrinsicSettings,
    NetworkSettings,
    POCASettings,
    RewardSignalType,
    SACSettings,
    TrainerSettings,
    check_capabilities,
    structure_run_options,
    unstructure_run_options,
)


def vecnormalize_reference(episodes: list[list[float]], gamma: float) -> list[float]:
    """VecNormalize(norm_reward=True) on one environment, one step at a time: the return
    ``R = gamma * R + r`` (0 after a done) enters a running mean/variance (mean 0, variance 1,
    count 1e-4 to start) and the step's reward is divided by the variance's square root."""
    mean, var, count = 0.0, 1.0, 1e-4
    scaled = []
    for episode in episodes:
        running = 0.0
        for reward in episode:
            running = gamma * running + reward
            total = count + 1
            delta = running - mean
            new_mean = mean + delta / total
            m2 = var * count + delta**2 * count / total
            mean, var, count = new_mean, m2 / total, total
            scaled.append(max(-10.0, min(10.0, reward / math.sqrt(var + 1e-8))))
    return scaled


def cut(rewards: list[float], done: bool, agent: str = "agent_0-0"):
    """A trajectory of agent ``agent`` with these rewards; ``done``: its episode ends with it."""
    base = trajectory(0, length=len(rewards), done=done)
    return attrs.evolve(base, agent_id=agent, rewards=np.asarray(rewards, np.float32))


def test_rewards_are_scaled_step_for_step_as_vecnormalize_scales_them():
    rng = np.random.default_rng(3)
    first, second = (rng.normal(2.0, 3.0, size) for size in (13, 9))
    scale = ReturnScale(gamma=0.95)
    # the first episode in three cuts (time horizons), the second in two
    pieces = [(first[:5], False), (first[5:11], False), (first[11:], True), (second[:4], False), (second[4:], True)]
    learned = np.concatenate([scale.scale(cut(list(part), done), part.astype(np.float32)) for part, done in pieces])
    expected = vecnormalize_reference([list(first.astype(np.float32)), list(second.astype(np.float32))], 0.95)
    np.testing.assert_allclose(learned, expected, rtol=1e-5)
    assert learned.dtype == np.float32
    assert scale.count == pytest.approx(22 + 1e-4)


def test_each_agent_carries_its_own_return_and_an_interruption_ends_it():
    """Two agents' trajectories interleave; an interrupted (max-step) ending resets the return
    as a terminal one does (VecNormalize resets on truncation too)."""
    scale = ReturnScale(gamma=0.9)
    a1 = scale.scale(cut([1.0, 1.0], False, "a"), np.ones(2, np.float32))
    scale.scale(cut([5.0, -5.0, 5.0], False, "b"), np.array([5.0, -5.0, 5.0], np.float32))
    interrupted = attrs.evolve(cut([1.0], True, "a"), interrupted=np.array([True]))
    scale.scale(interrupted, np.ones(1, np.float32))
    assert a1[0] == 10.0  # the first return dominates the prior: clipped, as VecNormalize clips it
    assert scale._returns == {"b": pytest.approx(5.0 * 0.81 - 5.0 * 0.9 + 5.0)}
    # agent a's next episode starts from a zero return: its first step's return is its reward
    before = scale.count
    scale.scale(cut([2.0], False, "a"), np.full(1, 2.0, np.float32))
    assert scale._returns["a"] == 2.0 and scale.count == before + 1


def test_a_long_horizon_with_a_small_gamma_scales_as_the_step_by_step_sum():
    """gamma^t underflows for 900 steps at gamma 0.5: the returns come from a plain loop."""
    rewards = np.random.default_rng(0).normal(size=900).astype(np.float32)
    learned = ReturnScale(gamma=0.5).scale(cut(list(rewards), True), rewards)
    np.testing.assert_allclose(learned, vecnormalize_reference([list(rewards)], 0.5), rtol=1e-5)


def ppo(normalize: bool | None) -> PPO:
    extrinsic = attrs.evolve(ExtrinsicSettings(gamma=0.9), normalize=normalize)
    behavior = settings(
        reward_signals={RewardSignalType.EXTRINSIC: extrinsic},
        network_settings=NetworkSettings(hidden_units=16, num_layers=1),
    )
    return PPO(behavior_name="Walker", behavior_spec=SPEC, settings=behavior, stats_reporter=StatsReporter("W"))


def buffered_returns(learner: PPO) -> np.ndarray:
    return learner.buffer.to_batch(torch.device("cpu"), normalize_advantages=False).returns[:, 0].numpy()


def test_ppo_learns_the_scaled_rewards_and_reports_the_raw_ones():
    learner, plain = ppo(True), ppo(None)
    pieces = [attrs.evolve(trajectory(seed, done=seed == 1), rewards=trajectory(seed).rewards * 50) for seed in (0, 1)]
    scale = ReturnScale(gamma=0.9)
    expected = []
    for piece in pieces:
        obs = [np.concatenate([o, n[None]]) for o, n in zip(piece.obs, piece.next_obs)]
        with torch.no_grad():
            values = learner.critic(learner.policy.obs_to_tensors(obs))["extrinsic"].numpy()
        scaled = scale.scale(piece, piece.rewards)
        expected.append(gae(scaled, values[:-1], values[-1], piece.terminated, 0.9, learner.hyperparameters.lambd)[1])
        learner.add(piece)
        plain.add(piece)
    np.testing.assert_allclose(buffered_returns(learner), np.concatenate(expected), rtol=1e-5)
    assert np.abs(buffered_returns(plain)).max() > 10 * np.abs(buffered_returns(learner)).max()
    for each in (learner, plain):  # agent 0-1's episode ended: its raw reward is reported either way
        assert each.stats_reporter.get_stats_summaries("Policy/Extrinsic Reward").mean == pytest.approx(
            float(pieces[1].rewards.sum()), rel=1e-5
        )
    assert "return_scales" not in plain.state()


def test_the_statistics_are_checkpointed_and_restored():
    learner = ppo(True)
    for seed in range(3):
        learner.add(trajectory(seed))
    saved = learner.state()["return_scales"]["extrinsic"]
    assert saved["count"] == pytest.approx(24 + 1e-4)
    resumed = ppo(True)
    resumed.load(learner.state(), weights_only=False)
    assert resumed.state()["return_scales"] == learner.state()["return_scales"]
    fresh = ppo(True)
    fresh.load(ppo(None).state(), weights_only=False)  # a checkpoint from before the key was set
    assert fresh.state()["return_scales"]["extrinsic"] == {"mean": 0.0, "var": 1.0, "count": 1e-4}


def poca_learner(signals: dict) -> POCA:
    options = structure_run_options({"behaviors": {"T": {"trainer_type": "poca", "reward_signals": signals}}})
    behavior = attrs.evolve(options.behaviors["T"], hyperparameters=POCASettings(batch_size=2, buffer_size=2))
    learner = POCA(
        behavior_name="T", behavior_spec=behavior_spec(), settings=behavior, stats_reporter=StatsReporter("T")
    )
    for group_trajectory in grouped_trajectories().values():
        learner.add(group_trajectory)
    return learner


def test_poca_learns_the_scaled_rewards():
    scaled, plain = poca_learner({"extrinsic": {"normalize": True}}), poca_learner({"extrinsic": {}})
    steps = sum(t.length for t in grouped_trajectories().values())
    assert scaled.state()["return_scales"]["extrinsic"]["count"] == pytest.approx(steps + 1e-4)
    assert "return_scales" not in plain.state()
    batch, plain_batch = (each.buffer.to_batch(torch.device("cpu")) for each in (scaled, plain))
    assert not torch.equal(batch.agent.returns, plain_batch.agent.returns)


def test_the_key_is_read_written_back_only_when_set_and_refused_for_sac():
    data = {
        "behaviors": {
            "Cheetah": {"trainer_type": "ppo", "reward_signals": {"extrinsic": {"gamma": 0.98, "normalize": True}}},
            "Ball": {"trainer_type": "ppo"},
            "Pendulum": {"trainer_type": "sac", "reward_signals": {"extrinsic": {"normalize": True}}},
        }
    }
    options = structure_run_options(data)
    assert options.behaviors["Cheetah"].reward_signals[RewardSignalType.EXTRINSIC].normalize is True
    assert options.behaviors["Ball"].reward_signals[RewardSignalType.EXTRINSIC].normalize is False
    written = unstructure_run_options(options)["behaviors"]
    assert written["Cheetah"]["reward_signals"]["extrinsic"]["normalize"] is True
    assert "normalize" not in written["Ball"]["reward_signals"]["extrinsic"]  # ML-Agents 0.28 loads the file
    assert check_capabilities(options, {"ppo", "sac", "poca"}) == [
        "behaviors.Pendulum.reward_signals.extrinsic.normalize: reward scaling is for PPO and POCA, whose "
        "updates use each reward once; sac's replay buffer would keep rewards scaled by statistics that have "
        "since moved; remove it"
    ]


def test_sac_built_directly_with_the_key_refuses_it_too():
    """The configuration check refuses it first; a library user building SAC gets the same word."""
    extrinsic = attrs.evolve(ExtrinsicSettings(), normalize=True)
    behavior = TrainerSettings(
        trainer_type="sac", hyperparameters=SACSettings(), reward_signals={RewardSignalType.EXTRINSIC: extrinsic}
    )
    with pytest.raises(ConfigError, match=r"behaviors\.Walker\.reward_signals\.extrinsic\.normalize"):
        SAC(behavior_name="Walker", behavior_spec=SPEC, settings=behavior, stats_reporter=StatsReporter("W"))
