"""Env workers: environments behind a small pool interface, stepped asynchronously, with
faults as values and restarts decided by the caller. Imports nothing of agents-learn's
outside ``envs``."""

from envs.workers.faults import RestartBudget, classify_error
from envs.workers.launch import (
    BUILTIN_PREFIX,
    EDITOR_PORT,
    EXTERNAL_PREFIX,
    EXTERNAL_UNITY,
    GYMNASIUM_PREFIX,
    LOOPBACK,
    PYTHON_PREFIX,
    EnvFactory,
    EnvFactoryError,
    EnvLaunch,
    OpenEnv,
    check_factory,
    external_port,
    resolve_factory,
)
from envs.workers.pool import EnvWorkerPool, InProcessPool
from envs.workers.records import FaultKind, SpecRecord, StepsRecord, WorkerFault, WorkerResult
from envs.workers.sources import (
    DEFAULT_GYMNASIUM_COPIES,
    EDITOR,
    EXTERNAL_BUILDS,
    POLICY_SERVER,
    SOURCES,
    EnvRequest,
    EnvSource,
    Supports,
    launch_source,
    open_environment,
    source_of,
    worker_port,
)
from envs.workers.subprocess_pool import SubprocessPool

__all__ = [
    "BUILTIN_PREFIX",
    "DEFAULT_GYMNASIUM_COPIES",
    "EDITOR",
    "EXTERNAL_BUILDS",
    "GYMNASIUM_PREFIX",
    "POLICY_SERVER",
    "SOURCES",
    "EnvRequest",
    "EnvSource",
    "Supports",
    "launch_source",
    "source_of",
    "worker_port",
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
