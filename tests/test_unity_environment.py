"""envs.unity.UnityEnvironment through the real gRPC protocol, against the stand-in build."""

from __future__ import annotations

import logging
import socket
import threading
import time

import numpy as np
import pytest
from mlagents_envs.base_env import ActionTuple
from mlagents_envs.exception import (
    UnityCommunicatorStoppedException,
    UnityEnvironmentException,
    UnityTimeOutException,
    UnityWorkerInUseException,
)
from mlagents_envs.side_channel.engine_configuration_channel import EngineConfigurationChannel
from mlagents_envs.side_channel.environment_parameters_channel import EnvironmentParametersChannel
from mlagents_envs.side_channel.stats_side_channel import StatsSideChannel

from envs.exceptions import (
    UnityBuildCrashedError,
    UnityBuildQuitError,
    UnityBuildTimeoutError,
    UnityMessageTooLargeError,
)
from envs.unity import UnityEnvironment
from envs.unity.communicator import LoopbackCommunicator
from tests.support.standin import render_frame, visual_key, write_launcher

TIMEOUT = 20  # seconds: generous for a loaded 2-core machine, still bounded


@pytest.fixture
def make_env(tmp_path):
    """Factory: open a stand-in build with scene flags; every env is closed at teardown."""
    envs = []

    def make(*flags: str, **kwargs) -> UnityEnvironment:
        launcher = write_launcher(str(tmp_path), extra_args=list(flags))
        kwargs.setdefault("timeout_wait", TIMEOUT)
        kwargs.setdefault("base_port", 0)
        env = UnityEnvironment(file_name=launcher, **kwargs)
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()


def zero_actions(env: UnityEnvironment) -> None:
    for name, spec in env.behavior_specs.items():
        decision, _ = env.get_steps(name)
        env.set_actions(name, spec.action_spec.empty_action(len(decision)))


def test_balance_scene_specs_rewards_and_reset(make_env):
    env = make_env("--scene", "balance")
    env.reset()
    (name,) = env.behavior_specs
    assert name == "Balance?team=0"
    spec = env.behavior_specs[name]
    assert [o.shape for o in spec.observation_specs] == [(8,)]
    assert spec.action_spec.continuous_size == 2 and spec.action_spec.discrete_branches == ()
    decision, terminal = env.get_steps(name)
    np.testing.assert_array_equal(decision.agent_id, np.arange(12))
    assert len(terminal) == 0 and decision.obs[0].shape == (12, 8)
    # Decision period 5: each decision carries 5 academy steps of +0.1 reward.
    env.set_actions(name, ActionTuple(continuous=np.zeros((12, 2), dtype=np.float32)))
    env.step()
    decision, terminal = env.get_steps(name)
    assert len(decision) == 12 and len(terminal) == 0
    np.testing.assert_array_equal(decision.reward, np.full(12, 0.5, dtype=np.float32))
    # A reset starts new episodes: new ids, no terminal steps.
    env.reset()
    decision, terminal = env.get_steps(name)
    np.testing.assert_array_equal(decision.agent_id, np.arange(12, 24))
    assert len(terminal) == 0


def test_interrupted_steps_new_ids_and_stats(make_env):
    stats = StatsSideChannel()
    env = make_env("--scene", "balance", "--max-step", "10", side_channels=[stats])
    env.reset()
    name = "Balance?team=0"
    for _ in range(2):
        zero_actions(env)
        env.step()
    decision, terminal = env.get_steps(name)
    # Academy step 10: every episode is cut at max_step; the same message starts new ones.
    np.testing.assert_array_equal(terminal.agent_id, np.arange(12))
    assert terminal.interrupted.all()
    np.testing.assert_array_equal(terminal.reward, np.full(12, 0.5, dtype=np.float32))
    np.testing.assert_array_equal(decision.agent_id, np.arange(12, 24))
    lengths = stats.get_and_reset_stats()["StandIn/episode_length"]
    assert [value for value, _ in lengths] == [10.0] * 12


