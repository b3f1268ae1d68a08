"""``--record-demo DIR``: a run's experience written as Unity demonstration files,
``DIR/<Behavior>.demo`` (the behavior name without ``?team=``).

The env manager hands the recorder what it hands the AgentManagers: each worker's steps of a
behavior and the ActionInfo it acted on the previous step. A deciding agent's step waits until
the action taken there comes back with the next step; then the step is written with that action,
so each step of the file holds an observation and the action taken at it (ML-Agents'
``make_demo_buffer`` reads it so), as the environment received it (continuous actions
clipped to [-1, 1]). A step that ends an episode is written at once, with zero
actions as Unity records it (nothing is taken there), and closes the agent's episode in the
file. Unity's own recorder stores, with each step, the action taken at the step before;
ours keeps the action with the observation it answered. Images are written in the layout of
the build that sent them (``[C, H, W]`` from Unity package 3.x and later), as that build's own
recorder would.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, TerminalSteps

from envs.unity.versions import package_generation
from processors import ActionInfo, BehaviorIdentifiers
from trainers.files.demonstrations import DEMO_SUFFIX, DemonstrationWriter

logger = logging.getLogger(__name__)


class _Pending(NamedTuple):
    obs: tuple[np.ndarray, ...]
    reward: float
    mask: np.ndarray | None  # [m] True where allowed


class DemoRecorder:
    """One :class:`DemonstrationWriter` per behavior name under ``folder``, opened when the
    behavior first appears; :meth:`close` completes every file."""

    def __init__(self, folder: str | os.PathLike[str]):
        self.folder = Path(folder)
        self.writers: dict[str, DemonstrationWriter] = {}
        self._pending: dict[tuple[int, str, int], _Pending] = {}
        self._channels_first: set[str] = set()  # behavior names whose builds lay images out [C, H, W]

    def note_build(self, behavior_id: str, unity_package: str) -> None:
        """The Unity package version of the build that sends ``behavior_id`` ("" if none)."""
        if package_generation(unity_package) >= 3:
            self._channels_first.add(BehaviorIdentifiers.from_name_behavior_id(behavior_id).brain_name)

    def path(self, behavior_id: str) -> Path:
        name = BehaviorIdentifiers.from_name_behavior_id(behavior_id).brain_name
        return self.folder / f"{name}{DEMO_SUFFIX}"

    def _writer(self, behavior_id: str, spec: BehaviorSpec) -> DemonstrationWriter:
        name = BehaviorIdentifiers.from_name_behavior_id(behavior_id).brain_name
        writer = self.writers.get(name)
        if writer is None:
            writer = DemonstrationWriter(
                self.path(behavior_id),
                behavior_name=name,
                behavior_spec=spec,
                channels_first=name in self._channels_first,
            )
            self.writers[name] = writer
            logger.info("Recording %s's demonstrations to %s", name, writer.path)
        return writer

    def record(
        self,
        worker_id: int,
        behavior_id: str,
        spec: BehaviorSpec,
        decision: DecisionSteps,
        terminal: TerminalSteps,
        previous: ActionInfo | None,
    ) -> None:
        """One worker's steps of one behavior, and the actions taken on its previous step."""
        writer = self._writer(behavior_id, spec)
        if previous is not None:
            for row, agent_id in enumerate(previous.agent_ids.tolist()):
                key = (worker_id, behavior_id, agent_id)
                step = self._pending.pop(key, None)
                if step is None:
                    continue
                writer.add_step(
                    key,
                    step.obs,
                    reward=step.reward,
                    done=False,
                    continuous_action=previous.env_actions.continuous[row],
                    discrete_action=previous.env_actions.discrete[row],
                    action_mask=step.mask,
                    agent_id=agent_id,
                )
        for row, agent_id in enumerate(terminal.agent_id.tolist()):
            key = (worker_id, behavior_id, agent_id)
            self._pending.pop(key, None)
            writer.add_step(
                key,
                tuple(o[row] for o in terminal.obs),
                reward=float(terminal.reward[row]),
                done=True,
                max_step_reached=bool(terminal.interrupted[row]),
                agent_id=agent_id,
            )
        masks = decision.action_mask
        for row, agent_id in enumerate(decision.agent_id.tolist()):
            mask = None if masks is None else ~np.concatenate([branch[row] for branch in masks])
            self._pending[(worker_id, behavior_id, agent_id)] = _Pending(
                tuple(o[row] for o in decision.obs), float(decision.reward[row]), mask
            )

    def discard_worker(self, worker_id: int) -> None:
        """A restarted worker's agents start over: their waiting steps are dropped."""
        for key in [k for k in self._pending if k[0] == worker_id]:
            del self._pending[key]

    def close(self) -> None:
        """Write every open episode and each file's header; steps still waiting for their
        action are left out."""
        self._pending.clear()
        for writer in self.writers.values():
            writer.close()
