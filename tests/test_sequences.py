"""Recurrent training's bookkeeping, exactly: the LSTM over sequences, the processor's memories
per agent, trajectories cut into padded sequences, memories at sequence starts, padding that
no loss sees, and the recurrent critic's memory carried between an agent's trajectories."""

from __future__ import annotations

import attrs
import numpy as np
import pytest
import torch

from processors import Trajectory
from stats import StatsReporter
from tests.steps import NO_TERMINALS, action_info, behavior_spec, drain, vector_steps, vector_terminals
from tests.test_agent_processor import make_manager
from trainers.networks.actor_critic import LSTMMemory
from trainers.networks.sequences import CriticMemories, masked_mean
from trainers.ppo.algorithm import PPO
from trainers.ppo.buffer import UpdateBuffer
from trainers.sac.algorithm import SAC
from trainers.sac.replay_buffer import ReplayBuffer
from trainers.settings import (
    MemorySettings,
    NetworkSettings,
    PPOSettings,
    SACSettings,
    TrainerSettings,
)

SPEC = behavior_spec(obs_shapes=((3,),), continuous=2, branches=(3,))
MEMORY = MemorySettings(memory_size=8, sequence_length=4)


# ---------------------------------------------------------------- the LSTM


def test_a_sequence_in_one_call_equals_stepping_it_with_the_memory_fed_back():
    lstm = LSTMMemory(5, 6, generator=torch.Generator().manual_seed(0))
    x = torch.randn(2 * 4, 5, generator=torch.Generator().manual_seed(1))
    start = torch.randn(2, 6, generator=torch.Generator().manual_seed(2))
    out, end = lstm(x, start, sequence_length=4)
    assert out.shape == (8, 3) and end.shape == (2, 6)
    memory = start
    stepped = []
    for t in range(4):
        h, memory = lstm(x.view(2, 4, 5)[:, t], memory, sequence_length=1)
        stepped.append(h)
    torch.testing.assert_close(torch.stack(stepped, dim=1).reshape(8, 3), out)
    torch.testing.assert_close(memory, end)
    # the memory is (hidden, cell): the output at a sequence's last step is its hidden half
    torch.testing.assert_close(out.view(2, 4, 3)[:, -1], end[:, :3])


def test_lstm_starts_as_mlagents_with_a_forget_bias_of_one():
    lstm = LSTMMemory(5, 6, generator=torch.Generator().manual_seed(0))
    for name in ("bias_ih_l0", "bias_hh_l0"):
        gates = getattr(lstm.lstm, name).detach().view(4, 3)
        assert gates[1].tolist() == [1.0] * 3 and not gates[[0, 2, 3]].any()
    with pytest.raises(ValueError, match="even and > 0"):
        LSTMMemory(5, 7)


# ---------------------------------------------------------------- the processor


def test_memories_restart_from_zeros_for_a_new_episode_and_a_restarted_worker():
    manager = make_manager(memory_size=2)
    manager.add_experiences(vector_steps([1, 2], [0.0, 0.0], [0.0, 0.0]), NO_TERMINALS, 0, None)
    memories = [[1.0, 1.0], [2.0, 2.0]]
    manager.add_experiences(
        vector_steps([1, 2], [1.0, 1.0], [0.0, 0.0]),
        NO_TERMINALS,
        0,
        action_info([1, 2], [[0.0]] * 2, memories=memories),
    )
    assert manager.get_memories(0, np.array([1, 2])).tolist() == memories
    # agent 1's episode ends and the id comes back: a new episode, from zeros
    manager.add_experiences(
        vector_steps([1, 2], [2.0, 2.0], [0.0, 0.0]),
        vector_terminals([1], [2.0], [1.0]),
        0,
        action_info([1, 2], [[0.0]] * 2, memories=[[3.0, 3.0], [4.0, 4.0]]),
    )
    assert manager.get_memories(0, np.array([1, 2])).tolist() == [[0.0, 0.0], [4.0, 4.0]]
    # the worker restarts: its agents (ids from 0 again) never inherit the old process's memories
    manager.discard_worker(0)
    assert manager.get_memories(0, np.array([1, 2])).tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_only_an_episodes_first_trajectory_starts_it():
    manager = make_manager(horizon=2, memory_size=2)
    previous = None
    for t in range(5):
        terminal = vector_terminals([1], [float(t)], [1.0]) if t == 4 else NO_TERMINALS
        decision = vector_steps([1] if t < 4 else [], [float(t)] if t < 4 else [], [1.0] if t < 4 else [])
        manager.add_experiences(decision, terminal, 0, previous)
        previous = action_info([1], [[0.0]], memories=[[t + 1.0, 0.0]])
    manager.add_experiences(vector_steps([1], [9.0], [0.0]), NO_TERMINALS, 0, None)  # a new episode
    manager.add_experiences(
        vector_steps([1], [9.0], [0.0]), NO_TERMINALS, 0, action_info([1], [[0.0]], memories=[[7.0, 0.0]])
    )
    manager.end_episode()
    trajectories = drain(manager.trajectory_queue)
    assert [(t.length, t.episode_start) for t in trajectories] == [(2, True), (2, False), (1, True)]
    # memories run on across the time-horizon cut: what was fed with each observation
    assert [row[0] for t in trajectories[:2] for row in t.memories.tolist()] == [0.0, 1.0, 2.0, 3.0]


