"""The trainer loop with PPO: bootstrapping, updates, summaries, checkpoints and exact resume, threads."""

from __future__ import annotations

import json
import threading
from unittest.mock import patch

import attrs
import numpy as np
import pytest
import torch

from processors import AgentManagerQueue, Trajectory
from stats import StatsHub, StatsReporter, StatsWriter
from tests.steps import behavior_spec
from tests.support.plugins import write_fake_plugin
from trainers.exceptions import CheckpointError, ConfigError, TrainerError, UnknownTrainerTypeError
from trainers.files.checkpoints import BehaviorCheckpoints, load_state
from trainers.files.status import TrainingStatus
from trainers.loop.registry import TRAINER_TYPE_GROUP, TrainerRegistry
from trainers.loop.trainer import Trainer, TrainerThread
from trainers.networks.policy import NormalizerStats, newest_updates
from trainers.ppo.algorithm import PPO
from trainers.settings import (
    ExtrinsicSettings,
    GAILSettings,
    NetworkSettings,
    PPOSettings,
    RewardSignalType,
    TrainerSettings,
)

SPEC = behavior_spec(obs_shapes=((3,),), continuous=2, branches=(3,))


def settings(**changes) -> TrainerSettings:
    base = TrainerSettings(
        hyperparameters=PPOSettings(batch_size=16, buffer_size=48, num_epoch=2),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1, normalize=True),
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=0.9)},
        time_horizon=8,
        summary_freq=40,
        checkpoint_interval=100,
        keep_checkpoints=2,
        max_steps=400,
    )
    return attrs.evolve(base, **changes)


def make_trainer(seed: int = 0, checkpoints=None, stats_reporter=None, **changes) -> Trainer:
    reporter = stats_reporter if stats_reporter is not None else StatsReporter("Walker")
    behavior_settings = settings(**changes)
    ppo = PPO(
        behavior_name="Walker", behavior_spec=SPEC, settings=behavior_settings, stats_reporter=reporter, seed=seed
    )
    return Trainer(
        behavior_name="Walker",
        settings=behavior_settings,
        algorithm=ppo,
        stats_reporter=reporter,
        checkpoints=checkpoints,
    )


def trajectory(seed: int, length: int = 8, done: bool = False, interrupted: bool = False) -> Trajectory:
    rng = np.random.default_rng(seed)
    flags = np.zeros(length, bool)
    done_flags, interrupted_flags = flags.copy(), flags.copy()
    done_flags[-1], interrupted_flags[-1] = done, interrupted
    return Trajectory(
        behavior_id="Walker?team=0",
        agent_id=f"agent_0-{seed % 3}",
        obs=(rng.standard_normal((length, 3)).astype(np.float32),),
        next_obs=(rng.standard_normal(3).astype(np.float32),),
        rewards=rng.standard_normal(length).astype(np.float32),
        done=done_flags,
        interrupted=interrupted_flags,
        continuous_actions=rng.standard_normal((length, 2)).astype(np.float32),
        discrete_actions=rng.integers(0, 3, (length, 1)).astype(np.int32),
        continuous_log_probs=np.full((length, 2), -1.0, np.float32),
        discrete_log_probs=np.full((length, 1), np.log(1 / 3), np.float32),
        action_masks=np.ones((length, 3), bool),
        prev_continuous_actions=np.zeros((length, 2), np.float32),
        prev_discrete_actions=np.zeros((length, 1), np.int32),
        memories=np.zeros((length, 0), np.float32),
    )


def feed(trainer: Trainer, seeds, queue=None) -> AgentManagerQueue:
    queue = queue or AgentManagerQueue("Walker?team=0")
    if queue not in trainer._trajectory_queues:
        trainer.subscribe_trajectory_queue(queue)
    for seed in seeds:
        queue.put(trajectory(seed, done=seed % 4 == 3))
    return queue


def run_serial(trainer: Trainer, seeds) -> None:
    """Trajectories arrive one at a time, as from an environment; the trainer keeps up."""
    for seed in seeds:
        feed(trainer, [seed])
        while trainer.advance():
            pass


def weights(trainer: Trainer) -> dict[str, torch.Tensor]:
    """Copies of every actor and critic tensor (state dicts share storage with the modules)."""
    actor = {k: v.clone() for k, v in trainer.policy.actor.state_dict().items()}
    critic = trainer.algorithm.critic.state_dict()
    return {**actor, **{f"critic.{k}": v.clone() for k, v in critic.items()}}


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)


