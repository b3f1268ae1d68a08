"""Shared machinery of the built-in environments: agent ids, per-behavior steps, actions, stats.

A built-in environment behaves like a Unity build seen through ``mlagents_envs``:

- behavior names are ``Name?team=0``; a behavior's spec appears in ``behavior_specs`` with the
  first step that carries one of its agents (so ``behavior_specs`` can grow mid-run);
- an agent gets a new id every episode, ids are never reused (not even across ``reset()``);
  an episode end gives a TerminalSteps row with the old id, and the agent's next episode shows
  up in DecisionSteps (the same step when its decision period allows, otherwise later);
- agents with a decision period > 1 are absent from DecisionSteps on the steps where they do
  not decide; their rewards accumulate until they next report (decision or terminal);
- ``step()`` keeps simulating until some agent of some behavior reports (decides or ends an
  episode): a step where nothing is reported is never returned, as Unity never sends one;
- agents that decided but got no action act with zeros, as ``UnityEnvironment`` sends;
- an agent in a multi-agent group (Unity's ``SimpleMultiAgentGroup``) reports its group's id
  (nonzero; 0 means no group) and the group reward given to it since it last reported, in the
  ``group_id`` and ``group_reward`` arrays; an ungrouped environment reports zeros in both.

Subclasses hold their simulation state in numpy arrays indexed by *slot* (one slot per agent
position; a slot holds one agent at a time) and implement ``_reset_world`` and ``_advance``.
"""

from __future__ import annotations

import abc
import zlib
from collections import defaultdict
from collections.abc import Mapping

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorMapping,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from mlagents_envs.exception import UnityActionException, UnityEnvironmentException
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfig
from mlagents_envs.side_channel.stats_side_channel import (
    EnvironmentStats,
    StatsAggregationMethod,
)

from envs.parameters import ParameterKind, ParameterValue

#: How many consecutive silent ticks (no agent reports) ``step()`` tolerates before it gives up.
MAX_SILENT_TICKS = 10_000


#: What an environment parameter may be given as: a float (a constant) or a ParameterValue.
ParameterInput = float | ParameterValue


def as_parameter_value(value: ParameterInput) -> ParameterValue:
    """``value`` as a ParameterValue (a float becomes a constant)."""
    return value if isinstance(value, ParameterValue) else ParameterValue.constant(float(value))


def parameter_stream(key: str, value: ParameterValue, worker_id: int) -> np.random.Generator:
    """The generator a sampler for ``key`` draws from: seeded by the sampler's seed, the worker id
    and the key, so every worker draws differently, a run is reproducible, and two samplers
    given the same seed (ML-Agents gives every sampler the run seed by default) do not draw in
    lockstep. A negative seed (ML-Agents' -1) is taken modulo 2**32."""
    return np.random.default_rng(
        np.random.SeedSequence([value.seed % 2**32, worker_id, zlib.crc32(key.encode("utf-8"))])
    )


def construction_parameters(env_parameters: Mapping[str, ParameterInput] | None, worker_id: int) -> dict[str, float]:
    """One float per parameter for settings read at construction, before ``BuiltinEnv.__init__``
    (constructor options of Simple, DungeonEscape, LineSoccer): a constant's value, a sampler's
    first draw (the same value ``_param`` gives on its first read of the key)."""
    values = {}
    for key, given in (env_parameters or {}).items():
        value = as_parameter_value(given)
        values[key] = float(value.sample(parameter_stream(key, value, worker_id)))
    return values


class UnknownBuiltinEnvError(ValueError):
    """Raised for a built-in environment name that does not exist; the message lists the names."""


def behavior_name(name: str, team: int = 0) -> str:
    """The fully qualified behavior name as Unity sends it: ``Name?team=N``."""
    return f"{name}?team={team}"


def vector_obs_spec(size: int) -> ObservationSpec:
    """Spec of a rank-1 float observation of ``size`` values, named like Unity's VectorSensor."""
    return ObservationSpec(
        shape=(size,),
        dimension_property=(DimensionProperty.NONE,),
        observation_type=ObservationType.DEFAULT,
        name=f"VectorSensor_size{size}",
    )


def visual_obs_spec(height: int, width: int, channels: int) -> ObservationSpec:
    """Spec of an HWC image observation (float32 in [0, 1]), as a Unity camera sensor gives."""
    return ObservationSpec(
        shape=(height, width, channels),
        dimension_property=(
            DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
            DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
            DimensionProperty.NONE,
        ),
        observation_type=ObservationType.DEFAULT,
        name="CameraSensor",
    )


