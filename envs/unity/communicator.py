"""Python side of the ML-Agents gRPC exchange: loopback by default, bounded waits, no pickling.

Unity is the gRPC client and calls ``Exchange(UnityMessageProto) -> UnityMessageProto``;
Python is the server. Each call's request is handed from the gRPC handler thread to the main
thread through a queue (the message object itself, not a pickled copy), and the handler
thread waits for the main thread's reply on a second queue: the reply's bytes, serialised by
the main thread, which then waits until the handler has taken them (see ``_Rendezvous.reply``).
The main thread never waits longer than ``timeout_wait`` seconds for any message, start-up
included, and checks the build's process every ``poll_interval_s`` while it waits.

One Unity process per port: the first peer whose opening message is a handshake (status 200
with the initialization output) owns the port for the rest of the session, and every call from
any other peer is refused with PERMISSION_DENIED and a warning naming it, without reaching the
main thread (see ``_Rendezvous.admit``).
"""

from __future__ import annotations

import ipaddress
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from mlagents_envs.communicator import Communicator
from mlagents_envs.communicator_objects.unity_input_pb2 import UnityInputProto
from mlagents_envs.communicator_objects.unity_message_pb2 import UnityMessageProto
from mlagents_envs.communicator_objects.unity_output_pb2 import UnityOutputProto
from mlagents_envs.exception import UnityWorkerInUseException

from envs.exceptions import (
    UnityBuildQuitError,
    UnityBuildTimeoutError,
    UnityMessageTooLargeError,
)

logger = logging.getLogger(__name__)

SERVICE_NAME = "communicator_objects.UnityToExternalProto"
LOOPBACK = "127.0.0.1"
# Status codes in HeaderProto, as the C# communicator uses them.
STATUS_OK = 200
STATUS_QUIT = 400

PollCallback = Callable[[], None]
# How long the main thread waits for the gRPC handler to take a reply (normally ~45 µs).
REPLY_HANDOFF_S = 0.005
# Refused peers are warned about once each; past this many distinct peers, only at DEBUG.
_MAX_WARNED_PEERS = 64


class _Oversized:
    """Placeholder for a request whose raw size exceeded the limit (never parsed)."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class _Malformed:
    """Placeholder for a request that is not a UnityMessageProto (a parse error)."""

    __slots__ = ("error",)

    def __init__(self, error: str) -> None:
        self.error = error


def is_loopback(address: str) -> bool:
    """True for 127.0.0.0/8, ::1 and 'localhost'."""
    host = address.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _grpc_address(host: str, port: int) -> str:
    host = host.strip("[]")
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _opens_a_session(request: Any) -> bool:
    """Whether a first message looks like Unity's: status 200 and an initialization output."""
    return (
        isinstance(request, UnityMessageProto)
        and request.header.status == STATUS_OK
        and request.HasField("unity_output")
        and request.unity_output.HasField("rl_initialization_output")
    )


