"""The trainer loop, written once for every algorithm: consuming trajectory queues, counting
steps, summaries, checkpoints, publishing policies, and running in a thread of its own.

An :class:`trainers.loop.algorithm.Algorithm` (PPO in ``trainers.ppo.algorithm``) supplies the learning.
Steps are counted as ML-Agents does: every transition of every trajectory the trainer
receives, whichever agent it came from.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from processors.queue import AgentManagerQueue
from processors.trajectory import Trajectory
from stats import PerfKind, PerfStats, StatsReporter, Timers, timed_method
from stats.tags import CUMULATIVE_REWARD, IS_TRAINING, STEP
from stats.timer_names import CHECKPOINT, PROCESS_TRAJECTORY, TRAINER_ADVANCE, UPDATE_POLICY
from trainers.exceptions import CheckpointError, ConfigError, TrainerError
from trainers.files import mlagents_checkpoint
from trainers.files.checkpoints import BehaviorCheckpoints, load_state
from trainers.files.onnx_export import export_policy_onnx
from trainers.files.status import CheckpointRecord
from trainers.loop.algorithm import Algorithm, ChoosesUpdateOrder, KeepsReplayBuffer
from trainers.networks.policy import TorchPolicy
from trainers.settings import TrainerSettings

logger = logging.getLogger(__name__)

# How many trajectories one advance() takes from a queue before checking for an update,
# so a flood of trajectories cannot starve the update (and the back-pressure it relieves).
MAX_TRAJECTORIES_PER_ADVANCE = 64
# The checkpoint format: 1 = {format, behavior, step, elapsed_seconds, activation (absent in older
# files: swish), **algorithm state}.
CHECKPOINT_FORMAT = 1


class CheckpointExtension(Protocol):
    """State kept beside the algorithm's in every checkpoint (see ``checkpoint_extensions``)."""

    def checkpoint_state(self) -> dict[str, Any]:
        """Tensors and plain data to save with the checkpoint being written."""

    def load_checkpoint_state(self, state: Mapping[str, Any] | None, path: Path) -> None:
        """Restore what :meth:`checkpoint_state` saved (None: the checkpoint has none);
        ``path`` names the checkpoint in messages."""


