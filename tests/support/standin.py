"""A stand-in Unity build: plays the Unity side of the ML-Agents gRPC protocol, for tests and
benchmarks.

A test double, not part of the runtime packages (nothing under ``envs/``, ``processors/``,
``trainers/`` or ``stats/`` imports it). Run it as a build would be run,
``python tests/support/standin.py --mlagents-port 5005 [flags]`` (or
``python -m tests.support.standin`` from the repository root), or hand
``write_launcher(folder)`` to ``UnityEnvironment(file_name=...)``. Like a Unity
player it is the gRPC client, accepts ``--mlagents-port``, ``-nographics``, ``-batchmode``,
``-logFile PATH`` (and ignores other flags), answers the engine-configuration and
environment-parameter side channels (their values come back as stats), and sends stats
through the stats side channel. It behaves as real builds do: behavior names are
``Name?team=N``; a behavior's spec is sent with its first agents; each episode gets a new
agent id (counting from 0 per process); agents decide every ``period`` steps and act in
between; academy steps in which nobody decides or ends are not sent; an episode cut at
``max_step`` ends with ``max_step_reached``.

Scenes (``--scene`` or env ``STANDIN_SCENE``):

- ``balance``: 12 agents (``--agents``) balancing a ball, 8 floats, 2 continuous actions,
  decision period 5, reward 0.1 per step, -1 when the ball falls; env parameter ``gravity``.
- ``visual``: 4 agents in a corridor, discrete branches (3, 2) with action masks (no left at
  the left wall, no right at the right wall), a vector obs ``[x, goal, episode_step]``, a
  PNG-compressed RGB camera ``(S, S, 3)`` and a raw float camera ``(S//2, S//2, 1)``
  (S = ``--image-size``, 16), periods 1 and 2 alternating. Pixels are ``render_frame``.
- ``two_behaviors``: ``Striker?team=0`` (2 agents, continuous) from the start and
  ``Goalie?team=1`` (1 agent, discrete) from academy step 3.
- ``large``: 1 agent with one raw float camera ``(S, S, 3)``, S = ``--image-size`` (600:
  4.3 MB per message, beyond gRPC's default 4 MB cap).
- ``grid``: ``Grid?team=0``, 3 agents walking an ``S x S`` board (S = ``--image-size``, 8),
  branch ``(5,)`` (stay, up, down, left, right), +1 on the goal cell, ``max_step`` 6; the
  observations Unity's built-in image sensors send, as they send them (see below): a vector
  ``[row, col, episode_step]``; ``GridSensor`` ``(S, S, 5)`` PNG (a ``GridSensorBase`` with 5
  channels per cell: two PNGs, no channel mapping); ``RawGridSensor`` ``(S, S, 5)`` floats;
  ``GrayscaleCamera`` ``(S, S, 1)`` PNG (a grayscale ``CameraSensor``: one RGB PNG, no
  mapping); ``StackedGrayscale`` ``(S, S, 2)`` PNG (that camera in a ``StackingSensor`` of 2:
  two RGB PNGs, mapping ``[0, 0, 0, 1, 1, 1]``, the older frame drawn with key - 1).

Two generations of builds (``--package-version`` or env ``STANDIN_PACKAGE_VERSION``, default
``2.3.0-exp.3``, sent in the handshake). Package 2.x (and older) sends every rank-3 observation
as ``[H, W, C]`` with dimension properties (TRANSLATIONAL_EQUIVARIANCE, TRANSLATIONAL_EQUIVARIANCE,
NONE) and float data in ``H, W, C`` order; package 3.x and 4.x (major version >= 3: Unity 6,
``ObservationSpec.Visual(channels, height, width)``) send ``[C, H, W]``, (NONE, TE, TE) and float
data in ``C, H, W`` order. PNG payloads and channel mappings are the same in both, and so are
the pixels: a scene renders ``[H, W, C]`` frames and only the message layout differs, so a
2.x and a 3.x build of one scene with one seed send the same observations.

How Unity compresses images (com.unity.ml-agents ``CameraSensor``, ``RenderTextureSensor``,
``GridSensorBase``, ``StackingSensor``): a camera always encodes an RGB PNG, grayscale or not,
and sends no channel mapping; the trainer averages R, G and B when the declared channel count
is 1. A grid sensor encodes ``ceil(C / 3)`` RGB PNGs, concatenated, and sends no mapping: the
trainer keeps the first C channels (the padding channel of the last PNG holds stale values
of the previous group, as ``GridSensorBase`` reuses its colour buffer; the stand-in does the
same). Only a ``StackingSensor`` sends a mapping: the wrapped sensor's (``[0, 0, 0]`` for a
grayscale camera, identity otherwise), padded with -1 to a multiple of 3, once per stacked
frame with channel offsets. The ``visual`` scene's camera sends mapping ``[0, 1, 2]``, which
decodes the same as none.

Scenes in the shape of ML-Agents' multi-agent examples, for their ``poca/*.yaml`` configs: the
behavior names, teams, group sizes, vector widths and action branches of the Unity scene, with
agent groups (``SimpleMultiAgentGroup``) and ``--areas`` playing areas (2), each area one group
per team. A shared ball (or block) moves with the sum of the members' pushes (branch 0: 1
forward, 2 back); every decision costs ``-1/max_step`` (individual reward).

- ``soccer_twos``: ``SoccerTwos?team=0`` and ``SoccerTwos?team=1``, 2 agents a group, 336
  floats, branches (3, 3, 3). The ball reaching a side ends the match for both groups: group
  reward +1 for the scoring team, -1 for the other; ``max_step`` (100) interrupts both.
- ``strikers_vs_goalie``: ``Striker?team=0`` (2 agents, 294 floats) against ``Goalie?team=1``
  (1 agent, 738 floats), branches (3, 3, 3), played as ``soccer_twos``.
- ``dungeon_escape``: ``DungeonEscape?team=0``, 3 agents, 60 floats, branch (7,). Action 6
  slays the dragon: that agent's episode ends alone (a terminal step, not interrupted) while its
  group goes on with the key; the door then opens to the group's pushes (+1 group reward).
- ``push_block_collab``: ``PushBlockCollab?team=0``, 3 agents, 70 floats, branch (7,); the block
  at the goal gives the group +1.

A group's episode ends for all its members at once (group reward with their terminal steps);
then every member, fallen ones too, starts anew with fresh ids, as ``EndGroupEpisode`` and
re-registering do in Unity.

A slower build (``--step-sleep-ms`` or env ``STANDIN_STEP_SLEEP_MS``, default 0): sleep that
many milliseconds (a float) in every academy step, including the steps in which no agent
decides and nothing is sent, as a real scene's physics costs time whether or not anyone
decides (the balance scene's 5-step decision period makes 2 ms a step about 10 ms a message).

``--exchange-log PATH`` (or env ``STANDIN_EXCHANGE_LOG``, so a trainer that launches the build
can be given one per run): the build writes, when its session ends, a JSON list of
``[sent, replied]`` ``time.perf_counter()`` pairs, one per step it sent and got a reply to (the
clock is the machine's monotonic one, so a trainer's stamps compare with it;
``benchmarks/e2e_exchanges.py`` reads it).

Faults on request (flags or env ``STANDIN_CRASH_AFTER`` etc.): after answering N step
commands, the next one makes the build crash (SIGSEGV), hang (sleep, still alive) or quit
(the quit message Unity sends on Application.Quit, then exit 0); ``--die-at-startup`` exits
with code 3 between its first two messages.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import stat
import struct
import sys
import time
import uuid
import zlib
from collections.abc import Sequence
from typing import NamedTuple, TextIO

import numpy as np

SCENES = (
    "balance",
    "visual",
    "two_behaviors",
    "large",
    "soccer_twos",
    "strikers_vs_goalie",
    "dungeon_escape",
    "push_block_collab",
    "grid",
)
COMMUNICATION_VERSION = "1.5.0"
PACKAGE_VERSION = "2.3.0-exp.3"

ENGINE_CHANNEL = uuid.UUID("e951342c-4f7e-11ea-b238-784f4387d1f7")
PARAMETERS_CHANNEL = uuid.UUID("534c891e-810f-11ea-a9d0-822485860400")
STATS_CHANNEL = uuid.UUID("a1d8f7b7-cec8-50f9-b78b-d3e165a78520")
# StatsAggregationMethod values.
AGG_AVERAGE, AGG_MOST_RECENT, AGG_SUM = 0, 1, 2
# DimensionProperty values as Unity sends them.
_DIM_NONE, _DIM_TRANSLATIONAL = 1, 2

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------------------------
# Pure helpers (tests use them to predict what arrives)


def render_frame(key: int, shape: tuple[int, ...]) -> np.ndarray:
    """The camera image the visual scenes send: uint8 ``[H, W, C]``, a pattern of ``key``.

    pixel[h, w, c] = (7h + 3w + 11c + key) mod 256.
    """
    h, w, c = np.indices(shape, dtype=np.int64)
    return ((7 * h + 3 * w + 11 * c + key) % 256).astype(np.uint8)


def visual_key(agent_id: int, position: int) -> int:
    """The ``key`` of ``render_frame`` for an agent of the visual scene at ``position``."""
    return agent_id * 31 + position


def encode_png(image: np.ndarray) -> bytes:
    """Lossless 8-bit RGB PNG of a uint8 ``[H, W, 3]`` array (stdlib only)."""
    if image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"encode_png needs uint8 [H, W, 3], got {image.dtype} {image.shape}")
    height, width, _ = image.shape
    rows = np.zeros((height, 1 + width * 3), dtype=np.uint8)  # filter byte 0 per row
    rows[:, 1:] = image.reshape(height, width * 3)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1)) + chunk(b"IEND", b"")
    )


def encode_pngs(image: np.ndarray) -> bytes:
    """Concatenated PNGs of a uint8 ``[H, W, 3n]`` array, channels ``3i..3i+2`` in the i-th:
    how Unity sends an observation of more than 3 channels (ObservationProto.compressed_data)."""
    if image.ndim != 3 or image.shape[2] % 3:
        raise ValueError(f"encode_pngs needs [H, W, 3n], got {image.shape}")
    return b"".join(encode_png(image[:, :, i : i + 3]) for i in range(0, image.shape[2], 3))


def package_major(package_version: str) -> int:
    """Major version of a Unity package version such as ``"2.3.0-exp.3"`` or ``"4.0.0"``."""
    return int(package_version.split(".")[0])


def channels_first(package_version: str) -> bool:
    """Whether a build of this ML-Agents package version lays images out ``[C, H, W]`` (3.x+)."""
    return package_major(package_version) >= 3


def _write_string(s: str) -> bytes:
    data = s.encode("ascii")
    return struct.pack("<i", len(data)) + data


def stats_message(key: str, value: float, aggregation: int) -> bytes:
    """One StatsSideChannel payload (key, float32 value, aggregation method)."""
    return _write_string(key) + struct.pack("<fi", value, aggregation)


def pack_side_channel(messages: Sequence[tuple[uuid.UUID, bytes]]) -> bytes:
    """Side-channel wire format: per message, channel UUID (bytes_le), int32 length, payload."""
    return b"".join(channel.bytes_le + struct.pack("<i", len(payload)) + payload for channel, payload in messages)


def unpack_side_channel(data: bytes) -> list[tuple[uuid.UUID, bytes]]:
    """Inverse of pack_side_channel."""
    result = []
    offset = 0
    while offset < len(data):
        channel = uuid.UUID(bytes_le=bytes(data[offset : offset + 16]))
        (length,) = struct.unpack_from("<i", data, offset + 16)
        offset += 20
        result.append((channel, bytes(data[offset : offset + length])))
        offset += length
    return result


class _Reader:
    """Reads the little-endian fields of one side-channel payload."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.offset = 0

    def int32(self) -> int:
        (value,) = struct.unpack_from("<i", self.data, self.offset)
        self.offset += 4
        return value

    def float32(self) -> float:
        (value,) = struct.unpack_from("<f", self.data, self.offset)
        self.offset += 4
        return value

    def string(self) -> str:
        length = self.int32()
        value = self.data[self.offset : self.offset + length].decode("ascii")
        self.offset += length
        return value

    def float32_list(self) -> list[float]:
        return [self.float32() for _ in range(self.int32())]


