"""Reward scaling by the running spread of the discounted return (``normalize: true`` on a
reward signal, PPO and POCA): Stable-Baselines3's ``VecNormalize(norm_reward=True)``, which RL
Zoo's tuned MuJoCo PPO settings lean on and ML-Agents has no key for.

Each agent keeps a running discounted return ``R = gamma * R + r`` (reset when its episode
ends, terminated or interrupted); every step's ``R`` goes into a running variance, and the
reward that step is learned as ``clip(r / sqrt(var + 1e-8), -10, 10)``: divided, not
centred, so a reward's sign survives. As VecNormalize, step ``t`` is scaled by the statistics
that include ``R_t`` (a trajectory is folded in step by step, vectorised); the statistics start
at mean 0, variance 1 and a count of 1e-4, SB3's. They come in trajectories, so two agents' steps
enter in trajectory order rather than VecNormalize's step order. Only the learned rewards are
scaled: ``Policy/<Signal> Reward`` and the environment's cumulative reward stay the raw ones,
while value estimates are in the scaled units.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from processors.trajectory import Trajectory

CLIP = 10.0  # VecNormalize's clip_reward
EPSILON = 1e-8  # under the square root, VecNormalize's
INITIAL_COUNT = 1e-4  # RunningMeanStd's epsilon: the prior's weight


class ReturnScale:
    """One reward stream's scaling: the running mean and variance of every agent's discounted
    return (float64), and each agent's return so far in its episode."""

    def __init__(self, gamma: float) -> None:
        self.gamma = float(gamma)
        self.mean = 0.0
        self.var = 1.0
        self.count = INITIAL_COUNT
        self._returns: dict[str, float] = {}

    def scale(self, trajectory: Trajectory, rewards: np.ndarray) -> np.ndarray:
        """``rewards`` ([T], the stream's raw rewards of ``trajectory``) as learned, float32;
        folds the trajectory's discounted returns into the statistics."""
        length = len(rewards)
        if length == 0:
            return rewards.astype(np.float32)
        carried = self._returns.get(trajectory.agent_id, 0.0)
        powers = self.gamma ** np.arange(length, dtype=np.float64)
        # R_t = gamma^t * (gamma * carried + sum_{k<=t} r_k / gamma^k), written without a Python
        # loop; a horizon long enough to underflow gamma^t falls back to the loop
        if powers[-1] > 1e-200:
            returns = powers * (self.gamma * carried + np.cumsum(rewards.astype(np.float64) / powers))
        else:
            returns = _discounted_returns_loop(rewards, self.gamma, carried)
        # the statistics after each step, as if merged one return at a time
        counts = self.count + np.arange(1, length + 1, dtype=np.float64)
        sums = self.count * self.mean + np.cumsum(returns)
        squares = self.count * (self.var + self.mean**2) + np.cumsum(returns**2)
        means = sums / counts
        variances = np.maximum(squares / counts - means**2, 0.0)
        self.count, self.mean, self.var = float(counts[-1]), float(means[-1]), float(variances[-1])
        if trajectory.done_reached:
            self._returns.pop(trajectory.agent_id, None)
        else:
            self._returns[trajectory.agent_id] = float(returns[-1])
        scaled = rewards / np.sqrt(variances + EPSILON)
        return np.clip(scaled, -CLIP, CLIP).astype(np.float32)

    def state(self) -> dict[str, Any]:
        """The statistics (the agents' running returns are not kept: a resumed run starts
        each agent's return afresh, as its episodes restart)."""
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load(self, state: Mapping[str, Any]) -> None:
        self.mean, self.var, self.count = float(state["mean"]), float(state["var"]), float(state["count"])


def _discounted_returns_loop(rewards: np.ndarray, gamma: float, carried: float) -> np.ndarray:
    returns = np.empty(len(rewards), np.float64)
    running = carried
    for t, reward in enumerate(rewards):
        running = gamma * running + float(reward)
        returns[t] = running
    return returns
