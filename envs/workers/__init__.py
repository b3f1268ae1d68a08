"""Env workers: environments behind a small pool interface, stepped asynchronously, with
faults as values and restarts decided by the caller. Imports nothing of agents-learn's
outside ``envs``."""

from envs.workers.faults import RestartBudget, classify_error
from envs.workers.launch import (
    BUILTIN_PREFIX,
    EDITOR_PORT,
    EXTERNAL_PREFIX,
    EXTERNAL_UNITY,
    LOOPBACK,
    PYTHON_PREFIX,
    EnvFactory,
    EnvFactoryError,
    EnvLaunch,
    OpenEnv,
    check_factory,
    external_port,
    open_environment,
    resolve_factory,
)
from envs.workers.pool import EnvWorkerPool, InProcessPool
from envs.workers.records import FaultKind, SpecRecord, StepsRecord, WorkerFault, WorkerResult
from envs.workers.subprocess_pool import SubprocessPool

__all__ = [
    "BUILTIN_PREFIX",
    "EDITOR_PORT",
    "EXTERNAL_PREFIX",
    "EXTERNAL_UNITY",
    "LOOPBACK",
    "PYTHON_PREFIX",
    "EnvFactory",
    "EnvFactoryError",
    "EnvLaunch",
    "EnvWorkerPool",
    "FaultKind",
    "InProcessPool",
    "OpenEnv",
    "RestartBudget",
    "SpecRecord",
    "StepsRecord",
    "SubprocessPool",
    "WorkerFault",
    "WorkerResult",
    "check_factory",
    "classify_error",
    "external_port",
    "open_environment",
    "resolve_factory",
]
