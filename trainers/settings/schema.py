"""The run configuration's schema: frozen attrs classes for every section of an
``mlagents-learn`` YAML file, with ML-Agents' defaults (REFERENCE 1.4).

Two kinds of fields are not plain defaults, both so that the written-back
``configuration.yaml`` loads in ML-Agents 0.28 and in agents-learn alike:

- Values that default to another field (``beta_schedule`` follows ``learning_rate_schedule``,
  ``team_change`` is 5 x ``save_steps``...) are resolved when the object is built, as
  ML-Agents does (an attrs default computed from the fields before it), so the file holds the
  value in effect: ML-Agents 0.28 rejects ``null`` there. ``attrs.evolve`` of the field they
  follow does not move them.
- Keys ML-Agents 0.28 does not know (``shared_critic``, ``even_checkpoints``,
  ``timeout_wait``, ``no_graphics_monitor``) are stored as ``None`` until given, under a
  private name read through a property of the public name, and marked with ``NEWER_KEY``: the
  file leaves them out unless the user set them.

Mappings and tuples inside these classes are read-only by convention: build variants with
``attrs.evolve``.
"""

from __future__ import annotations

import enum
import logging
import os
from typing import Any

import attrs

from trainers.exceptions import ConfigError
from trainers.settings.text import short_repr

logger = logging.getLogger(__name__)

# Field metadata: a key ML-Agents 0.28 does not know (a later ML-Agents or agents-learn
# only); None until given, and left out of the written configuration while None.
NEWER_KEY = "agents_learn_newer_than_mlagents_0_28"


def _follows(name: str) -> Any:
    """A default equal to the field ``name`` defined before it (ML-Agents' derived defaults)."""
    return attrs.Factory(lambda self: getattr(self, name), takes_self=True)


class ScheduleType(enum.StrEnum):
    """How a learning rate, beta or epsilon moves over ``max_steps``."""

    CONSTANT = "constant"
    LINEAR = "linear"


class EncoderType(enum.StrEnum):
    """Visual observation encoders, with the smallest image each accepts (REFERENCE 1.4)."""

    SIMPLE = "simple"  # >= 20x20
    NATURE_CNN = "nature_cnn"  # >= 36x36
    RESNET = "resnet"  # >= 15x15
    MATCH3 = "match3"  # >= 5x5
    FULLY_CONNECTED = "fully_connected"

    @property
    def min_resolution(self) -> int:
        """Smallest image side (pixels) the encoder accepts."""
        return {"simple": 20, "nature_cnn": 36, "resnet": 15, "match3": 5, "fully_connected": 1}[self.value]


class ConditioningType(enum.StrEnum):
    """How goal observations condition the network: hypernetwork or plain input."""

    HYPER = "hyper"
    NONE = "none"


class Activation(enum.StrEnum):
    """The hidden layers' nonlinearity: ML-Agents' Swish, or Stable-Baselines3's choices
    (tanh for its PPO, ReLU for its SAC). An agents-learn key."""

    SWISH = "swish"
    TANH = "tanh"
    RELU = "relu"


class Initialization(enum.StrEnum):
    """The networks' starting weights, an agents-learn key: ML-Agents' (He-normal with per-role
    gains, zero biases) or PyTorch's defaults, as Stable-Baselines3's SAC starts
    (:mod:`trainers.networks.initialization`)."""

    MLAGENTS = "mlagents"
    PYTORCH = "pytorch"


class AdvantageNormalization(enum.StrEnum):
    """Over which samples PPO's and POCA's advantages are brought to zero mean and unit variance:
    the update's whole buffer (ML-Agents) or each minibatch on its own (Stable-Baselines3). An
    agents-learn key."""

    BUFFER = "buffer"
    MINIBATCH = "minibatch"


class BufferInitActions(enum.StrEnum):
    """How SAC acts for its first ``buffer_init_steps`` steps, an agents-learn key: with its
    own policy (``policy``, ML-Agents') or uniformly at random over the action space
    (``uniform``, Stable-Baselines3's ``learning_starts``)."""

    POLICY = "policy"
    UNIFORM = "uniform"