def var_len_obs_spec(max_entities: int, entity_size: int) -> ObservationSpec:
    """Spec of a variable-length observation as Unity's BufferSensor sends it: up to
    ``max_entities`` rows of ``entity_size`` floats, the rows present first, absent rows all
    zeros (what ML-Agents' attention masks out)."""
    return ObservationSpec(
        shape=(max_entities, entity_size),
        dimension_property=(DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE),
        observation_type=ObservationType.DEFAULT,
        name="BufferSensor",
    )


class AgentIdSource:
    """Hands out agent ids, increasing, never reused within one environment."""

    def __init__(self) -> None:
        self._next = 0

    def take(self, count: int) -> np.ndarray:
        """``count`` fresh ids: [count] int32."""
        ids = np.arange(self._next, self._next + count, dtype=np.int32)
        self._next += count
        return ids


class StatsRecorder:
    """Custom stats as Unity's StatsRecorder sends them through the stats side channel."""

    def __init__(self) -> None:
        self._stats: defaultdict[str, list[tuple[float, StatsAggregationMethod]]] = defaultdict(list)

    def add(self, key: str, values: float | np.ndarray, method: StatsAggregationMethod) -> None:
        """Record one value, or one per element of ``values``.

        A MOST_RECENT stat keeps only its latest value (all a reader uses), so a stat recorded
        every tick does not grow without bound between reads.
        """
        if method is StatsAggregationMethod.MOST_RECENT:
            latest = values.ravel()[-1] if isinstance(values, np.ndarray) else values
            self._stats[key][:] = [(float(latest), method)]
        elif isinstance(values, np.ndarray):
            self._stats[key].extend((float(v), method) for v in values.ravel().tolist())
        else:
            self._stats[key].append((float(values), method))

    def get_and_reset(self) -> EnvironmentStats:
        """Everything recorded since the last call, keyed by stat name, in recording order."""
        stats, self._stats = self._stats, defaultdict(list)
        return dict(stats)


