"""YAML mapping <-> RunOptions: one cattrs converter built per call (no global hooks), strict
scalar hooks that name the value given, and problems collected with their full dotted path
(``behaviors.3DBall.hyperparameters.batchsize: unknown key (did you mean batch_size?)``).

ML-Agents' YAML quirks handled here: PyYAML reads ``5.0e5``/``3e-4`` as strings, so numeric
strings are accepted where a number is meant (``max_steps: 1.0e7``); an integral float is
accepted as an int; a legacy ``framework`` key is dropped with a warning; ``default_settings``
is deep-merged under every behavior.
"""

from __future__ import annotations

import difflib
import enum
import logging
import math
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import cattrs
from cattrs.errors import (
    AttributeValidationNote,
    ClassValidationError,
    ForbiddenExtraKeysError,
    IterableValidationError,
    IterableValidationNote,
)
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn

from trainers.exceptions import ConfigError, UnknownTrainerTypeError
from trainers.settings.schema import (
    NEWER_KEY,
    CheckpointSettings,
    ConstantSampler,
    EngineSettings,
    EnvironmentParameterSettings,
    EnvironmentSettings,
    Hyperparameters,
    Lesson,
    RewardSignalSettings,
    RewardSignalType,
    RunOptions,
    Sampler,
    TorchSettings,
    TrainerSettings,
    reward_signal_types,
    sampler_types,
)
from trainers.settings.text import short_repr, shorten
from trainers.settings.trainer_types import builtin_hyperparameter_types
from trainers.settings.validate import check_run_options, normalize_checkpoint_settings

logger = logging.getLogger(__name__)

Path = tuple[str, ...]

TOP_LEVEL_KEYS = (
    "behaviors",
    "default_settings",
    "environment_parameters",
    "env_settings",
    "engine_settings",
    "checkpoint_settings",
    "torch_settings",
    "debug",
)

_PARAMETER_SHAPES = "expected a number, a sampler {sampler_type, sampler_parameters} or {curriculum: [lessons]}"

_SECTIONS: dict[str, type] = {
    "env_settings": EnvironmentSettings,
    "engine_settings": EngineSettings,
    "checkpoint_settings": CheckpointSettings,
    "torch_settings": TorchSettings,
}


# ---------------------------------------------------------------- problems


@attrs.frozen
class Problem:
    """One thing wrong with a configuration, at a dotted path (empty: the whole file)."""

    path: Path
    message: str
    unknown_trainer_type: bool = False

    def __str__(self) -> str:
        if not self.path:
            return self.message
        return f"{'.'.join(shorten(part) for part in self.path)}: {self.message}"


