"""Built-in environments: Unity-like tasks simulated in numpy, for training without Unity.

``make_env("3DBall", seed=1)`` returns an ``mlagents_envs.base_env.BaseEnv``; configs select
one with ``env_settings: {env_path: "builtin:<Name>"}``. ``available()`` lists the names.
"""

from envs.builtin._core import BuiltinEnv, UnknownBuiltinEnvError
from envs.builtin.registry import BUILTIN_PREFIX, available, make_env

__all__ = ["BUILTIN_PREFIX", "BuiltinEnv", "UnknownBuiltinEnvError", "available", "make_env"]
