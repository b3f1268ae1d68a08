"""Policy-server clients that play small tasks, for tests and benchmarks."""

from __future__ import annotations

import threading

import numpy as np

from envs.external import PolicyClient, PolicyServerError


def pick_the_goal(address: str, inference: str, seed: int, stop: threading.Event) -> int:
    """A fast simulator (no work of its own between decisions): 4 decisions per episode, each
    showing one of 3 goals one-hot and paying 1 for choosing it (best return 4, random play
    4/3). Runs episodes until the run ends; returns how many it finished."""
    rng = np.random.default_rng(seed)
    goals = np.eye(3, dtype=np.float32)
    episodes = 0
    try:
        client = PolicyClient(address, "Goal", [(3,)], discrete_branches=(3,), inference=inference)
    except (OSError, PolicyServerError):
        return 0
    try:
        while not stop.is_set():
            episode = client.start_episode()
            for _ in range(4):
                goal = int(rng.integers(3))
                _, discrete = client.get_action(episode, [goals[goal]])
                client.log_returns(episode, float(discrete[0] == goal))
            client.end_episode(episode, [np.zeros(3, np.float32)])
            episodes += 1
    except (OSError, PolicyServerError):  # the run ended and the server with it
        pass
    finally:
        client.close()
    return episodes