class BehaviorAgents:
    """The agents of one behavior, held in ``n_slots`` slots, and the steps they last reported.

    Arrays indexed by slot:
      ids:          [N] int32, the current episode's agent id, -1 where the slot is empty
      reward:       [N] float32, reward accumulated since the agent last reported
      group_id:     [N] int32, the group of the slot's agent, 0 for none; a property of the
                    slot (set with ``set_group``), kept across episodes, ``start``, ``remove``
                    and ``clear``, as a Unity agent re-registers with the same group
      group_reward: [N] float32, group reward accumulated since the agent last reported
      continuous: [N, c] float32, the action the agent acts with (held between decisions)
      discrete:   [N, d] int32, likewise
    ``decided`` lists, in row order, the slots of the DecisionSteps published last.
    """

    def __init__(
        self,
        name: str,
        spec: BehaviorSpec,
        n_slots: int,
        id_source: AgentIdSource,
        decision_period: int = 1,
    ) -> None:
        self.name = name
        self.spec = spec
        self.n_slots = n_slots
        self.decision_period = decision_period
        self._id_source = id_source
        action_spec = spec.action_spec
        self.ids = np.full(n_slots, -1, dtype=np.int32)
        self.reward = np.zeros(n_slots, dtype=np.float32)
        self.group_id = np.zeros(n_slots, dtype=np.int32)
        self.group_reward = np.zeros(n_slots, dtype=np.float32)
        self.continuous = np.zeros((n_slots, action_spec.continuous_size), dtype=np.float32)
        self.discrete = np.zeros((n_slots, action_spec.discrete_size), dtype=np.int32)
        self.decided = np.zeros(0, dtype=np.intp)
        ends = np.cumsum(action_spec.discrete_branches).tolist()
        self._branch_columns = [slice(start, end) for start, end in zip([0, *ends[:-1]], ends)]
        self._empty_decision = self._decision_steps(
            [np.zeros((0,) + o.shape, np.float32) for o in spec.observation_specs],
            np.zeros(0, np.float32),
            np.zeros(0, np.int32),
            np.zeros((0, int(sum(action_spec.discrete_branches))), dtype=bool),
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
        )
        self._empty_terminal = self._terminal_steps(
            [np.zeros((0,) + o.shape, np.float32) for o in spec.observation_specs],
            np.zeros(0, np.float32),
            np.zeros(0, bool),
            np.zeros(0, np.int32),
            np.zeros(0, np.int32),
            np.zeros(0, np.float32),
        )
        self.decision_steps = self._empty_decision
        self.terminal_steps = self._empty_terminal

    @property
    def active(self) -> np.ndarray:
        """[N] bool, slots that hold an agent."""
        return self.ids >= 0

    @property
    def has_output(self) -> bool:
        """Whether the current tick published any row (decision or terminal)."""
        return len(self.decision_steps) > 0 or len(self.terminal_steps) > 0

    def begin_tick(self) -> None:
        """Forget the previous tick's steps: nothing reported yet."""
        self.decision_steps = self._empty_decision
        self.terminal_steps = self._empty_terminal
        self.decided = self.decided[:0]

    def clear(self) -> None:
        """Empty every slot without reporting anything (what a full reset does)."""
        self.begin_tick()
        self.ids[:] = -1
        self.reward[:] = 0.0
        self.group_reward[:] = 0.0
        self.continuous[:] = 0.0
        self.discrete[:] = 0

    def start(self, slots: np.ndarray) -> None:
        """Begin a new episode in ``slots`` (indices): fresh ids, no reward, zero actions."""
        if len(slots) == 0:
            return
        self.ids[slots] = self._id_source.take(len(slots))
        self.reward[slots] = 0.0
        self.group_reward[slots] = 0.0
        self.continuous[slots] = 0.0
        self.discrete[slots] = 0

    def remove(self, slots: np.ndarray) -> None:
        """Empty ``slots``: their agents are gone (report their terminal step first)."""
        self.ids[slots] = -1
        self.reward[slots] = 0.0
        self.group_reward[slots] = 0.0
        self.continuous[slots] = 0.0
        self.discrete[slots] = 0

    def set_group(self, slots: np.ndarray, group_ids: int | np.ndarray) -> None:
        """Put ``slots`` in group ``group_ids`` (one int for all, or [len(slots)] ints; 0 takes
        them out of any group). The slots keep it until changed."""
        self.group_id[slots] = group_ids

    def add_group_reward(self, slots: np.ndarray, amounts: float | np.ndarray) -> None:
        """Give ``slots`` group reward (one float for all, or [len(slots)] floats), reported
        with their next decision or terminal row, as Unity's ``AddGroupReward`` gives every
        member of a group. Repeated slots add up."""
        np.add.at(self.group_reward, slots, np.asarray(amounts, np.float32))

    def end(self, slots: np.ndarray, obs: list[np.ndarray], interrupted: np.ndarray) -> None:
        """Publish the terminal rows of ``slots`` (their current ids, group ids and accumulated
        rewards and group rewards).

        obs: one float32 array [len(slots), *shape] per observation spec;
        interrupted: [len(slots)] bool, True for max-step endings.
        Call this before ``start``/``remove`` of the same slots.
        """
        if len(slots) == 0:
            return
        self.terminal_steps = self._terminal_steps(
            obs,
            self.reward[slots],
            interrupted.astype(bool),
            self.ids[slots],
            self.group_id[slots],
            self.group_reward[slots],
        )
        self.reward[slots] = 0.0
        self.group_reward[slots] = 0.0

    def decide(self, slots: np.ndarray, obs: list[np.ndarray], mask: np.ndarray | None = None) -> None:
        """Publish the decision rows of ``slots`` (indices, row order), with their group ids and
        the rewards and group rewards accumulated since they last reported.

        obs: one float32 array [len(slots), *shape] per observation spec;
        mask: [len(slots), sum(branches)] bool, True where an action is NOT available
        (the layout of mlagents_envs); None means nothing masked.
        """
        if len(slots) == 0:
            return
        if mask is None:
            mask = np.zeros((len(slots), int(sum(self.spec.action_spec.discrete_branches))), bool)
        self.decision_steps = self._decision_steps(
            obs, self.reward[slots], self.ids[slots], mask, self.group_id[slots], self.group_reward[slots]
        )
        self.reward[slots] = 0.0
        self.group_reward[slots] = 0.0
        self.decided = np.asarray(slots, dtype=np.intp)

    def apply_actions(self, action: ActionTuple | None) -> None:
        """Hand the agents that decided last their actions (zeros where none was set)."""
        slots = self.decided
        if len(slots) == 0:
            return
        if action is None:
            self.continuous[slots] = 0.0
            self.discrete[slots] = 0
        else:
            self.continuous[slots] = action.continuous
            self.discrete[slots] = action.discrete

    def _decision_steps(self, obs, reward, ids, mask, group_id, group_reward) -> DecisionSteps:
        masks = None
        if self.spec.action_spec.discrete_size > 0:
            masks = [mask[:, columns] for columns in self._branch_columns]  # np.split's views, cheaper
        return DecisionSteps(obs, reward, ids, masks, group_id, group_reward)

    def _terminal_steps(self, obs, reward, interrupted, ids, group_id, group_reward) -> TerminalSteps:
        return TerminalSteps(obs, reward, interrupted, ids, group_id, group_reward)