class _Invalid(Exception):
    """Raised by a hook: the value at the current path is wrong (message without path)."""

    def __init__(self, message: str, *, unknown_trainer_type: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.unknown_trainer_type = unknown_trainer_type


class _Problems(Exception):
    """Raised by a hook that collected several problems (paths relative to the hook's value)."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(str(p) for p in problems))
        self.problems = tuple(problems)


def config_error(problems: Sequence[Problem | str], prefix: str = "") -> ConfigError:
    """One ConfigError listing every problem (one line when there is only one)."""
    lines = [str(p) for p in problems]
    if len(lines) == 1:
        text = lines[0]
    else:
        text = f"{len(lines)} problems in the run configuration:\n" + "\n".join(f"  {line}" for line in lines)
    if prefix:
        text = f"{prefix}: {text}"
    unknown_type = any(isinstance(p, Problem) and p.unknown_trainer_type for p in problems)
    return (UnknownTrainerTypeError if unknown_type else ConfigError)(text)


def describe(value: Any) -> str:
    """``'abc' (str)`` / ``null``: the value a user gave, short enough for one line."""
    if value is None:
        return "null"
    return f"{short_repr(value)} ({type(value).__name__})"


def suggest(word: str, choices: Sequence[str]) -> str | None:
    """The nearest of ``choices`` to ``word``, if any is close."""
    if len(word) > 2 * max((len(c) for c in choices), default=0):
        return None  # too long to be a typo of any (and difflib is quadratic)
    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not found:
        lowered = {c.lower(): c for c in choices}
        found = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        return lowered[found[0]] if found else None
    return found[0]


def unknown_key_message(key: Any, valid: Sequence[str], what: str = "key") -> str:
    """``unknown key (did you mean batch_size?)``, or the valid keys when none is close."""
    near = suggest(str(key), valid)
    if near is not None:
        return f"unknown {what} (did you mean {near}?)"
    return f"unknown {what} (valid: {', '.join(valid)})"


def yaml_keys(cl: type) -> list[str]:
    """The YAML keys of an attrs class, in definition order."""
    return [a.alias for a in attrs.fields(cl)]


def _following_keys(cl: type) -> frozenset[str]:
    """YAML keys of ``cl`` whose default is computed from another field (``beta_schedule``)."""
    # An attrs.Factory(..., takes_self=True) default; no other default has ``takes_self``.
    return frozenset(a.alias for a in attrs.fields(cl) if getattr(a.default, "takes_self", False) is True)


def _note_of(exc: BaseException) -> AttributeValidationNote | IterableValidationNote | None:
    for note in getattr(exc, "__notes__", ()):
        if isinstance(note, (AttributeValidationNote, IterableValidationNote)):
            return note
    return None


def collect(exc: BaseException, path: Path = ()) -> list[Problem]:
    """Flatten an exception raised while structuring into problems with full paths."""
    if isinstance(exc, _Problems):
        return [attrs.evolve(p, path=path + p.path) for p in exc.problems]
    if isinstance(exc, _Invalid):
        return [Problem(path, exc.message, exc.unknown_trainer_type)]
    if isinstance(exc, ForbiddenExtraKeysError):
        valid = yaml_keys(exc.cl) if attrs.has(exc.cl) else []
        return [Problem(path + (str(k),), unknown_key_message(k, valid)) for k in sorted(exc.extra_fields, key=str)]
    if isinstance(exc, (ClassValidationError, IterableValidationError)):
        aliases: dict[str, str] = {}
        if isinstance(exc, ClassValidationError) and attrs.has(exc.cl):
            aliases = {a.name: a.alias for a in attrs.fields(exc.cl)}
        out: list[Problem] = []
        for sub in exc.exceptions:
            note = _note_of(sub)
            if isinstance(note, AttributeValidationNote):
                out += collect(sub, path + (aliases.get(note.name, note.name),))
            elif isinstance(note, IterableValidationNote):
                out += collect(sub, path + (str(note.index),))
            else:
                out += collect(sub, path)
        return out
    if isinstance(exc, KeyError):
        return [Problem(path, "required key missing")]
    return [Problem(path, f"invalid value ({exc})")]


def structure_at(conv: cattrs.Converter, value: Any, typ: Any, path: Path = ()) -> tuple[Any, list[Problem]]:
    """(result or None, problems) of structuring ``value`` as ``typ``."""
    try:
        return conv.structure(value, typ), []
    except Exception as exc:  # noqa: BLE001 - every structuring failure becomes a Problem
        return None, collect(exc, path)


# ---------------------------------------------------------------- scalar hooks


def _number(value: Any) -> float | int | None:
    """A YAML number, or a numeric string (PyYAML reads ``5.0e5`` as a string)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        try:
            return float(text)
        except ValueError:
            return None
    return None


def _structure_int(value: Any, _: Any) -> int:
    number = _number(value)
    if isinstance(number, int):
        return number
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)
    raise _Invalid(f"expected an integer, got {describe(value)}")


def _structure_float(value: Any, _: Any) -> float:
    number = _number(value)
    if number is not None and math.isfinite(number):
        return float(number)
    raise _Invalid(f"expected a number, got {describe(value)}")


