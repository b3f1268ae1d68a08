"""The trainer controller: one trainer per behavior, created as behaviors appear, fed by the
env manager until every trainer reaches ``max_steps``; on a stop request (Ctrl-C), a trainer
failure or an environment past its restart budget it saves checkpoints and ONNX models of
every behavior before the run ends.

Per behavior id (``Name?team=N``) there is an AgentManager and an inference copy of the
policy (on the CPU, updated from the trainer's policy queue); per behavior name (``Name``,
the config key) one trainer, which every team's AgentManager feeds. A behavior with a
``self_play`` section gets a :class:`trainers.loop.ghost.GhostTrainer` around its trainer instead:
each team's AgentManager feeds the ghost, which passes only the learning team's trajectories
on and gives each team's inference policy the learning policy or a snapshot; one
:class:`trainers.loop.ghost.GhostController` per run decides which team learns.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

import attrs
from mlagents_envs.base_env import BehaviorSpec

from orchestration.curriculum import Curriculum
from orchestration.env_manager import BehaviorRuntime, StepSource
from processors import AgentManager, AgentManagerQueue, BehaviorIdentifiers
from stats import PerfMark, PerfStats, StatsHub, StatsProperty, StatsReporter, Timers, timed_method
from stats.tags import lesson_number
from stats.timer_names import ADVANCE, RESET_ENV, SAVE_MODELS, START_LEARNING
from trainers.files.checkpoints import BehaviorCheckpoints
from trainers.files.status import TrainingStatus
from trainers.loop.device_choice import DEVICE_KEY, Timing, candidate_devices, choose_device, training_timing
from trainers.loop.ghost import GhostController, GhostTrainer
from trainers.loop.inference import InferenceTrainer
from trainers.loop.registry import TrainerRegistry
from trainers.loop.trainer import Trainer, TrainerThread
from trainers.seeding import team_seed
from trainers.settings import AUTO_DEVICE, RunOptions, TrainerSettings, uniform_warmup_steps

logger = logging.getLogger(__name__)

PERF_AGENT_STEPS_PER_SECOND = "Perf/agent_steps_per_s"
PERF_QUEUE_FILL = "Perf/trajectory_queue_fill"
PERF_QUEUE_BLOCKED_S = "Perf/trajectory_queue_blocked_s"
# Seconds to wait for a trainer thread to finish its current update at shutdown.
TRAINER_JOIN_TIMEOUT_S = 60.0


@attrs.frozen
class _PerfWindow:
    """Where a behavior's current stats window began: perf totals and its agent steps then."""

    start: PerfMark
    agent_steps: int


@attrs.frozen
class RunOutcome:
    """How a run ended: ``interrupted`` by a stop request; ``steps`` per behavior name."""

    interrupted: bool
    steps: dict[str, int]
    saved: tuple[str, ...]


