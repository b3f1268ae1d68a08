"""The policy server of ``--env external:PORT`` and its client: the wire format, bad clients
refused with a reason while good ones go on, abandoned episodes ended as interrupted, the
exact trajectory a scripted client produces, and client-chosen actions recorded with the
policy's log-probabilities of them."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from mlagents_envs.base_env import ActionTuple

from envs.external import PolicyClient, PolicyServerEnv, PolicyServerError, wire
from envs.workers import InProcessPool, OpenEnv
from orchestration.env_manager import BehaviorRuntime, EnvManager
from orchestration.external import OnnxModels
from processors import AgentManager
from stats import StatsReporter
from trainers.networks.policy import TorchPolicy
from trainers.settings import NetworkSettings

torch.set_num_threads(1)


class Stepper:
    """Steps a server as a run would, answering every decision with continuous 0.5 and
    discrete 1, and keeps what each step returned."""

    def __init__(self, env: PolicyServerEnv) -> None:
        self.env = env
        self.decisions: list[tuple[str, np.ndarray, np.ndarray]] = []  # (behavior, agent ids, rewards)
        self.terminals: list[tuple[str, np.ndarray, np.ndarray, np.ndarray]] = []  # + interrupted
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.env.step()
            for name, spec in self.env.behavior_specs.items():
                decision, terminal = self.env.get_steps(name)
                if len(terminal):
                    self.terminals.append((name, terminal.agent_id, terminal.reward, terminal.interrupted))
                if len(decision):
                    self.decisions.append((name, decision.agent_id, decision.reward))
                    n = len(decision)
                    self.env.set_actions(
                        name,
                        ActionTuple(
                            continuous=np.full((n, spec.action_spec.continuous_size), 0.5, np.float32),
                            discrete=np.ones((n, len(spec.action_spec.discrete_branches)), np.int32),
                        ),
                    )

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@pytest.fixture
def server() -> Iterator[tuple[PolicyServerEnv, Stepper, str]]:
    env = PolicyServerEnv(0, step_wait_s=0.05, idle_timeout_s=0.5, max_frame_bytes=1 << 16, token="s3cret")
    stepper = Stepper(env)
    yield env, stepper, env.address
    stepper.stop()
    env.close()


def client(address: str, **kwargs) -> PolicyClient:
    kwargs.setdefault("token", "s3cret")
    return PolicyClient(address, "Walker", [(3,)], continuous_size=1, discrete_branches=(2,), **kwargs)


def one_episode(c: PolicyClient, steps: int = 3) -> tuple[np.ndarray, np.ndarray]:
    episode = c.start_episode()
    for t in range(steps):
        continuous, discrete = c.get_action(episode, [np.full(3, t, np.float32)])
        c.log_returns(episode, 1.0)
    c.end_episode(episode, [np.zeros(3, np.float32)])
    return continuous, discrete


def raw_request(address: str, frame: bytes) -> dict:
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(frame)
        payload = wire.read_frame(sock, 1 << 20)
    assert payload is not None
    return wire.decode(payload).header


# ---------------------------------------------------------------- the wire format


def test_frames_round_trip_every_dtype():
    arrays = {
        "obs_0": np.arange(6, dtype=np.float32).reshape(2, 3),
        "discrete": np.array([[1, 0]], np.int32),
        "image": np.full((2, 2, 1), 255, np.uint8),
        "empty": np.zeros((0, 4), np.float32),
    }
    frame = wire.encode({"verb": "log_steps", "episode_id": "e1"}, arrays)
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    header, decoded = wire.decode(frame[4:])
    assert header == {"verb": "log_steps", "episode_id": "e1"}
    for name, array in arrays.items():
        assert decoded[name].dtype == array.dtype and np.array_equal(decoded[name], array)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["float32", "int32", "uint8"]), st.lists(st.integers(0, 4), min_size=0, max_size=3)),
        max_size=5,
    ),
    st.dictionaries(st.text(min_size=1, max_size=8).filter(lambda k: k != "arrays"), st.integers() | st.text()),
)
def test_any_arrays_and_header_round_trip(specs, header):
    rng = np.random.default_rng(0)
    arrays = {f"a{i}": (rng.random(shape) * 100).astype(dtype) for i, (dtype, shape) in enumerate(specs)}
    frame = wire.encode(header, arrays)
    decoded_header, decoded = wire.decode(frame[4:])
    assert decoded_header == header
    assert decoded.keys() == arrays.keys()
    for name, array in arrays.items():
        assert decoded[name].dtype == array.dtype and decoded[name].shape == array.shape
        assert np.array_equal(decoded[name], array)


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"\x00\x00", "shorter than its 4-byte header length"),
        (b"\x00\x00\x00\xff{}", "runs past the payload"),
        (b"\x00\x00\x00\x03{x}", "not UTF-8 JSON"),
        (b"\x00\x00\x00\x02[]", "must be a JSON object"),
        (b'\x00\x00\x00\x0f{"arrays":"no"}', "'arrays' must be a list"),
    ],
)
def test_malformed_payloads_name_the_problem(payload, problem):
    with pytest.raises(wire.WireError, match=problem):
        wire.decode(payload)


def test_array_descriptors_are_checked():
    def header(*descriptors):
        head = ('{"arrays":[' + ",".join(descriptors) + "]}").encode()
        return struct.pack(">I", len(head)) + head + bytes(8)

    with pytest.raises(wire.WireError, match="dtype 'float64'"):
        wire.decode(header('{"name":"a","dtype":"float64","shape":[1],"offset":0}'))
    with pytest.raises(wire.WireError, match="lie outside the 8 data bytes"):
        wire.decode(header('{"name":"a","dtype":"float32","shape":[3],"offset":0}'))
    with pytest.raises(wire.WireError, match="overlap"):
        wire.decode(
            header(
                '{"name":"a","dtype":"float32","shape":[2],"offset":0}',
                '{"name":"b","dtype":"float32","shape":[1],"offset":4}',
            )
        )
    with pytest.raises(wire.WireError, match="lie outside"):
        wire.decode(header('{"name":"a","dtype":"int32","shape":[4294967296,4294967296,4294967296,4],"offset":0}'))
    with pytest.raises(wire.WireError, match="'shape' must be"):
        wire.decode(header('{"name":"a","dtype":"uint8","shape":[-1],"offset":0}'))


# ---------------------------------------------------------------- bad clients, good clients


def test_bad_requests_get_reasons_while_another_client_works(server):
    env, stepper, address = server
    good = client(address)
    episode = good.start_episode()
    good.get_action(episode, [np.zeros(3, np.float32)])

    garbage = struct.pack(">I", 10) + b"\x00\x00\x00\x06garbag"
    assert "not UTF-8 JSON" in raw_request(address, garbage)["error"]
    huge = struct.pack(">I", (1 << 16) + 1)
    assert "over the limit of 65536 bytes" in raw_request(address, huge)["error"]
    assert "before 'hello'" in raw_request(address, wire.encode({"verb": "start_episode"}))["error"]
    with pytest.raises(PolicyServerError, match="wrong or missing token"):
        client(address, token="guess")
    with pytest.raises(
        PolicyServerError, match=r"observation_shapes \[\[4\]\] \(the behavior was declared with \[\[3\]\]\)"
    ):
        PolicyClient(address, "Walker", [(4,)], continuous_size=1, discrete_branches=(2,), token="s3cret")
    with pytest.raises(PolicyServerError, match=r"discrete_branches \[3\]"):
        PolicyClient(address, "Walker", [(3,)], continuous_size=1, discrete_branches=(3,), token="s3cret")
    with pytest.raises(PolicyServerError, match=r"observation 0 of 1073741824 values \(the most is 4194304\)"):
        PolicyClient(address, "Huge", [(1 << 30,)], continuous_size=1, token="s3cret")
    with pytest.raises(PolicyServerError, match="get_model: this server serves no models"):
        client(address, inference="local")
    with pytest.raises(PolicyServerError, match="unknown episode_id 'nope'"):
        good.get_action("nope", [np.zeros(3, np.float32)])
    with pytest.raises(PolicyServerError, match="an index is outside its branch"):
        good.log_action(episode, [np.zeros(3, np.float32)], np.zeros(1, np.float32), np.array([2], np.int32))

    # the good client's episode goes on undisturbed, and so does the connection
    continuous, discrete = good.get_action(episode, [np.ones(3, np.float32)])
    assert continuous.tolist() == [0.5] and discrete.tolist() == [1]
    good.end_episode(episode, [np.ones(3, np.float32)])
    good.close()


def test_an_abandoned_episode_ends_as_interrupted(server):
    env, stepper, address = server
    gone, staying = client(address), client(address)
    abandoned = gone.start_episode()
    gone.get_action(abandoned, [np.zeros(3, np.float32)])
    gone.log_returns(abandoned, 0.25)
    gone._sock.close()  # the simulator crashed: no end_episode
    one_episode(staying)
    deadline = time.monotonic() + 10
    while len(stepper.terminals) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    ended = {
        int(ids[0]): (float(rewards[0]), bool(interrupted[0])) for _, ids, rewards, interrupted in stepper.terminals
    }
    assert ended == {0: (0.25, True), 1: (1.0, False)}
    with pytest.raises(PolicyServerError, match="unknown episode_id"):
        staying.get_action(abandoned, [np.zeros(3, np.float32)])
    staying.close()


def test_open_episodes_are_capped_per_connection_and_in_all():
    env = PolicyServerEnv(0, max_episodes=3, max_episodes_per_connection=2)
    try:
        greedy, other = client(env.address, token=None), client(env.address, token=None)
        greedy.start_episode(), greedy.start_episode()
        with pytest.raises(PolicyServerError, match="this connection has 2 episodes open, the most one connection"):
            greedy.start_episode()
        other.start_episode()  # the greedy connection did not take the others' places
        with pytest.raises(PolicyServerError, match="3 episodes are open, the most this server allows") as refused:
            other.start_episode()
        assert refused.value.retry
        greedy.close(), other.close()
    finally:
        env.close()


def test_a_closed_connections_episodes_end_at_once_and_free_their_places():
    env = PolicyServerEnv(0, step_wait_s=0.05, idle_timeout_s=600.0, max_episodes=2)
    stepper = Stepper(env)
    try:
        gone = client(env.address, token=None)
        episodes = [gone.start_episode(), gone.start_episode()]
        for episode in episodes:
            gone.get_action(episode, [np.zeros(3, np.float32)])
        gone.log_returns(episodes[1], 0.5)
        gone.close()  # no end_episode: the simulator quit
        deadline = time.monotonic() + 10  # far less than the idle timeout
        while sum(len(ids) for _, ids, _, _ in stepper.terminals) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        ended = {
            int(i): (float(r), bool(x))
            for _, ids, rewards, interrupted in stepper.terminals
            for i, r, x in zip(ids, rewards, interrupted)
        }
        assert ended == {0: (0.0, True), 1: (0.5, True)}
        staying = client(env.address, token=None)
        one_episode(staying)  # the server had room again
        staying.close()
    finally:
        stepper.stop()
        env.close()


def test_clients_learn_at_once_that_the_run_is_over():
    env = PolicyServerEnv(0)
    c = client(env.address, token=None)
    episode = c.start_episode()
    env.close()
    start = time.monotonic()
    with pytest.raises((ConnectionError, PolicyServerError)):
        c.log_returns(episode, 1.0)
    assert time.monotonic() - start < 2.0
    c.close()


# ---------------------------------------------------------------- into the processor


def manager_for(env: PolicyServerEnv, seed: int = 5) -> tuple[EnvManager, dict[str, BehaviorRuntime]]:
    runtimes: dict[str, BehaviorRuntime] = {}

    def create(behavior_id, spec):
        policy = TorchPolicy(spec, NetworkSettings(num_layers=1, hidden_units=8), seed=seed)
        manager = AgentManager(policy, behavior_id, StatsReporter(behavior_id), 100, threaded=False)
        runtimes[behavior_id] = BehaviorRuntime(manager, policy)
        return runtimes[behavior_id]

    pool = InProcessPool(opener=lambda worker_id: OpenEnv(env, dict))
    return EnvManager(pool, create), runtimes


def drive(manager: EnvManager, script, timeout: float = 20.0) -> None:
    """Step ``manager`` while ``script`` (a client's loop) runs in a thread."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            script()
        except BaseException as error:  # noqa: BLE001 - re-raised in the test's thread
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + timeout
    while thread.is_alive() and time.monotonic() < deadline:
        manager.advance(0.0)
    for _ in range(8):  # the steps still queued (a local client's arrive all at its episode's end)
        manager.advance(0.0)
    thread.join(timeout=1)
    if errors:
        raise errors[0]


def test_a_scripted_episode_is_the_expected_trajectory():
    env = PolicyServerEnv(0, step_wait_s=0.02)
    manager, runtimes = manager_for(env)
    address = env.address
    actions = []

    def script() -> None:
        c = PolicyClient(address, "Walker", [(2,)], continuous_size=1)
        episode = c.start_episode()
        c.log_returns(episode, 5.0)  # before the first decision: no action earned it
        for t in range(3):
            actions.append(c.get_action(episode, [np.array([t, -t], np.float32)])[0])
            c.log_returns(episode, 0.5 * (t + 1))
            c.log_returns(episode, 0.25)
        c.end_episode(episode, [np.array([9, 9], np.float32)])
        c.close()

    try:
        drive(manager, script)
        queue = runtimes["Walker"].manager.trajectory_queue
        trajectory = queue.get_nowait()
        assert queue.empty()
    finally:
        manager.close()
    assert trajectory.agent_id == "agent_0-0"
    assert np.array_equal(trajectory.obs[0], [[0, 0], [1, -1], [2, -2]])
    assert np.allclose(trajectory.rewards, [0.75, 1.25, 1.75])
    assert trajectory.done.tolist() == [False, False, True]
    assert trajectory.interrupted.tolist() == [False, False, False]
    assert np.array_equal(trajectory.next_obs[0], [9, 9])
    # what the client was sent is the clipped, scaled sample the trainer keeps
    sent = np.concatenate(actions)
    assert np.allclose(sent, np.clip(trajectory.continuous_actions[:, 0], -3, 3) / 3)


def test_logged_actions_are_recorded_with_the_policys_log_probs():
    env = PolicyServerEnv(0, step_wait_s=0.02)
    manager, runtimes = manager_for(env)
    address = env.address
    observations = [np.array([0.5, -1], np.float32), np.array([0.2, 0.3], np.float32)]
    chosen = [
        (np.array([0.9], np.float32), np.array([2], np.int32)),
        (np.array([-0.4], np.float32), np.array([0], np.int32)),
    ]

    def script() -> None:
        c = PolicyClient(address, "Walker", [(2,)], continuous_size=1, discrete_branches=(3,))
        episode = c.start_episode()
        for obs, (continuous, discrete) in zip(observations, chosen):
            c.log_action(episode, [obs], continuous, discrete)
            c.log_returns(episode, 1.0)
        c.end_episode(episode, [np.zeros(2, np.float32)])
        c.close()

    try:
        drive(manager, script)
        trajectory = runtimes["Walker"].manager.trajectory_queue.get_nowait()
    finally:
        manager.close()
    policy = runtimes["Walker"].policy
    assert np.allclose(trajectory.continuous_actions[:, 0], [2.7, -1.2])  # the client's, in sample space
    assert trajectory.discrete_actions[:, 0].tolist() == [2, 0]
    with torch.no_grad():
        cont_lp, disc_lp, _ = policy.actor.evaluate_actions(
            [torch.as_tensor(np.stack(observations))],
            None,
            torch.tensor([[2.7], [-1.2]]),
            torch.tensor([[2], [0]]),
        )
    assert np.allclose(trajectory.continuous_log_probs, cont_lp.numpy(), atol=1e-6)
    assert np.allclose(trajectory.discrete_log_probs, disc_lp.numpy(), atol=1e-6)
    assert trajectory.done.tolist() == [False, True]


def test_local_inference_steps_replay_as_the_clients_actions():
    env = PolicyServerEnv(0, step_wait_s=0.02)
    manager, runtimes = manager_for(env)
    models = OnnxModels()
    models.attach(manager.runtimes)
    env.serve_models(models)
    observations = [np.array([t, 1 - t], np.float32) for t in range(3)]
    taken: list[tuple[np.ndarray, np.ndarray]] = []
    versions: list[int] = []

    def script() -> None:
        c = PolicyClient(
            env.address, "Walker", [(2,)], continuous_size=1, discrete_branches=(3,), inference="local", refresh_s=0.0
        )
        episode = c.start_episode()
        for t, obs in enumerate(observations):
            if t == 2:
                runtimes["Walker"].weights_version += 1  # as if the trainer published new weights
            taken.append(c.get_action(episode, [obs]))
            versions.append(c.model_version)
            c.log_returns(episode, t + 1.0)
        c.end_episode(episode, [np.full(2, 7, np.float32)])
        c.close()

    try:
        drive(manager, script)
        trajectory = runtimes["Walker"].manager.trajectory_queue.get_nowait()
    finally:
        manager.close()
    assert versions == [0, 0, 1]  # re-fetched only when the version changed
    assert np.array_equal(trajectory.obs[0], np.stack(observations))
    assert trajectory.rewards.tolist() == [1.0, 2.0, 3.0] and trajectory.done.tolist() == [False, False, True]
    continuous = np.stack([c for c, _ in taken])
    discrete = np.stack([d for _, d in taken])
    assert np.allclose(trajectory.continuous_actions, 3 * continuous) and np.abs(continuous).max() <= 1
    assert np.array_equal(trajectory.discrete_actions, discrete)
    with torch.no_grad():
        cont_lp, disc_lp, _ = runtimes["Walker"].policy.actor.evaluate_actions(
            [torch.as_tensor(np.stack(observations))], None, torch.as_tensor(3 * continuous), torch.as_tensor(discrete)
        )
    assert np.allclose(trajectory.continuous_log_probs, cont_lp.numpy(), atol=1e-5)
    assert np.allclose(trajectory.discrete_log_probs, disc_lp.numpy(), atol=1e-5)


def test_local_clients_fetch_a_new_model_as_soon_as_a_reply_names_it():
    env = PolicyServerEnv(0, step_wait_s=0.02)
    manager, runtimes = manager_for(env)
    models = OnnxModels()
    models.attach(manager.runtimes)
    env.serve_models(models)
    obs = [np.ones(2, np.float32)]
    seen: list[int] = []

    def script() -> None:
        c = PolicyClient(
            env.address, "Walker", [(2,)], continuous_size=1, inference="local", refresh_s=3600.0, flush_steps=1
        )
        episode = c.start_episode()
        c.get_action(episode, obs)
        seen.append(c.model_version)
        runtimes["Walker"].weights_version += 1  # as if the trainer published new weights
        deadline = time.monotonic() + 10  # refresh_s alone would wait an hour
        while c.model_version < 1 and time.monotonic() < deadline:
            c.get_action(episode, obs)
        seen.append(c.model_version)
        c.end_episode(episode, obs)
        c.close()

    try:
        drive(manager, script)
    finally:
        manager.close()
    assert seen == [0, 1]
    (lag, _), *_ = env.get_and_reset_stats()["Policy Server/Local Inference Lag"]
    assert 0.0 <= lag <= 1.0  # the steps were acted with version 0 or 1 and taken at version 1


def test_a_client_that_ignores_model_versions_still_works():
    """An older client: no ``versions`` in log_steps, and it never reads ``model_version``."""
    env = PolicyServerEnv(0)
    host, port = env.address.rsplit(":", 1)
    spec = {"observation_shapes": [[2]], "continuous_size": 1, "discrete_branches": []}
    try:
        with socket.create_connection((host, int(port)), timeout=10) as sock:

            def request(header: dict, arrays: dict | None = None) -> dict:
                sock.sendall(wire.encode(header, arrays))
                payload = wire.read_frame(sock, 1 << 20)
                assert payload is not None
                return wire.decode(payload).header

            assert request({"verb": "hello", "protocol": 1, "behavior": "Walker", "spec": spec})["model_version"] == -1
            episode = request({"verb": "start_episode"})["episode_id"]
            steps = {
                "obs_0": np.zeros((2, 2), np.float32),
                "rewards": np.zeros(2, np.float32),
                "continuous": np.zeros((2, 1), np.float32),
                "discrete": np.zeros((2, 0), np.int32),
                "end_obs_0": np.zeros(2, np.float32),
            }
            reply = request({"verb": "log_steps", "episode_id": episode, "end": {"reward": 1.0}}, steps)
            assert reply["ok"], reply
        env.reset()  # takes the first of its steps
        assert len(env.get_steps("Walker")[0]) == 1
        assert env.get_and_reset_stats() == {}  # a step without a version has no lag to report
    finally:
        env.close()


def test_while_a_client_waits_a_connection_ahead_of_the_trainer_gives_one_step_per_open_episode():
    env = PolicyServerEnv(0, step_wait_s=0.01)
    ahead, waiting = client(env.address, token=None), client(env.address, token=None)
    obs = [np.zeros(3, np.float32)]
    try:
        for _ in range(3):  # episodes it finished before the trainer took any of their steps
            episode = ahead.start_episode()
            ahead.log_action(episode, obs, np.zeros(1, np.float32), np.zeros(1, np.int32))
            ahead.end_episode(episode, obs)
        env.step()
        assert len(env.get_steps("Walker")[0]) == 3  # nobody waits: one step per episode
        asking = waiting.start_episode()
        answer = threading.Thread(target=waiting.get_action, args=(asking, obs))
        answer.start()
        time.sleep(0.3)  # its decision is queued
        env.step()
        decisions, terminals = env.get_steps("Walker")
        assert len(decisions) + len(terminals) == 2  # the waiting client's decision and one of the other's ends
        env.set_actions(
            "Walker", ActionTuple(np.zeros((len(decisions), 1), np.float32), np.zeros((len(decisions), 1), np.int32))
        )
        answer.join(timeout=5)
        ahead.close(), waiting.close()
    finally:
        env.close()
