"""ML-Agents action rows -> Gymnasium actions, and Gymnasium action masks -> ML-Agents masks.

The policy acts with one row of continuous values in [-1, 1] and one row of discrete branch
choices. Box parts take the continuous values in order (each mapped linearly onto its
[low, high], so every bound must be finite); Discrete, MultiDiscrete and MultiBinary parts take
the discrete branches in order; a Tuple or Dict is rebuilt around its parts, depth-first in the
space's order. Masks follow the discrete branches: gymnasium's 1/True = available becomes
mlagents_envs' True = NOT available.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol

import attrs
import numpy as np
from gymnasium import spaces
from mlagents_envs.base_env import ActionSpec

from envs.gymnasium.errors import GymnasiumEnvError
from envs.gymnasium.making import label
from envs.gymnasium.observations import Path, path_name
from envs.gymnasium.specs import ActionSource


class ActionPart(Protocol):
    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        """This part's gymnasium action from one agent's rows: continuous [c], discrete [d]."""
        ...


@attrs.frozen(eq=False)
class BoxPart:
    """A finite float Box fed by ``continuous[offset : offset + size]``: a in [-1, 1] (clipped
    again) -> low + (a + 1) / 2 * (high - low), cast to the Box's dtype and shape."""

    offset: int
    low: np.ndarray  # [size] float64
    high: np.ndarray  # [size] float64
    shape: tuple[int, ...]
    dtype: np.dtype

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        a = np.clip(continuous[self.offset : self.offset + len(self.low)].astype(np.float64), -1.0, 1.0)
        value = np.clip(self.low + (a + 1.0) / 2.0 * (self.high - self.low), self.low, self.high)
        return value.astype(self.dtype).reshape(self.shape)


@attrs.frozen(eq=False)
class DiscretePart:
    """A Discrete(n, start) fed by branch ``branch``: start + choice."""

    branch: int
    start: int
    dtype: np.dtype

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        return self.dtype.type(self.start + int(discrete[self.branch]))


@attrs.frozen(eq=False)
class MultiDiscretePart:
    """A MultiDiscrete(nvec, start) fed by branches ``first`` on, one per element (flattened)."""

    first: int
    starts: np.ndarray  # [k] int64
    shape: tuple[int, ...]
    dtype: np.dtype

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        choices = discrete[self.first : self.first + len(self.starts)].astype(np.int64)
        return (self.starts + choices).reshape(self.shape).astype(self.dtype)


@attrs.frozen(eq=False)
class MultiBinaryPart:
    """A MultiBinary(n) fed by branches ``first`` on, each of 2 (flattened)."""

    first: int
    shape: tuple[int, ...]

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        size = math.prod(self.shape)
        return discrete[self.first : self.first + size].reshape(self.shape).astype(np.int8)


@attrs.frozen(eq=False)
class TuplePart:
    children: tuple[ActionPart, ...]

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        return tuple(child.decode(continuous, discrete) for child in self.children)


