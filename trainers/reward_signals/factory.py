"""The configured reward signals of a behavior, built (:mod:`trainers.reward_signals.base` holds
the protocol they share; each signal with a network has a module of its own)."""

from __future__ import annotations

import torch
from mlagents_envs.base_env import BehaviorSpec

from trainers.exceptions import ConfigError
from trainers.reward_signals.base import ExtrinsicReward, RewardSignal
from trainers.reward_signals.curiosity import CuriosityReward
from trainers.reward_signals.gail import GAILReward
from trainers.reward_signals.rnd import RNDReward
from trainers.settings import CuriositySettings, GAILSettings, RewardSignalType, RNDSettings, TrainerSettings


def create_reward_signals(
    behavior_name: str,
    settings: TrainerSettings,
    spec: BehaviorSpec,
    *,
    seed: int = 0,
    device: str | torch.device = "cpu",
    add_groupmate_rewards: bool = False,
) -> list[RewardSignal]:
    """The configured signals in configuration order, their networks on ``device`` (the
    algorithm's); an unsupported one is a ConfigError (the configuration check refuses it
    before any work, this is the last line). ``add_groupmate_rewards``: the extrinsic reward
    also counts the group mates' individual rewards (POCA)."""
    signals: list[RewardSignal] = []
    for kind, signal_settings in settings.reward_signals.items():
        if kind == RewardSignalType.EXTRINSIC:
            signals.append(ExtrinsicReward(signal_settings, add_groupmate_rewards=add_groupmate_rewards))
        elif kind == RewardSignalType.CURIOSITY and isinstance(signal_settings, CuriositySettings):
            signals.append(CuriosityReward(spec, signal_settings, seed=seed, device=device))
        elif kind == RewardSignalType.RND and isinstance(signal_settings, RNDSettings):
            signals.append(RNDReward(spec, signal_settings, seed=seed, device=device))
        elif kind == RewardSignalType.GAIL and isinstance(signal_settings, GAILSettings):
            where = f"behaviors.{behavior_name}.reward_signals.gail"
            signals.append(GAILReward(spec, signal_settings, seed=seed, device=device, where=where))
        else:
            raise ConfigError(f"behaviors.{behavior_name}.reward_signals.{kind.value}: not supported yet")
    return signals
