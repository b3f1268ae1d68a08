"""Trainer types by name: the built-in ones plus those plugins add, one
:class:`trainers.settings.AlgorithmRecord` each.

A plugin is a setuptools entry point in the group ``agents_learn.trainer_type`` whose target is
a function returning its records (an iterable of ``AlgorithmRecord``). ML-Agents' shape of the
same plugin, a pair of dicts ``(algorithms, hyperparameter_types)`` from the trainer type name
to the algorithm class and to the attrs class of its ``hyperparameters`` section, is accepted
too: each name it gives becomes a record, or changes that record where one exists. The trainer
loop around an algorithm is always :class:`trainers.loop.trainer.Trainer`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from importlib import metadata
from typing import TYPE_CHECKING, Any

from trainers.exceptions import ConfigError, UnknownTrainerTypeError
from trainers.settings import AlgorithmRecord, TrainerSettings, builtin_algorithms

if TYPE_CHECKING:  # the algorithms and torch load when a trainer is made: a configuration
    # error found by the CLI (which makes a registry for the hyperparameter types) costs no torch
    import torch
    from mlagents_envs.base_env import BehaviorSpec

    from stats import PerfStats, StatsReporter, Timers
    from trainers.files.checkpoints import BehaviorCheckpoints
    from trainers.loop.trainer import Trainer

logger = logging.getLogger(__name__)

TRAINER_TYPE_GROUP = "agents_learn.trainer_type"


class TrainerPluginError(ConfigError):
    """A trainer-type plugin failed to load or returned something unusable."""


class TrainerRegistry:
    """The record of each trainer type name; a later record of a name replaces an earlier one."""

    def __init__(self, records: Iterable[AlgorithmRecord]):
        self.records = {record.name: record for record in records}

    @property
    def hyperparameter_types(self) -> dict[str, type]:
        """Trainer type -> its hyperparameters class, to read a configuration with."""
        return {name: record.hyperparameters_type for name, record in self.records.items()}

    @staticmethod
    def with_plugins(group: str = TRAINER_TYPE_GROUP) -> TrainerRegistry:
        """The built-in types plus every plugin installed in ``group``."""
        records = {record.name: record for record in builtin_algorithms()}
        for entry_point in metadata.entry_points(group=group):
            where = f"trainer plugin {entry_point.name!r} ({entry_point.value})"
            try:
                given = plugin_records(entry_point.load()(), records)
            except Exception as error:  # noqa: BLE001 - reported with the plugin's name
                raise TrainerPluginError(f"{where} failed to load: {type(error).__name__}: {error}") from error
            records.update((record.name, record) for record in given)
            logger.info("Loaded %s: %s", where, ", ".join(sorted(record.name for record in given)))
        return TrainerRegistry(records.values())

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
        record = self.records.get(settings.trainer_type)
        if record is None:
            available = ", ".join(sorted(self.records))
            raise UnknownTrainerTypeError(
                f"behaviors.{behavior_name}.trainer_type: {settings.trainer_type!r} has no trainer in "
                f"agents-learn yet (available: {available}; plugins add more through the "
                f"'{TRAINER_TYPE_GROUP}' entry-point group)"
            )
        algorithm = record.factory(
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


def plugin_records(given: Any, known: Mapping[str, AlgorithmRecord]) -> list[AlgorithmRecord]:
    """The records a plugin's function returned: its records as they are, or ML-Agents' pair of
    dicts ``(algorithms, hyperparameter_types)``, each name made a record (a name of ``known``
    keeps what the pair leaves out of its record). TypeError for anything else."""
    if isinstance(given, tuple) and len(given) == 2 and all(isinstance(part, Mapping) for part in given):
        algorithms, hyperparameter_types = given
        records = []
        for name in dict.fromkeys([*algorithms, *hyperparameter_types]):
            factory, hyperparameters = algorithms.get(name), hyperparameter_types.get(name)
            if name in known:
                record = known[name]
                factory = factory or record.factory
                hyperparameters = hyperparameters or record.hyperparameters_type
            if factory is None or hyperparameters is None:
                raise TypeError(f"{name!r} needs both an algorithm and a hyperparameters class")
            records.append(AlgorithmRecord(name=name, hyperparameters_type=hyperparameters, factory=factory))
        return records
    records = list(given)
    if not all(isinstance(record, AlgorithmRecord) for record in records):
        raise TypeError("expected AlgorithmRecords, or a pair of dicts (algorithms, hyperparameter_types)")
    return records
