"""Our ``UnityEnvironment``: mlagents_envs' class with a loopback, bounded-wait connection.

Same constructor keywords and methods as ``mlagents_envs.environment.UnityEnvironment``
(it is a subclass), plus ``bind_address`` and ``max_message_bytes``. Differences a user sees:

- the gRPC server listens on 127.0.0.1 unless ``bind_address`` says otherwise (a warning is
  logged for non-loopback addresses); ``base_port=0`` picks a free port (read ``.port``);
- every wait is bounded by ``timeout_wait``, including the start-up handshake, and a build
  that exits is noticed within ``poll_interval_s``; errors name the worker and port;
- messages up to ``max_message_bytes`` (default 64 MiB, not gRPC's 4 MB) are accepted, and a
  larger one is a clear error rather than a silent stall;
- ``close()`` always ends the build (quit message, then SIGTERM, then SIGKILL) and may be
  called more than once;
- images are ``[H, W, C]`` whichever Unity package generation the build has: a package 3.x or
  4.x build's channel-first cameras and grid sensors are converted as they arrive
  (``envs.unity.images``); ``behavior_specs`` describe them ``[H, W, C]`` too, and
  ``package_version`` says what the build reported.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
from typing import cast

from envs.unity import protocol

protocol.check_environment_module()

from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps, TerminalSteps  # noqa: E402
from mlagents_envs.communicator_objects.agent_action_pb2 import AgentActionProto  # noqa: E402
from mlagents_envs.communicator_objects.command_pb2 import STEP  # noqa: E402
from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto  # noqa: E402
from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto  # noqa: E402
from mlagents_envs.communicator_objects.unity_rl_initialization_input_pb2 import (  # noqa: E402
    UnityRLInitializationInputProto,
)
from mlagents_envs.communicator_objects.unity_rl_output_pb2 import UnityRLOutputProto  # noqa: E402
from mlagents_envs.environment import UnityEnvironment as _StockUnityEnvironment  # noqa: E402
from mlagents_envs.exception import UnityEnvironmentException  # noqa: E402
from mlagents_envs.side_channel.side_channel import SideChannel  # noqa: E402

from envs.exceptions import UnityBuildCrashedError  # noqa: E402
from envs.unity.communicator import LOOPBACK, LoopbackCommunicator  # noqa: E402
from envs.unity.images import ImageLayout, build_layout, decode_steps, internal_spec  # noqa: E402

logger = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
# Seconds close() waits for a build to quit by itself before SIGTERM, then before SIGKILL.
_CLOSE_GRACE_S = 5.0
_TERMINATE_GRACE_S = 2.0


class UnityEnvironment(_StockUnityEnvironment):
    """A Unity build or the Editor as a ``BaseEnv``; see the module docstring.

    bind_address: interface the gRPC server listens on ("127.0.0.1"; "0.0.0.0" or "::" for
        all interfaces, e.g. a build in another Docker container, logged as a warning).
    max_message_bytes: largest message accepted from Unity, in bytes.
    poll_interval_s: how often a wait checks that the build is still running, seconds.
    """

    def __init__(
        self,
        file_name: str | None = None,
        worker_id: int = 0,
        base_port: int | None = None,
        seed: int = 0,
        no_graphics: bool = False,
        timeout_wait: int = 60,
        additional_args: list[str] | None = None,
        side_channels: list[SideChannel] | None = None,
        log_folder: str | None = None,
        num_areas: int = 1,
        *,
        bind_address: str = LOOPBACK,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        poll_interval_s: float = 0.1,
    ) -> None:
        self._bind_address = bind_address
        self._max_message_bytes = max_message_bytes
        self._poll_interval_s = poll_interval_s
        self._communicator = None
        self._process: subprocess.Popen | None = None
        self._worker_id = worker_id
        self._port = base_port if base_port is not None else 0
        self._package_version = ""
        # Per behavior: its spec as the build declared it, and the layout of its images.
        self._builds: dict[str, tuple[BehaviorSpec, ImageLayout | None]] = {}
        try:
            super().__init__(
                file_name=file_name,
                worker_id=worker_id,
                base_port=base_port,
                seed=seed,
                no_graphics=no_graphics,
                timeout_wait=timeout_wait,
                additional_args=additional_args,
                side_channels=side_channels,
                log_folder=log_folder,
                num_areas=num_areas,
            )
        except BaseException:
            self._close(0)
            raise

    @property
    def port(self) -> int:
        """The port the gRPC server listens on (useful with base_port=0)."""
        return self._port

    @property
    def package_version(self) -> str:
        """The ML-Agents Unity package version the build reported ("2.3.0-exp.3", "3.0.0"...)."""
        return self._package_version

    @property
    def process(self) -> subprocess.Popen | None:
        """The build's process, None for the Editor or once closed."""
        return self._process

    def _get_communicator(self, worker_id: int, base_port: int, timeout_wait: float) -> LoopbackCommunicator:
        port = 0 if base_port == 0 else base_port + worker_id
        communicator = LoopbackCommunicator(
            worker_id,
            port,
            timeout_wait,
            bind_address=self._bind_address,
            max_message_bytes=self._max_message_bytes,
            poll_interval_s=self._poll_interval_s,
        )
        self._port = communicator.port
        return communicator

    def _poll_process(self) -> None:
        """Raise UnityBuildCrashedError if the build's process has exited."""
        process = self._process
        if process is None or process.poll() is None:
            return
        message = self._returncode_to_env_message(process.returncode)
        log_hint = ""
        log_file = self._log_file()
        if log_file:
            log_hint = f" See its log: {log_file}"
        raise UnityBuildCrashedError(
            f"worker {self._worker_id} (port {self._port}): the Unity build exited while "
            f"Python was waiting for it. {message}{log_hint}",
            worker_id=self._worker_id,
            port=self._port,
            returncode=process.returncode,
        )

    def _log_file(self) -> str | None:
        args = getattr(self, "_additional_args", [])
        for i, arg in enumerate(args[:-1]):
            if arg.lower() == "-logfile":
                return args[i + 1]
        if getattr(self, "_log_folder", None):
            return os.path.join(self._log_folder, f"Player-{self._worker_id}.log")
        return None

    def _send_academy_parameters(self, init_parameters: UnityRLInitializationInputProto) -> UnityOutputProto:
        output = super()._send_academy_parameters(init_parameters)
        self._package_version = str(output.rl_initialization_output.package_version)
        return output

    def _update_behavior_specs(self, output: UnityOutputProto) -> None:
        """The stock specs, kept as the build declared them for decoding; the behavior's
        ``behavior_specs`` entry describes its images ``[H, W, C]``."""
        known = set(self._env_specs)
        super()._update_behavior_specs(output)
        for name in set(self._env_specs) - known:
            spec = self._env_specs[name]
            try:
                layout = build_layout(spec, self._package_version)
            except ValueError as error:
                raise UnityEnvironmentException(f"behavior {name}: {error}") from None
            self._builds[name] = (spec, layout)
            self._env_specs[name] = internal_spec(spec, layout)
            if layout is not None:
                logger.info(
                    "%s (Unity package %s) sends images %s", name, self._package_version or "unknown", layout.value
                )

    def _update_state(self, output: UnityRLOutputProto) -> None:
        """Every behavior's steps in this message (images ``[H, W, C]``), then the side channels."""
        for name, (build_spec, layout) in self._builds.items():
            if name in output.agentInfos:
                self._env_state[name] = decode_steps(output.agentInfos[name].value, build_spec, layout)
            else:
                spec = self._env_specs[name]
                self._env_state[name] = (DecisionSteps.empty(spec), TerminalSteps.empty(spec))
        self._side_channel_manager.process_side_channel_message(output.side_channel)

    def step(self) -> None:
        """The stock step (the first one resets the environment), as its two halves."""
        self.send_step()
        self.receive_step()

    def send_step(self) -> None:
        """The first half of :meth:`step`: the actions set (empty ones for agents without, as
        the stock step sends) go to the build, which simulates while the caller does
        something else (a trainer records the step before), until :meth:`receive_step`."""
        if not self._loaded:
            raise UnityEnvironmentException("No Unity environment is loaded.")
        communicator = cast(LoopbackCommunicator, self._communicator)
        if self._is_first_message:
            communicator.send(self._generate_reset_input())
            return
        for name, spec in self._env_specs.items():
            if name not in self._env_actions:
                deciding = len(self._env_state[name][0]) if name in self._env_state else 0
                self._env_actions[name] = spec.action_spec.empty_action(deciding)
        communicator.send(self._generate_step_input(self._env_actions))

    def receive_step(self, within: float | None = None) -> bool:
        """The second half of :meth:`step`: the build's next steps, read. False when they did
        not come ``within`` seconds (ask again: the build's ``timeout_wait`` runs from the send)."""
        outputs = cast(LoopbackCommunicator, self._communicator).receive(self._poll_process, within=within)
        if outputs is None:
            return False
        self._update_behavior_specs(outputs)
        self._update_state(outputs.rl_output)
        self._is_first_message = False
        self._env_actions.clear()
        return True

    def _generate_step_input(self, vector_action: dict[str, ActionTuple]) -> UnityInputProto:
        """Actions for every agent that asked for a decision, one AgentActionProto each.

        Same message as the stock method, built with fewer Python-level calls per agent.
        """
        unity_input = UnityInputProto()
        rl_in = unity_input.rl_input
        for behavior_name, actions in vector_action.items():
            n_agents = len(self._env_state[behavior_name][0])
            if n_agents == 0:
                continue
            continuous = actions.continuous
            discrete = actions.discrete
            if continuous is not None and continuous.shape[1] == 0:
                continuous = None
            if discrete is not None and discrete.shape[1] == 0:
                discrete = None
            continuous_rows = continuous.tolist() if continuous is not None else None
            discrete_rows = discrete.tolist() if discrete is not None else None
            agent_actions = []
            for i in range(n_agents):
                action = AgentActionProto()
                if continuous_rows is not None:
                    row = continuous_rows[i]
                    action.vector_actions_deprecated.extend(row)
                    action.continuous_actions.extend(row)
                if discrete_rows is not None:
                    row = discrete_rows[i]
                    action.vector_actions_deprecated.extend(row)
                    action.discrete_actions.extend(row)
                agent_actions.append(action)
            rl_in.agent_actions[behavior_name].value.extend(agent_actions)
            rl_in.command = STEP
        rl_in.side_channel = bytes(self._side_channel_manager.generate_side_channel_messages())
        return unity_input

    def close(self) -> None:
        """Ask the build to quit, end its process for sure, free the port. Idempotent."""
        self._close()

    def _close(self, timeout: float | None = None) -> None:
        atexit.unregister(self._close)
        self._loaded = False
        if timeout is None:
            timeout = min(float(getattr(self, "_timeout_wait", _CLOSE_GRACE_S)), _CLOSE_GRACE_S)
        communicator = self._communicator
        if communicator is not None:
            communicator.close()
        process = self._process
        self._process = None
        if process is not None:
            _end_process(process, timeout, self._worker_id)


def _end_process(process: subprocess.Popen, grace_s: float, worker_id: int) -> None:
    """Wait for a build to exit, then SIGTERM, then SIGKILL its whole process group."""
    try:
        process.wait(timeout=grace_s)
        return
    except subprocess.TimeoutExpired:
        pass
    for sig, wait_s in ((signal.SIGTERM, _TERMINATE_GRACE_S), (signal.SIGKILL, 10.0)):
        logger.warning("worker %d: the Unity build did not quit; sending %s", worker_id, sig.name)
        try:
            # The build runs in its own session (start_new_session=True): end its children too.
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError, OSError):
            try:
                process.send_signal(sig)
            except ProcessLookupError:
                pass
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


__all__ = ["UnityEnvironment", "DEFAULT_MAX_MESSAGE_BYTES"]
