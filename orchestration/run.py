"""One wiring for every run: ``RunOptions`` -> environments, processors, trainers, stats,
controller. The CLI, the tests and the benchmarks all call it, and so can users who train
their own ``mlagents_envs`` BaseEnv from Python::

    from orchestration import train
    from trainers.settings import load_run_options

    def make_env(worker_id: int, seed: int) -> BaseEnv: ...   # module level: one per worker

    train(load_run_options("config.yaml"), env_factory=make_env)

Everything that can be refused is refused in :func:`build_run` before the results folder is
touched or an environment starts; an earlier run's folder (``--resume``) is not written to
until the first trainer has loaded its checkpoint, and its builds' logs join it when the run
ends (:meth:`Run.place_staged_logs`).
"""

from __future__ import annotations

import logging
import os
import random
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig

from envs.parameters import ParameterValue
from envs.unity import api_version as unity_api_version
from envs.workers import (
    DEFAULT_GYMNASIUM_COPIES,
    EDITOR,
    EXTERNAL_BUILDS,
    LOOPBACK,
    POLICY_SERVER,
    EnvFactory,
    EnvLaunch,
    EnvWorkerPool,
    InProcessPool,
    RestartBudget,
    SubprocessPool,
    launch_source,
    worker_port,
)
from orchestration.checks import check_run, check_run_dir, pick_device
from orchestration.curriculum import Curriculum
from stats import (
    PerfStats,
    StatsHub,
    StatsWriter,
    Timers,
    default_writers,
    load_stats_writer_plugins,
    write_timers_json,
)
from stats.timer_names import TRAINER_THREAD_PATH
from trainers.exceptions import AgentsLearnError
from trainers.files.status import TrainingStatus
from trainers.loop.registry import TrainerRegistry
from trainers.settings import RunOptions, write_configuration

if TYPE_CHECKING:  # the trainers' side loads torch: imported once the environments are starting
    from orchestration.controller import RunOutcome, TrainerController
    from orchestration.env_manager import StepSource
    from orchestration.external import OnnxModels

logger = logging.getLogger(__name__)


@attrs.define
class Run:
    """A run ready to start: :meth:`run` trains until done or stopped and saves everything."""

    options: RunOptions
    run_dir: Path
    controller: TrainerController
    env_manager: StepSource
    hub: StatsHub
    timers: Timers
    staged_logs: Path | None = None  # where the builds of a --resume or --inference log until the run ends

    def run(self) -> RunOutcome:
        cp = self.options.checkpoint_settings
        try:
            outcome = self.controller.run(self.env_manager)
        finally:
            try:
                if self.controller.started and not self.options.checkpoint_settings.inference:
                    self.write_run_files()
            finally:
                self.hub.close()
                self.place_staged_logs()
        logger.info("Results in %s; see them with: tensorboard --logdir %s", self.run_dir, cp.results_dir)
        return outcome

    def place_staged_logs(self) -> None:
        """Once the environments are closed: the builds' logs into ``run_logs/`` (replacing the
        earlier run's) if the run started (a behavior loaded its checkpoint), else left where
        they are, said in a warning, and the earlier run's logs kept as they were."""
        staged = self.staged_logs
        if staged is None:
            return
        logs = sorted(staged.iterdir())
        if logs and not self.controller.started:
            logger.warning("The earlier run's files are unchanged; the Unity logs of this attempt are in %s", staged)
            return
        for log in logs:
            shutil.move(log, self.run_dir / "run_logs" / log.name)
        staged.rmdir()

    def write_run_files(self) -> None:
        """configuration.yaml and run_logs/timers.json of this run (not of --inference, which
        leaves the files of the run it acts from alone)."""
        write_configuration(self.options, self.run_dir / "configuration.yaml")
        write_timers_json(self.run_dir / "run_logs" / "timers.json", self.timers)


class RunAlreadyFinished(AgentsLearnError):
    """``--resume`` of a run whose every behavior reached max_steps: nothing to do."""


def train(options: RunOptions, **kwargs: Any) -> RunOutcome:
    """Build the run (:func:`build_run`, same keyword arguments) and train it."""
    return build_run(options, **kwargs).run()


