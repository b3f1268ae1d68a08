"""The policy server: external simulators call in over TCP (:mod:`envs.external.wire`) and
their episodes become the agents of a ``BaseEnv`` that the run steps like any other.

Each client episode is one agent (ids unique for the run, so the episodes of many clients are
distinct agents). ``step()`` waits, at most ``step_wait_s``, until some episode has a step
pending, then takes at most one pending step per episode: a decision (an observation waiting
for an action, or one whose action the client chose itself) or its end. ``get_steps`` returns
them as DecisionSteps (with the reward logged since the episode's previous decision) and
TerminalSteps; ``set_actions`` answers the clients waiting in ``get_action``;
``taken_actions`` says which decisions the clients acted on themselves. Episodes not heard
from for ``idle_timeout_s``, and those of a connection that closed, end as interrupted.

No client can stop or starve the others: a ``hello`` naming a behavior the run cannot train
is refused (``behavior_check``); one connection holds at most ``max_episodes_per_connection``
open episodes; while a client waits for an action, a step takes from each connection at
most one step per episode it has open, so a local-inference client that has finished episodes
ahead of the trainer is served like one that waits for every action; and it may run only
``max_queued_steps`` per open episode ahead. Every reply carries the current model version, so local-inference clients fetch each
new policy before their next action.

Connections are served by threads; everything they share sits behind one condition
variable. A malformed or refused request gets an error reply and never reaches the run.
Models for local inference come from a :class:`ModelSource` given by the run (``envs``
cannot export policies), always called from the thread that steps the environment, between
steps.
"""

from __future__ import annotations

import enum
import hmac
import json
import logging
import math
import secrets
import socket
import socketserver
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs
import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BaseEnv,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod

from envs.external import wire
from envs.workers.records import TakenActions

logger = logging.getLogger(__name__)


class ModelSource(Protocol):
    """The run's policies, for local-inference clients."""

    def version(self, behavior_id: str) -> int:
        """The current policy's version (-1: none yet); read every step, so cheap."""
        ...

    def __call__(self, behavior_id: str) -> tuple[int, bytes]:
        """(version, ONNX bytes); LookupError while the behavior has no policy yet."""
        ...


# (behavior name) -> why the run cannot train it, or None: the run's configuration, so that a
# client's typo is refused at its hello instead of ending the run when its trainer is made.
BehaviorCheck = Callable[[str], str | None]
LAG_STAT = "Policy Server/Local Inference Lag"  # model versions between acting and training
LOOPBACK = "127.0.0.1"
# Bounds on a declared spec, so no client can make the run build a network it cannot hold.
MAX_SENSORS = 32
MAX_OBS_VALUES = 1 << 22  # per observation: a 1024 x 1024 x 4 image
MAX_ACTIONS = 1024  # continuous size, number of branches, choices per branch
MAX_BEHAVIORS = 64