# ---------------------------------------------------------------- the update buffer


def trajectory(
    length: int, *, seed: int = 0, agent: str = "agent_0-1", memories=None, start: bool = False
) -> Trajectory:
    rng = np.random.default_rng(seed)
    return Trajectory(
        behavior_id="B",
        agent_id=agent,
        obs=(rng.standard_normal((length, 3)).astype(np.float32),),
        next_obs=(rng.standard_normal(3).astype(np.float32),),
        rewards=rng.standard_normal(length).astype(np.float32),
        done=np.zeros(length, bool),
        interrupted=np.zeros(length, bool),
        continuous_actions=rng.standard_normal((length, 2)).astype(np.float32),
        discrete_actions=rng.integers(0, 3, (length, 1)).astype(np.int32),
        continuous_log_probs=np.full((length, 2), -1.0, np.float32),
        discrete_log_probs=np.full((length, 1), -1.1, np.float32),
        action_masks=rng.random((length, 3)) > 0.3,
        prev_continuous_actions=np.zeros((length, 2), np.float32),
        prev_discrete_actions=np.zeros((length, 1), np.int32),
        memories=np.asarray(memories if memories is not None else np.zeros((length, 8)), np.float32),
        episode_start=start,
    )


def test_trajectories_are_padded_to_whole_sequences_with_their_start_memories():
    buffer = UpdateBuffer([(3,)], 2, (3,), 1, capacity=4, sequence_length=4, memory_sizes=(2, 3))
    first = trajectory(5, memories=np.arange(10).reshape(5, 2))
    buffer.append(first, np.arange(5.0), np.ones((5, 1)), np.array([[1.0] * 3, [2.0] * 3]))
    buffer.append(
        trajectory(4, seed=1, memories=np.full((4, 2), 9.0)),
        np.full(4, 5.0),
        np.ones((4, 1)),
        np.zeros((1, 3)),
    )
    assert len(buffer) == 12  # 5 -> 8 rows, then 4
    batch = buffer.to_batch(torch.device("cpu"))
    assert batch.loss_masks.tolist() == [True] * 5 + [False] * 3 + [True] * 4
    assert batch.memories[::4].tolist() == [[0.0, 1.0], [8.0, 9.0], [9.0, 9.0]]
    assert batch.critic_memories[::4].tolist() == [[1.0] * 3, [2.0] * 3, [0.0] * 3]
    padding = slice(5, 8)
    assert batch.action_masks[padding].all() and not batch.obs[0][padding].any()
    assert not batch.old_log_probs[padding].any() and not batch.advantages[padding].any()
    real = batch.advantages[batch.loss_masks]  # normalised over real rows only
    assert float(real.mean()) == pytest.approx(0.0, abs=1e-6) and float(real.std(correction=0)) == pytest.approx(
        1.0, abs=1e-4
    )


def test_masked_mean_leaves_padding_out():
    values = torch.tensor([[1.0, 3.0], [5.0, 7.0], [100.0, 100.0]])
    assert float(masked_mean(values, torch.tensor([True, True, False]))) == 4.0
    assert float(masked_mean(values[:, 0], None)) == pytest.approx(106 / 3)


# ---------------------------------------------------------------- PPO


