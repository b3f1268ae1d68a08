"""Curiosity and RND as ML-Agents builds them: rewards that fall where the agent has been and
stay where it has not, ML-Agents' caps and losses, episode ends ignored by their returns,
their own state in checkpoints, and PPO training them on every minibatch with ML-Agents' tags."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch

from processors import Trajectory
from stats import StatsReporter
from tests.steps import behavior_spec
from trainers.ppo.algorithm import PPO
from trainers.reward_signals.base import SignalBatch
from trainers.reward_signals.curiosity import CuriosityReward, flatten_actions
from trainers.reward_signals.rnd import RNDReward
from trainers.settings import (
    CuriositySettings,
    ExtrinsicSettings,
    NetworkSettings,
    PPOSettings,
    RewardSignalType,
    RNDSettings,
    TrainerSettings,
)

SPEC = behavior_spec(obs_shapes=((3,),), continuous=2, branches=(3, 2))
SMALL = NetworkSettings(hidden_units=16, num_layers=1)


def trajectory(seed: int, length: int = 8, *, done: bool = False, scale: float = 1.0) -> Trajectory:
    rng = np.random.default_rng(seed)
    flags = np.zeros(length, bool)
    flags[-1] = done
    return Trajectory(
        behavior_id="B",
        agent_id=f"agent_0-{seed}",
        obs=((rng.standard_normal((length, 3)) * scale).astype(np.float32),),
        next_obs=((rng.standard_normal(3) * scale).astype(np.float32),),
        rewards=np.zeros(length, np.float32),
        done=flags,
        interrupted=np.zeros(length, bool),
        continuous_actions=rng.uniform(-1, 1, (length, 2)).astype(np.float32),
        discrete_actions=np.stack([rng.integers(0, 3, length), rng.integers(0, 2, length)], axis=1).astype(np.int32),
        continuous_log_probs=np.zeros((length, 2), np.float32),
        discrete_log_probs=np.zeros((length, 2), np.float32),
        action_masks=np.ones((length, 5), bool),
        prev_continuous_actions=np.zeros((length, 2), np.float32),
        prev_discrete_actions=np.zeros((length, 2), np.int32),
        memories=np.zeros((length, 0), np.float32),
    )


def batch_of(t: Trajectory) -> SignalBatch:
    next_obs = np.concatenate([t.obs[0][1:], t.next_obs[0][None]])
    return SignalBatch(
        (torch.as_tensor(t.obs[0]),),
        (torch.as_tensor(next_obs),),
        torch.as_tensor(t.continuous_actions),
        torch.as_tensor(t.discrete_actions).long(),
        torch.as_tensor(t.done, dtype=torch.float32),
        None,
    )


def test_actions_flatten_as_mlagents_continuous_then_one_hot_branches():
    flat = flatten_actions(torch.tensor([[0.5, -1.0]]), torch.tensor([[2, 0]]), (3, 2))
    assert flat.tolist() == [[0.5, -1.0, 0.0, 0.0, 1.0, 1.0, 0.0]]


def test_curiosity_pays_nothing_before_training_then_less_for_what_it_has_seen():
    signal = CuriosityReward(SPEC, CuriositySettings(strength=0.5, network_settings=SMALL), seed=1)
    seen, novel = trajectory(1), trajectory(2, scale=3.0)
    assert not signal.rewards(seen).any()  # ML-Agents' _has_updated_once
    assert signal.trains and signal.ignore_done and signal.name == "curiosity"
    first = None
    for _ in range(150):
        stats = signal.update(batch_of(seen))
        first = first or stats
    assert set(stats) == {"Losses/Curiosity Forward Loss", "Losses/Curiosity Inverse Loss"}
    assert stats["Losses/Curiosity Forward Loss"] < first["Losses/Curiosity Forward Loss"]
    assert stats["Losses/Curiosity Inverse Loss"] < first["Losses/Curiosity Inverse Loss"]
    seen_rewards, novel_rewards = signal.rewards(seen), signal.rewards(novel)
    assert seen_rewards.shape == (8,) and seen_rewards.mean() < novel_rewards.mean()
    assert novel_rewards.max() <= 1.0  # capped at 1 / strength before the strength


def test_rnd_pays_for_novel_observations_and_keeps_its_target_fixed():
    signal = RNDReward(SPEC, RNDSettings(strength=0.1, learning_rate=1e-2, network_settings=SMALL), seed=1)
    seen, novel = trajectory(1), trajectory(2, scale=3.0)
    target = {k: v.clone() for k, v in signal.target.state_dict().items()}
    before = signal.rewards(seen).mean()
    for _ in range(200):
        stats = signal.update(batch_of(seen))
    assert set(stats) == {"Losses/RND Loss"}
    assert signal.rewards(seen).mean() < 0.2 * before
    assert signal.rewards(novel).mean() > 2 * signal.rewards(seen).mean()
    assert all(torch.equal(v, signal.target.state_dict()[k]) for k, v in target.items())


@pytest.mark.parametrize("kind", ["curiosity", "rnd"])
def test_state_round_trips(kind):
    make = {
        "curiosity": lambda seed: CuriosityReward(SPEC, CuriositySettings(network_settings=SMALL), seed=seed),
        "rnd": lambda seed: RNDReward(SPEC, RNDSettings(network_settings=SMALL), seed=seed),
    }[kind]
    trained, fresh = make(1), make(2)
    trained.update(batch_of(trajectory(3)))
    fresh.load(trained.state())
    t = trajectory(4)
    np.testing.assert_array_equal(fresh.rewards(t), trained.rewards(t))
    np.testing.assert_array_equal(fresh.update(batch_of(t)).popitem()[1], trained.update(batch_of(t)).popitem()[1])


def ppo_with_signals(**signals) -> PPO:
    reward_signals = {RewardSignalType.EXTRINSIC: ExtrinsicSettings(), **signals}
    settings = TrainerSettings(
        hyperparameters=PPOSettings(batch_size=8, buffer_size=16, num_epoch=2),
        network_settings=SMALL,
        reward_signals=reward_signals,
    )
    return PPO(behavior_name="B", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("B"), seed=0)


def test_ppo_trains_curiosity_and_rnd_on_every_minibatch_with_mlagents_tags():
    ppo = ppo_with_signals(
        **{
            RewardSignalType.CURIOSITY: CuriositySettings(network_settings=SMALL),
            RewardSignalType.RND: RNDSettings(network_settings=SMALL),
        }
    )
    for seed in range(3):
        ppo.add(trajectory(seed, done=seed == 1))
    assert ppo.ready()
    curiosity = ppo.reward_signals[1]
    calls = []
    update = curiosity.update
    curiosity.update = lambda batch: calls.append(batch) or update(batch)  # type: ignore[method-assign]
    stats = ppo.update(0)
    assert len(calls) == 2 * 3  # num_epoch x (24 samples // 8)
    assert calls[0].next_obs[0].shape == (8, 3)
    assert {"Losses/Curiosity Forward Loss", "Losses/Curiosity Inverse Loss", "Losses/RND Loss"} <= set(stats)
    summaries = ppo.stats_reporter.get_stats_summaries
    assert summaries("Policy/Curiosity Value Estimate").count > 0 and summaries("Policy/Rnd Value Estimate").count > 0
    # the episode that ended reports every signal's reward sum (ML-Agents' Policy/<Name> Reward)
    assert summaries("Policy/Rnd Reward").count == 1 and summaries("Policy/Curiosity Reward").count == 1


def test_intrinsic_returns_bootstrap_past_the_episode_end():
    """ML-Agents' ignore_done: the extrinsic return stops at a terminal step, curiosity's goes on."""
    ppo = ppo_with_signals(**{RewardSignalType.CURIOSITY: CuriositySettings(network_settings=SMALL)})
    ended = attrs.evolve(trajectory(5, length=1, done=True), rewards=np.ones(1, np.float32))
    ppo.add(ended)
    batch = ppo.buffer.to_batch(ppo.device)
    with torch.no_grad():
        next_values = ppo.critic([torch.as_tensor(ended.next_obs[0][None])])
    returns = batch.returns[0]
    assert float(returns[0]) == pytest.approx(1.0)  # extrinsic: the reward alone
    assert float(returns[1]) == pytest.approx(0.99 * float(next_values["curiosity"][0]), rel=1e-5)