def _structure_bool(value: Any, _: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _Invalid(f"expected true or false, got {describe(value)}")


def _structure_str(value: Any, typ: Any) -> Any:
    if isinstance(typ, type) and issubclass(typ, enum.Enum):
        return _structure_enum(value, typ)  # a StrEnum dispatches as str before Enum
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)  # run_id: 2024
    raise _Invalid(f"expected a string, got {describe(value)}")


def _structure_enum(value: Any, typ: type[enum.Enum]) -> enum.Enum:
    names = [str(m.value) for m in typ]
    if isinstance(value, str):
        for member in typ:
            if member.value == value or str(member.value).lower() == value.lower():
                return member
        near = suggest(value, names)
        hint = f" (did you mean {near}?)" if near else ""
        raise _Invalid(f"expected one of {', '.join(names)}, got {describe(value)}{hint}")
    raise _Invalid(f"expected one of {', '.join(names)}, got {describe(value)}")


def as_mapping(value: Any, *, none_is_empty: bool = True) -> Mapping[Any, Any]:
    """``value`` if it is a mapping (None as {}), else _Invalid naming what was given."""
    if value is None and none_is_empty:
        return {}
    if isinstance(value, Mapping):
        return value
    raise _Invalid(f"expected a mapping, got {describe(value)}")


def _is_homogeneous_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and len(args) == 2 and args[1] is Ellipsis


def _is_fixed_tuple(t: Any) -> bool:
    args = typing.get_args(t)
    return typing.get_origin(t) is tuple and bool(args) and Ellipsis not in args


def _sequence(value: Any) -> Sequence[Any]:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return value
    raise _Invalid(f"expected a list, got {describe(value)}")


# ---------------------------------------------------------------- the converter


def _hyperparameter_types(given: Mapping[str, type] | None) -> dict[str, type]:
    types = builtin_hyperparameter_types() if given is None else dict(given)
    for name, cls in types.items():
        if not attrs.has(cls):
            raise TypeError(f"hyperparameters of trainer type {name!r}: not an attrs class")
    return types


