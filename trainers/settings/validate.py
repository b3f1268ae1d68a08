"""Cross-field validation of a RunOptions, run once before any work.

Every error is reported together with the numbers involved
(``behaviors.3DBall: batch_size (2048) must not exceed buffer_size (1024)``). Advice that
ML-Agents' own example configs do not follow (buffer_size a multiple of batch_size) is a
warning, never an error.
"""

from __future__ import annotations

import logging
import ntpath
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from trainers.settings.schema import (
    BehavioralCloningSettings,
    EnvironmentParameterSettings,
    GAILSettings,
    GaussianSampler,
    MeasureType,
    MultiRangeUniformSampler,
    NetworkSettings,
    POCASettings,
    RunOptions,
    SACSettings,
    ScheduleType,
    SelfPlaySettings,
    TargetCritic,
    TrainerSettings,
    UniformSampler,
)
from trainers.settings.text import short_repr
from trainers.settings.trainer_types import builtin_hyperparameter_types

logger = logging.getLogger(__name__)

_DEVICE = re.compile(r"^(auto|cpu|mps|(cuda|xpu)(:\d+)?)$")

# Networks with this many parameters or more are refused before anything starts. Training one
# holds weights, gradients and Adam's two moments in float32: 16 bytes a parameter, so 2**30
# parameters are 16 GiB before a single activation. ML-Agents' largest example networks
# (512 units x 3 layers) have about a million; a value this far out is a typo
# (hidden_units: 1000000000), which torch would only report when allocating, after the
# environments were started.
MAX_NETWORK_PARAMETERS = 2**30
BYTES_PER_TRAINED_PARAMETER = 16


@attrs.frozen
class ValidationReport:
    """Errors (the run must not start) and warnings (advice), each a one-line message."""

    errors: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()


