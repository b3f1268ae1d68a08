"""Agent-steps per second through AgentManager.add_experiences, printed as JSON.

Scenes: 1, 16, 128 and 1024 agents with an 8-float vector observation and a continuous
action of 2, time horizon 64, about 5% of agents terminating each step and coming back at
once under a fresh id (as Unity does); and 16 agents with one 84x84x3 visual observation. The
recurrent scenes add a memory of 128 floats per agent (ML-Agents' Hallway): the processor keeps
it per agent and stores the memory fed with every step in the trajectory. The grouped scenes put
agents in groups of 4 (Unity's multi-agent groups, as POCA trains them) with a group reward:
the processor then also records each agent's group mates at every step.
All steps are built before timing; the trajectory queue is drained after every step, as a
trainer would. The figure is the median of several repeats.
"""

from __future__ import annotations

import json
import statistics
import time
from types import SimpleNamespace

import numpy as np
from mlagents_envs.base_env import (
    ActionSpec,
    ActionTuple,
    BehaviorSpec,
    DecisionSteps,
    DimensionProperty,
    ObservationSpec,
    ObservationType,
    TerminalSteps,
)

from processors import ActionInfo, AgentManager, AgentManagerQueue
from stats import StatsReporter

HORIZON = 64
TERMINATING_FRACTION = 0.05
CONTINUOUS = 2


def build_steps(
    agents: int, obs_shape: tuple[int, ...], steps: int, memory: int = 0, seed: int = 0, group_size: int = 0
) -> list[tuple]:
    """(DecisionSteps, TerminalSteps, ActionInfo for the previous decision) per step; with
    ``group_size``, agents 0..group_size-1 form group 1, the next ones group 2, and so on."""
    rng = np.random.default_rng(seed)
    ids = np.arange(agents, dtype=np.int32)
    groups = (np.arange(agents) // group_size + 1).astype(np.int32) if group_size else np.zeros(agents, np.int32)
    group_reward = np.full(agents, 0.01 if group_size else 0.0, np.float32)
    next_id = agents
    sequence = []
    previous: ActionInfo | None = None
    for _ in range(steps):
        ending = rng.random(agents) < TERMINATING_FRACTION
        ended_ids = ids[ending]
        fresh = np.arange(next_id, next_id + ended_ids.shape[0], dtype=np.int32)
        next_id += ended_ids.shape[0]
        ids = ids.copy()
        ids[ending] = fresh
        n_end = ended_ids.shape[0]
        terminal = TerminalSteps(
            [rng.random((n_end, *obs_shape), dtype=np.float32)],
            rng.random(n_end, dtype=np.float32),
            np.zeros(n_end, bool),
            ended_ids,
            groups[ending],
            group_reward[ending],
        )
        decision = DecisionSteps(
            [rng.random((agents, *obs_shape), dtype=np.float32)],
            rng.random(agents, dtype=np.float32),
            ids,
            None,
            groups,
            group_reward,
        )
        sequence.append((decision, terminal, previous))
        actions = rng.standard_normal((agents, CONTINUOUS)).astype(np.float32)
        previous = ActionInfo(
            agent_ids=ids,
            env_actions=ActionTuple(continuous=np.clip(actions, -1, 1)),
            continuous_actions=actions,
            discrete_actions=np.zeros((agents, 0), np.int32),
            continuous_log_probs=-np.abs(actions),
            discrete_log_probs=np.zeros((agents, 0), np.float32),
            entropy=np.ones(agents, np.float32),
            memories=rng.standard_normal((agents, memory)).astype(np.float32),
        )
    return sequence


def measure(
    agents: int, obs_shape: tuple[int, ...], steps: int, repeats: int, memory: int = 0, group_size: int = 0
) -> dict:
    spec = BehaviorSpec(
        [ObservationSpec(obs_shape, (DimensionProperty.NONE,) * len(obs_shape), ObservationType.DEFAULT, "obs")],
        ActionSpec(CONTINUOUS, ()),
    )
    policy = SimpleNamespace(behavior_spec=spec, memory_size=memory)
    sequence = build_steps(agents, obs_shape, steps, memory, group_size=group_size)
    rates = []
    trajectories = 0
    for _ in range(repeats):
        manager = AgentManager(policy, "Bench?team=0", StatsReporter("Bench"), HORIZON, threaded=False)
        queue = manager.trajectory_queue
        trajectories = 0
        start = time.perf_counter()
        for decision, terminal, previous in sequence:
            manager.add_experiences(decision, terminal, 0, previous)
            while True:
                try:
                    queue.get_nowait()
                except AgentManagerQueue.Empty:
                    break
                trajectories += 1
        elapsed = time.perf_counter() - start
        rates.append(agents * steps / elapsed)
    return {
        "agents": agents,
        "obs_shape": list(obs_shape),
        "memory_size": memory,
        "group_size": group_size,
        "steps": steps,
        "repeats": repeats,
        "trajectories_per_repeat": trajectories,
        "agent_steps_per_s": round(statistics.median(rates)),
    }


def main() -> None:
    scenes = [
        measure(1, (8,), 20_000, 5),
        measure(16, (8,), 5_000, 5),
        measure(128, (8,), 1_000, 5),
        measure(1024, (8,), 300, 5),
        measure(16, (84, 84, 3), 300, 3),
        measure(16, (8,), 5_000, 5, memory=128),
        measure(1024, (8,), 300, 5, memory=128),
        measure(16, (8,), 5_000, 5, group_size=4),
        measure(1024, (8,), 300, 5, group_size=4),
    ]
    print(json.dumps({"benchmark": "processor", "time_horizon": HORIZON, "results": scenes}))


if __name__ == "__main__":
    main()
