"""The Python policy client: a simulator that drives its own loop trains through a run started
with ``--env external:PORT``.

    client = PolicyClient("127.0.0.1:5005", "Walker", [(8,)], continuous_size=2)
    episode = client.start_episode()
    action = client.get_action(episode, [obs])      # (continuous [2], discrete [0])
    client.log_returns(episode, reward)
    client.end_episode(episode, [final_obs])

``inference="remote"`` asks the server for every action (one round trip per step).
``inference="local"`` fetches the current policy as ONNX (the model Unity runs), acts with
onnxruntime in this process, and sends each episode's steps in batches of ``flush_steps`` (and
at its end); the server replays them as actions the client chose, so the trainer records them
with the current policy's log-probabilities. Every reply names the server's current model
version: the client fetches a newer one before its next action (and at least every
``refresh_s`` seconds, for servers that do not name it), so it acts with a policy at most one
request old; the server holds ``log_steps`` while it has more of this connection's steps
waiting than it allows, so the client runs only that far ahead of the trainer. Local inference
does not support recurrent policies. Calls are serialized by a lock (one connection per
client): for simulators stepping in parallel threads, one client per thread goes faster.
Closing the client (or losing its connection) ends its open episodes as interrupted.
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from envs.external import wire

TOKEN_ENV_VAR = "AGENTS_LEARN_SERVER_TOKEN"
_MAX_REPLY_BYTES = 1 << 30


class PolicyServerError(RuntimeError):
    """The server refused a request; the message is the server's reason. ``retry``: the same
    request may succeed later."""

    def __init__(self, message: str, *, retry: bool = False) -> None:
        super().__init__(message)
        self.retry = retry


@attrs.define
class _Steps:
    """A local-inference episode's steps not yet sent: row t is (obs_t, reward logged before
    it, the action taken)."""

    obs: list[list[np.ndarray]] = attrs.field(factory=list)
    rewards: list[float] = attrs.field(factory=list)
    continuous: list[np.ndarray] = attrs.field(factory=list)
    discrete: list[np.ndarray] = attrs.field(factory=list)
    versions: list[int] = attrs.field(factory=list)  # the model version that chose each action
    pending_reward: float = 0.0


class PolicyClient:
    """One connection to a policy server for one behavior; see the module docstring.

    address: ``"host:port"``. observation_shapes: one shape per sensor (the first client of
    a behavior declares them with the action spec; later ones must match). token: the
    server's ``--server-token`` (default: the ``AGENTS_LEARN_SERVER_TOKEN`` environment
    variable). timeout_s: the longest to wait for a reply. connect_timeout_s: how long to keep
    trying while nothing listens yet (the run is starting). refresh_s (local inference): the
    longest between checks for a newer model, beside those the server's replies prompt.
    flush_steps (local inference): an episode's steps sent in one request.
    """

    def __init__(
        self,
        address: str,
        behavior_name: str,
        observation_shapes: Sequence[Sequence[int]],
        continuous_size: int = 0,
        discrete_branches: Sequence[int] = (),
        inference: str = "remote",
        token: str | None = None,
        *,
        timeout_s: float = 120.0,
        connect_timeout_s: float = 30.0,
        refresh_s: float = 10.0,
        flush_steps: int = 64,
    ) -> None:
        if inference not in ("remote", "local"):
            raise ValueError(f"inference must be 'remote' or 'local', got {inference!r}")
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"address must be 'host:port', got {address!r}")
        self.behavior_name = behavior_name
        self.observation_shapes = tuple(tuple(int(s) for s in shape) for shape in observation_shapes)
        self.continuous_size = int(continuous_size)
        self.discrete_branches = tuple(int(b) for b in discrete_branches)
        self.inference = inference
        self.timeout_s = timeout_s
        self.refresh_s = refresh_s
        self.flush_steps = flush_steps
        self._lock = threading.RLock()
        self._sock = _connect(host.strip("[]"), int(port), timeout_s, connect_timeout_s)
        self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._steps: dict[str, _Steps] = {}
        self._session: Any = None
        self._model_version = -1
        self._server_version = -1  # the newest model version a reply named
        self._fetched_at = 0.0
        token = token if token is not None else os.environ.get(TOKEN_ENV_VAR)
        spec = {
            "observation_shapes": [list(s) for s in self.observation_shapes],
            "continuous_size": self.continuous_size,
            "discrete_branches": list(self.discrete_branches),
        }
        hello: dict[str, Any] = {
            "verb": "hello",
            "protocol": wire.PROTOCOL_VERSION,
            "behavior": behavior_name,
            "spec": spec,
        }
        if token:
            hello["token"] = token
        try:
            self._request(hello)
            if inference == "local":
                self._fetch_model()
        except BaseException:
            self._sock.close()
            raise

    @property
    def model_version(self) -> int:
        """The version of the policy local inference acts with (-1: none fetched; remote: -1)."""
        return self._model_version

    # ------------------------------------------------------------ the verbs

    def start_episode(self) -> str:
        """Open an episode; returns its id."""
        header, _ = self._request({"verb": "start_episode"})
        return str(header["episode_id"])

    def get_action(self, episode_id: str, observations: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """The policy's action for ``observations`` (one array per sensor): continuous [c]
        float32 in [-1, 1] and discrete [b] int32 branch indices."""
        obs = self._check_obs(observations)
        if self.inference == "remote":
            _, arrays = self._request({"verb": "get_action", "episode_id": episode_id}, _obs_arrays("obs_", obs))
            return arrays["continuous"].copy(), arrays["discrete"].copy()
        with self._lock:
            self._refresh_model()
            continuous, discrete = self._infer(obs)
            self._add_step(episode_id, obs, continuous, discrete, self._model_version)
        return continuous, discrete

    def log_action(
        self, episode_id: str, observations: Sequence[np.ndarray], continuous: np.ndarray, discrete: np.ndarray
    ) -> None:
        """Record an action the simulator chose itself for ``observations`` (off-policy)."""
        obs = self._check_obs(observations)
        cont = np.asarray(continuous, np.float32).reshape(self.continuous_size)
        disc = np.asarray(discrete, np.int32).reshape(len(self.discrete_branches))
        if self.inference == "remote":
            arrays = {**_obs_arrays("obs_", obs), "continuous": cont, "discrete": disc}
            self._request({"verb": "log_action", "episode_id": episode_id}, arrays)
            return
        with self._lock:
            self._add_step(episode_id, obs, cont, disc, -1)

    def log_returns(self, episode_id: str, reward: float) -> None:
        """Add ``reward`` to what the episode's last action earned."""
        if self.inference == "remote":
            self._request({"verb": "log_returns", "episode_id": episode_id, "reward": float(reward)})
            return
        with self._lock:
            self._steps.setdefault(episode_id, _Steps()).pending_reward += float(reward)

    def end_episode(self, episode_id: str, observations: Sequence[np.ndarray], interrupted: bool = False) -> None:
        """End the episode with its final observation (``interrupted``: cut short, e.g. at a
        time limit; the trainer then bootstraps from this observation)."""
        obs = self._check_obs(observations)
        if self.inference == "remote":
            header = {"verb": "end_episode", "episode_id": episode_id, "interrupted": interrupted}
            self._request(header, _obs_arrays("obs_", obs))
            return
        with self._lock:
            self._flush(episode_id, end=(obs, interrupted))

    def close(self) -> None:
        """Send what local inference still holds and hang up (the server then ends the
        episodes still open as interrupted)."""
        with self._lock:
            try:
                for episode_id in list(self._steps):
                    self._flush(episode_id, end=None)
            except (OSError, PolicyServerError):
                pass
            finally:
                self._sock.close()

    def __enter__(self) -> PolicyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------ plumbing

    def _request(
        self, header: dict[str, Any], arrays: dict[str, np.ndarray] | None = None
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        with self._lock:
            try:
                self._sock.sendall(wire.encode(header, arrays))
                payload = wire.read_frame(self._sock, _MAX_REPLY_BYTES)
            except OSError:  # a timeout or a broken connection: a late reply must not answer the next request
                self._sock.close()
                raise
        if payload is None:
            raise ConnectionError("the policy server closed the connection")
        reply, reply_arrays = wire.decode(payload)
        if not reply.get("ok"):
            raise PolicyServerError(
                str(reply.get("error", f"{header.get('verb')} refused")), retry=bool(reply.get("retry", False))
            )
        version = reply.get("model_version")
        if isinstance(version, int):
            self._server_version = version
        return reply, reply_arrays

    def _check_obs(self, observations: Sequence[np.ndarray]) -> list[np.ndarray]:
        if isinstance(observations, np.ndarray):
            observations = [observations]
        if len(observations) != len(self.observation_shapes):
            raise ValueError(f"expected {len(self.observation_shapes)} observation arrays, got {len(observations)}")
        out = []
        for i, (o, shape) in enumerate(zip(observations, self.observation_shapes)):
            array = np.asarray(o, np.float32)
            if array.shape != shape:
                raise ValueError(f"observation {i}: expected shape {list(shape)}, got {list(array.shape)}")
            out.append(array)
        return out

    # ------------------------------------------------------------ local inference (lock held)

    def _fetch_model(self) -> None:
        """Fetch the policy (waiting while the run has not made it yet) unless unchanged."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                header, arrays = self._request({"verb": "get_model", "known_version": self._model_version})
                break
            except PolicyServerError as error:
                if not error.retry or time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        self._fetched_at = time.monotonic()
        if header.get("unchanged"):
            return
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        session = onnxruntime.InferenceSession(
            arrays["model"].tobytes(), sess_options=options, providers=["CPUExecutionProvider"]
        )
        outputs = {o.name for o in session.get_outputs()}
        if "recurrent_out" in outputs:
            raise PolicyServerError("local inference of a recurrent policy is not supported: use inference='remote'")
        self._session = session
        self._model_version = int(header["version"])

    def _refresh_model(self) -> None:
        if self._server_version > self._model_version or time.monotonic() - self._fetched_at >= self.refresh_s:
            self._fetch_model()

    def _infer(self, obs: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        feed = {}
        for i, o in enumerate(obs):
            if o.ndim == 3:
                o = o.transpose(2, 0, 1)  # images: HWC -> CHW
            elif o.ndim == 2:
                o = o.reshape(o.shape[1], o.shape[0]).T  # entities: the feature-major layout the graph reads
            feed[f"obs_{i}"] = o[None]
        if self.discrete_branches:
            feed["action_masks"] = np.ones((1, sum(self.discrete_branches)), np.float32)
        names = []
        if self.continuous_size:
            names.append("continuous_actions")
        if self.discrete_branches:
            names.append("discrete_actions")
        results = dict(zip(names, self._session.run(names, feed)))
        continuous = results.get("continuous_actions", np.zeros((1, 0), np.float32))[0].astype(np.float32)
        discrete = results.get("discrete_actions", np.zeros((1, 0), np.int64))[0].astype(np.int32)
        return np.clip(continuous, -1.0, 1.0), discrete

    def _add_step(
        self, episode_id: str, obs: list[np.ndarray], continuous: np.ndarray, discrete: np.ndarray, version: int
    ) -> None:
        """Buffer one step (``version``: of the model that chose the action; -1: the simulator did)."""
        steps = self._steps.setdefault(episode_id, _Steps())
        steps.obs.append(obs)
        steps.rewards.append(steps.pending_reward)
        steps.pending_reward = 0.0
        steps.continuous.append(continuous)
        steps.discrete.append(discrete)
        steps.versions.append(version)
        if len(steps.rewards) >= self.flush_steps:
            self._flush(episode_id, end=None)

    def _flush(self, episode_id: str, end: tuple[list[np.ndarray], bool] | None) -> None:
        """Send the episode's buffered steps (and its end, if given)."""
        steps = self._steps.pop(episode_id, None) or _Steps()
        n = len(steps.rewards)
        arrays: dict[str, np.ndarray] = {
            f"obs_{i}": np.stack([row[i] for row in steps.obs]) if n else np.zeros((0, *shape), np.float32)
            for i, shape in enumerate(self.observation_shapes)
        }
        arrays["rewards"] = np.array(steps.rewards, np.float32)
        arrays["continuous"] = np.array(steps.continuous, np.float32).reshape(n, self.continuous_size)
        arrays["discrete"] = np.array(steps.discrete, np.int32).reshape(n, len(self.discrete_branches))
        arrays["versions"] = np.array(steps.versions, np.int32).reshape(n)
        header: dict[str, Any] = {"verb": "log_steps", "episode_id": episode_id, "end": None}
        if end is not None:
            end_obs, interrupted = end
            header["end"] = {"reward": steps.pending_reward, "interrupted": interrupted}
            arrays.update(_obs_arrays("end_obs_", end_obs))
        else:
            if steps.pending_reward:
                self._steps[episode_id] = _Steps(pending_reward=steps.pending_reward)  # goes with the next step
            if n == 0:
                return
        self._request(header, arrays)


def _connect(host: str, port: int, timeout_s: float, connect_timeout_s: float) -> socket.socket:
    """A connection to the server, retried while it refuses (not listening yet)."""
    deadline = time.monotonic() + connect_timeout_s
    while True:
        try:
            return socket.create_connection((host, port), timeout=timeout_s)
        except ConnectionRefusedError:
            if time.monotonic() >= deadline:
                raise ConnectionRefusedError(
                    f"nothing listens on {host}:{port} (waited {connect_timeout_s:.0f} s): is the run started with --env external:{port}?"
                ) from None
            time.sleep(0.2)


def _obs_arrays(prefix: str, obs: list[np.ndarray]) -> dict[str, np.ndarray]:
    return {f"{prefix}{i}": o for i, o in enumerate(obs)}