# ---------------------------------------------------------------------------------------------
# Scenes


class ObsDef(NamedTuple):
    """One sensor. ``shape`` is ``[H, W, C]`` for images whatever the generation (the message
    layout is chosen when sending); ``mapping`` is the compressed channel mapping sent with a
    PNG observation (empty: none sent)."""

    name: str
    shape: tuple[int, ...]
    png: bool = False
    mapping: tuple[int, ...] = ()


class Group:
    """The agents of one behavior; subclasses supply reset, physics and observations."""

    name: str = ""
    continuous: int = 0
    branches: tuple[int, ...] = ()
    observations: tuple[ObsDef, ...] = ()

    def __init__(
        self,
        n_agents: int,
        periods: Sequence[int],
        max_step: int,
        spawn_step: int,
        rng: np.random.Generator,
        params: dict[str, float],
    ) -> None:
        self.n = n_agents
        self.periods = np.asarray(periods, dtype=np.int64)
        self.max_step = max_step
        self.spawn_step = spawn_step
        self.rng = rng
        self.params = params
        self.active = False
        self.spec_sent = False
        self.ids = np.zeros(n_agents, dtype=np.int64)
        self.episode_step = np.zeros(n_agents, dtype=np.int64)
        self.pending_reward = np.zeros(n_agents, dtype=np.float64)
        self.group_ids = np.zeros(n_agents, dtype=np.int64)  # 0: in no group
        self.pending_group_reward = np.zeros(n_agents, dtype=np.float64)
        self.alive = np.ones(n_agents, dtype=bool)  # False: ended alone, waiting for its group
        self.cont_actions = np.zeros((n_agents, self.continuous), dtype=np.float32)
        self.disc_actions = np.zeros((n_agents, len(self.branches)), dtype=np.int64)
        self.deciding: np.ndarray = np.zeros(0, dtype=np.int64)

    def reset_agents(self, idx: np.ndarray) -> None:
        """Start new episodes for agents ``idx`` (state only)."""

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        """One academy step with the current actions: (rewards [N], terminated [N] bool)."""
        raise NotImplementedError

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        """Per ObsDef: float32 ``[k, *shape]``, or for PNG observations uint8 ``[k, H, W, 3n]``,
        the RGB channels of the n PNG images sent (``encode_pngs``)."""
        raise NotImplementedError

    def action_mask(self, idx: np.ndarray) -> np.ndarray | None:
        """bool ``[k, sum(branches)]``, True = action not allowed; None for no masks."""
        return None

    def to_restart(self, done: np.ndarray) -> np.ndarray:
        """Of the agents ``done`` whose episodes just ended, those that start a new one now."""
        return done


