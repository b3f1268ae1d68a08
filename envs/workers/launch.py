"""How a worker opens its environment: a Unity build, the Editor, a built-in environment, a
user's own ``BaseEnv`` made by a Python factory, Gymnasium or PettingZoo environments. Which one a run
uses is decided once, by ``envs.workers.sources``.

:class:`EnvLaunch` is plain data (picklable) so a subprocess worker can open the same
environment as an in-process one.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs
from mlagents_envs.base_env import BaseEnv
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig

from envs.parameters import ParameterValue
from envs.workers.extras import ReportsStats, TakesParameters, TakesParameterValues

if TYPE_CHECKING:
    from mlagents_envs.side_channel.side_channel import SideChannel

    from envs.builtin import BuiltinEnv

BUILTIN_PREFIX = "builtin:"
PYTHON_PREFIX = "python:"
# Builds or Editors the user starts (on this or other hosts): worker i waits for one to connect
# on base_port + i instead of launching it, and again after it quits.
EXTERNAL_UNITY = "external-unity"
EXTERNAL_PREFIX = "external:"  # external:PORT: a policy server that simulators call (envs.external)
GYMNASIUM_PREFIX = "gymnasium:"  # gymnasium:<id> or gymnasium:<module>:<id> (envs.gymnasium)
PETTINGZOO_PREFIX = "pettingzoo:"  # pettingzoo:<module> with parallel_env() or env() (envs.pettingzoo)
EDITOR_PORT = 5004
LOOPBACK = "127.0.0.1"

# A user's environment factory: called once per worker as
# ``factory(worker_id=i, seed=seed + i)`` (plus ``env_parameters={key: value}`` when the run
# configures environment parameters: a float for a constant, an envs.parameters.ParameterValue
# for a sampler, which the environment draws from itself) and returns a ``mlagents_envs`` BaseEnv,
# which the worker resets before its first steps. A factory that declares a ``side_channels``
# parameter gets the run's side channels (engine configuration, environment parameters, stats)
# to open a Unity build with, ``UnityEnvironment(..., side_channels=side_channels)``: the
# environment parameters then travel through them (``env_parameters`` is passed only if it is
# declared too) and the build's custom stats come back through them, as for an ``--env`` build.
EnvFactory = Callable[..., BaseEnv]
SIDE_CHANNELS = "side_channels"
# Where mlagents_envs logs data on a side channel nobody registered, and how that line starts.
SIDE_CHANNEL_LOGGER = "mlagents_envs.side_channel.side_channel_manager"
UNKNOWN_CHANNEL_WARNING = "Unknown side channel data received"


class EnvFactoryError(ValueError):
    """A ``python:module:function`` environment cannot be imported or called as a factory."""


@attrs.frozen(kw_only=True)
class EnvLaunch:
    """Everything a worker needs to open its environment (picklable; sent to child processes).

    env_path: a Unity build, ``builtin:<Name>``, ``python:package.module:factory``, or None
    for the Editor on port 5004. env_factory: a factory given from Python (takes precedence
    over env_path; must be a module-level function to be sent to subprocess workers).
    seed: the run's seed; worker i uses ``seed + i``. Worker i's port is ``base_port + i``.
    engine: the engine configuration sent to the build (and a built-in environment) at start.
    env_parameters: EnvironmentParameters values sent at start (a curriculum's current lessons:
    a pool opening a worker later opens it with the values of then).
    log_folder: absolute folder for ``Player-<worker>.log``. bind_address: where our gRPC server
    (or the policy server of ``external:PORT``) listens (loopback unless asked). server_token:
    the secret policy clients must send (None: none). env_kwargs: keyword arguments a
    Gymnasium or PettingZoo environment is made with. envs_per_worker: copies each worker steps
    as one behavior (Gymnasium). group_agents: a PettingZoo environment's agents are one
    multi-agent group (the run trains them with POCA).
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
    engine: EngineConfig = EngineConfig(84, 84, 5, 20.0, -1, 60)  # mlagents-learn's defaults
    env_parameters: tuple[tuple[str, ParameterValue], ...] = ()
    log_folder: str | None = None
    bind_address: str = LOOPBACK
    server_token: str | None = None
    env_kwargs: tuple[tuple[str, Any], ...] = ()
    envs_per_worker: int = 1
    group_agents: bool = False


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


def declares(factory: EnvFactory, name: str) -> bool:
    """Whether ``factory``'s signature names the parameter ``name`` (``**kwargs`` does not count)."""
    try:
        parameter = inspect.signature(factory).parameters.get(name)
    except (TypeError, ValueError):
        return False  # a builtin or C callable
    return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)