def make_converter(hyperparameter_types: Mapping[str, type] | None = None) -> cattrs.Converter:
    """A converter for the whole schema; ``hyperparameter_types`` maps trainer type ->
    hyperparameters class (the built-ins when None). Built per call: no global state."""
    hp_types = _hyperparameter_types(hyperparameter_types)
    conv = cattrs.Converter(forbid_extra_keys=True, detailed_validation=True, use_alias=True)

    conv.register_structure_hook(int, _structure_int)
    conv.register_structure_hook(bool, _structure_bool)
    conv.register_structure_hook(float, _structure_float)
    conv.register_structure_hook(str, _structure_str)
    conv.register_structure_hook(enum.Enum, _structure_enum)

    def attrs_factory(cl: type) -> Callable[[Any, Any], Any]:
        generated: Callable[[Any, Any], Any] = make_dict_structure_fn(cl, conv)
        following = _following_keys(cl)

        def structure(value: Any, _: Any) -> Any:
            data = as_mapping(value)
            if any(data.get(key, ...) is None for key in following):
                # ``beta_schedule: null`` (as agents-learn wrote it before 0.28 compatibility)
                # means "follow": the default computed from the other field.
                data = {k: v for k, v in data.items() if not (k in following and v is None)}
            return generated(data, cl)

        return structure

    conv.register_structure_hook_factory(attrs.has, attrs_factory)

    def attrs_unstructure_factory(cl: type) -> Callable[[Any], Any]:
        generated: Callable[[Any], dict[str, Any]] = make_dict_unstructure_fn(cl, conv)
        newer = [(a.name, a.alias) for a in attrs.fields(cl) if a.metadata.get(NEWER_KEY)]
        if not newer:
            return generated

        def unstructure(value: Any) -> dict[str, Any]:
            # Keys newer than ML-Agents 0.28 are left out while unset (None), so 0.28 loads the file.
            out = generated(value)
            for name, alias in newer:
                if getattr(value, name) is None:
                    del out[alias]
            return out

        return unstructure

    conv.register_unstructure_hook_factory(attrs.has, attrs_unstructure_factory)

    def homogeneous_tuple_factory(t: Any) -> Callable[[Any, Any], Any]:
        item_type = typing.get_args(t)[0]

        def structure(value: Any, _: Any) -> tuple[Any, ...]:
            items, problems = [], []
            for i, item in enumerate(_sequence(value)):
                result, found = structure_at(conv, item, item_type, (str(i),))
                items.append(result)
                problems += found
            if problems:
                raise _Problems(problems)
            return tuple(items)

        return structure

    def fixed_tuple_factory(t: Any) -> Callable[[Any, Any], Any]:
        item_types = typing.get_args(t)

        def structure(value: Any, _: Any) -> tuple[Any, ...]:
            items = _sequence(value)
            if len(items) != len(item_types):
                raise _Invalid(f"expected a list of {len(item_types)} values, got {describe(value)}")
            out, problems = [], []
            for i, (item, item_type) in enumerate(zip(items, item_types)):
                result, found = structure_at(conv, item, item_type, (str(i),))
                out.append(result)
                problems += found
            if problems:
                raise _Problems(problems)
            return tuple(out)

        return structure

    conv.register_structure_hook_factory(_is_homogeneous_tuple, homogeneous_tuple_factory)
    conv.register_structure_hook_factory(_is_fixed_tuple, fixed_tuple_factory)

    # Hyperparameters are structured by TrainerSettings' hook (they depend on trainer_type);
    # the field hook only lets the finished object through.
    def passthrough_hyperparameters(value: Any, _: Any) -> Any:
        if attrs.has(type(value)):
            return value
        raise _Invalid(f"expected a mapping, got {describe(value)}")

    conv.register_structure_hook_func(lambda t: t is Hyperparameters, passthrough_hyperparameters)
    conv.register_structure_hook_func(
        lambda t: t == dict[RewardSignalType, RewardSignalSettings],
        lambda value, _: _structure_reward_signals(conv, value),
    )
    conv.register_structure_hook_func(lambda t: t == Sampler, lambda value, _: _structure_sampler(conv, value))
    conv.register_structure_hook_func(
        lambda t: t == dict[str, EnvironmentParameterSettings],
        lambda value, _: _structure_environment_parameters(conv, value),
    )

    trainer_fn = make_dict_structure_fn(TrainerSettings, conv)
    conv.register_structure_hook_func(
        lambda t: t is TrainerSettings,
        lambda value, _: _structure_trainer(conv, hp_types, trainer_fn, value),
    )

    # Unstructure polymorphic fields by their runtime class (the field types are bases).
    runtime = lambda value: conv.unstructure(value, unstructure_as=type(value))  # noqa: E731
    conv.register_unstructure_hook_func(lambda t: t is Hyperparameters, runtime)
    conv.register_unstructure_hook_func(lambda t: t is RewardSignalSettings, runtime)
    return conv


def _structure_trainer(
    conv: cattrs.Converter,
    hp_types: Mapping[str, type],
    generated: Callable[[Any, Any], Any],
    value: Any,
) -> TrainerSettings:
    data = dict(as_mapping(value))
    problems: list[Problem] = []
    if "framework" in data:
        logger.warning("The 'framework' option is deprecated and ignored (PyTorch only).")
        del data["framework"]
    trainer_type = data.get("trainer_type", "ppo")
    hyperparameters = data.pop("hyperparameters", None)
    if not isinstance(trainer_type, str):
        message = f"expected a trainer type name, got {describe(trainer_type)}"
        problems.append(Problem(("trainer_type",), message))
        data.pop("trainer_type")
    elif trainer_type not in hp_types:
        known = sorted(hp_types)
        near = suggest(trainer_type, known)
        hint = f"did you mean {near}? " if near else ""
        problems.append(
            Problem(
                ("trainer_type",),
                f"unknown trainer type {short_repr(trainer_type)} ({hint}known: {', '.join(known)})",
                unknown_trainer_type=True,
            )
        )
        data.pop("trainer_type")
    else:
        cls = hp_types[trainer_type]
        result, found = structure_at(conv, hyperparameters, cls, ("hyperparameters",))
        problems += [_explain_foreign_key(p, trainer_type, hp_types) for p in found]
        if result is not None:
            data["hyperparameters"] = result
    try:
        settings = generated(data, TrainerSettings)
    except Exception as exc:  # noqa: BLE001
        problems += collect(exc)
        settings = None
    if problems:
        raise _Problems(problems)
    return settings


