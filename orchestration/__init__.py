"""Orchestration: the agents-learn CLI, the one function that wires a run, the env manager
(worker pools to processors, batched inference) and the trainer controller."""

from orchestration.controller import RunOutcome, TrainerController
from orchestration.run import Run, build_run, train

__all__ = ["Run", "RunOutcome", "TrainerController", "build_run", "train"]