def build_run(
    options: RunOptions,
    *,
    env_factory: EnvFactory | None = None,
    registry: TrainerRegistry | None = None,
    writers: Sequence[StatsWriter] = (),
    console: bool = True,
    stop: threading.Event | None = None,
    bind_address: str = LOOPBACK,
    record_demo: str | os.PathLike[str] | None = None,
    server_token: str | None = None,
    checked: bool = False,
) -> Run:
    """Check everything, lay out the results folder, start the environments, and wire the run
    while they start (a Unity build boots while torch and the trainers load).

    env_factory: a function ``(worker_id, seed[, env_parameters]) -> BaseEnv`` to train a
    Python environment (instead of ``env_settings.env_path``); with ``num_envs > 1`` it must
    be a module-level function (it is sent to worker processes). writers: stats writers added
    to the default ones (TensorBoard, console unless ``console=False``, JSON lines) and the
    plugins. stop: set it to end the run cleanly (the CLI's Ctrl-C). bind_address: where the
    Unity connection listens. record_demo (``--record-demo``): a folder to record every
    behavior's experience in, as ``<Behavior>.demo`` (complete when the run ends, however it
    ends). server_token (``--server-token``): the secret policy clients of ``external:PORT``
    must send. checked: the caller ran :func:`orchestration.checks.check_run` on these options
    already (the CLI does, before torch loads).
    """
    registry = registry if registry is not None else TrainerRegistry.with_plugins()
    if not checked:
        check_run(options, registry=registry, env_factory=env_factory, record_demo=record_demo)
    laid_out = lay_out(options, env_factory, bind_address, server_token)
    pool = started_early(laid_out.options, laid_out.launch)
    try:
        return wire(laid_out, registry, pool, writers=writers, console=console, stop=stop, record_demo=record_demo)
    except BaseException:
        if pool is not None:
            pool.close()
        raise


# ---------------------------------------------------------------- the steps of build_run


@attrs.frozen
class LaidOut:
    """A run before its trainers: seeded options, its folder and status, the curriculum, where
    the builds' logs go until it starts (``staged_logs``) and how its environments open."""

    options: RunOptions
    run_dir: Path
    status: TrainingStatus
    curriculum: Curriculum
    staged_logs: Path | None
    launch: EnvLaunch


def lay_out(
    options: RunOptions, env_factory: EnvFactory | None, bind_address: str, server_token: str | None
) -> LaidOut:
    """Everything of a run that needs no torch: the seed, the results folder, the status of a
    run it continues, the curriculum's lessons and the environments' launch."""
    options = with_run_seed(options)
    run_dir = prepare_run_dir(options)
    status = run_status(options, run_dir)
    resuming = options.checkpoint_settings.resume or options.checkpoint_settings.inference
    curriculum = Curriculum(
        options.environment_parameters, run_seed=options.env_settings.seed, status=status, resume=resuming
    )
    staged_logs = staging_folder(options)
    log_folder = staged_logs or run_dir / "run_logs"
    launch = environment_launch(options, log_folder, env_factory, bind_address, curriculum.values(), server_token)
    announce_connections(launch, options.env_settings.num_envs, bind_address)
    return LaidOut(options, run_dir, status, curriculum, staged_logs, launch)


def wire(
    laid_out: LaidOut,
    registry: TrainerRegistry,
    pool: EnvWorkerPool | None,
    *,
    writers: Sequence[StatsWriter],
    console: bool,
    stop: threading.Event | None,
    record_demo: str | os.PathLike[str] | None,
) -> Run:
    """The trainers' side (torch loads here): stats, the controller and what steps the
    environments (``pool``: the one :func:`started_early` started)."""
    import torch

    from orchestration.controller import TrainerController

    options, run_dir = laid_out.options, laid_out.run_dir
    # Small networks: one thread is many times faster than torch's default for batches of a
    # few dozen rows, and leaves the other cores to environment processes.
    torch.set_num_threads(1)
    timers = Timers(thread_parent=TRAINER_THREAD_PATH)
    timers.add_metadata("communication_protocol_version", unity_api_version())  # as mlagents-learn does
    perf = PerfStats()
    hub = stats_hub(options, run_dir, writers, console=console, timers=timers, perf=perf)
    controller = TrainerController(
        options=options,
        run_dir=run_dir,
        hub=hub,
        registry=registry,
        status=laid_out.status,
        seed=options.env_settings.seed,
        device=pick_device(options.torch_settings.device),
        perf=perf,
        timers=timers,
        stop=stop,
        on_started=when_started(options, run_dir),
        curriculum=laid_out.curriculum,
    )
    manager = env_manager(
        options, laid_out.launch, controller, perf=perf, timers=timers, record_demo=record_demo, started=pool
    )
    return Run(options, run_dir, controller, manager, hub, timers, laid_out.staged_logs)


