"""GAIL and behavioral cloning as components: the discriminator learns to pay for what looks
like the demonstrations, VAIL's beta, checkpoints, demonstrations checked against the spec
before any work; cloning's annealing, its budget per update and its sequences; PPO and SAC
running both with ML-Agents' tags, SAC rewarding each sampled minibatch afresh and updating
its signals at ``reward_signal_steps_per_update``."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest
import torch

from processors import Trajectory
from stats import StatsReporter
from tests.steps import behavior_spec
from trainers.exceptions import ConfigError
from trainers.files.demonstrations import DemonstrationWriter
from trainers.networks.policy import TorchPolicy
from trainers.ppo.algorithm import PPO
from trainers.reward_signals.base import trajectory_signal_batch
from trainers.reward_signals.behavioral_cloning import BehavioralCloning, _padded_rows
from trainers.reward_signals.gail import GAILReward
from trainers.sac.algorithm import SAC
from trainers.settings import (
    BehavioralCloningSettings,
    ExtrinsicSettings,
    GAILSettings,
    NetworkSettings,
    PPOSettings,
    RewardSignalType,
    SACSettings,
    TrainerSettings,
)

SPEC = behavior_spec(obs_shapes=((3,),), continuous=2, branches=(3,))
SMALL = NetworkSettings(hidden_units=16, num_layers=1)
EXPERT_OBS = np.array([1.0, 0.5, -1.0], np.float32)  # the expert's states sit near this point


def write_demo(path: Path, steps: int = 64, *, spec=SPEC, episode: int = 8) -> Path:
    """An expert that sees states near EXPERT_OBS and always acts (0.5, -0.5), choice 2."""
    rng = np.random.default_rng(0)
    writer = DemonstrationWriter(path, behavior_name="B", behavior_spec=spec)
    for t in range(steps):
        obs = [
            np.resize(EXPERT_OBS, s.shape) + 0.05 * rng.standard_normal(s.shape).astype(np.float32)
            for s in spec.observation_specs
        ]
        writer.add_step(
            0,
            obs,
            reward=0.0,
            done=(t + 1) % episode == 0,
            continuous_action=np.array([0.5, -0.5], np.float32),
            discrete_action=np.array([2]),
        )
    writer.close()
    return path


def policy_trajectory(seed: int, length: int = 16) -> Trajectory:
    """States far from the expert's, other actions."""
    rng = np.random.default_rng(seed)
    done = np.zeros(length, bool)
    done[-1] = True
    return Trajectory(
        behavior_id="B",
        agent_id=f"agent_0-{seed}",
        obs=((-EXPERT_OBS + 0.05 * rng.standard_normal((length, 3))).astype(np.float32),),
        next_obs=(-EXPERT_OBS,),
        rewards=np.zeros(length, np.float32),
        done=done,
        interrupted=np.zeros(length, bool),
        continuous_actions=rng.uniform(-1, 1, (length, 2)).astype(np.float32),
        discrete_actions=rng.integers(0, 2, (length, 1)).astype(np.int32),
        continuous_log_probs=np.zeros((length, 2), np.float32),
        discrete_log_probs=np.zeros((length, 1), np.float32),
        action_masks=np.ones((length, 3), bool),
        prev_continuous_actions=np.zeros((length, 2), np.float32),
        prev_discrete_actions=np.zeros((length, 1), np.int32),
        memories=np.zeros((length, 0), np.float32),
    )


def expert_like(t: Trajectory) -> Trajectory:
    obs = np.tile(EXPERT_OBS, (t.length, 1))
    continuous = np.tile(np.array([0.5, -0.5], np.float32), (t.length, 1))
    discrete = np.full((t.length, 1), 2, np.int32)
    return Trajectory(**{**_fields(t), "obs": (obs,), "continuous_actions": continuous, "discrete_actions": discrete})


def _fields(t: Trajectory) -> dict:
    return attrs.asdict(t, recurse=False)