def test_visual_scene_masks_images_and_decision_periods(make_env):
    env = make_env("--scene", "visual")
    env.reset()
    name = "Corridor?team=0"
    spec = env.behavior_specs[name]
    assert [o.shape for o in spec.observation_specs] == [(3,), (16, 16, 3), (8, 8, 1)]
    assert spec.action_spec.discrete_branches == (3, 2)

    def check_observations(decision) -> None:
        for row, agent_id in enumerate(decision.agent_id):
            x = int(decision.obs[0][row, 0])
            expected = render_frame(visual_key(int(agent_id), x), (16, 16, 3)) / np.float32(255)
            np.testing.assert_array_equal(decision.obs[1][row], expected.astype(np.float32))  # via PNG
            raw = render_frame(visual_key(int(agent_id), x), (8, 8, 1)) / np.float32(255)
            np.testing.assert_array_equal(decision.obs[2][row], raw.astype(np.float32))
            mask = decision.action_mask
            assert mask[0][row].tolist() == [False, x == 0, x == 7]
            assert mask[1][row].tolist() == [False, False]

    decision, _ = env.get_steps(name)
    np.testing.assert_array_equal(decision.agent_id, np.arange(4))
    check_observations(decision)
    # Periods alternate 1, 2: odd agents skip every other step and accumulate its reward.
    zero_actions(env)
    env.step()
    decision, terminal = env.get_steps(name)
    np.testing.assert_array_equal(decision.agent_id, [0, 2])
    np.testing.assert_array_equal(decision.reward, np.full(2, -0.01, dtype=np.float32))
    assert len(terminal) == 0
    check_observations(decision)
    zero_actions(env)
    env.step()
    decision, _ = env.get_steps(name)
    np.testing.assert_array_equal(decision.agent_id, np.arange(4))
    np.testing.assert_array_equal(decision.reward, np.float32([-0.01, -0.02, -0.01, -0.02]))
    check_observations(decision)


def test_two_behaviors_spec_arrives_with_first_agents(make_env):
    env = make_env("--scene", "two_behaviors")
    env.reset()
    assert list(env.behavior_specs) == ["Striker?team=0"]
    zero_actions(env)
    env.step()  # academy step 2
    assert "Goalie?team=1" not in env.behavior_specs
    zero_actions(env)
    env.step()  # academy step 3: the goalie spawns and its spec comes with it
    goalie = env.behavior_specs["Goalie?team=1"]
    assert goalie.action_spec.discrete_branches == (3,)
    decision, _ = env.get_steps("Goalie?team=1")
    assert decision.agent_id.tolist() == [2]  # ids count on from the strikers' 0 and 1
    for _ in range(3):
        for name, spec in env.behavior_specs.items():
            d, _ = env.get_steps(name)
            env.set_actions(name, spec.action_spec.random_action(len(d)))
        env.step()
    assert len(env.get_steps("Striker?team=0")[0]) == 2


def test_engine_and_parameter_channels_answered_through_stats(make_env, tmp_path):
    engine, parameters, stats = EngineConfigurationChannel(), EnvironmentParametersChannel(), StatsSideChannel()
    env = make_env(
        "--scene", "balance", side_channels=[engine, parameters, stats], log_folder=str(tmp_path), no_graphics=True
    )
    engine.set_configuration_parameters(time_scale=7.0)
    parameters.set_float_parameter("gravity", 3.5)
    env.reset()
    received = stats.get_and_reset_stats()
    assert received["StandIn/time_scale"][0][0] == 7.0
    assert received["StandIn/param/gravity"][0][0] == 3.5
    log = (tmp_path / "Player-0.log").read_text()
    assert f"--mlagents-port', '{env.port}'" in log and "-nographics" in log


def test_crash_is_reported_with_worker_port_and_signal(make_env):
    env = make_env("--scene", "balance", "--crash-after", "2")
    env.reset()
    for _ in range(2):
        zero_actions(env)
        env.step()
    zero_actions(env)
    start = time.monotonic()
    with pytest.raises(UnityBuildCrashedError) as info:
        env.step()
    assert time.monotonic() - start < TIMEOUT
    message = str(info.value)
    assert "worker 0" in message and f"port {env.port}" in message and "SIGSEGV" in message
    assert isinstance(info.value, UnityEnvironmentException)


def test_hang_times_out_and_close_ends_the_process(make_env):
    env = make_env("--scene", "balance", "--hang-after", "1", timeout_wait=6)
    env.reset()
    zero_actions(env)
    env.step()
    process = env.process
    zero_actions(env)
    start = time.monotonic()
    with pytest.raises(UnityBuildTimeoutError) as info:
        env.step()
    waited = time.monotonic() - start
    assert 6 <= waited < 6 + 5
    assert f"port {env.port}" in str(info.value) and isinstance(info.value, UnityTimeOutException)
    assert process.poll() is None  # hung, not dead
    env.close()
    assert process.poll() is not None


