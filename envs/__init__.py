"""Where steps come from: Unity builds and the Editor (``envs.unity``), built-in environments.

Importing ``envs`` registers a cheap import hook (nothing is built until used) so that
mlagents_envs' protocol modules load under any protobuf, whichever of ``envs`` or
``mlagents_envs.environment`` / ``mlagents_envs.side_channel`` is imported next.
"""

from envs.unity import protocol as _protocol

_protocol.install()
