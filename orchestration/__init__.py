"""Orchestration: the agents-learn CLI, the one function that wires a run, the env manager
(worker pools to processors, batched inference) and the trainer controller.

``envs`` is imported first on purpose: it lets mlagents_envs' generated protocol modules
load under the current protobuf, which must happen before anything imports
``mlagents_envs.side_channel`` or ``mlagents_envs.environment``.
"""

import envs  # noqa: F401, I001  (must precede every mlagents_envs protocol import)

from orchestration.controller import RunOutcome, TrainerController
from orchestration.run import Run, build_run, train

__all__ = ["Run", "RunOutcome", "TrainerController", "build_run", "train"]
