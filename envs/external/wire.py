"""The policy server's wire format: length-prefixed frames of a JSON header and raw arrays.

Language-neutral (no pickle), so a simulator in C#, C++ or anything with sockets and a JSON
library can be a client. Version 1.

Transport: one TCP connection per client; requests and replies alternate (one reply per
request, in order). Every integer of the framing is unsigned 32-bit big-endian.

Frame::

    u32 payload_length            bytes that follow (at most the server's max frame size,
                                  16 MiB by default; a longer frame gets an error reply and
                                  the connection is closed)
    payload:
      u32 header_length           bytes of the header
      header                      UTF-8 JSON object
      data                        the arrays' bytes, back to back

The header always has ``"arrays"``: a list of descriptors ``{"name": str, "dtype": "float32" |
"int32" | "uint8", "shape": [int, ...], "offset": int}``, ``offset`` counted from the start
of ``data``; each array is C-ordered, little-endian, ``prod(shape) * itemsize`` bytes. Arrays
may not overlap and must lie inside ``data``; at most 64 arrays of at most 8 axes.

Requests carry ``"verb"`` plus the fields below; a reply carries ``"ok": true``,
``"model_version"`` (int: the version of the behavior's current policy, -1 before there is
one; a local-inference client fetches a newer one before acting again; clients may ignore it)
and its fields, or ``"ok": false, "error": "<what and where>", "retry": bool`` (the request was
refused; ``retry`` true: the same request may succeed later, e.g. ``get_model`` before the
run has made the behavior's policy, or ``start_episode`` while the server is full; the
connection stays usable unless the frame itself could not be read).

====================  ======================================================  ========================
verb                  request fields (arrays)                                  reply fields (arrays)
====================  ======================================================  ========================
``hello``             ``protocol`` 1, ``behavior`` (name), ``spec``:            ``behavior_id``
                      ``{"observation_shapes": [[int...]...]`` (rank 1: a
                      vector; 2: [max_entities, entity_size], all-zero rows
                      absent; 3: an [H, W, C] image, channels last
                      whatever a Unity client's package generation: a
                      3.x+ camera's [C, H, W] pixels are transposed first),
                      "continuous_size": int, "discrete_branches": [int...]}``,
                      ``token`` (when the server has one). First request on
                      every connection; later requests act on this behavior.
                      Refused for a behavior the run's configuration does not
                      cover (the error names the configured ones).
``start_episode``     --                                                       ``episode_id`` (str)
``get_action``        ``episode_id`` (``obs_0``..``obs_{k-1}``, float32, one    (``continuous`` [c]
                      per sensor, of the declared shapes)                      float32 in [-1, 1],
                                                                               ``discrete`` [b] int32)
``log_action``        ``episode_id`` (``obs_i``, ``continuous`` [c] float32,    --
                      ``discrete`` [b] int32): the client chose the action
``log_returns``       ``episode_id``, ``reward`` (float): added to the reward   --
                      of the episode's next step
``end_episode``       ``episode_id``, ``interrupted`` (bool, default false)    --
                      (``obs_i``: the final observation)
``log_steps``         ``episode_id``, ``end`` (null, or ``{"reward": float,    --
                      "interrupted": bool}``) (``obs_i`` [T, ...],
                      ``rewards`` [T] float32 (reward logged before step t),
                      ``continuous`` [T, c], ``discrete`` [T, b], optional
                      ``versions`` [T] int32 (the model version that chose
                      each action; -1: the simulator did); with ``end``
                      also ``end_obs_i``): a local-inference client's steps,
                      replayed one per episode per trainer step
``get_model``         ``known_version`` (int, -1 for none)                      ``version``, ``format``
                                                                               "onnx", ``unchanged``
                                                                               (bool) (``model`` uint8
                                                                               [n] unless unchanged)
====================  ======================================================  ========================

A declared spec holds at most 32 observations of at most 4,194,304 values each, and at most
1024 continuous actions, branches, and choices per branch. Observations are float32 (images
too, in whatever range the simulator uses). By default a server holds at most 1024 open
episodes, at most 256 of them opened (and not yet ended) by one connection, and lets one
connection have at most 64 steps waiting per episode it has open (``log_steps`` then waits
for the trainer). Each trainer step takes at most
one step per episode, and from one connection at most one per episode it has open: a client
that finished episodes ahead of the trainer is served like one that waits for each action.

A continuous action is in [-1, 1] (what the policy's samples become after clipping to [-3, 3]
and dividing by 3); discrete actions are branch indices. An episode not heard from for the
server's idle timeout, or whose connection closes, is ended as interrupted (its last
observation bootstraps).
"""

from __future__ import annotations

import json
import math
import socket
import struct
from collections.abc import Mapping
from typing import Any, NamedTuple

import numpy as np

PROTOCOL_VERSION = 1
DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024
MAX_ARRAYS = 64
MAX_AXES = 8
DTYPES: dict[str, np.dtype] = {"float32": np.dtype("<f4"), "int32": np.dtype("<i4"), "uint8": np.dtype("u1")}
_U32 = struct.Struct(">I")


class WireError(ValueError):
    """A frame that cannot be decoded; the message says what and where."""


class FrameTooLarge(WireError):
    """A frame longer than the limit: its bytes are not read, so the stream cannot go on."""


class Message(NamedTuple):
    """A decoded frame: the JSON header (without ``arrays``) and the arrays by name."""

    header: dict[str, Any]
    arrays: dict[str, np.ndarray]