def test_death_during_startup_is_an_error_not_a_hang(make_env):
    start = time.monotonic()
    with pytest.raises(UnityBuildCrashedError) as info:
        make_env("--scene", "balance", "--die-at-startup")
    assert time.monotonic() - start < TIMEOUT
    assert info.value.returncode == 3 and "return code 3" in str(info.value)


def test_quit_ends_the_session_with_a_clear_error(make_env):
    env = make_env("--scene", "balance", "--quit-after", "1")
    env.reset()
    zero_actions(env)
    env.step()
    zero_actions(env)
    with pytest.raises(UnityBuildQuitError) as info:
        env.step()
    assert isinstance(info.value, UnityCommunicatorStoppedException)
    assert f"port {env.port}" in str(info.value)


def test_editor_that_never_connects_times_out():
    start = time.monotonic()
    with pytest.raises(UnityBuildTimeoutError, match="the build to connect"):
        UnityEnvironment(file_name=None, base_port=0, timeout_wait=1)
    assert time.monotonic() - start < 5


def _non_loopback_address() -> str:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # UDP connect sends nothing; it picks the interface
        return s.getsockname()[0]


def test_port_is_loopback_only_unless_asked(caplog):
    address = _non_loopback_address()
    assert not address.startswith("127.")
    default = LoopbackCommunicator(0, 0, TIMEOUT)
    try:
        with socket.create_connection(("127.0.0.1", default.port), timeout=5):
            pass
        with pytest.raises(OSError):
            socket.create_connection((address, default.port), timeout=5).close()
    finally:
        default.close()
    # Control: the same address reaches a server that listens on all interfaces.
    with caplog.at_level(logging.WARNING):
        everywhere = LoopbackCommunicator(1, 0, TIMEOUT, bind_address="0.0.0.0")
    try:
        socket.create_connection((address, everywhere.port), timeout=5).close()
        assert "without authentication" in caplog.text and "worker 1" in caplog.text
    finally:
        everywhere.close()


def test_a_wait_for_unity_ends_when_another_thread_closes_the_connection():
    """A step waiting in the background (the Editor: no process to watch) ends at close, with
    an error, instead of holding the process until timeout_wait."""
    from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto

    communicator = LoopbackCommunicator(0, 0, 60)
    errors: list[BaseException] = []

    def wait() -> None:
        try:
            communicator.exchange(UnityInputProto())
        except BaseException as error:  # noqa: BLE001 - what the waiting thread saw
            errors.append(error)

    waiting = threading.Thread(target=wait, daemon=True)
    waiting.start()
    time.sleep(0.2)
    communicator.close()
    waiting.join(5.0)
    assert not waiting.is_alive()
    assert [type(e) for e in errors] == [UnityBuildQuitError] and "closed" in str(errors[0])


def test_port_in_use_is_refused():
    first = LoopbackCommunicator(0, 0, TIMEOUT)
    try:
        with pytest.raises(UnityWorkerInUseException):
            LoopbackCommunicator(3, first.port, TIMEOUT)
    finally:
        first.close()


def test_observation_over_4mb_passes_when_allowed_and_fails_clearly_when_not(make_env):
    shape = (600, 600, 3)  # 4.32 MB of float32, over gRPC's default 4 MB cap
    with pytest.raises(UnityMessageTooLargeError) as info:
        make_env("--scene", "large", max_message_bytes=4 * 1024 * 1024).reset()
    assert info.value.size > 4 * 1024 * 1024 and "max_message_bytes=4,194,304" in str(info.value)
    env = make_env("--scene", "large", max_message_bytes=8 * 1024 * 1024)
    env.reset()
    decision, _ = env.get_steps("Large?team=0")
    expected = render_frame(int(decision.agent_id[0]), shape) / np.float32(255)
    np.testing.assert_array_equal(decision.obs[0][0], expected.astype(np.float32))


def test_constructor_keywords_match_stock():
    import inspect

    from mlagents_envs.environment import UnityEnvironment as Stock

    stock = list(inspect.signature(Stock.__init__).parameters)
    ours = list(inspect.signature(UnityEnvironment.__init__).parameters)
    assert ours[: len(stock)] == stock
    assert {"bind_address", "max_message_bytes"} <= set(ours)


