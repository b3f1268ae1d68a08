"""Command-line values over YAML (REFERENCE 1.3), and per-behavior settings lookup.

Only flags the user actually typed are applied (the CLI records explicitly passed argparse
dests); everything else keeps its YAML value or default. ``--seed -1`` stays -1 here: the
random seed is drawn at run time.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs

from trainers.exceptions import ConfigError
from trainers.settings.schema import RunOptions, TrainerSettings, initialize_from_path
from trainers.settings.structure import config_error, make_converter, structure_at
from trainers.settings.validate import check_run_options

logger = logging.getLogger(__name__)

# argparse dest -> (RunOptions section, field). Section None: a top-level field.
CLI_DESTS: Mapping[str, tuple[str | None, str]] = {
    "env": ("env_settings", "env_path"),
    "env_args": ("env_settings", "env_args"),
    "base_port": ("env_settings", "base_port"),
    "num_envs": ("env_settings", "num_envs"),
    "ray_address": ("env_settings", "ray_address"),
    "num_areas": ("env_settings", "num_areas"),
    "envs_per_worker": ("env_settings", "envs_per_worker"),
    "timeout_wait": ("env_settings", "timeout_wait"),
    "seed": ("env_settings", "seed"),
    "max_lifetime_restarts": ("env_settings", "max_lifetime_restarts"),
    "restarts_rate_limit_n": ("env_settings", "restarts_rate_limit_n"),
    "restarts_rate_limit_period_s": ("env_settings", "restarts_rate_limit_period_s"),
    "width": ("engine_settings", "width"),
    "height": ("engine_settings", "height"),
    "quality_level": ("engine_settings", "quality_level"),
    "time_scale": ("engine_settings", "time_scale"),
    "target_frame_rate": ("engine_settings", "target_frame_rate"),
    "capture_frame_rate": ("engine_settings", "capture_frame_rate"),
    "no_graphics": ("engine_settings", "no_graphics"),
    "no_graphics_monitor": ("engine_settings", "no_graphics_monitor"),
    "run_id": ("checkpoint_settings", "run_id"),
    "initialize_from": ("checkpoint_settings", "initialize_from"),
    "load_model": ("checkpoint_settings", "load_model"),
    "resume": ("checkpoint_settings", "resume"),
    "force": ("checkpoint_settings", "force"),
    "train_model": ("checkpoint_settings", "train_model"),
    "inference": ("checkpoint_settings", "inference"),
    "results_dir": ("checkpoint_settings", "results_dir"),
    "torch_device": ("torch_settings", "device"),
    "debug": (None, "debug"),
}

# Dests the CLI may pass along that are no configuration value: the positional config path
# and the removed --torch/--tensorflow switches (the CLI warns about those).
IGNORED_DESTS = frozenset({"trainer_config_path", "torch", "tensorflow"})

_FLAG_NAMES = {"env": "--env", "load_model": "--load", "train_model": "--train"}


def flag_name(dest: str) -> str:
    """The command-line spelling of an argparse dest: ``num_envs`` -> ``--num-envs``."""
    return _FLAG_NAMES.get(dest, "--" + dest.replace("_", "-"))


def _field_type(section_cls: type, key: str) -> Any:
    """The type of the field whose YAML key is ``key`` (a private field's alias included)."""
    return next(a.type for a in attrs.fields(attrs.resolve_types(section_cls)) if a.alias == key)


def _with_init_paths(options: RunOptions) -> RunOptions:
    """Every configured behavior's init_path resolved from ``initialize_from``."""
    init_dir = options.checkpoint_settings.maybe_init_path
    if init_dir is None:
        return options
    behaviors = {
        name: attrs.evolve(s, init_path=initialize_from_path(s.init_path, init_dir, name))
        for name, s in options.behaviors.items()
    }
    return attrs.evolve(options, behaviors=behaviors)


# Errors about these keys name the flag too when it was typed:
# ``--run-id (checkpoint_settings.run_id): must be a plain folder name...``.
_FLAG_NAMED_ERRORS = ("run_id", "initialize_from")


def _name_flag(error: str, explicit: Mapping[str, Any]) -> str:
    for dest in _FLAG_NAMED_ERRORS:
        section, name = CLI_DESTS[dest]
        key = f"{section}.{name}: "
        if dest in explicit and error.startswith(key):
            return f"{flag_name(dest)} ({section}.{name}): {error[len(key) :]}"
    return error


def apply_cli_overrides(options: RunOptions, explicit: Mapping[str, Any]) -> RunOptions:
    """``options`` with the values of the flags the user typed (argparse dest -> value).

    Dests map to YAML keys as in REFERENCE 1.3 (``env`` -> env_settings.env_path, ``run_id``
    -> checkpoint_settings.run_id, ``torch_device`` -> torch_settings.device...);
    ``deterministic`` sets every behavior's (and default_settings') network_settings;
    ``initialize_from`` also resolves every configured behavior's init_path
    (``initialize_from_path``: ``<results_dir>/<initialize_from>/<behavior>/checkpoint.pt``
    unless set); ``load_model`` (``--load``) also means resume. Typed ``--resume`` beats an ``initialize_from`` from anywhere, typed
    ``--initialize-from`` beats a YAML ``resume`` (each with a warning). Values are checked
    like YAML values; the result is re-validated; ConfigError lists every problem.
    """
    conv = make_converter()
    problems: list[str] = []
    sections: dict[str | None, dict[str, Any]] = {}
    deterministic: bool | None = None
    for dest, value in explicit.items():
        if dest in IGNORED_DESTS:
            continue
        if dest == "deterministic":
            result, found = structure_at(conv, value, bool)
            problems += [f"{flag_name(dest)}: {p.message}" for p in found]
            deterministic = result
            continue
        if dest not in CLI_DESTS:
            raise ConfigError(
                f"unknown command-line option {dest!r} (known: {', '.join(sorted([*CLI_DESTS, 'deterministic']))})"
            )
        section, name = CLI_DESTS[dest]
        owner = type(options) if section is None else type(getattr(options, section))
        result, found = structure_at(conv, value, _field_type(owner, name))
        where = name if section is None else f"{section}.{name}"
        problems += [f"{flag_name(dest)} ({where}): {p.message}" for p in found]
        if not found:
            sections.setdefault(section, {})[name] = result
    top = sections.pop(None, {})
    changes: dict[str, Any] = dict(top)
    for section, values in sections.items():
        if section is not None:
            changes[section] = attrs.evolve(getattr(options, section), **values)
    new = attrs.evolve(options, **changes)

    cp = new.checkpoint_settings
    if "load_model" in explicit and cp.load_model and not cp.resume:
        cp = attrs.evolve(cp, resume=True)
    typed_resume = ("resume" in explicit or "load_model" in explicit) and cp.resume
    if typed_resume and cp.initialize_from is not None:
        logger.warning(
            "Both --resume and initialize_from=%s are set; the run will be resumed and the initialization ignored.",
            cp.initialize_from,
        )
        cp = attrs.evolve(cp, initialize_from=None)
    elif "initialize_from" in explicit and cp.initialize_from is not None and cp.resume:
        logger.warning(
            "Both --initialize-from=%s and resume are set; the run will be initialized from it and not resumed.",
            cp.initialize_from,
        )
        cp = attrs.evolve(cp, resume=False, load_model=False)
    new = attrs.evolve(new, checkpoint_settings=cp)
    if "initialize_from" in explicit:
        new = _with_init_paths(new)

    if deterministic is not None:

        def det(s: TrainerSettings) -> TrainerSettings:
            return attrs.evolve(s, network_settings=attrs.evolve(s.network_settings, deterministic=deterministic))

        default = new.default_settings
        if default is None and not new.config_specified:
            default = TrainerSettings()  # no file: every behavior gets these defaults
        new = attrs.evolve(
            new,
            behaviors={name: det(s) for name, s in new.behaviors.items()},
            default_settings=None if default is None else det(default),
        )

    before = set(check_run_options(options).warnings)
    report = check_run_options(new)
    problems += [_name_flag(error, explicit) for error in report.errors]
    if problems:
        raise config_error(problems)
    for warning in report.warnings:
        if warning not in before:
            logger.warning("%s", warning)
    return new
