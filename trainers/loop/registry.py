"""Trainer types by name: the built-in ones plus those plugins add.

A plugin is a setuptools entry point in the group ``agents_learn.trainer_type`` whose
target is a function returning ``(algorithms, hyperparameter_types)``: dicts from the
trainer type name (as written in ``trainer_type:``) to the algorithm class (see
:class:`trainers.loop.algorithm.Algorithm`; constructed with the keyword arguments of
:class:`trainers.loop.algorithm.AlgorithmFactory`) and to the attrs class of its
``hyperparameters`` section. The trainer loop around an algorithm is always
:class:`trainers.loop.trainer.Trainer`.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from trainers.exceptions import ConfigError, UnknownTrainerTypeError
from trainers.settings import TrainerSettings, builtin_hyperparameter_types

if TYPE_CHECKING:  # the algorithms and torch load when a trainer is made: a configuration
    # error found by the CLI (which makes a registry for the hyperparameter types) costs no torch
    import torch
    from mlagents_envs.base_env import BehaviorSpec

    from stats import PerfStats, StatsReporter, Timers
    from trainers.files.checkpoints import BehaviorCheckpoints
    from trainers.loop.algorithm import Algorithm, AlgorithmFactory
    from trainers.loop.trainer import Trainer

logger = logging.getLogger(__name__)

TRAINER_TYPE_GROUP = "agents_learn.trainer_type"


class TrainerPluginError(ConfigError):
    """A trainer-type plugin failed to load or returned something unusable."""


def builtin_algorithms() -> dict[str, AlgorithmFactory]:
    """The trainer types agents-learn itself implements, each imported when first made."""
    return {
        "ppo": _imported_when_made("trainers.ppo.algorithm", "PPO"),
        "sac": _imported_when_made("trainers.sac.algorithm", "SAC"),
        "poca": _imported_when_made("trainers.poca.algorithm", "POCA"),
    }


def _imported_when_made(module: str, name: str) -> AlgorithmFactory:
    def make(**arguments: Any) -> Algorithm:
        return getattr(importlib.import_module(module), name)(**arguments)

    make.__qualname__ = make.__name__ = name
    return make


class TrainerRegistry:
    """Which algorithm and hyperparameters class go with each trainer type name."""

    def __init__(self, algorithms: Mapping[str, AlgorithmFactory], hyperparameter_types: Mapping[str, type]):
        self.algorithms = dict(algorithms)
        self.hyperparameter_types = dict(hyperparameter_types)

    @staticmethod
    def with_plugins(group: str = TRAINER_TYPE_GROUP) -> TrainerRegistry:
        """The built-in types plus every plugin installed in ``group``."""
        algorithms = builtin_algorithms()
        hyperparameters = builtin_hyperparameter_types()
        for entry_point in metadata.entry_points(group=group):
            where = f"trainer plugin {entry_point.name!r} ({entry_point.value})"
            try:
                plugin_algorithms, plugin_hyperparameters = entry_point.load()()
                algorithms.update(dict(plugin_algorithms))
                hyperparameters.update(dict(plugin_hyperparameters))
            except Exception as error:  # noqa: BLE001 - reported with the plugin's name
                raise TrainerPluginError(f"{where} failed to load: {type(error).__name__}: {error}") from error
            logger.info("Loaded %s: %s", where, ", ".join(sorted(plugin_algorithms)))
        return TrainerRegistry(algorithms, hyperparameters)

    def create(
        self,
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        settings: TrainerSettings,
        stats_reporter: StatsReporter,
        checkpoints: BehaviorCheckpoints | None,
        seed: int,
        device: str | torch.device,
        perf: PerfStats | None = None,
        timers: Timers | None = None,
    ) -> Trainer:
        """A trainer for one behavior; a clear error if its type has no trainer. ``perf`` and
        ``timers`` are the run's (its updates are timed in them)."""
        algorithm_class = self.algorithms.get(settings.trainer_type)
        if algorithm_class is None:
            available = ", ".join(sorted(self.algorithms))
            raise UnknownTrainerTypeError(
                f"behaviors.{behavior_name}.trainer_type: {settings.trainer_type!r} has no trainer in "
                f"agents-learn yet (available: {available}; plugins add more through the "
                f"'{TRAINER_TYPE_GROUP}' entry-point group)"
            )
        algorithm = algorithm_class(
            behavior_name=behavior_name,
            behavior_spec=behavior_spec,
            settings=settings,
            stats_reporter=stats_reporter,
            seed=seed,
            device=device,
        )
        from trainers.loop.trainer import Trainer

        return Trainer(
            behavior_name=behavior_name,
            settings=settings,
            algorithm=algorithm,
            stats_reporter=stats_reporter,
            checkpoints=checkpoints,
            perf=perf,
            timers=timers,
        )
