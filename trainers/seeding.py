"""Independent random streams from one run seed.

Every random draw of a trainer (initial weights of the actor and of the critic, sampled
actions, minibatch shuffles) comes from its own ``torch.Generator``. Seeding two of them with
the same (or a neighbouring) integer would correlate them: the acting policy's action draws
would replay the bits that drew the critic's initial weights. Each stream's seed is derived
from the run seed and the stream through numpy's ``SeedSequence`` hashing instead.
"""

from __future__ import annotations

import enum
import logging

import numpy as np
import torch

logger = logging.getLogger(__name__)


class Stream(enum.IntEnum):
    """What a generator is used for."""

    POLICY_INIT = 1
    POLICY_SAMPLING = 2
    CRITIC_INIT = 3
    SHUFFLE = 4
    REPLAY_SAMPLING = 5
    UPDATE_NOISE = 6
    REWARD_SIGNAL_INIT = 7
    DEMO_SAMPLING = 8  # which demonstration steps GAIL and behavioral cloning train on
    SIGNAL_NOISE = 9  # noise inside a reward signal's update (GAIL's VAIL code, interpolations)
    CLONING_NOISE = 10  # behavioral cloning's continuous action draws
    SELF_PLAY_SWAPS = 11  # which snapshot a ghost trainer's opponents play


def stream_seed(seed: int, stream: Stream) -> int:
    """A 63-bit seed for ``stream``, statistically independent of every other stream's."""
    state = np.random.SeedSequence([int(seed) & 0xFFFFFFFFFFFFFFFF, int(stream)]).generate_state(2, np.uint32)
    return int((int(state[0]) << 31) ^ int(state[1]))


def team_seed(seed: int, team: int) -> int:
    """The seed of team ``team``'s acting policy, for a run whose acting policies draw from
    ``seed``. The teams of one behavior name start from the same weights: with one stream they
    would draw the same actions for the same observations, and a symmetric game played against
    its own mirror image never ends in a win (ML-Agents draws every team's actions from one
    global generator). Team 0 keeps ``seed``."""
    return seed + 7919 * team


def generator(seed: int, stream: Stream, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded for ``stream`` of ``seed``."""
    return torch.Generator(device=device).manual_seed(stream_seed(seed, stream))


def restore(generator: torch.Generator, state: torch.Tensor, what: str) -> None:
    """Continue ``generator`` from its saved ``state``. A state saved by a generator of the other
    kind (a run trained on a GPU resumed on the CPU, or back: CUDA's Philox state is 16 bytes, the
    CPU's Mersenne Twister 5056) cannot continue it: the stream restarts from its seed, and says so."""
    if state.numel() == generator.get_state().numel():
        generator.set_state(state)
        return
    logger.info("%s was saved on another device: its random stream restarts from its seed", what)
    generator.manual_seed(generator.initial_seed())
