"""Unity ML-Agents demonstration files (``.demo``): reading them into arrays, and writing them.

The layout, as Unity's ``DemonstrationWriter`` writes it and ML-Agents' ``demo_loader`` reads
it: a length-delimited (varint size, then bytes) ``DemonstrationMetaProto`` at byte 0, padded
to byte :data:`INITIAL_POS` (33); a delimited ``BrainParametersProto`` (behavior name, action
spec) there; then one delimited ``AgentInfoActionPairProto`` per recorded step, each agent's
steps contiguous. ML-Agents pairs the step at position t of the file with the next message
(t+1), so a file's steps must not interleave agents.

Shape convention: ``N`` rows (transitions), ``c`` continuous action size, ``b`` discrete
branches, ``m`` total discrete choices. Images are ``[H, W, C]`` in memory whatever the file's
generation: a file recorded by Unity package 3.x or later declares its cameras ``[C, H, W]``
(dimension properties NONE, TE, TE) and holds their uncompressed pixels in that order; such
observations are turned ``[H, W, C]`` as they are read, and written back so for a build of
that generation (``DemonstrationWriter(channels_first=True)``).

The protocol classes come from ``mlagents_envs.communicator_objects``; under protobuf >= 4 they
load only once ``envs`` has installed its import hook (orchestration and the tests import
``envs``). They are imported on first use, never when this module is imported.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import attrs
import numpy as np
from mlagents_envs.base_env import BehaviorSpec

from trainers.exceptions import ConfigError

logger = logging.getLogger(__name__)

DEMO_SUFFIX = ".demo"
INITIAL_POS = 33  # the brain parameters start here (Unity: MetaDataBytes + 1)
API_VERSION = 1  # DemonstrationMetaData.ApiVersion in Unity; ML-Agents 0.28 reads 0 and 1
SUPPORTED_API_VERSIONS = frozenset({0, 1})


@attrs.frozen(slots=True, eq=False)
class Demonstrations:
    """Every transition of one or more ``.demo`` files, one array per field.

    Rows pair as ML-Agents' ``make_demo_buffer`` pairs them: row t holds the observation of
    the file's step t and the action recorded with it, and the reward, ``done`` and
    ``interrupted`` (max step reached) of step t+1. The last recorded step starts no row, and
    (as in ML-Agents) a step that ended an episode starts one whose reward and done are those
    of the next episode's first step. Several files are read as one sequence, in the order of
    ``files``. ``number_episodes`` and ``mean_reward`` are the files' headers', summed
    (``mean_reward``: weighted by episodes).
    """

    behavior_name: str
    files: tuple[str, ...]
    obs: tuple[np.ndarray, ...]  # one [N, *shape] float32 per sensor (images in [0, 1])
    continuous_actions: np.ndarray  # [N, c] float32
    discrete_actions: np.ndarray  # [N, b] int32
    action_masks: np.ndarray  # [N, m] bool, True where the action was allowed
    rewards: np.ndarray  # [N] float32
    done: np.ndarray  # [N] bool
    interrupted: np.ndarray  # [N] bool
    number_steps: int  # steps read from the files (N + 1)
    number_episodes: int
    mean_reward: float

    def __len__(self) -> int:
        return int(self.rewards.shape[0])


def _protos() -> Any:
    """The protocol modules (see the module docstring), as one namespace."""
    from types import SimpleNamespace

    from mlagents_envs.communicator_objects import (
        agent_action_pb2,
        agent_info_action_pair_pb2,
        agent_info_pb2,
        brain_parameters_pb2,
        demonstration_meta_pb2,
        observation_pb2,
    )

    return SimpleNamespace(
        Meta=demonstration_meta_pb2.DemonstrationMetaProto,
        Brain=brain_parameters_pb2.BrainParametersProto,
        Pair=agent_info_action_pair_pb2.AgentInfoActionPairProto,
        Info=agent_info_pb2.AgentInfoProto,
        Action=agent_action_pb2.AgentActionProto,
        Observation=observation_pb2.ObservationProto,
        NONE=observation_pb2.NONE,
        PNG=observation_pb2.PNG,
    )


# ---------------------------------------------------------------- framing


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); raises ValueError past the end of ``data``."""
    result, shift = 0, 0
    while True:
        if pos >= len(data):
            raise ValueError("truncated length prefix")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def delimited(message: Any) -> bytes:
    """``message`` with its varint size in front (protobuf's WriteDelimitedTo)."""
    body = message.SerializeToString()
    return _encode_varint(len(body)) + body


