"""Demonstration files for the imitation tests, written by our :class:`DemonstrationWriter`.

:func:`record_demo` drives an environment with a scripted policy and writes every step as Unity's
recorder would (each deciding step with the action taken there, each episode end as a done step
with no action). :func:`record_simple_demo` is ML-Agents' ``simple_record`` fixture
(``test_simple_rl.py``: ``RecordEnvironment.solve()``, 100 steps of the optimal policy) on
built-in Simple: :func:`simple_expert` moves toward the goal its observation shows (continuous:
the goal's sign, discrete: choice 1 for +1, 0 for -1); ``anti=True`` records the opposite, a
policy that always reaches the wrong end (the control of the imitation tests). No training
happens while recording: 100 steps take a few milliseconds (visual ones a little more).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps

from envs.builtin import make_env
from trainers.files.demonstrations import DemonstrationWriter

#: (decision steps, behavior spec, random generator) -> the actions of every row.
Policy = Callable[[DecisionSteps, BehaviorSpec, np.random.Generator], ActionTuple]

#: ML-Agents' ``RecordEnvironment(n_demos=100)`` in ``simple_record``.
SIMPLE_DEMO_STEPS = 100


def allowed(decision: DecisionSteps, spec: BehaviorSpec) -> np.ndarray:
    """[n, m] bool, True where a discrete choice is allowed (every branch's choices in a row)."""
    n, m = len(decision), int(sum(spec.action_spec.discrete_branches))
    if decision.action_mask is None or m == 0:
        return np.ones((n, m), bool)
    return ~np.concatenate(decision.action_mask, axis=1)


def random_policy(decision: DecisionSteps, spec: BehaviorSpec, rng: np.random.Generator) -> ActionTuple:
    """Uniform continuous actions in [-1, 1]; each branch's choice uniform among the allowed ones."""
    n = len(decision)
    continuous = rng.uniform(-1.0, 1.0, (n, spec.action_spec.continuous_size)).astype(np.float32)
    discrete = np.zeros((n, spec.action_spec.discrete_size), np.int32)
    ok = allowed(decision, spec)
    start = 0
    for branch, size in enumerate(spec.action_spec.discrete_branches):
        for row in range(n):
            choices = np.flatnonzero(ok[row, start : start + size])
            discrete[row, branch] = rng.choice(choices) if len(choices) else 0
        start += size
    return ActionTuple(continuous, discrete)


def simple_expert(*, anti: bool = False) -> Policy:
    """Simple's optimal policy (every action toward the goal shown in the observations), or with
    ``anti`` the policy that always heads for the other end."""

    def act(decision: DecisionSteps, spec: BehaviorSpec, rng: np.random.Generator) -> ActionTuple:
        goal = np.sign(decision.obs[0].reshape(len(decision), -1)[:, 0])  # [n]: every value is the goal
        toward = -goal if anti else goal
        continuous = np.repeat(toward[:, None], spec.action_spec.continuous_size, axis=1).astype(np.float32)
        choice = (toward > 0).astype(np.int32)
        discrete = np.repeat(choice[:, None], spec.action_spec.discrete_size, axis=1)
        return ActionTuple(continuous, discrete)

    return act


def record_demo(
    env: BaseEnv,
    path: str | os.PathLike[str],
    *,
    steps: int,
    policy: Policy,
    seed: int = 0,
) -> Path:
    """Act in ``env`` (one behavior, already reset) with ``policy`` until ``steps`` steps are
    written to ``path`` (a ``.demo`` named after the behavior, ``?team=`` dropped); returns
    ``path``. Each agent's episode is contiguous in the file (the writer holds it until done)."""
    (behavior,) = list(env.behavior_specs)
    spec = env.behavior_specs[behavior]
    rng = np.random.default_rng(seed)
    path = Path(path)
    with DemonstrationWriter(path, behavior_name=behavior.split("?")[0], behavior_spec=spec) as writer:
        while writer.number_steps < steps:
            decision, terminal = env.get_steps(behavior)
            for row, agent in enumerate(terminal.agent_id.tolist()):
                writer.add_step(
                    agent,
                    [o[row] for o in terminal.obs],
                    reward=float(terminal.reward[row]),
                    done=True,
                    max_step_reached=bool(terminal.interrupted[row]),
                    agent_id=agent,
                )
            action = policy(decision, spec, rng)
            masks = allowed(decision, spec)
            for row, agent in enumerate(decision.agent_id.tolist()):
                writer.add_step(
                    agent,
                    [o[row] for o in decision.obs],
                    reward=float(decision.reward[row]),
                    done=False,
                    continuous_action=action.continuous[row],
                    discrete_action=action.discrete[row],
                    action_mask=masks[row],
                    agent_id=agent,
                )
            env.set_actions(behavior, action)
            env.step()
    return path


def record_simple_demo(
    path: str | os.PathLike[str],
    *,
    continuous_size: int = 1,
    discrete_branches: int = 0,
    num_vector: int = 1,
    num_visual: int = 0,
    step_size: float = 0.2,
    anti: bool = False,
    steps: int = SIMPLE_DEMO_STEPS,
    seed: int = 0,
) -> Path:
    """ML-Agents' ``simple_record(action_sizes, num_visual, num_vector)`` on built-in Simple:
    ``steps`` steps of :func:`simple_expert` (``anti``: of the anti-expert) at ``step_size``
    (0.2: RecordEnvironment's default, whatever step the test then trains with)."""
    env = make_env(
        "Simple",
        seed=seed,
        continuous_size=continuous_size,
        discrete_branches=discrete_branches,
        num_vector=num_vector,
        num_visual=num_visual,
        step_size=step_size,
    )
    try:
        return record_demo(env, path, steps=steps, policy=simple_expert(anti=anti), seed=seed)
    finally:
        env.close()
