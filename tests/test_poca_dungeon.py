"""POCA beats PPO on the built-in DungeonEscape, trained on the same rewards: a group of three
escapes only when one of them lets the dragon eat it (it leaves the group, and the dragon drops
the key); the +1 group reward then goes to the survivors. PPO never credits the eaten agent
(its trajectory ends with no reward) and learns to avoid the dragon; POCA bootstraps the eaten
agent's last step from the group's value, so the sacrifice is learned.

Both trainers use config/*/DungeonEscape.yaml (8 areas) cut to 120k steps. The share of group
episodes that escape, over the last 300 (random play: about 0.2), measured on seeds 1-3 with a
summary every 5k steps:

| trainer | first summary past the mark | at 120k |
| --- | --- | --- |
| POCA (above 0.8) | 80k, 80k, - | 0.99, 1.00, 0.70 |
| PPO (below 0.15) | 45k, 80k, 55k | 0.06, 0.05, 0.08 |

(PPO stays at 0.04-0.09 to 300k on all three; with ML-Agents' absorbing state, which credits
the eaten agent, it escapes: tests/test_builtin_dungeon_escape.py.) ``benchmarks/poca_seeds.py``
has the 300k-step table on seeds 1-3.
"""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from envs.builtin import make_env
from tests.support.learning import first_or_second_seed, train_env
from trainers.settings import load_run_options

pytestmark = pytest.mark.slow  # trains policies

STEPS = 120_000
WINDOW = 300  # group episodes a verdict averages


def escapes(trainer: str, seed: int = 1, *, stop_above: float | None = None) -> np.ndarray:
    """Every group episode's outcome (1 escaped) of a run of config/<trainer>/DungeonEscape.yaml;
    with ``stop_above``, the run ends at the first summary where the last :data:`WINDOW` pass it."""
    settings = load_run_options(f"config/{trainer}/DungeonEscape.yaml").behavior_settings("DungeonEscape")
    env = make_env("DungeonEscape", seed=seed, num_areas=8)

    def escaped(_curve: list[tuple[int, float]]) -> bool:
        recent = env.escapes[-WINDOW:]
        return stop_above is not None and len(recent) == WINDOW and float(np.mean(recent)) > stop_above

    train_env(env, attrs.evolve(settings, max_steps=STEPS, threaded=False), seed=seed, until=escaped)
    return np.array(env.escapes, float)


def test_poca_learns_the_sacrifice_that_ppo_cannot():
    # on seed 1, else seed 2 (a seed's run differs between CPUs)
    first_or_second_seed(lambda seed: escapes("poca", seed, stop_above=0.8), lambda e: e[-WINDOW:].mean() > 0.8)
    ppo = escapes("ppo")  # seed 1: 0.2 at first, 0.06 at 120k
    assert ppo[-WINDOW:].mean() < 0.15 < ppo[:500].mean(), (ppo[:500].mean(), ppo[-WINDOW:].mean())