class BalanceGroup(Group):
    name = "Balance?team=0"
    continuous = 2
    observations = (ObsDef("VectorSensor", (8,)),)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.tilt = np.zeros((self.n, 2))
        self.pos = np.zeros((self.n, 3))
        self.vel = np.zeros((self.n, 3))

    def reset_agents(self, idx: np.ndarray) -> None:
        k = len(idx)
        self.tilt[idx] = self.rng.uniform(-0.1, 0.1, (k, 2))
        self.pos[idx] = np.column_stack(
            [self.rng.uniform(-0.3, 0.3, k), np.full(k, 4.0), self.rng.uniform(-0.3, 0.3, k)]
        )
        self.vel[idx] = 0.0

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        dt = 0.02
        gravity = self.params.get("gravity", 9.81)
        self.tilt = np.clip(self.tilt + 0.02 * np.clip(self.cont_actions, -1, 1), -0.25, 0.25)
        self.vel[:, 0] += gravity * np.sin(self.tilt[:, 1]) * dt
        self.vel[:, 2] += gravity * np.sin(self.tilt[:, 0]) * dt
        self.pos += self.vel * dt
        fell = (np.abs(self.pos[:, 0]) > 1.5) | (np.abs(self.pos[:, 2]) > 1.5)
        return np.where(fell, -1.0, 0.1), fell

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        return [
            np.concatenate([self.tilt[idx], self.pos[idx] - np.array([0.0, 4.0, 0.0]), self.vel[idx]], axis=1).astype(
                np.float32
            )
        ]