class _Rendezvous:
    """Hands messages between the gRPC handler thread and the main thread.

    Unity sends one request at a time and waits for its reply, so one inbox and one outbox
    suffice, provided only one peer ever reaches them: ``admit`` sees to that. ``closed``
    releases a handler waiting for a reply that will never come.

    Replies go through :meth:`reply`, which returns once the handler has taken the reply: the
    handler needs the GIL to take it, and a main thread that goes straight on to Python work
    (recording the step, processing trajectories while the build steps) kept it from the
    handler for 170 µs a step (median) on the stand-in 3DBall scene, time the build waited for
    its actions. Waiting for the hand-off costs the main thread about 45 µs.

    Who is "the Unity process": the gRPC peer of its connection (``ipv4:127.0.0.1:54321``),
    i.e. the TCP connection's address and port. While that connection is open no other
    process can present the same peer (the OS will not give a second socket the same
    address, port and destination), and nothing a client sends (a name, metadata, the
    handshake's content) can forge it. Unity keeps one channel, hence one connection, for
    its whole life (our server never sends GOAWAY before ``close``); it comes back from a new
    port only as a new process, and a restarted build is a new environment with a new port
    owner. Identifying by host alone would admit every local process, the hole this closes.
    """

    def __init__(self, max_message_bytes: int, where: Callable[[], str] = lambda: "Unity connection") -> None:
        self.inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.outbox: queue.SimpleQueue[bytes] = queue.SimpleQueue()  # serialised UnityMessageProto
        self.reply_taken = threading.Event()
        self.closed = threading.Event()
        self.max_message_bytes = max_message_bytes
        self.where = where
        self.unity_peer: str | None = None
        self.refused = 0
        self._lock = threading.Lock()
        self._warned: set = set()

    def reply(self, message: UnityMessageProto, *, wait: float = REPLY_HANDOFF_S) -> None:
        """Hand ``message`` to the handler waiting to return it to Unity, and wait up to
        ``wait`` seconds until it has taken it (it always has a handler waiting but while the
        session opens and closes)."""
        self.reply_taken.clear()
        self.outbox.put(message.SerializeToString())
        if wait > 0:
            self.reply_taken.wait(wait)

    def deserialize(self, data: bytes) -> Any:
        if len(data) > self.max_message_bytes:
            return _Oversized(len(data))
        try:
            return UnityMessageProto.FromString(data)
        except DecodeError as e:
            return _Malformed(str(e) or "cannot parse")

    def admit(self, request: Any, peer: str) -> str | None:
        """None if ``peer`` may talk to the trainer, else why not.

        The first peer whose message opens a session (see ``_opens_a_session``) owns the
        port from then on; a stray first call that is not a handshake claims nothing.
        """
        with self._lock:
            if self.unity_peer is None:
                if not _opens_a_session(request):
                    return "the first message on this port must be Unity's handshake"
                self.unity_peer = peer
                logger.debug("%s: Unity connected from %s", self.where(), peer)
                return None
            if peer == self.unity_peer:
                return None
            return f"this port belongs to the Unity process connected from {self.unity_peer}"

    def _refuse(self, peer: str, reason: str, context: grpc.ServicerContext) -> None:
        with self._lock:
            self.refused += 1
            first_time = peer not in self._warned and len(self._warned) < _MAX_WARNED_PEERS
            if first_time:
                self._warned.add(peer)
        logger.log(
            logging.WARNING if first_time else logging.DEBUG,
            "%s: refused a call from %s (%s); another process on this machine tried to talk "
            "to the trainer. The run goes on.",
            self.where(),
            peer,
            reason,
        )
        context.abort(grpc.StatusCode.PERMISSION_DENIED, f"refused: {reason}")

    def exchange(self, request: Any, context: grpc.ServicerContext) -> bytes:
        peer = context.peer()
        reason = self.admit(request, peer)
        if reason is not None:
            self._refuse(peer, reason, context)
        if isinstance(request, _Malformed):
            logger.warning("%s: Unity sent a message that does not parse (%s)", self.where(), request.error)
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"not a UnityMessageProto: {request.error}")
        self.inbox.put(request)
        while True:
            try:
                reply = self.outbox.get(timeout=0.25)
            except queue.Empty:
                if self.closed.is_set() or not context.is_active():
                    quit_message = UnityMessageProto()
                    quit_message.header.status = STATUS_QUIT
                    return quit_message.SerializeToString()
                continue
            self.reply_taken.set()
            return reply