class TargetCritic(enum.StrEnum):
    """What SAC's Q networks bootstrap from, an agents-learn key: ML-Agents' value network and
    its slowly following copy (``value``), or Stable-Baselines3's target Q networks (``q``: the
    smaller of the two target Qs at the policy's own next action, less its entropy term; the
    policy loss then takes the smaller of the twin Qs, not the first alone)."""

    VALUE = "value"
    Q = "q"


class RewardSignalType(enum.StrEnum):
    """Keys of ``reward_signals``. A StrEnum, so ``signals["extrinsic"]`` works too."""

    EXTRINSIC = "extrinsic"
    GAIL = "gail"
    CURIOSITY = "curiosity"
    RND = "rnd"


class MeasureType(enum.StrEnum):
    """What a curriculum lesson's completion criteria measure."""

    PROGRESS = "progress"  # fraction of max_steps done, 0-1
    REWARD = "reward"  # smoothed mean episode reward
    ELO = "Elo"  # self-play rating


# ---------------------------------------------------------------- network


@attrs.frozen(kw_only=True)
class MemorySettings:
    """Recurrent memory (LSTM). ``memory_size`` is the LSTM state width (even: half is the
    hidden state, half the cell state); ``sequence_length`` the steps per training sequence."""

    sequence_length: int = 64
    memory_size: int = 128


@attrs.frozen(kw_only=True)
class NetworkSettings:
    """Body of the policy/critic (or of a reward signal's own network)."""

    normalize: bool = False
    hidden_units: int = 128
    num_layers: int = 2  # hidden layers; 0 builds one, like 1, as mlagents-learn does (networks.MLP)
    vis_encode_type: EncoderType = EncoderType.SIMPLE
    memory: MemorySettings | None = None
    goal_conditioning_type: ConditioningType = ConditioningType.HYPER
    deterministic: bool = False
    _activation: Activation | None = attrs.field(default=None, alias="activation", metadata={NEWER_KEY: True})
    _initialization: Initialization | None = attrs.field(
        default=None, alias="initialization", metadata={NEWER_KEY: True}
    )

    @property
    def activation(self) -> Activation:
        """The hidden layers' nonlinearity; Swish (ML-Agents') unless set."""
        return self._activation or Activation.SWISH

    @property
    def initialization(self) -> Initialization:
        """The networks' starting weights; ML-Agents' unless set."""
        return self._initialization or Initialization.MLAGENTS


# ---------------------------------------------------------------- hyperparameters


# ML-Agents' values of keys it does not have: the floor of PPO's and POCA's linear epsilon
# schedule, and Adam's epsilon (torch's default, which ML-Agents keeps).
DEFAULT_EPSILON_FLOOR = 0.1
DEFAULT_ADAM_EPSILON = 1e-8


@attrs.frozen(kw_only=True)
class Hyperparameters:
    """Keys every trainer type shares. ``batch_size``/``buffer_size`` count agent steps."""

    batch_size: int = 1024
    buffer_size: int = 10240
    learning_rate: float = 3.0e-4
    learning_rate_schedule: ScheduleType = ScheduleType.CONSTANT

    @property
    def uniform_warmup_steps(self) -> int:
        """The first agent steps the behavior acts uniformly at random (0: from its policy)."""
        return 0


def uniform_warmup_steps(hyperparameters: object) -> int:
    """:attr:`Hyperparameters.uniform_warmup_steps`, 0 for a plugin's hyperparameters class of
    its own (ML-Agents' plugin shape names any class)."""
    return hyperparameters.uniform_warmup_steps if isinstance(hyperparameters, Hyperparameters) else 0