class _Checks:
    """Accumulates errors and warnings for one check_run_options call."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.warnings: list[str] = []

    def require(self, path: str, value: Any, ok: Callable[[Any], bool], rule: str) -> None:
        """Error ``path: must be <rule> (got value)`` unless ``ok(value)``."""
        if value is not None and not ok(value):
            self.errors.append(f"{path}: must be {rule} (got {short_repr(value)})")


def _positive(c: _Checks, path: str, obj: Any, *names: str) -> None:
    for name in names:
        if hasattr(obj, name):
            c.require(f"{path}.{name}", getattr(obj, name), lambda v: v > 0, "> 0")


def _non_negative(c: _Checks, path: str, obj: Any, *names: str) -> None:
    for name in names:
        if hasattr(obj, name):
            c.require(f"{path}.{name}", getattr(obj, name), lambda v: v >= 0, ">= 0")


def estimate_network_parameters(net: NetworkSettings, *, bodies: int = 1) -> int:
    """A lower bound on the parameters of ``bodies`` networks built from ``net``, whatever the
    observations: each body maps at least one input through ``num_layers`` Linear layers of
    ``hidden_units`` (weights and biases; at least one, as ``num_layers`` 0 builds one) to at
    least one output; memory adds an LSTM of ``memory_size / 2`` units. Visual encoders and
    wider inputs only add to it."""
    h, layers = max(net.hidden_units, 0), max(net.num_layers, 1)
    body = 2 * h + (layers - 1) * (h * h + h) + h + 1
    if net.memory is not None and net.memory.memory_size > 0:
        m = net.memory.memory_size // 2
        body += 4 * m * (max(h, 1) + m + 2)
    return bodies * body


def _check_network(c: _Checks, path: str, net: NetworkSettings, *, bodies: int = 1, what: str = "network") -> None:
    _positive(c, path, net, "hidden_units")
    # num_layers 0 is accepted and builds one hidden layer, as in mlagents-learn (its
    # LinearEncoder always builds the first layer); a negative count is a typo.
    _non_negative(c, path, net, "num_layers")
    if net.hidden_units > 0 and net.num_layers >= 0:
        params = estimate_network_parameters(net, bodies=bodies)
        if params >= MAX_NETWORK_PARAMETERS:
            size = params * BYTES_PER_TRAINED_PARAMETER / 2**30
            c.errors.append(
                f"{path}: hidden_units ({net.hidden_units}) x num_layers ({net.num_layers}) "
                f"make the {what} at least {params:.3g} parameters, about {size:,.0f} GiB to "
                f"train (weights, gradients, Adam state); the limit is "
                f"{MAX_NETWORK_PARAMETERS:.3g} parameters"
            )
    if net.memory is not None:
        mem = f"{path}.memory"
        c.require(f"{mem}.sequence_length", net.memory.sequence_length, lambda v: v > 0, "> 0")
        c.require(f"{mem}.memory_size", net.memory.memory_size, lambda v: v > 0 and v % 2 == 0, "even and > 0")


def _check_hyperparameters(c: _Checks, where: str, hp: Any) -> None:
    path = f"{where}.hyperparameters"
    _positive(
        c,
        path,
        hp,
        "batch_size",
        "buffer_size",
        "learning_rate",
        "epsilon",
        "num_epoch",
        "steps_per_update",
        "init_entcoef",
        "max_grad_norm",
        "adam_epsilon",
    )
    _non_negative(c, path, hp, "beta", "buffer_init_steps")
    if isinstance(hp, POCASettings) and hp._epsilon_floor is not None:  # PPO too; checked only where set
        floor = hp._epsilon_floor
        if hp.epsilon_schedule == ScheduleType.CONSTANT:
            c.errors.append(
                f"{path}.epsilon_floor: the end of a linear epsilon_schedule, but epsilon_schedule is "
                f"constant; remove it or set epsilon_schedule: linear"
            )
        else:
            c.require(
                f"{path}.epsilon_floor", floor, lambda v: 0 <= v <= hp.epsilon, f"between 0 and epsilon ({hp.epsilon})"
            )
    if hasattr(hp, "lambd"):
        c.require(f"{path}.lambd", hp.lambd, lambda v: 0 <= v <= 1, "between 0 and 1")
    if hasattr(hp, "tau"):
        c.require(f"{path}.tau", hp.tau, lambda v: 0 < v <= 1, "in (0, 1]")
    if hasattr(hp, "reward_signal_steps_per_update"):
        c.require(f"{path}.reward_signal_steps_per_update", hp.reward_signal_steps_per_update, lambda v: v > 0, "> 0")
    batch, buffer = getattr(hp, "batch_size", None), getattr(hp, "buffer_size", None)
    if isinstance(batch, int) and isinstance(buffer, int) and batch > 0 and buffer > 0:
        if batch > buffer:
            c.errors.append(f"{where}: batch_size ({batch}) must not exceed buffer_size ({buffer})")
        elif isinstance(hp, POCASettings) and buffer % batch:  # PPO too
            c.warnings.append(
                f"{where}: buffer_size ({buffer}) is not a multiple of batch_size ({batch}); "
                f"each epoch leaves {buffer % batch} steps out of its minibatches"
            )


def check_trainer_settings(
    where: str, settings: TrainerSettings, hyperparameter_types: Mapping[str, type] | None = None
) -> ValidationReport:
    """Errors and warnings of one behavior's settings; ``where`` prefixes every message
    (``behaviors.3DBall``)."""
    c = _Checks()
    hp_types = hyperparameter_types
    if hp_types is None:
        hp_types = builtin_hyperparameter_types()
    expected = hp_types.get(settings.trainer_type)
    if expected is not None and not isinstance(settings.hyperparameters, expected):
        c.errors.append(
            f"{where}.hyperparameters: trainer_type {settings.trainer_type} takes "
            f"{expected.__name__}, got {type(settings.hyperparameters).__name__}"
        )
    _check_hyperparameters(c, where, settings.hyperparameters)
    # The trained networks built from network_settings: PPO's actor and critic (one body when
    # shared), SAC's actor, two Q networks and value network (targets are not trained).
    hp = settings.hyperparameters
    target_q = isinstance(hp, SACSettings) and hp.target_critic == TargetCritic.Q
    if target_q:
        bodies, what = 3, "actor and Q networks"
    elif isinstance(hp, SACSettings):
        bodies, what = 4, "actor, Q and value networks"
    elif getattr(settings.hyperparameters, "shared_critic", False):
        bodies, what = 1, "network"
    else:
        bodies, what = 2, "actor and critic"
    _check_network(c, f"{where}.network_settings", settings.network_settings, bodies=bodies, what=what)
    memory = settings.network_settings.memory
    if memory is not None and target_q:
        c.errors.append(
            f"{where}.hyperparameters.target_critic: q (Stable-Baselines3's target Q networks) is for "
            f"networks without memory; remove network_settings.memory or target_critic"
        )
    batch = getattr(settings.hyperparameters, "batch_size", None)
    if memory is not None and isinstance(batch, int) and memory.sequence_length > batch:
        c.errors.append(
            f"{where}: network_settings.memory.sequence_length ({memory.sequence_length}) "
            f"must not exceed batch_size ({batch})"
        )
    elif memory is not None and isinstance(batch, int) and batch % memory.sequence_length:
        length = memory.sequence_length
        if isinstance(settings.hyperparameters, SACSettings):  # samples batch // length sequences, as mlagents-learn
            c.warnings.append(
                f"{where}: hyperparameters.batch_size ({batch}) is not a multiple of "
                f"network_settings.memory.sequence_length ({length}); each minibatch is {batch // length} whole "
                f"sequence(s), {batch // length * length} steps"
            )
        else:  # PPO-like trainers take minibatches of whole sequences (mlagents-learn fails at its first update)
            c.errors.append(
                f"{where}: hyperparameters.batch_size ({batch}) must be a multiple of "
                f"network_settings.memory.sequence_length ({length}): minibatches are whole sequences"
            )
    _positive(c, where, settings, "time_horizon", "summary_freq", "checkpoint_interval", "keep_checkpoints")
    _non_negative(c, where, settings, "max_steps")
    if not settings.reward_signals:
        c.errors.append(f"{where}.reward_signals: at least one reward signal is required (e.g. extrinsic: {{}})")
    for key, signal in settings.reward_signals.items():
        path = f"{where}.reward_signals.{key}"
        c.require(f"{path}.gamma", signal.gamma, lambda v: 0 < v < 1, "between 0 and 1, exclusive")
        _positive(c, path, signal, "learning_rate", "encoding_size")
        if getattr(signal, "encoding_size", None) is not None:
            c.warnings.append(f"{path}.encoding_size: deprecated; use {path}.network_settings.hidden_units")
        _check_network(c, f"{path}.network_settings", signal.network_settings)
        if isinstance(signal, GAILSettings) and not signal.demo_path:
            c.errors.append(f"{path}.demo_path: gail requires a demo_path (a .demo file or folder)")
    bc = settings.behavioral_cloning
    if isinstance(bc, BehavioralCloningSettings):
        path = f"{where}.behavioral_cloning"
        if not bc.demo_path:
            c.errors.append(f"{path}.demo_path: behavioral_cloning requires a demo_path")
        _non_negative(c, path, bc, "steps", "strength", "samples_per_update")
        _positive(c, path, bc, "num_epoch", "batch_size")
    sp = settings.self_play
    if isinstance(sp, SelfPlaySettings):
        path = f"{where}.self_play"
        _positive(c, path, sp, "save_steps", "team_change", "swap_steps", "window")
        c.require(
            f"{path}.play_against_latest_model_ratio",
            sp.play_against_latest_model_ratio,
            lambda v: 0 <= v <= 1,
            "between 0 and 1",
        )
    return ValidationReport(tuple(c.errors), tuple(c.warnings))


def _check_sampler(c: _Checks, path: str, sampler: Any) -> None:
    if isinstance(sampler, UniformSampler) and sampler.min_value > sampler.max_value:
        c.errors.append(f"{path}: min_value ({sampler.min_value}) must not exceed max_value ({sampler.max_value})")
    if isinstance(sampler, GaussianSampler):
        c.require(f"{path}.st_dev", sampler.st_dev, lambda v: v >= 0, ">= 0")
    if isinstance(sampler, MultiRangeUniformSampler):
        if not sampler.intervals:
            c.errors.append(f"{path}.intervals: at least one [min, max] interval is required")
        for i, (low, high) in enumerate(sampler.intervals):
            if low > high:
                c.errors.append(f"{path}.intervals.{i}: min ({low}) must not exceed max ({high})")


def _check_parameter(c: _Checks, name: str, param: EnvironmentParameterSettings, behaviors: set[str] | None) -> None:
    where = f"environment_parameters.{name}"
    if not param.curriculum:
        c.errors.append(f"{where}.curriculum: at least one lesson is required")
    last = len(param.curriculum) - 1
    for i, lesson in enumerate(param.curriculum):
        path = f"{where}.curriculum.{i}"
        shorthand = last == 0 and lesson.completion_criteria is None and lesson.name == name
        _check_sampler(c, where if shorthand else f"{path}.value", lesson.value)
        criteria = lesson.completion_criteria
        if criteria is None:
            if i < last:
                c.errors.append(
                    f"{path} ({lesson.name}): completion_criteria are required on every lesson but the last"
                )
            continue
        if i == last:
            c.warnings.append(f"{path} ({lesson.name}): the last lesson's completion_criteria are ignored")
            continue
        crit = f"{path}.completion_criteria"
        if criteria.measure is MeasureType.PROGRESS:
            c.require(
                f"{crit}.threshold", criteria.threshold, lambda v: 0 <= v <= 1, "between 0 and 1 for measure progress"
            )
        c.require(f"{crit}.min_lesson_length", criteria.min_lesson_length, lambda v: v >= 0, ">= 0")
        if behaviors is not None and criteria.behavior not in behaviors:
            # the lesson could never end: its criteria would read a behavior that never trains
            c.errors.append(
                f"{crit}.behavior: {short_repr(criteria.behavior)} is not among the configured "
                f"behaviors ({', '.join(sorted(behaviors))})"
            )


def folder_name_problem(name: str) -> str | None:
    """Why ``name`` is not a plain folder name inside the results folder (a run id), or None.

    Refused: empty or blank, ``.`` and ``..``, any ``/`` or ``\\`` (so nothing escapes
    ``results_dir`` or lands in a sub-folder), absolute or drive paths, NUL."""
    if not name.strip():
        return "must not be empty"
    if "\0" in name:
        return f"must not contain a NUL character (got {short_repr(name)})"
    if name in (".", ".."):
        return f"must be a folder name inside results_dir, not {name!r}"
    if "/" in name or "\\" in name or os.path.isabs(name) or ntpath.splitdrive(name)[0]:
        return f"must be a plain folder name inside results_dir, without / or \\ (got {short_repr(name)})"
    return None


def check_run_options(
    options: RunOptions, *, hyperparameter_types: Mapping[str, type] | None = None
) -> ValidationReport:
    """Every cross-field error and warning of ``options`` (nothing raised, nothing logged)."""
    c = _Checks()
    for name, settings in options.behaviors.items():
        report = check_trainer_settings(f"behaviors.{name}", settings, hyperparameter_types)
        c.errors += report.errors
        c.warnings += report.warnings
    if options.default_settings is not None:
        report = check_trainer_settings("default_settings", options.default_settings, hyperparameter_types)
        c.errors += report.errors
        c.warnings += report.warnings
    # Curriculum behaviors are checked against the configured ones unless any name is allowed.
    known: set[str] | None = set(options.behaviors)
    if options.default_settings is not None or not options.behaviors:
        known = None
    for name, param in options.environment_parameters.items():
        _check_parameter(c, name, param, known)

    env = options.env_settings
    _positive(c, "env_settings", env, "num_envs", "num_areas", "timeout_wait", "restarts_rate_limit_period_s")
    c.require("env_settings.envs_per_worker", env.envs_per_worker, lambda v: v >= 1, "at least 1")
    c.require("env_settings.base_port", env.base_port, lambda v: 0 < v <= 65535, "between 1 and 65535")
    if env.num_envs > 1 and env.base_port + env.num_envs - 1 > 65535 and env.base_port <= 65535:
        c.errors.append(f"env_settings: base_port ({env.base_port}) + num_envs ({env.num_envs}) runs past port 65535")
    if env.env_path is None and env.num_envs != 1:
        c.errors.append(
            f"env_settings: num_envs ({env.num_envs}) must be 1 without env_path "
            "(the Unity Editor is a single environment; set env_path or --env)"
        )
    if env.ray_address is not None:
        if not env.ray_address.strip():
            c.errors.append("env_settings.ray_address: must not be empty (local, auto, or the cluster's address)")
        if env.env_path is None:
            c.errors.append(
                "env_settings.ray_address: env runners open their own environments; the Unity Editor "
                "cannot be one (set env_path or --env)"
            )
        elif env.env_path.startswith("external:"):
            c.errors.append(
                f"env_settings.ray_address: the policy server ({env.env_path}) runs beside the trainer, which "
                "serves its clients' steps itself; leave out --ray-address"
            )
    c.require("env_settings.seed", env.seed, lambda v: v >= -1, "-1 (random) or >= 0")
    for name in ("max_lifetime_restarts", "restarts_rate_limit_n"):
        c.require(f"env_settings.{name}", getattr(env, name), lambda v: v >= -1, "-1 (unlimited) or >= 0")
    if env.env_path is not None and not env.env_path.strip():
        c.errors.append("env_settings.env_path: must not be empty (leave it out for the Editor)")

    engine = options.engine_settings
    _positive(c, "engine_settings", engine, "width", "height", "time_scale")
    _non_negative(c, "engine_settings", engine, "quality_level", "capture_frame_rate")

    cp = options.checkpoint_settings
    if not cp.results_dir.strip():
        c.errors.append("checkpoint_settings.results_dir: must not be empty")
    for name in ("run_id", "initialize_from"):
        value = getattr(cp, name)
        problem = None if value is None else folder_name_problem(value)
        if problem is not None:
            c.errors.append(f"checkpoint_settings.{name}: {problem}")

    device = options.torch_settings.device
    if device is not None and not _DEVICE.match(device):
        c.errors.append(
            f"torch_settings.device: expected auto, cpu, cuda, cuda:N, mps or xpu, got {short_repr(device)}"
        )
    return ValidationReport(tuple(c.errors), tuple(c.warnings))


def normalize_checkpoint_settings(options: RunOptions) -> RunOptions:
    """Resolve checkpoint choices written in YAML, once, with a warning each: the
    deprecated ``load_model`` means ``resume``; ``resume`` with ``initialize_from`` resumes
    and ignores the initialization (ML-Agents' rule for a YAML-only conflict)."""
    cp = options.checkpoint_settings
    if cp.load_model and not cp.resume:
        logger.warning("checkpoint_settings.load_model is deprecated; read as resume: true.")
        cp = attrs.evolve(cp, resume=True)
    if cp.resume and cp.initialize_from is not None:
        logger.warning(
            "Both resume and initialize_from=%s are set in the configuration; the run will be "
            "resumed and the initialization ignored.",
            cp.initialize_from,
        )
        cp = attrs.evolve(cp, initialize_from=None)
    if cp is options.checkpoint_settings:
        return options
    return attrs.evolve(options, checkpoint_settings=cp)
