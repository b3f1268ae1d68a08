"""The set-up PPO, POCA and SAC share, written once: a behavior's policy, its reward signals
(the value streams: names, value-estimate tags, per-episode reward reports), the sequence length
its memory trains on and behavioral cloning bound to the policy. Each algorithm subclasses
:class:`Learner` and adds only what is its own (critics, buffers, optimiser, schedules)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

import torch
from mlagents_envs.base_env import BehaviorSpec

from stats import StatsReporter
from trainers.exceptions import ConfigError
from trainers.networks.policy import TorchPolicy
from trainers.reward_signals.base import EpisodeSignalRewards, signal_tag
from trainers.reward_signals.behavioral_cloning import behavioral_cloning_for
from trainers.reward_signals.factory import create_reward_signals
from trainers.settings import Hyperparameters, TrainerSettings

H = TypeVar("H", bound=Hyperparameters)


class Learner(Generic[H]):
    """One behavior's policy and what trains it besides the algorithm's own networks.

    ``hyperparameters_type``: the settings class the algorithm takes (a ConfigError naming the
    behavior otherwise, before anything is built). ``value_tag``: the :mod:`stats.tags` function
    of a stream's value estimate (PPO's ``Value Estimate``, SAC's ``Value``). ``squashed_policy``:
    SAC's actor (state-dependent sigma, tanh-squashed actions). ``add_groupmate_rewards``: the
    extrinsic reward also counts the group mates' rewards (POCA).
    """

    def __init__(
        self,
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        settings: TrainerSettings,
        stats_reporter: StatsReporter,
        seed: int,
        device: str | torch.device,
        hyperparameters_type: type[H],
        value_tag: Callable[[str], str],
        squashed_policy: bool = False,
        add_groupmate_rewards: bool = False,
    ):
        hyperparameters = settings.hyperparameters
        if not isinstance(hyperparameters, hyperparameters_type):
            algorithm = hyperparameters_type.__name__.removesuffix("Settings")
            raise ConfigError(f"behaviors.{behavior_name}.hyperparameters: {algorithm} settings expected")
        self.hyperparameters: H = hyperparameters
        self.settings = settings
        self.stats_reporter = stats_reporter
        self.policy = TorchPolicy(
            behavior_spec,
            settings.network_settings,
            seed=seed,
            device=device,
            conditional_sigma=squashed_policy,
            tanh_squash=squashed_policy,
        )
        self.device = self.policy.device
        self.reward_signals = create_reward_signals(
            behavior_name,
            settings,
            behavior_spec,
            seed=seed,
            device=device,
            add_groupmate_rewards=add_groupmate_rewards,
        )
        self.stream_names = [signal.name for signal in self.reward_signals]
        self._value_tags = [signal_tag(name, value_tag) for name in self.stream_names]
        self._episode_rewards = EpisodeSignalRewards(stats_reporter, self.stream_names)
        memory = settings.network_settings.memory
        self.sequence_length = 1 if memory is None else int(memory.sequence_length)
        self.cloning = behavioral_cloning_for(
            behavior_name, self.policy, settings, sequence_length=self.sequence_length, seed=seed
        )
