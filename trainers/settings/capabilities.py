"""What the configuration asks for that agents-learn cannot do yet: refused before any work.

ML-Agents' schema is loaded in full (every example config parses), but some of what it
describes has no implementation here. Such a configuration must fail before the results folder
is written or an environment launched, never train something other than what it says: a
reward signal a trainer ignores would waste a run and mislead.

``check_capabilities`` lists every such thing with its key path; ``require_capabilities``
raises them together as one ConfigError. Call it once the run options are final (CLI flags
applied) and before anything is written::

    registry = TrainerRegistry.with_plugins()
    options = apply_cli_overrides(load_run_options(path, ...), explicit)
    require_capabilities(options, registry.records)

Trainer types come from the caller (the names of the registry's records: the built-in ones plus
plugins), so a plugin's type is allowed. What a trainer does with its own sections (reward
signals, behavioral cloning) is the plugin's business: those checks apply only to the trainer
types agents-learn implements itself (:func:`trainers.settings.builtin_algorithms`), which run
every reward signal, and to unknown types, for which only the extrinsic reward is known.
Self-play and environment parameters (constants, samplers, curricula) are accepted for every
trainer type: the ghost trainer (``trainers.loop.ghost``) wraps the trainer loop, and the
curriculum (``orchestration.curriculum``) is run-wide, whatever algorithm runs.

Keys parsed but not acted on are refused when they differ from their default (see
``_unused_keys``); keys that ML-Agents itself ignores in the same way are accepted.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from trainers.exceptions import ConfigError
from trainers.settings.demo_files import demo_path_problems
from trainers.settings.schema import (
    NetworkSettings,
    POCASettings,
    RewardSignalType,
    RunOptions,
    TrainerSettings,
)
from trainers.settings.text import short_repr
from trainers.settings.trainer_types import builtin_algorithms

# Signals that have networks of their own (their network_settings are used).
NETWORK_SIGNALS = frozenset({RewardSignalType.CURIOSITY, RewardSignalType.RND, RewardSignalType.GAIL})


class UnsupportedFeatureError(ConfigError):
    """The configuration asks for something agents-learn does not implement yet."""


def check_capabilities(options: RunOptions, trainer_types: Collection[str]) -> list[str]:
    """Every unsupported thing ``options`` asks for, one ``key.path: what is missing`` line
    each, in configuration order; empty when the run can go ahead.

    ``trainer_types``: the trainer types that have a trainer (the names of the registry's
    records: ppo, sac, poca plus plugins). Checks ``behaviors.*``, ``default_settings`` (it
    trains every behavior not listed).
    """
    available = sorted(trainer_types)
    own = {record.name for record in builtin_algorithms()}
    problems: list[str] = []
    for name, settings in options.behaviors.items():
        problems += _trainer_problems(f"behaviors.{name}", settings, available, own)
    if options.default_settings is not None:
        problems += _trainer_problems("default_settings", options.default_settings, available, own)
    return problems


def require_capabilities(options: RunOptions, trainer_types: Collection[str]) -> None:
    """Raise a ConfigError listing every problem of ``check_capabilities`` and every
    ``demo_path`` that names no demonstrations; return quietly when there are none.

    An UnsupportedFeatureError when only unsupported features are asked for."""
    missing = demo_path_problems(options)
    problems = missing + check_capabilities(options, trainer_types)
    if not problems:
        return
    error = ConfigError if missing else UnsupportedFeatureError
    if len(problems) == 1:
        raise error(problems[0])
    lines = "\n".join(f"  {p}" for p in problems)
    what = "cannot run" if missing else "are not supported yet"
    raise error(f"{len(problems)} things in the run configuration {what}:\n{lines}")


def _trainer_problems(where: str, settings: TrainerSettings, available: list[str], own: set[str]) -> Iterator[str]:
    trainer_type = settings.trainer_type
    has_trainer = trainer_type in available
    if not has_trainer:
        yield (
            f"{where}.trainer_type: {short_repr(trainer_type)} has no trainer yet (available: {', '.join(available)})"
        )
    elif trainer_type not in own:
        return  # a plugin's trainer: its reward signals and imitation are its own
    for kind, signal in settings.reward_signals.items():
        path = f"{where}.reward_signals.{kind.value}"
        if trainer_type not in own and kind is not RewardSignalType.EXTRINSIC:
            yield (
                f"{path}: the {kind.value} reward signal is not supported yet for trainer_type "
                f"{trainer_type} (only extrinsic); remove it"
            )
        elif signal.normalize and not isinstance(settings.hyperparameters, POCASettings):
            yield (
                f"{path}.normalize: reward scaling is for PPO and POCA, whose updates use each reward "
                f"once; {trainer_type}'s replay buffer would keep rewards scaled by statistics that "
                "have since moved; remove it"
            )
        elif kind in NETWORK_SIGNALS and signal.network_settings.memory is not None:
            yield f"{path}.network_settings.memory: the {kind.value} signal's network has no memory; remove it"
        elif kind not in NETWORK_SIGNALS and signal.network_settings != NetworkSettings():
            yield (
                f"{path}.network_settings: the extrinsic reward has no network, so these "
                "settings would be ignored; remove them"
            )