class LoopbackCommunicator(Communicator):
    """gRPC server for one Unity process (or the Editor) on ``bind_address:port``.

    port 0 binds a free port chosen by the OS; read it back from ``.port``. Raises
    UnityWorkerInUseException if the port is taken (SO_REUSEPORT is off, so two
    environments can never share a port).
    """

    def __init__(
        self,
        worker_id: int = 0,
        port: int = 5005,
        timeout_wait: float = 60.0,
        *,
        bind_address: str = LOOPBACK,
        max_message_bytes: int = 64 * 1024 * 1024,
        poll_interval_s: float = 0.1,
    ) -> None:
        super().__init__(worker_id, port)
        if timeout_wait <= 0:
            raise ValueError(f"timeout_wait must be positive, got {timeout_wait}")
        if max_message_bytes <= 0:
            raise ValueError(f"max_message_bytes must be positive, got {max_message_bytes}")
        self.worker_id = worker_id
        self.timeout_wait = float(timeout_wait)
        self.bind_address = bind_address
        self.max_message_bytes = int(max_message_bytes)
        self.poll_interval_s = poll_interval_s
        self._rendezvous = _Rendezvous(self.max_message_bytes, self._where)
        self._steps = 0
        self._sent_at = time.monotonic()  # when the input now answered was sent (its reply's deadline)
        self.is_open = False
        if not is_loopback(bind_address):
            logger.warning(
                "worker %d: the Unity connection listens on %s, reachable from other machines, "
                "without authentication; anyone who can reach it can pose as the environment. "
                "Use only inside a trusted network (e.g. a Docker bridge).",
                worker_id,
                bind_address,
            )
        self.port = self._start_server(port)
        self.is_open = True

    def _where(self) -> str:
        return f"worker {self.worker_id} (port {getattr(self, 'port', '?')})"

    @property
    def unity_peer(self) -> str | None:
        """The gRPC peer of the Unity process that owns this port (``ipv4:127.0.0.1:54321``),
        None until it has connected. Calls from any other peer are refused."""
        return self._rendezvous.unity_peer

    @property
    def refused_calls(self) -> int:
        """How many calls from other peers were refused."""
        return self._rendezvous.refused

    def _start_server(self, port: int) -> int:
        if port != 0:
            self._check_port_free(port)
        self._server = grpc.server(
            thread_pool=ThreadPoolExecutor(max_workers=4, thread_name_prefix="unity-grpc"),
            options=(
                ("grpc.so_reuseport", 0),
                ("grpc.max_receive_message_length", -1),
                ("grpc.max_send_message_length", -1),
            ),
        )
        handler = grpc.unary_unary_rpc_method_handler(
            self._rendezvous.exchange,
            request_deserializer=self._rendezvous.deserialize,
            response_serializer=None,  # the main thread hands over the reply's bytes
        )
        self._server.add_generic_rpc_handlers(
            (grpc.method_handlers_generic_handler(SERVICE_NAME, {"Exchange": handler}),)
        )
        try:
            bound = self._server.add_insecure_port(_grpc_address(self.bind_address, port))
        except RuntimeError:
            bound = 0
        if bound == 0:
            self._server.stop(None)
            raise UnityWorkerInUseException(self.worker_id)
        self._server.start()
        return bound

    def _check_port_free(self, port: int) -> None:
        family = socket.AF_INET6 if ":" in self.bind_address else socket.AF_INET
        with socket.socket(family, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((self.bind_address.strip("[]"), port))
            except OSError:
                raise UnityWorkerInUseException(self.worker_id) from None

    def _receive(
        self,
        waiting_for: str,
        poll_callback: PollCallback | None,
        *,
        since: float | None = None,
        within: float | None = None,
    ) -> UnityMessageProto | None:
        """Next message from Unity, or a clear error once ``timeout_wait`` seconds have passed
        since ``since`` (a ``time.monotonic()``; default now). ``within``: return None when
        nothing came in that many seconds (the wait may go on in a later call)."""
        start = time.monotonic() if since is None else since
        deadline = start + self.timeout_wait
        give_up = None if within is None else time.monotonic() + within
        inbox = self._rendezvous.inbox
        while True:
            now = time.monotonic()
            remaining = deadline - now
            if remaining <= 0:
                raise UnityBuildTimeoutError(
                    f"{self._where()}: no message from Unity for {self.timeout_wait:g} s while "
                    f"waiting for {waiting_for} (after {self._steps} exchanges). The build may "
                    "be hung, waiting for user input, or unable to connect; check its log.",
                    worker_id=self.worker_id,
                    port=self.port,
                    waited_s=now - start,
                )
            wait = min(self.poll_interval_s, remaining)
            if give_up is not None:
                wait = max(0.0, min(wait, give_up - now))
            try:
                message = inbox.get(timeout=wait)
            except queue.Empty:
                if not self.is_open:  # closed from another thread (a step waiting in the background)
                    raise UnityBuildQuitError(
                        f"{self._where()}: the connection was closed while Python was waiting for {waiting_for}.",
                        worker_id=self.worker_id,
                        port=self.port,
                    ) from None
                if poll_callback is not None:
                    poll_callback()
                if give_up is not None and time.monotonic() >= give_up:
                    return None
                continue
            if isinstance(message, _Oversized):
                raise UnityMessageTooLargeError(
                    f"{self._where()}: Unity sent a {message.size:,}-byte message while Python "
                    f"was waiting for {waiting_for}; the limit is max_message_bytes="
                    f"{self.max_message_bytes:,}. Raise it (e.g. for large visual observations).",
                    worker_id=self.worker_id,
                    port=self.port,
                    size=message.size,
                    limit=self.max_message_bytes,
                )
            self._steps += 1
            if message.header.status != STATUS_OK:
                self.is_open = False
                raise UnityBuildQuitError(
                    f"{self._where()}: Unity ended the session (status {message.header.status}"
                    f"{': ' + message.header.message if message.header.message else ''}) while "
                    f"Python was waiting for {waiting_for}.",
                    worker_id=self.worker_id,
                    port=self.port,
                )
            return message

    def _send(self, unity_input: UnityInputProto | None) -> None:
        message = UnityMessageProto()
        message.header.status = STATUS_OK
        if unity_input is not None:
            message.unity_input.CopyFrom(unity_input)
        self._rendezvous.reply(message)

    def initialize(self, inputs: UnityInputProto, poll_callback: PollCallback | None = None) -> UnityOutputProto:
        """Start-up handshake: academy parameters in, ``inputs`` out, then Unity's second
        message (its request for the first command), whose reply is the next exchange."""
        first = self._receive("the build to connect", poll_callback)
        assert first is not None  # no ``within``: a message or an error
        self._send(inputs)
        self._receive("the build's second start-up message", poll_callback)
        return first.unity_output

    def exchange(self, inputs: UnityInputProto, poll_callback: PollCallback | None = None) -> UnityOutputProto:
        """Send one input (reset or step) and return Unity's next output.

        Raises UnityBuildQuitError if Unity ended the session, never returns None.
        """
        self.send(inputs)
        output = self.receive(poll_callback)
        assert output is not None  # no ``within``: a message or an error
        return output

    def send(self, inputs: UnityInputProto) -> None:
        """The first half of :meth:`exchange`: send one input (reset or step); Unity works on
        it while the caller does something else until :meth:`receive`."""
        if not self.is_open:
            raise UnityBuildQuitError(
                f"{self._where()}: the connection is closed.",
                worker_id=self.worker_id,
                port=self.port,
            )
        self._send(inputs)
        self._sent_at = time.monotonic()

    def receive(
        self, poll_callback: PollCallback | None = None, *, within: float | None = None
    ) -> UnityOutputProto | None:
        """The second half of :meth:`exchange`: Unity's output after the input :meth:`send`
        sent, waited for up to ``timeout_wait`` seconds from the send in all (then an error);
        None when it did not come ``within`` seconds (ask again)."""
        message = self._receive("the reply to a step or reset", poll_callback, since=self._sent_at, within=within)
        return None if message is None else message.unity_output

    def close(self) -> None:
        """Tell Unity to quit (status 400) and stop the server; safe to call twice."""
        if getattr(self, "_server", None) is None:
            return
        quit_message = UnityMessageProto()
        quit_message.header.status = STATUS_QUIT
        self._rendezvous.reply(quit_message, wait=0.0)  # a build that already quit takes nothing
        self._rendezvous.closed.set()
        self.is_open = False
        self._server.stop(grace=0.5).wait(2.0)
        self._server = None