def recurrent_settings(**changes) -> TrainerSettings:
    return attrs.evolve(
        TrainerSettings(
            hyperparameters=PPOSettings(batch_size=8, buffer_size=16, num_epoch=1),
            network_settings=NetworkSettings(hidden_units=16, num_layers=1, normalize=True, memory=MEMORY),
            time_horizon=7,
        ),
        **changes,
    )


def acted_trajectories(policy, lengths: list[int], seed: int = 0) -> list[Trajectory]:
    """One agent's consecutive trajectories, acted step by step with the memory fed back."""
    rng = np.random.default_rng(seed)
    memory = np.zeros((1, policy.memory_size), np.float32)
    out = []
    for k, length in enumerate(lengths):
        obs = rng.standard_normal((length, 3)).astype(np.float32)
        masks = np.ones((length, 3), bool)
        rows = []
        for t in range(length):
            fed = memory
            info = policy.act([obs[t : t + 1]], masks[t : t + 1], np.array([1]), fed)
            rows.append((fed[0], info))
            memory = info.memories
        base = trajectory(length, seed=k, start=k == 0)
        out.append(
            attrs.evolve(
                base,
                obs=(obs,),
                action_masks=masks,
                continuous_actions=np.concatenate([i.continuous_actions for _, i in rows]),
                discrete_actions=np.concatenate([i.discrete_actions for _, i in rows]),
                continuous_log_probs=np.concatenate([i.continuous_log_probs for _, i in rows]),
                discrete_log_probs=np.concatenate([i.discrete_log_probs for _, i in rows]),
                memories=np.stack([m for m, _ in rows]),
            )
        )
    return out


def test_ppo_sequences_replay_the_acting_policy_exactly():
    """Cut into padded sequences that restart from their stored memories, the update sees
    every action with the log-probability it was taken with: ratios of exactly 1 at first
    (no normaliser: adding the trajectories would move it after they were acted)."""
    network = NetworkSettings(hidden_units=16, num_layers=1, memory=MEMORY)
    settings = recurrent_settings(network_settings=network)
    ppo = PPO(behavior_name="B", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("B"))
    for piece in acted_trajectories(ppo.policy, [7, 5, 2]):  # sequences of 4: 7 -> 4+3, 5 -> 4+1, 2
        ppo.add(piece)
    batch = ppo.buffer.to_batch(ppo.device)
    assert len(ppo.buffer) == 20
    with torch.no_grad():
        cont, disc, _ = ppo.policy.actor.evaluate_actions(
            list(batch.obs),
            batch.action_masks,
            batch.continuous_actions,
            batch.discrete_actions,
            memories=batch.memories[::4],
            sequence_length=4,
        )
    real = batch.loss_masks
    torch.testing.assert_close(torch.cat([cont, disc], dim=1)[real], batch.old_log_probs[real], atol=1e-5, rtol=1e-5)


def test_ppo_losses_do_not_see_the_padding():
    ppo = PPO(behavior_name="B", behavior_spec=SPEC, settings=recurrent_settings(), stats_reporter=StatsReporter("B"))
    for piece in acted_trajectories(ppo.policy, [7, 5]):
        ppo.add(piece)
    batch = ppo.buffer.to_batch(ppo.device)
    pad = ~batch.loss_masks
    noisy = batch._replace(
        obs=(batch.obs[0].masked_fill(pad.unsqueeze(1), 50.0),),
        returns=batch.returns.masked_fill(pad.unsqueeze(1), 1e3),
        old_log_probs=batch.old_log_probs.masked_fill(pad.unsqueeze(1), -30.0),
    )
    torch.testing.assert_close(ppo.losses(noisy, 0.01, 0.2), ppo.losses(batch, 0.01, 0.2))


