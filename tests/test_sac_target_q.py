"""SAC with ``target_critic: q``, Stable-Baselines3's formulation: the Q networks bootstrap from
target Q networks at the policy's own next action, the policy loss takes the smaller twin Q, and
there is no value network. Checked against the formulas written out here, and for what a user
relies on around it: the soft update, checkpoints, and refusals that name the key."""

from __future__ import annotations

import attrs
import pytest
import torch

from tests.test_sac_trainer import SPECS, assert_same, make_trainer, run_serial, settings, trajectory
from trainers.exceptions import CheckpointError, ConfigError
from trainers.files.checkpoints import BehaviorCheckpoints
from trainers.files.status import TrainingStatus
from trainers.sac.algorithm import SAC
from trainers.settings import (
    MemorySettings,
    TargetCritic,
    check_trainer_settings,
    structure_run_options,
    unstructure_run_options,
)

TARGET_Q = {"target_critic": TargetCritic.Q}


def target_q_trainer(seed: int = 0, **hyperparameters):
    return make_trainer(SPECS["continuous"], seed=seed, **TARGET_Q, **hyperparameters)


def filled(seed: int = 3) -> SAC:
    """A target-Q SAC that has taken some gradient steps (its networks apart from their targets)."""
    trainer = target_q_trainer(seed)
    run_serial(trainer, range(8))
    sac = trainer.algorithm
    assert isinstance(sac, SAC) and sac.update_steps > 10
    return sac


def test_losses_are_stable_baselines3s():
    sac = filled()
    batch = sac.replay.sample(8, sac._sampling)
    noise = sac._noise.get_state()
    with sac.policy.training():
        losses = sac.losses(batch)

    sac._noise.set_state(noise)
    actor, (target1, target2) = sac.policy.actor, sac.q_targets
    alpha = sac.continuous_log_alpha.detach().exp()
    with torch.no_grad(), sac.policy.training():
        obs, next_obs = actor.encoder.normalize(list(batch.obs)), actor.encoder.normalize(list(batch.next_obs))
        # the draws in the order SAC takes them: the policy's action now, then at the next observation
        actions, log_probs = actor.continuous_sample(actor(list(batch.obs), None), generator=sac._noise)
        next_actions, next_log_probs = actor.continuous_sample(actor(list(batch.next_obs), None), generator=sac._noise)
        next_q = torch.min(target1(next_obs, next_actions), target2(next_obs, next_actions))[:, 0, 0]
        backup = batch.rewards[:, 0] + 0.9 * (1 - batch.dones) * (next_q - alpha * next_log_probs.sum(dim=1))
        q1_loss = 0.5 * ((sac.q1(obs, batch.continuous_actions)[:, 0, 0] - backup) ** 2).mean()
        q2_loss = 0.5 * ((sac.q2(obs, batch.continuous_actions)[:, 0, 0] - backup) ** 2).mean()
        min_q = torch.min(sac.q1(obs, actions), sac.q2(obs, actions))[:, 0, 0]
        policy_loss = (alpha * log_probs.sum(dim=1) - min_q).mean()

    expected = {"q1": q1_loss, "q2": q2_loss, "policy": policy_loss, "value": torch.tensor(0.0)}
    for name, value in expected.items():
        torch.testing.assert_close(getattr(losses, name).detach(), value, rtol=1e-5, atol=1e-6, msg=name)
    assert (next_q != sac.q1(obs, actions)[:, 0, 0]).any()  # the targets are not the networks


def test_a_gradient_step_moves_the_target_q_networks_tau_of_the_way():
    sac = filled()
    before = [p.detach().clone() for target in sac.q_targets for p in target.parameters()]
    sac._gradient_step(sac.replay.sample(8, sac._sampling))
    after = [p.detach() for target in sac.q_targets for p in target.parameters()]
    followed = [p.detach() for q in (sac.q1, sac.q2) for p in q.parameters()]
    tau = sac.hyperparameters.tau
    for old, new, source in zip(before, after, followed, strict=True):
        torch.testing.assert_close(new, old + tau * (source - old))


