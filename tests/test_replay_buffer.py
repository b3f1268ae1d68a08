"""SAC's replay buffer: a ring of the newest transitions, with next observations and done flags
as bootstrapping needs them, uniform seeded sampling, and exact save/restore."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from processors import Trajectory
from trainers.sac.replay_buffer import ReplayBuffer, transition_bytes


def trajectory(start: int, length: int, *, done: bool = False, interrupted: bool = False, image=False) -> Trajectory:
    """Observation t is the number start + t (so rows are recognisable); next_obs follows on."""
    values = np.arange(start, start + length, dtype=np.float32)
    flags = np.zeros(length, bool)
    done_flags, interrupted_flags = flags.copy(), flags.copy()
    done_flags[-1], interrupted_flags[-1] = done, interrupted
    obs: tuple[np.ndarray, ...] = (np.repeat(values[:, None], 2, axis=1),)
    next_obs: tuple[np.ndarray, ...] = (np.full(2, start + length, np.float32),)
    if image:
        obs += (np.full((length, 2, 2, 1), start % 256, np.uint8),)
        next_obs += (np.full((2, 2, 1), (start + length) % 256, np.uint8),)
    return Trajectory(
        behavior_id="B?team=0",
        agent_id="agent_0-0",
        obs=obs,
        next_obs=next_obs,
        rewards=values.copy(),
        done=done_flags,
        interrupted=interrupted_flags,
        continuous_actions=np.repeat(values[:, None], 1, axis=1),
        discrete_actions=(values[:, None] % 3).astype(np.int32),
        continuous_log_probs=np.zeros((length, 1), np.float32),
        discrete_log_probs=np.zeros((length, 1), np.float32),
        action_masks=np.ones((length, 3), bool),
        prev_continuous_actions=np.zeros((length, 1), np.float32),
        prev_discrete_actions=np.zeros((length, 1), np.int32),
        memories=np.zeros((length, 0), np.float32),
    )


def buffer(capacity: int, image: bool = False) -> ReplayBuffer:
    shapes = [(2,), (2, 2, 1)] if image else [(2,)]
    return ReplayBuffer(capacity, shapes, continuous_size=1, discrete_branches=(3,), streams=2)


def add(replay: ReplayBuffer, t: Trajectory) -> None:
    replay.add(t, np.stack([t.rewards, 2 * t.rewards], axis=1))


def stored(replay: ReplayBuffer) -> list[float]:
    """Observations oldest first (the ring's rows from its write position once full)."""
    state = replay.state()
    rows = state["obs"][0][:, 0].tolist()
    return rows[state["next"] :] + rows[: state["next"]] if state["size"] == state["capacity"] else rows


def test_next_observations_and_done_flags_as_bootstrapping_needs_them():
    replay = buffer(10)
    add(replay, trajectory(0, 3, done=True))  # a true terminal
    add(replay, trajectory(10, 2, done=True, interrupted=True))  # max step: bootstrap
    add(replay, trajectory(20, 2))  # time-horizon cut: bootstrap
    state = replay.state()
    assert state["obs"][0][:, 0].tolist() == [0, 1, 2, 10, 11, 20, 21]
    assert state["next_obs"][0][:, 0].tolist() == [1, 2, 3, 11, 12, 21, 22]
    assert state["dones"].tolist() == [0, 0, 1, 0, 0, 0, 0]
    assert state["rewards"][:, 1].tolist() == [0, 2, 4, 20, 22, 40, 42]
    assert state["discrete_actions"][:, 0].tolist() == [0, 1, 2, 1, 2, 2, 0]


def test_the_ring_keeps_the_newest_transitions_in_order():
    replay = buffer(5)
    add(replay, trajectory(0, 3))
    add(replay, trajectory(10, 4))  # wraps: 0..2 partly overwritten
    assert len(replay) == 5
    assert stored(replay) == [2, 10, 11, 12, 13]
    add(replay, trajectory(20, 7))  # longer than the ring: its newest 5
    assert stored(replay) == [22, 23, 24, 25, 26]
    state = replay.state()
    assert sorted(state["next_obs"][0][:, 0].tolist()) == [23, 24, 25, 26, 27]


def test_sampling_is_uniform_over_filled_rows_and_seeded():
    replay = buffer(100)
    add(replay, trajectory(0, 10))  # 10 of 100 rows filled
    draws = replay.sample(5000, torch.Generator().manual_seed(1))
    values = draws.obs[0][:, 0]
    assert set(values.tolist()) == set(range(10))  # never an empty row
    counts = torch.bincount(values.long(), minlength=10).float()
    assert counts.min() > 400 and counts.max() < 600  # 500 each expected
    assert torch.equal(draws.next_obs[0][:, 0], values + 1)
    assert torch.equal(draws.continuous_actions[:, 0], values)  # fields stay aligned
    again = replay.sample(5000, torch.Generator().manual_seed(1))
    assert torch.equal(again.obs[0], draws.obs[0])


def test_images_stay_uint8():
    replay = buffer(8, image=True)
    add(replay, trajectory(0, 3, image=True))
    batch = replay.sample(4, torch.Generator().manual_seed(0))
    assert batch.obs[1].dtype == torch.uint8 and batch.next_obs[1].dtype == torch.uint8
    # what the stored rows of one transition take is what transition_bytes counts (the README's figure)
    state = replay.state()
    stored = sum(t[0].numel() * t.element_size() for k, t in state.items() if isinstance(t, torch.Tensor))
    stored += sum(o[0].numel() * o.element_size() for o in (*state["obs"], *state["next_obs"]))
    expected = transition_bytes([(2,), (2, 2, 1)], continuous_size=1, discrete_branches=(3,), streams=2)
    assert stored == expected == 2 * (2 * 4 + 4) + 3 + 4 + 8 + 2 * 4 + 4 + 1


def test_saved_state_restores_the_same_samples():
    replay = buffer(6)
    for start in (0, 10, 20):
        add(replay, trajectory(start, 3, done=start == 10))
    restored = buffer(6)
    restored.load(replay.state())
    assert len(restored) == 6
    a = replay.sample(20, torch.Generator().manual_seed(3))
    b = restored.sample(20, torch.Generator().manual_seed(3))
    assert torch.equal(a.obs[0], b.obs[0]) and torch.equal(a.dones, b.dones) and torch.equal(a.rewards, b.rewards)
    add(replay, trajectory(30, 2))
    add(restored, trajectory(30, 2))
    assert stored(restored) == stored(replay) == [11, 12, 20, 21, 22, 30, 31][-6:]


def test_a_smaller_buffer_restores_the_newest_and_a_mismatch_is_refused():
    replay = buffer(10)
    add(replay, trajectory(0, 8))
    smaller = buffer(3)
    smaller.load(replay.state())
    assert stored(smaller) == [5, 6, 7]
    other = ReplayBuffer(10, [(3,)], continuous_size=1, discrete_branches=(3,), streams=2)
    with pytest.raises(ValueError, match=r"observation 0 has shape \[2\], this behavior's is \[3\]"):
        other.load(replay.state())
    fewer_streams = ReplayBuffer(10, [(2,)], continuous_size=1, discrete_branches=(3,), streams=1)
    with pytest.raises(ValueError, match=r"field rewards has shape \[2\] per transition, this behavior needs \[1\]"):
        fewer_streams.load(replay.state())