class RequestError(ValueError):
    """A request the server refuses; its message goes back to the client. ``retry``: the same
    request may succeed later (the model is not made yet)."""

    def __init__(self, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


class _Kind(enum.Enum):
    DECISION = 0
    TERMINAL = 1


@attrs.define(eq=False)
class _Event:
    """One pending step of an episode: obs one [*shape] float32 per sensor."""

    kind: _Kind
    obs: list[np.ndarray]
    reward: float
    interrupted: bool = False
    continuous: np.ndarray | None = None  # a client-chosen action (env space), or None
    discrete: np.ndarray | None = None
    waiting: bool = False  # a client waits in get_action for this decision's action
    action: tuple[np.ndarray, np.ndarray] | None = None
    version: int = -1  # the model version a local-inference client chose the action with (-1: unknown)


@attrs.define(eq=False)
class _Episode:
    episode_id: str
    agent_id: int
    behavior: str
    owner: _Session  # the connection that started it: its queued steps are bounded
    last_heard: float
    events: deque[_Event] = attrs.field(factory=deque)
    reward: float = 0.0  # logged since the last queued step
    last_obs: list[np.ndarray] | None = None
    ending: bool = False  # its end is queued: no more requests
    asking: bool = False  # a get_action of it is under way


@attrs.frozen
class ClientSpec:
    """What the first client of a behavior declares; later ones must match."""

    observation_shapes: tuple[tuple[int, ...], ...]
    continuous_size: int
    discrete_branches: tuple[int, ...]

    @staticmethod
    def parse(value: Any) -> ClientSpec:
        if not isinstance(value, dict):
            raise RequestError(
                "hello: 'spec' must be an object with observation_shapes, continuous_size, discrete_branches"
            )
        shapes = value.get("observation_shapes")
        if (
            not isinstance(shapes, list)
            or not shapes
            or not all(
                isinstance(s, list) and 1 <= len(s) <= 3 and all(_is_int(d) and d > 0 for d in s) for s in shapes
            )
        ):
            raise RequestError(
                f"hello: spec.observation_shapes must be a non-empty list of shapes of 1 to 3 positive integers, got {shapes!r}"
            )
        continuous = value.get("continuous_size", 0)
        branches = value.get("discrete_branches", [])
        if not _is_int(continuous) or continuous < 0:
            raise RequestError(f"hello: spec.continuous_size must be a non-negative integer, got {continuous!r}")
        if not isinstance(branches, list) or not all(_is_int(b) and b > 0 for b in branches):
            raise RequestError(f"hello: spec.discrete_branches must be a list of positive integers, got {branches!r}")
        if continuous == 0 and not branches:
            raise RequestError("hello: spec declares no action (continuous_size 0 and no discrete_branches)")
        too_big = [
            f"{len(shapes)} observations (the most is {MAX_SENSORS})" if len(shapes) > MAX_SENSORS else "",
            *(
                f"observation {i} of {math.prod(s)} values (the most is {MAX_OBS_VALUES})"
                for i, s in enumerate(shapes)
                if math.prod(s) > MAX_OBS_VALUES
            ),
            f"continuous_size {continuous} (the most is {MAX_ACTIONS})" if continuous > MAX_ACTIONS else "",
            f"{len(branches)} discrete branches (the most is {MAX_ACTIONS})" if len(branches) > MAX_ACTIONS else "",
            f"a branch of {max(branches)} choices (the most is {MAX_ACTIONS})"
            if branches and max(branches) > MAX_ACTIONS
            else "",
        ]
        if any(too_big):
            raise RequestError(f"hello: spec too large: {'; '.join(p for p in too_big if p)}")
        return ClientSpec(tuple(tuple(s) for s in shapes), int(continuous), tuple(int(b) for b in branches))

    def difference(self, other: ClientSpec) -> str | None:
        """What differs from ``other`` (the declared spec), or None."""
        for field in ("observation_shapes", "continuous_size", "discrete_branches"):
            mine, theirs = getattr(self, field), getattr(other, field)
            if mine != theirs:
                return f"{field} {_plain(mine)} (the behavior was declared with {_plain(theirs)})"
        return None

    def to_behavior_spec(self) -> BehaviorSpec:
        """As Unity's sensors declare them: rank 1 a vector, rank 2 a variable-length list of
        entities (a BufferSensor: all-zero rows are absent), rank 3 an H x W x C image."""
        sensors = [
            ObservationSpec(shape, _DIMENSIONS[len(shape)], ObservationType.DEFAULT, f"obs_{i}")
            for i, shape in enumerate(self.observation_shapes)
        ]
        return BehaviorSpec(sensors, ActionSpec(self.continuous_size, self.discrete_branches))


_DIMENSIONS = {
    1: (DimensionProperty.NONE,),
    2: (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE),
    3: (
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
        DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
        DimensionProperty.NONE,
    ),
}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _plain(value: Any) -> str:
    return json.dumps(value)[:200]


@attrs.define(eq=False)
class _Snapshot:
    """The steps of one behavior handed to the run by the last ``step()``."""

    decisions: list[tuple[_Episode, _Event]]
    decision_steps: DecisionSteps
    terminal_steps: TerminalSteps
    taken: TakenActions | None


class PolicyServerEnv(BaseEnv):
    """A ``BaseEnv`` fed by policy clients; see the module docstring.

    port: where to listen (0: any free port, see :attr:`address`). bind_address: loopback
    unless given. token: a shared secret every client must send (None: none asked).
    max_episodes: open episodes at once (more are refused). max_episodes_per_connection: the
    episodes one connection may have open (not yet ended by it): a quarter of the server by
    default, so one runaway client leaves room for others. idle_timeout_s: an episode not
    heard from this long ends as interrupted. step_wait_s: the longest a step waits for
    a pending step (then it returns none). gather_s: after the first pending step, how long
    to wait for the clients just answered to send their next ones (bigger batches).
    max_frame_bytes: the largest request. max_queued_steps: steps one connection may have
    waiting per episode it has open (at least one): ``log_steps`` waits while more are
    queued, so a local-inference client runs at most that many steps per episode ahead of the
    trainer (64, the client's default batch; measured lag: about 3 model versions with 4
    clients and PPO's test buffer of 64 steps, under 0.2 with a version every 2,048 steps).
    reply_timeout_s: the longest a client is kept waiting for an action or a model.
    model_source: the policies local-inference clients fetch (None: none served; see
    :meth:`serve_models`). behavior_check: refuses the ``hello`` of a behavior the run cannot
    train (None: any).
    """

    def __init__(
        self,
        port: int,
        *,
        bind_address: str = LOOPBACK,
        token: str | None = None,
        max_episodes: int = 1024,
        max_episodes_per_connection: int = 256,
        max_connections: int = 256,
        idle_timeout_s: float = 60.0,
        step_wait_s: float = 0.5,
        gather_s: float = 0.002,
        max_frame_bytes: int = wire.DEFAULT_MAX_FRAME_BYTES,
        max_queued_steps: int = 64,
        reply_timeout_s: float = 60.0,
        model_source: ModelSource | None = None,
        behavior_check: BehaviorCheck | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.token = token or None
        self.max_episodes = max_episodes
        self.max_episodes_per_connection = max_episodes_per_connection
        self.max_connections = max_connections
        self.idle_timeout_s = idle_timeout_s
        self.step_wait_s = step_wait_s
        self.gather_s = gather_s
        self.max_frame_bytes = max_frame_bytes
        self.max_queued_steps = max_queued_steps
        self.reply_timeout_s = reply_timeout_s
        self._model_source = model_source
        self._behavior_check = behavior_check
        self._clock = clock
        self._cond = threading.Condition()
        self._closed = False
        self._specs: dict[str, ClientSpec] = {}
        self._behavior_specs: dict[str, BehaviorSpec] = {}
        self._episodes: dict[str, _Episode] = {}
        self._next_agent_id = 0
        self._snapshots: dict[str, _Snapshot] = {}
        self._answered: set[str] = set()  # episodes answered last step, likely to send again soon
        self._model_requests: set[str] = set()
        self._models: dict[str, tuple[int, bytes] | RequestError] = {}  # behavior -> (version, bytes) or why not
        self._versions: dict[str, int] = {}  # behavior -> its current model version, read each step
        self._lag_sum = 0  # of the local-inference steps taken since get_and_reset_stats
        self._lag_count = 0
        self._connections: set[socket.socket] = set()
        self._server = _TCPServer((bind_address, port), _Handler, self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.1}, name="policy-server", daemon=True
        )
        self._thread.start()
        logger.info("Policy server listening on %s", self.address)

    @property
    def address(self) -> str:
        """``"host:port"`` the server listens on (what :class:`PolicyClient` takes)."""
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def serve_models(self, source: ModelSource) -> None:
        """Serve local-inference clients the policies ``source`` exports."""
        with self._cond:
            self._model_source = source

    # ------------------------------------------------------------ BaseEnv

    @property
    def behavior_specs(self) -> Mapping[str, BehaviorSpec]:
        with self._cond:
            return dict(self._behavior_specs)

    def step(self) -> None:
        """Wait (at most ``step_wait_s``) for pending steps, then take one per episode."""
        with self._cond:
            self._requeue_unanswered()
            self._read_versions()
            deadline = self._clock() + self.step_wait_s
            while not self._closed:
                self._serve_models()
                self._end_idle_episodes()
                if self._has_pending():
                    break
                remaining = deadline - self._clock()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, self.idle_timeout_s))
            gather_end = self._clock() + self.gather_s
            while self._answered and not self._closed and (remaining := gather_end - self._clock()) > 0:
                self._cond.wait(remaining)
            self._take_snapshot()

    def reset(self) -> None:
        """Take the pending steps without waiting (episodes live in the clients: nothing resets)."""
        with self._cond:
            self._requeue_unanswered()
            self._read_versions()
            self._serve_models()
            self._take_snapshot()

    def get_and_reset_stats(self) -> dict[str, list[tuple[float, StatsAggregationMethod]]]:
        """Custom stats of the last step, as StatsSideChannel gives them: the mean lag, in model
        versions, of the local-inference steps it took (the trainer's version then, less the
        version the client acted with; 0: on-policy)."""
        with self._cond:
            total, count = self._lag_sum, self._lag_count
            self._lag_sum = self._lag_count = 0
        return {LAG_STAT: [(total / count, StatsAggregationMethod.AVERAGE)]} if count else {}

    def close(self) -> None:
        """Stop serving; clients waiting for an answer get an error reply."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            self._cond.notify_all()
            connections = list(self._connections)
        for sock in connections:  # clients between requests learn at once that the run is over
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5.0)

    def get_steps(self, behavior_name: str) -> tuple[DecisionSteps, TerminalSteps]:
        snapshot = self._snapshots.get(behavior_name)
        if snapshot is None:
            spec = self._behavior_specs[behavior_name]
            return DecisionSteps.empty(spec), TerminalSteps.empty(spec)
        return snapshot.decision_steps, snapshot.terminal_steps

    def taken_actions(self, behavior_name: str) -> TakenActions | None:
        """Which of the last step's decisions the clients acted on themselves (None: none)."""
        snapshot = self._snapshots.get(behavior_name)
        return None if snapshot is None else snapshot.taken

    def set_actions(self, behavior_name: str, action: ActionTuple) -> None:
        """Answer the clients waiting for these decisions (rows of the last ``get_steps``)."""
        snapshot = self._snapshots.get(behavior_name)
        if snapshot is None:
            return
        continuous = np.asarray(action.continuous, np.float32)
        discrete = np.asarray(action.discrete, np.int32)
        with self._cond:
            for row, (episode, event) in enumerate(snapshot.decisions):
                if event.waiting:
                    event.action = (continuous[row].copy(), discrete[row].copy())
                    self._answered.add(episode.episode_id)
            self._cond.notify_all()

    def set_action_for_agent(self, behavior_name: str, agent_id: int, action: ActionTuple) -> None:
        raise NotImplementedError("the policy server acts for all of a step's agents at once (set_actions)")

    # ------------------------------------------------------------ stepping (lock held)

    def _requeue_unanswered(self) -> None:
        """A decision a client still waits for (its step was dropped by a reset) goes back to
        the front of its episode's queue, to be asked again."""
        for snapshot in self._snapshots.values():
            for episode, event in snapshot.decisions:
                if event.waiting and event.action is None:
                    episode.events.appendleft(event)
                    episode.owner.queued += 1
        self._snapshots = {}

    def _read_versions(self) -> None:
        source = self._model_source
        if source is not None:
            self._versions = {name: source.version(name) for name in self._specs}

    def _has_pending(self) -> bool:
        return any(episode.events for episode in self._episodes.values())

    def _end_idle_episodes(self) -> None:
        oldest = self._clock() - self.idle_timeout_s
        for episode in list(self._episodes.values()):
            if episode.last_heard > oldest or episode.ending or episode.events:
                continue
            self._abandon(episode, f"not heard from for {self.idle_timeout_s:.0f} s")

    def _abandon(self, episode: _Episode, why: str) -> None:
        """End ``episode`` as interrupted after its queued steps (its last observation
        bootstraps), freeing its place; one never observed just goes."""
        self._mark_ending(episode)
        if episode.last_obs is None:
            del self._episodes[episode.episode_id]
            return
        logger.info("Episode %s %s: ended as interrupted", episode.episode_id, why)
        episode.events.append(_Event(_Kind.TERMINAL, episode.last_obs, episode.reward, interrupted=True))
        episode.owner.queued += 1
        episode.reward = 0.0

    @staticmethod
    def _mark_ending(episode: _Episode) -> None:
        """No more requests for ``episode``; it stops counting against its connection."""
        episode.ending = True
        episode.owner.open_episodes -= 1

    def _take_snapshot(self) -> None:
        """Take one pending step per episode, oldest episodes first. While a client waits for
        an action, take from each connection at most one per episode it has open (at least
        one): a client that runs its episodes ahead of the trainer (local inference) is then
        served like one that waits for each action, and its rows do not slow the replies."""
        by_behavior: dict[str, tuple[list[tuple[_Episode, _Event]], list[tuple[_Episode, _Event]]]] = {
            name: ([], []) for name in self._specs
        }
        pending = [episode for episode in self._episodes.values() if episode.events]
        fair = any(episode.events[0].waiting for episode in pending)
        share: dict[_Session, int] = {}  # steps each connection may still give this step
        for episode in pending:
            if fair:
                left = share.setdefault(episode.owner, max(1, episode.owner.open_episodes))
                if left == 0:
                    continue
                share[episode.owner] = left - 1
            event = episode.events.popleft()
            episode.owner.queued -= 1
            if event.version >= 0:
                self._lag_sum += self._versions.get(episode.behavior, -1) - event.version
                self._lag_count += 1
            decisions, terminals = by_behavior[episode.behavior]
            if event.kind is _Kind.DECISION:
                decisions.append((episode, event))
            else:
                terminals.append((episode, event))
                del self._episodes[episode.episode_id]
        self._answered.clear()
        self._snapshots = {
            name: self._build_snapshot(self._specs[name], decisions, terminals)
            for name, (decisions, terminals) in by_behavior.items()
        }
        self._cond.notify_all()  # log_steps callers waiting for queue room

    @staticmethod
    def _build_snapshot(
        spec: ClientSpec, decisions: list[tuple[_Episode, _Event]], terminals: list[tuple[_Episode, _Event]]
    ) -> _Snapshot:
        def stack(rows: list[tuple[_Episode, _Event]]) -> list[np.ndarray]:
            return [
                np.stack([event.obs[i] for _, event in rows]) if rows else np.zeros((0, *shape), np.float32)
                for i, shape in enumerate(spec.observation_shapes)
            ]

        n, m = len(decisions), len(terminals)
        decision_steps = DecisionSteps(
            stack(decisions),
            np.array([event.reward for _, event in decisions], np.float32),
            np.array([episode.agent_id for episode, _ in decisions], np.int32),
            None,
            np.zeros(n, np.int32),
            np.zeros(n, np.float32),
        )
        terminal_steps = TerminalSteps(
            stack(terminals),
            np.array([event.reward for _, event in terminals], np.float32),
            np.array([event.interrupted for _, event in terminals], bool),
            np.array([episode.agent_id for episode, _ in terminals], np.int32),
            np.zeros(m, np.int32),
            np.zeros(m, np.float32),
        )
        taken = None
        rows = np.array([event.continuous is not None for _, event in decisions], bool)
        if rows.any():
            continuous = np.zeros((n, spec.continuous_size), np.float32)
            discrete = np.zeros((n, len(spec.discrete_branches)), np.int32)
            for row, (_, event) in enumerate(decisions):
                if event.continuous is not None and event.discrete is not None:
                    continuous[row] = event.continuous
                    discrete[row] = event.discrete
            taken = TakenActions(rows, continuous, discrete)
        return _Snapshot(decisions, decision_steps, terminal_steps, taken)

    def _serve_models(self) -> None:
        """Export the models clients asked for (the lock is released while exporting)."""
        if not self._model_requests:
            return
        source = self._model_source
        requests, self._model_requests = self._model_requests, set()
        self._cond.release()
        try:
            results: dict[str, tuple[int, bytes] | RequestError] = {}
            for behavior in requests:
                if source is None:
                    results[behavior] = RequestError("this server serves no models (local inference is not available)")
                    continue
                try:
                    results[behavior] = source(behavior)
                except LookupError as error:  # the source's way of saying "not made yet"
                    results[behavior] = RequestError(f"no model for behavior {behavior!r} yet: {error}", retry=True)
                except Exception as error:  # noqa: BLE001 - the client is told, the run goes on
                    logger.exception("exporting the model of %s for a policy client failed", behavior)
                    results[behavior] = RequestError(f"exporting the model failed: {type(error).__name__}: {error}")
        finally:
            self._cond.acquire()
        self._models.update(results)
        self._cond.notify_all()

    # ------------------------------------------------------------ requests (any thread)

    def reply(self, session: _Session, message: wire.Message) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The reply to one request; RequestError for a refused one."""
        if self._closed:
            raise RequestError("the server has shut down (the run is over)")
        header, arrays = message
        verb = header.get("verb")
        reply_arrays: dict[str, np.ndarray] = {}
        if verb == "hello":
            reply = self._hello(session, header)
        elif session.behavior is None:
            raise RequestError(f"{verb!r} before 'hello': the first request of a connection must be hello")
        elif (handler := _VERBS.get(verb) if isinstance(verb, str) else None) is None:
            raise RequestError(f"unknown verb {verb!r} (known: hello, {', '.join(_VERBS)})")
        else:
            try:
                reply, reply_arrays = handler(self, session, header, arrays)
            except RequestError as error:
                raise RequestError(f"{verb}: {error}", retry=error.retry) from None
        assert session.behavior is not None
        return {**reply, "model_version": self._versions.get(session.behavior, -1)}, reply_arrays

    def _hello(self, session: _Session, header: dict[str, Any]) -> dict[str, Any]:
        if header.get("protocol") != wire.PROTOCOL_VERSION:
            raise RequestError(
                f"hello: protocol {header.get('protocol')!r} is not supported (this server speaks {wire.PROTOCOL_VERSION})"
            )
        if self.token is not None:
            token = header.get("token")
            if not isinstance(token, str) or not hmac.compare_digest(token.encode(), self.token.encode()):
                raise RequestError("hello: wrong or missing token (the server was started with --server-token)")
        behavior = header.get("behavior")
        if not isinstance(behavior, str) or not behavior or len(behavior) > 256:
            raise RequestError(
                f"hello: 'behavior' must be a non-empty name of at most 256 characters, got {behavior!r}"
            )
        spec = ClientSpec.parse(header.get("spec"))
        with self._cond:
            declared = self._specs.get(behavior)
            check = self._behavior_check
        if declared is None and check is not None and (refusal := check(behavior)) is not None:
            logger.warning("Refused a policy client of behavior %r: %s", behavior, refusal)
            raise RequestError(f"hello: {refusal}; or correct the behavior name this client sends")
        with self._cond:
            declared = self._specs.get(behavior)
            if declared is None and len(self._specs) >= MAX_BEHAVIORS:
                raise RequestError(f"hello: {len(self._specs)} behaviors are declared, the most this server allows")
            if declared is None:
                self._specs[behavior] = spec
                self._behavior_specs[behavior] = spec.to_behavior_spec()
                logger.info("Behavior %s declared by a client: %s", behavior, spec)
            elif (difference := spec.difference(declared)) is not None:
                raise RequestError(f"hello: behavior {behavior!r}: this client's spec differs: {difference}")
        session.behavior = behavior
        session.spec = spec
        return {"behavior_id": behavior}

    def _episode(self, session: _Session, header: dict[str, Any]) -> _Episode:
        """The episode the request names (lock held), marked as heard from."""
        episode_id = header.get("episode_id")
        episode = self._episodes.get(episode_id) if isinstance(episode_id, str) else None
        if episode is None or episode.behavior != session.behavior:
            raise RequestError(f"unknown episode_id {episode_id!r} (never started, already ended, or timed out)")
        if episode.ending:
            raise RequestError(f"episode {episode_id!r} has ended")
        episode.last_heard = self._clock()
        return episode

    def _observations(
        self, session: _Session, arrays: Mapping[str, np.ndarray], prefix: str, rows: int | None
    ) -> list[np.ndarray]:
        """The observation arrays ``prefix0``.. checked against the spec (``rows``: a leading
        [T] axis)."""
        assert session.spec is not None
        shapes = session.spec.observation_shapes
        out = []
        for i, shape in enumerate(shapes):
            name = f"{prefix}{i}"
            array = arrays.get(name)
            expected = shape if rows is None else (rows, *shape)
            if array is None:
                raise RequestError(f"missing array {name!r} (one observation per sensor: {len(shapes)})")
            if array.dtype != np.float32 or array.shape != expected:
                raise RequestError(
                    f"array {name!r}: expected float32 {list(expected)}, got {array.dtype} {list(array.shape)}"
                )
            if not np.isfinite(array).all():
                raise RequestError(f"array {name!r}: holds NaN or infinity")
            out.append(np.array(array, np.float32))
        extra = sorted(
            n for n in arrays if n.startswith(prefix) and n[len(prefix) :] not in {str(i) for i in range(len(shapes))}
        )
        if extra:
            raise RequestError(f"arrays {extra} are not observations of this behavior ({len(shapes)} sensors)")
        return out

    def _actions(
        self, session: _Session, arrays: Mapping[str, np.ndarray], rows: int | None
    ) -> tuple[np.ndarray, np.ndarray]:
        assert session.spec is not None
        spec = session.spec
        lead = () if rows is None else (rows,)
        continuous = arrays.get("continuous", np.zeros((*lead, 0), np.float32))
        discrete = arrays.get("discrete", np.zeros((*lead, 0), np.int32))
        if continuous.dtype != np.float32 or continuous.shape != (*lead, spec.continuous_size):
            raise RequestError(
                f"array 'continuous': expected float32 {[*lead, spec.continuous_size]}, got {continuous.dtype} {list(continuous.shape)}"
            )
        if not np.isfinite(continuous).all():
            raise RequestError("array 'continuous': holds NaN or infinity")
        branches = np.array(spec.discrete_branches, np.int64)
        if discrete.dtype != np.int32 or discrete.shape != (*lead, len(branches)):
            raise RequestError(
                f"array 'discrete': expected int32 {[*lead, len(branches)]}, got {discrete.dtype} {list(discrete.shape)}"
            )
        if ((discrete < 0) | (discrete >= branches)).any():
            raise RequestError(
                f"array 'discrete': an index is outside its branch (branch sizes {list(spec.discrete_branches)})"
            )
        return np.clip(continuous, -1.0, 1.0).astype(np.float32), np.array(discrete, np.int32)

    def _queue(self, episode: _Episode, event: _Event) -> None:
        """Append ``event`` (lock held), waiting while its connection has too many queued."""
        deadline = self._clock() + self.reply_timeout_s
        owner = episode.owner
        while owner.queued >= self.max_queued_steps * max(1, owner.open_episodes) and not self._closed:
            remaining = deadline - self._clock()
            if remaining <= 0:
                raise RequestError(
                    f"{owner.queued} steps of this connection still queued after {self.reply_timeout_s:.0f} s"
                )
            self._cond.wait(remaining)
        if self._closed:
            raise RequestError("the server is shutting down")
        episode.events.append(event)
        owner.queued += 1
        self._answered.discard(episode.episode_id)
        episode.last_obs = event.obs
        episode.last_heard = self._clock()
        self._cond.notify_all()

    def _start_episode(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        with self._cond:
            if session.open_episodes >= self.max_episodes_per_connection:
                raise RequestError(
                    f"this connection has {session.open_episodes} episodes open, the most one connection may "
                    "have: end some (end_episode), or open another connection"
                )
            if len(self._episodes) >= self.max_episodes:
                raise RequestError(
                    f"{len(self._episodes)} episodes are open, the most this server allows; retry when some have ended",
                    retry=True,
                )
            episode_id = secrets.token_hex(8)
            assert session.behavior is not None
            self._episodes[episode_id] = _Episode(
                episode_id, self._next_agent_id, session.behavior, session, self._clock()
            )
            self._next_agent_id += 1
            session.open_episodes += 1
        return {"episode_id": episode_id}, {}

    def _get_action(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        obs = self._observations(session, arrays, "obs_", None)
        with self._cond:
            episode = self._episode(session, header)
            if episode.asking:
                raise RequestError(f"episode {episode.episode_id!r} already waits for an action")
            event = _Event(_Kind.DECISION, obs, episode.reward, waiting=True)
            episode.reward = 0.0
            episode.asking = True
            try:
                self._queue(episode, event)
                deadline = self._clock() + self.reply_timeout_s
                while event.action is None and not self._closed:
                    remaining = deadline - self._clock()
                    if remaining <= 0:
                        raise RequestError(f"no action within {self.reply_timeout_s:.0f} s (is the run stepping?)")
                    self._cond.wait(remaining)
            finally:
                episode.asking = False
            if event.action is None:
                raise RequestError("the server is shutting down")
            continuous, discrete = event.action
            episode.last_heard = self._clock()
        return {}, {"continuous": continuous, "discrete": discrete}

    def _log_action(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        obs = self._observations(session, arrays, "obs_", None)
        continuous, discrete = self._actions(session, arrays, None)
        with self._cond:
            episode = self._episode(session, header)
            reward, episode.reward = episode.reward, 0.0
            self._queue(episode, _Event(_Kind.DECISION, obs, reward, continuous=continuous, discrete=discrete))
        return {}, {}

    def _log_returns(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        reward = _finite(header.get("reward"), "'reward'")
        with self._cond:
            self._episode(session, header).reward += reward
        return {}, {}

    def _end_episode(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        obs = self._observations(session, arrays, "obs_", None)
        interrupted = bool(header.get("interrupted", False))
        with self._cond:
            episode = self._episode(session, header)
            reward, episode.reward = episode.reward, 0.0
            self._mark_ending(episode)
            self._queue(episode, _Event(_Kind.TERMINAL, obs, reward, interrupted=interrupted))
        return {}, {}

    def _log_steps(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        rewards = arrays.get("rewards")
        if rewards is None or rewards.dtype != np.float32 or rewards.ndim != 1:
            raise RequestError("array 'rewards' must be float32 [T]")
        if not np.isfinite(rewards).all():
            raise RequestError("array 'rewards' holds NaN or infinity")
        steps = int(rewards.shape[0])
        obs = self._observations(session, {k: v for k, v in arrays.items() if not k.startswith("end_")}, "obs_", steps)
        continuous, discrete = self._actions(session, arrays, steps)
        versions = arrays.get("versions", np.full(steps, -1, np.int32))
        if versions.dtype != np.int32 or versions.shape != (steps,):
            raise RequestError(
                f"array 'versions': expected int32 [{steps}], got {versions.dtype} {list(versions.shape)}"
            )
        end = header.get("end")
        end_obs: list[np.ndarray] | None = None
        end_reward, interrupted = 0.0, False
        if end is not None:
            if not isinstance(end, dict):
                raise RequestError("'end' must be null or an object {reward, interrupted}")
            end_reward = _finite(end.get("reward", 0.0), "end.reward")
            interrupted = bool(end.get("interrupted", False))
            end_obs = self._observations(session, arrays, "end_obs_", None)
        with self._cond:
            episode = self._episode(session, header)
            for t in range(steps):
                reward, episode.reward = float(rewards[t]) + episode.reward, 0.0
                event = _Event(
                    _Kind.DECISION,
                    [o[t] for o in obs],
                    reward,
                    continuous=continuous[t],
                    discrete=discrete[t],
                    version=int(versions[t]),
                )
                self._queue(episode, event)
            if end_obs is not None:
                reward, episode.reward = episode.reward + end_reward, 0.0
                self._mark_ending(episode)
                self._queue(episode, _Event(_Kind.TERMINAL, end_obs, reward, interrupted=interrupted))
        return {}, {}

    def _get_model(
        self, session: _Session, header: dict[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        known = header.get("known_version", -1)
        if not _is_int(known):
            raise RequestError(f"'known_version' must be an integer, got {known!r}")
        behavior = session.behavior
        assert behavior is not None
        with self._cond:
            self._models.pop(behavior, None)
            self._model_requests.add(behavior)
            self._cond.notify_all()
            deadline = self._clock() + self.reply_timeout_s
            while (result := self._models.get(behavior)) is None and not self._closed:
                remaining = deadline - self._clock()
                if remaining <= 0:
                    raise RequestError(f"no model within {self.reply_timeout_s:.0f} s (is the run stepping?)")
                self._cond.wait(remaining)
        if result is None:
            raise RequestError("the server is shutting down")
        if isinstance(result, RequestError):
            raise result
        version, model = result
        if version == known:
            return {"version": version, "format": "onnx", "unchanged": True}, {}
        return {"version": version, "format": "onnx", "unchanged": False}, {"model": np.frombuffer(model, np.uint8)}

    # ------------------------------------------------------------ connections

    def _admit(self, sock: socket.socket) -> bool:
        with self._cond:
            if len(self._connections) >= self.max_connections or self._closed:
                return False
            self._connections.add(sock)
            return True

    def _leave(self, sock: socket.socket, session: _Session) -> None:
        """Forget a closed connection; its open episodes end as interrupted at once, so their
        places serve other clients instead of waiting out the idle timeout."""
        with self._cond:
            self._connections.discard(sock)
            for episode in [e for e in self._episodes.values() if e.owner is session and not e.ending]:
                self._abandon(episode, "lost its connection")
            self._cond.notify_all()


def _finite(value: Any, where: str) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise RequestError(f"{where} must be a finite number, got {value!r}")
    return float(value)


_Verb = Callable[
    [PolicyServerEnv, "_Session", dict[str, Any], Mapping[str, np.ndarray]],
    tuple[dict[str, Any], dict[str, np.ndarray]],
]
_VERBS: dict[str, _Verb] = {
    "start_episode": PolicyServerEnv._start_episode,
    "get_action": PolicyServerEnv._get_action,
    "log_action": PolicyServerEnv._log_action,
    "log_returns": PolicyServerEnv._log_returns,
    "end_episode": PolicyServerEnv._end_episode,
    "log_steps": PolicyServerEnv._log_steps,
    "get_model": PolicyServerEnv._get_model,
}


@attrs.define(eq=False)
class _Session:
    """One connection's state: the behavior its hello named."""

    behavior: str | None = None
    spec: ClientSpec | None = None
    queued: int = 0  # steps of its episodes waiting to be taken
    open_episodes: int = 0  # episodes it started and has not ended