def png_channels(image: np.ndarray) -> tuple[bytes, list[int]]:
    """A ``[H, W, C]`` uint8 image as Unity compresses one: the channels in groups of three, one
    RGB PNG per group (the last padded with zeros), concatenated, and the channel mapping (which
    image channel each PNG channel holds, -1 for padding). Lossless: decoding gives ``image / 255``."""
    import io

    from PIL import Image

    channels = image.shape[2]
    padded = -channels % 3
    if padded:
        image = np.concatenate([image, np.zeros((*image.shape[:2], padded), np.uint8)], axis=2)
    out = io.BytesIO()
    for start in range(0, image.shape[2], 3):
        Image.fromarray(np.ascontiguousarray(image[:, :, start : start + 3])).save(out, format="PNG")
    return out.getvalue(), [*range(channels), *([-1] * padded)]


# ---------------------------------------------------------------- reading


def demo_files(demo_path: str | os.PathLike[str], *, where: str = "demo_path") -> list[Path]:
    """The ``.demo`` files ``demo_path`` names: itself, or those in the folder (sorted by name;
    ML-Agents' ``get_demo_files`` takes the folder's listing order)."""
    path = Path(demo_path)
    if path.is_file():
        if path.suffix != DEMO_SUFFIX:
            raise ConfigError(f"{where}: {path} is not a {DEMO_SUFFIX} file")
        return [path]
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == DEMO_SUFFIX)
        if not files:
            raise ConfigError(f"{where}: {path} is a folder with no {DEMO_SUFFIX} files in it")
        return files
    raise ConfigError(f"{where}: {path} does not exist (a {DEMO_SUFFIX} file or a folder of them)")


@attrs.define
class DemoFile:
    """One file's messages as parsed: the header, the brain parameters, one
    ``AgentInfoActionPairProto`` per recorded step read (see :func:`read_demo_file`)."""

    meta: Any
    brain: Any
    pairs: list[Any]


def read_demo_file(path: Path, *, where: str = "demo_path") -> DemoFile:
    """Parse one ``.demo`` file (ConfigError naming ``where`` and the file if it cannot be).

    The steps are read as ML-Agents' ``load_demonstration`` reads them: to the end of the file,
    or until the header's ``number_steps`` are read when it counts any (what follows them is
    not read: Unity writes its header's bytes once more there). A header that counts none (a
    recording Unity never finished, or a file written with an empty header, as ML-Agents' own
    tests write theirs) or more steps than the file holds is a warning naming the file.
    """
    from google.protobuf.message import DecodeError

    pb = _protos()
    data = path.read_bytes()
    try:
        size, pos = _decode_varint(data, 0)
        meta = pb.Meta.FromString(data[pos : pos + size])
        size, pos = _decode_varint(data, INITIAL_POS)
        brain = pb.Brain.FromString(data[pos : pos + size])
        pos += size
        counted = int(meta.number_steps)
        pairs: list[Any] = []
        while pos < len(data) and (counted <= 0 or len(pairs) < counted):
            size, pos = _decode_varint(data, pos)
            if pos + size > len(data):
                raise ValueError(f"step {len(pairs)} is cut off at byte {len(data)}")
            pairs.append(pb.Pair.FromString(data[pos : pos + size]))
            pos += size
    except (DecodeError, ValueError) as error:  # a bad message, or bad framing
        raise ConfigError(f"{where}: {path} is not a readable {DEMO_SUFFIX} file: {error}") from None
    if meta.api_version not in SUPPORTED_API_VERSIONS:
        raise ConfigError(
            f"{where}: {path}: unsupported demonstration api_version {meta.api_version} "
            f"(readable: {sorted(SUPPORTED_API_VERSIONS)})"
        )
    if not pairs:
        raise ConfigError(f"{where}: {path} holds no recorded steps")
    if counted <= 0 or len(pairs) < counted:
        logger.warning(
            "%s: %s: the header counts %d recorded steps but the file holds %d; reading them all, as ML-Agents does",
            where,
            path,
            counted,
            len(pairs),
        )
    return DemoFile(meta, brain, pairs)


def _file_action_spec(brain: Any) -> tuple[int, tuple[int, ...]]:
    """(continuous size, discrete branches) of a file, deprecated fields included (as
    mlagents_envs' ``behavior_spec_from_proto``)."""
    spec = brain.action_spec
    if spec.num_continuous_actions == 0 and spec.num_discrete_actions == 0:
        if brain.vector_action_space_type_deprecated == 1:
            return int(brain.vector_action_size_deprecated[0]), ()
        return 0, tuple(int(b) for b in brain.vector_action_size_deprecated)
    return int(spec.num_continuous_actions), tuple(int(b) for b in spec.discrete_branch_sizes)


