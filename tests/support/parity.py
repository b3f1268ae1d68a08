"""What the parity tests against ML-Agents 0.28 share: the weights their fixture scripts give
every parameter (``tests/fixtures/mlagents_0_28/pinned_values.py``, which the scripts import
too), ML-Agents' normaliser start, and the checks of an update's stats, parameters and
normalisers. For the PPO and MA-POCA fixtures (whose scripts share
``tests/fixtures/mlagents_0_28/parity_recording.py``): their trainer and behavior read back from
the fixture's header, our algorithm pinned as the scripts pin ML-Agents', their recorded
trajectories as ours, and a reporter that keeps every value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from processors.groups import Groupmates
from processors.trajectory import Trajectory
from stats import StatsReporter
from tests.fixtures.mlagents_0_28.pinned_values import weight_values
from trainers.networks.actor_critic import Normalizer
from trainers.settings import (
    CuriositySettings,
    ExtrinsicSettings,
    NetworkSettings,
    POCASettings,
    RewardSignalType,
    ScheduleType,
    TrainerSettings,
)

if TYPE_CHECKING:
    from trainers.networks.actor_critic import ObservationEncoder
    from trainers.poca.algorithm import POCA
    from trainers.ppo.algorithm import PPO


def start_normalizers_like_mlagents(module: torch.nn.Module) -> None:
    """ML-Agents' Normalizer starts from one pseudo-sample (normalization_steps 1, mean 0,
    variance 1); ours from none (count 0), which moves the first batches' statistics (RND Loss
    9.8836 instead of 9.4449 in the RND case): start every normaliser in ``module`` where
    ML-Agents' starts."""
    for child in module.modules():
        if isinstance(child, Normalizer):
            child.load_state_dict({"mean": child.mean, "var": child.var, "count": torch.ones((), dtype=torch.float64)})


def assert_stats_match(stats: Mapping[str, float], recorded: Mapping[str, float], tolerance: float) -> None:
    """The same tags as ML-Agents' update returned, each within ``tolerance`` (relative or absolute)."""
    assert stats.keys() == recorded.keys()
    for tag, value in recorded.items():
        assert stats[tag] == pytest.approx(value, rel=tolerance, abs=tolerance), tag


def assert_parameters_match(
    params: Mapping[str, torch.nn.Parameter], recorded: Mapping[str, Any], *, rtol: float = 0.0, atol: float = 1e-6
) -> None:
    """Each parameter's values at the fixture's sampled indices, as ML-Agents' were."""
    for name, sample in recorded.items():
        ours = params[name].detach().reshape(-1)[sample["index"]].numpy()
        np.testing.assert_allclose(ours, sample["values"], rtol=rtol, atol=atol, err_msg=name)


