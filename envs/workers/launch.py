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

from envs.parameters import ParameterValue

BUILTIN_PREFIX = "builtin:"
PYTHON_PREFIX = "python:"
# Builds or Editors the user starts (on this or other hosts): worker i waits for one to connect
# on base_port + i instead of launching it, and again after it quits.
EXTERNAL_UNITY = "external-unity"
EXTERNAL_PREFIX = "external:"  # external:PORT: a policy server that simulators call (envs.external)
EDITOR_PORT = 5004
LOOPBACK = "127.0.0.1"

# A user's environment factory: called once per worker as
# ``factory(worker_id=i, seed=seed + i)`` (plus ``env_parameters={key: value}`` when the run
# configures environment parameters: a float for a constant, an envs.parameters.ParameterValue
# for a sampler, which the environment draws from itself) and returns a ``mlagents_envs`` BaseEnv.
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
    env_parameters: EnvironmentParameters values sent at start (a curriculum's current lessons:
    a pool opening a worker later opens it with the values of then).
    log_folder: absolute folder for ``Player-<worker>.log``. bind_address: where our gRPC server
    (or the policy server of ``external:PORT``) listens (loopback unless asked). server_token:
    the secret policy clients must send (None: none).
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
    env_parameters: tuple[tuple[str, ParameterValue], ...] = ()
    log_folder: str | None = None
    bind_address: str = LOOPBACK
    server_token: str | None = None

    @property
    def is_builtin(self) -> bool:
        return self.env_factory is None and self.env_path is not None and self.env_path.startswith(BUILTIN_PREFIX)

    @property
    def is_python(self) -> bool:
        return self.env_factory is not None or (self.env_path is not None and self.env_path.startswith(PYTHON_PREFIX))

    @property
    def is_editor(self) -> bool:
        return self.env_path is None and self.env_factory is None

    @property
    def is_external_unity(self) -> bool:
        return self.env_factory is None and self.env_path == EXTERNAL_UNITY

    @property
    def is_external(self) -> bool:
        return self.env_factory is None and self.env_path is not None and self.env_path.startswith(EXTERNAL_PREFIX)

    def port(self, worker_id: int) -> int:
        if self.is_external:
            assert self.env_path is not None
            return external_port(self.env_path)
        return EDITOR_PORT if self.is_editor else self.base_port + worker_id


def external_port(env_path: str) -> int:
    """The port of ``external:PORT``; ValueError naming the problem if it is not one."""
    text = env_path[len(EXTERNAL_PREFIX) :]
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise ValueError(f"{env_path}: expected external:PORT with PORT in 0..65535 (0: any free port)")
    return int(text)


ParameterSetter = Callable[[Mapping[str, ParameterValue]], None]


class EnvironmentParametersError(EnvFactoryError):
    """A Python environment cannot take the environment parameters the run sends it."""


def _takes_no_parameters(parameters: Mapping[str, ParameterValue]) -> None:
    raise EnvironmentParametersError(
        f"this environment was opened without a way to set parameters ({sorted(parameters)})"
    )


class OpenEnv(NamedTuple):
    """An open environment, how to read its custom stats since the last call, and how to send
    it environment parameters (they take effect as the environment reads them: at its next
    episode starts)."""

    env: BaseEnv
    get_stats: Callable[[], Mapping[str, Sequence[tuple[float, Any]]]]
    set_parameters: ParameterSetter = _takes_no_parameters


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
        kwargs["env_parameters"] = {
            key: value.numbers[0] if value.is_constant else value for key, value in launch.env_parameters
        }
    env = factory(**kwargs)
    if not isinstance(env, BaseEnv):
        raise EnvFactoryError(f"environment factory returned {type(env).__name__}, not a mlagents_envs BaseEnv")
    get_stats = getattr(env, "get_and_reset_stats", None)
    return OpenEnv(env, get_stats if callable(get_stats) else dict, _python_parameter_setter(env))


def _python_parameter_setter(env: BaseEnv) -> ParameterSetter:
    """How a user's environment takes parameter updates (a curriculum's next lesson):
    ``set_env_parameter_value(key, ParameterValue)`` as the built-in environments have, else
    ``set_env_parameter(key, float)`` for constants. Without either, an update is an error
    naming what the environment lacks (it would otherwise never see the new lesson)."""
    with_values = getattr(env, "set_env_parameter_value", None)
    with_floats = getattr(env, "set_env_parameter", None)

    def set_parameters(parameters: Mapping[str, ParameterValue]) -> None:
        for key, value in parameters.items():
            if callable(with_values):
                with_values(key, value)
            elif callable(with_floats) and value.is_constant:
                with_floats(key, value.numbers[0])
            else:
                raise EnvironmentParametersError(
                    f"{type(env).__name__} cannot take the new value of environment parameter {key!r} "
                    f"({value.kind.value}): give it set_env_parameter_value(key, ParameterValue), or, for "
                    "constants, set_env_parameter(key, value)"
                )

    return set_parameters


def open_environment(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Open worker ``worker_id``'s environment; raises the environment's own exceptions."""
    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig

    engine = EngineConfig(*launch.engine)
    seed = launch.seed + worker_id
    if launch.is_python:
        return _open_python(launch, worker_id, seed)
    if launch.is_external:
        from envs.external.server import PolicyServerEnv

        server = PolicyServerEnv(launch.port(worker_id), bind_address=launch.bind_address, token=launch.server_token)
        return OpenEnv(server, dict)
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

        def set_builtin_parameters(parameters: Mapping[str, ParameterValue]) -> None:
            for key, value in parameters.items():
                builtin.set_env_parameter_value(key, value)

        return OpenEnv(builtin, builtin.get_and_reset_stats, set_builtin_parameters)

    from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
    from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
    from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

    from envs.unity import UnityEnvironment

    engine_channel = EngineConfigurationChannel()
    engine_channel.set_configuration(engine)
    parameters_channel = EnvironmentParametersChannel()

    def send_parameters(parameters: Mapping[str, ParameterValue]) -> None:
        for key, value in parameters.items():
            value.send(key, parameters_channel)  # delivered with the next step or reset

    send_parameters(dict(launch.env_parameters))
    stats_channel = StatsSideChannel()
    no_graphics = launch.no_graphics or (launch.no_graphics_monitor and worker_id > 0)
    editor = launch.is_editor
    external = launch.is_external_unity
    env = UnityEnvironment(
        file_name=None if external else launch.env_path,
        # a build started by the user connects as the Editor does, on its worker's own port
        worker_id=0 if editor or external else worker_id,
        base_port=EDITOR_PORT if editor else launch.port(worker_id) if external else launch.base_port,
        seed=seed,
        no_graphics=no_graphics,
        timeout_wait=int(max(1, round(launch.timeout_wait))),
        additional_args=list(launch.env_args),
        side_channels=[engine_channel, parameters_channel, stats_channel],
        log_folder=None if editor or external else launch.log_folder,
        num_areas=launch.num_areas,
        bind_address=launch.bind_address,
    )
    return OpenEnv(env, stats_channel.get_and_reset_stats, send_parameters)
