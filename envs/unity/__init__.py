"""Connection to Unity builds and the Editor over the ML-Agents gRPC protocol.

Importing this package only registers a cheap import hook so that ``mlagents_envs``' protocol
modules load under any protobuf (see ``envs.unity.protocol``); the environment class loads
on first use::

    from envs.unity import UnityEnvironment
    env = UnityEnvironment(file_name=..., base_port=0, timeout_wait=20)
"""

from typing import Any

from envs.unity import protocol as _protocol

_protocol.install()

__all__ = ["UnityEnvironment", "DEFAULT_MAX_MESSAGE_BYTES", "api_version"]


def api_version() -> str:
    """The Unity communication protocol version spoken (mlagents_envs' ``UnityEnvironment.API_VERSION``,
    "1.5.0"); loads the environment class."""
    from envs.unity import environment

    return str(environment.UnityEnvironment.API_VERSION)


def __getattr__(name: str) -> Any:
    if name in ("UnityEnvironment", "DEFAULT_MAX_MESSAGE_BYTES"):
        from envs.unity import environment

        return getattr(environment, name)
    raise AttributeError(f"module 'envs.unity' has no attribute {name!r}")