class CorridorGroup(Group):
    """Discrete corridor with masks and two cameras; see the module docstring."""

    name = "Corridor?team=0"
    branches = (3, 2)
    length = 8

    def __init__(self, *args, image_size: int = 16, **kwargs) -> None:
        self.observations = (
            ObsDef("VectorSensor", (3,)),
            ObsDef("CameraSensor", (image_size, image_size, 3), png=True, mapping=(0, 1, 2)),
            ObsDef("RawCamera", (max(image_size // 2, 1), max(image_size // 2, 1), 1)),
        )
        super().__init__(*args, **kwargs)
        self.x = np.zeros(self.n, dtype=np.int64)
        self.goal = np.zeros(self.n, dtype=np.int64)

    def reset_agents(self, idx: np.ndarray) -> None:
        self.x[idx] = self.rng.integers(0, self.length, len(idx))
        self.goal[idx] = (self.x[idx] + self.rng.integers(1, self.length, len(idx))) % self.length

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        move = np.array([0, -1, 1])[self.disc_actions[:, 0]]
        self.x = np.clip(self.x + move, 0, self.length - 1)
        reached = self.x == self.goal
        return np.where(reached, 1.0, -0.01), reached

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        vector = np.column_stack([self.x[idx], self.goal[idx], self.episode_step[idx]]).astype(np.float32)
        cameras = [
            np.stack([render_frame(visual_key(int(self.ids[i]), int(self.x[i])), obs.shape) for i in idx])
            for obs in self.observations[1:]
        ]
        raw = cameras[1].astype(np.float32) / np.float32(255.0)
        return [vector, cameras[0], raw]

    def action_mask(self, idx: np.ndarray) -> np.ndarray | None:
        mask = np.zeros((len(idx), sum(self.branches)), dtype=bool)
        mask[:, 1] = self.x[idx] == 0
        mask[:, 2] = self.x[idx] == self.length - 1
        return mask


class StrikerGroup(Group):
    name = "Striker?team=0"
    continuous = 2
    observations = (ObsDef("VectorSensor", (4,)),)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pos = np.zeros((self.n, 2))

    def reset_agents(self, idx: np.ndarray) -> None:
        self.pos[idx] = self.rng.uniform(-1, 1, (len(idx), 2))

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        self.pos += 0.5 * np.clip(self.cont_actions, -1, 1)
        out = np.abs(self.pos).max(axis=1) > 5
        return np.where(out, -1.0, -0.01 * np.abs(self.pos).sum(axis=1)), out

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        return [np.column_stack([self.pos[idx], -self.pos[idx]]).astype(np.float32)]


class GoalieGroup(Group):
    name = "Goalie?team=1"
    branches = (3,)
    observations = (ObsDef("VectorSensor", (3,)),)

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.pos = np.zeros(self.n)

    def reset_agents(self, idx: np.ndarray) -> None:
        self.pos[idx] = 0.0

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        self.pos += np.array([0.0, -1.0, 1.0])[self.disc_actions[:, 0]]
        out = np.abs(self.pos) > 3
        return np.where(out, -1.0, 0.05), out

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        return [np.column_stack([self.pos[idx], self.episode_step[idx], np.ones(len(idx))]).astype(np.float32)]


class LargeGroup(Group):
    name = "Large?team=0"
    continuous = 1

    def __init__(self, *args, image_size: int = 600, **kwargs) -> None:
        self.observations = (ObsDef("RawCamera", (image_size, image_size, 3)),)
        super().__init__(*args, **kwargs)

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(self.n), np.zeros(self.n, dtype=bool)

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        frames = np.stack([render_frame(int(self.ids[i]), self.observations[0].shape) for i in idx])
        return [frames.astype(np.float32) / np.float32(255.0)]


class GridGroup(Group):
    """Agents on a board with the image sensors of Unity's package; see the module docstring."""

    name = "Grid?team=0"
    branches = (5,)
    stacks = 2

    def __init__(self, *args, image_size: int = 8, **kwargs) -> None:
        s = image_size
        self.size = s
        self.observations = (
            ObsDef("VectorSensor", (3,)),
            ObsDef("GridSensor", (s, s, 5), png=True),
            ObsDef("RawGridSensor", (s, s, 5)),
            ObsDef("GrayscaleCamera", (s, s, 1), png=True),
            ObsDef("StackedGrayscale", (s, s, self.stacks), png=True, mapping=(0, 0, 0, 1, 1, 1)),
        )
        super().__init__(*args, **kwargs)
        self.cell = np.zeros((self.n, 2), dtype=np.int64)
        self.goal = np.zeros((self.n, 2), dtype=np.int64)

    def reset_agents(self, idx: np.ndarray) -> None:
        self.cell[idx] = self.rng.integers(0, self.size, (len(idx), 2))
        self.goal[idx] = self.rng.integers(0, self.size, (len(idx), 2))

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        move = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1]])[self.disc_actions[:, 0]]
        self.cell = np.clip(self.cell + move, 0, self.size - 1)
        reached = (self.cell == self.goal).all(axis=1)
        return np.where(reached, 1.0, -0.01), reached

    def key(self, i: int) -> int:
        return visual_key(int(self.ids[i]), int(self.cell[i, 0] * self.size + self.cell[i, 1]))

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        s = self.size
        vector = np.column_stack([self.cell[idx], self.episode_step[idx]]).astype(np.float32)
        grid = np.stack([render_frame(self.key(i), (s, s, 5)) for i in idx])
        # Two RGB images; the last one's third channel keeps channel 2, as GridSensorBase's
        # reused colour buffer does.
        grid_png = np.concatenate([grid, grid[..., 2:3]], axis=3)
        camera = np.stack([render_frame(self.key(i), (s, s, 3)) for i in idx])
        stacked = np.stack(
            [
                np.concatenate(
                    [render_frame(self.key(i) - (self.stacks - 1 - j), (s, s, 3)) for j in range(self.stacks)], axis=2
                )
                for i in idx
            ]
        )
        return [vector, grid_png, grid.astype(np.float32) / np.float32(255.0), camera, stacked]


class Arena:
    """The shared state of a multi-agent scene's playing areas: a ball (or block, or door)
    position per area that the teams' groups push, advanced once per academy step."""

    def __init__(self, areas: int, kind: str) -> None:
        self.kind = kind  # "versus" (two teams), "escape" (a key first) or "push"
        self.ball = np.zeros(areas)
        self.key = np.zeros(areas, dtype=bool)
        self.ended = np.zeros(areas, dtype=bool)  # the match of the area ended this step
        self.result = np.zeros((areas, 2))  # its group reward per team
        self.teams: list[TeamGroup] = []

    def reset_areas(self, areas: np.ndarray) -> None:
        self.ball[areas] = 0.0
        self.key[areas] = False

    def advance(self) -> None:
        """Move every area's ball by the teams' pushes; mark the matches that end now."""
        push = np.zeros((len(self.teams), len(self.ball)))
        for t, team in enumerate(self.teams):
            action = np.where(team.alive, team.disc_actions[:, 0], 0)
            np.add.at(push[t], team.area, (action == 1).astype(float) - (action == 2))
            team.fell[:] = False
            if self.kind == "escape":  # the first agent of an area to slay the dragon falls
                for i in np.flatnonzero(action == 6):
                    if not self.key[team.area[i]]:
                        self.key[team.area[i]] = True
                        team.fell[i] = True
        self.result[:] = 0.0
        if self.kind == "versus":
            self.ball += 0.1 * (push[0] - push[1])
            self.ended = np.abs(self.ball) >= 1.0
            self.result[:, 0] = np.sign(self.ball) * self.ended
            self.result[:, 1] = -self.result[:, 0]
        else:
            moving = self.key if self.kind == "escape" else np.ones_like(self.key)
            self.ball = np.maximum(self.ball + 0.1 * push[0] * moving, 0.0)
            self.ended = self.ball >= 1.0
            self.result[:, 0] = self.ended.astype(float)


