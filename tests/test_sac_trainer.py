"""The trainer loop with SAC: ML-Agents' update-to-data ratio (serial and threaded), its update
(one optimiser that takes the steps of ML-Agents' three), tags, the replay buffer saved with
checkpoints and an exact resume, initialisation from another run, the squashed policy."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors import AgentManagerQueue, Trajectory
from stats import StatsHub, StatsReporter, StatsWriter
from tests.steps import behavior_spec
from trainers.exceptions import CheckpointError, ConfigError
from trainers.files.checkpoints import BehaviorCheckpoints, load_state
from trainers.files.status import TrainingStatus
from trainers.loop.registry import TrainerRegistry
from trainers.loop.trainer import Trainer, TrainerThread
from trainers.sac.algorithm import SAC
from trainers.settings import ExtrinsicSettings, NetworkSettings, RewardSignalType, SACSettings, TrainerSettings

SPECS = {
    "continuous": behavior_spec(obs_shapes=((3,),), continuous=2),
    "discrete": behavior_spec(obs_shapes=((3,),), continuous=0, branches=(3, 2)),
    "hybrid": behavior_spec(obs_shapes=((3,),), continuous=2, branches=(3,)),
}


def settings(**hyperparameters) -> TrainerSettings:
    return TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(
            **{"batch_size": 8, "buffer_size": 200, "buffer_init_steps": 0, "steps_per_update": 2.0, **hyperparameters}
        ),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1, normalize=True),
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=0.9)},
        time_horizon=8,
        summary_freq=40,
        checkpoint_interval=96,
        keep_checkpoints=2,
        max_steps=10_000,
    )


def make_trainer(
    spec: BehaviorSpec = SPECS["hybrid"], seed: int = 0, checkpoints=None, reporter=None, **hyperparameters
) -> Trainer:
    behavior_settings = settings(**hyperparameters)
    reporter = reporter if reporter is not None else StatsReporter("Walker")
    sac = SAC(
        behavior_name="Walker", behavior_spec=spec, settings=behavior_settings, stats_reporter=reporter, seed=seed
    )
    return Trainer(
        behavior_name="Walker",
        settings=behavior_settings,
        algorithm=sac,
        stats_reporter=reporter,
        checkpoints=checkpoints,
    )


def trajectory(spec: BehaviorSpec, seed: int, length: int = 8) -> Trajectory:
    rng = np.random.default_rng(seed)
    c, branches = spec.action_spec.continuous_size, spec.action_spec.discrete_branches
    done = np.zeros(length, bool)
    done[-1] = seed % 4 == 3
    return Trajectory(
        behavior_id="Walker?team=0",
        agent_id=f"agent_0-{seed % 3}",
        obs=(rng.standard_normal((length, 3)).astype(np.float32),),
        next_obs=(rng.standard_normal(3).astype(np.float32),),
        rewards=rng.standard_normal(length).astype(np.float32),
        done=done,
        interrupted=np.zeros(length, bool),
        continuous_actions=rng.uniform(-1, 1, (length, c)).astype(np.float32),
        discrete_actions=np.stack([rng.integers(0, n, length) for n in branches], axis=1).astype(np.int32)
        if branches
        else np.zeros((length, 0), np.int32),
        continuous_log_probs=np.zeros((length, c), np.float32),
        discrete_log_probs=np.zeros((length, len(branches)), np.float32),
        action_masks=np.ones((length, sum(branches)), bool),
        prev_continuous_actions=np.zeros((length, c), np.float32),
        prev_discrete_actions=np.zeros((length, len(branches)), np.int32),
        memories=np.zeros((length, 0), np.float32),
    )


def run_serial(trainer: Trainer, seeds, queue: AgentManagerQueue | None = None) -> AgentManagerQueue:
    queue = queue or AgentManagerQueue("Walker?team=0")
    if queue not in trainer._trajectory_queues:
        trainer.subscribe_trajectory_queue(queue)
    spec = trainer.policy.behavior_spec
    for seed in seeds:
        queue.put(trajectory(spec, seed))
        while trainer.advance():
            pass
    return queue


def mlagents_gradient_steps(step_counts, batch_size: int, init: int, steps_per_update: float) -> int:
    """ML-Agents' SACTrainer loop, replayed: after each trajectory, update while
    ``(step - buffer_init_steps) / update_steps > steps_per_update`` (update_steps from 1)."""
    update_steps, step, buffered = 1, 0, 0
    for n in step_counts:
        step += n
        buffered += n
        if buffered >= batch_size and step >= init:
            while (step - init) / update_steps > steps_per_update:
                update_steps += 1
    return update_steps - 1


def parameters(sac: SAC) -> dict[str, torch.Tensor]:
    tensors = {f"actor.{k}": v for k, v in sac.policy.actor.state_dict().items()}
    tensors |= {f"q1.{k}": v for k, v in sac.q1.state_dict().items()}
    tensors |= {f"q2.{k}": v for k, v in sac.q2.state_dict().items()}
    tensors |= {f"value.{k}": v for k, v in sac.value.state_dict().items()}
    tensors |= {f"target.{k}": v for k, v in sac.target_value.state_dict().items()}
    tensors |= {"alpha.c": sac.continuous_log_alpha, "alpha.d": sac.discrete_log_alphas}
    return {k: v.detach().clone() for k, v in tensors.items()}


def assert_same(a: dict, b: dict, atol: float = 0.0) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=atol, msg=key)


# ---------------------------------------------------------------- the ratio


@pytest.mark.parametrize(("init", "steps_per_update"), [(0, 2.0), (20, 2.5), (0, 0.5)])
def test_gradient_steps_keep_mlagents_ratio(init, steps_per_update):
    trainer = make_trainer(buffer_init_steps=init, steps_per_update=steps_per_update)
    counts = []
    for seed in range(12):
        run_serial(trainer, [seed])
        counts.append(8)
        expected = mlagents_gradient_steps(counts, 8, init, steps_per_update)
        assert trainer.algorithm.update_steps - 1 == expected, (seed, expected)
    assert expected == int(np.ceil((96 - init) / steps_per_update)) - 1


def test_a_threaded_trainer_neither_falls_behind_nor_runs_ahead():
    trainer = make_trainer(SPECS["continuous"], steps_per_update=1.5)
    queue: AgentManagerQueue = AgentManagerQueue("Walker?team=0", maxlen=2)  # back-pressure
    trainer.subscribe_trajectory_queue(queue)
    stop = threading.Event()
    thread = TrainerThread(trainer, stop)
    thread.start()
    for seed in range(40):
        queue.put(trajectory(SPECS["continuous"], seed), timeout=10.0)
    deadline = time.monotonic() + 10.0
    while (trainer.step < 320 or trainer.algorithm.ready()) and time.monotonic() < deadline:
        time.sleep(0.01)
    stop.set()
    thread.join(5.0)
    thread.raise_if_failed()
    assert trainer.step == 320
    assert trainer.algorithm.update_steps - 1 == mlagents_gradient_steps([8] * 40, 8, 0, 1.5) == 213


def test_the_trainer_updates_before_it_takes_more_experience():
    trainer = make_trainer(SPECS["continuous"])
    queue: AgentManagerQueue = AgentManagerQueue("Walker?team=0")
    trainer.subscribe_trajectory_queue(queue)
    for seed in range(10):
        queue.put(trajectory(SPECS["continuous"], seed))
    trainer.advance()  # one trajectory makes updates due: they come before the next one
    assert trainer.step == 8 and queue.qsize() == 9
    assert trainer.algorithm.update_steps - 1 == mlagents_gradient_steps([8], 8, 0, 2.0) == 3


def test_no_update_before_buffer_init_steps_and_a_minibatch():
    trainer = make_trainer(buffer_init_steps=24, batch_size=16)
    run_serial(trainer, [0, 1])  # 16 steps: a minibatch, but not 24 steps yet
    assert trainer.algorithm.update_steps == 1 and not trainer.algorithm.ready()
    run_serial(trainer, [2])
    assert trainer.algorithm.update_steps == 1  # 24 - 24 = 0 steps beyond the initial ones
    run_serial(trainer, [3])
    assert trainer.algorithm.update_steps - 1 == 3  # 8 steps / 2 per update, less ML-Agents' one


# ---------------------------------------------------------------- the update


@pytest.mark.parametrize("kind", list(SPECS))
def test_one_step_equals_mlagents_three_optimisers(kind):
    """ML-Agents steps a policy, a value (Q1 + Q2 + V) and an entropy optimiser, each after its
    own backward pass, then soft-updates the target; one Adam over everything, with the policy's
    gradient taken on its own, must land on the same parameters."""
    spec = SPECS[kind]
    ours, reference = make_trainer(spec, seed=3).algorithm, make_trainer(spec, seed=3).algorithm
    for sac in (ours, reference):
        for seed in range(4):
            sac.add(trajectory(spec, seed))
    assert_same(parameters(ours), parameters(reference))
    for _ in range(3):
        state = ours._sampling.get_state(), ours._noise.get_state()
        batch = ours.replay.sample(8, ours._sampling)
        ours._gradient_step(batch)

        reference._sampling.set_state(state[0])
        reference._noise.set_state(state[1])
        batch = reference.replay.sample(8, reference._sampling)
        losses = reference.losses(batch)
        actor = list(reference.policy.actor.parameters())
        critics = [*reference.q1.parameters(), *reference.q2.parameters(), *reference.value.parameters()]
        alphas = [reference.continuous_log_alpha] if spec.action_spec.continuous_size else []
        alphas += [reference.discrete_log_alphas] if spec.action_spec.discrete_branches else []
        optimisers = getattr(reference, "_reference_optimisers", None)
        if optimisers is None:
            optimisers = reference._reference_optimisers = [
                torch.optim.Adam(group, lr=3e-4) for group in (actor, critics, alphas)
            ]
        policy_optimiser, value_optimiser, entropy_optimiser = optimisers
        policy_optimiser.zero_grad()
        losses.policy.backward()
        policy_optimiser.step()
        value_optimiser.zero_grad()  # drops what the policy loss left on Q1
        (losses.q1 + losses.q2 + losses.value).backward()
        value_optimiser.step()
        entropy_optimiser.zero_grad()
        losses.entropy_coefficient.backward()
        entropy_optimiser.step()
        reference.soft_update_target()
        assert_same(parameters(ours), parameters(reference), atol=1e-6)


@pytest.mark.parametrize("kind", list(SPECS))
def test_updates_write_mlagents_sac_tags(kind):
    class Capture(StatsWriter):
        def __init__(self):
            self.windows = []

        def write_stats(self, category, values, step):
            self.windows.append((step, dict(values)))

    capture = Capture()
    trainer = make_trainer(SPECS[kind], reporter=StatsHub([capture]).reporter("Walker"))
    run_serial(trainer, range(12))  # 96 steps: summaries at 40 and 80
    window = capture.windows[1][1]
    tags = {
        "Losses/Policy Loss",
        "Losses/Value Loss",
        "Losses/Q1 Loss",
        "Losses/Q2 Loss",
        "Policy/Learning Rate",
        "Policy/Extrinsic Value",
        "Policy/Extrinsic Reward",
    }
    if kind != "discrete":
        tags.add("Policy/Continuous Entropy Coeff")
    if kind != "continuous":
        tags.add("Policy/Discrete Entropy Coeff")
    assert tags <= set(window), tags - set(window)
    coefficients = {"Policy/Continuous Entropy Coeff", "Policy/Discrete Entropy Coeff"}
    assert not (coefficients - tags) & set(window)  # a coefficient the spec lacks is not written
    assert window["Policy/Learning Rate"].mean == pytest.approx(3e-4)  # SAC's schedule: constant


# ---------------------------------------------------------------- checkpoints


def test_resume_with_the_saved_replay_buffer_continues_exactly(tmp_path):
    uninterrupted = make_trainer(seed=5, save_replay_buffer=True)
    run_serial(uninterrupted, range(30))

    status = TrainingStatus(tmp_path / "training_status.json")
    first = make_trainer(
        seed=5, save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    run_serial(first, range(13))  # a checkpoint at step 96, mid-run; saved again at 104
    first.save_checkpoint()
    replay_file = tmp_path / "Walker" / "last_replay_buffer.pt"
    assert load_state(replay_file)["step"] == first.step == 104
    resumed = make_trainer(
        seed=99, save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    resumed.resume()
    assert resumed.step == 104 and len(resumed.algorithm.replay) == 104
    run_serial(resumed, range(13, 30))
    assert resumed.algorithm.update_steps == uninterrupted.algorithm.update_steps
    assert_same(parameters(resumed.algorithm), parameters(uninterrupted.algorithm))


def test_without_save_replay_buffer_no_file_and_a_resume_refills(tmp_path):
    status = TrainingStatus(tmp_path / "training_status.json")
    first = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    run_serial(first, range(5))
    first.save_checkpoint()
    assert not (tmp_path / "Walker" / "last_replay_buffer.pt").exists()
    resumed = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    resumed.resume()
    sac = resumed.algorithm
    assert len(sac.replay) == 0 and sac.update_steps == first.algorithm.update_steps
    run_serial(resumed, [5])  # a minibatch again: the owed steps of the new data only
    assert sac.update_steps - 1 == mlagents_gradient_steps([8] * 6, 8, 0, 2.0)


def test_a_saved_buffer_is_not_read_once_save_replay_buffer_is_off(tmp_path):
    status = TrainingStatus(tmp_path / "training_status.json")
    first = make_trainer(save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    run_serial(first, range(5))
    first.save_checkpoint()
    resumed = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    resumed.resume()
    assert len(resumed.algorithm.replay) == 0


def test_a_replay_buffer_that_does_not_fit_is_refused_by_name(tmp_path):
    status = TrainingStatus(tmp_path / "training_status.json")
    continuous = make_trainer(
        SPECS["continuous"], save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    run_serial(continuous, range(3))
    continuous.save_checkpoint()
    hybrid = make_trainer(save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    hybrid.step = continuous.step
    with pytest.raises(CheckpointError, match=r"last_replay_buffer.pt: does not fit behavior 'Walker'.*action_masks"):
        hybrid._load_replay_buffer()


def test_initialize_from_takes_weights_not_counters_or_buffer(tmp_path):
    status = TrainingStatus(tmp_path / "s.json")
    source = make_trainer(
        seed=1, save_replay_buffer=True, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status)
    )
    run_serial(source, range(6))
    source.save_checkpoint()
    target = make_trainer(seed=2)
    target.initialize_from(tmp_path / "Walker")
    sac = target.algorithm
    assert target.step == 0 and sac.steps == 0 and sac.update_steps == 1 and len(sac.replay) == 0
    assert_same(parameters(sac), parameters(source.algorithm))


def test_the_registry_builds_sac():
    trainer = TrainerRegistry.with_plugins().create(
        behavior_name="Walker",
        behavior_spec=SPECS["hybrid"],
        settings=settings(),
        stats_reporter=StatsReporter("Walker"),
        checkpoints=None,
        seed=0,
        device="cpu",
    )
    assert isinstance(trainer.algorithm, SAC)


# ---------------------------------------------------------------- the policy


def test_the_policy_acts_with_tanh_squashed_actions_in_range():
    sac = make_trainer(SPECS["hybrid"]).algorithm
    obs = [np.random.default_rng(0).standard_normal((500, 3)).astype(np.float32) * 10]
    info = sac.policy.act(obs, np.ones((500, 3), bool), np.arange(500))
    continuous = info.continuous_actions
    assert np.abs(continuous).max() <= 1.0 and np.array_equal(info.env_actions.continuous, continuous)
    with torch.no_grad():
        log_probs, _, _ = sac.policy.actor.evaluate_actions(
            sac.policy.obs_to_tensors(obs), None, torch.as_tensor(continuous), torch.as_tensor(info.discrete_actions)
        )
    inside = np.abs(continuous).max(axis=1) < 0.999  # atanh is exact away from the ends
    np.testing.assert_allclose(log_probs.numpy()[inside], info.continuous_log_probs[inside], atol=2e-3)


def test_a_state_dependent_sigma_is_clamped_as_mlagents():
    sac = make_trainer(SPECS["continuous"]).algorithm
    with torch.no_grad():
        sac.policy.actor.log_std_head.bias.fill_(50.0)
        dist = sac.policy.actor([torch.zeros(2, 3)])
    assert dist.log_std.shape == (2, 2) and torch.all(dist.log_std == 2.0)


def test_settings_keys_reach_the_algorithm():
    trainer = make_trainer(tau=0.25, init_entcoef=0.3, buffer_size=77, learning_rate=1e-3)
    sac = trainer.algorithm
    assert sac.replay.capacity == 77
    assert sac.continuous_log_alpha.exp().item() == pytest.approx(0.3)
    assert sac.discrete_log_alphas.exp().tolist() == pytest.approx([0.3])
    assert sac.optimizer.param_groups[0]["lr"] == 1e-3
    with torch.no_grad():
        for parameter in sac.value.parameters():
            parameter.add_(1.0)
    before = parameters(sac)
    sac.soft_update_target()
    after = parameters(sac)
    for key in before:
        if key.startswith("target."):
            value = before[key.replace("target.", "value.", 1)]
            torch.testing.assert_close(after[key], before[key] + 0.25 * (value - before[key]))


def test_a_replay_buffer_larger_than_memory_is_refused_up_front():
    camera = behavior_spec(obs_shapes=((84, 84, 3),), continuous=2)
    with pytest.raises(ConfigError, match=r"behaviors.Walker.hyperparameters.buffer_size: 100000000 transitions.*"):
        make_trainer(camera, buffer_size=100_000_000)


@pytest.mark.parametrize("steps_per_update", [0.1, 0.3, 1.0, 3.0, 7.5, 10.0, 30.0])
def test_updates_due_match_mlagents_loop_for_any_ratio(steps_per_update):
    sac = make_trainer(SPECS["continuous"], steps_per_update=steps_per_update, buffer_init_steps=7).algorithm
    sac.replay.add(trajectory(SPECS["continuous"], 0), np.zeros((8, 1), np.float32))
    for steps, update_steps in [(7, 1), (8, 1), (100, 1), (100, 5), (1000, 37), (12345, 400)]:
        sac.steps, sac.update_steps = steps, update_steps
        expected = 0
        while (steps - 7) / (update_steps + expected) > steps_per_update:
            expected += 1
        assert sac.updates_due() == expected, (steps, update_steps)