def _impostor_messages():
    """What a second local client might send: Unity's quit (it would end the session), a
    second handshake, a step's output for the live behavior, and bytes that do not parse."""
    from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto

    quit_message = UnityMessageProto()
    quit_message.header.status = 400
    handshake = UnityMessageProto()
    handshake.header.status = 200
    handshake.unity_output.rl_initialization_output.name = "Impostor"
    step_output = UnityMessageProto()
    step_output.header.status = 200
    step_output.unity_output.rl_output.agentInfos["Balance?team=0"].value.add(id=0, reward=1e9, done=True)
    return [quit_message, handshake, step_output]


def _call_as_impostor(port: int, rounds: int) -> list:
    """Status codes of a raw mlagents_envs stub's calls on a worker's port (None: answered)."""
    import grpc
    from mlagents_envs.communicator_objects.unity_to_external_pb2_grpc import UnityToExternalProtoStub

    codes = []
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = UnityToExternalProtoStub(channel)
        raw = channel.unary_unary("/communicator_objects.UnityToExternalProto/Exchange")
        calls = [lambda m=m: stub.Exchange(m, timeout=10) for m in _impostor_messages()]
        calls.append(lambda: raw(b"\xff\xff garbage", timeout=10))
        for _ in range(rounds):
            for call in calls:
                try:
                    call()
                    codes.append(None)
                except grpc.RpcError as e:
                    codes.append(e.code())
    return codes


def test_other_peers_on_a_workers_port_are_refused_and_the_run_goes_on(make_env, caplog):
    import threading

    import grpc

    # Two identical builds stepped in lockstep; only the first one gets an impostor.
    env, control = make_env("--scene", "balance"), make_env("--scene", "balance")
    name = "Balance?team=0"

    def step_both() -> int:
        seen = []
        for e in (env, control):
            zero_actions(e)
            e.step()
            seen.append(e.get_steps(name))
        (decision, terminal), (decision_c, terminal_c) = seen
        for got, want in ((decision, decision_c), (terminal, terminal_c)):
            np.testing.assert_array_equal(got.agent_id, want.agent_id)
            np.testing.assert_array_equal(got.obs[0], want.obs[0])
            np.testing.assert_array_equal(got.reward, want.reward)
        return len(decision) + len(terminal)

    env.reset()
    control.reset()
    communicator = env._communicator
    unity_peer = communicator.unity_peer
    assert unity_peer is not None and unity_peer.startswith("ipv4:127.0.0.1:")
    for _ in range(5):
        step_both()
    codes: list = []
    agent_steps = 0
    with caplog.at_level(logging.WARNING, logger="envs.unity.communicator"):
        # An impostor while the trainer steps (its calls race the real exchanges) ...
        impostor = threading.Thread(target=lambda: codes.extend(_call_as_impostor(env.port, 5)))
        impostor.start()
        while impostor.is_alive():
            agent_steps += step_both()
        impostor.join()
        # ... and once more between two steps.
        codes += _call_as_impostor(env.port, 1)
    assert codes == [grpc.StatusCode.PERMISSION_DENIED] * 24
    assert communicator.refused_calls == 24 and communicator.unity_peer == unity_peer
    refusals = [r for r in caplog.records if "refused a call from" in r.getMessage()]
    assert refusals and all(r.levelno == logging.WARNING for r in refusals)
    text = refusals[0].getMessage()
    stranger = text.split("refused a call from ")[1].split(" ")[0]
    assert stranger.startswith("ipv4:127.0.0.1:") and stranger != unity_peer
    assert f"worker 0 (port {env.port})" in text and unity_peer in text
    # The run is unaffected: it steps on exactly as the control build does, then ends cleanly.
    for _ in range(30):
        agent_steps += step_both()
    assert agent_steps > 0
    process = env.process
    env.close()
    assert process.returncode == 0


def test_only_a_handshake_claims_the_port_then_only_its_peer_is_admitted():
    from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto

    from envs.unity.communicator import _Rendezvous

    quit_message, handshake, step_output = _impostor_messages()
    rendezvous = _Rendezvous(1 << 20)
    # A stray first call that is not Unity's opening message claims nothing.
    assert "must be Unity's handshake" in rendezvous.admit(quit_message, "ipv4:127.0.0.1:1111")
    assert rendezvous.admit(step_output, "ipv4:127.0.0.1:1111") is not None
    assert rendezvous.unity_peer is None
    assert rendezvous.admit(handshake, "ipv4:127.0.0.1:2222") is None
    assert rendezvous.unity_peer == "ipv4:127.0.0.1:2222"
    # From now on the owner may send anything (its quit ends the session, as it should) ...
    assert rendezvous.admit(quit_message, "ipv4:127.0.0.1:2222") is None
    assert rendezvous.admit(UnityMessageProto(), "ipv4:127.0.0.1:2222") is None
    # ... and nobody else anything, not even from the same host or with a handshake.
    for peer in ("ipv4:127.0.0.1:1111", "ipv4:127.0.0.1:2223", "ipv6:[::1]:2222"):
        reason = rendezvous.admit(handshake, peer)
        assert reason is not None and "ipv4:127.0.0.1:2222" in reason


