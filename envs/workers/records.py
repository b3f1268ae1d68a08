"""What crosses the worker-pool boundary: plain numpy records, never mlagents objects.

Arrays keep their dtype (uint8 images stay uint8) so a subprocess or a remote runner ships
exactly what the environment produced. A fault is a value too (:class:`WorkerFault`); the
caller decides whether to restart.
"""

from __future__ import annotations

import enum
from typing import NamedTuple

import attrs
import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)


class SpecRecord(NamedTuple):
    """A BehaviorSpec as plain values (one entry per sensor in the obs tuples), and the Unity
    package version of the build that sent it ("" for other environments)."""

    obs_shapes: tuple[tuple[int, ...], ...]
    dimension_properties: tuple[tuple[int, ...], ...]
    observation_types: tuple[int, ...]
    observation_names: tuple[str, ...]
    continuous_size: int
    discrete_branches: tuple[int, ...]
    unity_package: str = ""

    @staticmethod
    def from_spec(spec: BehaviorSpec, unity_package: str = "") -> SpecRecord:
        sensors = spec.observation_specs
        return SpecRecord(
            tuple(tuple(int(s) for s in o.shape) for o in sensors),
            tuple(tuple(int(d.value) for d in o.dimension_property) for o in sensors),
            tuple(int(o.observation_type.value) for o in sensors),
            tuple(str(o.name) for o in sensors),
            int(spec.action_spec.continuous_size),
            tuple(int(b) for b in spec.action_spec.discrete_branches),
            unity_package,
        )

    def to_spec(self) -> BehaviorSpec:
        sensors = [
            ObservationSpec(shape, tuple(DimensionProperty(d) for d in dims), ObservationType(kind), name)
            for shape, dims, kind, name in zip(
                self.obs_shapes, self.dimension_properties, self.observation_types, self.observation_names
            )
        ]
        return BehaviorSpec(sensors, ActionSpec(self.continuous_size, self.discrete_branches))


class TakenActions(NamedTuple):
    """Actions some deciding agents already took (an external simulator's client chose them:
    ``log_action``, or local inference), one row per DecisionSteps row.

    ``rows`` [N] bool, True where the agent acted itself; ``continuous`` [N, c] float32 in
    [-1, 1] (what the environment receives) and ``discrete`` [N, b] int32 (meaningful on those
    rows only). The env manager records these actions, with the policy's log-probability of
    them, instead of sampling for those rows.
    """

    rows: np.ndarray
    continuous: np.ndarray
    discrete: np.ndarray


class StepsRecord(NamedTuple):
    """One behavior's DecisionSteps and TerminalSteps of one worker as plain arrays.

    ``d_*``: N deciding agents (obs one [N, *shape] per sensor; rewards [N] float32; agent and
    group ids [N] int32, group 0 = none; ``d_mask`` one [N, branch] bool per branch, True =
    masked, or None); ``t_*``: M agents whose episode ended (``t_interrupted`` [M] bool).
    ``taken``: actions some deciding agents took themselves (None for every environment but
    the policy server's, see :class:`TakenActions`).
    """

    d_obs: tuple[np.ndarray, ...]
    d_reward: np.ndarray
    d_agent_id: np.ndarray
    d_mask: tuple[np.ndarray, ...] | None
    d_group_id: np.ndarray
    d_group_reward: np.ndarray
    t_obs: tuple[np.ndarray, ...]
    t_reward: np.ndarray
    t_interrupted: np.ndarray
    t_agent_id: np.ndarray
    t_group_id: np.ndarray
    t_group_reward: np.ndarray
    taken: TakenActions | None = None

    @staticmethod
    def from_steps(decision: DecisionSteps, terminal: TerminalSteps, taken: TakenActions | None = None) -> StepsRecord:
        """The record of steps as any ``BaseEnv`` hands them over: ``mlagents_envs`` gives
        ``group_id`` as a list, a user's environment may give lists or integers of any width.
        Each field becomes an array of the dtype documented above (arrays already so are
        kept, not copied)."""
        mask = decision.action_mask
        return StepsRecord(
            tuple(np.asarray(o) for o in decision.obs),
            np.asarray(decision.reward, np.float32),
            _ids(decision.agent_id, "DecisionSteps.agent_id"),
            None if mask is None else tuple(np.asarray(m, bool) for m in mask),
            _ids(decision.group_id, "DecisionSteps.group_id"),
            np.asarray(decision.group_reward, np.float32),
            tuple(np.asarray(o) for o in terminal.obs),
            np.asarray(terminal.reward, np.float32),
            np.asarray(terminal.interrupted, bool),
            _ids(terminal.agent_id, "TerminalSteps.agent_id"),
            _ids(terminal.group_id, "TerminalSteps.group_id"),
            np.asarray(terminal.group_reward, np.float32),
            taken,
        )

    def to_steps(self) -> tuple[DecisionSteps, TerminalSteps]:
        decision = DecisionSteps(
            list(self.d_obs),
            self.d_reward,
            self.d_agent_id,
            None if self.d_mask is None else list(self.d_mask),
            self.d_group_id,
            self.d_group_reward,
        )
        terminal = TerminalSteps(
            list(self.t_obs), self.t_reward, self.t_interrupted, self.t_agent_id, self.t_group_id, self.t_group_reward
        )
        return decision, terminal


def _ids(values: object, field: str) -> np.ndarray:
    """[N] int32 ids from a list or an integer array of any width (Unity's ids are int32; the
    processors key agents by the low 32 bits, so narrowing a wider array loses nothing)."""
    ids = np.asarray(values)
    if ids.dtype.kind not in "iu" and ids.size > 0:
        raise TypeError(f"{field} must hold integers, got {ids.dtype} ({ids[:3].tolist()}...)")
    return ids.astype(np.int32, copy=False)


class FaultKind(enum.Enum):
    """Why a worker stopped answering."""

    CRASHED = "crashed"  # the environment process exited or the connection broke
    HUNG = "hung"  # no answer within the time limit
    QUIT = "quit"  # the environment ended the session (Application.Quit, Editor closed)
    LOST = "lost"  # the worker process itself died
    ERROR = "error"  # anything else: a bug or a bad setting, never retried


@attrs.frozen
class WorkerResult:
    """One step of one worker: every behavior's steps, specs of behaviors new to this worker,
    custom env stats ``{key: [(value, aggregation int)]}``, seconds the env step took."""

    worker_id: int
    generation: int
    steps: dict[str, StepsRecord]
    new_specs: dict[str, SpecRecord]
    env_stats: dict[str, list[tuple[float, int]]]
    env_seconds: float = 0.0


@attrs.frozen
class WorkerFault:
    """A worker that failed; ``retriable`` faults may be restarted within the budget."""

    worker_id: int
    generation: int
    kind: FaultKind
    message: str
    retriable: bool
