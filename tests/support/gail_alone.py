"""GAIL as the only reward signal (no extrinsic reward, no behavioral cloning) on built-in Basic:
the harness of ``tests/test_gail_alone_learning.py`` and ``benchmarks/gail_seeds.py``.

A scripted expert walks straight to one of Basic's goals (:data:`GOALS`: ``large``, 7 steps
right, return 0.93; ``small``, 3 steps left, return 0.07); :func:`record_basic_demo` writes
100 of its steps (ML-Agents' ``simple_record`` size: about 12 episodes toward the large goal,
25 toward the small one). :func:`gail_alone_score` trains on such demos and scores the run by
the environment's own return (``Environment/Cumulative Reward``, which GAIL-only training never
sees): the mean of the last two summaries, i.e. of the last 1000 steps' episodes.

The settings are ML-Agents' learning-test ones (their ``dummy_config``: PPO lr 5e-3 constant,
batch 16, buffer 64, one layer of 32; SAC lr 5e-3, batch 8, one layer of 16) with GAIL's
defaults (strength 1.0, learning rate 3e-4, gradient penalty) except two, both needed (see the
test module's docstring for why and the measurements): ``use_actions: true`` and ``gamma: 0.3``.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs
import numpy as np
from mlagents_envs.base_env import ActionTuple, BehaviorSpec, DecisionSteps

from envs.builtin import make_env
from tests.support.expert_demos import Policy, record_demo
from tests.support.learning import PPO_TEST_CONFIG, SAC_TEST_CONFIG, train_env
from trainers.settings import (
    GAILSettings,
    RewardSignalType,
    TrainerSettings,
)

#: goal -> Basic's action that walks straight there (0 stay, 1 left, 2 right)
GOALS = {"large": 2, "small": 1}
#: goal -> the return of walking straight there (its reward minus 0.01 per decision)
EXPERT_RETURN = {"large": 0.93, "small": 0.07}
DEMO_STEPS = 100
SUMMARY_FREQ = 500
# GAIL's discount: below about 0.6 or the policy dawdles (the test's docstring); 0.5 learns too,
# with dips on some seeds, 0.3 steadily
GAIL_GAMMA = 0.3

# ML-Agents' PPO learning-test configuration (dummy_config._PPO_CONFIG), 5000 steps
PPO_CONFIG = attrs.evolve(PPO_TEST_CONFIG, summary_freq=SUMMARY_FREQ, max_steps=5000)
# ML-Agents' SAC learning-test configuration, 3000 steps
SAC_CONFIG = attrs.evolve(SAC_TEST_CONFIG, summary_freq=SUMMARY_FREQ, max_steps=3000)
TRAINERS = {"ppo": PPO_CONFIG, "sac": SAC_CONFIG}


def basic_expert(goal: str) -> Policy:
    """Basic's policy that walks straight to ``goal`` (a key of :data:`GOALS`) every decision."""
    action = GOALS[goal]

    def act(decision: DecisionSteps, spec: BehaviorSpec, rng: np.random.Generator) -> ActionTuple:
        n = len(decision)
        return ActionTuple(np.zeros((n, 0), np.float32), np.full((n, 1), action, np.int32))

    return act


def record_basic_demo(path: str | os.PathLike[str], *, goal: str, steps: int = DEMO_STEPS, seed: int = 0) -> Path:
    """``steps`` steps of :func:`basic_expert` toward ``goal`` on built-in Basic, written to ``path``."""
    env = make_env("Basic", seed=seed)
    try:
        env.reset()
        return record_demo(env, path, steps=steps, policy=basic_expert(goal), seed=seed)
    finally:
        env.close()


def gail_alone_config(
    trainer: str,
    demo: Path,
    *,
    use_actions: bool = True,
    gamma: float = GAIL_GAMMA,
    use_vail: bool = False,
) -> TrainerSettings:
    """``trainer``'s (``ppo`` or ``sac``) test settings with GAIL on ``demo`` as the only reward
    signal (strength 1.0, GAIL's other defaults)."""
    gail = GAILSettings(gamma=gamma, demo_path=str(demo), use_actions=use_actions, use_vail=use_vail)
    return attrs.evolve(TRAINERS[trainer], reward_signals={RewardSignalType.GAIL: gail})


def gail_alone_score(
    trainer: str, goal: str, seed: int, demo_dir: Path, **gail
) -> tuple[float, list[tuple[int, float]]]:
    """Train ``trainer`` with GAIL alone on demos toward ``goal`` (recorded in ``demo_dir``),
    ``gail`` changing :func:`gail_alone_config`'s keywords; returns the score (the mean of the last
    two summaries' mean returns) and the curve of (step, mean return) summaries."""
    demo = record_basic_demo(demo_dir / f"{trainer}-{goal}-{seed}.demo", goal=goal, seed=seed)
    curve = train_env(make_env("Basic", seed=seed), gail_alone_config(trainer, demo, **gail), seed=seed).curve
    return float(np.mean([reward for _, reward in curve[-2:]])), curve