@attrs.frozen(kw_only=True)
class POCASettings(Hyperparameters):
    """MA-POCA, and the keys PPO shares with it. ``beta``: entropy bonus; ``epsilon``:
    surrogate clip; ``lambd``: GAE lambda. POCA has no ``shared_critic`` (its centralised
    critic is the point)."""

    learning_rate_schedule: ScheduleType = ScheduleType.LINEAR
    beta: float = 5.0e-3
    epsilon: float = 0.2
    lambd: float = 0.95
    num_epoch: int = 3
    # The learning-rate schedule unless set.
    beta_schedule: ScheduleType = _follows("learning_rate_schedule")
    epsilon_schedule: ScheduleType = _follows("learning_rate_schedule")
    # agents-learn keys, for Stable-Baselines3's PPO where ML-Agents differs (docs/gymnasium.md)
    _epsilon_floor: float | None = attrs.field(default=None, alias="epsilon_floor", metadata={NEWER_KEY: True})
    _max_grad_norm: float | None = attrs.field(default=None, alias="max_grad_norm", metadata={NEWER_KEY: True})
    _adam_epsilon: float | None = attrs.field(default=None, alias="adam_epsilon", metadata={NEWER_KEY: True})
    _advantage_normalization: AdvantageNormalization | None = attrs.field(
        default=None, alias="advantage_normalization", metadata={NEWER_KEY: True}
    )
    _log_std_init: float | None = attrs.field(default=None, alias="log_std_init", metadata={NEWER_KEY: True})

    @property
    def epsilon_floor(self) -> float:
        """Where a linear ``epsilon_schedule`` ends: ML-Agents' 0.1 unless set (SB3's ``lin_0.2``: 0)."""
        return DEFAULT_EPSILON_FLOOR if self._epsilon_floor is None else self._epsilon_floor

    @property
    def max_grad_norm(self) -> float | None:
        """The norm each step's gradient is clipped to (all the update's networks together);
        None unless set: no clipping, as ML-Agents (SB3's PPO: 0.5)."""
        return self._max_grad_norm

    @property
    def adam_epsilon(self) -> float:
        """Adam's epsilon: torch's and ML-Agents' 1e-8 unless set (SB3's PPO: 1e-5)."""
        return DEFAULT_ADAM_EPSILON if self._adam_epsilon is None else self._adam_epsilon

    @property
    def log_std_init(self) -> float | None:
        """The continuous actions' starting log standard deviation on the policy's [-1, 1]
        actions: SB3's ``policy_kwargs.log_std_init`` where the environment's bounds are [-1, 1]
        (MuJoCo's), SB3's minus ln of half the bounds' range elsewhere (a Gymnasium adapter maps
        [-1, 1] onto the bounds; SB3's PPO clips at them). None unless set: ML-Agents' start, 0 on
        actions that are divided by 3 on their way (ln(1/3) = -1.10 in these units)."""
        return self._log_std_init

    @property
    def advantage_normalization(self) -> AdvantageNormalization:
        """Over the update's buffer (ML-Agents') unless set (SB3's PPO: per minibatch)."""
        return self._advantage_normalization or AdvantageNormalization.BUFFER


@attrs.frozen(kw_only=True)
class PPOSettings(POCASettings):
    """PPO: POCA's keys plus ``shared_critic`` (value heads on the actor's encoder; a key
    newer than ML-Agents 0.28)."""

    _shared_critic: bool | None = attrs.field(default=None, alias="shared_critic", metadata={NEWER_KEY: True})

    @property
    def shared_critic(self) -> bool:
        """Value heads on the actor's encoder; False unless set."""
        return bool(self._shared_critic)