@pytest.mark.parametrize("interrupted", [True, False])
def test_interrupted_endings_bootstrap_and_true_terminals_do_not(interrupted):
    trainer = make_trainer(network_settings=NetworkSettings(hidden_units=16, num_layers=1))
    ended = trajectory(1, length=4, done=True, interrupted=interrupted)
    ppo = trainer.algorithm
    ppo.add(ended)
    batch = ppo.buffer.to_batch(ppo.device)
    with torch.no_grad():
        next_value = ppo.critic([torch.as_tensor(ended.next_obs[0][None])])["extrinsic"].item()
    last_return = batch.returns[-1, 0].item()
    reward = float(ended.rewards[-1])
    expected = reward + 0.9 * next_value if interrupted else reward
    assert last_return == pytest.approx(expected, abs=1e-5)


def test_update_happens_when_buffer_is_full_and_publishes_weights():
    trainer = make_trainer()
    policy_queue: AgentManagerQueue = AgentManagerQueue("Walker?team=0")
    trainer.publish_policy_queue(policy_queue)
    before = weights(trainer)
    run_serial(trainer, range(6))  # 48 samples: not more than buffer_size
    assert len(trainer.algorithm.buffer) == 48
    # no new weights yet; the normalisers' statistics after each trajectory, for the acting copies
    published = policy_queue.drain()
    assert len(published) == 6 and all(isinstance(update, NormalizerStats) for update in published)
    newest = published[-1].state
    assert_same_weights(newest, trainer.policy.normalizer_stats().state)
    assert {float(v) for k, v in newest.items() if k.endswith(".count")} == {48.0}
    run_serial(trainer, [6])
    assert len(trainer.algorithm.buffer) == 0
    published_weights, stats = newest_updates(policy_queue.drain())
    assert published_weights is not None and stats is None  # the weights carry the normalisers
    assert_same_weights(published_weights, trainer.policy.get_weights())
    assert any(not torch.equal(before[k], v) for k, v in weights(trainer).items())
    assert trainer.step == 56


def test_summary_written_every_summary_freq_with_ml_agents_tags():
    class Capture(StatsWriter):
        def __init__(self):
            self.windows = []

        def write_stats(self, category, values, step):
            self.windows.append((step, dict(values)))

    capture = Capture()
    trainer = make_trainer(stats_reporter=StatsHub([capture]).reporter("Walker"))
    run_serial(trainer, range(12))  # 96 steps: summaries at 40 and 80
    assert [step for step, _ in capture.windows] == [40, 80]
    second = capture.windows[1][1]
    for tag in (
        "Losses/Policy Loss",
        "Losses/Value Loss",
        "Policy/Learning Rate",
        "Policy/Epsilon",
        "Policy/Beta",
        "Policy/Extrinsic Value Estimate",
        "Policy/Extrinsic Reward",
        "Is Training",
    ):
        assert tag in second, tag
    assert second["Is Training"].mean == 1.0
    assert second["Policy/Learning Rate"].mean < 3e-4  # linear schedule has moved


def test_training_stops_at_max_steps():
    trainer = make_trainer(max_steps=40)
    run_serial(trainer, range(10))
    assert trainer.step == 40 and not trainer.should_still_train


def run_queued(trainer: Trainer, seeds) -> None:
    """All trajectories queued first, then the trainer drains them (as a thread would)."""
    feed(trainer, seeds)
    while trainer.advance():
        pass


def test_threaded_matches_serial_for_one_seed_and_seed_matters():
    serial = make_trainer(seed=3)
    run_queued(serial, range(20))

    threaded = make_trainer(seed=3)
    stop = threading.Event()
    thread = TrainerThread(threaded, stop)
    queue = feed(threaded, range(20))
    thread.start()
    deadline = threading.Event()
    while (
        threaded.step < 160
        or not queue.empty()
        or len(threaded.algorithm.buffer) > threaded.algorithm.hyperparameters.buffer_size
    ):
        assert not deadline.wait(0.01) and thread.is_alive()
    stop.set()
    thread.join(10)
    thread.raise_if_failed()
    assert threaded.step == serial.step == 160
    assert_same_weights(weights(threaded), weights(serial))

    other = make_trainer(seed=4)
    run_queued(other, range(20))
    assert any(not torch.equal(v, weights(serial)[k]) for k, v in weights(other).items())


def test_exception_in_trainer_thread_reaches_main_thread():
    trainer = make_trainer()

    def explode(_trajectory):
        raise ValueError("NaN in observations")

    trainer.algorithm.add = explode
    stop = threading.Event()
    thread = TrainerThread(trainer, stop)
    feed(trainer, [0])
    thread.start()
    assert thread.failed.wait(10)
    with pytest.raises(TrainerError, match="Walker.*ValueError: NaN in observations"):
        thread.raise_if_failed()
    stop.set()
    thread.join(5)