def test_critic_memory_carries_across_an_agents_trajectories_and_restarts_with_an_episode():
    ppo = PPO(behavior_name="B", behavior_spec=SPEC, settings=recurrent_settings(), stats_reporter=StatsReporter("B"))
    critic = ppo.critic
    memories = CriticMemories(critic.memory_size, 4, ppo.device)
    first, second = trajectory(6, seed=1, start=True), trajectory(5, seed=2)
    obs = [torch.as_tensor(np.concatenate([t.obs[0] for t in (first, second)] + [second.next_obs[0][None]]))]
    with torch.no_grad():
        values_1, starts_1 = memories.evaluate(
            first,
            [torch.as_tensor(np.concatenate([first.obs[0], first.next_obs[0][None]]))],
            ppo.critic.values_and_memories,
        )
        values_2, starts_2 = memories.evaluate(
            second,
            [torch.as_tensor(np.concatenate([second.obs[0], second.next_obs[0][None]]))],
            ppo.critic.values_and_memories,
        )
        # one pass over both trajectories' steps, memory carried: the same values
        features, _ = critic.features([obs[0][:11]], torch.zeros(1, critic.memory_size), 11)
        together = critic.value_heads(features)["extrinsic"]
    torch.testing.assert_close(torch.cat([values_1["extrinsic"][:6], values_2["extrinsic"][:5]]), together)
    assert starts_1.shape == (2, critic.memory_size) and not starts_1[0].any() and starts_2[0].any()
    # the same trajectory starting an episode starts from zeros
    with torch.no_grad():
        again, starts = memories.evaluate(
            attrs.evolve(second, episode_start=True),
            [torch.as_tensor(np.concatenate([second.obs[0], second.next_obs[0][None]]))],
            ppo.critic.values_and_memories,
        )
    assert not starts[0].any() and not torch.allclose(again["extrinsic"], values_2["extrinsic"])
    # an episode's end drops the agent's memory
    ended = attrs.evolve(second, done=np.array([False] * 4 + [True]))
    with torch.no_grad():
        memories.evaluate(
            ended,
            [torch.as_tensor(np.concatenate([second.obs[0], second.next_obs[0][None]]))],
            ppo.critic.values_and_memories,
        )
    assert len(memories) == 0


# ---------------------------------------------------------------- SAC


def test_replay_sequences_stay_whole_and_aligned_through_the_ring():
    replay = ReplayBuffer(10, [(3,)], 2, (3,), 1, sequence_length=4, memory_sizes=(8, 8))
    assert replay.capacity == 12  # whole sequences
    for k, length in enumerate([3, 6, 5, 2]):  # 4 + 8 + 8 + 4 rows: the ring wraps
        piece = trajectory(length, seed=k)
        piece = attrs.evolve(piece, obs=(np.full((length, 3), float(k)) + np.arange(length)[:, None] / 10,))
        replay.add(piece, np.zeros((length, 1), np.float32), np.full((-(-length // 4), 8), float(k)))
    batch = replay.sample(40, torch.Generator().manual_seed(0))
    assert batch.loss_masks.shape == (40,)
    for sequence in range(10):
        rows = slice(4 * sequence, 4 * sequence + 4)
        real = batch.loss_masks[rows]
        count = int(real.sum())
        assert count >= 1 and real[:count].all() and not real[count:].any()  # padding only at the end
        values = batch.obs[0][rows][:count, 0]
        owner = float(values[0]).__floor__()
        assert torch.allclose(values - owner, torch.arange(count) / 10 + (values[0] - owner))  # consecutive steps
        assert (batch.critic_memories[rows][0] == owner).all()


def test_sac_recurrent_update_ignores_padding():
    settings = TrainerSettings(
        trainer_type="sac",
        hyperparameters=SACSettings(batch_size=16, buffer_size=64, buffer_init_steps=0),
        network_settings=NetworkSettings(hidden_units=16, num_layers=1, normalize=True, memory=MEMORY),
    )
    sac = SAC(behavior_name="B", behavior_spec=SPEC, settings=settings, stats_reporter=StatsReporter("B"))
    for piece in acted_trajectories(sac.policy, [7, 5, 6]):
        sac.add(piece)
    batch = sac.replay.sample(16, torch.Generator().manual_seed(0))
    assert not batch.loss_masks.all()
    pad = ~batch.loss_masks
    noisy = batch._replace(
        obs=(batch.obs[0].masked_fill(pad.unsqueeze(1), 50.0),),
        next_obs=(batch.next_obs[0].masked_fill(pad.unsqueeze(1), -50.0),),
        rewards=batch.rewards.masked_fill(pad.unsqueeze(1), 1e3),
    )
    noise = sac._noise.get_state()
    clean = sac.losses(batch)
    sac._noise.set_state(noise)
    torch.testing.assert_close(sac.losses(noisy), clean)
    assert sac.update(1000)["Losses/Q1 Loss"] >= 0.0
