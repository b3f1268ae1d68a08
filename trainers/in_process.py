"""One environment object stepped in this process, for tests and scripts that build their own
trainers: the :class:`trainers.env_manager.EnvManager` over an :class:`InProcessPool`.

    manager = InProcessEnvManager(make_env("Basic", seed=1), create_runtime)
    while training:
        manager.step()
    manager.close()

``create_runtime(behavior_id, spec)`` is called when a behavior first appears and returns its
:class:`BehaviorRuntime` (AgentManager + inference policy).
"""

from __future__ import annotations

from typing import Callable

from mlagents_envs.base_env import BaseEnv, BehaviorSpec

from trainers.env_manager import (
    BehaviorRuntime,
    EnvManager,
    InProcessPool,
    OpenEnv,
    RestartBudget,
    allowed_actions,
)

__all__ = ["BehaviorRuntime", "InProcessEnvManager", "allowed_actions"]


class InProcessEnvManager:
    """Steps ``env`` (worker 0) in the calling thread; an error of the env ends the run
    (``RunEnvironmentError`` naming it): the env object cannot be restarted from here."""

    def __init__(self, env: BaseEnv, create_runtime: Callable[[str, BehaviorSpec], BehaviorRuntime]):
        self.env = env
        get_stats = getattr(env, "get_and_reset_stats", None) or dict
        opened = OpenEnv(env, get_stats)
        self.manager = EnvManager(InProcessPool(opener=lambda worker_id: opened), create_runtime,
                                  restarts=RestartBudget(max_lifetime_restarts=0))
        self.manager.start()

    @property
    def runtimes(self) -> dict[str, BehaviorRuntime]:
        return self.manager.runtimes

    @property
    def env_steps(self) -> int:
        return self.manager.env_steps

    def step(self) -> None:
        """One environment step for every behavior."""
        self.manager.advance(timeout=0.0)

    def close(self) -> None:
        """Publish what was collected and close the environment."""
        for runtime in self.manager.runtimes.values():
            runtime.manager.end_episode()
        self.manager.close()
