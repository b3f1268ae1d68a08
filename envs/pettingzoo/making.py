"""Turning a ``target`` from the command line into a PettingZoo environment, with errors that name it.

``target`` is a module path (``mpe2.simple_spread_v3``, ``pettingzoo.classic.connect_four_v3``).
The module is imported; ``parallel_env`` gives the parallel API, ``env`` the AEC (turn-based)
API. Most PettingZoo modules have both: ``env()`` is made first and its
``metadata["is_parallelizable"]`` decides: True (MPE, butterfly, SISL: agents act together, the
AEC form only cycles through them) -> ``parallel_env()`` is made instead; False or missing
(classic board and card games: players take turns) -> the AEC env is kept.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import attrs
from pettingzoo.utils.env import AECEnv, ParallelEnv

from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.specs import Api


def label(target: str) -> str:
    """How messages name the environment: ``pettingzoo:<target>``, as written in configs."""
    return f"pettingzoo:{target}"


@attrs.frozen(eq=False)
class MadeEnv:
    """A constructed environment and the API it is driven through (a ParallelEnv for
    ``Api.PARALLEL``, an AECEnv for ``Api.AEC``); not reset yet."""

    api: Api
    env: Any


def make_env(target: str, env_kwargs: Mapping[str, Any] | None = None) -> MadeEnv:
    """Import ``target``, choose the API (module docstring) and construct the environment with
    ``env_kwargs``; PettingZooEnvError naming the target when anything fails."""
    module = _import(target)
    parallel_factory, aec_factory = _factory(module, "parallel_env"), _factory(module, "env")
    kwargs = dict(env_kwargs or {})
    if parallel_factory is None:
        if aec_factory is None:
            raise PettingZooEnvError(
                f"{label(target)}: module '{target}' has neither `parallel_env` nor `env`; "
                "expected a PettingZoo environment module such as mpe2.simple_spread_v3"
            )
        return MadeEnv(Api.AEC, _construct(target, aec_factory, "env", kwargs, AECEnv))
    if aec_factory is not None:
        env = _construct(target, aec_factory, "env", kwargs, AECEnv)
        if not (getattr(env, "metadata", None) or {}).get("is_parallelizable"):
            return MadeEnv(Api.AEC, env)
        env.close()
    return MadeEnv(Api.PARALLEL, _construct(target, parallel_factory, "parallel_env", kwargs, ParallelEnv))


def _factory(module: Any, name: str) -> Callable[..., Any] | None:
    factory = getattr(module, name, None)
    return factory if callable(factory) else None


def _import(target: str) -> Any:
    try:
        return importlib.import_module(target)
    except Exception as error:  # any failure of user code at import is reported with the target
        raise PettingZooEnvError(
            f"{label(target)}: importing module '{target}' failed ({type(error).__name__}: {error})"
        ) from error


def _construct(target: str, factory: Callable[..., Any], name: str, kwargs: dict[str, Any], kind: type) -> Any:
    """``factory(**kwargs)``, checked to be a ``kind`` (ParallelEnv or AECEnv)."""
    try:
        env = factory(**kwargs)
    except TypeError as error:
        raise PettingZooEnvError(
            f"{label(target)}: {name}() raised TypeError; check env_kwargs {kwargs!r} ({error})"
        ) from error
    except Exception as error:  # a constructor's own failure (missing dependency, bad value)
        raise PettingZooEnvError(f"{label(target)}: {name}() failed ({type(error).__name__}: {error})") from error
    if not isinstance(env, kind):
        if callable(getattr(env, "close", None)):
            env.close()
        raise PettingZooEnvError(
            f"{label(target)}: {name}() returned {type(env).__name__}, not a pettingzoo {kind.__name__}"
        )
    return env
