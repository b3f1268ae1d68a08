"""The run's side of ``--env external:PORT``: the policy server is an environment like any
other (one in-process worker); this module gives it the run's policies as ONNX models for
clients that act locally, and the run's configuration to refuse behaviors it cannot train
(``envs`` cannot import ``trainers``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

from envs.external.server import BehaviorCheck, PolicyServerEnv
from envs.workers import EnvLaunch, InProcessPool, OpenEnv, worker_port
from orchestration.env_manager import BehaviorRuntime
from trainers.exceptions import ConfigError
from trainers.files.onnx_export import export_policy_onnx
from trainers.settings import RunOptions


class OnnxModels:
    """``(behavior_id) -> (version, ONNX bytes)`` of the env manager's current inference
    policy (the one remote clients are answered with), exported once per weights version.
    Called by the policy server from the thread that steps it, so it never races the weights
    being loaded."""

    def __init__(self) -> None:
        self._runtimes: Mapping[str, BehaviorRuntime] = {}
        self._cache: dict[str, tuple[int, bytes]] = {}

    def attach(self, runtimes: Mapping[str, BehaviorRuntime]) -> None:
        """Serve the policies of ``runtimes`` (the env manager's, filled as behaviors appear)."""
        self._runtimes = runtimes

    def version(self, behavior_id: str) -> int:
        """The weights version of the behavior's policy (-1: no policy yet)."""
        runtime = self._runtimes.get(behavior_id)
        return -1 if runtime is None else runtime.weights_version

    def __call__(self, behavior_id: str) -> tuple[int, bytes]:
        runtime = self._runtimes.get(behavior_id)
        if runtime is None:
            raise LookupError("its trainer is not created yet")
        cached = self._cache.get(behavior_id)
        if cached is not None and cached[0] == runtime.weights_version:
            return cached
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "policy.onnx")
            export_policy_onnx(runtime.policy, path)
            with open(path, "rb") as file:
                model = (runtime.weights_version, file.read())
        self._cache[behavior_id] = model
        return model


def behavior_check(options: RunOptions) -> BehaviorCheck:
    """Why the run cannot train a behavior a client names (None: it can), by the rule that
    makes its trainer (``RunOptions.behavior_settings``)."""

    def check(behavior: str) -> str | None:
        try:
            options.behavior_settings(behavior)
        except ConfigError as error:
            return str(error)
        return None

    return check


def external_pool(launch: EnvLaunch, models: OnnxModels, check: BehaviorCheck) -> InProcessPool:
    """The one-worker pool of the policy server, serving ``models`` to local-inference clients
    and refusing the behaviors ``check`` refuses (both in place before it listens)."""

    def open_server(worker_id: int) -> OpenEnv:
        server = PolicyServerEnv(
            worker_port(launch, worker_id),
            bind_address=launch.bind_address,
            token=launch.server_token,
            model_source=models,
            behavior_check=check,
        )
        return OpenEnv(server, server.get_and_reset_stats)

    return InProcessPool(launch, opener=open_server)