_NONE, _TE = 1, 2  # DimensionProperty values as stored in an ObservationProto
_CHANNELS_FIRST = (_NONE, _TE, _TE)  # how Unity package 3.x and later declares an image


def _channels_first(obs: Any) -> bool:
    """Whether an ObservationProto is an image laid out ``[C, H, W]`` (Unity package 3.x+)."""
    return len(obs.shape) == 3 and tuple(obs.dimension_properties) == _CHANNELS_FIRST


def _stored_shape(obs: Any) -> tuple[int, ...]:
    """An ObservationProto's shape in the ``[H, W, C]`` layout images have in memory."""
    shape = tuple(int(s) for s in obs.shape)
    return (shape[1], shape[2], shape[0]) if _channels_first(obs) else shape


def _spec_mismatches(steps: DemoFile, spec: BehaviorSpec) -> list[str]:
    """How the file differs from ``spec`` (its first step's observations, its action spec)."""
    problems = []
    file_shapes = [_stored_shape(o) for o in steps.pairs[0].agent_info.observations]
    shapes = [tuple(int(s) for s in o.shape) for o in spec.observation_specs]
    if len(file_shapes) != len(shapes):
        problems.append(f"{len(file_shapes)} observations {file_shapes}, the behavior has {len(shapes)} {shapes}")
    else:
        for i, (got, want) in enumerate(zip(file_shapes, shapes)):
            if got != want:
                problems.append(f"observation {i} has shape {got}, the behavior's is {want}")
    continuous, branches = _file_action_spec(steps.brain)
    if continuous != spec.action_spec.continuous_size:
        problems.append(f"{continuous} continuous actions, the behavior has {spec.action_spec.continuous_size}")
    want_branches = tuple(int(b) for b in spec.action_spec.discrete_branches)
    if branches != want_branches:
        problems.append(f"discrete branches {branches}, the behavior has {want_branches}")
    return problems


def _decode_observation(obs: Any, shape: tuple[int, ...]) -> np.ndarray:
    """One ObservationProto as mlagents_envs decodes it: float data, or PNG(s) scaled to [0, 1];
    an image ``[H, W, C]`` (``shape``) whichever layout the file declares."""
    if obs.compression_type == _protos().NONE:
        values = np.asarray(obs.float_data.data, dtype=np.float32)
        if _channels_first(obs):
            return values.reshape(shape[2], shape[0], shape[1]).transpose(1, 2, 0)
        return values.reshape(shape)
    from mlagents_envs.rpc_utils import process_pixels

    image = process_pixels(obs.compressed_data, shape[2], list(obs.compressed_channel_mapping))  # PNG: [H, W, C]
    return np.asarray(image, dtype=np.float32).reshape(shape)


