"""``agents-learn``: the mlagents-learn command line (REFERENCE 1.3).

    agents-learn config/ppo/3DBall.yaml --run-id=ball                 # built-in 3DBall
    agents-learn config/ppo/3DBall.yaml --env=Builds/3DBall.x86_64 --num-envs=4
    agents-learn config/ppo/3DBall.yaml                               # (with env_path unset) the Editor
    agents-learn config.yaml --env=python:my_package.envs:make_env      # a Python BaseEnv factory

A value typed on the command line overrides the YAML, which overrides the defaults; flags not
typed leave the YAML alone. Every error agents-learn raises on purpose is printed as one line
on stderr with a non-zero exit (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from trainers.exceptions import AgentsLearnError

logger = logging.getLogger("agents_learn")

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The parser; every default is SUPPRESS, so the namespace holds exactly the typed flags."""
    p = argparse.ArgumentParser(
        prog="agents-learn",
        argument_default=argparse.SUPPRESS,
        allow_abbrev=False,
        description="Train agents of Unity ML-Agents environments (mlagents-learn compatible). "
        "Values typed here override the YAML configuration.",
    )
    p.add_argument("trainer_config_path", nargs="?", help="run configuration YAML (mlagents-learn format)")
    p.add_argument(
        "--env",
        dest="env",
        metavar="ENV_PATH",
        help="Unity build to train in, builtin:<Name>, or python:module:function (a BaseEnv "
        "factory); none: connect to the Editor on port 5004",
    )
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
    p.add_argument(
        "--no-graphics-monitor", action="store_true", help="worker 0 renders, the others run without graphics"
    )
    p.add_argument("--torch-device", help="cpu, cuda, cuda:N, mps (default: cuda when available)")
    p.add_argument(
        "--bind-address",
        metavar="ADDRESS",
        help="interface Unity connects to (default 127.0.0.1; 0.0.0.0 for builds in other "
        "Docker containers or machines)",
    )
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


def run_training(options: Any, registry: Any, bind_address: str, stop: threading.Event) -> int:
    """Everything after the configuration: the run's wiring (:func:`orchestration.run.build_run`)
    and the loop. A finished run given --resume is a clean exit with a message."""
    from orchestration.run import RunAlreadyFinished, build_run

    try:
        run = build_run(options, registry=registry, stop=stop, bind_address=bind_address)
    except RunAlreadyFinished as finished:
        logger.info("%s; nothing to train.", finished)
        print(f"agents-learn: {finished}.", file=sys.stderr)
        return 0
    run.run()
    return 0  # a stop request is a clean end, as in mlagents-learn: everything is saved


def install_stop_handler(stop: threading.Event) -> None:
    """First Ctrl-C (or SIGTERM) asks the run to stop and save; a second one aborts at once."""

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        logger.info(
            "Stopping (%s): saving checkpoints and models; press Ctrl-C again to abort.", signal.Signals(signum).name
        )

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _error_types() -> tuple[type[BaseException], ...]:
    from mlagents_envs.exception import UnityException

    from envs.builtin import UnknownBuiltinEnvError
    from envs.workers import EnvFactoryError
    from stats import StatsError

    return (AgentsLearnError, UnityException, UnknownBuiltinEnvError, EnvFactoryError, StatsError)


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
