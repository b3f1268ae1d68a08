"""Gymnasium observation spaces -> ML-Agents observations: one float32 observation per leaf.

A Dict or Tuple space is walked depth-first in the space's own order (a Dict's key order is
gymnasium's: sorted when built from a plain dict); every leaf becomes one ObservationSpec named
after its path (``obs`` for a non-composite space; keys and indices joined by ``/``). A
top-level Dict entry ``action_mask`` is not an observation: it is the action mask.
Integer (and bool) Box spaces other than uint8 images become float vectors of their raw values
(not scaled: Atari RAM, counters; ``normalize: true`` in the trainer settings rescales them).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

import attrs
import numpy as np
from gymnasium import spaces
from mlagents_envs.base_env import ObservationSpec

from envs.builtin._core import vector_obs_spec, visual_obs_spec
from envs.gymnasium.errors import GymnasiumEnvError
from envs.gymnasium.making import label
from envs.gymnasium.specs import ObservationSource

#: The top-level Dict observation key that holds the action mask (1/True = available).
MASK_KEY = "action_mask"

Path = tuple[Any, ...]


@attrs.frozen
class ObservationLeaf:
    """One leaf of the observation space: where it sits (``path``: Dict keys and Tuple indices),
    its spec, and ``convert``: the leaf's value -> float32 array of ``spec.shape``."""

    path: Path
    spec: ObservationSpec
    source: ObservationSource
    convert: Callable[[Any], np.ndarray]


@attrs.frozen
class ObservationLayout:
    """How to read one environment's observations: the leaves in spec order and whether the
    top-level Dict carries the action mask."""

    env_id: str
    leaves: tuple[ObservationLeaf, ...]
    has_mask: bool

    def read(self, obs: Any) -> list[np.ndarray]:
        """One float32 array per leaf (shape ``spec.shape``) from one observation."""
        arrays = []
        for leaf in self.leaves:
            try:
                arrays.append(leaf.convert(_part(obs, leaf.path)))
            except (KeyError, IndexError, TypeError, ValueError) as error:
                raise GymnasiumEnvError(
                    f"{label(self.env_id)}: observation {leaf.source.path!r} does not fit {leaf.source.space} "
                    f"({type(error).__name__}: {error})"
                ) from error
        return arrays

    def mask(self, obs: Any) -> Any | None:
        """The action mask the observation carries (gymnasium's layout), None without one."""
        return obs[MASK_KEY] if self.has_mask else None


def map_observation_space(env_id: str, space: spaces.Space) -> ObservationLayout:
    """The layout of ``space``; GymnasiumEnvError naming the env and the part it cannot map."""
    has_mask = isinstance(space, spaces.Dict) and MASK_KEY in space.spaces
    leaves = tuple(_leaves(env_id, space, (), skip_mask=True))
    if not leaves:
        raise GymnasiumEnvError(f"{label(env_id)}: observation space {space} has no observation to learn from")
    return ObservationLayout(env_id, leaves, has_mask)


def path_name(path: Path, whole: str) -> str:
    """``a/0/b`` for a path, ``whole`` for the empty path (the space itself)."""
    return "/".join(str(step) for step in path) if path else whole


def _part(obs: Any, path: Path) -> Any:
    for step in path:
        obs = obs[step]
    return obs


def _leaves(env_id: str, space: spaces.Space, path: Path, *, skip_mask: bool = False) -> Iterator[ObservationLeaf]:
    if isinstance(space, spaces.Dict):
        for key, sub in space.spaces.items():
            if not (skip_mask and key == MASK_KEY):
                yield from _leaves(env_id, sub, path + (key,))
    elif isinstance(space, spaces.Tuple):
        for index, sub in enumerate(space.spaces):
            yield from _leaves(env_id, sub, path + (index,))
    else:
        yield _leaf(env_id, space, path)


def _leaf(env_id: str, space: spaces.Space, path: Path) -> ObservationLeaf:
    name = path_name(path, "obs")
    spec: ObservationSpec
    if isinstance(space, spaces.Box) and space.dtype == np.uint8 and len(space.shape) in (2, 3):
        height, width = space.shape[:2]
        channels = space.shape[2] if len(space.shape) == 3 else 1
        spec = visual_obs_spec(height, width, channels)
        convert: Callable[[Any], np.ndarray] = partial(_image, shape=spec.shape)
        mapping = "image /255" if len(space.shape) == 3 else "image /255 as (H, W, 1)"
    elif isinstance(space, spaces.Box):
        size = math.prod(space.shape)
        convert = partial(_vector, size=size)
        floating = np.issubdtype(space.dtype, np.floating)
        if not floating:
            mapping = "raw values as float vector"
        else:
            mapping = "vector" if len(space.shape) == 1 else "flattened vector"
        spec = vector_obs_spec(size)
    elif isinstance(space, spaces.Discrete):
        size = int(space.n)
        convert = partial(_one_hot, start=int(space.start), size=size)
        mapping = "one-hot"
        spec = vector_obs_spec(size)
    elif isinstance(space, spaces.MultiDiscrete):
        nvec = space.nvec.ravel().astype(np.int64)
        starts = np.asarray(space.start).ravel().astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]]).astype(np.int64)
        size = int(nvec.sum())
        convert = partial(_one_hots, starts=starts, nvec=nvec, offsets=offsets, size=size)
        mapping = "concatenated one-hots"
        spec = vector_obs_spec(size)
    elif isinstance(space, spaces.MultiBinary):
        size = math.prod(space.shape)
        convert = partial(_vector, size=size)
        mapping = "vector of 0/1"
        spec = vector_obs_spec(size)
    else:
        raise GymnasiumEnvError(
            f"{label(env_id)}: observation {name!r} has space {space}, which cannot be an observation "
            "(supported: Box, Discrete, MultiDiscrete, MultiBinary, and Dict/Tuple of those)"
        )
    if math.prod(spec.shape) == 0:
        raise GymnasiumEnvError(f"{label(env_id)}: observation {name!r} has space {space}, which holds no value")
    return ObservationLeaf(path, spec._replace(name=name), ObservationSource(name, str(space), mapping), convert)


def _vector(value: Any, *, size: int) -> np.ndarray:
    return np.asarray(value, dtype=np.float32).reshape(size)


def _image(value: Any, *, shape: tuple[int, ...]) -> np.ndarray:
    return np.asarray(value, dtype=np.float32).reshape(shape) / np.float32(255.0)


def _one_hot(value: Any, *, start: int, size: int) -> np.ndarray:
    index = int(value) - start
    if not 0 <= index < size:
        raise ValueError(f"value {int(value)} outside [{start}, {start + size})")
    out = np.zeros(size, dtype=np.float32)
    out[index] = 1.0
    return out


def _one_hots(value: Any, *, starts: np.ndarray, nvec: np.ndarray, offsets: np.ndarray, size: int) -> np.ndarray:
    index = np.asarray(value, dtype=np.int64).reshape(nvec.shape) - starts
    if ((index < 0) | (index >= nvec)).any():
        raise ValueError(f"values {np.asarray(value).tolist()} outside their ranges")
    out = np.zeros(size, dtype=np.float32)
    out[offsets + index] = 1.0
    return out