class BuiltinEnv(BaseEnv):
    """A Unity-like environment simulated in numpy, vectorised over agents.

    Constructing one already resets it: ``get_steps`` answers at once. Environment parameters
    (what the EnvironmentParametersChannel carries) are read at each episode start, or at
    construction for settings that fix the specs (each environment's docstring says which);
    names an environment does not know are ignored, as Unity does.

    A parameter is a constant or a sampler (:class:`envs.parameters.ParameterValue`). A sampler
    is drawn anew at every read, as Unity's C# samplers are each time the scene reads the
    parameter: ``_param`` draws one value, ``_param_array`` one per slot starting an episode.
    Each sampler draws from a generator of its own (``parameter_stream``: sampler seed, worker
    id, key), independent of the simulation's generator and of other keys, so a sampler changes
    no other random draw. A new value for a key replaces the old; a new sampler restarts its
    stream, while setting the value the key already holds changes nothing (so re-sending the
    same parameters at every reset does not replay the same draws).
    """

    #: The name ``make_env`` knows this environment by (``builtin:<name>`` in configs); a class
    #: attribute for built-ins, set per instance (before ``__init__``) by environments whose
    #: name is only known at construction, such as a Gymnasium environment's id.
    env_name: str

    def __init__(
        self,
        *,
        seed: int,
        worker_id: int = 0,
        env_parameters: Mapping[str, ParameterInput] | None = None,
        num_areas: int = 1,
    ) -> None:
        if seed < 0:
            raise ValueError(f"{self.env_name}: seed must be >= 0 (got {seed})")
        if worker_id < 0:
            raise ValueError(f"{self.env_name}: worker_id must be >= 0 (got {worker_id})")
        if num_areas < 1:
            raise ValueError(f"{self.env_name}: num_areas must be >= 1 (got {num_areas})")
        self.seed = seed
        self.worker_id = worker_id
        self.num_areas = num_areas
        self._rng = np.random.default_rng(np.random.SeedSequence([seed, worker_id]))
        self._params: dict[str, ParameterValue] = {}
        self._param_streams: dict[str, np.random.Generator] = {}
        for key, value in (env_parameters or {}).items():
            self.set_env_parameter_value(key, as_parameter_value(value))
        self._stats = StatsRecorder()
        self._id_source = AgentIdSource()
        self._behaviors: dict[str, BehaviorAgents] = {}
        self._specs: dict[str, BehaviorSpec] = {}
        self._pending: dict[str, ActionTuple] = {}
        self._tick = 0
        #: How many times ``step()`` ran since the environment opened (resets do not restart
        #: it): a clock for whoever watches a run from outside, a learning test's hold say.
        self.steps_taken = 0
        self._closed = False
        self._engine_config: EngineConfig | None = None
        self._setup()
        self._do_reset()

    # ---- subclass hooks ------------------------------------------------------------------

    @abc.abstractmethod
    def _setup(self) -> None:
        """Create the behaviors (``_add_behavior``) and the state arrays."""

    @abc.abstractmethod
    def _reset_world(self) -> None:
        """Start the agents present at tick 0 and publish their decisions."""

    @abc.abstractmethod
    def _advance(self) -> None:
        """Simulate tick ``self._tick`` with the agents' held actions; publish what is reported."""

    # ---- helpers for subclasses -----------------------------------------------------------

    def _add_behavior(
        self, name: str, spec: BehaviorSpec, n_slots: int, decision_period: int = 1, team: int = 0
    ) -> BehaviorAgents:
        """Create the behavior ``Name?team=<team>`` with ``n_slots`` slots."""
        agents = BehaviorAgents(behavior_name(name, team), spec, n_slots, self._id_source, decision_period)
        self._behaviors[agents.name] = agents
        return agents

    def _param(self, key: str, default: float) -> float:
        """Environment parameter ``key`` read once: a constant's value, a sampler's next draw
        (``default`` when never set). Call it where the scene reads the value (episode start,
        construction), not for stats: a sampler draws at every call."""
        value = self._params.get(key)
        if value is None:
            return default
        if value.is_constant:
            return float(value.numbers[0])
        return float(value.sample(self._param_streams[key]))

    def _param_array(self, key: str, default: float, n: int) -> np.ndarray:
        """Environment parameter ``key`` read for ``n`` agents at once: [n] float64, one draw
        each for a sampler (as every Unity Agent starting an episode reads it), the value
        repeated for a constant, ``default`` repeated when never set."""
        value = self._params.get(key)
        if value is None:
            return np.full(n, float(default))
        if value.is_constant:
            return np.full(n, value.numbers[0])
        return np.asarray(value.sample(self._param_streams[key], n), dtype=np.float64)

    def _param_sampled(self, key: str) -> bool:
        """Whether ``key`` currently holds a sampler (not a constant, not unset)."""
        value = self._params.get(key)
        return value is not None and not value.is_constant

    def _param_high(self, key: str, default: float) -> float:
        """The highest value ``key`` can take, without drawing: a constant's value, a uniform's
        max, a multirange's highest max, inf for a gaussian; ``default`` when never set."""
        value = self._params.get(key)
        if value is None:
            return default
        if value.is_constant:
            return value.numbers[0]
        if value.kind == ParameterKind.GAUSSIAN:
            return float("inf")
        if value.kind == ParameterKind.UNIFORM:
            return max(value.numbers[0], value.numbers[1])
        return max(max(pair) for pair in value.intervals)

    # ---- BaseEnv --------------------------------------------------------------------------

    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        """The behaviors seen so far (a behavior appears with its first agents)."""
        return BehaviorMapping(self._specs)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        agents = self._known(behavior_name)
        return agents.decision_steps, agents.terminal_steps

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        agents = self._known(behavior_name)
        self._validate(agents, action, len(agents.decision_steps))
        self._pending[behavior_name] = action

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        agents = self._known(behavior_name)
        self._validate(agents, action, 1)
        rows = np.flatnonzero(agents.decision_steps.agent_id == agent_id)
        if len(rows) == 0:
            raise IndexError(f"agent_id {agent_id} of {behavior_name} did not request a decision at the previous step")
        previous = self._pending.get(behavior_name)
        if previous is None:
            pending = agents.spec.action_spec.empty_action(len(agents.decision_steps))
        else:  # copy: never write into the caller's arrays
            pending = ActionTuple(previous.continuous.copy(), previous.discrete.copy())
        self._pending[behavior_name] = pending
        pending.continuous[rows[0]] = action.continuous[0]
        pending.discrete[rows[0]] = action.discrete[0]

    def step(self) -> None:
        """Apply the actions set, then simulate until some agent reports."""
        self._check_open()
        for name, agents in self._behaviors.items():
            agents.apply_actions(self._pending.get(name))
        self._pending.clear()
        self.steps_taken += 1
        for _ in range(MAX_SILENT_TICKS):
            self._tick += 1
            for agents in self._behaviors.values():
                agents.begin_tick()
            self._advance()
            if self._register_reporting():
                return
        raise UnityEnvironmentException(f"{self.env_name}: no agent reported for {MAX_SILENT_TICKS} ticks")

    def reset(self) -> None:
        """End everything without terminal steps and start over with fresh agent ids."""
        self._check_open()
        self._do_reset()

    def close(self) -> None:
        """Release the environment; later ``step``/``reset`` calls raise. Safe to call twice."""
        self._closed = True

    # ---- side-channel equivalents ----------------------------------------------------------

    def set_env_parameter(self, key: str, value: float) -> None:
        """Set an environment parameter to a constant (EnvironmentParametersChannel's
        ``set_float_parameter``); read at the next episode starts."""
        self.set_env_parameter_value(key, ParameterValue.constant(value))

    def set_env_parameter_value(self, key: str, value: ParameterValue) -> None:
        """Set an environment parameter to a constant or a sampler, as the
        EnvironmentParametersChannel carries them; used from the next read on (episode starts;
        a setting read only at construction keeps its value). A new sampler starts its stream
        afresh; the value the key already holds changes nothing."""
        if self._params.get(key) == value:
            return
        self._params[key] = value
        if value.is_constant:
            self._param_streams.pop(key, None)
        else:
            self._param_streams[key] = parameter_stream(key, value, self.worker_id)

    def set_engine_config(self, config: EngineConfig) -> None:
        """Accept engine settings (EngineConfigurationChannel); a simulation has no use for them."""
        self._engine_config = config

    def get_and_reset_stats(self) -> EnvironmentStats:
        """Custom stats since the last call, as StatsSideChannel.get_and_reset_stats returns."""
        return self._stats.get_and_reset()

    # ---- internals ------------------------------------------------------------------------

    def _do_reset(self) -> None:
        self._pending.clear()
        self._tick = 0
        for agents in self._behaviors.values():
            agents.clear()
        self._reset_world()
        self._register_reporting()

    def _register_reporting(self) -> bool:
        """Add the specs of behaviors reporting for the first time; whether any reported."""
        reported = False
        for name, agents in self._behaviors.items():
            if agents.has_output:
                reported = True
                if name not in self._specs:
                    self._specs[name] = agents.spec
        return reported

    def _known(self, behavior_name: str) -> BehaviorAgents:
        if behavior_name not in self._specs:
            raise UnityActionException(
                f"The group {behavior_name} does not correspond to an existing agent group in "
                f"the environment {self.env_name} (known now: {sorted(self._specs)})"
            )
        return self._behaviors[behavior_name]

    @staticmethod
    def _validate(agents: BehaviorAgents, action: ActionTuple, n_agents: int) -> None:
        spec = agents.spec.action_spec
        for kind, got, size in (
            ("continuous", action.continuous, spec.continuous_size),
            ("discrete", action.discrete, spec.discrete_size),
        ):
            if got.shape != (n_agents, size):
                raise UnityActionException(
                    f"The behavior {agents.name} needs a {kind} input of dimension "
                    f"{(n_agents, size)} for (<number of agents>, <action size>) but received "
                    f"input of dimension {got.shape}"
                )

    def _check_open(self) -> None:
        if self._closed:
            raise UnityEnvironmentException(f"{self.env_name}: the environment is closed")


