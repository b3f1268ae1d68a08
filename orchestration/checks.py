"""Everything a run can refuse before it writes anything or starts an environment
(``agents-learn --check`` runs exactly :func:`check_run`).

Why a module of its own: bad input must be refused before any work, and importing the run's
wiring loads torch (1-3 s). Nothing here imports torch unless a GPU device is named or a
resumed run's checkpoints are read, so the CLI refuses a wrong path, flag or run id at once,
and a run launches its environments while torch loads.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from envs.workers import POLICY_SERVER, EnvFactory, EnvRequest, source_of
from trainers.exceptions import CheckpointError, ConfigError
from trainers.loop.registry import TrainerRegistry
from trainers.settings import AUTO_DEVICE, RunOptions, require_capabilities, uniform_warmup_steps


def check_run(
    options: RunOptions,
    *,
    registry: TrainerRegistry,
    env_factory: EnvFactory | None = None,
    record_demo: str | os.PathLike[str] | None = None,
) -> None:
    """Everything that can be refused without writing anything or starting an environment
    (``--check`` runs exactly this)."""
    require_capabilities(options, registry.records)
    check_environment(options, env_factory)
    if options.env_settings.ray_address is not None:
        check_ray(options, record_demo, env_factory)
    check_results_dir(Path(options.checkpoint_settings.results_dir))
    if record_demo is not None:
        check_record_demo(Path(record_demo))
    check_run_dir(options)
    check_device(options.torch_settings.device)


def check_environment(options: RunOptions, env_factory: EnvFactory | None) -> None:
    """Refuse an environment that cannot exist, or a setting its source cannot take, before
    anything is started."""
    env = options.env_settings
    if env.num_envs < 1:
        raise ConfigError(f"--num-envs (env_settings.num_envs): must be at least 1, got {env.num_envs}")
    source = source_of(env.env_path, env_factory)
    named = f"--env {env.env_path}" if env.env_path is not None else source.name
    supports = source.supports
    if env.num_envs > 1 and not supports.num_envs:
        reason = (
            "the policy server is one environment (its clients are the parallel simulators)"
            if source is POLICY_SERVER
            else f"{source.name} is one environment"
        )
        raise ConfigError(f"--num-envs (env_settings.num_envs) {env.num_envs} with {named}: {reason}; leave it at 1")
    if env.envs_per_worker is not None and not supports.copies:
        raise ConfigError(
            f"--envs-per-worker (env_settings.envs_per_worker) with {named}: only a Gymnasium environment is "
            f"stepped as copies; {source.name} sets its agents itself"
            + (" (--num-areas for training areas)" if supports.areas else "")
        )
    if env.env_kwargs and not supports.env_kwargs:
        raise ConfigError(
            f"env_settings.env_kwargs ({', '.join(sorted(env.env_kwargs))}) with {named}: {source.name} is not made "
            "with keyword arguments (Gymnasium and PettingZoo environments are)"
        )
    if env.num_areas > 1 and not supports.areas:
        raise ConfigError(
            f"--num-areas (env_settings.num_areas) {env.num_areas} with {named}: {source.name} has no training "
            "areas" + (" (--envs-per-worker sets its copies)" if supports.copies else "")
        )
    if env.env_args and not supports.env_args:
        raise ConfigError(
            f"--env-args (env_settings.env_args) with {named}: only a Unity build this run launches takes "
            "command-line arguments"
        )
    request = EnvRequest(
        env_path=env.env_path,
        env_factory=env_factory,
        env_kwargs=env.env_kwargs,
        with_parameters=bool(options.environment_parameters),
    )
    if env_factory is not None:
        source.check(request)  # EnvFactoryError, naming env_factory
        return
    try:
        source.check(request)
    except ValueError as error:
        raise ConfigError(f"--env (env_settings.env_path): {error}") from None


def check_ray(
    options: RunOptions, record_demo: str | os.PathLike[str] | None, env_factory: EnvFactory | None = None
) -> None:
    """``--ray-address`` needs Ray installed, and runners that act where they are cannot
    record demonstrations here nor be the policy server."""
    env_path = options.env_settings.env_path
    source = source_of(env_path, env_factory)
    if source is POLICY_SERVER:
        raise ConfigError(
            f"--ray-address with --env {env_path}: the policy server answers its clients from the "
            "learner (they are the parallel simulators); leave out --ray-address"
        )
    if not source.supports.ray:
        raise ConfigError(f"--ray-address with {source.name}: env runners open their own environments")
    if record_demo is not None:
        raise ConfigError(
            "--record-demo with --ray-address: env runners act on their own nodes and only ship "
            "trajectories, so there is nothing to record here; record without --ray-address"
        )
    configured = [(f"behaviors.{name}", settings) for name, settings in options.behaviors.items()]
    if options.default_settings is not None:
        configured.append(("default_settings", options.default_settings))
    for where, settings in configured:
        if uniform_warmup_steps(settings.hyperparameters):
            raise ConfigError(
                f"{where}.hyperparameters.buffer_init_actions: uniform with --ray-address: each env runner acts "
                "with its own copy of the policy, which does not count the run's steps; leave the key out (the "
                "policy acts from the start, as in ML-Agents) or train without --ray-address"
            )
    if importlib.util.find_spec("ray") is None:
        raise ConfigError(
            "--ray-address (env_settings.ray_address): Ray is not installed; install the extra with "
            "pip install -c constraints.txt -e '.[ray]'"
        )


def check_results_dir(results_dir: Path) -> None:
    """The results folder must be a folder (or not exist yet)."""
    for folder in (results_dir, *results_dir.parents):
        if folder.exists() and not folder.is_dir():
            raise ConfigError(f"--results-dir (checkpoint_settings.results_dir): {folder} is a file, not a folder")


def check_record_demo(folder: Path) -> None:
    """``--record-demo`` must name a folder (or where one can be made)."""
    for path in (folder, *folder.parents):
        if path.exists() and not path.is_dir():
            raise ConfigError(f"--record-demo: {path} is a file, not a folder")


def check_device(requested: str | None) -> None:
    """Refuse a ``--torch-device`` torch cannot use. Torch loads here only for a device other
    than the CPU or ``auto``, which cannot be refused: a run's environments start while it loads."""
    if requested in (None, AUTO_DEVICE, "cpu"):
        return
    import torch

    try:
        torch.empty(0, device=torch.device(requested))
    except (RuntimeError, AssertionError) as error:
        raise ConfigError(
            f"--torch-device (torch_settings.device): {requested!r} is not usable: {str(error).splitlines()[0]}"
        ) from None