def test_no_value_network_is_built_trained_or_reported():
    sac = filled()
    assert sac.value is None and sac.target_value is None
    trained = {id(p) for group in sac.optimizer.param_groups for p in group["params"]}
    assert not {id(p) for target in sac.q_targets for p in target.parameters()} & trained
    sac.add(trajectory(SPECS["continuous"], 99))
    stats = sac.update(step=100)
    assert "Losses/Value Loss" not in stats and {"Losses/Q1 Loss", "Losses/Policy Loss"} <= set(stats)
    assert {"q1_target", "q2_target"} <= sac.state().keys() and "value" not in sac.state()


def test_resume_continues_exactly(tmp_path):
    uninterrupted = target_q_trainer(5, save_replay_buffer=True)
    run_serial(uninterrupted, range(20))
    status = TrainingStatus(tmp_path / "training_status.json")
    first = target_q_trainer(5, save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    run_serial(first, range(9))
    first.save_checkpoint()
    resumed = target_q_trainer(
        99, save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    resumed.resume()
    run_serial(resumed, range(9, 20))
    a, b = resumed.algorithm, uninterrupted.algorithm
    assert isinstance(a, SAC) and isinstance(b, SAC)
    assert_same(
        {k: v for k, v in a.state().items() if k in ("actor", "q1", "q2", "q1_target", "q2_target")},
        {k: v for k, v in b.state().items() if k in ("actor", "q1", "q2", "q1_target", "q2_target")},
    )


@pytest.mark.parametrize("trained_with", [TargetCritic.VALUE, TargetCritic.Q])
def test_a_checkpoint_of_the_other_target_critic_is_refused_by_name(tmp_path, trained_with):
    status = TrainingStatus(tmp_path / "training_status.json")
    other = TargetCritic.Q if trained_with == TargetCritic.VALUE else TargetCritic.VALUE
    first = make_trainer(
        SPECS["continuous"], target_critic=trained_with, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    run_serial(first, range(3))
    first.save_checkpoint()
    resumed = make_trainer(
        SPECS["continuous"], target_critic=other, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    with pytest.raises(CheckpointError, match=f"target_critic is {other}.*trained with target_critic: {trained_with}"):
        resumed.resume()


@pytest.mark.parametrize("kind", ["discrete", "hybrid"])
def test_discrete_actions_are_refused_by_name(kind):
    with pytest.raises(ConfigError, match=r"behaviors\.Walker\.hyperparameters\.target_critic: q .* continuous"):
        make_trainer(SPECS[kind], **TARGET_Q)


def test_memory_is_refused_before_any_work():
    with_memory = attrs.evolve(
        settings(**TARGET_Q),
        network_settings=attrs.evolve(settings().network_settings, memory=MemorySettings(sequence_length=4)),
    )
    report = check_trainer_settings("behaviors.Walker", with_memory)
    assert any("behaviors.Walker.hyperparameters.target_critic: q" in e and "memory" in e for e in report.errors)
    assert not check_trainer_settings("behaviors.Walker", settings(**TARGET_Q)).errors


def test_the_key_is_read_and_written_back_only_where_set():
    options = structure_run_options(
        {
            "behaviors": {
                "Hopper": {"trainer_type": "sac", "hyperparameters": {"target_critic": "q"}},
                "Walker": {"trainer_type": "sac"},
            }
        }
    )
    assert options.behaviors["Hopper"].hyperparameters.target_critic == TargetCritic.Q
    assert options.behaviors["Walker"].hyperparameters.target_critic == TargetCritic.VALUE
    written = unstructure_run_options(options)["behaviors"]
    assert written["Hopper"]["hyperparameters"]["target_critic"] == "q"
    assert "target_critic" not in written["Walker"]["hyperparameters"]  # ML-Agents 0.28 loads the file
    with pytest.raises(ConfigError, match="target_critic"):
        structure_run_options({"behaviors": {"H": {"trainer_type": "sac", "hyperparameters": {"target_critic": "v"}}}})