def load_demonstrations(
    demo_path: str | os.PathLike[str], behavior_spec: BehaviorSpec, *, where: str = "demo_path"
) -> Demonstrations:
    """Read one ``.demo`` file or a folder of them (see :class:`Demonstrations`).

    Every file is checked against ``behavior_spec`` (observation count and shapes, continuous
    size, discrete branches) before anything is decoded; all mismatches come in one
    ConfigError that names ``where`` and each file. A later step whose observations differ
    from the behavior's is an error naming the step.
    """
    paths = demo_files(demo_path, where=where)
    files = [read_demo_file(p, where=where) for p in paths]
    problems = [f"{p}: {m}" for p, f in zip(paths, files) for m in _spec_mismatches(f, behavior_spec)]
    if problems:
        heading = f"{where}: the demonstrations do not match the behavior's observations and actions"
        raise ConfigError("\n".join([heading, *problems]))

    shapes = [tuple(int(s) for s in o.shape) for o in behavior_spec.observation_specs]
    c = int(behavior_spec.action_spec.continuous_size)
    branches = tuple(int(b) for b in behavior_spec.action_spec.discrete_branches)
    b, m = len(branches), int(sum(branches))
    obs: list[list[np.ndarray]] = [[] for _ in shapes]
    continuous: list[Sequence[float]] = []
    discrete: list[Sequence[int]] = []
    masks: list[Sequence[bool]] = []
    rewards: list[float] = []
    done: list[bool] = []
    interrupted: list[bool] = []
    for path, file in zip(paths, files):
        for t, pair in enumerate(file.pairs):
            info, action = pair.agent_info, pair.action_info
            if len(info.observations) != len(shapes):
                raise ConfigError(
                    f"{where}: {path}: step {t} has {len(info.observations)} observations, the behavior {len(shapes)}"
                )
            for i, (o, shape) in enumerate(zip(info.observations, shapes)):
                if _stored_shape(o) != shape:
                    raise ConfigError(
                        f"{where}: {path}: step {t} observation {i} has shape {tuple(o.shape)}, expected {shape}"
                    )
                obs[i].append(_decode_observation(o, shape))
            if len(action.continuous_actions) == 0 and len(action.discrete_actions) == 0:
                # Files from before the action spec (Unity < 1.3) hold one action vector.
                legacy = list(action.vector_actions_deprecated)
                continuous.append(legacy if c else [])
                discrete.append([int(a) for a in legacy] if not c else [0] * b)
            else:
                continuous.append(action.continuous_actions if c else [])
                discrete.append(action.discrete_actions if b else [])
            masks.append(info.action_mask if len(info.action_mask) == m else [False] * m)
            rewards.append(info.reward)
            done.append(info.done)
            interrupted.append(info.max_step_reached)

    steps = len(rewards)
    rows = slice(0, steps - 1)
    following = slice(1, steps)

    def table(values: list[Any], width: int, dtype: Any) -> np.ndarray:
        if width == 0:
            return np.zeros((steps - 1, 0), dtype)
        try:
            return np.asarray(values[rows], dtype=dtype).reshape(steps - 1, width)
        except ValueError:
            raise ConfigError(f"{where}: a recorded action or mask does not have {width} values") from None

    episodes = sum(int(f.meta.number_episodes) for f in files)
    reward_sum = sum(float(f.meta.mean_reward) * int(f.meta.number_episodes) for f in files)
    return Demonstrations(
        behavior_name=str(files[0].brain.brain_name),
        files=tuple(str(p) for p in paths),
        obs=tuple(
            np.stack(o[rows]).astype(np.float32, copy=False) if steps > 1 else np.zeros((0, *shape), np.float32)
            for o, shape in zip(obs, shapes)
        ),
        continuous_actions=table(continuous, c, np.float32),
        discrete_actions=table(discrete, b, np.int32),
        action_masks=~table(masks, m, bool),
        rewards=np.asarray(rewards[following], np.float32),
        done=np.asarray(done[following], bool),
        interrupted=np.asarray(interrupted[following], bool),
        number_steps=steps,
        number_episodes=episodes,
        mean_reward=reward_sum / episodes if episodes else 0.0,
    )


def training_demonstrations(
    demo_path: str | os.PathLike[str], behavior_spec: BehaviorSpec, *, where: str = "demo_path"
) -> Demonstrations:
    """:func:`load_demonstrations` for a learner (GAIL, behavioral cloning): refused, naming
    ``where`` and the files, when they hold no transition to learn from (one step alone is none:
    a transition pairs a step with the next)."""
    demonstrations = load_demonstrations(demo_path, behavior_spec, where=where)
    if len(demonstrations) == 0:
        raise ConfigError(
            f"{where}: {', '.join(demonstrations.files)} hold no transition to learn from "
            "(a recorded step and the one after it)"
        )
    return demonstrations


# ---------------------------------------------------------------- writing


