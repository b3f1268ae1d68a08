"""Orchestration: the agents-learn CLI, the one function that wires a run, the env manager
(worker pools to processors, batched inference) and the trainer controller.

``envs`` is imported first on purpose: it lets mlagents_envs' generated protocol modules
load under the current protobuf, which must happen before anything imports
``mlagents_envs.side_channel`` or ``mlagents_envs.environment``.

The exports load on first use, so that ``agents-learn`` (``orchestration.cli``) reads and checks
a configuration before anything imports torch: a mistyped key is reported at once.
"""

import importlib
from typing import TYPE_CHECKING, Any

import envs  # noqa: F401, I001  (must precede every mlagents_envs protocol import)

if TYPE_CHECKING:
    from orchestration.controller import RunOutcome, TrainerController
    from orchestration.run import Run, build_run, train

_EXPORTS = {
    "Run": "orchestration.run",
    "build_run": "orchestration.run",
    "train": "orchestration.run",
    "RunOutcome": "orchestration.controller",
    "TrainerController": "orchestration.controller",
}

__all__ = ["Run", "RunOutcome", "TrainerController", "build_run", "train"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'orchestration' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