class _TCPServer(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type[socketserver.BaseRequestHandler], env: PolicyServerEnv):
        self.env = env
        super().__init__(address, handler)


class _Handler(socketserver.BaseRequestHandler):
    """Serves one connection: a request, a reply, until the client hangs up."""

    server: _TCPServer

    def handle(self) -> None:
        env = self.server.env
        sock: socket.socket = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if not env._admit(sock):
            self._send(sock, wire.error_frame(f"too many connections (the most is {env.max_connections})"))
            return
        session = _Session()
        try:
            while True:
                try:
                    payload = wire.read_frame(sock, env.max_frame_bytes, body_timeout_s=env.reply_timeout_s)
                except wire.FrameTooLarge as error:
                    self._send(sock, wire.error_frame(f"{error}; closing the connection"))
                    return
                if payload is None:
                    return
                try:
                    header, arrays = env.reply(session, wire.decode(payload))
                    reply = wire.encode({"ok": True, **header}, arrays)
                except RequestError as error:
                    reply = wire.error_frame(str(error), retry=error.retry)
                except wire.WireError as error:
                    reply = wire.error_frame(str(error))
                except Exception as error:  # noqa: BLE001 - a bad request must not end the server
                    logger.exception("policy server: request failed")
                    reply = wire.error_frame(f"internal error: {type(error).__name__}: {error}")
                if not self._send(sock, reply):
                    return
        except OSError:  # the client went away mid-frame
            return
        finally:
            env._leave(sock, session)

    @staticmethod
    def _send(sock: socket.socket, frame: bytes) -> bool:
        try:
            sock.sendall(frame)
            return True
        except OSError:
            return False