@pytest.mark.parametrize("use_actions, use_vail", [(False, False), (True, False), (True, True)])
def test_gail_learns_to_pay_for_what_looks_like_the_demonstrations(tmp_path, use_actions, use_vail):
    demo = write_demo(tmp_path / "expert.demo")
    settings = GAILSettings(
        demo_path=str(demo),
        strength=0.5,
        use_actions=use_actions,
        use_vail=use_vail,
        network_settings=SMALL,
        learning_rate=3e-3,
    )
    gail = GAILReward(SPEC, settings, seed=1)
    policy = policy_trajectory(1)
    batch = trajectory_signal_batch(policy, torch.device("cpu"))
    stats = {}
    # (the gradient penalty, 10 x (|dD/dx| - 1)^2, dominates the first updates: |dD/dx| starts
    # near 0, the estimator's weights being small)
    for _ in range(200):
        stats = gail.update(batch)
    expected = {
        "Policy/GAIL Policy Estimate",
        "Policy/GAIL Expert Estimate",
        "Losses/GAIL Loss",
        "Policy/GAIL Grad Mag Loss",
    }
    if use_vail:
        expected |= {"Policy/GAIL Beta", "Losses/GAIL KL Loss"}
        assert stats["Policy/GAIL Beta"] >= 0.0
    assert set(stats) == expected
    assert stats["Policy/GAIL Expert Estimate"] > stats["Policy/GAIL Policy Estimate"]
    rewards_policy = gail.rewards(policy)
    rewards_expert = gail.rewards(expert_like(policy))
    assert rewards_policy.shape == (16,) and rewards_policy.dtype == np.float32
    assert rewards_expert.mean() > rewards_policy.mean() > 0.0  # -log(1 - D) > 0, strength applied
    assert gail.ignore_done is False


def test_gail_state_round_trips_vail_beta_included(tmp_path):
    demo = write_demo(tmp_path / "expert.demo")
    settings = GAILSettings(demo_path=str(demo), use_vail=True, network_settings=SMALL)
    gail = GAILReward(SPEC, settings, seed=1)
    batch = trajectory_signal_batch(policy_trajectory(2), torch.device("cpu"))
    for _ in range(5):
        gail.update(batch)
    restored = GAILReward(SPEC, settings, seed=9)
    restored.load(gail.state())
    assert float(restored.discriminator.beta) == float(gail.discriminator.beta)
    np.testing.assert_array_equal(restored.rewards(policy_trajectory(3)), gail.rewards(policy_trajectory(3)))
    assert restored.update(batch) == gail.update(batch)  # same expert draws and noise from here on


def cloning_from(demo: Path) -> BehavioralCloning:
    """Behavioral cloning of behavior B on ``demo``, with its key path."""
    return BehavioralCloning(
        TorchPolicy(SPEC, SMALL, seed=0),
        BehavioralCloningSettings(demo_path=str(demo)),
        learning_rate=3e-4,
        batch_size=8,
        where="behaviors.B.behavioral_cloning",
    )


def test_demonstrations_of_another_spec_are_refused_naming_the_file_and_key(tmp_path):
    other = behavior_spec(obs_shapes=((4,),), continuous=2, branches=(3,))
    demo = write_demo(tmp_path / "other.demo", spec=other)
    with pytest.raises(ConfigError) as error:
        GAILReward(SPEC, GAILSettings(demo_path=str(demo)), where="behaviors.B.reward_signals.gail")
    message = str(error.value)
    assert "behaviors.B.reward_signals.gail.demo_path" in message and "other.demo" in message
    with pytest.raises(ConfigError, match="behaviors.B.behavioral_cloning.demo_path"):
        cloning_from(demo)


def test_a_demonstration_of_one_step_is_refused_before_training(tmp_path):
    demo = write_demo(tmp_path / "one.demo", steps=1)
    with pytest.raises(ConfigError, match=r"behaviors.B.reward_signals.gail.demo_path: .*one.demo hold no transition"):
        GAILReward(SPEC, GAILSettings(demo_path=str(demo)), where="behaviors.B.reward_signals.gail")
    with pytest.raises(ConfigError, match="behaviors.B.behavioral_cloning.demo_path: .*hold no transition"):
        cloning_from(demo)


def cloning(tmp_path, steps: int = 0, samples_per_update: int = 0, **kwargs) -> BehavioralCloning:
    demo = write_demo(tmp_path / "expert.demo")
    settings = BehavioralCloningSettings(
        demo_path=str(demo), steps=steps, strength=0.5, samples_per_update=samples_per_update, **kwargs
    )
    return BehavioralCloning(TorchPolicy(SPEC, SMALL, seed=0), settings, learning_rate=1e-2, batch_size=16, seed=0)


def test_cloning_moves_the_policy_to_the_expert_actions(tmp_path):
    bc = cloning(tmp_path)
    assert bc.learning_rate == pytest.approx(5e-3)  # strength x the trainer's learning rate
    first = bc.update(0)["Losses/Pretraining Loss"]
    for _ in range(20):
        last = bc.update(0)["Losses/Pretraining Loss"]
    assert last < 0.3 * first
    obs = torch.as_tensor(np.tile(EXPERT_OBS, (4, 1)))
    dist = bc.policy.actor([obs])
    assert torch.allclose(dist.mean, torch.tensor([[0.5, -0.5]]).expand(4, 2), atol=0.15)
    assert bool((dist.log_probs[0].argmax(dim=1) == 2).all())


