"""Timer scope names of ``run_logs/timers.json``, as ML-Agents 0.28 writes them, plus ours.

Read from a run of ``mlagents-learn`` 0.28 (``@timed``/``hierarchical_timer`` in
``trainer_controller.py``, ``subprocess_env_manager.py``, ``policy/torch_policy.py``,
``trainer/rl_trainer.py``), whose tree is::

    TrainerController.start_learning
      TrainerController._reset_env
      TrainerController.advance
        env_step
          SubprocessEnvManager._take_step
            TorchPolicy.evaluate
          workers / worker_root            (worker processes' trees: not timed by us)
        trainer_advance
          process_trajectory
            RLTrainer._checkpoint
          _update_policy
      trainer_threads / thread_root        (threaded trainers' trees, parallel)
        trainer_advance ...
      TrainerController._save_models
        RLTrainer._checkpoint

Use these constants rather than retyping the strings, so a tool reading ML-Agents' file
reads ours.
"""

from __future__ import annotations

START_LEARNING = "TrainerController.start_learning"
"""The whole training loop, saving included."""
RESET_ENV = "TrainerController._reset_env"
"""Opening the environments and taking their first steps."""
ADVANCE = "TrainerController.advance"
"""One round of the loop: environments, then the unthreaded trainers."""
ENV_STEP = "env_step"
"""Steps in from the workers, processed, and the next actions out."""
TAKE_STEP = "SubprocessEnvManager._take_step"
"""Choosing the actions of every deciding agent (ours: one batch per behavior across workers)."""
POLICY_EVALUATE = "TorchPolicy.evaluate"
"""One policy forward pass (ML-Agents nests ``TorchPolicy.sample_actions`` inside)."""
TRAINER_ADVANCE = "trainer_advance"
"""One ``Trainer.advance``: trajectories taken, an update if due."""
PROCESS_TRAJECTORY = "process_trajectory"
"""Taking trajectories off the queues into the update buffer (and the checkpoints they trigger)."""
UPDATE_POLICY = "_update_policy"
"""One policy update and publishing the new weights."""
CHECKPOINT = "RLTrainer._checkpoint"
"""Writing one checkpoint (``.pt`` and ``.onnx``)."""
SAVE_MODELS = "TrainerController._save_models"
"""Saving every behavior when the run ends."""
TRAINER_THREADS = "trainer_threads"
THREAD_ROOT = "thread_root"
TRAINER_THREAD_PATH: tuple[str, ...] = (START_LEARNING, TRAINER_THREADS, THREAD_ROOT)
"""Where the scopes timed on trainer threads go in the tree, marked parallel."""

ENV_WAIT = "env_wait"
"""Ours, under ``env_step``: waiting for workers to return steps."""
PROCESS_STEPS = "process_steps"
"""Ours, under ``env_step``: steps into trajectories (the agent processors)."""
STEP_WORKERS = "step_workers"
"""Ours, under ``env_step``: handing each worker its actions (an in-process pool steps its
environment here; a subprocess pool only sends)."""
