"""What a wrapper around the trainer loop forwards unchanged.

Self-play's :class:`trainers.loop.ghost.GhostTrainer` and ``--inference``'s
:class:`trainers.loop.inference.InferenceTrainer` each stand in for a
:class:`trainers.loop.trainer.Trainer` in the controller: they change how trajectories are taken
and steps counted, never whose behavior, settings, stats or policy they are.
"""

from __future__ import annotations

from stats import PerfStats, StatsReporter, Timers
from trainers.loop.trainer import Trainer
from trainers.networks.policy import TorchPolicy
from trainers.settings import TrainerSettings


class TrainerWrapper:
    """Forwards the wrapped ``trainer``'s identity, settings, stats and policy, and the run's
    perf statistics and timers it was made with."""

    def __init__(self, trainer: Trainer) -> None:
        self.trainer = trainer

    @property
    def behavior_name(self) -> str:
        return self.trainer.behavior_name

    @property
    def settings(self) -> TrainerSettings:
        return self.trainer.settings

    @property
    def stats_reporter(self) -> StatsReporter:
        return self.trainer.stats_reporter

    @property
    def policy(self) -> TorchPolicy:
        """The wrapped trainer's policy: the learning one, exported to ONNX."""
        return self.trainer.policy

    @property
    def perf(self) -> PerfStats | None:
        return self.trainer.perf

    @property
    def timers(self) -> Timers:
        return self.trainer.timers