def encode(header: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None = None) -> bytes:
    """One frame (length prefix included) of ``header`` and ``arrays`` (each cast to its wire
    dtype: float32, int32 or uint8; anything else is a WireError)."""
    descriptors = []
    chunks = []
    offset = 0
    for name, array in (arrays or {}).items():
        array = np.asarray(array)
        wire = _wire_dtype(array.dtype, name)
        data = np.ascontiguousarray(array, dtype=DTYPES[wire]).tobytes()
        descriptors.append({"name": name, "dtype": wire, "shape": list(array.shape), "offset": offset})
        chunks.append(data)
        offset += len(data)
    head = json.dumps({**header, "arrays": descriptors}, separators=(",", ":")).encode("utf-8")
    payload_length = _U32.size + len(head) + offset
    return b"".join([_U32.pack(payload_length), _U32.pack(len(head)), head, *chunks])


def _wire_dtype(dtype: np.dtype, name: str) -> str:
    if dtype == np.uint8:
        return "uint8"
    if dtype.kind == "f":
        return "float32"
    if dtype.kind in "iub":
        return "int32"
    raise WireError(f"array {name!r}: dtype {dtype} has no wire form (float32, int32, uint8)")


def decode(payload: bytes) -> Message:
    """The header and arrays of one frame's payload (the bytes after the length prefix)."""
    if len(payload) < _U32.size:
        raise WireError(f"payload of {len(payload)} bytes is shorter than its 4-byte header length")
    (head_length,) = _U32.unpack_from(payload)
    data_start = _U32.size + head_length
    if data_start > len(payload):
        raise WireError(f"header length {head_length} runs past the payload ({len(payload)} bytes)")
    try:
        header = json.loads(payload[_U32.size : data_start].decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise WireError(f"header is not UTF-8 JSON ({error})") from None
    if not isinstance(header, dict):
        raise WireError(f"header must be a JSON object, got {type(header).__name__}")
    descriptors = header.pop("arrays", [])
    if not isinstance(descriptors, list) or len(descriptors) > MAX_ARRAYS:
        raise WireError(f"'arrays' must be a list of at most {MAX_ARRAYS} descriptors")
    data = memoryview(payload)[data_start:]
    arrays: dict[str, np.ndarray] = {}
    spans: list[tuple[int, int, str]] = []
    for i, d in enumerate(descriptors):
        name, array, span = _read_array(d, i, data)
        if name in arrays:
            raise WireError(f"arrays[{i}]: name {name!r} repeats")
        arrays[name] = array
        spans.append((*span, name))
    spans.sort()
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise WireError(f"arrays {first!r} and {second!r} overlap")
    return Message(header, arrays)


def _read_array(d: Any, i: int, data: memoryview) -> tuple[str, np.ndarray, tuple[int, int]]:
    where = f"arrays[{i}]"
    if not isinstance(d, dict):
        raise WireError(f"{where}: a descriptor must be an object")
    name, dtype, shape, offset = d.get("name"), d.get("dtype"), d.get("shape"), d.get("offset")
    if not isinstance(name, str) or not name:
        raise WireError(f"{where}: 'name' must be a non-empty string")
    where = f"array {name!r}"
    if dtype not in DTYPES:
        raise WireError(f"{where}: dtype {dtype!r} is not one of {', '.join(DTYPES)}")
    if (
        not isinstance(shape, list)
        or len(shape) > MAX_AXES
        or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in shape)
    ):
        raise WireError(f"{where}: 'shape' must be a list of at most {MAX_AXES} non-negative integers, got {shape!r}")
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise WireError(f"{where}: 'offset' must be a non-negative integer, got {offset!r}")
    np_dtype = DTYPES[dtype]
    nbytes = math.prod(shape) * np_dtype.itemsize  # exact: a huge shape cannot wrap around
    end = offset + nbytes
    if end > len(data):
        raise WireError(f"{where}: bytes {offset}..{end} lie outside the {len(data)} data bytes")
    array = np.frombuffer(data[offset:end], dtype=np_dtype).reshape(shape)
    return name, array, (offset, end)


def read_frame(sock: socket.socket, max_bytes: int, body_timeout_s: float | None = None) -> bytes | None:
    """The next frame's payload, or None if the peer closed the connection between frames.
    FrameTooLarge for a frame over ``max_bytes``; ConnectionError if it closes mid-frame.
    ``body_timeout_s``: once a frame has begun, the longest its remaining bytes may take
    (TimeoutError after; the socket's own timeout applies between frames)."""
    prefix = _read_exact(sock, _U32.size, allow_eof=True)
    if prefix is None:
        return None
    (length,) = _U32.unpack(prefix)
    if length > max_bytes:
        raise FrameTooLarge(f"frame of {length} bytes is over the limit of {max_bytes} bytes")
    if body_timeout_s is None:
        payload = _read_exact(sock, length, allow_eof=False)
    else:
        previous = sock.gettimeout()
        sock.settimeout(body_timeout_s)
        try:
            payload = _read_exact(sock, length, allow_eof=False)
        finally:
            sock.settimeout(previous)
    assert payload is not None
    return payload


def _read_exact(sock: socket.socket, n: int, *, allow_eof: bool) -> bytes | None:
    buffer = bytearray(n)
    view = memoryview(buffer)
    got = 0
    while got < n:
        count = sock.recv_into(view[got:])
        if count == 0:
            if got == 0 and allow_eof:
                return None
            raise ConnectionError(f"connection closed after {got} of {n} bytes of a frame")
        got += count
    return bytes(buffer)


def error_frame(message: str, *, retry: bool = False) -> bytes:
    """A reply that refuses a request, saying why (``retry``: it may succeed later)."""
    return encode({"ok": False, "error": message, "retry": retry})
