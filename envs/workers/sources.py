"""Where a run's steps come from: one record per kind of environment (a Unity build, the
Editor, builds the user starts, a built-in environment, a Python factory, the policy server,
Gymnasium, PettingZoo), saying how ``--env`` names it, how it is checked before any work, how a worker
opens it, and what it supports. A new kind of environment is one record here (and its module).

The records are tried in order; the first whose ``matches`` accepts ``--env`` is the source, and
a path no prefix claims is a Unity build.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from envs.workers.launch import (
    BUILTIN_PREFIX,
    EDITOR_PORT,
    EXTERNAL_PREFIX,
    EXTERNAL_UNITY,
    GYMNASIUM_PREFIX,
    PETTINGZOO_PREFIX,
    PYTHON_PREFIX,
    EnvFactory,
    EnvFactoryError,
    EnvLaunch,
    OpenEnv,
    check_factory,
    external_port,
    open_build,
    open_builtin,
    open_editor,
    open_external_build,
    open_gymnasium,
    open_pettingzoo,
    open_python,
    resolve_factory,
    warn_once_per_unknown_side_channel,
)

#: What a Unity build's path may lack: the platform's suffix.
BUILD_SUFFIXES = ("", ".x86_64", ".x86", ".exe", ".app")
#: Copies of a Gymnasium environment each worker steps when the configuration does not say.
DEFAULT_GYMNASIUM_COPIES = 8


@attrs.frozen(kw_only=True)
class EnvRequest:
    """What the configuration asks of the environment, as a source checks it.

    env_path: ``--env`` (None: the Editor, or ``env_factory`` given from Python).
    env_kwargs: ``env_settings.env_kwargs``, keyword arguments the environment is made with.
    with_parameters: whether the run configures environment parameters.
    """

    env_path: str | None
    env_factory: EnvFactory | None = None
    env_kwargs: Mapping[str, Any] = attrs.field(factory=dict)
    with_parameters: bool = False


@attrs.frozen(kw_only=True)
class Supports:
    """What a source can do beyond stepping.

    num_envs: several worker processes (``--num-envs``). ray: env runners on a Ray cluster
    open it themselves (``--ray-address``). copies: several copies stepped as one behavior in
    each worker (``env_settings.envs_per_worker``). env_kwargs: keyword arguments to make the
    environment with (``env_settings.env_kwargs``). env_args: command-line arguments of a build
    (``--env-args``). areas: several training areas in one environment (``--num-areas``).
    simulates_elsewhere: it simulates in a process of its own (a Unity build, the Editor) and a
    step waits for it without holding the GIL, so one worker steps in a background thread while
    the run records and trains.
    """

    num_envs: bool = True
    ray: bool = True
    copies: bool = False
    env_kwargs: bool = False
    env_args: bool = False
    areas: bool = False
    simulates_elsewhere: bool = False


@attrs.frozen(kw_only=True)
class EnvSource:
    """One kind of environment.

    name: what errors call it. form: how ``--env`` names it (for errors and ``--help``).
    matches: whether it is this source, given ``--env`` and a Python factory (or None).
    check: raises ValueError naming the problem (without ``--env``'s name: the caller adds
    where), before any work; opens nothing it does not close. open: how worker ``i`` opens it.
    port: the port worker ``i`` talks on (what its errors name; 0 where there is none).
    """

    name: str
    form: str
    matches: Callable[[str | None, EnvFactory | None], bool]
    check: Callable[[EnvRequest], None]
    open: Callable[[EnvLaunch, int], OpenEnv]
    supports: Supports
    port: Callable[[EnvLaunch, int], int] = lambda launch, worker_id: launch.base_port + worker_id


def _prefixed(prefix: str) -> Callable[[str | None, EnvFactory | None], bool]:
    def matches(env_path: str | None, env_factory: EnvFactory | None) -> bool:
        return env_factory is None and env_path is not None and env_path.startswith(prefix)

    return matches


def _nothing_to_check(request: EnvRequest) -> None:
    return None


def _check_builtin(request: EnvRequest) -> None:
    from envs.builtin import available

    assert request.env_path is not None
    name = request.env_path[len(BUILTIN_PREFIX) :]
    if name not in available():
        raise ValueError(
            f"unknown built-in environment {name!r}; available: {', '.join(BUILTIN_PREFIX + n for n in available())}"
        )


def _check_python(request: EnvRequest) -> None:
    if request.env_factory is not None:
        check_factory(request.env_factory, with_parameters=request.with_parameters, where="env_factory")
        return
    assert request.env_path is not None
    try:
        check_factory(
            resolve_factory(request.env_path), with_parameters=request.with_parameters, where=request.env_path
        )
    except EnvFactoryError as error:
        raise ValueError(str(error)) from None


def _check_policy_server(request: EnvRequest) -> None:
    assert request.env_path is not None
    external_port(request.env_path)


def _check_gymnasium(request: EnvRequest) -> None:
    from envs.gymnasium import check_gymnasium

    assert request.env_path is not None
    check_gymnasium(request.env_path[len(GYMNASIUM_PREFIX) :], request.env_kwargs)


def _opened_by_the_run(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    raise ValueError(
        f"{launch.env_path}: the policy server is opened by the run (orchestration.external.external_pool), "
        "which gives it the run's behaviors and models"
    )


def _check_pettingzoo(request: EnvRequest) -> None:
    from envs.pettingzoo import check_pettingzoo

    assert request.env_path is not None
    check_pettingzoo(request.env_path[len(PETTINGZOO_PREFIX) :], request.env_kwargs)


def _check_build(request: EnvRequest) -> None:
    path = request.env_path
    assert path is not None
    if not any(os.path.exists(path + suffix) for suffix in BUILD_SUFFIXES):
        forms = ", ".join(f"{source.form} for {source.name}" for source in SOURCES if source is not UNITY_BUILD)
        raise ValueError(f"{path} does not exist (give the path to a Unity build, or {forms})")


POLICY_SERVER = EnvSource(
    name="the policy server that simulators call",
    form=f"{EXTERNAL_PREFIX}PORT",
    matches=_prefixed(EXTERNAL_PREFIX),
    check=_check_policy_server,
    open=_opened_by_the_run,
    supports=Supports(num_envs=False, ray=False),
    port=lambda launch, worker_id: external_port(launch.env_path or ""),
)
EXTERNAL_BUILDS = EnvSource(
    name="Unity builds or Editors you start yourself",
    form=EXTERNAL_UNITY,
    matches=lambda env_path, env_factory: env_factory is None and env_path == EXTERNAL_UNITY,
    check=_nothing_to_check,
    open=open_external_build,
    supports=Supports(areas=True, simulates_elsewhere=True),
)
BUILTIN = EnvSource(
    name="a built-in environment",
    form=f"{BUILTIN_PREFIX}<Name>",
    matches=_prefixed(BUILTIN_PREFIX),
    check=_check_builtin,
    open=open_builtin,
    supports=Supports(areas=True),
)
PYTHON = EnvSource(
    name="a Python BaseEnv factory",
    form=f"{PYTHON_PREFIX}module:function",
    matches=lambda env_path, env_factory: env_factory is not None or _prefixed(PYTHON_PREFIX)(env_path, None),
    check=_check_python,
    open=open_python,
    supports=Supports(),
)
GYMNASIUM = EnvSource(
    name="a Gymnasium environment",
    form=f"{GYMNASIUM_PREFIX}<id> (or {GYMNASIUM_PREFIX}<module>:<id>)",
    matches=_prefixed(GYMNASIUM_PREFIX),
    check=_check_gymnasium,
    open=open_gymnasium,
    supports=Supports(copies=True, env_kwargs=True),
)
PETTINGZOO = EnvSource(
    name="a PettingZoo environment",
    form=f"{PETTINGZOO_PREFIX}<module>",
    matches=_prefixed(PETTINGZOO_PREFIX),
    check=_check_pettingzoo,
    open=open_pettingzoo,
    supports=Supports(env_kwargs=True),
)
EDITOR = EnvSource(
    name="the Unity Editor",
    form="no --env",
    matches=lambda env_path, env_factory: env_path is None and env_factory is None,
    check=_nothing_to_check,
    open=open_editor,
    supports=Supports(num_envs=False, ray=False, areas=True, simulates_elsewhere=True),
    port=lambda launch, worker_id: EDITOR_PORT,
)
UNITY_BUILD = EnvSource(
    name="a Unity build",
    form="path/to/Build",
    matches=lambda env_path, env_factory: env_path is not None and env_factory is None,
    check=_check_build,
    open=open_build,
    supports=Supports(env_args=True, areas=True, simulates_elsewhere=True),
)
#: In the order they are tried: the Unity build takes any path no other source claims.
SOURCES: tuple[EnvSource, ...] = (
    POLICY_SERVER,
    EXTERNAL_BUILDS,
    BUILTIN,
    PYTHON,
    GYMNASIUM,
    PETTINGZOO,
    EDITOR,
    UNITY_BUILD,
)


def source_of(env_path: str | None, env_factory: EnvFactory | None = None) -> EnvSource:
    """The source ``--env`` (or a Python factory) names."""
    return next(source for source in SOURCES if source.matches(env_path, env_factory))


def launch_source(launch: EnvLaunch) -> EnvSource:
    """The source a worker's launch opens."""
    return source_of(launch.env_path, launch.env_factory)


def open_environment(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Open worker ``worker_id``'s environment; raises the environment's own exceptions."""
    warn_once_per_unknown_side_channel()
    return launch_source(launch).open(launch, worker_id)


def worker_port(launch: EnvLaunch, worker_id: int) -> int:
    """The port worker ``worker_id`` talks on (what its errors name)."""
    return launch_source(launch).port(launch, worker_id)
