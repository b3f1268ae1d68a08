"""Driving one environment in this process: steps to the processors, actions from the policies.

Each behavior gets a :class:`BehaviorRuntime` the first time the environment shows it (a
behavior's spec arrives with its first agents): an AgentManager for its trajectories and an
inference copy of its policy, kept in sync from the trainer's policy queue. One ``step()``
drains the policy queues, hands every behavior's DecisionSteps/TerminalSteps to its
processor with the actions it last received, acts for all deciding agents in one batch,
and advances the environment.
"""

from __future__ import annotations

from typing import Any, Callable

import attrs
import numpy as np
from mlagents_envs.base_env import BaseEnv, BehaviorSpec, DecisionSteps

from processors import ActionInfo, AgentManager, AgentManagerQueue


@attrs.define
class BehaviorRuntime:
    """The env-side objects of one behavior."""

    manager: AgentManager
    policy: Any  # a TorchPolicy: act(), load_weights()
    last_action: ActionInfo | None = None


def allowed_actions(decision_steps: DecisionSteps, mask_width: int) -> np.ndarray | None:
    """[N, m] True where an action is allowed (Unity's masks say where it is not)."""
    if mask_width == 0 or decision_steps.action_mask is None:
        return None
    return ~np.concatenate(decision_steps.action_mask, axis=1).astype(bool)


class InProcessEnvManager:
    """Steps one BaseEnv (worker 0) in the calling thread."""

    def __init__(self, env: BaseEnv, create_runtime: Callable[[str, BehaviorSpec], BehaviorRuntime]):
        self.env = env
        self._create_runtime = create_runtime
        self.runtimes: dict[str, BehaviorRuntime] = {}
        self.env_steps = 0
        self.env.reset()

    def step(self) -> None:
        """One environment step for every behavior."""
        for behavior_id in list(self.env.behavior_specs):
            runtime = self.runtimes.get(behavior_id)
            if runtime is None:
                runtime = self.runtimes[behavior_id] = self._create_runtime(
                    behavior_id, self.env.behavior_specs[behavior_id]
                )
            self._load_newest_policy(runtime)
            decision_steps, terminal_steps = self.env.get_steps(behavior_id)
            runtime.manager.add_experiences(decision_steps, terminal_steps, 0, runtime.last_action)
            runtime.last_action = None
            if len(decision_steps) > 0:
                mask_width = int(sum(self.env.behavior_specs[behavior_id].action_spec.discrete_branches))
                info = runtime.policy.act(
                    decision_steps.obs, allowed_actions(decision_steps, mask_width), decision_steps.agent_id
                )
                self.env.set_actions(behavior_id, info.env_actions)
                runtime.last_action = info
        stats = getattr(self.env, "get_and_reset_stats", None)
        if stats is not None:
            env_stats = stats()
            for runtime in self.runtimes.values():
                runtime.manager.record_environment_stats(env_stats, 0)
        self.env.step()
        self.env_steps += 1

    @staticmethod
    def _load_newest_policy(runtime: BehaviorRuntime) -> None:
        weights = None
        while True:
            try:
                weights = runtime.manager.policy_queue.get_nowait()
            except AgentManagerQueue.Empty:
                break
        if weights is not None:
            runtime.policy.load_weights(weights)

    def close(self) -> None:
        """Publish what was collected and close the environment."""
        for runtime in self.runtimes.values():
            runtime.manager.end_episode()
        self.env.close()