def _explain_foreign_key(problem: Problem, trainer_type: str, hp_types: Mapping[str, type]) -> Problem:
    """An unknown hyperparameter that another trainer type takes says so (``beta`` under sac)."""
    message = problem.message
    if len(problem.path) != 2 or not message.startswith("unknown key") or "did you mean" in message:
        return problem
    owners = [name for name, cls in hp_types.items() if problem.path[1] in yaml_keys(cls)]
    if not owners:
        return problem
    owner = "/".join(owners)
    message = f"unknown key for trainer_type {trainer_type} (it is a {owner} hyperparameter)"
    return attrs.evolve(problem, message=message)


def _structure_reward_signals(conv: cattrs.Converter, value: Any) -> dict[RewardSignalType, RewardSignalSettings]:
    classes = reward_signal_types()
    known = [t.value for t in classes]
    out: dict[RewardSignalType, RewardSignalSettings] = {}
    problems: list[Problem] = []
    for key, raw in as_mapping(value).items():
        try:
            signal = RewardSignalType(key)
        except ValueError:
            problems.append(Problem((str(key),), unknown_key_message(key, known, "reward signal")))
            continue
        raw = dict(as_mapping(raw)) if isinstance(raw, Mapping) or raw is None else raw
        if isinstance(raw, dict) and isinstance(raw.get("encoding_size"), int) and "network_settings" not in raw:
            # Deprecated key (warned about by validation): it sized the signal's network.
            raw["network_settings"] = {"hidden_units": raw["encoding_size"]}
        result, found = structure_at(conv, raw, classes[signal], (str(key),))
        problems += found
        if result is not None:
            out[signal] = result
    if problems:
        raise _Problems(problems)
    return out


def _structure_sampler(conv: cattrs.Converter, value: Any) -> Any:
    number = _number(value)
    if number is not None and not isinstance(value, Mapping):
        return ConstantSampler(value=_structure_float(value, float))
    if not isinstance(value, Mapping):
        raise _Invalid(f"expected a number or a sampler {{sampler_type, sampler_parameters}}, got {describe(value)}")
    problems = [
        Problem((str(k),), unknown_key_message(k, ["sampler_type", "sampler_parameters"]))
        for k in value
        if k not in ("sampler_type", "sampler_parameters")
    ]
    classes = sampler_types()
    name = value.get("sampler_type")
    if name is None:
        message = f"required key missing (one of {', '.join(classes)})"
        problems.append(Problem(("sampler_type",), message))
    elif not isinstance(name, str) or name.lower() not in classes:
        near = suggest(str(name), list(classes))
        hint = f" (did you mean {near}?)" if near else ""
        message = f"expected one of {', '.join(classes)}, got {describe(name)}{hint}"
        problems.append(Problem(("sampler_type",), message))
    else:
        result, found = structure_at(
            conv, value.get("sampler_parameters"), classes[name.lower()], ("sampler_parameters",)
        )
        problems += found
        if not problems:
            return result
    raise _Problems(problems)