class TeamGroup(Group):
    """One team's agents in a multi-agent scene: ``size`` agents per area in one agent group."""

    def __init__(
        self,
        name: str,
        team: int,
        size: int,
        width: int,
        branches: tuple[int, ...],
        arena: Arena,
        *args,
        **kwargs,
    ) -> None:
        self.name = name
        self.branches = branches
        self.observations = (ObsDef("VectorSensor", (width,)),)
        areas = len(arena.ball)
        super().__init__(size * areas, [1] * (size * areas), *args, **kwargs)
        self.team, self.size, self.arena = team, size, arena
        self.area = np.arange(self.n) // size
        self.group_ids[:] = 1 + team * areas + self.area  # nonzero, one per area and team
        self.fell = np.zeros(self.n, dtype=bool)
        arena.teams.append(self)

    def reset_agents(self, idx: np.ndarray) -> None:
        self.arena.reset_areas(np.unique(self.area[idx]))

    def physics(self) -> tuple[np.ndarray, np.ndarray]:
        arena, alive = self.arena, self.alive
        ended = arena.ended[self.area] & alive
        self.pending_group_reward += np.where(ended, arena.result[self.area, self.team], 0.0)
        rewards = np.where(alive, -1.0 / self.max_step, 0.0)
        return rewards, (ended | self.fell) & alive

    def observe(self, idx: np.ndarray) -> list[np.ndarray]:
        area = self.area[idx]
        features = np.zeros((len(idx), self.observations[0].shape[0]), dtype=np.float32)
        features[:, 0] = self.arena.ball[area] * (1 - 2 * self.team)
        features[:, 1] = self.arena.key[area]
        features[:, 2] = self.episode_step[idx] / self.max_step
        features[:, 3] = idx % self.size
        features[:, 4] = [self.alive[self.area == a].sum() for a in area]
        return [features]

    def to_restart(self, done: np.ndarray) -> np.ndarray:
        """A fallen agent waits for its group; a group whose episode ended (or was cut at
        ``max_step``) restarts whole."""
        fallen = done[self.fell[done] & ~self.arena.ended[self.area[done]]]
        self.alive[fallen] = False
        ended_areas = np.unique(self.area[np.setdiff1d(done, fallen)])
        return np.flatnonzero(np.isin(self.area, ended_areas))


def make_groups(options: argparse.Namespace, rng: np.random.Generator, params: dict[str, float]) -> list[Group]:
    """The agent groups of ``options.scene``."""
    scene = options.scene
    max_step = options.max_step
    if scene == "balance":
        n = options.agents or 12
        return [BalanceGroup(n, [5] * n, max_step or 1000, 0, rng, params)]
    if scene == "visual":
        n = options.agents or 4
        periods = [1 + i % 2 for i in range(n)]
        return [CorridorGroup(n, periods, max_step or 30, 0, rng, params, image_size=options.image_size or 16)]
    if scene == "two_behaviors":
        n = options.agents or 2
        return [
            StrikerGroup(n, [1] * n, max_step or 20, 0, rng, params),
            GoalieGroup(1, [1], max_step or 15, 3, rng, params),
        ]
    if scene == "large":
        n = options.agents or 1
        return [LargeGroup(n, [1] * n, max_step or 100, 0, rng, params, image_size=options.image_size or 600)]
    if scene == "grid":
        n = options.agents or 3
        return [GridGroup(n, [1] * n, max_step or 6, 0, rng, params, image_size=options.image_size or 8)]
    areas, max_step = options.areas or 2, max_step or 100
    if scene in ("soccer_twos", "strikers_vs_goalie"):
        arena = Arena(areas, "versus")
        if scene == "soccer_twos":
            teams = [("SoccerTwos?team=0", 2, 336), ("SoccerTwos?team=1", 2, 336)]
        else:
            teams = [("Striker?team=0", 2, 294), ("Goalie?team=1", 1, 738)]
        return [
            TeamGroup(name, team, size, width, (3, 3, 3), arena, max_step, 0, rng, params)
            for team, (name, size, width) in enumerate(teams)
        ]
    if scene in ("dungeon_escape", "push_block_collab"):
        escape = scene == "dungeon_escape"
        arena = Arena(areas, "escape" if escape else "push")
        name, width = ("DungeonEscape?team=0", 60) if escape else ("PushBlockCollab?team=0", 70)
        return [TeamGroup(name, 0, 3, width, (7,), arena, max_step, 0, rng, params)]
    raise ValueError(f"unknown scene {scene!r}; choose one of {', '.join(SCENES)}")


# ---------------------------------------------------------------------------------------------
# The academy: turns scenes into protocol messages