class DemonstrationWriter:
    """Writes one behavior's ``.demo`` file as Unity lays it out (see the module docstring).

    Steps are added per agent (:meth:`add_step`) and kept in memory until the agent's episode
    ends, then written in one piece, so each agent's episode is contiguous in the file. The
    header is written by :meth:`close` (which also writes the episodes still open) with
    Unity's counts: ``number_steps`` every step written, ``number_episodes`` the episodes ended
    plus one (Unity counts one more on close), ``mean_reward`` the sum of every step's reward
    over ``number_episodes``. ``channels_first``: images are written as a Unity package 3.x or
    later build records them (``[C, H, W]``, dimension properties NONE, TE, TE); they are given
    ``[H, W, C]`` either way.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        behavior_name: str,
        behavior_spec: BehaviorSpec,
        demonstration_name: str | None = None,
        channels_first: bool = False,
    ):
        self.path = Path(path)
        self.behavior_spec = behavior_spec
        self._pb = _protos()
        self._name = demonstration_name if demonstration_name is not None else self.path.stem
        self._shapes = [tuple(int(s) for s in o.shape) for o in behavior_spec.observation_specs]
        self._transposed = [channels_first and len(shape) == 3 for shape in self._shapes]
        self._obs_meta = [
            (
                _CHANNELS_FIRST if transposed else tuple(int(d.value) for d in o.dimension_property),
                int(o.observation_type.value),
                str(o.name),
            )
            for o, transposed in zip(behavior_spec.observation_specs, self._transposed)
        ]
        self._c = int(behavior_spec.action_spec.continuous_size)
        self._branches = tuple(int(b) for b in behavior_spec.action_spec.discrete_branches)
        self._open: dict[Hashable, list[bytes]] = {}
        self.number_steps = 0
        self.episodes_ended = 0
        self._reward_sum = 0.0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO | None = open(self.path, "wb")  # noqa: SIM115 (kept open until close)
        brain = self._pb.Brain(brain_name=behavior_name, is_training=False)
        brain.action_spec.num_continuous_actions = self._c
        brain.action_spec.num_discrete_actions = len(self._branches)
        brain.action_spec.discrete_branch_sizes.extend(self._branches)
        self._file.write(bytes(INITIAL_POS))
        self._file.write(delimited(brain))

    def add_step(
        self,
        agent: Hashable,
        obs: Sequence[np.ndarray],
        *,
        reward: float,
        done: bool,
        max_step_reached: bool = False,
        continuous_action: np.ndarray | None = None,
        discrete_action: np.ndarray | None = None,
        action_mask: np.ndarray | None = None,
        agent_id: int = 0,
    ) -> None:
        """One step of ``agent``: what it saw (one ``[*shape]`` per sensor; a uint8 ``[H, W, C]``
        image is stored PNG-compressed as Unity does (:func:`png_channels`), other uint8 data as
        floats in [0, 1]), the action taken there (``[c]``, ``[b]``; None: zeros, as
        Unity records a step that ends an episode), the reward and done that came with ``obs``,
        and ``action_mask`` ``[m]`` True where allowed (None: all allowed). A done step writes
        the agent's episode to the file."""
        pb = self._pb
        info = pb.Info(reward=float(reward), done=bool(done), max_step_reached=bool(max_step_reached), id=int(agent_id))
        if action_mask is not None and self._branches:
            info.action_mask.extend((~np.asarray(action_mask, bool)).tolist())
        for o, shape, (dims, kind, name), transposed in zip(obs, self._shapes, self._obs_meta, self._transposed):
            array = np.asarray(o).reshape(shape)
            proto = pb.Observation(observation_type=kind, name=name)
            proto.shape.extend((shape[2], shape[0], shape[1]) if transposed else shape)
            proto.dimension_properties.extend(dims)
            if array.dtype == np.uint8 and len(shape) == 3:
                proto.compression_type = pb.PNG
                proto.compressed_data, mapping = png_channels(array)
                proto.compressed_channel_mapping.extend(mapping)
            else:
                if array.dtype == np.uint8:
                    array = array.astype(np.float32) / np.float32(255.0)
                if transposed:
                    array = array.transpose(2, 0, 1)
                proto.compression_type = pb.NONE
                proto.float_data.data.extend(np.asarray(array, np.float32).reshape(-1).tolist())
            info.observations.append(proto)
        action = pb.Action()
        if self._c:
            cont = np.zeros(self._c, np.float32) if continuous_action is None else continuous_action
            action.continuous_actions.extend(np.asarray(cont, np.float32).reshape(-1).tolist())
        if self._branches:
            disc = np.zeros(len(self._branches), np.int32) if discrete_action is None else discrete_action
            action.discrete_actions.extend(np.asarray(disc).astype(np.int64).reshape(-1).tolist())
        pair = pb.Pair(agent_info=info, action_info=action)
        self._open.setdefault(agent, []).append(delimited(pair))
        self.number_steps += 1
        self._reward_sum += float(reward)
        if done:
            self.episodes_ended += 1
            self._write_episode(agent)

    def _write_episode(self, agent: Hashable) -> None:
        steps = self._open.pop(agent, [])
        if self._file is None:
            raise ValueError(f"{self.path} is closed")
        self._file.write(b"".join(steps))

    def meta(self) -> Any:
        """The header as :meth:`close` writes it now; the name is shortened to fit the header."""
        episodes = self.episodes_ended + 1
        name = self._name
        while True:
            meta = self._pb.Meta(
                api_version=API_VERSION,
                demonstration_name=name,
                number_steps=self.number_steps,
                number_episodes=episodes,
                mean_reward=self._reward_sum / episodes,
            )
            if len(delimited(meta)) <= INITIAL_POS or not name:
                return meta
            name = name[:-1]

    def close(self) -> None:
        """Write the open episodes and the header, and close the file (later calls do nothing)."""
        if self._file is None:
            return
        for agent in list(self._open):
            self._write_episode(agent)
        header = delimited(self.meta())
        if len(header) > INITIAL_POS:
            raise ValueError(f"{self.path}: the header needs {len(header)} bytes, {INITIAL_POS} are reserved")
        self._file.seek(0)
        self._file.write(header)
        self._file.close()
        self._file = None

    def __enter__(self) -> DemonstrationWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