def pick_device(requested: str | None) -> str:
    """The device to train on (after :func:`check_device`): the one asked for, else ``auto``
    where torch sees a GPU (each behavior measures where it trains faster, see
    trainers.loop.device_choice), else the CPU."""
    if requested and requested != AUTO_DEVICE:
        import torch

        return str(torch.device(requested))
    from trainers.loop.device_choice import candidate_devices

    return AUTO_DEVICE if len(candidate_devices()) > 1 else "cpu"


def check_checkpoints_readable(run_dir: Path) -> None:
    """Every behavior's ``checkpoint.pt`` in an earlier run loads and is agents-learn's (an
    mlagents-learn run is refused: --initialize-from takes its weights). Before anything changes."""
    from trainers.files.checkpoints import LATEST_CHECKPOINT, load_state
    from trainers.files.mlagents_checkpoint import is_mlagents_checkpoint, resume_refusal

    for path in sorted(run_dir.glob(f"*/{LATEST_CHECKPOINT}")):
        if is_mlagents_checkpoint(load_state(path)):
            raise resume_refusal(path, run_dir.name)


def check_run_dir(options: RunOptions) -> bool:
    """Check the run id against what is on disk without changing it: refuse to overwrite
    without --force, to resume what is not there or what cannot be read, to initialize from a
    run that does not exist. Returns whether an earlier run is in the folder."""
    cp = options.checkpoint_settings
    run_dir = Path(cp.write_path)
    # A run that stopped before its first checkpoint (e.g. a config error) left only logs.
    exists = run_dir.is_dir() and (
        (run_dir / "run_logs" / "training_status.json").exists()
        or any(p.is_dir() and p.name != "run_logs" for p in run_dir.iterdir())
    )
    if cp.initialize_from is not None:
        init_dir = Path(cp.maybe_init_path or "")
        if not init_dir.is_dir():
            raise CheckpointError(f"--initialize-from {cp.initialize_from}: {init_dir} does not exist")
    if cp.resume or cp.inference:
        if cp.resume and not exists:
            raise CheckpointError(
                f"cannot resume run {cp.run_id!r}: {run_dir} does not exist (start it without --resume)"
            )
        if exists:
            check_checkpoints_readable(run_dir)
    elif exists and not cp.force:
        raise CheckpointError(
            f"{run_dir} already exists: use --resume to continue run {cp.run_id!r}, --force to "
            "overwrite it, or another --run-id"
        )
    return exists