def with_run_seed(options: RunOptions) -> RunOptions:
    """``options`` with seed -1 replaced by a drawn seed, logged so the run can be repeated."""
    env = options.env_settings
    if env.seed != -1:
        return options
    seed = random.SystemRandom().randint(0, 9999)
    logger.info("Seed: %d (drawn; pass --seed %d to repeat)", seed, seed)
    return attrs.evolve(options, env_settings=attrs.evolve(env, seed=seed))


def run_status(options: RunOptions, run_dir: Path) -> TrainingStatus:
    """The earlier run's training status for --resume/--inference (refused when finished), else a new one."""
    cp = options.checkpoint_settings
    status_path = run_dir / "run_logs" / "training_status.json"
    if not (cp.resume or cp.inference):
        return TrainingStatus(status_path)
    status = TrainingStatus.load(status_path)
    done = None if cp.inference else finished_behaviors(options, status)
    if done is not None:
        listing = ", ".join(f"{n}: {s} of {m} steps" for n, (s, m) in done.items())
        raise RunAlreadyFinished(
            f"run {cp.run_id!r} has already finished ({listing}); raise max_steps in "
            "the configuration to train it further"
        )
    return status


def stats_hub(
    options: RunOptions,
    run_dir: Path,
    writers: Sequence[StatsWriter],
    *,
    console: bool,
    timers: Timers,
    perf: PerfStats,
) -> StatsHub:
    """Every writer the run's numbers go to: the default ones, the plugins' and the caller's."""
    cp = options.checkpoint_settings
    defaults = default_writers(
        run_dir, resume=cp.resume or cp.inference, timers=timers, console=console, env_steps=perf.env_steps_total
    )
    return StatsHub([*defaults, *load_stats_writer_plugins(options), *writers])


def staging_folder(options: RunOptions) -> Path | None:
    """A folder for --resume's/--inference's build logs, so the earlier run's stay intact until it starts."""
    cp = options.checkpoint_settings
    if not (cp.resume or cp.inference):
        return None
    return Path(tempfile.mkdtemp(prefix=f"agents-learn-{cp.run_id}-logs-"))


def announce_connections(launch: EnvLaunch, num_envs: int, bind_address: str) -> None:
    """Tell the user what to start when the environments are theirs to start (the Editor, builds)."""
    source = launch_source(launch)
    if source is EDITOR:
        logger.info("Listening on port 5004. Start training by pressing the Play button in the Unity Editor.")
    if source is EXTERNAL_BUILDS:
        last = worker_port(launch, num_envs - 1)
        logger.info(
            "Waiting %d s for %d Unity build(s) or Editor(s) you start to connect on %s port(s) %d%s "
            "(in a build: --mlagents-port; in the Editor: press Play)",
            launch.timeout_wait,
            num_envs,
            bind_address,
            launch.base_port,
            f"-{last}" if last != launch.base_port else "",
        )


def when_started(options: RunOptions, run_dir: Path) -> Callable[[], None]:
    """The controller's on_started: the run's folder is written once a behavior has loaded, never by --inference."""
    cp = options.checkpoint_settings

    def on_started() -> None:
        if cp.inference:
            logger.info("--inference: acting without training or saving until stopped (Ctrl-C)")
            return
        from trainers.files.checkpoints import remove_partial_writes

        removed = remove_partial_writes(run_dir)
        if removed:
            logger.warning(
                "Removed %d file(s) an interrupted checkpoint write left behind: %s",
                len(removed),
                ", ".join(str(p) for p in removed),
            )
        write_configuration(options, run_dir / "configuration.yaml")
        logger.info("Writing results to %s; watch training with: tensorboard --logdir %s", run_dir, cp.results_dir)

    return on_started


def started_early(options: RunOptions, launch: EnvLaunch) -> EnvWorkerPool | None:
    """The pool of environments that simulate in processes of their own (Unity builds, the
    Editor, builds the user starts), started now: they boot while torch and the trainers load,
    their first observations come from the pool's poll. None for the others (opened when the run
    starts), for Ray (its runners open their own) and for the policy server (clients call in)."""
    source = launch_source(launch)
    if not source.supports.simulates_elsewhere or options.env_settings.ray_address is not None:
        return None
    pool = worker_pool(options, launch, None)
    pool.start()
    return pool