class Trainer:
    """Trains one behavior's policy with ``algorithm`` from the trajectories on its queues."""

    def __init__(
        self,
        *,
        behavior_name: str,
        settings: TrainerSettings,
        algorithm: Algorithm,
        stats_reporter: StatsReporter,
        checkpoints: BehaviorCheckpoints | None,
        perf: PerfStats | None = None,
        timers: Timers | None = None,
    ):
        self.behavior_name = behavior_name
        self.settings = settings
        self.algorithm = algorithm
        self._updates_between_trajectories = (
            isinstance(algorithm, ChoosesUpdateOrder) and algorithm.updates_between_trajectories
        )
        self.stats_reporter = stats_reporter
        self.checkpoints = checkpoints
        self.step = 0
        self.elapsed_before = 0.0  # training seconds of earlier sessions of this run (resume)
        self._session_start = time.monotonic()
        self._trajectory_queues: list[AgentManagerQueue[Trajectory]] = []
        self._policy_queues: list[AgentManagerQueue[Any]] = []
        self._next_summary_step = settings.summary_freq
        self._next_checkpoint_step = settings.effective_checkpoint_interval
        self._last_checkpoint: CheckpointRecord | None = None
        self._recent_reward: float | None = None
        self.perf = perf  # the run's: every update is timed as PerfKind.UPDATE
        self.timers = timers if timers is not None else Timers()  # the run's (timers.json)
        # Machinery around the loop (self-play's ghost trainer) whose state goes into every
        # checkpoint under its key and comes back on --resume.
        self.checkpoint_extensions: dict[str, CheckpointExtension] = {}

    @property
    def policy(self) -> TorchPolicy:
        return self.algorithm.policy

    # ------------------------------------------------------------------ wiring

    def subscribe_trajectory_queue(self, trajectory_queue: AgentManagerQueue[Trajectory]) -> None:
        self._trajectory_queues.append(trajectory_queue)

    def publish_policy_queue(self, policy_queue: AgentManagerQueue[Any]) -> None:
        self._policy_queues.append(policy_queue)

    def close_queues(self) -> None:
        """This trainer takes nothing more: producers blocked on its full queues wake up with
        ``AgentManagerQueue.Closed`` instead of waiting forever."""
        for trajectory_queue in self._trajectory_queues:
            trajectory_queue.close()

    @property
    def should_still_train(self) -> bool:
        return self.step < self.settings.max_steps

    @property
    def elapsed_seconds(self) -> float:
        """Training time of this run so far, including sessions before a resume."""
        return self.elapsed_before + (time.monotonic() - self._session_start)

    # ------------------------------------------------------------------ the loop

    @timed_method(TRAINER_ADVANCE)
    def advance(self, timeout: float = 0.0) -> bool:
        """Take what the queues hold (waiting up to ``timeout`` s for the first item), update
        when due. Returns whether anything was done."""
        worked = self._take_trajectories(timeout)
        if self.should_still_train and self.algorithm.ready():
            self._update()
            worked = True
        return worked

    @timed_method(PROCESS_TRAJECTORY)
    def _take_trajectories(self, timeout: float) -> bool:
        taken = self._take_from_queues(timeout)
        if taken and self.should_still_train:
            self._publish_normalizers()
        return taken > 0

    def _take_from_queues(self, timeout: float) -> int:
        """How many trajectories were taken (counted whether or not still training)."""
        taken = 0
        for trajectory_queue in self._trajectory_queues:
            for i in range(MAX_TRAJECTORIES_PER_ADVANCE):
                if self._updates_between_trajectories and self.should_still_train and self.algorithm.ready():
                    return taken
                try:
                    trajectory = trajectory_queue.get(timeout=timeout if i == 0 and not taken else 0.0)
                except AgentManagerQueue.Empty:
                    break
                taken += 1
                if self.should_still_train:
                    self.algorithm.add(trajectory)
                    self._increment_step(trajectory.length)
        return taken

    @timed_method(UPDATE_POLICY)
    def _update(self) -> None:
        if self.perf is None:
            update_stats = self.algorithm.update(self.step)
        else:
            with self.perf.measure(PerfKind.UPDATE):
                update_stats = self.algorithm.update(self.step)
        for key, value in update_stats.items():
            self.stats_reporter.add_stat(key, value)
        self._publish_policy()

    def _increment_step(self, n: int) -> None:
        """Count ``n`` steps; write the summary and checkpoint they reach. ``Step`` (hidden in
        TensorBoard, gauge ``<Behavior>.Step.mean`` in timers.json) is set after the summary, so
        a summary holds the step before the trajectory that reached it, as in ML-Agents."""
        self.step += n
        if self.step >= self._next_summary_step:
            self._write_summary(self._next_summary_step)
            interval = self.settings.summary_freq
            self._next_summary_step = (self.step // interval + 1) * interval
        if self.step >= self._next_checkpoint_step and self.checkpoints is not None:
            self.save_checkpoint()
            interval = self.settings.effective_checkpoint_interval
            self._next_checkpoint_step = (self.step // interval + 1) * interval
        self.stats_reporter.set_stat(STEP, float(self.step))

    def _write_summary(self, step: int) -> None:
        self.stats_reporter.set_stat(IS_TRAINING, float(self.should_still_train))
        summaries = self.stats_reporter.write_stats(step)
        reward = summaries.get(CUMULATIVE_REWARD)
        if reward is not None and reward.count > 0:
            self._recent_reward = reward.mean

    def _publish_policy(self) -> None:
        weights = self.policy.get_weights()
        for policy_queue in self._policy_queues:
            policy_queue.put(weights)

    def _publish_normalizers(self) -> None:
        """The normalisers the trajectories just taken moved, for the acting copies (as
        ML-Agents acts with its trainer's live normalisers); nothing without normalisation."""
        if not self.policy.network_settings.normalize:
            return
        stats = self.policy.normalizer_stats()
        if stats is None:
            return
        for policy_queue in self._policy_queues:
            policy_queue.put(stats)

    # ------------------------------------------------------------------ checkpoints

    def checkpoint_state(self) -> dict[str, Any]:
        """Everything a resumed run needs to continue at this exact step."""
        return {
            "format": CHECKPOINT_FORMAT,
            "behavior": self.behavior_name,
            "step": self.step,
            "elapsed_seconds": self.elapsed_seconds,
            # not in the weights' shapes, so saved to be checked: the same weights compute
            # another function under another activation
            "activation": str(self.settings.network_settings.activation),
            **self.algorithm.state(),
            **{key: extension.checkpoint_state() for key, extension in self.checkpoint_extensions.items()},
        }

    @timed_method(CHECKPOINT)
    def save_checkpoint(self) -> CheckpointRecord:
        """Write the step's checkpoint files; returns their record."""
        if self.checkpoints is None:
            raise CheckpointError(f"{self.behavior_name}: this trainer has no checkpoint folder")
        if isinstance(self.algorithm, KeepsReplayBuffer) and self.algorithm.saves_replay_buffer:
            # before checkpoint.pt: a resume never finds an older buffer than its checkpoint
            self.checkpoints.save_replay_buffer(self.step, self.algorithm.replay_buffer_state())
        self._last_checkpoint = self.checkpoints.save(
            self.step, self.checkpoint_state(), functools.partial(export_policy_onnx, self.policy), self._recent_reward
        )
        return self._last_checkpoint

    def save_final(self) -> Path | None:
        """Checkpoint the current step (unless just done) and copy its ONNX model to
        ``results/<run-id>/<Behavior>.onnx``."""
        if self.checkpoints is None:
            return None
        record = self._last_checkpoint
        if record is None or record.steps != self.step:
            record = self.save_checkpoint()
        return self.checkpoints.save_final(record)

    def resume(self, *, replay_buffer: bool = True) -> None:
        """Continue from the behavior's latest checkpoint: weights, optimiser, normalisers,
        step (and with it every schedule), elapsed time, and the replay buffer saved with it
        (``replay_buffer``: False for a run that only acts, --inference)."""
        if self.checkpoints is None:
            raise CheckpointError(f"{self.behavior_name}: this trainer has no checkpoint folder")
        path = self.checkpoints.latest_path
        state = self.checkpoints.load_latest()
        if mlagents_checkpoint.is_mlagents_checkpoint(state):
            raise mlagents_checkpoint.resume_refusal(path, self.checkpoints.run_dir.name)
        self._load(state, path, weights_only=False, what="--resume")
        self.step = int(state["step"])
        for key, extension in self.checkpoint_extensions.items():
            extension.load_checkpoint_state(state.get(key), path)
        if replay_buffer:
            self._load_replay_buffer()
        self.elapsed_before = float(state.get("elapsed_seconds", 0.0))
        self._session_start = time.monotonic()
        summary, checkpoint = self.settings.summary_freq, self.settings.effective_checkpoint_interval
        self._next_summary_step = (self.step // summary + 1) * summary
        self._next_checkpoint_step = (self.step // checkpoint + 1) * checkpoint
        self._publish_policy()

    def _load_replay_buffer(self) -> None:
        """The saved replay buffer, when the algorithm saves one (a file left by an earlier
        session that saved it is not read once ``save_replay_buffer`` is off, as in ML-Agents)."""
        algorithm = self.algorithm
        if self.checkpoints is None or not isinstance(algorithm, KeepsReplayBuffer):
            return
        if not algorithm.saves_replay_buffer:
            return
        saved = self.checkpoints.load_replay_buffer()
        if saved is None:
            return
        step, state = saved
        path = self.checkpoints.replay_buffer_path
        if step != self.step:
            logger.warning(
                "%s was saved at step %d, the checkpoint at step %d (a run stopped while saving?); "
                "%s continues with it, but not exactly as the run would have.",
                path,
                step,
                self.step,
                self.behavior_name,
            )
        try:
            algorithm.load_replay_buffer(state)
        except (KeyError, ValueError) as error:
            raise CheckpointError(
                f"{path}: does not fit behavior {self.behavior_name!r} as configured ({error}); delete it to "
                "resume with an empty replay buffer"
            ) from None
        logger.info("Loaded the replay buffer of %s from %s", self.behavior_name, path)

    def initialize_from(self, path: str | Path) -> None:
        """Start from another run's weights (``init_path``); step and optimiser start fresh.

        ``path`` is a ``.pt`` file or a behavior folder holding ``checkpoint.pt``, written by
        agents-learn or by mlagents-learn (whose weights are translated, see
        :mod:`trainers.files.mlagents_checkpoint`).
        """
        path = Path(path)
        if path.is_dir():
            path = path / "checkpoint.pt"
        if not path.exists():
            raise CheckpointError(f"{self.behavior_name}: init_path {path} does not exist")
        state = load_state(path)
        if mlagents_checkpoint.is_mlagents_checkpoint(state):
            state = mlagents_checkpoint.import_weights(
                state,
                self.algorithm.state(),
                settings=self.settings,
                action_spec=self.policy.behavior_spec.action_spec,
                path=path,
                behavior=self.behavior_name,
            )
        self._load(state, path, weights_only=True, what="--initialize-from")
        self._publish_policy()

    def _load(self, state: Mapping[str, Any], path: Path, *, weights_only: bool, what: str) -> None:
        """Hand ``state`` to the algorithm; a checkpoint that does not fit is one clear error."""
        if not isinstance(state, Mapping) or "step" not in state:
            raise CheckpointError(f"{path}: not an agents-learn checkpoint (no step recorded); cannot {what} from it")
        trained_with = str(state.get("activation", "swish"))  # checkpoints from before the key: Swish
        configured = str(self.settings.network_settings.activation)
        if trained_with != configured:
            raise CheckpointError(
                f"{path}: was trained with network_settings.activation {trained_with}, and behavior "
                f"{self.behavior_name!r} is configured with {configured}; its weights would compute another "
                f"function. Set activation: {trained_with}, or start from fresh weights; cannot {what} from it"
            )
        try:
            self.algorithm.load(state, weights_only=weights_only)
        except ConfigError as error:  # the algorithm names the setting that does not match
            raise CheckpointError(f"{path}: {error}; cannot {what} from it") from None
        except KeyError as error:
            raise CheckpointError(
                f"{path}: does not hold {error} for behavior {self.behavior_name!r} (was it written by another "
                f"trainer type or program?); cannot {what} from it"
            ) from None
        except (RuntimeError, ValueError) as error:
            detail = " ".join(str(error).split())
            if len(detail) > 300:
                detail = detail[:300] + "..."
            raise CheckpointError(
                f"{path}: does not fit behavior {self.behavior_name!r} as configured (did network_settings or "
                f"the environment's observations/actions change?): {detail}"
            ) from None


class Advances(Protocol):
    """What :class:`TrainerThread` runs: the trainer loop, or the ghost trainer around one."""

    @property
    def behavior_name(self) -> str: ...

    def advance(self, timeout: float = 0.0) -> bool: ...

    def close_queues(self) -> None: ...


class TrainerThread:
    """Runs ``trainer.advance()`` in a daemon thread until ``stop`` is set.

    An exception in the trainer is kept in ``error``, sets ``failed`` and closes the trainer's
    queues (a producer blocked on one wakes up), so the main thread can stop the run with it
    (after saving the healthy behaviors) instead of waiting on a trainer that is gone.
    """

    def __init__(self, trainer: Advances, stop: threading.Event):
        self.trainer = trainer
        self.stop = stop
        self.failed = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"trainer-{trainer.behavior_name}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def raise_if_failed(self) -> None:
        """Re-raise a trainer's exception in the calling thread as a TrainerError."""
        if self.error is not None:
            raise TrainerError(
                f"trainer for behavior {self.trainer.behavior_name!r} failed: {type(self.error).__name__}: {self.error}"
            ) from self.error

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                self.trainer.advance(timeout=0.05)
        except BaseException as error:  # noqa: BLE001 - handed to the main thread
            logger.debug("trainer %s failed", self.trainer.behavior_name, exc_info=True)
            self.error = error
            self.failed.set()
            self.trainer.close_queues()