def _structure_environment_parameters(conv: cattrs.Converter, value: Any) -> dict[str, EnvironmentParameterSettings]:
    out: dict[str, EnvironmentParameterSettings] = {}
    problems: list[Problem] = []
    for key, raw in as_mapping(value).items():
        name = str(key)
        if isinstance(raw, Mapping) and "curriculum" in raw:
            result, found = structure_at(conv, raw, EnvironmentParameterSettings, (name,))
        else:
            sampler, found = structure_at(conv, raw, Sampler, (name,))
            result = None
            if sampler is not None:
                lesson = Lesson(name=name, value=sampler)
                result = EnvironmentParameterSettings(curriculum=(lesson,))
            elif isinstance(raw, Mapping) and "sampler_type" not in raw:
                keys = ", ".join(map(str, raw))
                found = [Problem((name,), f"{_PARAMETER_SHAPES}, got keys {keys}")]
        problems += found
        if result is not None:
            out[name] = result
    if problems:
        raise _Problems(problems)
    return out


# ---------------------------------------------------------------- RunOptions


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """``over`` on top of ``base``, recursing into mappings present in both."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _merge_defaults(
    defaults: Mapping[str, Any], behavior: Mapping[str, Any], hp_types: Mapping[str, type]
) -> dict[str, Any]:
    """``behavior`` deep-merged over ``default_settings``. When the behavior names another
    trainer type, only the default hyperparameters that type has are inherited.

    ML-Agents merges over default_settings as resolved, so a default_settings without
    ``reward_signals`` holds the default extrinsic signal, and a behavior that lists only
    ``curiosity`` gets extrinsic and curiosity (without default_settings, curiosity alone).
    """
    if "reward_signals" not in defaults:
        defaults = {**defaults, "reward_signals": {RewardSignalType.EXTRINSIC.value: {}}}
    default_type = defaults.get("trainer_type", "ppo")
    own_type = behavior.get("trainer_type", default_type)
    if own_type != default_type and isinstance(defaults.get("hyperparameters"), Mapping):
        cls = hp_types.get(own_type) if isinstance(own_type, str) else None
        keys = set(yaml_keys(cls)) if cls is not None else set()
        defaults = dict(defaults)
        defaults["hyperparameters"] = {k: v for k, v in defaults["hyperparameters"].items() if k in keys}
    return deep_merge(defaults, behavior)


def _old_format_hint(data: Mapping[str, Any]) -> str | None:
    unknown = [k for k in data if k not in TOP_LEVEL_KEYS]
    looks_like_behavior = any(
        isinstance(data[k], Mapping) and any(s in data[k] for s in ("trainer_type", "trainer", "hyperparameters"))
        for k in unknown
    )
    if looks_like_behavior and "behaviors" not in data:
        return (
            "this looks like an old-format configuration: put each behavior under "
            "'behaviors:' (ML-Agents' upgrade_config does this)"
        )
    return None


def structure_run_options(
    data: Mapping[str, Any] | None,
    *,
    hyperparameter_types: Mapping[str, type] | None = None,
    config_specified: bool = True,
) -> RunOptions:
    """Structure and validate a parsed YAML mapping into RunOptions.

    Raises ConfigError (UnknownTrainerTypeError when a trainer type is unknown) listing every
    problem found, structural and cross-field, each with its full path. Advice that
    ML-Agents' own configs do not follow is logged as a warning.
    """
    hp_types = _hyperparameter_types(hyperparameter_types)
    conv = make_converter(hp_types)
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"the run configuration must be a mapping of sections ({', '.join(TOP_LEVEL_KEYS)}), got {describe(data)}"
        )
    problems: list[Problem | str] = []
    hint = _old_format_hint(data)
    for key in data:
        if key not in TOP_LEVEL_KEYS:
            problems.append(Problem((str(key),), unknown_key_message(key, TOP_LEVEL_KEYS)))
    if hint:
        problems.append(Problem((), hint))

    fields: dict[str, Any] = {"config_specified": config_specified}
    behaviors_ok = True

    default_raw = data.get("default_settings")
    if default_raw is not None:
        default, found = structure_at(conv, default_raw, TrainerSettings, ("default_settings",))
        problems += found
        fields["default_settings"] = default
        behaviors_ok = default is not None

    behaviors: dict[str, TrainerSettings] = {}
    raw_behaviors = data.get("behaviors")
    if raw_behaviors is not None and not isinstance(raw_behaviors, Mapping):
        message = f"expected a mapping of behavior names, got {describe(raw_behaviors)}"
        problems.append(Problem(("behaviors",), message))
        raw_behaviors = None
    for key, raw in (raw_behaviors or {}).items():
        name = str(key)
        if raw is None:
            raw = {}
        if isinstance(raw, Mapping) and isinstance(default_raw, Mapping) and behaviors_ok:
            raw = _merge_defaults(default_raw, raw, hp_types)
        settings, found = structure_at(conv, raw, TrainerSettings, ("behaviors", name))
        problems += found
        if settings is not None:
            behaviors[name] = settings
    # Behaviors are only checked across fields once their defaults are known to be right.
    fields["behaviors"] = behaviors if behaviors_ok else {}

    params, found = structure_at(
        conv,
        data.get("environment_parameters"),
        dict[str, EnvironmentParameterSettings],
        ("environment_parameters",),
    )
    problems += found
    fields["environment_parameters"] = params or {}

    for key, cls in _SECTIONS.items():
        section, found = structure_at(conv, data.get(key), cls, (key,))
        problems += found
        if section is not None:
            fields[key] = section
    if data.get("debug") is not None:
        debug, found = structure_at(conv, data["debug"], bool, ("debug",))
        problems += found
        fields["debug"] = bool(debug)

    options = RunOptions(**fields)
    if not problems:
        options = normalize_checkpoint_settings(options)
    report = check_run_options(options, hyperparameter_types=hp_types)
    problems += report.errors
    if problems:
        raise config_error(problems)
    for warning in report.warnings:
        logger.warning("%s", warning)
    return options


# ---------------------------------------------------------------- writing back


def plain(value: Any) -> Any:
    """Enums to their values, tuples to lists, keys to strings: what yaml.safe_dump takes."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {plain(k) if isinstance(k, enum.Enum) else k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _unstructure_sampler(conv: cattrs.Converter, sampler: Any) -> Any:
    if isinstance(sampler, ConstantSampler) and sampler.seed == -1:
        return sampler.value
    name = next(k for k, cls in sampler_types().items() if type(sampler) is cls)
    return {"sampler_type": name, "sampler_parameters": plain(conv.unstructure(sampler))}


