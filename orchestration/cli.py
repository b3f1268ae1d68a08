"""``agents-learn``: the mlagents-learn command line (REFERENCE 1.3).

    agents-learn config/ppo/3DBall.yaml --run-id=ball                 # built-in 3DBall
    agents-learn config/ppo/3DBall.yaml --env=Builds/3DBall.x86_64 --num-envs=4
    agents-learn config/ppo/3DBall.yaml                               # (with env_path unset) the Editor
    agents-learn config.yaml --env=python:my_package.envs:make_env      # a Python BaseEnv factory
    agents-learn config.yaml --env=external:9900                      # simulators call in (envs.external)
    agents-learn config.yaml --check                                  # validate, print, write nothing

A value typed on the command line overrides the YAML, which overrides the defaults; flags not
typed leave the YAML alone. Every error agents-learn raises on purpose is printed as one line
on stderr with a non-zero exit (``--debug`` adds the traceback).
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

from trainers.exceptions import AgentsLearnError

logger = logging.getLogger("agents_learn")

EXIT_ERROR = 1
EXIT_INTERRUPTED = 130
SERVER_TOKEN_ENV_VAR = "AGENTS_LEARN_SERVER_TOKEN"


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
        help="Unity build to train in, builtin:<Name>, python:module:function (a BaseEnv "
        "factory), gymnasium:<id> (a Gymnasium environment; gymnasium:<module>:<id> imports the module "
        "first), external-unity (builds you start), or external:PORT (a policy server that simulators "
        "call with envs.external.PolicyClient); none: connect to the Editor on port 5004",
    )
    p.add_argument("--resume", action="store_true", help="continue the run --run-id from its checkpoints")
    p.add_argument("--load", dest="load_model", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--deterministic", action="store_true", help="act with the mean/most likely action")
    p.add_argument("--force", action="store_true", help="overwrite the results of an existing --run-id")
    p.add_argument("--run-id", metavar="RUN_ID", help="results sub-folder (default: ppo)")
    p.add_argument("--initialize-from", metavar="RUN_ID", help="start from the weights of another run")
    p.add_argument("--seed", type=int, help="random seed; -1 (default) draws one in 0-9999")
    p.add_argument("--train", dest="train_model", action="store_true", help=argparse.SUPPRESS)
    p.add_argument(
        "--inference",
        action="store_true",
        help="act with the run's saved policy, without training or saving, until Ctrl-C",
    )
    p.add_argument("--base-port", type=int, help="worker i listens on base-port + i (default 5005)")
    p.add_argument("--num-envs", type=int, help="environments stepped in parallel, one process each (default 1)")
    p.add_argument(
        "--ray-address",
        metavar="ADDRESS",
        help="run the --num-envs workers as Ray env runners across a cluster: local (start one "
        "here), auto (join the running one) or its address; needs the [ray] extra",
    )
    p.add_argument("--num-areas", type=int, help="training areas inside each environment (default 1)")
    p.add_argument(
        "--envs-per-worker",
        type=int,
        help="copies of a gymnasium: environment each worker steps as one behavior (default 8)",
    )
    p.add_argument(
        "--debug",
        action="store_true",
        help="debug logging, tracebacks with errors, and each step recorded before its actions are sent",
    )
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
    p.add_argument(
        "--server-token",
        metavar="TOKEN",
        help=f"with --env external:PORT, the secret every policy client must send (default: ${SERVER_TOKEN_ENV_VAR}; "
        "none: no token asked)",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="dry run: validate the configuration and flags (every key, capability, demo file, plugin, "
        "the environment path and the results folder), print the resolved configuration and exit 0 or 1; "
        "writes nothing and starts no environment",
    )
    p.add_argument(
        "--record-demo",
        metavar="DIR",
        help="record every behavior's experience (training or --inference) as Unity demonstration "
        "files DIR/<Behavior>.demo, complete when the run ends",
    )
    p.add_argument("--env-args", nargs=argparse.REMAINDER, help="arguments passed to the build (must come last)")
    return p


def configure_logging(debug: bool, stream: TextIO | None = None) -> None:
    """Log lines to ``stream`` (stdout, as mlagents-learn; --check keeps stdout for the YAML)."""
    from envs.workers.log_lines import LogFormat, log_to

    log_to(stream if stream is not None else sys.stdout, LogFormat.for_debug(debug))
    for noisy in ("matplotlib", "PIL", "urllib3", "grpc", "h5py"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def resolve_options(explicit: dict[str, Any]) -> Any:
    """RunOptions from the config file (if any) with the typed flags over it."""
    from trainers.loop.registry import TrainerRegistry
    from trainers.settings import apply_cli_overrides, load_run_options

    for removed in ("torch", "tensorflow"):
        if explicit.pop(removed, False):
            logger.warning("--%s has no effect: agents-learn always trains with PyTorch.", removed)
    config_path = explicit.pop("trainer_config_path", None)
    registry = TrainerRegistry.with_plugins()
    options = load_run_options(config_path, hyperparameter_types=registry.hyperparameter_types)
    return apply_cli_overrides(options, explicit), registry


def run_training(
    options: Any,
    registry: Any,
    bind_address: str,
    stop: threading.Event,
    record_demo: str | None = None,
    server_token: str | None = None,
) -> int:
    """Everything after the configuration: the checks, the run's wiring
    (:func:`orchestration.run.build_run`) and the loop. A finished run given --resume is a clean
    exit with a message."""
    from orchestration.checks import check_run

    # before torch loads: bad input is refused at once, and the environments start while it loads
    check_run(options, registry=registry, record_demo=record_demo)
    from orchestration.run import RunAlreadyFinished, build_run

    try:
        run = build_run(
            options,
            checked=True,
            registry=registry,
            stop=stop,
            bind_address=bind_address,
            record_demo=record_demo,
            server_token=server_token,
        )
    except RunAlreadyFinished as finished:
        logger.info("%s; nothing to train.", finished)
        print(f"agents-learn: {finished}.", file=sys.stderr)
        return 0
    # What set-up made (modules, torch's registries) lives as long as the run: out of the
    # collector's sight, every full collection is cheaper and the exit skips ~0.4 s of teardown.
    gc.freeze()
    run.run()
    return 0  # a stop request is a clean end, as in mlagents-learn: everything is saved


def check_only(options: Any, registry: Any, record_demo: str | None = None) -> int:
    """``--check``: every check a run makes before its first write, then the resolved
    configuration on stdout; nothing is written and no environment starts."""
    from orchestration.checks import check_run, pick_device
    from stats import check_stats_writer_plugins
    from trainers.settings import dump_run_options

    check_run(options, registry=registry, record_demo=record_demo)
    device = pick_device(options.torch_settings.device)
    plugins = check_stats_writer_plugins()
    sys.stdout.write(dump_run_options(options))
    sys.stdout.flush()
    env_path = options.env_settings.env_path or "the Unity Editor"
    extra = f"; {len(plugins)} stats writer plugin(s) loaded" if plugins else ""
    print(
        f"agents-learn: configuration OK: {', '.join(options.behaviors) or 'default_settings only'} "
        f"in {env_path} on {device}{extra}; nothing was written",
        file=sys.stderr,
    )
    return 0


def install_stop_handler(stop: threading.Event, *, inference: bool = False) -> None:
    """First Ctrl-C (or SIGTERM) asks the run to stop and save (``--inference``: to stop and say
    its mean return; it saves nothing); a second one aborts at once."""
    doing = "saying the mean return" if inference else "saving checkpoints and models"

    def handler(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        logger.info("Stopping (%s): %s; press Ctrl-C again to abort.", signal.Signals(signum).name, doing)

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _error_types() -> tuple[type[BaseException], ...]:
    from mlagents_envs.exception import UnityException

    from envs.builtin import UnknownBuiltinEnvError
    from envs.workers import EnvFactoryError
    from stats import StatsError

    return (AgentsLearnError, UnityException, UnknownBuiltinEnvError, EnvFactoryError, StatsError)


def one_line(error: BaseException) -> str:
    """An error as one line: a list of problems (one per line after a heading) joined by "; "."""
    lines = [" ".join(line.split()) for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    head, *rest = lines
    return " ".join([head, "; ".join(rest)]) if rest else head


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``agents-learn``; returns the exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    explicit = vars(build_parser().parse_args(args))
    debug = bool(explicit.get("debug", False))
    check = bool(explicit.pop("check", False))
    log_stream = sys.stderr if check else sys.stdout
    configure_logging(debug, log_stream)
    bind_address = explicit.pop("bind_address", "127.0.0.1")
    # Where to record demonstrations is no configuration value (ML-Agents has no such key):
    # it goes to the run like --bind-address, and stays out of configuration.yaml.
    record_demo = explicit.pop("record_demo", None)
    server_token = explicit.pop("server_token", None) or os.environ.get(SERVER_TOKEN_ENV_VAR) or None
    stop = threading.Event()
    try:
        options, registry = resolve_options(explicit)
        if options.debug and not debug:
            debug = True
            configure_logging(True, log_stream)
        if check:
            return check_only(options, registry, record_demo)
        install_stop_handler(stop, inference=options.checkpoint_settings.inference)
        return run_training(options, registry, bind_address, stop, record_demo, server_token)
    except _error_types() as error:
        if debug:
            logger.exception("agents-learn failed")
        print(f"agents-learn: error: {one_line(error)}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("agents-learn: aborted", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