def assert_normalizer_matches(normalizer: object, recorded: Mapping[str, Any]) -> None:
    """Mean, variance and count as ML-Agents' normaliser ended (the scripts record its variance,
    not its running sum)."""
    assert isinstance(normalizer, Normalizer)
    np.testing.assert_allclose(normalizer.mean.numpy(), recorded["mean"], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(normalizer.var.numpy(), recorded["var"], rtol=1e-6, atol=1e-6)
    assert float(normalizer.count) == recorded["count"]


# ---------------------------------------------------------------------- PPO and MA-POCA fixtures


def recorded_trainer_settings(
    record: Mapping[str, Any],
    trainer_type: str,
    hyperparameters: type[POCASettings],
    *,
    batch_size: int,
    buffer_size: int,
    num_epoch: int,
    schedule: ScheduleType,
    max_steps: int,
    normalize: bool,
) -> TrainerSettings:
    """The settings the script gave ML-Agents (``parity_recording.trainer_settings``), from the
    fixture's header; ``schedule`` for the learning rate, beta and epsilon alike."""
    return TrainerSettings(
        trainer_type=trainer_type,
        hyperparameters=hyperparameters(
            batch_size=batch_size,
            buffer_size=buffer_size,
            learning_rate=record["learning_rate"],
            beta=record["beta"],
            epsilon=record["epsilon"],
            lambd=record["lambd"],
            num_epoch=num_epoch,
            learning_rate_schedule=schedule,
            beta_schedule=schedule,
            epsilon_schedule=schedule,
        ),
        network_settings=NetworkSettings(
            hidden_units=record["hidden_units"], num_layers=record["num_layers"], normalize=normalize
        ),
        reward_signals={
            RewardSignalType.EXTRINSIC: ExtrinsicSettings(gamma=record["gammas"]["extrinsic"], strength=1.0),
            RewardSignalType.CURIOSITY: CuriositySettings(
                gamma=record["gammas"]["curiosity"], strength=record["curiosity_strength"]
            ),
        },
        max_steps=max_steps,
        time_horizon=64,
    )


def recorded_behavior(record: Mapping[str, Any], visual: bool = False) -> BehaviorSpec:
    """The script's behavior (``parity_recording.behavior``): the vector observation, then with
    ``visual`` one of the header's ``visual_shape``; hybrid actions."""
    observations = [ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")]
    if visual:
        props = (DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,) * 2 + (DimensionProperty.NONE,)
        shape = tuple(record["visual_shape"])
        observations.append(ObservationSpec(shape, props, ObservationType.DEFAULT, "visual"))
    return BehaviorSpec(observations, ActionSpec(record["continuous_size"], tuple(record["branches"])))


def pin_as_recorded(algorithm: PPO | POCA, streams: Sequence[str]) -> None:
    """What the script did to ML-Agents' trainer (``parity_recording.add_pinned_policy``), done
    to ours: every trained parameter of the actor and the critic ``weight_values`` of its name,
    their normalisers started where ML-Agents' start, the curiosity stream's training switched
    off (its rewards are pinned per trajectory: :func:`pin_curiosity_rewards`)."""
    assert [signal.name for signal in algorithm.reward_signals] == list(streams)
    with torch.no_grad():
        for module in (algorithm.policy.actor, algorithm.critic):
            for name, param in module.named_parameters():
                if param.requires_grad:  # not POCA's max_members, a count
                    param.copy_(torch.as_tensor(weight_values(name, tuple(param.shape))))
    start_normalizers_like_mlagents(algorithm.policy.actor)
    start_normalizers_like_mlagents(algorithm.critic)
    curiosity = algorithm.reward_signals[1]
    assert curiosity.ignore_done
    curiosity.update = lambda batch: {}  # type: ignore[method-assign]


def pin_curiosity_rewards(
    algorithm: PPO | POCA, data: Mapping[str, Any], record: Mapping[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The curiosity stream's rewards for the trajectory ``data``: the recorded ones, times the
    strength (ML-Agents' ``evaluate`` leaves it to the trainer, ours applies it)."""
    pinned = np.asarray(data["curiosity_rewards"], np.float32) * np.float32(record["curiosity_strength"])
    monkeypatch.setattr(algorithm.reward_signals[1], "rewards", lambda trajectory: pinned)


def recorded_trajectory(
    data: Mapping[str, Any], record: Mapping[str, Any], *, group_id: int, groupmates: Groupmates | None = None
) -> Trajectory:
    """Ours from a trajectory the script recorded (``parity_recording.stored_steps`` and the log
    probabilities); its action masks where recorded (1: allowed), else every action allowed."""
    t = len(data["rewards"])
    branches = record["branches"]
    c = record["continuous_size"]
    if "action_masks" in data:
        action_masks = np.asarray(data["action_masks"]) == 1
    else:
        action_masks = np.ones((t, sum(branches)), bool)
    return Trajectory(
        behavior_id="B?team=0",
        agent_id=data["agent_id"],
        obs=(np.asarray(data["obs"], np.float32),),
        next_obs=(np.asarray(data["next_obs"], np.float32),),
        rewards=np.asarray(data["rewards"], np.float32),
        done=np.asarray(data["done"], bool),
        interrupted=np.asarray(data["interrupted"], bool),
        continuous_actions=np.asarray(data["continuous_actions"], np.float32),
        discrete_actions=np.asarray(data["discrete_actions"], np.int32),
        continuous_log_probs=np.asarray(data["continuous_log_probs"], np.float32),
        discrete_log_probs=np.asarray(data["discrete_log_probs"], np.float32),
        action_masks=action_masks,
        prev_continuous_actions=np.zeros((t, c), np.float32),
        prev_discrete_actions=np.zeros((t, len(branches)), np.int32),
        memories=np.zeros((t, 0), np.float32),
        group_id=np.full(t, group_id, np.int32),
        group_rewards=np.asarray(data["group_rewards"], np.float32),
        groupmates=groupmates,
    )


class RecordingReporter(StatsReporter):
    """Every value reported, per tag in order (a batch as its values)."""

    __slots__ = ("emitted",)

    def __init__(self, category: str) -> None:
        super().__init__(category)
        self.emitted: dict[str, list[float]] = {}

    def add_stat(self, key: str, value: float, *_: Any, **__: Any) -> None:
        self.emitted.setdefault(key, []).append(float(value))

    def add_stats(self, key: str, values: Any, *_: Any, **__: Any) -> None:
        self.emitted.setdefault(key, []).extend(np.asarray(values, np.float64).reshape(-1).tolist())


def record_stats(algorithm: PPO | POCA) -> dict[str, list[float]]:
    """Every value ``algorithm`` reports from now (its own stats and its episode rewards'), per
    tag in order."""
    reporter = RecordingReporter("B")
    algorithm.stats_reporter = reporter
    algorithm._episode_rewards._stats_reporter = reporter
    return reporter.emitted


def assert_normalizers_match(
    recorded: Mapping[str, Mapping[str, Any]], actor: ObservationEncoder, critic: ObservationEncoder
) -> None:
    """The vector normaliser (the first input's) of the actor's and the critic's encoders as the
    script recorded ML-Agents' (``parity_recording.normalizer_states``; none where the case does
    not normalise)."""
    encoders = {"actor": actor, "critic": critic}
    for name, state in recorded.items():
        assert_normalizer_matches(encoders[name].inputs[0].normalizer, state)
