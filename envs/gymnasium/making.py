"""Turning an ``env_id`` from the command line into Gymnasium environments, with errors that name it.

``env_id`` is a registered id (``CartPole-v1``) or ``module:Id`` (``ale_py:ALE/Pong-v5``):
the module is imported first (it registers ``Id``), then ``Id`` is made, as ``gymnasium.make``
does with the same syntax; we import it ourselves so that any import failure, not only a
missing module, is reported with the id.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

import gymnasium
from gymnasium.wrappers import Autoreset

from envs.builtin._core import behavior_name
from envs.gymnasium.errors import GymnasiumEnvError

_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9_.\-]")


def label(env_id: str) -> str:
    """How messages name the environment: ``gymnasium:<env_id>``, as written in configs."""
    return f"gymnasium:{env_id}"


def split_env_id(env_id: str) -> tuple[str | None, str]:
    """``module:Id`` -> (module, Id); a plain id -> (None, id)."""
    module, colon, name = env_id.partition(":")
    if not colon:
        return None, env_id
    if not module or not name or ":" in name:
        raise GymnasiumEnvError(f"{label(env_id)}: expected a registered id or 'module:Id' (one colon)")
    return module, name


def behavior_base(env_id: str) -> str:
    """The behavior's name without its team: the Id part of ``env_id`` with every character
    other than letters, digits, ``_``, ``.`` and ``-`` replaced by ``_``, since behavior names
    become folder and file names and ``?`` separates the team (``ALE/Pong-v5`` -> ``ALE_Pong-v5``)."""
    _, name = split_env_id(env_id)
    return _NOT_IN_NAME.sub("_", name)


def behavior_name_for(env_id: str) -> str:
    """The full behavior name: ``ale_py:ALE/Pong-v5`` -> ``ALE_Pong-v5?team=0``."""
    return behavior_name(behavior_base(env_id))


def make_copy(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> gymnasium.Env:
    """One ``gymnasium.make(Id, **env_kwargs)``, its module imported first; GymnasiumEnvError
    naming the id when anything fails (unknown id, import error, bad kwargs, constructor error)."""
    module, name = split_env_id(env_id)
    if module is not None:
        try:
            importlib.import_module(module)
        except Exception as error:  # any failure of user code at import is reported with the id
            raise GymnasiumEnvError(
                f"{label(env_id)}: importing module '{module}' failed ({type(error).__name__}: {error})"
            ) from error
    kwargs = dict(env_kwargs or {})
    try:
        env = gymnasium.make(name, **kwargs)
    except gymnasium.error.Error as error:
        raise GymnasiumEnvError(f"{label(env_id)}: {error}") from error
    except TypeError as error:
        raise GymnasiumEnvError(
            f"{label(env_id)}: making the environment raised TypeError; check env_kwargs {kwargs!r} ({error})"
        ) from error
    except Exception as error:  # a constructor's own failure (missing dependency, bad value)
        raise GymnasiumEnvError(
            f"{label(env_id)}: making the environment failed ({type(error).__name__}: {error})"
        ) from error
    _refuse_autoreset(env_id, env)
    return env


def _refuse_autoreset(env_id: str, env: gymnasium.Env) -> None:
    """We reset each copy ourselves right after its last step; an Autoreset wrapper registered
    with the environment would reset it a second time, on the next step, losing a step."""
    layer: Any = env
    while isinstance(layer, gymnasium.Wrapper):
        if isinstance(layer, Autoreset):
            env.close()
            raise GymnasiumEnvError(
                f"{label(env_id)}: the environment is wrapped in Autoreset; remove it, copies are reset as episodes end"
            )
        layer = layer.env