@attrs.frozen(kw_only=True)
class SACSettings(Hyperparameters):
    """SAC. ``buffer_size`` is the replay capacity; ``steps_per_update`` agent steps per
    gradient step (a float: 10.0 in ML-Agents' configs); ``tau`` the target-network rate."""

    batch_size: int = 128
    buffer_size: int = 50000
    buffer_init_steps: int = 0
    tau: float = 0.005
    steps_per_update: float = 1.0
    save_replay_buffer: bool = False
    init_entcoef: float = 1.0
    # Agent steps per reward-signal update; steps_per_update unless set.
    reward_signal_steps_per_update: float = _follows("steps_per_update")
    _target_critic: TargetCritic | None = attrs.field(default=None, alias="target_critic", metadata={NEWER_KEY: True})
    _buffer_init_actions: BufferInitActions | None = attrs.field(
        default=None, alias="buffer_init_actions", metadata={NEWER_KEY: True}
    )

    @property
    def target_critic(self) -> TargetCritic:
        """What the Q networks bootstrap from: ML-Agents' value network unless set."""
        return self._target_critic or TargetCritic.VALUE

    @property
    def buffer_init_actions(self) -> BufferInitActions:
        """How the first ``buffer_init_steps`` steps are acted: the policy's (ML-Agents') unless set."""
        return self._buffer_init_actions or BufferInitActions.POLICY

    @property
    def uniform_warmup_steps(self) -> int:
        return self.buffer_init_steps if self.buffer_init_actions == BufferInitActions.UNIFORM else 0


# ---------------------------------------------------------------- reward signals


@attrs.frozen(kw_only=True)
class RewardSignalSettings:
    """Keys every reward signal has: discount ``gamma``, weight ``strength``; and
    ``normalize``, an agents-learn key (PPO and POCA): the signal's rewards are learned divided
    by the running standard deviation of their discounted return, Stable-Baselines3's
    ``VecNormalize`` reward scaling (:mod:`trainers.reward_signals.return_scale`)."""

    gamma: float = 0.99
    strength: float = 1.0
    network_settings: NetworkSettings = attrs.Factory(NetworkSettings)
    _normalize: bool | None = attrs.field(default=None, alias="normalize", metadata={NEWER_KEY: True})

    @property
    def normalize(self) -> bool:
        """Scale the learned rewards by their discounted return's spread; False unless set."""
        return bool(self._normalize)


@attrs.frozen(kw_only=True)
class ExtrinsicSettings(RewardSignalSettings):
    """The environment's own reward."""


@attrs.frozen(kw_only=True)
class CuriositySettings(RewardSignalSettings):
    """Intrinsic curiosity. ``encoding_size`` is deprecated (use network_settings.hidden_units)."""

    learning_rate: float = 3.0e-4
    encoding_size: int | None = None


@attrs.frozen(kw_only=True)
class RNDSettings(RewardSignalSettings):
    """Random network distillation. ``encoding_size`` is deprecated (ML-Agents 0.28 accepts it
    and writes it back; use network_settings.hidden_units)."""

    learning_rate: float = 1.0e-4
    encoding_size: int | None = None


@attrs.frozen(kw_only=True)
class GAILSettings(RewardSignalSettings):
    """GAIL: a discriminator against the demonstrations in ``demo_path`` (a .demo file/folder)."""

    demo_path: str
    learning_rate: float = 3.0e-4
    encoding_size: int | None = None
    use_actions: bool = False
    use_vail: bool = False


def reward_signal_types() -> dict[RewardSignalType, type[RewardSignalSettings]]:
    """Reward signal key -> its settings class."""
    return {
        RewardSignalType.EXTRINSIC: ExtrinsicSettings,
        RewardSignalType.GAIL: GAILSettings,
        RewardSignalType.CURIOSITY: CuriositySettings,
        RewardSignalType.RND: RNDSettings,
    }


def _default_reward_signals() -> dict[RewardSignalType, RewardSignalSettings]:
    return {RewardSignalType.EXTRINSIC: ExtrinsicSettings()}


# ---------------------------------------------------------------- imitation, self-play


@attrs.frozen(kw_only=True)
class BehavioralCloningSettings:
    """Behavioral cloning from ``demo_path`` for the first ``steps`` (0: the whole run).
    ``num_epoch``/``batch_size`` of None mean the trainer's own."""

    demo_path: str
    steps: int = 0
    strength: float = 1.0
    samples_per_update: int = 0
    num_epoch: int | None = None
    batch_size: int | None = None


