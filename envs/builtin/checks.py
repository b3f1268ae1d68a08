"""A checker of the BaseEnv contract as Unity builds keep it, for tests of any BaseEnv.

Use it on a built-in environment, the stand-in build or a real build alike::

    checker = StepChecker(env)
    checker.after_reset()          # after env.reset() (or construction of a built-in env)
    ... env.set_actions(...); env.step(); checker.after_step()

Every check that fails raises ContractViolation naming the behavior and what is wrong.
``rollout``, ``random_action`` and ``EpisodeReturns`` drive an env with a policy and count
episode returns the way ML-Agents counts Cumulative Reward.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
from mlagents_envs.base_env import ActionTuple, BaseEnv, BehaviorSpec, DecisionSteps, TerminalSteps

_BEHAVIOR_NAME = re.compile(r"^[^?]+\?team=\d+$")


class ContractViolation(AssertionError):
    """A step that a Unity build would never deliver."""


class StepChecker:
    """Tracks agent ids across steps and checks each step's DecisionSteps and TerminalSteps.

    Checked: behavior names ``Name?team=N``; specs never vanish and a new behavior arrives with
    agents; observations float32 of the spec's shapes, finite (images within [0, 1]); rewards
    float32 finite; group ids int32 >= 0 and group rewards float32 finite, none outside a group
    (group id 0); ids int32, unique within a batch; a terminal id is an agent alive in this
    episode; an id never comes back after its terminal step or after a reset; action masks for
    discrete branches with at least one action left per branch; no step without any row.
    Counters (``decisions``, ``terminals``, ``interrupted``, ``steps``) let tests check coverage.
    """

    def __init__(self, env: BaseEnv) -> None:
        self.env = env
        self.alive: dict[str, set[int]] = {}
        self.dead: set[int] = set()
        self.known: dict[str, BehaviorSpec] = {}
        self.decisions = 0
        self.terminals = 0
        self.interrupted = 0
        self.steps = 0

    def after_reset(self) -> None:
        """Check the first step after a reset; every agent alive before it is gone for good."""
        for ids in self.alive.values():
            self.dead.update(ids)
        self.alive = {}
        self._check(require_rows=False)

    def after_step(self) -> None:
        """Check the step ``env.step()`` just delivered."""
        self._check(require_rows=True)
        self.steps += 1

    def _fail(self, behavior: str, what: str) -> None:
        raise ContractViolation(f"step {self.steps}, {behavior}: {what}")

    def _check(self, *, require_rows: bool) -> None:
        specs = dict(self.env.behavior_specs)
        for name in self.known:
            if name not in specs:
                self._fail(name, "behavior spec disappeared")
        rows = 0
        for name, spec in specs.items():
            if not _BEHAVIOR_NAME.match(name):
                self._fail(name, "behavior name is not of the form Name?team=N")
            decision, terminal = self.env.get_steps(name)
            if name not in self.known and len(decision) + len(terminal) == 0:
                self._fail(name, "behavior spec arrived without any agent")
            self.known[name] = spec
            self._check_batch(name, spec, decision, terminal=False)
            self._check_batch(name, spec, terminal, terminal=True)
            self._check_masks(name, spec, decision)
            self._track_ids(name, decision, terminal)
            rows += len(decision) + len(terminal)
        if require_rows and rows == 0:
            self._fail("*", "a step without any decision or terminal row was returned")

    def _check_batch(self, name: str, spec: BehaviorSpec, steps, *, terminal: bool) -> None:
        kind = "TerminalSteps" if terminal else "DecisionSteps"
        n = len(steps.agent_id)
        if len(steps.obs) != len(spec.observation_specs):
            self._fail(name, f"{kind} has {len(steps.obs)} observations, spec has {len(spec.observation_specs)}")
        for i, (obs, obs_spec) in enumerate(zip(steps.obs, spec.observation_specs)):
            if obs.dtype != np.float32:
                self._fail(name, f"{kind} obs {i} is {obs.dtype}, not float32")
            if obs.shape != (n,) + tuple(obs_spec.shape):
                self._fail(name, f"{kind} obs {i} has shape {obs.shape}, expected {(n,) + tuple(obs_spec.shape)}")
            if not np.isfinite(obs).all():
                self._fail(name, f"{kind} obs {i} is not finite")
            if len(obs_spec.shape) == 3 and n and (obs.min() < 0.0 or obs.max() > 1.0):
                self._fail(name, f"{kind} visual obs {i} leaves [0, 1]")
        if steps.reward.dtype != np.float32 or steps.reward.shape != (n,):
            self._fail(name, f"{kind} rewards are {steps.reward.dtype} {steps.reward.shape}")
        if not np.isfinite(steps.reward).all():
            self._fail(name, f"{kind} rewards are not finite")
        group_id, group_reward = np.asarray(steps.group_id), np.asarray(steps.group_reward)
        if group_id.dtype != np.int32 or group_id.shape != (n,) or (group_id < 0).any():
            self._fail(name, f"{kind} group ids are {group_id.dtype} {group_id.shape}, not int32 >= 0 [{n}]")
        if group_reward.dtype != np.float32 or group_reward.shape != (n,) or not np.isfinite(group_reward).all():
            self._fail(name, f"{kind} group rewards are {group_reward.dtype} {group_reward.shape}, not finite float32")
        if (group_reward[group_id == 0] != 0).any():
            self._fail(name, f"{kind} gives group reward to an agent in no group")
        if steps.agent_id.dtype != np.int32:
            self._fail(name, f"{kind} agent ids are {steps.agent_id.dtype}, not int32")
        if len(np.unique(steps.agent_id)) != n:
            self._fail(name, f"{kind} repeats an agent id: {steps.agent_id.tolist()}")
        if terminal:
            interrupted = np.asarray(steps.interrupted)
            if interrupted.dtype != bool or interrupted.shape != (n,):
                self._fail(name, f"interrupted flags are {interrupted.dtype} {interrupted.shape}")

    def _check_masks(self, name: str, spec: BehaviorSpec, decision: DecisionSteps) -> None:
        branches = spec.action_spec.discrete_branches
        if not branches:
            return
        if decision.action_mask is None:
            if len(decision):
                self._fail(name, "discrete behavior without action masks")
            return
        if len(decision.action_mask) != len(branches):
            self._fail(name, f"{len(decision.action_mask)} masks for {len(branches)} branches")
        for mask, size in zip(decision.action_mask, branches):
            if mask.dtype != bool or mask.shape != (len(decision), size):
                self._fail(name, f"mask is {mask.dtype} {mask.shape}, expected bool {(len(decision), size)}")
            if mask.all(axis=1).any():
                self._fail(name, "a branch has every action masked")

    def _track_ids(self, name: str, decision: DecisionSteps, terminal: TerminalSteps) -> None:
        alive = self.alive.setdefault(name, set())
        for agent_id in terminal.agent_id.tolist():
            if agent_id in self.dead:
                self._fail(name, f"agent {agent_id} ended an episode twice or after a reset")
            if agent_id not in alive:
                self._fail(name, f"agent {agent_id} ended an episode it never started")
            alive.discard(agent_id)
            self.dead.add(agent_id)
        for agent_id in decision.agent_id.tolist():
            if agent_id in self.dead:
                self._fail(name, f"agent id {agent_id} came back after its episode ended")
            if not any(agent_id in ids for other, ids in self.alive.items() if other != name):
                alive.add(agent_id)
            else:
                self._fail(name, f"agent id {agent_id} is used by two behaviors")
        self.decisions += len(decision)
        self.terminals += len(terminal)
        self.interrupted += int(np.count_nonzero(terminal.interrupted))


class EpisodeReturns:
    """Episode returns counted as ML-Agents counts Cumulative Reward.

    An id's first decision row starts its episode (its reward belongs to no transition); later
    decision rows and the terminal row add their rewards; the terminal row closes the episode.
    ``returns[behavior]`` lists finished episodes' returns, ``interrupted[behavior]`` their flags.
    """

    def __init__(self) -> None:
        self.open: dict[str, dict[int, float]] = {}
        self.returns: dict[str, list[float]] = {}
        self.interrupted: dict[str, list[bool]] = {}

    def record(self, env: BaseEnv) -> None:
        """Account for the step ``env`` holds now (call after reset and after every step)."""
        for name in env.behavior_specs:
            decision, terminal = env.get_steps(name)
            running = self.open.setdefault(name, {})
            for agent_id, reward, interrupted in zip(
                terminal.agent_id.tolist(), terminal.reward.tolist(), terminal.interrupted.tolist()
            ):
                if agent_id in running:
                    self.returns.setdefault(name, []).append(running.pop(agent_id) + reward)
                    self.interrupted.setdefault(name, []).append(bool(interrupted))
            for agent_id, reward in zip(decision.agent_id.tolist(), decision.reward.tolist()):
                running[agent_id] = running[agent_id] + reward if agent_id in running else 0.0

    def forget_open(self) -> None:
        """Drop unfinished episodes (after a reset)."""
        self.open = {}

    def mean(self, behavior: str) -> float:
        """Mean return of the finished episodes of ``behavior`` (nan if none)."""
        values = self.returns.get(behavior, [])
        return float(np.mean(values)) if values else float("nan")


def random_action(
    spec: BehaviorSpec, decision: DecisionSteps, rng: np.random.Generator, *, respect_masks: bool
) -> ActionTuple:
    """Uniform random actions for every row of ``decision``; masked actions avoided on request."""
    n = len(decision)
    continuous = rng.uniform(-1.0, 1.0, (n, spec.action_spec.continuous_size)).astype(np.float32)
    discrete = np.zeros((n, spec.action_spec.discrete_size), dtype=np.int32)
    for branch, size in enumerate(spec.action_spec.discrete_branches):
        weights = rng.random((n, size))
        if respect_masks and decision.action_mask is not None:
            weights[decision.action_mask[branch]] = -1.0
        discrete[:, branch] = weights.argmax(axis=1)
    return ActionTuple(continuous=continuous, discrete=discrete)


def rollout(
    env: BaseEnv,
    policy: Callable[[str, DecisionSteps], ActionTuple],
    n_steps: int,
    *,
    checker: StepChecker | None = None,
) -> EpisodeReturns:
    """Step ``env`` ``n_steps`` times acting with ``policy(behavior, decision_steps)``.

    Starts from the env's current state (call right after a reset). Returns the episode returns;
    with a checker, every step is checked too.
    """
    returns = EpisodeReturns()
    returns.record(env)
    for _ in range(n_steps):
        for name in list(env.behavior_specs):
            decision, _ = env.get_steps(name)
            env.set_actions(name, policy(name, decision))
        env.step()
        if checker is not None:
            checker.after_step()
        returns.record(env)
    return returns
