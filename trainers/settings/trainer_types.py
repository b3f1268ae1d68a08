"""Trainer types: one record per algorithm, given alike by agents-learn and by plugins.

An :class:`AlgorithmRecord` says everything a ``trainer_type:`` name stands for: the attrs class
of its ``hyperparameters`` section (what the configuration is read with) and the factory of its
algorithm (what :class:`trainers.loop.registry.TrainerRegistry` builds a trainer with). The
settings read the hyperparameters classes from the records; every other table of trainer types
is derived from them.

The built-in algorithms are named here, not imported: their modules (and torch) load when a
trainer is first made, so reading or checking a configuration costs no torch, and this floor
imports nothing above it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import attrs

from trainers.settings.schema import POCASettings, PPOSettings, SACSettings


@attrs.frozen(kw_only=True)
class AlgorithmRecord:
    """One trainer type. ``name``: as written in ``trainer_type:``; ``hyperparameters_type``: the
    attrs class its ``hyperparameters`` section is read into (ideally with ``batch_size`` and
    ``buffer_size``); ``factory``: builds its algorithm from the keyword arguments of
    :class:`trainers.loop.algorithm.AlgorithmFactory` (the algorithm class itself, usually)."""

    name: str
    hyperparameters_type: type
    factory: Callable[..., Any]


def builtin_algorithms() -> tuple[AlgorithmRecord, ...]:
    """The trainer types agents-learn itself implements (fresh records: nothing global)."""
    return (
        AlgorithmRecord(name="ppo", hyperparameters_type=PPOSettings, factory=_imported("trainers.ppo.algorithm:PPO")),
        AlgorithmRecord(name="sac", hyperparameters_type=SACSettings, factory=_imported("trainers.sac.algorithm:SAC")),
        AlgorithmRecord(
            name="poca", hyperparameters_type=POCASettings, factory=_imported("trainers.poca.algorithm:POCA")
        ),
    )


def builtin_hyperparameter_types() -> dict[str, type]:
    """A fresh mapping trainer type -> hyperparameters class of :func:`builtin_algorithms`: what a
    configuration is read with when no registry says otherwise.

    ``{**builtin_hyperparameter_types(), "mine": MySettings}`` reads a configuration that uses a
    trainer type of one's own (an attrs class, ideally with ``batch_size``/``buffer_size``).
    """
    return {record.name: record.hyperparameters_type for record in builtin_algorithms()}


def _imported(target: str) -> Callable[..., Any]:
    """A factory that imports ``module:name`` when first called and calls it."""
    module, _, name = target.partition(":")

    def make(**arguments: Any) -> Any:
        return getattr(importlib.import_module(module), name)(**arguments)

    make.__qualname__ = make.__name__ = name
    return make