@attrs.frozen(kw_only=True)
class SelfPlaySettings:
    """Self-play (ghost trainer). Steps are trainer steps; ``window`` snapshots are kept."""

    save_steps: int = 20000
    # Steps between learning-team changes; 5 x save_steps unless set.
    team_change: int = attrs.Factory(lambda self: 5 * self.save_steps, takes_self=True)
    swap_steps: int = 2000
    window: int = 10
    play_against_latest_model_ratio: float = 0.5
    initial_elo: float = 1200.0


# ---------------------------------------------------------------- one behavior


@attrs.frozen(kw_only=True)
class TrainerSettings:
    """Settings of one behavior. ``hyperparameters`` is an instance of the class registered
    for ``trainer_type`` (PPOSettings for "ppo"...). Steps are agent steps."""

    trainer_type: str = "ppo"
    hyperparameters: Hyperparameters = attrs.Factory(PPOSettings)
    network_settings: NetworkSettings = attrs.Factory(NetworkSettings)
    reward_signals: dict[RewardSignalType, RewardSignalSettings] = attrs.Factory(_default_reward_signals)
    init_path: str | None = None
    keep_checkpoints: int = 5
    _even_checkpoints: bool | None = attrs.field(default=None, alias="even_checkpoints", metadata={NEWER_KEY: True})
    checkpoint_interval: int = 500000
    max_steps: int = 500000
    time_horizon: int = 64
    summary_freq: int = 50000
    threaded: bool = False
    self_play: SelfPlaySettings | None = None
    behavioral_cloning: BehavioralCloningSettings | None = None

    @property
    def even_checkpoints(self) -> bool:
        """Checkpoints spread evenly over ``max_steps`` (newer than ML-Agents 0.28); False unless set."""
        return bool(self._even_checkpoints)

    @property
    def effective_checkpoint_interval(self) -> int:
        """Steps between checkpoints: ``max_steps // keep_checkpoints`` with
        ``even_checkpoints``, else ``checkpoint_interval``."""
        if self.even_checkpoints and self.keep_checkpoints > 0:
            return max(1, self.max_steps // self.keep_checkpoints)
        return self.checkpoint_interval


# ---------------------------------------------------------------- environment parameters


@attrs.frozen(kw_only=True)
class ConstantSampler:
    """A fixed value (0.0 when a ``constant`` sampler leaves it out, as in ML-Agents). ``seed``
    -1: Unity picks."""

    value: float = 0.0
    seed: int = -1


@attrs.frozen(kw_only=True)
class UniformSampler:
    """Uniform in [min_value, max_value], drawn by Unity at each reset."""

    min_value: float = 0.0
    max_value: float = 1.0
    seed: int = -1


@attrs.frozen(kw_only=True)
class GaussianSampler:
    """Normal(mean, st_dev), drawn by Unity at each reset."""

    mean: float = 1.0
    st_dev: float = 1.0
    seed: int = -1


@attrs.frozen(kw_only=True)
class MultiRangeUniformSampler:
    """Uniform over the union of ``intervals`` ((min, max) pairs)."""

    intervals: tuple[tuple[float, float], ...] = ((0.0, 1.0),)
    seed: int = -1


Sampler = ConstantSampler | UniformSampler | GaussianSampler | MultiRangeUniformSampler


def sampler_types() -> dict[str, type]:
    """``sampler_type`` name -> sampler class."""
    return {
        "constant": ConstantSampler,
        "uniform": UniformSampler,
        "gaussian": GaussianSampler,
        "multirangeuniform": MultiRangeUniformSampler,
    }


@attrs.frozen(kw_only=True)
class CompletionCriteria:
    """When a lesson ends: ``measure`` of ``behavior`` reaches ``threshold`` after at least
    ``min_lesson_length`` episodes (smoothed 0.25 old + 0.75 new if ``signal_smoothing``)."""

    behavior: str
    measure: MeasureType = MeasureType.REWARD
    min_lesson_length: int = 0
    signal_smoothing: bool = True
    threshold: float = 0.0
    require_reset: bool = False


@attrs.frozen(kw_only=True)
class Lesson:
    """One curriculum lesson: the parameter's ``value`` until ``completion_criteria`` hold
    (None on the last lesson)."""

    name: str
    value: Sampler
    completion_criteria: CompletionCriteria | None = None


@attrs.frozen(kw_only=True)
class EnvironmentParameterSettings:
    """One environment parameter. A constant or a sampler is a one-lesson curriculum named
    after the parameter, as in ML-Agents."""

    curriculum: tuple[Lesson, ...]


# ---------------------------------------------------------------- run-wide sections


@attrs.frozen(kw_only=True)
class EnvironmentSettings:
    """Where steps come from. ``env_path`` None: the Unity Editor on port 5004;
    ``builtin:<Name>``: a built-in environment. Worker i uses ``base_port + i`` and
    ``seed + i``; ``seed`` -1 means a random seed picked at run time."""

    env_path: str | None = None
    env_args: tuple[str, ...] | None = None
    base_port: int = 5005
    num_envs: int = 1
    num_areas: int = 1
    _timeout_wait: int | None = attrs.field(default=None, alias="timeout_wait", metadata={NEWER_KEY: True})
    seed: int = -1
    max_lifetime_restarts: int = 10
    restarts_rate_limit_n: int = 1
    restarts_rate_limit_period_s: int = 60
    _ray_address: str | None = attrs.field(default=None, alias="ray_address", metadata={NEWER_KEY: True})
    _envs_per_worker: int | None = attrs.field(default=None, alias="envs_per_worker", metadata={NEWER_KEY: True})
    _env_kwargs: dict[str, Any] | None = attrs.field(default=None, alias="env_kwargs", metadata={NEWER_KEY: True})

    @property
    def envs_per_worker(self) -> int | None:
        """Copies of the environment each worker steps as one behavior (a Gymnasium
        environment's; newer than ML-Agents 0.28); None: the environment's default."""
        return self._envs_per_worker

    @property
    def env_kwargs(self) -> dict[str, Any]:
        """Keyword arguments the environment is made with (``gymnasium.make(id, **env_kwargs)``;
        newer than ML-Agents 0.28); empty unless set."""
        return dict(self._env_kwargs or {})

    @property
    def ray_address(self) -> str | None:
        """The Ray cluster the workers run on as env runners (``local``, ``auto`` or an
        address); None: on this machine, without Ray (newer than ML-Agents 0.28)."""
        return self._ray_address

    @property
    def timeout_wait(self) -> int:
        """Seconds to wait for a Unity worker to connect or answer (newer than ML-Agents 0.28); 60 unless set."""
        return 60 if self._timeout_wait is None else self._timeout_wait


@attrs.frozen(kw_only=True)
class EngineSettings:
    """Sent to Unity through the EngineConfiguration side channel."""

    width: int = 84
    height: int = 84
    quality_level: int = 5
    time_scale: float = 20.0
    target_frame_rate: int = -1
    capture_frame_rate: int = 60
    no_graphics: bool = False
    _no_graphics_monitor: bool | None = attrs.field(
        default=None, alias="no_graphics_monitor", metadata={NEWER_KEY: True}
    )

    @property
    def no_graphics_monitor(self) -> bool:
        """Worker 0 renders, the others run without graphics (newer than ML-Agents 0.28); False unless set."""
        return bool(self._no_graphics_monitor)


@attrs.frozen(kw_only=True)
class CheckpointSettings:
    """Results location and resume/initialize choices. ``load_model`` and ``train_model``
    are deprecated (``load_model`` is read as ``resume``)."""

    run_id: str = "ppo"
    initialize_from: str | None = None
    load_model: bool = False
    resume: bool = False
    force: bool = False
    train_model: bool = False
    inference: bool = False
    results_dir: str = "results"

    @property
    def write_path(self) -> str:
        """``<results_dir>/<run_id>``: where this run writes."""
        return os.path.join(self.results_dir, self.run_id)

    @property
    def run_logs_dir(self) -> str:
        """``<results_dir>/<run_id>/run_logs``: timers.json, training_status.json."""
        return os.path.join(self.write_path, "run_logs")

    @property
    def maybe_init_path(self) -> str | None:
        """``<results_dir>/<initialize_from>`` or None."""
        if self.initialize_from is None:
            return None
        return os.path.join(self.results_dir, self.initialize_from)


#: ``torch_settings.device`` (``--torch-device``) for "measure where each behavior trains faster".
AUTO_DEVICE = "auto"


@attrs.frozen(kw_only=True)
class TorchSettings:
    """``device``: cpu, cuda, cuda:N, mps, xpu, or auto (None: auto): with a GPU at hand, each
    behavior trains where its training measures faster (trainers.loop.device_choice)."""

    device: str | None = None


# ---------------------------------------------------------------- the whole run


@attrs.frozen(kw_only=True)
class RunOptions:
    """A whole run configuration. ``behaviors`` are already merged over ``default_settings``.

    ``config_specified`` is not a YAML key: False when no configuration file was given, in
    which case every behavior gets the defaults (with a warning) as in ML-Agents.
    """

    behaviors: dict[str, TrainerSettings] = attrs.Factory(dict)
    default_settings: TrainerSettings | None = None
    environment_parameters: dict[str, EnvironmentParameterSettings] = attrs.Factory(dict)
    env_settings: EnvironmentSettings = attrs.Factory(EnvironmentSettings)
    engine_settings: EngineSettings = attrs.Factory(EngineSettings)
    checkpoint_settings: CheckpointSettings = attrs.Factory(CheckpointSettings)
    torch_settings: TorchSettings = attrs.Factory(TorchSettings)
    debug: bool = False
    config_specified: bool = True

    def behavior_settings(self, name: str) -> TrainerSettings:
        """Settings for behavior ``name`` (``Name?team=N`` accepted); see ``behavior_settings``."""
        return behavior_settings(self, name)


def behavior_settings(options: RunOptions, name: str) -> TrainerSettings:
    """Settings for behavior ``name`` (``Name?team=N`` accepted).

    Configured behaviors as written; others get ``default_settings`` if it exists, the
    defaults (with a warning) when no configuration file was given, else ConfigError.
    With ``checkpoint_settings.initialize_from`` set, ``init_path`` is resolved by
    ``initialize_from_path``.
    """
    base = name.split("?", 1)[0]
    if base in options.behaviors:
        settings = options.behaviors[base]
    elif options.default_settings is not None:
        settings = options.default_settings
    elif not options.config_specified:
        logger.warning("Behavior %s is not in a configuration file; the default settings are used.", base)
        settings = TrainerSettings()
    else:
        known = ", ".join(sorted(options.behaviors)) or "none"
        raise ConfigError(
            f"behavior {short_repr(base)} is not in the run configuration (configured: {known}); add it "
            "under 'behaviors:' or add 'default_settings:' for behaviors not listed"
        )
    init_dir = options.checkpoint_settings.maybe_init_path
    if init_dir is not None:
        settings = attrs.evolve(settings, init_path=initialize_from_path(settings.init_path, init_dir, base))
    return settings


# The file a behavior starts from in another run's folder: ML-Agents' DEFAULT_CHECKPOINT_NAME,
# and the name trainers.files.checkpoints gives the latest checkpoint.
INIT_CHECKPOINT = "checkpoint.pt"


def initialize_from_path(init_path: str | None, init_dir: str, behavior: str) -> str:
    """A behavior's ``init_path`` under ``initialize_from`` (``init_dir`` is
    ``<results_dir>/<initialize_from>``), by ML-Agents' rule (``setup_init_path``), so the
    written configuration.yaml holds what 0.28 writes and accepts: unset ->
    ``<init_dir>/<behavior>/checkpoint.pt``; a bare file name -> that file in the same folder;
    a path -> kept."""
    if init_path is None:
        return os.path.join(init_dir, behavior, INIT_CHECKPOINT)
    if not os.path.dirname(init_path):
        return os.path.join(init_dir, behavior, init_path)
    return init_path