@attrs.frozen(eq=False)
class DictPart:
    children: Mapping[Any, ActionPart]

    def decode(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        return {key: child.decode(continuous, discrete) for key, child in self.children.items()}


@attrs.frozen(eq=False)
class ActionLayout:
    """How one environment's actions are laid out in the policy's rows."""

    env_id: str
    spec: ActionSpec
    root: ActionPart
    sources: tuple[ActionSource, ...]

    def to_env(self, continuous: np.ndarray, discrete: np.ndarray) -> Any:
        """One agent's action rows (continuous [c] float, discrete [d] int) as a gymnasium action."""
        return self.root.decode(continuous, discrete)

    def mask(self, value: Any) -> np.ndarray:
        """A gymnasium action mask -> [sum(branches)] bool, True where NOT available.

        ``value`` is one flat array over all choices, branch after branch (a Discrete's array
        of n), or a tuple/list/dict of arrays (MultiDiscrete's one array per branch), which is
        flattened in order; 1/True means available.
        """
        flat = _flatten(value)
        branches = tuple(self.spec.discrete_branches)
        if flat.size != sum(branches):
            raise GymnasiumEnvError(
                f"{label(self.env_id)}: action_mask has {flat.size} entries but the action's discrete branches "
                f"{branches} need {sum(branches)} (one per choice, branch after branch, 1 = available)"
            )
        return ~flat.astype(bool)


def map_action_space(env_id: str, space: spaces.Space) -> ActionLayout:
    """The layout of ``space``; GymnasiumEnvError naming the env and the part it cannot map."""
    builder = _Builder(env_id)
    root = builder.part(space, ())
    if builder.continuous == 0 and not builder.branches:
        raise GymnasiumEnvError(f"{label(env_id)}: action space {space} has no action to take")
    spec = ActionSpec(builder.continuous, tuple(builder.branches))
    return ActionLayout(env_id, spec, root, tuple(builder.sources))


class _Builder:
    """Walks an action space depth-first, handing out continuous offsets and branch indices."""

    def __init__(self, env_id: str) -> None:
        self.env_id = env_id
        self.continuous = 0
        self.branches: list[int] = []
        self.sources: list[ActionSource] = []

    def part(self, space: spaces.Space, path: Path) -> ActionPart:
        if isinstance(space, spaces.Tuple):
            return TuplePart(tuple(self.part(sub, path + (i,)) for i, sub in enumerate(space.spaces)))
        if isinstance(space, spaces.Dict):
            return DictPart({key: self.part(sub, path + (key,)) for key, sub in space.spaces.items()})
        name = path_name(path, "action")
        if isinstance(space, spaces.Box):
            return self._box(space, name)
        first = len(self.branches)
        part: ActionPart
        if isinstance(space, spaces.Discrete):
            self.branches.append(int(space.n))
            part = DiscretePart(first, int(space.start), space.dtype)
        elif isinstance(space, spaces.MultiDiscrete):
            self.branches.extend(int(n) for n in space.nvec.ravel())
            starts = np.asarray(space.start, dtype=np.int64).ravel()
            part = MultiDiscretePart(first, starts, tuple(space.shape), space.dtype)
        elif isinstance(space, spaces.MultiBinary):
            self.branches.extend([2] * math.prod(space.shape))
            part = MultiBinaryPart(first, tuple(space.shape))
        else:
            raise GymnasiumEnvError(
                f"{label(self.env_id)}: action {name!r} has space {space}, which cannot be acted on "
                "(supported: finite float Box, Discrete, MultiDiscrete, MultiBinary, and Tuple/Dict of those)"
            )
        last = len(self.branches) - 1
        if last < first:
            raise GymnasiumEnvError(f"{label(self.env_id)}: action {name!r} has space {space}, which has no choice")
        where = f"discrete branch {first}" if last == first else f"discrete branches {first}..{last}"
        self.sources.append(ActionSource(name, str(space), where))
        return part

    def _box(self, space: spaces.Box, name: str) -> BoxPart:
        if not np.issubdtype(space.dtype, np.floating):
            raise GymnasiumEnvError(
                f"{label(self.env_id)}: action {name!r} has space {space}: an integer Box cannot be acted on "
                "(use Discrete or MultiDiscrete)"
            )
        low = space.low.astype(np.float64).ravel()
        high = space.high.astype(np.float64).ravel()
        if not (np.isfinite(low).all() and np.isfinite(high).all()):
            raise GymnasiumEnvError(
                f"{label(self.env_id)}: action {name!r} has space {space} with infinite bounds: the policy's "
                "continuous actions lie in [-1, 1] and are mapped linearly onto [low, high], so every bound "
                "must be finite (declare the range you want, e.g. with a gymnasium.ActionWrapper)"
            )
        if low.size == 0:
            raise GymnasiumEnvError(f"{label(self.env_id)}: action {name!r} has space {space}, which has no value")
        offset = self.continuous
        self.continuous += low.size
        where = f"continuous[{offset}:{self.continuous}] onto [low, high]"
        self.sources.append(ActionSource(name, str(space), where))
        return BoxPart(offset, low, high, tuple(space.shape), space.dtype)


def _flatten(value: Any) -> np.ndarray:
    """A mask given as an array, or nested tuples/lists/dicts of arrays, as one flat array."""
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (tuple, list)) and any(np.ndim(item) > 0 or isinstance(item, Mapping) for item in value):
        parts = [_flatten(item) for item in value]
        return np.concatenate(parts) if parts else np.zeros(0)
    return np.asarray(value).ravel()