def check_factory(factory: EnvFactory, *, with_parameters: bool, where: str) -> None:
    """Refuse a factory that cannot be called the way workers will call it."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # a builtin or C callable: trust it
    names = ["worker_id", "seed"]
    if declares(factory, SIDE_CHANNELS):
        names.append(SIDE_CHANNELS)
        with_parameters = False  # they go through the channels
    if with_parameters:
        names.append("env_parameters")
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


def open_python(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Worker ``worker_id``'s environment made by the user's factory (see EnvFactory), reset."""
    seed = launch.seed + worker_id
    factory = launch.env_factory
    if factory is None:
        assert launch.env_path is not None
        factory = resolve_factory(launch.env_path)
    kwargs: dict[str, Any] = {"worker_id": worker_id, "seed": seed}
    channels = RunChannels(launch) if declares(factory, SIDE_CHANNELS) else None
    if channels is not None:
        kwargs[SIDE_CHANNELS] = channels.as_list()
    if launch.env_parameters and (channels is None or declares(factory, "env_parameters")):
        kwargs["env_parameters"] = {
            key: value.numbers[0] if value.is_constant else value for key, value in launch.env_parameters
        }
    env = factory(**kwargs)
    if not isinstance(env, BaseEnv):
        raise EnvFactoryError(f"environment factory returned {type(env).__name__}, not a mlagents_envs BaseEnv")
    from envs.builtin import BuiltinEnv

    # BaseEnv's contract, as ML-Agents' env managers keep it: reset before get_steps. A built-in
    # environment is constructed reset (BuiltinEnv): another reset would only redraw its first
    # episodes, and a seed would play differently as a factory's than as builtin:<Name>.
    if not isinstance(env, BuiltinEnv):
        try:
            env.reset()
        except BaseException:
            with contextlib.suppress(Exception):  # the reset's error is the one to report
                env.close()
            raise
    if channels is not None:
        return OpenEnv(env, channels.stats.get_and_reset_stats, channels.send_parameters)
    get_stats = env.get_and_reset_stats if isinstance(env, ReportsStats) else dict
    return OpenEnv(env, get_stats, _python_parameter_setter(env))


def _python_parameter_setter(env: BaseEnv) -> ParameterSetter:
    """How a user's environment takes parameter updates (a curriculum's next lesson):
    ``set_env_parameter_value(key, ParameterValue)`` as the built-in environments have, else
    ``set_env_parameter(key, float)`` for constants. Without either, an update is an error
    naming what the environment lacks (it would otherwise never see the new lesson)."""

    def set_parameters(parameters: Mapping[str, ParameterValue]) -> None:
        for key, value in parameters.items():
            if isinstance(env, TakesParameterValues):
                env.set_env_parameter_value(key, value)
            elif isinstance(env, TakesParameters) and value.is_constant:
                env.set_env_parameter(key, value.numbers[0])
            else:
                raise EnvironmentParametersError(
                    f"{type(env).__name__} cannot take the new value of environment parameter {key!r} "
                    f"({value.kind.value}): give it set_env_parameter_value(key, ParameterValue), or, for "
                    "constants, set_env_parameter(key, value)"
                )

    return set_parameters


class RunChannels:
    """The run's side channels to a Unity build: engine configuration and environment
    parameters (``launch``'s, queued: they go with the next reset or step; later parameters
    through :meth:`send_parameters`) and the build's custom stats."""

    def __init__(self, launch: EnvLaunch) -> None:
        from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
        from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
        from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

        self.engine = EngineConfigurationChannel()
        self.engine.set_configuration(launch.engine)
        self.parameters = EnvironmentParametersChannel()
        self.stats = StatsSideChannel()
        self.send_parameters(dict(launch.env_parameters))

    def as_list(self) -> list[SideChannel]:
        return [self.engine, self.parameters, self.stats]

    def send_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        for key, value in parameters.items():
            value.send(key, self.parameters)


class _OncePerUnknownChannel(logging.Filter):
    """Lets mlagents_envs' "Unknown side channel data received. Channel type: <id>." through
    once per channel id (it comes with every message on a channel nobody registered), saying
    so; every other record passes."""

    def __init__(self) -> None:
        from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

        super().__init__()
        self._seen: set[str] = set()
        self._stats_channel = str(StatsSideChannel().channel_id)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if not message.startswith(UNKNOWN_CHANNEL_WARNING):
            return True
        if message in self._seen:
            return False
        self._seen.add(message)
        record.msg = f"{message} Its data is dropped, from now on without another warning."
        if self._stats_channel in message:
            record.msg += (
                " It is ML-Agents' stats channel: the build's custom stats are lost. A python: factory that "
                f"declares a {SIDE_CHANNELS!r} parameter gets the run's channels to pass to UnityEnvironment."
            )
        record.args = ()
        return True