class TrainerController:
    """Creates trainers as behaviors appear and runs the training loop.

    ``run_dir``: ``results/<run-id>``. ``resume``: each trainer continues from its
    ``checkpoint.pt`` (a behavior without one starts fresh, with a warning). ``inference``:
    no trainer is advanced and nothing is saved; each behavior acts with its checkpoint's
    policy, counting steps on from the checkpoint's (without one, with ``--initialize-from``'s
    weights, else untrained, with a warning), until ``stop`` is set (as mlagents-learn:
    ``max_steps`` does not end it).
    ``stop``: set it (Ctrl-C handler) to end the run cleanly. ``on_started`` is called once,
    when the first trainer exists (its checkpoint, if resumed, loaded): from then on the run
    may write into an earlier run's folder. ``timers``: the run's, timed under ML-Agents' names
    (``stats.timer_names``) and handed to every trainer. ``curriculum``: the run's environment
    parameters; their lesson numbers are reported to every behavior, and a lesson completed
    (checked every round while training) sends its parameter's next value to the environments
    (resetting them when the lesson asks to).
    """

    def __init__(
        self,
        *,
        options: RunOptions,
        run_dir: Path,
        hub: StatsHub,
        registry: TrainerRegistry,
        status: TrainingStatus,
        seed: int,
        device: str,
        perf: PerfStats | None = None,
        timers: Timers | None = None,
        stop: threading.Event | None = None,
        on_started: Callable[[], None] | None = None,
        curriculum: Curriculum | None = None,
    ):
        cp = options.checkpoint_settings
        self.options = options
        self.run_dir = Path(run_dir)
        self.hub = hub
        self.registry = registry
        self.status = status
        self.seed = seed
        self.device = device  # a torch device, or "auto": each behavior's own (see _device_for)
        # Under "auto": (behavior, spec, settings) -> the behavior's seconds per sample on a
        # device; None measures its training (trainers.loop.device_choice.training_timing).
        self.device_timing: Callable[[str, BehaviorSpec, TrainerSettings], Timing] | None = None
        self.resume = cp.resume
        self.inference = cp.inference  # acting only: no updates, ghosts, trainer threads or lessons
        self.continues = cp.resume or cp.inference  # reads the run folder's checkpoints and device choices
        self.perf = perf if perf is not None else PerfStats()
        self.timers = timers if timers is not None else Timers()
        self.stop = stop if stop is not None else threading.Event()
        self._on_started = on_started
        self.curriculum = curriculum
        self.started = False
        self._trainer_stop = threading.Event()
        self.trainers: dict[str, Trainer | GhostTrainer | InferenceTrainer] = {}
        self.ghost_controller = GhostController()
        self.threads: dict[str, TrainerThread] = {}
        self.reporters: dict[str, StatsReporter] = {}
        self.managers: dict[str, list[AgentManager]] = {}
        self._env_manager: StepSource | None = None
        self._perf_windows: dict[str, _PerfWindow] = {}

    # ------------------------------------------------------------------ behaviors

    def settings_for(self, name: str) -> TrainerSettings:
        return self.options.behavior_settings(name)

    def create_runtime(self, behavior_id: str, spec: BehaviorSpec) -> BehaviorRuntime:
        """Called by the env manager when ``behavior_id`` first appears."""
        identifiers = BehaviorIdentifiers.from_name_behavior_id(behavior_id)
        name = identifiers.brain_name
        settings = self.settings_for(name)
        trainer = self.trainers.get(name)
        if trainer is None:
            trainer = self._create_trainer(name, spec, settings)
        policy = trainer.policy.inference_copy(seed=team_seed(self.seed + 1, identifiers.team_id), device="cpu")
        if not isinstance(trainer, InferenceTrainer):  # a resumed run warms up only what is left
            policy.uniform_decisions = max(0, uniform_warmup_steps(settings.hyperparameters) - trainer.step)
        threaded = name in self.threads  # its trainer runs in a thread of its own
        manager = AgentManager(policy, behavior_id, self.reporters[name], settings.time_horizon, threaded=threaded)
        curriculum = self.curriculum
        if curriculum is not None and curriculum.watches(name):
            manager.episode_reward_listeners.append(lambda rewards: curriculum.add_episode_rewards(name, rewards))
        if isinstance(trainer, InferenceTrainer):
            manager.episode_reward_listeners.append(trainer.add_episode_returns)
        if isinstance(trainer, GhostTrainer):
            trainer.add_team(behavior_id, manager)
        else:
            trainer.subscribe_trajectory_queue(manager.trajectory_queue)
            trainer.publish_policy_queue(manager.policy_queue)
        self.managers.setdefault(name, []).append(manager)
        logger.info("Connected new behavior %s", behavior_id)
        return BehaviorRuntime(manager, policy)

    def _device_for(self, name: str, spec: BehaviorSpec, settings: TrainerSettings) -> str:
        """The run's device, or under ``auto`` the behavior's: the one its earlier run chose
        (``--resume``, ``--inference``), else the faster one measured now, recorded in
        ``training_status.json`` for a later ``--resume``. Logged once per behavior, with why."""
        if self.device != AUTO_DEVICE:
            if self.options.torch_settings.device in (None, AUTO_DEVICE):
                logger.info("%s trains on %s: no CUDA device", name, self.device)
            else:
                logger.info("%s trains on %s, as --torch-device (torch_settings.device) says", name, self.device)
            return self.device
        candidates = candidate_devices()
        recorded = self.status.parameter(name, DEVICE_KEY) if self.continues else None
        if recorded is not None:
            if recorded in candidates:
                logger.info("%s trains on %s, as the run it continues chose", name, recorded)
                return str(recorded)
            logger.warning("%s trained on %s, which is not here now; it trains on the CPU", name, recorded)
            return "cpu"
        record = self.registry.records.get(settings.trainer_type)
        if record is None:  # the registry's error names the trainer type
            return "cpu"
        timing = (
            self.device_timing(name, spec, settings)
            if self.device_timing
            else training_timing(record.factory, behavior_name=name, spec=spec, settings=settings, seed=self.seed)
        )
        choice = choose_device(timing, candidates)
        logger.info("%s trains %s", name, choice.describe())
        if not self.inference:
            self.status.set_parameter(name, DEVICE_KEY, choice.device)
        return choice.device

    def _create_trainer(
        self, name: str, spec: BehaviorSpec, settings: TrainerSettings
    ) -> Trainer | GhostTrainer | InferenceTrainer:
        reporter = self.hub.reporter(name)
        self.reporters[name] = reporter
        self._perf_windows[name] = _PerfWindow(self.perf.mark(), 0)
        self.hub.add_before_write(name, lambda: self._report_perf(name))
        checkpoints = BehaviorCheckpoints(self.run_dir, name, settings.keep_checkpoints, self.status)
        wrapped = self.registry.create(
            behavior_name=name,
            behavior_spec=spec,
            settings=settings,
            stats_reporter=reporter,
            checkpoints=checkpoints,
            seed=self.seed,
            device=self._device_for(name, spec, settings),
            perf=self.perf,
            timers=self.timers,
        )
        # --inference acts with the learning policy on every team: no ghost around it
        learner: Trainer | GhostTrainer = wrapped
        if settings.self_play is not None and not self.inference:
            learner = GhostTrainer(
                trainer=wrapped, controller=self.ghost_controller, seed=self.seed, status=self.status
            )
        self._load_weights(name, learner, checkpoints, settings)
        trainer: Trainer | GhostTrainer | InferenceTrainer = InferenceTrainer(wrapped) if self.inference else learner
        reporter.add_property(StatsProperty.HYPERPARAMETERS, settings)
        reporter.add_property(StatsProperty.IS_TRAINING, not self.inference)
        reporter.add_property(StatsProperty.START_STEP, trainer.step)
        self.trainers[name] = trainer
        if not self.started:
            self.started = True
            if self._on_started is not None:
                self._on_started()
        if settings.threaded and not self.inference:
            thread = TrainerThread(trainer, self._trainer_stop)
            thread.start()
            self.threads[name] = thread
        if not trainer.should_still_train:
            logger.info(
                "Behavior %s already reached max_steps (%d); it is not trained further.", name, settings.max_steps
            )
        return trainer

    def _load_weights(
        self, name: str, learner: Trainer | GhostTrainer, checkpoints: BehaviorCheckpoints, settings: TrainerSettings
    ) -> None:
        """The behavior's weights: its checkpoint under ``--resume`` and ``--inference``, else
        ``--initialize-from``'s (``--inference`` of a new run id too), else fresh (with a
        warning where a checkpoint was expected)."""
        if self.continues and checkpoints.latest_path.exists():
            learner.resume(replay_buffer=not self.inference)
            logger.info("Resuming %s from step %d (%s)", name, learner.step, checkpoints.latest_path)
        elif settings.init_path is not None and not self.resume:  # --inference of a new run id too
            learner.initialize_from(settings.init_path)
            logger.info("Initialized %s from %s", name, settings.init_path)
        elif self.resume:
            logger.warning("Behavior %s has no checkpoint in %s; it starts from scratch.", name, self.run_dir)
        elif self.inference:
            logger.warning(
                "Behavior %s has no checkpoint in %s; --inference acts with an untrained policy "
                "(is --run-id a trained run's? --initialize-from names another run to act with)",
                name,
                self.run_dir,
            )

    # ------------------------------------------------------------------ the loop

    def done(self) -> bool:
        """Every trainer reached max_steps (an inference trainer never does: it acts until stopped)."""
        if not self.trainers:
            return False
        return not any(t.should_still_train for t in self.trainers.values())

    @timed_method(ADVANCE)
    def advance(self, env_manager: StepSource) -> None:
        """One round of the loop: environments, unthreaded trainers, failures, perf."""
        env_manager.advance(timeout=0.5)
        for name, trainer in self.trainers.items():
            if name not in self.threads:
                trainer.advance(0.0)
        self._raise_first_failure()
        reset = not self.inference and self._advance_lessons(env_manager)  # lessons move on with training
        if self.ghost_controller.should_reset() or reset:
            # the learning team changed (every episode starts anew with the new roles), or
            # a new lesson asks for a reset
            env_manager.request_reset()
        self._report_lessons()

    def _advance_lessons(self, env_manager: StepSource) -> bool:
        """Move complete lessons on and send their values; whether a reset is asked for."""
        curriculum = self.curriculum
        if curriculum is None or not curriculum.has_lessons or not self.trainers:
            return False
        progress = {name: t.step / max(t.settings.max_steps, 1) for name, t in self.trainers.items()}
        change = curriculum.update(progress)
        if not change.lessons:
            return False
        values = curriculum.values()
        env_manager.set_env_parameters({name: values[name] for name in change.lessons})
        return change.must_reset

    def _report_lessons(self) -> None:
        """Every parameter's lesson number on every behavior's stats (ML-Agents' tag)."""
        if self.curriculum is None:
            return
        for parameter, number in self.curriculum.lessons.items():
            tag = lesson_number(parameter)
            for reporter in self.reporters.values():
                reporter.set_stat(tag, float(number))

    @timed_method(START_LEARNING)
    def run(self, env_manager: StepSource) -> RunOutcome:
        """Train until done or stopped; save every behavior however it ends (an inference
        trainer saves nothing and says its mean return).

        Errors (a trainer's, an environment past its restart budget) propagate after saving.
        """
        interrupted = False
        saved: list[str] = []
        self._env_manager = env_manager
        try:
            with self.timers.scope(RESET_ENV):
                env_manager.start()
            while not self.done():
                if self.stop.is_set():
                    interrupted = True
                    logger.info("Learning was interrupted. Please wait while the graph is generated.")
                    break
                self.advance(env_manager)
        except KeyboardInterrupt:
            interrupted = True
            logger.info("Learning was interrupted. Please wait while the graph is generated.")
        except AgentManagerQueue.Closed:
            # A trainer thread failed while the processor waited on its full queue; its
            # error is raised below, after the healthy behaviors are saved.
            if not any(thread.failed.is_set() for thread in self.threads.values()):
                raise
        finally:
            self._trainer_stop.set()
            for thread in self.threads.values():
                thread.join(TRAINER_JOIN_TIMEOUT_S)
            saved = self._save_while_closing(env_manager)
        self._raise_first_failure()
        return RunOutcome(interrupted, {n: t.step for n, t in self.trainers.items()}, tuple(saved))

    def _save_while_closing(self, env_manager: StepSource) -> list[str]:
        """Save every behavior while the environments close in a thread of their own: a build
        takes a while to quit, and saving needs nothing of it. An error closing them is raised
        once everything is saved (logged, when saving raised too)."""
        errors: list[BaseException] = []

        def close() -> None:
            try:
                env_manager.close()
            except BaseException as error:  # noqa: BLE001 - raised on the caller's thread
                errors.append(error)

        closer = threading.Thread(target=close, name="close-environments")
        closer.start()
        try:
            saved = self.save_all()
        except BaseException:
            closer.join()
            for error in errors:
                logger.error("Closing the environments failed too: %s: %s", type(error).__name__, error)
            raise
        closer.join()
        if errors:
            raise errors[0]
        return saved

    def _raise_first_failure(self) -> None:
        for thread in self.threads.values():
            thread.raise_if_failed()

    @timed_method(SAVE_MODELS)
    def save_all(self) -> list[str]:
        """Checkpoint and export every healthy behavior; a failure is logged and the others
        still saved. A behavior whose trainer failed is not saved (its state may be half
        updated): its last checkpoint stays the one to resume from."""
        saved = []
        for name, trainer in self.trainers.items():
            thread = self.threads.get(name)
            if thread is not None and thread.failed.is_set():
                logger.error("Trainer %s failed; keeping its last checkpoint.", name)
                continue
            if thread is not None and thread.is_alive():
                logger.error("Trainer %s did not stop within %.0f s; not saving it.", name, TRAINER_JOIN_TIMEOUT_S)
                continue
            try:
                path = trainer.save_final()
            except Exception as error:  # noqa: BLE001 - keep saving the others
                logger.error("Could not save behavior %s: %s: %s", name, type(error).__name__, error)
                logger.debug("save failure", exc_info=True)
                continue
            if path is not None:
                saved.append(str(path))
        return saved

    def _report_perf(self, name: str) -> None:
        """Set the ``Perf/...`` values of ``name``'s stats window, just before it is written
        (from the writing thread): the time split and env and agent steps/s since its last
        write, trajectory-queue fill (0-1) and the seconds producers have spent blocked on
        full queues so far. Every summary carries them, however short the run."""
        window = self._perf_windows[name]
        summary, mark = self.perf.summary_since(window.start)
        reporter = self.reporters[name]
        for tag, value in summary.as_stats().items():
            reporter.set_stat(tag, value)
        managers = list(self.managers.get(name, ()))
        env_manager = self._env_manager
        agent_steps = window.agent_steps
        if env_manager is not None:
            by_behavior = env_manager.agent_steps_by_behavior
            agent_steps = sum(by_behavior.get(m.behavior_id, 0) for m in managers)
            elapsed = mark.time - window.start.time
            if elapsed > 0:
                reporter.set_stat(PERF_AGENT_STEPS_PER_SECOND, (agent_steps - window.agent_steps) / elapsed)
        self._perf_windows[name] = _PerfWindow(mark, agent_steps)
        bounded = [m.trajectory_queue for m in managers if m.trajectory_queue.maxlen > 0]
        if bounded:
            reporter.set_stat(PERF_QUEUE_FILL, max(q.qsize() / q.maxlen for q in bounded))
        reporter.set_stat(PERF_QUEUE_BLOCKED_S, sum(m.trajectory_queue.blocked_seconds for m in managers))