class _HandlerContext:
    """The parts of a gRPC servicer context the exchange handler reads."""

    def peer(self) -> str:
        return "ipv4:127.0.0.1:2222"

    def is_active(self) -> bool:
        return True


def test_a_reply_returns_once_the_handler_has_taken_it_so_unity_gets_it_at_once():
    """The main thread waits for the hand-off (the handler would otherwise wait for the GIL
    while the main thread records the step); the handler returns the reply's bytes as sent."""
    from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto

    from envs.unity.communicator import _Rendezvous

    _, handshake, step_output = _impostor_messages()
    rendezvous = _Rendezvous(1 << 20)
    returned: list[bytes] = []
    handler = threading.Thread(target=lambda: returned.append(rendezvous.exchange(handshake, _HandlerContext())))
    handler.start()
    assert rendezvous.inbox.get(timeout=TIMEOUT) is handshake
    rendezvous.reply(step_output, wait=TIMEOUT)
    assert rendezvous.reply_taken.is_set() and rendezvous.outbox.empty()  # taken before reply returned
    handler.join(TIMEOUT)
    assert UnityMessageProto.FromString(returned[0]) == step_output
    # No handler waiting (a build that already quit): the wait is bounded, the reply stays queued.
    start = time.monotonic()
    rendezvous.reply(step_output, wait=0.05)
    assert 0.04 <= time.monotonic() - start < 1.0 and not rendezvous.outbox.empty()


@pytest.mark.parametrize("given_by", ["flag", "environment"])
def test_the_stand_in_logs_each_steps_send_and_reply_on_the_trainers_clock(make_env, tmp_path, monkeypatch, given_by):
    """``--exchange-log`` or ``STANDIN_EXCHANGE_LOG`` (read by benchmarks/e2e_exchanges.py and
    e2e.py, which gives it to a trainer's build through the environment): one (sent, replied)
    pair per step the build sent, on the clock this process reads."""
    import json

    log = tmp_path / "exchanges.json"
    if given_by == "flag":
        env = make_env("--scene", "balance", "--exchange-log", str(log))
    else:
        monkeypatch.setenv("STANDIN_EXCHANGE_LOG", str(log))
        env = make_env("--scene", "balance")
    start = time.perf_counter()
    env.reset()
    for _ in range(5):
        zero_actions(env)
        env.step()
    env.close()
    deadline = time.monotonic() + TIMEOUT
    while not log.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    pairs = json.loads(log.read_text())
    assert len(pairs) >= 5  # the steps (and the reset's reply)
    assert all(start < sent <= replied < time.perf_counter() for sent, replied in pairs)


def test_runtime_packages_never_import_test_support():
    """The stand-in build is a test double: no runtime package may import ``tests``."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    offenders = []
    for package in ("envs", "processors", "trainers", "stats"):
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                else:
                    continue
                offenders += [
                    f"{path.relative_to(root)}: {n}"
                    for n in names
                    if n == "tests" or n.startswith("tests.") or n.endswith(".standin")
                ]
    assert offenders == []


def test_a_step_in_halves_leaves_the_caller_free_and_its_wait_counts_from_the_send(make_env):
    """``send_step`` returns at once; ``receive_step(within)`` says False until the reply is
    there; a hung build's ``timeout_wait`` runs from the send, however the waits are cut up."""
    env = make_env("--scene", "balance", "--hang-after", "1", timeout_wait=3)
    env.reset()
    zero_actions(env)
    env.send_step()
    deadline = time.monotonic() + TIMEOUT
    while not env.receive_step(within=0.01):
        assert time.monotonic() < deadline
    [name] = env.behavior_specs
    assert len(env.get_steps(name)[0]) > 0
    zero_actions(env)
    start = time.monotonic()
    env.send_step()  # the build hangs on this one
    assert time.monotonic() - start < 1.0
    with pytest.raises(UnityBuildTimeoutError):
        while not env.receive_step(within=0.2):
            pass
    assert 3 <= time.monotonic() - start < 3 + 2
