"""``--inference``: a behavior's saved policy acts; nothing trains and nothing is saved.

The inference trainer has the trainer's interface, so the controller runs it as any other
behavior: its ``advance`` takes the trajectories the agents made, counts their steps on from the
checkpoint's (a summary every ``summary_freq``, as training writes them) and drops them. It never
reaches ``max_steps`` (mlagents-learn's inference acts until stopped), publishes no policy (the
acting copies keep the loaded weights), and at the end of the session says the mean return over
the episodes that finished, the figure a user compares with a published one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from processors import AgentManagerQueue
from processors.trajectory import Trajectory
from stats.tags import STEP
from trainers.loop.trainer import Trainer
from trainers.loop.wrapper import TrainerWrapper

logger = logging.getLogger(__name__)


class InferenceTrainer(TrainerWrapper):
    """Acts with ``trainer``'s policy (resumed from its checkpoint, or untrained) for good."""

    def __init__(self, trainer: Trainer) -> None:
        super().__init__(trainer)
        self._queues: list[AgentManagerQueue[Trajectory]] = []
        self._returns: list[float] = []
        self.step = trainer.step
        freq = trainer.settings.summary_freq
        self._next_summary = (self.step // freq + 1) * freq

    @property
    def should_still_train(self) -> bool:
        return True  # acts until stopped, max_steps or not

    def subscribe_trajectory_queue(self, trajectory_queue: AgentManagerQueue[Trajectory]) -> None:
        self._queues.append(trajectory_queue)

    def publish_policy_queue(self, policy_queue: AgentManagerQueue[Any]) -> None:
        """Nothing is published: the acting copies keep the loaded policy."""

    def close_queues(self) -> None:
        for trajectory_queue in self._queues:
            trajectory_queue.close()

    def add_episode_returns(self, returns: Iterable[float]) -> None:
        """Returns of episodes that finished (an AgentManager's episode-reward listener)."""
        self._returns.extend(float(r) for r in returns)

    def advance(self, timeout: float = 0.0) -> bool:
        """Count the steps of the trajectories on the queues and drop them; write the summary
        when its step is passed. Returns whether any were taken."""
        count = 0
        for trajectory_queue in self._queues:
            while True:
                try:
                    count += trajectory_queue.get_nowait().length
                except AgentManagerQueue.Empty:
                    break
        if not count:
            return False
        self.step += count
        if self.step >= self._next_summary:
            self.stats_reporter.write_stats(self._next_summary)
            freq = self.settings.summary_freq
            self._next_summary = (self.step // freq + 1) * freq
        self.stats_reporter.set_stat(STEP, float(self.step))
        return True

    def save_final(self) -> Path | None:
        """The session's end: nothing is saved; says the mean return of the episodes that finished."""
        if self._returns:
            mean = sum(self._returns) / len(self._returns)
            logger.info(
                "%s: mean return %.3f over %d episodes (--inference)", self.behavior_name, mean, len(self._returns)
            )
        else:
            logger.info("%s: no episode finished (--inference)", self.behavior_name)
        return None