class Academy:
    """Steps the groups and builds UnityRLOutputProto messages as the C# Academy does;
    ``channels_first`` lays images out as package 3.x+ does (see the module docstring)."""

    def __init__(self, groups: list[Group], pb, *, channels_first: bool = False, step_sleep_s: float = 0.0) -> None:
        self.groups = groups
        self.pb = pb
        self.channels_first = channels_first
        self.step_sleep_s = step_sleep_s  # per academy step: the scene's physics (--step-sleep-ms)
        self.academy_step = 0  # since the last reset: decisions are timed by it
        self.total_steps = 0  # since start: spawning is timed by it
        self.next_id = 0
        self.need_physics = False
        self.stats: list[bytes] = []
        self.done_infos: dict[str, list] = {}
        self.arenas = list({id(g.arena): g.arena for g in groups if isinstance(g, TeamGroup)}.values())

    def _new_episodes(self, group: Group, idx: np.ndarray) -> None:
        group.ids[idx] = np.arange(self.next_id, self.next_id + len(idx))
        self.next_id += len(idx)
        group.episode_step[idx] = 0
        group.pending_reward[idx] = 0.0
        group.pending_group_reward[idx] = 0.0
        group.alive[idx] = True
        group.cont_actions[idx] = 0.0
        group.disc_actions[idx] = 0
        group.reset_agents(idx)

    def reset(self) -> None:
        """Environment reset: every spawned agent starts a new episode (no terminal steps)."""
        self.done_infos = {}
        for group in self.groups:
            if group.active or group.spawn_step <= self.total_steps:
                group.active = True
                self._new_episodes(group, np.arange(group.n))
        self.need_physics = False
        self.academy_step = -1  # the first academy step after a reset is step 0

    def set_actions(self, rl_input) -> None:
        for group in self.groups:
            if len(group.deciding) == 0 or group.name not in rl_input.agent_actions:
                continue
            actions = rl_input.agent_actions[group.name].value
            if len(actions) != len(group.deciding):
                raise RuntimeError(f"{group.name}: {len(actions)} actions for {len(group.deciding)} agents")
            for i, action in zip(group.deciding, actions):
                if group.continuous:
                    group.cont_actions[i] = action.continuous_actions
                if group.branches:
                    group.disc_actions[i] = action.discrete_actions

    def _info(
        self,
        group: Group,
        idx: np.ndarray,
        observations: list[np.ndarray],
        masks: np.ndarray | None,
        infos,
        done: bool,
        interrupted: np.ndarray,
    ) -> None:
        for row, i in enumerate(idx):
            info = infos.add()
            info.reward = group.pending_reward[i]
            info.id = int(group.ids[i])
            info.group_id = int(group.group_ids[i])
            info.group_reward = group.pending_group_reward[i]
            if done:
                info.done = True
                info.max_step_reached = bool(interrupted[row])
            if masks is not None:
                info.action_mask.extend(masks[row].tolist())
            for obs_def, values in zip(group.observations, observations):
                self._observation(info.observations.add(), obs_def, values[row])
            group.pending_reward[i] = 0.0
            group.pending_group_reward[i] = 0.0

    def _observation(self, obs, obs_def: ObsDef, value: np.ndarray) -> None:
        """Fill ObservationProto ``obs`` with one agent's ``value`` (as ``Group.observe`` gives it)."""
        obs.name = obs_def.name
        image = len(obs_def.shape) == 3
        if image and self.channels_first:
            height, width, channels = obs_def.shape
            obs.shape.extend((channels, height, width))
            obs.dimension_properties.extend((_DIM_NONE, _DIM_TRANSLATIONAL, _DIM_TRANSLATIONAL))
        elif image:
            obs.shape.extend(obs_def.shape)
            obs.dimension_properties.extend((_DIM_TRANSLATIONAL, _DIM_TRANSLATIONAL, _DIM_NONE))
        else:
            obs.shape.extend(obs_def.shape)
            obs.dimension_properties.append(_DIM_NONE)
        if obs_def.png:
            obs.compression_type = self.pb.PNG
            obs.compressed_data = encode_pngs(value)
            obs.compressed_channel_mapping.extend(obs_def.mapping)
        elif image and self.channels_first:
            obs.float_data.data.extend(value.transpose(2, 0, 1).ravel().tolist())
        else:
            obs.float_data.data.extend(value.ravel().tolist())

    def _physics(self, output_infos) -> None:
        for arena in self.arenas:
            arena.advance()
        for group in self.groups:
            if not group.active:
                continue
            rewards, terminated = group.physics()
            group.pending_reward += rewards
            group.episode_step += 1
            interrupted = (group.episode_step >= group.max_step) & ~terminated
            done = np.flatnonzero((terminated | interrupted) & group.alive)
            if len(done) == 0:
                continue
            infos = output_infos[group.name].value
            self._info(group, done, group.observe(done), None, infos, True, interrupted[done])
            for i in done:
                self.stats.append(stats_message("StandIn/episode_length", float(group.episode_step[i]), AGG_AVERAGE))
            self._new_episodes(group, group.to_restart(done))

    def run_until_message(self, output) -> None:
        """Advance academy steps until some agent decides or ends; fill ``output``
        (a UnityOutputProto)."""
        rl_output = output.rl_output
        infos_by_name = rl_output.agentInfos
        while True:
            if self.step_sleep_s:
                time.sleep(self.step_sleep_s)
            if self.need_physics:
                self._physics(infos_by_name)
            self.need_physics = True
            self.academy_step += 1
            self.total_steps += 1
            for group in self.groups:
                if not group.active and group.spawn_step <= self.total_steps:
                    group.active = True
                    self._new_episodes(group, np.arange(group.n))
                if not group.active:
                    group.deciding = np.zeros(0, dtype=np.int64)
                    continue
                # As Unity's DecisionRequester: every `period` academy steps, counted from the
                # last environment reset, so agents stay in step across episodes.
                deciding = np.flatnonzero((self.academy_step % group.periods == 0) & group.alive)
                group.deciding = deciding
                if len(deciding):
                    self._info(
                        group,
                        deciding,
                        group.observe(deciding),
                        group.action_mask(deciding),
                        infos_by_name[group.name].value,
                        False,
                        np.zeros(0, dtype=bool),
                    )
            if any(len(infos_by_name[name].value) for name in infos_by_name):
                break
        for group in self.groups:
            if not group.spec_sent and group.name in infos_by_name and len(infos_by_name[group.name].value):
                output.rl_initialization_output.brain_parameters.append(self._brain_parameters(group))
                group.spec_sent = True
        rl_output.side_channel = pack_side_channel([(STATS_CHANNEL, m) for m in self.stats])
        self.stats = []

    def _brain_parameters(self, group: Group):
        pb = self.pb
        brain = pb.BrainParametersProto(brain_name=group.name, is_training=True)
        brain.action_spec.num_continuous_actions = group.continuous
        brain.action_spec.num_discrete_actions = len(group.branches)
        brain.action_spec.discrete_branch_sizes.extend(group.branches)
        if group.branches:
            brain.vector_action_space_type_deprecated = pb.discrete
            brain.vector_action_size_deprecated.extend(group.branches)
        else:
            brain.vector_action_space_type_deprecated = pb.continuous
            brain.vector_action_size_deprecated.append(group.continuous)
        return brain