def whole_option(env_name: str, option: str, value: float, minimum: int) -> int:
    """``value`` as an int: options come as floats from environment parameters, so 1.5 or -1
    must fail loudly (ValueError naming the environment and option) rather than be truncated
    into a different environment."""
    try:
        whole = float(value).is_integer() and value >= minimum
    except (TypeError, ValueError):
        whole = False
    if not whole:
        raise ValueError(f"{env_name}: {option} must be a whole number >= {minimum} (got {value!r})")
    return int(value)


def stacked_observations(rows: list[list[np.ndarray]]) -> list[np.ndarray]:
    """Per-agent observations (one list of arrays per agent, or per environment copy) -> one
    [N, *shape] array per observation, as ``BehaviorAgents.decide`` and ``end`` take them."""
    return [np.stack(parts) for parts in zip(*rows)]


def one_hot(index: np.ndarray, size: int) -> np.ndarray:
    """[n] int -> [n, size] float32 one-hot rows."""
    out = np.zeros((len(index), size), dtype=np.float32)
    out[np.arange(len(index)), index] = 1.0
    return out


def action_spec_discrete(*branches: int) -> ActionSpec:
    """A discrete action spec with the given branch sizes."""
    return ActionSpec(0, tuple(branches))


def action_spec_continuous(size: int) -> ActionSpec:
    """A continuous action spec of ``size`` values."""
    return ActionSpec(size, ())


__all__ = [
    "AgentIdSource",
    "BehaviorAgents",
    "BuiltinEnv",
    "ParameterInput",
    "StatsRecorder",
    "UnknownBuiltinEnvError",
    "action_spec_continuous",
    "action_spec_discrete",
    "as_parameter_value",
    "behavior_name",
    "construction_parameters",
    "one_hot",
    "parameter_stream",
    "var_len_obs_spec",
    "vector_obs_spec",
    "visual_obs_spec",
    "whole_option",
]
