"""The set-up PPO, POCA and SAC share, written once: a behavior's policy, its reward signals
(the value streams: names, value-estimate tags, per-episode reward reports), the sequence length
its memory trains on and behavioral cloning bound to the policy. Each algorithm subclasses
:class:`Learner`, says what kind of learner it is in one :class:`LearnerKind`, and builds only
what is its own (critics, buffers, optimiser, schedules) in :meth:`Learner.build_own`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Generic, TypeVar, cast

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.exceptions import ConfigError
from trainers.networks.policy import TorchPolicy
from trainers.reward_signals.base import EpisodeSignalRewards, signal_tag
from trainers.reward_signals.behavioral_cloning import behavioral_cloning_for
from trainers.reward_signals.factory import create_reward_signals
from trainers.reward_signals.return_scale import ReturnScale
from trainers.settings import Hyperparameters, TrainerSettings

H = TypeVar("H", bound=Hyperparameters)


@attrs.frozen
class LearnerKind:
    """What sets one algorithm's shared set-up apart.

    ``hyperparameters_type``: the settings class the algorithm takes (a ConfigError naming the
    behavior otherwise, before anything is built). ``value_tag``: the :mod:`stats.tags` function
    of a stream's value estimate (PPO's ``Value Estimate``, SAC's ``Value``). ``squashed_policy``:
    SAC's actor (state-dependent sigma, tanh-squashed actions). ``add_groupmate_rewards``: the
    extrinsic reward also counts the group mates' rewards (POCA). ``scales_rewards``: the
    algorithm learns from :meth:`Learner.learned_rewards`, so a signal's ``normalize`` is honoured
    (PPO, POCA).
    """

    hyperparameters_type: type[Hyperparameters]
    value_tag: Callable[[str], str]
    squashed_policy: bool = False
    add_groupmate_rewards: bool = False
    scales_rewards: bool = False


class Learner(ABC, Generic[H]):
    """One behavior's policy and what trains it besides the algorithm's own networks.

    Constructed as the registry constructs every algorithm (keyword-only: behavior name and
    spec, settings, stats reporter, seed, device); a subclass sets :attr:`kind` and implements
    :meth:`build_own`, which runs last.
    """

    kind: ClassVar[LearnerKind]

    def __init__(
        self,
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        settings: TrainerSettings,
        stats_reporter: StatsReporter,
        seed: int = 0,
        device: str | torch.device = "cpu",
    ) -> None:
        kind = self.kind
        hyperparameters = settings.hyperparameters
        if not isinstance(hyperparameters, kind.hyperparameters_type):
            algorithm = kind.hyperparameters_type.__name__.removesuffix("Settings")
            raise ConfigError(f"behaviors.{behavior_name}.hyperparameters: {algorithm} settings expected")
        self.hyperparameters = cast(H, hyperparameters)
        self.settings = settings
        self.stats_reporter = stats_reporter
        self.policy = TorchPolicy(
            behavior_spec,
            settings.network_settings,
            seed=seed,
            device=device,
            conditional_sigma=kind.squashed_policy,
            tanh_squash=kind.squashed_policy,
        )
        self.device = self.policy.device
        self.reward_signals = create_reward_signals(
            behavior_name,
            settings,
            behavior_spec,
            seed=seed,
            device=device,
            add_groupmate_rewards=kind.add_groupmate_rewards,
        )
        self.stream_names = [signal.name for signal in self.reward_signals]
        # the signals with networks of their own to update (curiosity, RND, GAIL)
        self._training_signals = [signal for signal in self.reward_signals if signal.trains]
        self._value_tags = [signal_tag(name, kind.value_tag) for name in self.stream_names]
        self._episode_rewards = EpisodeSignalRewards(stats_reporter, self.stream_names)
        self._return_scales = {
            signal_kind.value: ReturnScale(signal_settings.gamma)
            for signal_kind, signal_settings in settings.reward_signals.items()
            if signal_settings.normalize
        }
        if self._return_scales and not kind.scales_rewards:  # the configuration check refuses it first
            name = next(iter(self._return_scales))
            raise ConfigError(f"behaviors.{behavior_name}.reward_signals.{name}.normalize: not for this trainer type")
        memory = settings.network_settings.memory
        self.sequence_length = 1 if memory is None else int(memory.sequence_length)
        self.cloning = behavioral_cloning_for(
            behavior_name, self.policy, settings, sequence_length=self.sequence_length, seed=seed
        )
        self.build_own(behavior_name, behavior_spec, seed)

    def learned_rewards(self, name: str, trajectory: Trajectory, rewards: np.ndarray) -> np.ndarray:
        """The rewards of stream ``name`` as the algorithm learns them: scaled when the signal
        sets ``normalize`` (:mod:`trainers.reward_signals.return_scale`), else ``rewards``."""
        scale = self._return_scales.get(name)
        return rewards if scale is None else scale.scale(trajectory, rewards)

    def shared_state(self) -> dict[str, Any]:
        """The checkpoint entries of the shared set-up: the reward signals' state
        (``reward_signals``), behavioral cloning's (``behavioral_cloning``) and the reward
        scales' statistics (``return_scales``), when they have any."""
        state: dict[str, Any] = {}
        signals = {signal.name: signal.state() for signal in self.reward_signals}
        if any(signals.values()):
            state["reward_signals"] = signals
        if self.cloning is not None:
            state["behavioral_cloning"] = self.cloning.state()
        if self._return_scales:
            state["return_scales"] = {name: scale.state() for name, scale in self._return_scales.items()}
        return state

    def load_shared_state(self, state: Mapping[str, Any], *, weights_only: bool) -> None:
        """Restore :meth:`shared_state` from a checkpoint's ``state`` (cloning's optimiser
        only when not ``weights_only``, as the algorithm's own)."""
        for signal in self.reward_signals:
            signal.load(state.get("reward_signals", {}).get(signal.name, {}))
        # a checkpoint from before ``normalize`` was set has no statistics: they start afresh
        for name, scale_state in state.get("return_scales", {}).items():
            if name in self._return_scales:
                self._return_scales[name].load(scale_state)
        if not weights_only and self.cloning is not None and "behavioral_cloning" in state:
            self.cloning.load(state["behavioral_cloning"])

    @abstractmethod
    def build_own(self, behavior_name: str, behavior_spec: BehaviorSpec, seed: int) -> None:
        """Build what the algorithm adds to the shared set-up (its critics, buffer, optimiser)."""
