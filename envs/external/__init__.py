"""External simulators: a policy server inside the run (``--env external:PORT``) and the
Python client that calls it. The wire format (:mod:`envs.external.wire`) is documented for
clients in other languages."""

from envs.external.client import PolicyClient, PolicyServerError
from envs.external.server import PolicyServerEnv

__all__ = ["PolicyClient", "PolicyServerEnv", "PolicyServerError"]
