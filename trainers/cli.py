"""``agents-learn``: the mlagents-learn command line (REFERENCE 1.3).

    agents-learn config/ppo/3DBall.yaml --run-id=ball                 # built-in 3DBall
    agents-learn config/ppo/3DBall.yaml --env=Builds/3DBall.x86_64 --num-envs=4
    agents-learn config/ppo/3DBall.yaml                               # (with env_path unset) the Editor

A value typed on the command line overrides the YAML, which overrides the defaults; flags not
typed leave the YAML alone. Every error agents-learn raises on purpose is printed as one line
on stderr with a non-zero exit (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import shutil
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

import attrs

from trainers.exceptions import AgentsLearnError, CheckpointError, ConfigError

logger = logging.getLogger("agents_learn")

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
BUILD_SUFFIXES = ("", ".x86_64", ".x86", ".exe", ".app")


def build_parser() -> argparse.ArgumentParser:
    """The parser; every default is SUPPRESS, so the namespace holds exactly the typed flags."""
    p = argparse.ArgumentParser(
        prog="agents-learn", argument_default=argparse.SUPPRESS, allow_abbrev=False,
        description="Train agents of Unity ML-Agents environments (mlagents-learn compatible). "
                    "Values typed here override the YAML configuration.",
    )
    p.add_argument("trainer_config_path", nargs="?", help="run configuration YAML (mlagents-learn format)")
    p.add_argument("--env", dest="env", metavar="ENV_PATH",
                   help="Unity build to train in, or builtin:<Name>; none: connect to the Editor on port 5004")
    p.add_argument("--resume", action="store_true", help="continue the run --run-id from its checkpoints")
    p.add_argument("--load", dest="load_model", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deterministic", action="store_true", help="act with the mean/most likely action")
    p.add_argument("--force", action="store_true", help="overwrite the results of an existing --run-id")
    p.add_argument("--run-id", metavar="RUN_ID", help="results sub-folder (default: ppo)")
    p.add_argument("--initialize-from", metavar="RUN_ID", help="start from the weights of another run")
    p.add_argument("--seed", type=int, help="random seed; -1 (default) draws one in 0-9999")
    p.add_argument("--train", dest="train_model", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--inference", action="store_true", help="act without training")
    p.add_argument("--base-port", type=int, help="worker i listens on base-port + i (default 5005)")
    p.add_argument("--num-envs", type=int, help="environments stepped in parallel, one process each (default 1)")
    p.add_argument("--num-areas", type=int, help="training areas inside each environment (default 1)")
    p.add_argument("--debug", action="store_true", help="debug logging, and tracebacks with errors")
    p.add_argument("--max-lifetime-restarts", type=int, help="restarts per crashed worker; -1: no limit (default 10)")
    p.add_argument("--restarts-rate-limit-n", type=int, help="restarts per period; -1: no limit (default 1)")
    p.add_argument("--restarts-rate-limit-period-s", type=int, help="the rate limit's period, s (default 60)")
    p.add_argument("--torch", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tensorflow", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--results-dir", help="base folder of results (default: results)")
    p.add_argument("--timeout-wait", type=int, help="seconds to wait for an environment (default 60)")
    p.add_argument("--width", type=int, help="window width (default 84)")
    p.add_argument("--height", type=int, help="window height (default 84)")
    p.add_argument("--quality-level", type=int, help="QualitySettings level (default 5)")
    p.add_argument("--time-scale", type=float, help="Time.timeScale (default 20)")
    p.add_argument("--target-frame-rate", type=int, help="Application.targetFrameRate (default -1)")
    p.add_argument("--capture-frame-rate", type=int, help="Time.captureFramerate (default 60)")
    p.add_argument("--no-graphics", action="store_true", help="run builds with -nographics -batchmode")
    p.add_argument("--no-graphics-monitor", action="store_true", help="worker 0 renders, the others run without graphics")
    p.add_argument("--torch-device", help="cpu, cuda, cuda:N, mps (default: cuda when available)")
    p.add_argument("--bind-address", metavar="ADDRESS",
                   help="interface Unity connects to (default 127.0.0.1; 0.0.0.0 for builds in other "
                        "Docker containers or machines)")
    p.add_argument("--env-args", nargs=argparse.REMAINDER, help="arguments passed to the build (must come last)")
    return p


def configure_logging(debug: bool) -> None:
    fmt = "%(asctime)s %(levelname)s [%(filename)s:%(lineno)d] %(message)s" if debug else "[%(levelname)s] %(message)s"
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter(fmt, "%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    for noisy in ("matplotlib", "PIL", "urllib3", "grpc", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def resolve_options(explicit: dict[str, Any]) -> Any:
    """RunOptions from the config file (if any) with the typed flags over it."""
    from trainers.registry import TrainerRegistry
    from trainers.settings import apply_cli_overrides, load_run_options

    for removed in ("torch", "tensorflow"):
        if explicit.pop(removed, False):
            logger.warning("--%s has no effect: agents-learn always trains with PyTorch.", removed)
    config_path = explicit.pop("trainer_config_path", None)
    registry = TrainerRegistry.with_plugins()
    options = load_run_options(config_path, hyperparameter_types=registry.hyperparameter_types)
    return apply_cli_overrides(options, explicit), registry


def check_environment(env_path: str | None, num_envs: int) -> None:
    """Refuse an environment that cannot exist before anything is started."""
    from envs.builtin import available
    from trainers.env_manager import BUILTIN_PREFIX

    if num_envs < 1:
        raise ConfigError(f"--num-envs (env_settings.num_envs): must be at least 1, got {num_envs}")
    if env_path is None:
        if num_envs > 1:
            raise ConfigError("--num-envs greater than 1 needs --env (a build): the Editor is one environment")
        return
    if env_path.startswith(BUILTIN_PREFIX):
        name = env_path[len(BUILTIN_PREFIX):]
        if name not in available():
            raise ConfigError(f"--env (env_settings.env_path): unknown built-in environment {name!r}; "
                              f"available: {', '.join(BUILTIN_PREFIX + n for n in available())}")
        return
    if not any(os.path.exists(env_path + suffix) for suffix in BUILD_SUFFIXES):
        raise ConfigError(f"--env (env_settings.env_path): {env_path} does not exist (give the path to a "
                          f"Unity build, builtin:<Name> for a built-in environment, or no --env for the Editor)")


def prepare_run_dir(options: Any) -> Path:
    """Check the run id against what is on disk: refuse to overwrite without --force, refuse to
    resume what is not there."""
    cp = options.checkpoint_settings
    run_dir = Path(cp.write_path)
    # A run that stopped before its first checkpoint (e.g. a config error) left only logs.
    exists = run_dir.is_dir() and (
        (run_dir / "run_logs" / "training_status.json").exists()
        or any(p.is_dir() and p.name != "run_logs" for p in run_dir.iterdir())
    )
    if cp.resume or cp.inference:
        if cp.resume and not exists:
            raise CheckpointError(f"cannot resume run {cp.run_id!r}: {run_dir} does not exist "
                                  "(start it without --resume)")
    elif exists:
        if not cp.force:
            raise CheckpointError(
                f"{run_dir} already exists: use --resume to continue run {cp.run_id!r}, --force to "
                "overwrite it, or another --run-id")
        logger.warning("--force: deleting the previous results in %s", run_dir)
        shutil.rmtree(run_dir)
    if cp.initialize_from is not None:
        init_dir = Path(cp.maybe_init_path)
        if not init_dir.is_dir():
            raise CheckpointError(f"--initialize-from {cp.initialize_from}: {init_dir} does not exist")
    (run_dir / "run_logs").mkdir(parents=True, exist_ok=True)
    return run_dir


def finished_behaviors(options: Any, status: Any) -> dict[str, tuple[int, int]] | None:
    """For a resumed run: {behavior: (steps saved, max_steps)} if every configured behavior has
    already reached max_steps, else None."""
    done: dict[str, tuple[int, int]] = {}
    for name, settings in options.behaviors.items():
        record = status.final(name)
        checkpoints = status.checkpoints(name)
        steps = max([c.steps for c in checkpoints] + ([record.steps] if record is not None else []), default=None)
        if steps is None or steps < settings.max_steps:
            return None
        done[name] = (steps, settings.max_steps)
    return done or None


def pick_device(requested: str | None) -> str:
    import torch

    if requested:
        try:
            device = torch.device(requested)
            torch.empty(0, device=device)
        except (RuntimeError, AssertionError) as error:
            raise ConfigError(f"--torch-device (torch_settings.device): {requested!r} is not usable: "
                              f"{str(error).splitlines()[0]}") from None
        return str(device)
    return "cuda" if torch.cuda.is_available() else "cpu"


def run_training(options: Any, registry: Any, bind_address: str, stop: threading.Event) -> int:
    """Everything after the configuration: results folder, environments, trainers, the loop."""
    import torch

    from stats import PerfStats, StatsHub, Timers, default_writers, load_stats_writer_plugins, write_timers_json
    from trainers.checkpoints import TrainingStatus
    from trainers.controller import TrainerController
    from trainers.env_manager import (
        EnvLaunch,
        EnvManager,
        InProcessPool,
        RestartBudget,
        SubprocessPool,
    )
    from trainers.settings import ConstantSampler, write_configuration

    env = options.env_settings
    cp = options.checkpoint_settings
    check_environment(env.env_path, env.num_envs)
    seed = env.seed
    if seed == -1:
        seed = random.SystemRandom().randint(0, 9999)
        logger.info("Seed: %d (drawn; pass --seed %d to repeat)", seed, seed)
        options = attrs.evolve(options, env_settings=attrs.evolve(env, seed=seed))
        env = options.env_settings
    # Small networks: one thread is many times faster than torch's default for batches of a
    # few dozen rows, and leaves the other cores to environment processes.
    torch.set_num_threads(1)
    device = pick_device(options.torch_settings.device)
    run_dir = prepare_run_dir(options)
    status_path = run_dir / "run_logs" / "training_status.json"
    status = TrainingStatus.load(status_path) if (cp.resume or cp.inference) else TrainingStatus(status_path)
    if cp.resume and not cp.inference:
        done = finished_behaviors(options, status)
        if done is not None:
            listing = ", ".join(f"{n}: {s} of {m} steps" for n, (s, m) in done.items())
            logger.info("Run %r has already finished (%s); nothing to train. Raise max_steps in the "
                        "configuration to train it further.", cp.run_id, listing)
            print(f"agents-learn: run {cp.run_id!r} has already finished ({listing}); raise max_steps to "
                  "train further.", file=sys.stderr)
            return 0
    write_configuration(options, run_dir / "configuration.yaml")
    logger.info("Writing results to %s; watch training with: tensorboard --logdir %s", run_dir, cp.results_dir)

    timers = Timers()
    writers = default_writers(run_dir, resume=cp.resume, timers=timers)
    writers += load_stats_writer_plugins(options)
    hub = StatsHub(writers)
    perf = PerfStats()
    parameters = []
    for key, parameter in options.environment_parameters.items():
        value = parameter.curriculum[0].value if parameter.curriculum else None
        if isinstance(value, ConstantSampler):
            parameters.append((key, float(value.value)))
        else:
            logger.warning("Environment parameter %s: only constant values are sent (samplers and "
                           "curricula come later); the environment's default is used.", key)
    engine = options.engine_settings
    launch = EnvLaunch(
        env_path=env.env_path, seed=seed, base_port=env.base_port, num_areas=env.num_areas,
        timeout_wait=float(env.timeout_wait), env_args=tuple(env.env_args or ()),
        no_graphics=engine.no_graphics, no_graphics_monitor=engine.no_graphics_monitor,
        engine=(engine.width, engine.height, engine.quality_level, engine.time_scale,
                engine.target_frame_rate, engine.capture_frame_rate),
        env_parameters=tuple(parameters), log_folder=str((run_dir / "run_logs").resolve()),
        bind_address=bind_address,
    )
    if env.env_path is None:
        logger.info("Listening on port 5004. Start training by pressing the Play button in the Unity Editor.")
    pool = SubprocessPool(launch, env.num_envs) if env.num_envs > 1 else InProcessPool(launch)
    controller = TrainerController(options=options, run_dir=run_dir, hub=hub, registry=registry, status=status,
                                   seed=seed, device=device, perf=perf, stop=stop)
    restarts = RestartBudget(env.max_lifetime_restarts, env.restarts_rate_limit_n,
                             float(env.restarts_rate_limit_period_s))
    manager = EnvManager(pool, controller.create_runtime, restarts=restarts, perf=perf, timers=timers)
    try:
        controller.run(manager)
    finally:
        try:
            write_configuration(options, run_dir / "configuration.yaml")
            write_timers_json(run_dir / "run_logs" / "timers.json", timers)
        finally:
            hub.close()
    logger.info("Results in %s; see them with: tensorboard --logdir %s", run_dir, cp.results_dir)
    return 0  # a stop request is a clean end, as in mlagents-learn: everything is saved


def install_stop_handler(stop: threading.Event) -> None:
    """First Ctrl-C (or SIGTERM) asks the run to stop and save; a second one aborts at once."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        logger.info("Stopping (%s): saving checkpoints and models; press Ctrl-C again to abort.",
                    signal.Signals(signum).name)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _error_types() -> tuple[type[BaseException], ...]:
    from mlagents_envs.exception import UnityException

    from envs.builtin import UnknownBuiltinEnvError

    return (AgentsLearnError, UnityException, UnknownBuiltinEnvError)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``agents-learn``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    explicit = vars(build_parser().parse_args(args))
    debug = bool(explicit.get("debug", False))
    configure_logging(debug)
    bind_address = explicit.pop("bind_address", "127.0.0.1")
    stop = threading.Event()
    try:
        options, registry = resolve_options(explicit)
        if options.debug and not debug:
            debug = True
            configure_logging(True)
        install_stop_handler(stop)
        return run_training(options, registry, bind_address, stop)
    except _error_types() as error:
        if debug:
            logger.exception("agents-learn failed")
        message = " ".join(str(error).split()) or type(error).__name__
        print(f"agents-learn: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("agents-learn: aborted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