def test_checkpoints_files_status_and_pruning(tmp_path):
    status = TrainingStatus(tmp_path / "run_logs" / "training_status.json")
    trainer = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 2, status))
    run_serial(trainer, range(40))  # 320 steps: checkpoints at 104, 200, 304 (crossing each 100)
    folder = tmp_path / "Walker"
    steps = sorted(int(p.stem.split("-")[1]) for p in folder.glob("Walker-*.pt"))
    assert len(steps) == 2 and steps[-1] >= 300  # the oldest was removed
    assert {p.stem for p in folder.glob("Walker-*.onnx")} == {f"Walker-{s}" for s in steps}
    assert (folder / "checkpoint.pt").exists()
    final = trainer.save_final()
    assert final == tmp_path / "Walker.onnx" and final.exists()
    data = json.loads((tmp_path / "run_logs" / "training_status.json").read_text())
    assert data["metadata"]["stats_format_version"] == "0.3.0"
    entry = data["Walker"]
    assert [c["steps"] for c in entry["checkpoints"]][-1] == trainer.step
    assert entry["checkpoints"][-1]["auxillary_file_paths"][0].endswith(f"Walker-{trainer.step}.pt")
    assert entry["final_checkpoint"]["file_path"].endswith("Walker.onnx")


def test_resume_continues_exactly_as_an_uninterrupted_run(tmp_path):
    uninterrupted = make_trainer(seed=5)
    run_serial(uninterrupted, range(30))

    status = TrainingStatus(tmp_path / "training_status.json")
    first = make_trainer(seed=5, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    run_serial(first, range(14))  # the 14th trajectory fills the buffer: an update empties it
    assert len(first.algorithm.buffer) == 0
    first.save_checkpoint()
    resumed = make_trainer(seed=99, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    resumed.resume()
    assert resumed.step == first.step == 112
    assert resumed.algorithm.schedules(resumed.step) == first.algorithm.schedules(first.step)
    assert resumed.elapsed_before == load_state(tmp_path / "Walker" / "checkpoint.pt")["elapsed_seconds"] > 0
    run_serial(resumed, range(14, 30))
    assert resumed.step == uninterrupted.step
    assert_same_weights(weights(resumed), weights(uninterrupted))


def test_resume_without_checkpoint_says_so(tmp_path):
    trainer = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, TrainingStatus(tmp_path / "s.json")))
    with pytest.raises(CheckpointError, match="cannot resume behavior 'Walker'.*checkpoint.pt does not exist"):
        trainer.resume()


def test_initialize_from_loads_weights_only(tmp_path):
    source = make_trainer(
        seed=1, checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, TrainingStatus(tmp_path / "s.json"))
    )
    run_serial(source, range(8))
    source.save_checkpoint()
    target = make_trainer(seed=2)
    target.initialize_from(tmp_path / "Walker")
    assert target.step == 0
    assert_same_weights(weights(target), weights(source))


class Payload:
    """Stands for any object a malicious checkpoint could smuggle in."""


def test_checkpoints_load_without_unpickling(tmp_path):
    path = tmp_path / "evil.pt"
    torch.save({"actor": Payload()}, path)
    with pytest.raises(CheckpointError, match="evil.pt: cannot load checkpoint"):
        load_state(path)


def test_random_bytes_are_not_a_checkpoint(tmp_path):
    path = tmp_path / "checkpoint.pt"
    path.write_bytes(np.random.default_rng(0).bytes(4096))
    with pytest.raises(CheckpointError, match="checkpoint.pt: not a checkpoint"):
        load_state(path)


def test_resume_with_other_network_settings_names_the_mismatch(tmp_path):
    status = TrainingStatus(tmp_path / "s.json")
    first = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    run_serial(first, range(2))
    first.save_checkpoint()
    wider = make_trainer(
        checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status),
        network_settings=NetworkSettings(hidden_units=32, num_layers=1, normalize=True),
    )
    with pytest.raises(CheckpointError, match="does not fit behavior 'Walker' as configured.*network_settings"):
        wider.resume()


def test_resume_or_initialize_from_with_another_activation_is_refused(tmp_path):
    """An activation leaves the weights' shapes alone, so the checkpoint records it: the same
    weights under another activation would be another policy. A checkpoint without the record
    (written before it) was trained with Swish."""
    status = TrainingStatus(tmp_path / "s.json")
    tanh = NetworkSettings(hidden_units=16, num_layers=1, normalize=True, activation="tanh")
    first = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status), network_settings=tanh)
    run_serial(first, range(2))
    first.save_checkpoint()
    swish = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status))
    message = "was trained with network_settings.activation tanh, and behavior 'Walker' is configured with swish"
    with pytest.raises(CheckpointError, match=f"{message}.*cannot --resume"):
        swish.resume()
    with pytest.raises(CheckpointError, match=f"{message}.*cannot --initialize-from"):
        make_trainer().initialize_from(tmp_path / "Walker")
    again = make_trainer(checkpoints=BehaviorCheckpoints(tmp_path, "Walker", 5, status), network_settings=tanh)
    again.resume()
    assert again.step == first.step
    older = {k: v for k, v in load_state(tmp_path / "Walker" / "checkpoint.pt").items() if k != "activation"}
    make_trainer().algorithm.load(older, weights_only=True)  # the algorithm itself never reads it
    older_path = tmp_path / "older.pt"
    torch.save(older, older_path)
    make_trainer(network_settings=NetworkSettings(hidden_units=16, num_layers=1, normalize=True)).initialize_from(
        older_path
    )
    with pytest.raises(CheckpointError, match="was trained with network_settings.activation swish"):
        make_trainer(network_settings=tanh).initialize_from(older_path)