def test_cloning_anneals_over_its_steps_then_stops(tmp_path):
    bc = cloning(tmp_path, steps=1000)
    bc.update(500)
    assert bc.learning_rate == pytest.approx(2.5e-3)  # takes effect from the next update
    bc.update(1000)
    before = [p.detach().clone() for p in bc.policy.actor.parameters()]
    assert bc.update(1500) == {"Losses/Pretraining Loss": 0.0}
    assert all(torch.equal(a, b) for a, b in zip(before, bc.policy.actor.parameters()))


def test_cloning_minibatches_per_pass(tmp_path):
    # 63 demonstrated transitions (the last step has no action to learn from) in minibatches
    # of 16, the trainer's batch_size unless set
    assert cloning(tmp_path).minibatches_per_epoch() == 3
    assert cloning(tmp_path, samples_per_update=32).minibatches_per_epoch() == 2
    assert cloning(tmp_path, batch_size=8).minibatches_per_epoch() == 7
    assert cloning(tmp_path, num_epoch=5).num_epoch == 5
    assert cloning(tmp_path).num_epoch == 3


def test_cloning_sequences_pad_each_episode_at_its_end():
    done = np.array([0, 0, 1, 0, 0, 0, 0, 1, 0], bool)  # episodes of 3, 5, then 1 unfinished step
    assert _padded_rows(done, 4).tolist() == [0, 1, 2, -1, 3, 4, 5, 6, 7, -1, -1, -1, 8, -1, -1, -1]


def ppo_settings(demo: Path) -> TrainerSettings:
    return TrainerSettings(
        hyperparameters=PPOSettings(batch_size=16, buffer_size=32, num_epoch=1),
        network_settings=SMALL,
        reward_signals={
            RewardSignalType.EXTRINSIC: ExtrinsicSettings(),
            RewardSignalType.GAIL: GAILSettings(demo_path=str(demo), network_settings=SMALL),
        },
        behavioral_cloning=BehavioralCloningSettings(demo_path=str(demo)),
    )


def test_ppo_trains_gail_and_clones_with_mlagents_tags(tmp_path):
    demo = write_demo(tmp_path / "expert.demo")
    reporter = StatsReporter("B")
    ppo = PPO(behavior_name="B", behavior_spec=SPEC, settings=ppo_settings(demo), stats_reporter=reporter, seed=0)
    for seed in range(3):
        ppo.add(policy_trajectory(seed))
    assert ppo.ready()
    stats = ppo.update(0)
    assert {"Losses/GAIL Loss", "Policy/GAIL Expert Estimate", "Losses/Pretraining Loss"} <= set(stats)
    assert "Policy/Gail Value Estimate" in reporter.keys()  # noqa: SIM118
    assert "Policy/Gail Reward" in reporter.keys()  # noqa: SIM118
    state = ppo.state()
    assert state["reward_signals"]["gail"] and "behavioral_cloning" in state
    again = PPO(behavior_name="B", behavior_spec=SPEC, settings=ppo_settings(demo), stats_reporter=reporter, seed=5)
    again.load(state, weights_only=False)
    assert again.cloning is not None and ppo.cloning is not None
    assert again.cloning.learning_rate == ppo.cloning.learning_rate


def sac_settings(demo: Path, **hyperparameters) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(batch_size=8, buffer_size=1000, **hyperparameters),
        network_settings=SMALL,
        reward_signals={
            RewardSignalType.EXTRINSIC: ExtrinsicSettings(),
            RewardSignalType.GAIL: GAILSettings(demo_path=str(demo), network_settings=SMALL),
        },
    )


def test_sac_updates_its_signals_at_their_own_ratio_and_rewards_each_minibatch_afresh(tmp_path):
    demo = write_demo(tmp_path / "expert.demo")
    settings = sac_settings(demo, steps_per_update=1.0, reward_signal_steps_per_update=4.0)
    sac = SAC(behavior_name="B", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("B"), seed=0)
    sac.add(policy_trajectory(0, length=16))
    sac.add(policy_trajectory(1, length=16))
    assert (sac.updates_due(), sac.signal_updates_due()) == (31, 7)  # 32 steps: 32/1 and 32/4, counted from 1
    gail = sac.reward_signals[1]
    seen: list[int] = []
    original = gail.evaluate

    def counted(batch):
        seen.append(batch.dones.shape[0])
        return original(batch)

    gail.evaluate = counted  # type: ignore[method-assign]
    stats = sac.update(0)
    assert seen == [8] * 31  # every gradient step's minibatch, rewarded when drawn
    assert (sac.updates_due(), sac.signal_updates_due(), sac.signal_update_steps) == (0, 0, 8)
    assert {"Losses/GAIL Loss", "Losses/Q1 Loss"} <= set(stats)
    state = sac.state()
    assert state["sac_counters"]["signal_update_steps"] == 8
    assert "Policy/Gail Value" in sac.stats_reporter.keys()  # noqa: SIM118