# ---------------------------------------------------------------------------------------------
# The player: command line, side channels, the gRPC client loop


class _Protocol:
    """The message classes and enum values the stand-in needs, from mlagents_envs."""

    def __init__(self) -> None:
        import envs.unity  # noqa: F401  (registers the protocol modules for this protobuf)

        # isort: split
        from mlagents_envs.communicator_objects import (
            brain_parameters_pb2,
            command_pb2,
            observation_pb2,
            space_type_pb2,
            unity_message_pb2,
        )

        self.UnityMessageProto = unity_message_pb2.UnityMessageProto
        self.BrainParametersProto = brain_parameters_pb2.BrainParametersProto
        self.PNG = observation_pb2.PNG
        self.discrete = space_type_pb2.discrete
        self.continuous = space_type_pb2.continuous
        self.STEP, self.RESET, self.QUIT = command_pb2.STEP, command_pb2.RESET, command_pb2.QUIT


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    return int(value) if value not in (None, "") else None


def _env_float(name: str) -> float | None:
    value = os.environ.get(name)
    return float(value) if value not in (None, "") else None


def _package_version(value: str) -> str:
    try:
        package_major(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a package version: {value!r} (e.g. 2.3.0-exp.3, 4.0.0)") from None
    return value


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    """Flags a Unity player gets plus the stand-in's own; unknown flags are ignored."""
    parser = argparse.ArgumentParser(prog="tests/support/standin.py", allow_abbrev=False)
    parser.add_argument("--mlagents-port", type=int, default=5004)
    parser.add_argument("-nographics", action="store_true")
    parser.add_argument("-batchmode", action="store_true")
    parser.add_argument("-logFile", "-logfile", dest="log_file", default=None)
    parser.add_argument("--scene", choices=SCENES, default=os.environ.get("STANDIN_SCENE", "balance"))
    parser.add_argument("--agents", type=int, default=_env_int("STANDIN_AGENTS"))
    parser.add_argument("--areas", type=int, default=_env_int("STANDIN_AREAS"))
    parser.add_argument("--max-step", type=int, default=_env_int("STANDIN_MAX_STEP"))
    parser.add_argument("--image-size", type=int, default=_env_int("STANDIN_IMAGE_SIZE"))
    parser.add_argument(
        "--package-version",
        type=_package_version,
        default=os.environ.get("STANDIN_PACKAGE_VERSION") or PACKAGE_VERSION,
        help="the com.unity.ml-agents version to play (major >= 3: images [C, H, W])",
    )
    parser.add_argument(
        "--step-sleep-ms",
        type=float,
        default=_env_float("STANDIN_STEP_SLEEP_MS") or 0.0,
        help="milliseconds slept in every academy step, as a scene's physics (default 0)",
    )
    parser.add_argument(
        "--exchange-log",
        default=os.environ.get("STANDIN_EXCHANGE_LOG") or None,
        help="write each step's send and reply times here",
    )
    parser.add_argument("--crash-after", type=int, default=_env_int("STANDIN_CRASH_AFTER"))
    parser.add_argument("--hang-after", type=int, default=_env_int("STANDIN_HANG_AFTER"))
    parser.add_argument("--quit-after", type=int, default=_env_int("STANDIN_QUIT_AFTER"))
    parser.add_argument(
        "--die-at-startup", action="store_true", default=os.environ.get("STANDIN_DIE_AT_STARTUP", "") not in ("", "0")
    )
    options, _unknown = parser.parse_known_args(list(argv))
    return options


class Player:
    """One run of the stand-in build."""

    def __init__(self, options: argparse.Namespace, log: TextIO | None) -> None:
        self.options = options
        self.log_stream = log
        self.pb = _Protocol()
        self.exchange_times: list[tuple[float, float]] = []  # (sent, replied) per step (--exchange-log)
        self.params: dict[str, float] = {}
        self.steps_answered = 0
        self.academy: Academy | None = None

    def log(self, text: str) -> None:
        if self.log_stream is not None:
            self.log_stream.write(f"[standin] {text}\n")
            self.log_stream.flush()

    def _side_channels(self, data: bytes) -> None:
        for channel, payload in unpack_side_channel(data):
            reader = _Reader(payload)
            if channel == ENGINE_CHANNEL:
                kind = reader.int32()
                names = {
                    0: "resolution",
                    1: "quality_level",
                    2: "time_scale",
                    3: "target_frame_rate",
                    4: "capture_frame_rate",
                }
                if kind == 0:
                    width, height = reader.int32(), reader.int32()
                    self._stat("StandIn/width", width)
                    self._stat("StandIn/height", height)
                elif kind == 2:
                    self._stat("StandIn/time_scale", reader.float32())
                elif kind in names:
                    self._stat(f"StandIn/{names[kind]}", reader.int32())
            elif channel == PARAMETERS_CHANNEL:
                key = reader.string()
                kind = reader.int32()
                if kind == 0:
                    value = reader.float32()
                else:  # a sampler, evaluated here as Unity does
                    seed, sampler = reader.int32(), reader.int32()
                    rng = np.random.default_rng(seed)
                    if sampler == 0:
                        low, high = reader.float32(), reader.float32()
                        value = float(rng.uniform(low, high))
                    elif sampler == 1:
                        mean, std = reader.float32(), reader.float32()
                        value = float(rng.normal(mean, std))
                    else:
                        bounds = reader.float32_list()
                        pairs = list(zip(bounds[::2], bounds[1::2]))
                        low, high = pairs[int(rng.integers(len(pairs)))]
                        value = float(rng.uniform(low, high))
                self.params[key] = value
                self._stat(f"StandIn/param/{key}", value)
            # Training analytics and unknown channels are ignored, as a build does.

    def _stat(self, key: str, value: float) -> None:
        self.log(f"side channel: {key} = {value}")
        if self.academy is not None:
            self.academy.stats.append(stats_message(key, float(value), AGG_MOST_RECENT))
        else:
            self._early_stats.append(stats_message(key, float(value), AGG_MOST_RECENT))

    def run(self) -> int:
        import grpc

        pb = self.pb
        options = self.options
        self._early_stats: list[bytes] = []
        channel = grpc.insecure_channel(
            f"localhost:{options.mlagents_port}",
            options=[
                ("grpc.max_send_message_length", -1),
                ("grpc.max_receive_message_length", -1),
                # A build started before the trainer listens (as external-unity tests do) retries
                # every 0.1-0.25 s: gRPC's default backoff grows to gaps longer than the trainer's
                # --timeout-wait, and a build would miss a listener that opened in between.
                ("grpc.initial_reconnect_backoff_ms", 100),
                ("grpc.min_reconnect_backoff_ms", 100),
                ("grpc.max_reconnect_backoff_ms", 250),
            ],
        )
        exchange = channel.unary_unary(
            "/communicator_objects.UnityToExternalProto/Exchange",
            request_serializer=pb.UnityMessageProto.SerializeToString,
            response_deserializer=pb.UnityMessageProto.FromString,
        )
        self.log(f"scene {options.scene}, connecting to localhost:{options.mlagents_port}")
        try:
            return self._session(exchange)
        except grpc.RpcError as e:
            self.log(f"connection ended: {e.code()}")
            return 0
        finally:
            channel.close()
            if options.exchange_log:
                with open(options.exchange_log, "w") as log:
                    json.dump(self.exchange_times, log)

    def _session(self, exchange) -> int:
        pb = self.pb
        options = self.options
        first = pb.UnityMessageProto()
        first.header.status = 200
        init = first.unity_output.rl_initialization_output
        init.name = "StandIn"
        init.communication_version = COMMUNICATION_VERSION
        init.package_version = options.package_version
        for field in (
            "baseRLCapabilities",
            "concatenatedPngObservations",
            "compressedChannelMapping",
            "hybridActions",
            "trainingAnalytics",
            "variableLengthObservation",
            "multiAgentGroups",
        ):
            setattr(init.capabilities, field, True)
        reply = exchange(first, wait_for_ready=True, timeout=120)
        if reply.header.status != 200:
            self.log("Python refused the connection")
            return 0
        seed = reply.unity_input.rl_initialization_input.seed
        self.log(f"connected; seed {seed}")
        if options.die_at_startup:
            self.log("dying at start-up as requested")
            os._exit(3)
        rng = np.random.default_rng(seed)
        self.academy = Academy(
            make_groups(options, rng, self.params),
            pb,
            channels_first=channels_first(options.package_version),
            step_sleep_s=options.step_sleep_ms / 1000.0,
        )
        self.academy.stats.extend(self._early_stats)
        second = pb.UnityMessageProto()
        second.header.status = 200
        reply = exchange(second)
        while True:
            if reply.header.status != 200:
                self.log(f"Python closed the connection (status {reply.header.status})")
                return 0
            rl_input = reply.unity_input.rl_input
            self._side_channels(rl_input.side_channel)
            if rl_input.command == pb.QUIT:
                return 0
            if rl_input.command == pb.RESET:
                self.academy.reset()
            else:
                self._maybe_fail(exchange)
                self.steps_answered += 1
                self.academy.set_actions(rl_input)
            output = pb.UnityMessageProto()
            output.header.status = 200
            self.academy.run_until_message(output.unity_output)
            sent = time.perf_counter()
            reply = exchange(output)
            self.exchange_times.append((sent, time.perf_counter()))

    def _maybe_fail(self, exchange) -> None:
        options = self.options
        if options.crash_after is not None and self.steps_answered >= options.crash_after:
            self.log(f"crashing after {self.steps_answered} steps as requested")
            os.kill(os.getpid(), signal.SIGSEGV)
            time.sleep(5)
            os._exit(139)
        if options.hang_after is not None and self.steps_answered >= options.hang_after:
            self.log(f"hanging after {self.steps_answered} steps as requested")
            while True:
                time.sleep(3600)
        if options.quit_after is not None and self.steps_answered >= options.quit_after:
            self.log(f"quitting after {self.steps_answered} steps as requested")
            goodbye = self.pb.UnityMessageProto()
            goodbye.header.status = 400
            try:
                exchange(goodbye, timeout=5)
            except Exception:  # noqa: BLE001 - the trainer may already be gone; quitting anyway
                pass
            sys.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_args(sys.argv[1:] if argv is None else argv)
    log = open(options.log_file, "a", encoding="utf-8") if options.log_file else None  # noqa: SIM115 - closed below
    try:
        if log is not None:
            log.write(f"[standin] pid {os.getpid()} args {sys.argv[1:] if argv is None else list(argv)}\n")
        return Player(options, log).run()
    finally:
        if log is not None:
            log.close()


def write_launcher(
    folder: str,
    *,
    scene: str | None = None,
    name: str = "StandIn.x86_64",
    python: str | None = None,
    extra_args: Sequence[str] = (),
) -> str:
    """Write an executable script that starts the stand-in like a Unity build; returns its path.

    Pass the path as ``UnityEnvironment(file_name=...)``. ``python`` defaults to this
    interpreter; the repository root is put on PYTHONPATH so any interpreter with numpy,
    grpcio, protobuf and mlagents-envs can run it. The script runs this file by its path
    rather than ``-m tests.support.standin``: ``-m`` would put the build's working directory
    first on ``sys.path``, where a user's own ``tests`` package could shadow ours.
    """
    import shlex

    here = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(os.path.dirname(here)))
    args = list(extra_args) + (["--scene", scene] if scene else [])
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(
            "#!/bin/sh\n"
            "# Stand-in Unity build (tests.support.standin), a test double.\n"
            f'export PYTHONPATH={shlex.quote(root)}"${{PYTHONPATH:+:$PYTHONPATH}}"\n'
            f"exec {shlex.quote(python or sys.executable)} {shlex.quote(here)} "
            f'{" ".join(shlex.quote(a) for a in args)} "$@"\n'
        )
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


if __name__ == "__main__":
    sys.exit(main())