def env_manager(
    options: RunOptions,
    launch: EnvLaunch,
    controller: TrainerController,
    *,
    perf: PerfStats,
    timers: Timers,
    record_demo: str | os.PathLike[str] | None,
    started: EnvWorkerPool | None = None,
) -> StepSource:
    """What steps the environments: Ray env runners with --ray-address, else a pool of workers
    here (``started``: the one :func:`started_early` started)."""
    env = options.env_settings
    restarts = RestartBudget(
        env.max_lifetime_restarts, env.restarts_rate_limit_n, float(env.restarts_rate_limit_period_s)
    )
    if env.ray_address is not None:
        from orchestration.ray_env_manager import RayEnvManager

        return RayEnvManager(
            launch,
            env.num_envs,
            controller.create_runtime,
            address=env.ray_address,
            policy_seed=env.seed + 1,
            restarts=restarts,
            perf=perf,
            timers=timers,
        )
    from orchestration.demo_recorder import DemoRecorder
    from orchestration.env_manager import EnvManager
    from orchestration.external import OnnxModels

    models = OnnxModels() if launch_source(launch) is POLICY_SERVER else None
    manager = EnvManager(
        started if started is not None else worker_pool(options, launch, models),
        controller.create_runtime,
        restarts=restarts,
        perf=perf,
        timers=timers,
        recorder=DemoRecorder(record_demo) if record_demo is not None else None,
        serial=options.debug,
        started=started is not None,
    )
    if models is not None:
        models.attach(manager.runtimes)
    return manager


def worker_pool(options: RunOptions, launch: EnvLaunch, models: OnnxModels | None) -> EnvWorkerPool:
    """The policy server's clients (served ``models``), a subprocess each for --num-envs > 1, or one in-process."""
    if models is not None:
        from orchestration.external import behavior_check, external_pool

        return external_pool(launch, models, behavior_check(options))
    env = options.env_settings
    if env.num_envs > 1:
        return SubprocessPool(launch, env.num_envs)
    background = launch_source(launch).supports.simulates_elsewhere and not options.debug
    return InProcessPool(launch, background=background)


# ---------------------------------------------------------------- checks before any work


def prepare_run_dir(options: RunOptions) -> Path:
    """The run's folder, checked (:func:`check_run_dir`), emptied for --force, with run_logs/."""
    cp = options.checkpoint_settings
    run_dir = Path(cp.write_path)
    if check_run_dir(options) and not (cp.resume or cp.inference):
        logger.warning("--force: deleting the previous results in %s", run_dir)
        shutil.rmtree(run_dir)
    (run_dir / "run_logs").mkdir(parents=True, exist_ok=True)
    return run_dir


def finished_behaviors(options: RunOptions, status: TrainingStatus) -> dict[str, tuple[int, int]] | None:
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


def environment_launch(
    options: RunOptions,
    log_folder: Path,
    env_factory: EnvFactory | None,
    bind_address: str,
    parameters: Mapping[str, ParameterValue],
    server_token: str | None = None,
) -> EnvLaunch:
    """How each worker opens its environment, with the environment parameters' current values;
    builds write their ``Player-<worker>.log`` into ``log_folder``; ``server_token``: the secret
    policy clients of ``external:PORT`` must send."""
    env, engine = options.env_settings, options.engine_settings
    return EnvLaunch(
        env_path=env.env_path,
        env_factory=env_factory,
        seed=env.seed,
        base_port=env.base_port,
        num_areas=env.num_areas,
        timeout_wait=float(env.timeout_wait),
        env_args=tuple(env.env_args or ()),
        no_graphics=engine.no_graphics,
        no_graphics_monitor=engine.no_graphics_monitor,
        engine=EngineConfig(
            width=engine.width,
            height=engine.height,
            quality_level=engine.quality_level,
            time_scale=engine.time_scale,
            target_frame_rate=engine.target_frame_rate,
            capture_frame_rate=engine.capture_frame_rate,
        ),
        env_parameters=tuple(parameters.items()),
        log_folder=str(log_folder.resolve()),
        bind_address=bind_address,
        env_kwargs=tuple(env.env_kwargs.items()),
        envs_per_worker=env.envs_per_worker or DEFAULT_GYMNASIUM_COPIES,
        group_agents=trains_groups(options),
        server_token=server_token,
    )


def trains_groups(options: RunOptions) -> bool:
    """Whether every behavior is configured for POCA, which trains multi-agent groups: a
    PettingZoo environment's agents then form one group (envs.pettingzoo's ``groups``)."""
    settings = [*options.behaviors.values(), *([options.default_settings] if options.default_settings else [])]
    return bool(settings) and all(s.trainer_type == "poca" for s in settings)
