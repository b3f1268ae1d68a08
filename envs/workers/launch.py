"""How a worker opens its environment: a Unity build, the Editor, a built-in environment, or a
user's own ``BaseEnv`` made by a Python factory.

:class:`EnvLaunch` is plain data (picklable) so a subprocess worker can open the same
environment as an in-process one.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import attrs
from mlagents_envs.base_env import BaseEnv

BUILTIN_PREFIX = "builtin:"
PYTHON_PREFIX = "python:"
EDITOR_PORT = 5004
LOOPBACK = "127.0.0.1"

# A user's environment factory: called once per worker as
# ``factory(worker_id=i, seed=seed + i)`` (plus ``env_parameters={key: value}`` when the run
# configures environment parameters) and returns a ``mlagents_envs`` BaseEnv.
EnvFactory = Callable[..., BaseEnv]


class EnvFactoryError(ValueError):
    """A ``python:module:function`` environment cannot be imported or called as a factory."""


@attrs.frozen(kw_only=True)
class EnvLaunch:
    """Everything a worker needs to open its environment (picklable; sent to child processes).

    env_path: a Unity build, ``builtin:<Name>``, ``python:package.module:factory``, or None
    for the Editor on port 5004. env_factory: a factory given from Python (takes precedence
    over env_path; must be a module-level function to be sent to subprocess workers).
    seed: the run's seed; worker i uses ``seed + i``. Worker i's port is ``base_port + i``.
    engine: (width, height, quality_level, time_scale, target_frame_rate, capture_frame_rate).
    env_parameters: EnvironmentParameters values sent at start.
    log_folder: absolute folder for ``Player-<worker>.log``. bind_address: where our gRPC server
    listens (loopback unless asked).
    """

    env_path: str | None
    seed: int
    env_factory: EnvFactory | None = None
    base_port: int = 5005
    num_areas: int = 1
    timeout_wait: float = 60.0
    env_args: tuple[str, ...] = ()
    no_graphics: bool = False
    no_graphics_monitor: bool = False
    engine: tuple[int, int, int, float, int, int] = (84, 84, 5, 20.0, -1, 60)
    env_parameters: tuple[tuple[str, float], ...] = ()
    log_folder: str | None = None
    bind_address: str = LOOPBACK

    @property
    def is_builtin(self) -> bool:
        return self.env_factory is None and self.env_path is not None and self.env_path.startswith(BUILTIN_PREFIX)

    @property
    def is_python(self) -> bool:
        return self.env_factory is not None or (self.env_path is not None and self.env_path.startswith(PYTHON_PREFIX))

    @property
    def is_editor(self) -> bool:
        return self.env_path is None and self.env_factory is None

    def port(self, worker_id: int) -> int:
        return EDITOR_PORT if self.is_editor else self.base_port + worker_id


class OpenEnv(NamedTuple):
    """An open environment and how to read its custom stats since the last call."""

    env: BaseEnv
    get_stats: Callable[[], Mapping[str, Sequence[tuple[float, Any]]]]


def resolve_factory(env_path: str) -> EnvFactory:
    """The callable named by ``python:package.module:function``; EnvFactoryError if there is none."""
    target = env_path[len(PYTHON_PREFIX) :]
    module_name, _, attribute = target.partition(":")
    if not module_name or not attribute:
        raise EnvFactoryError(f"{env_path}: expected python:package.module:function")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is the user's module's
        raise EnvFactoryError(f"{env_path}: cannot import {module_name} ({type(error).__name__}: {error})") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise EnvFactoryError(f"{env_path}: {module_name} has no function {attribute!r}")
    return factory


def check_factory(factory: EnvFactory, *, with_parameters: bool, where: str) -> None:
    """Refuse a factory that cannot be called the way workers will call it."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # a builtin or C callable: trust it
    names = ["worker_id", "seed"] + (["env_parameters"] if with_parameters else [])
    try:
        signature.bind(**{name: None for name in names})
    except TypeError:
        raise EnvFactoryError(
            f"{where}: the environment factory must accept the keyword arguments {', '.join(names)} "
            f"(its signature is {signature})"
            + (
                "; env_parameters is passed because the run configures environment_parameters"
                if with_parameters
                else ""
            )
        ) from None


def _open_python(launch: EnvLaunch, worker_id: int, seed: int) -> OpenEnv:
    factory = launch.env_factory
    if factory is None:
        assert launch.env_path is not None
        factory = resolve_factory(launch.env_path)
    kwargs: dict[str, Any] = {"worker_id": worker_id, "seed": seed}
    if launch.env_parameters:
        kwargs["env_parameters"] = dict(launch.env_parameters)
    env = factory(**kwargs)
    if not isinstance(env, BaseEnv):
        raise EnvFactoryError(f"environment factory returned {type(env).__name__}, not a mlagents_envs BaseEnv")
    get_stats = getattr(env, "get_and_reset_stats", None)
    return OpenEnv(env, get_stats if callable(get_stats) else dict)


def open_environment(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Open worker ``worker_id``'s environment; raises the environment's own exceptions."""
    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig

    engine = EngineConfig(*launch.engine)
    seed = launch.seed + worker_id
    if launch.is_python:
        return _open_python(launch, worker_id, seed)
    if launch.is_builtin:
        from envs.builtin import make_env

        assert launch.env_path is not None
        builtin = make_env(
            launch.env_path,
            seed=seed,
            worker_id=worker_id,
            env_parameters=dict(launch.env_parameters),
            num_areas=launch.num_areas,
        )
        builtin.set_engine_config(engine)
        return OpenEnv(builtin, builtin.get_and_reset_stats)

    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
    from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    from envs.unity import UnityEnvironment

    engine_channel = EngineConfigurationChannel()
    engine_channel.set_configuration(engine)
    parameters_channel = EnvironmentParametersChannel()
    for key, value in launch.env_parameters:
        parameters_channel.set_float_parameter(key, float(value))
    stats_channel = StatsSideChannel()
    no_graphics = launch.no_graphics or (launch.no_graphics_monitor and worker_id > 0)
    editor = launch.is_editor
    env = UnityEnvironment(
        file_name=launch.env_path,
        worker_id=0 if editor else worker_id,
        base_port=EDITOR_PORT if editor else launch.base_port,
        seed=seed,
        no_graphics=no_graphics,
        timeout_wait=int(max(1, round(launch.timeout_wait))),
        additional_args=list(launch.env_args),
        side_channels=[engine_channel, parameters_channel, stats_channel],
        log_folder=None if editor else launch.log_folder,
        num_areas=launch.num_areas,
        bind_address=launch.bind_address,
    )
    return OpenEnv(env, stats_channel.get_and_reset_stats)
