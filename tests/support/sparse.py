"""Issue 14's sparse-reward comparison on built-in Pyramids: curiosity and RND against the same
PPO without its intrinsic signal, shared by ``tests/test_intrinsic_learning.py`` and
``benchmarks/learning_seeds.py sparse``.

The runs are those of ``config/ppo/Pyramids.yaml`` (curiosity) and ``config/ppo/PyramidsRND.yaml``
(RND), environment parameters included; a control is its config with the intrinsic signal
removed and nothing else changed (same policy, schedule and budget).
"""

from __future__ import annotations

from typing import Literal

import attrs
from mlagents_envs.base_env import BaseEnv

from envs.builtin import make_env
from trainers.settings import ConstantSampler, RewardSignalType, RunOptions, TrainerSettings, load_run_options

Signal = Literal["curiosity", "rnd"]
CONFIGS: dict[Signal, str] = {"curiosity": "config/ppo/Pyramids.yaml", "rnd": "config/ppo/PyramidsRND.yaml"}
INTRINSIC: dict[Signal, RewardSignalType] = {"curiosity": RewardSignalType.CURIOSITY, "rnd": RewardSignalType.RND}
#: A summary's mean reward above this means the goal in most episodes: shortest paths score about
#: 1.97 with 2 rooms (1.95 with 3), an episode without the goal -max_step / 1000 (-0.08 with the
#: configs' max_step 80), so a mean above 1.5 needs the goal in about 80% of the summary's episodes.
GOAL = 1.5


def options(signal: Signal) -> RunOptions:
    return load_run_options(CONFIGS[signal])


def settings(signal: Signal, *, intrinsic: bool = True) -> TrainerSettings:
    """The Pyramids behavior of ``signal``'s config, serial; ``intrinsic=False``: its control,
    the same settings without the intrinsic signal."""
    behavior = attrs.evolve(options(signal).behavior_settings("Pyramids"), threaded=False)
    if not intrinsic:
        signals = {k: v for k, v in behavior.reward_signals.items() if k != INTRINSIC[signal]}
        behavior = attrs.evolve(behavior, reward_signals=signals)
    return behavior


def environment_parameters(signal: Signal) -> dict[str, float]:
    """The config's environment parameters (constants: one-lesson curricula)."""
    out = {}
    for name, parameter in options(signal).environment_parameters.items():
        value = parameter.curriculum[0].value
        assert isinstance(value, ConstantSampler), f"{CONFIGS[signal]}: {name} is not a constant"
        out[name] = float(value.value)
    return out


def pyramids(signal: Signal, seed: int) -> BaseEnv:
    """Built-in Pyramids as ``signal``'s config sets it up (its areas and parameters)."""
    return make_env(
        "Pyramids",
        seed=seed,
        num_areas=options(signal).env_settings.num_areas,
        env_parameters=environment_parameters(signal),
    )


def steps_to_goal(curve: list[tuple[int, float]]) -> int | None:
    """The step of the first summary whose mean reward passes GOAL (None: none does)."""
    return next((step for step, reward in curve if reward > GOAL), None)


def solved(curve: list[tuple[int, float]]) -> bool:
    """The last two summaries pass GOAL: the goal found and kept."""
    return len(curve) >= 2 and min(reward for _, reward in curve[-2:]) > GOAL