def warn_once_per_unknown_side_channel() -> None:
    """From now on, mlagents_envs warns once per channel that data arrives on a side channel
    nobody reads (a fresh count: each environment opened warns again)."""
    channel_logger = logging.getLogger(SIDE_CHANNEL_LOGGER)
    for old in [f for f in channel_logger.filters if isinstance(f, _OncePerUnknownChannel)]:
        channel_logger.removeFilter(old)
    channel_logger.addFilter(_OncePerUnknownChannel())


def open_builtin(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Worker ``worker_id``'s built-in environment (``builtin:<Name>``), constructed reset."""
    from envs.builtin import make_env

    assert launch.env_path is not None
    builtin = make_env(
        launch.env_path,
        seed=launch.seed + worker_id,
        worker_id=worker_id,
        env_parameters=dict(launch.env_parameters),
        num_areas=launch.num_areas,
    )
    builtin.set_engine_config(launch.engine)
    return OpenEnv(builtin, builtin.get_and_reset_stats, _builtin_parameter_setter(builtin))


def open_gymnasium(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Worker ``worker_id``'s copies of a Gymnasium environment (``gymnasium:<id>``) as one
    behavior, reset with the run's environment parameters as reset options."""
    from envs.gymnasium import gymnasium_env

    assert launch.env_path is not None
    env = gymnasium_env(
        launch.env_path[len(GYMNASIUM_PREFIX) :],
        copies=launch.envs_per_worker,
        seed=launch.seed,
        worker_id=worker_id,
        env_kwargs=dict(launch.env_kwargs),
        env_parameters=dict(launch.env_parameters),
    )
    return OpenEnv(env, env.get_and_reset_stats, _builtin_parameter_setter(env))


def open_pettingzoo(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Worker ``worker_id``'s PettingZoo environment (``pettingzoo:<module>``), its agents as
    behaviors by name, reset with the run's environment parameters as reset options."""
    from envs.pettingzoo import pettingzoo_env

    assert launch.env_path is not None
    env = pettingzoo_env(
        launch.env_path[len(PETTINGZOO_PREFIX) :],
        seed=launch.seed,
        worker_id=worker_id,
        env_kwargs=dict(launch.env_kwargs),
        env_parameters=dict(launch.env_parameters),
        groups=launch.group_agents,
    )
    return OpenEnv(env, env.get_and_reset_stats, _builtin_parameter_setter(env))


def _builtin_parameter_setter(env: BuiltinEnv) -> ParameterSetter:
    def set_parameters(parameters: Mapping[str, ParameterValue]) -> None:
        for key, value in parameters.items():
            env.set_env_parameter_value(key, value)

    return set_parameters


def open_build(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Launch worker ``worker_id``'s Unity build, which connects on ``base_port + worker_id``."""
    return _open_unity(launch, worker_id, launch.env_path, port_worker=worker_id, base_port=launch.base_port)


def open_editor(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Wait for the Editor to connect on port 5004 (the user presses Play)."""
    return _open_unity(launch, worker_id, None, port_worker=0, base_port=EDITOR_PORT)


def open_external_build(launch: EnvLaunch, worker_id: int) -> OpenEnv:
    """Wait for a build or Editor the user starts to connect on ``base_port + worker_id``."""
    return _open_unity(launch, worker_id, None, port_worker=0, base_port=launch.base_port + worker_id)


def _open_unity(
    launch: EnvLaunch, worker_id: int, file_name: str | None, *, port_worker: int, base_port: int
) -> OpenEnv:
    from envs.unity import UnityEnvironment

    channels = RunChannels(launch)
    env = UnityEnvironment(
        file_name=file_name,
        worker_id=port_worker,
        base_port=base_port,
        seed=launch.seed + worker_id,
        no_graphics=launch.no_graphics or (launch.no_graphics_monitor and worker_id > 0),
        timeout_wait=int(max(1, round(launch.timeout_wait))),
        additional_args=list(launch.env_args),
        side_channels=channels.as_list(),
        # only a build this run launches writes its log where the run keeps them
        log_folder=launch.log_folder if file_name is not None else None,
        num_areas=launch.num_areas,
        bind_address=launch.bind_address,
    )
    return OpenEnv(env, channels.stats.get_and_reset_stats, channels.send_parameters)
