"""Errors raised by envs, each a subclass of the mlagents_envs exception users already catch.

Messages say what happened and which worker and port, so a log line from one of many
workers is actionable on its own.
"""

from __future__ import annotations

from mlagents_envs.exception import (
    UnityCommunicationException,
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
)


class ProtocolSetupError(UnityEnvironmentException, ImportError):
    """The ML-Agents protocol messages cannot be loaded with the installed protobuf."""


class UnityBuildCrashedError(UnityEnvironmentException):
    """The Unity process exited while Python was waiting for it."""

    def __init__(self, message: str, *, worker_id: int, port: int, returncode: int | None):
        super().__init__(message)
        self.worker_id = worker_id
        self.port = port
        self.returncode = returncode


class UnityBuildTimeoutError(UnityTimeOutException):
    """No message from the Unity side within ``timeout_wait`` (hung, or never connected)."""

    def __init__(self, message: str, *, worker_id: int, port: int, waited_s: float):
        super().__init__(message)
        self.worker_id = worker_id
        self.port = port
        self.waited_s = waited_s


class UnityBuildQuitError(UnityCommunicatorStoppedException):
    """The Unity side ended the session (Application.Quit or a closed Editor)."""

    def __init__(self, message: str, *, worker_id: int, port: int):
        super().__init__(message)
        self.worker_id = worker_id
        self.port = port


class UnityMessageTooLargeError(UnityCommunicationException):
    """A message from Unity exceeded ``max_message_bytes``."""

    def __init__(self, message: str, *, worker_id: int, port: int, size: int, limit: int):
        super().__init__(message)
        self.worker_id = worker_id
        self.port = port
        self.size = size
        self.limit = limit