def _unstructure_parameter(conv: cattrs.Converter, name: str, param: EnvironmentParameterSettings) -> Any:
    lessons = param.curriculum
    if len(lessons) == 1 and lessons[0].completion_criteria is None and lessons[0].name == name:
        return _unstructure_sampler(conv, lessons[0].value)
    return {
        "curriculum": [
            {
                "name": lesson.name,
                "value": _unstructure_sampler(conv, lesson.value),
                "completion_criteria": plain(conv.unstructure(lesson.completion_criteria)),
            }
            for lesson in lessons
        ]
    }


def unstructure_run_options(options: RunOptions) -> dict[str, Any]:
    """The YAML form of ``options`` as ML-Agents 0.28 writes it: every key 0.28 knows, derived
    values resolved, ``null`` for unset optional values (``environment_parameters`` too when
    there are none), and keys newer than 0.28 (schema.NEWER_KEY) only where they were set."""
    conv = make_converter()
    default = options.default_settings
    params = options.environment_parameters
    out: dict[str, Any] = {
        "behaviors": {name: conv.unstructure(s) for name, s in options.behaviors.items()},
        "default_settings": None if default is None else conv.unstructure(default),
        "environment_parameters": {name: _unstructure_parameter(conv, name, param) for name, param in params.items()}
        or None,
    }
    for key in _SECTIONS:
        out[key] = conv.unstructure(getattr(options, key))
    out["debug"] = options.debug
    return plain(out)