def test_a_missing_gail_demonstration_is_named_with_its_key_path():
    signals = {RewardSignalType.EXTRINSIC: ExtrinsicSettings(), RewardSignalType.GAIL: GAILSettings(demo_path="x.demo")}
    with pytest.raises(ConfigError, match="behaviors.Walker.reward_signals.gail.demo_path: x.demo does not exist"):
        make_trainer(reward_signals=signals)


def test_registry_names_missing_trainer_type():
    registry = TrainerRegistry.with_plugins()
    with pytest.raises(UnknownTrainerTypeError, match="'mappo' has no trainer.*available: poca, ppo, sac"):
        registry.create(
            behavior_name="Walker",
            behavior_spec=SPEC,
            settings=settings(trainer_type="mappo"),
            stats_reporter=StatsReporter("Walker"),
            checkpoints=None,
            seed=0,
            device="cpu",
        )


def test_registry_loads_trainer_plugins_from_entry_points(tmp_path, monkeypatch):
    source = (
        "from trainers.ppo.algorithm import PPO\n"
        "from trainers.settings import PPOSettings\n"
        "class MyPPO(PPO):\n    pass\n"
        "def register():\n    return {'my_ppo': MyPPO}, {'my_ppo': PPOSettings}\n"
    )
    write_fake_plugin(tmp_path, "myplugin", source, TRAINER_TYPE_GROUP, {"my_ppo": "myplugin:register"})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = TrainerRegistry.with_plugins()
    assert registry.hyperparameter_types["my_ppo"] is PPOSettings
    trainer = registry.create(
        behavior_name="Walker",
        behavior_spec=SPEC,
        settings=settings(trainer_type="my_ppo"),
        stats_reporter=StatsReporter("Walker"),
        checkpoints=None,
        seed=0,
        device="cpu",
    )
    assert type(trainer.algorithm).__name__ == "MyPPO"


def test_registry_loads_algorithm_records_from_plugins(tmp_path, monkeypatch):
    source = (
        "from trainers.ppo.algorithm import PPO\n"
        "from trainers.settings import AlgorithmRecord, PPOSettings\n"
        "class RecordPPO(PPO):\n    pass\n"
        "def register():\n"
        "    return [AlgorithmRecord(name='record_ppo', hyperparameters_type=PPOSettings, factory=RecordPPO)]\n"
    )
    write_fake_plugin(tmp_path, "recordplugin", source, TRAINER_TYPE_GROUP, {"record_ppo": "recordplugin:register"})
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = TrainerRegistry.with_plugins()
    assert registry.hyperparameter_types["record_ppo"] is PPOSettings
    assert {"ppo", "sac", "poca", "record_ppo"} <= set(registry.records)
    trainer = registry.create(
        behavior_name="Walker",
        behavior_spec=SPEC,
        settings=settings(trainer_type="record_ppo"),
        stats_reporter=StatsReporter("Walker"),
        checkpoints=None,
        seed=0,
        device="cpu",
    )
    assert type(trainer.algorithm).__name__ == "RecordPPO"


def test_the_critic_reads_the_actors_normalisers_updated_once_per_trajectory():
    """ML-Agents updates a PPO critic's normalisers with the same observations as the actor's,
    so they always agree: the critic reads the actor's (one update per trajectory), and a
    checkpoint still holds the critic's keys, with the actor's statistics."""
    ppo = PPO(behavior_name="Walker", behavior_spec=SPEC, settings=settings(), stats_reporter=StatsReporter("W"))
    actor_norm = ppo.policy.actor.encoder.inputs[0].normalizer
    assert ppo.critic.encoder.inputs[0].normalizer is actor_norm
    calls = []
    update = type(actor_norm).update
    with patch.object(type(actor_norm), "update", lambda self, x: (calls.append(self), update(self, x))):
        ppo.add(trajectory(1))
    assert calls == [actor_norm] and int(actor_norm.count) > 0
    critic_state = ppo.critic.state_dict()
    assert torch.equal(critic_state["encoder.inputs.0.normalizer.mean"], actor_norm.mean)
