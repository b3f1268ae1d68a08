"""Exact trajectories from AgentProcessor/AgentManager for hand-built step sequences."""

from __future__ import annotations

import numpy as np
import pytest
from mlagents_envs.side_channel.stats_side_channel import StatsAggregationMethod as EnvAggregation

from processors import AgentManager, AgentManagerQueue, AgentProcessor
from stats import StatsReporter
from stats.tags import EPISODE_LENGTH
from tests.steps import (
    NO_TERMINALS,
    action_info,
    behavior_spec,
    decision_steps,
    drain,
    fake_policy,
    terminal_steps,
    vector_steps,
    vector_terminals,
)

BEHAVIOR = "Ball?team=0"


def make_manager(horizon: int = 1000, memory_size: int = 0, spec=None, reporter=None) -> AgentManager:
    spec = spec if spec is not None else behavior_spec()
    return AgentManager(
        fake_policy(spec, memory_size), BEHAVIOR, reporter or StatsReporter("Ball"), horizon, threaded=False
    )


def first_column(trajectory) -> list[float]:
    return trajectory.obs[0][:, 0].tolist()


def test_transitions_pair_action_with_following_reward_and_observation():
    manager = make_manager()
    manager.add_experiences(vector_steps([7], [0.0], [0.5]), NO_TERMINALS, 0, None)
    manager.add_experiences(vector_steps([7], [1.0], [1.0]), NO_TERMINALS, 0, action_info([7], [[0.1]]))
    manager.add_experiences(vector_steps([7], [2.0], [2.0]), NO_TERMINALS, 0, action_info([7], [[0.2]]))
    manager.add_experiences(vector_steps([], [], []), vector_terminals([7], [3.0], [3.0]), 0, action_info([7], [[0.3]]))
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.agent_id == "agent_0-7"
    assert trajectory.behavior_id == BEHAVIOR
    assert first_column(trajectory) == [0.0, 1.0, 2.0]
    assert trajectory.rewards.tolist() == [1.0, 2.0, 3.0]  # the first step's 0.5 belongs to nobody
    np.testing.assert_allclose(trajectory.continuous_actions[:, 0], [0.1, 0.2, 0.3])
    np.testing.assert_allclose(trajectory.continuous_log_probs[:, 0], [-0.1, -0.2, -0.3])
    np.testing.assert_allclose(trajectory.prev_continuous_actions[:, 0], [0.0, 0.1, 0.2])
    assert trajectory.done.tolist() == [False, False, True]
    assert trajectory.interrupted.tolist() == [False, False, False]
    assert trajectory.terminated and trajectory.done_reached
    assert trajectory.next_obs[0].tolist() == [3.0, 3.0]
    assert len(trajectory) == 3


def run_steps(manager: AgentProcessor, n: int, agent: int = 1, start: int = 0, worker: int = 0) -> None:
    """``n`` decision steps of one agent with obs = reward = step index, acting 10*index."""
    for t in range(start, start + n):
        previous = None if t == start else action_info([agent], [[10.0 * (t - 1)]])
        manager.add_experiences(vector_steps([agent], [float(t)], [float(t)]), NO_TERMINALS, worker, previous)


def test_time_horizon_cuts_and_next_obs_is_the_step_that_completed_it():
    manager = make_manager(horizon=3)
    run_steps(manager, 8)  # transitions t=0..6 complete at steps 1..7
    first, second = drain(manager.trajectory_queue)
    assert first_column(first) == [0.0, 1.0, 2.0]
    assert first.next_obs[0][0] == 3.0
    assert not first.done_reached and not first.terminated
    assert first_column(second) == [3.0, 4.0, 5.0]
    assert second.rewards.tolist() == [4.0, 5.0, 6.0]
    assert second.next_obs[0][0] == 6.0
    np.testing.assert_allclose(second.prev_continuous_actions[:, 0], [20.0, 30.0, 40.0])


def test_terminal_as_horizon_th_transition_gives_one_done_trajectory():
    manager = make_manager(horizon=3)
    run_steps(manager, 3)  # two transitions stored, third pending
    manager.add_experiences(
        vector_steps([], [], []), vector_terminals([1], [9.0], [5.0]), 0, action_info([1], [[20.0]])
    )
    (trajectory,) = drain(manager.trajectory_queue)
    assert len(trajectory) == 3
    assert trajectory.done.tolist() == [False, False, True]
    assert trajectory.rewards.tolist() == [1.0, 2.0, 5.0]


def test_terminal_one_step_after_cut_gives_trajectory_of_length_one():
    manager = make_manager(horizon=3)
    run_steps(manager, 4)  # three transitions: published at step 3
    manager.add_experiences(
        vector_steps([], [], []), vector_terminals([1], [9.0], [5.0]), 0, action_info([1], [[30.0]])
    )
    cut, last = drain(manager.trajectory_queue)
    assert len(cut) == 3 and not cut.done_reached
    assert len(last) == 1 and last.done.tolist() == [True]
    assert first_column(last) == [3.0]
    assert last.next_obs[0][0] == 9.0


def test_interrupted_terminal_passes_through_and_is_not_terminated():
    manager = make_manager()
    run_steps(manager, 2)
    manager.add_experiences(
        vector_steps([], [], []), vector_terminals([1], [9.0], [1.0], interrupted=[True]), 0, action_info([1], [[10.0]])
    )
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.done.tolist() == [False, True]
    assert trajectory.interrupted.tolist() == [False, True]
    assert trajectory.done_reached and not trajectory.terminated


def test_agent_terminating_and_reappearing_in_same_step_starts_new_episode():
    manager = make_manager()
    run_steps(manager, 2)
    manager.add_experiences(
        vector_steps([1], [100.0], [7.0]), vector_terminals([1], [9.0], [5.0]), 0, action_info([1], [[10.0]])
    )
    (ended,) = drain(manager.trajectory_queue)
    assert ended.rewards.tolist() == [1.0, 5.0]  # the decision step's 7.0 starts nothing
    manager.add_experiences(vector_steps([1], [101.0], [2.0]), NO_TERMINALS, 0, action_info([1], [[0.5]]))
    manager.end_episode()
    (fresh,) = drain(manager.trajectory_queue)
    assert first_column(fresh) == [100.0]
    assert fresh.rewards.tolist() == [2.0]
    assert fresh.prev_continuous_actions.tolist() == [[0.0]]  # previous action reset with the episode


def test_first_step_and_steps_without_action_add_nothing():
    manager = make_manager()
    manager.add_experiences(vector_steps([1, 2], [0.0, 0.0], [1.0, 1.0]), NO_TERMINALS, 0, None)
    # Agent 2 is not acted for: its next appearance records no transition.
    manager.add_experiences(vector_steps([1, 2], [1.0, 1.0], [2.0, 2.0]), NO_TERMINALS, 0, action_info([1], [[0.1]]))
    manager.add_experiences(
        vector_steps([], [], []),
        vector_terminals([1, 2], [2.0, 2.0], [3.0, 3.0]),
        0,
        action_info([1, 2], [[0.2], [0.3]]),
    )
    one, two = sorted(drain(manager.trajectory_queue), key=lambda t: t.agent_id)
    assert one.rewards.tolist() == [2.0, 3.0]
    assert two.rewards.tolist() == [3.0]
    assert first_column(two) == [1.0]


def test_agent_that_never_acted_terminates_without_trace():
    reporter = StatsReporter("Ball")
    manager = make_manager(reporter=reporter)
    manager.add_experiences(vector_steps([5], [0.0], [0.0]), NO_TERMINALS, 0, None)
    manager.add_experiences(vector_steps([], [], []), vector_terminals([5, 6], [1.0, 1.0], [1.0, 1.0]), 0, None)
    assert drain(manager.trajectory_queue) == []
    assert manager.live_agents == 0
    assert reporter.get_stats_summaries("Environment/Cumulative Reward").count == 0


def test_workers_with_equal_local_ids_never_mix():
    manager = make_manager()
    manager.add_experiences(vector_steps([0], [0.0], [0.0]), NO_TERMINALS, 0, None)
    manager.add_experiences(vector_steps([0], [100.0], [0.0]), NO_TERMINALS, 1, None)
    manager.add_experiences(vector_steps([0], [1.0], [1.0]), NO_TERMINALS, 0, action_info([0], [[0.5]]))
    manager.add_experiences(vector_steps([0], [101.0], [50.0]), NO_TERMINALS, 1, action_info([0], [[-0.5]]))
    manager.end_episode()
    by_id = {t.agent_id: t for t in drain(manager.trajectory_queue)}
    assert set(by_id) == {"agent_0-0", "agent_1-0"}
    assert first_column(by_id["agent_0-0"]) == [0.0] and by_id["agent_0-0"].rewards.tolist() == [1.0]
    assert first_column(by_id["agent_1-0"]) == [100.0] and by_id["agent_1-0"].rewards.tolist() == [50.0]
    assert by_id["agent_1-0"].continuous_actions.tolist() == [[-0.5]]


def test_previous_action_is_each_agents_own():
    manager = make_manager(spec=behavior_spec(continuous=0, branches=(3, 2)))
    ids = [1, 2]
    manager.add_experiences(vector_steps(ids, [0, 0], [0, 0]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        vector_steps(ids, [1, 1], [0, 0]), NO_TERMINALS, 0, action_info(ids, discrete=[[1, 0], [2, 1]])
    )
    manager.add_experiences(
        vector_steps(ids, [2, 2], [0, 0]), NO_TERMINALS, 0, action_info(ids, discrete=[[0, 1], [1, 1]])
    )
    cont, disc = manager.get_previous_actions(0, np.array([2, 1, 99]))
    assert disc.tolist() == [[1, 1], [0, 1], [0, 0]]
    assert cont.shape == (3, 0)
    manager.end_episode()
    one, two = sorted(drain(manager.trajectory_queue), key=lambda t: t.agent_id)
    assert one.prev_discrete_actions.tolist() == [[0, 0], [1, 0]]
    assert two.prev_discrete_actions.tolist() == [[0, 0], [2, 1]]
    assert two.discrete_log_probs.tolist() == [[-2.0, -1.0], [-1.0, -1.0]]


def test_memory_stored_is_the_memory_fed_with_the_observation():
    manager = make_manager(memory_size=2)
    manager.add_experiences(vector_steps([1], [0.0], [0.0]), NO_TERMINALS, 0, None)
    assert manager.get_memories(0, np.array([1])).tolist() == [[0.0, 0.0]]
    manager.add_experiences(
        vector_steps([1], [1.0], [1.0]), NO_TERMINALS, 0, action_info([1], [[0.0]], memories=[[1, 2]])
    )
    assert manager.get_memories(0, np.array([1, 3])).tolist() == [[1.0, 2.0], [0.0, 0.0]]
    manager.add_experiences(
        vector_steps([1], [2.0], [1.0]), NO_TERMINALS, 0, action_info([1], [[0.0]], memories=[[3, 4]])
    )
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.memories.tolist() == [[0.0, 0.0], [1.0, 2.0]]


def test_action_mask_is_stored_as_allowed_from_the_deciding_step():
    spec = behavior_spec(continuous=0, branches=(3,))
    manager = make_manager(spec=spec)
    obs = [np.zeros((1, 2), np.float32)]
    manager.add_experiences(decision_steps([1], obs, [0.0], masks=[[[False, True, False]]]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        decision_steps([1], obs, [1.0], masks=[[[True, False, False]]]),
        NO_TERMINALS,
        0,
        action_info([1], discrete=[[0]]),
    )
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.action_masks.tolist() == [[True, False, True]]


def test_visual_observations_keep_dtype_and_shape():
    spec = behavior_spec(obs_shapes=((4, 4, 3), (2,)))
    manager = make_manager(spec=spec)
    images = np.arange(2 * 48, dtype=np.uint8).reshape(2, 4, 4, 3)
    vectors = np.zeros((2, 2), np.float32)
    manager.add_experiences(decision_steps([1, 2], [images, vectors], [0, 0]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        decision_steps([1, 2], [images[::-1], vectors], [0, 0]), NO_TERMINALS, 0, action_info([1, 2], [[0], [0]])
    )
    manager.end_episode()
    one, _ = sorted(drain(manager.trajectory_queue), key=lambda t: t.agent_id)
    assert one.obs[0].dtype == np.uint8 and one.obs[0].shape == (1, 4, 4, 3)
    np.testing.assert_array_equal(one.obs[0][0], images[0])
    np.testing.assert_array_equal(one.next_obs[0], images[1])


def test_long_episode_without_horizon_keeps_every_step():
    manager = make_manager(horizon=10**9)
    run_steps(manager, 301)
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    assert first_column(trajectory) == [float(t) for t in range(300)]
    assert trajectory.rewards.tolist() == [float(t) for t in range(1, 301)]
    assert trajectory.done.tolist() == [False] * 299 + [True]
    assert trajectory.interrupted[-1]


def test_end_episode_publishes_collected_steps_as_interrupted_and_reports_them():
    reporter = StatsReporter("Ball")
    manager = make_manager(horizon=4, reporter=reporter)
    run_steps(manager, 6)  # 5 transitions: one cut of 4, one pending transition
    manager.end_episode()
    cut, rest = drain(manager.trajectory_queue)
    assert len(cut) == 4 and len(rest) == 1
    assert rest.done.tolist() == [True] and rest.interrupted.tolist() == [True]
    assert rest.next_obs[0][0] == 5.0
    assert manager.live_agents == 0
    assert reporter.get_stats_summaries("Environment/Cumulative Reward").sum == pytest.approx(1 + 2 + 3 + 4 + 5)
    assert reporter.get_stats_summaries("Environment/Episode Length").mean == 5
    # After the reset the same id is a new agent: its first step adds nothing.
    manager.add_experiences(vector_steps([1], [0.0], [9.0]), NO_TERMINALS, 0, action_info([1], [[1.0]]))
    manager.end_episode()
    assert drain(manager.trajectory_queue) == []


def test_episode_stats_match_ml_agents():
    reporter = StatsReporter("Ball")
    manager = make_manager(horizon=2, reporter=reporter)
    run_steps(manager, 4)  # three transitions, rewards 1, 2, 3
    manager.add_experiences(
        vector_steps([], [], []), vector_terminals([1], [0.0], [-1.0]), 0, action_info([1], [[0.0]])
    )
    reward = reporter.get_stats_summaries("Environment/Cumulative Reward")
    length = reporter.get_stats_summaries("Environment/Episode Length")
    assert (reward.count, reward.mean) == (1, pytest.approx(5.0))
    assert (length.count, length.mean) == (1, 3)  # four transitions, the terminal one not counted


def test_entropy_reported_per_acting_agent():
    reporter = StatsReporter("Ball")
    manager = make_manager(reporter=reporter)
    manager.add_experiences(vector_steps([1, 2], [0, 0], [0, 0]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        vector_steps([1, 2], [0, 0], [0, 0]), NO_TERMINALS, 0, action_info([1, 2], [[0], [0]], entropy=[1.0, 3.0])
    )
    entropy = reporter.get_stats_summaries("Policy/Entropy")
    assert (entropy.count, entropy.mean) == (2, 2.0)


def test_environment_stats_most_recent_only_from_worker_zero():
    reporter = StatsReporter("Ball")
    manager = make_manager(reporter=reporter)
    stats = {
        "Custom/Avg": [(1.0, EnvAggregation.AVERAGE), (3.0, EnvAggregation.AVERAGE)],
        "Custom/Last": [(5.0, EnvAggregation.MOST_RECENT)],
        "Custom/Sum": [(2.0, EnvAggregation.SUM)],
    }
    manager.record_environment_stats(stats, worker_id=0)
    manager.record_environment_stats(
        {
            "Custom/Avg": [(5.0, EnvAggregation.AVERAGE)],
            "Custom/Last": [(99.0, EnvAggregation.MOST_RECENT)],
            "Custom/Sum": [(4.0, EnvAggregation.SUM)],
        },
        worker_id=1,
    )
    assert reporter.get_stats_summaries("Custom/Avg").mean == pytest.approx(3.0)
    assert reporter.get_stats_summaries("Custom/Last").mean == 5.0
    assert reporter.get_stats_summaries("Custom/Sum").sum == 6.0


def test_fresh_ids_every_episode_hold_constant_memory():
    """A real build gives each episode a new id and never reuses one: state must be freed."""
    manager = make_manager(horizon=64)
    agents = 8
    ids = np.arange(agents)
    next_id = agents
    manager.add_experiences(vector_steps(ids, np.zeros(agents), np.zeros(agents)), NO_TERMINALS, 0, None)
    episodes = 0
    capacity_after_warmup = None
    for step in range(3000):
        ending = ids[step % agents :: agents] if step % 3 == 0 else ids[:0]
        # Agents ending now are replaced by fresh ids in the same step's decision steps.
        survivors = ids[~np.isin(ids, ending)]
        fresh = np.arange(next_id, next_id + ending.shape[0])
        next_id += ending.shape[0]
        episodes += ending.shape[0]
        acted = action_info(ids, np.zeros((agents, 1)))
        deciding = np.concatenate([survivors, fresh])
        manager.add_experiences(
            vector_steps(deciding, np.zeros(agents), np.ones(agents)),
            vector_terminals(ending, np.zeros(ending.shape[0]), np.ones(ending.shape[0])),
            0,
            acted,
        )
        ids = deciding
        drain(manager.trajectory_queue)
        if step == 100:
            capacity_after_warmup = manager._table.slot_capacity
    assert episodes >= 1000
    assert manager.live_agents == agents
    assert manager._table.slot_capacity == capacity_after_warmup <= 16


def test_discard_worker_forgets_only_that_worker():
    manager = make_manager()
    for worker in (0, 1):
        manager.add_experiences(vector_steps([3], [0.0], [0.0]), NO_TERMINALS, worker, None)
        manager.add_experiences(vector_steps([3], [1.0], [1.0]), NO_TERMINALS, worker, action_info([3], [[0.0]]))
    manager.discard_worker(1)
    # The restarted worker numbers its agents from 0 again: id 3 is a stranger now.
    manager.add_experiences(vector_steps([3], [5.0], [5.0]), NO_TERMINALS, 1, action_info([3], [[0.0]]))
    manager.end_episode()
    (kept,) = drain(manager.trajectory_queue)
    assert kept.agent_id == "agent_0-3"


def test_every_published_queue_receives_every_trajectory():
    processor = AgentProcessor(fake_policy(behavior_spec()), BEHAVIOR, StatsReporter("Ball"), 2)
    queues = [AgentManagerQueue(BEHAVIOR), AgentManagerQueue(BEHAVIOR)]
    for q in queues:
        processor.publish_trajectory_queue(q)
    run_steps(processor, 5)
    assert [len(drain(q)) for q in queues] == [2, 2]


def test_threaded_manager_has_bounded_trajectory_queue_and_unbounded_policy_queue():
    threaded = AgentManager(fake_policy(behavior_spec()), BEHAVIOR, StatsReporter("Ball"), 64, threaded=True)
    serial = make_manager()
    assert threaded.trajectory_queue.maxlen == 20
    assert serial.trajectory_queue.maxlen == 0
    assert threaded.policy_queue.maxlen == 0
    assert threaded.trajectory_queue.behavior_id == BEHAVIOR


def test_invalid_time_horizon_is_rejected():
    with pytest.raises(ValueError, match="max_trajectory_length"):
        make_manager(horizon=0)


def test_terminal_for_agent_without_action_for_last_decision_ends_interrupted():
    manager = make_manager()
    run_steps(manager, 3)  # two transitions, obs 2.0 pending without an action yet
    manager.add_experiences(vector_steps([], [], []), vector_terminals([1], [9.0], [5.0]), 0, None)
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.rewards.tolist() == [1.0, 2.0]
    assert trajectory.done.tolist() == [False, True] and trajectory.interrupted[-1]
    assert trajectory.next_obs[0][0] == 2.0


def test_experience_views_match_arrays():
    manager = make_manager()
    run_steps(manager, 3)
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    steps = list(trajectory.experiences())
    assert [s.reward for s in steps] == [1.0, 2.0]
    assert steps[1].obs[0].tolist() == [1.0, 1.0]
    assert steps[1].prev_continuous_action.tolist() == [0.0]
    assert steps[1].done and steps[1].interrupted
    assert not steps[0].done


def test_grouped_agent_records_group_id_of_its_decision_and_following_group_reward():
    manager = make_manager()
    for t, (group, group_reward) in enumerate([(3, 0.0), (3, 0.5), (4, 0.25)]):
        previous = None if t == 0 else action_info([1], [[float(t)]])
        steps = vector_steps([1], [float(t)], [float(t)], group_ids=[group], group_rewards=[group_reward])
        manager.add_experiences(steps, NO_TERMINALS, 0, previous)
    manager.end_episode()
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.group_id.dtype == np.int32 and trajectory.group_rewards.dtype == np.float32
    assert trajectory.group_id.tolist() == [3, 3]  # the group of the step where the agent saw obs[t]
    assert trajectory.group_rewards.tolist() == [0.5, 0.25]  # what came with rewards[t]
    assert trajectory.rewards.tolist() == [1.0, 2.0]


def test_group_reward_arriving_with_terminal_step():
    manager = make_manager(horizon=2)
    manager.add_experiences(vector_steps([5], [0.0], [0.0], group_ids=[2]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        vector_steps([5], [1.0], [0.0], group_ids=[2], group_rewards=[0.0]), NO_TERMINALS, 0, action_info([5], [[0.0]])
    )
    manager.add_experiences(
        vector_steps([], [], []),
        vector_terminals([5], [2.0], [1.0], group_ids=[2], group_rewards=[10.0]),
        0,
        action_info([5], [[0.0]]),
    )
    (trajectory,) = drain(manager.trajectory_queue)
    assert trajectory.done.tolist() == [False, True]
    assert trajectory.group_id.tolist() == [2, 2]
    assert trajectory.group_rewards.tolist() == [0.0, 10.0]
    assert trajectory.experience(1).group_reward == 10.0 and trajectory.experience(1).group_id == 2


def test_ungrouped_agents_get_zeros_beside_grouped_ones_and_alone():
    alone = make_manager()
    run_steps(alone, 3)
    alone.end_episode()
    (trajectory,) = drain(alone.trajectory_queue)
    assert trajectory.group_id.tolist() == [0, 0] and trajectory.group_rewards.tolist() == [0.0, 0.0]
    assert trajectory.group_id.dtype == np.int32 and trajectory.group_rewards.dtype == np.float32

    for agents in (2, 6):  # the per-agent path and the batched path
        manager = make_manager()
        ids = list(range(agents))
        groups = [7 if i == 0 else 0 for i in ids]
        for t in range(3):
            previous = None if t == 0 else action_info(ids, [[0.0]] * agents)
            group_rewards = [float(t) if i == 0 else 0.0 for i in ids]
            steps = vector_steps(ids, [float(t)] * agents, [1.0] * agents, groups, group_rewards)
            manager.add_experiences(steps, NO_TERMINALS, 0, previous)
        manager.end_episode()
        by_agent = {tr.agent_id: tr for tr in drain(manager.trajectory_queue)}
        assert by_agent["agent_0-0"].group_id.tolist() == [7, 7]
        assert by_agent["agent_0-0"].group_rewards.tolist() == [1.0, 2.0]
        for i in ids[1:]:
            assert by_agent[f"agent_0-{i}"].group_id.tolist() == [0, 0]
            assert by_agent[f"agent_0-{i}"].group_rewards.tolist() == [0.0, 0.0]


def test_group_joined_mid_trajectory_keeps_earlier_steps_ungrouped():
    for agents in (1, 6):
        manager = make_manager()
        ids = list(range(agents))
        for t in range(4):
            previous = None if t == 0 else action_info(ids, [[0.0]] * agents)
            group, group_reward = (0, 0.0) if t < 2 else (9, 0.5)
            steps = vector_steps(ids, [float(t)] * agents, [1.0] * agents, [group] * agents, [group_reward] * agents)
            manager.add_experiences(steps, NO_TERMINALS, 0, previous)
        manager.end_episode()
        for trajectory in drain(manager.trajectory_queue):
            assert trajectory.group_id.tolist() == [0, 0, 9]
            assert trajectory.group_rewards.tolist() == [0.0, 0.5, 0.5]


def _random_scene(seed: int, steps: int = 40) -> list[tuple]:
    """A few agents of one worker: some decide, some skip a step, some end (interrupted or
    not, acted or not) and come back under fresh ids, in groups or alone, with masks, memories
    and hybrid actions; each step with the ActionInfo of the previous step's decisions."""
    rng = np.random.default_rng(seed)
    live, fresh, decided = [0, 1, 2], 3, []
    sequence = []
    for t in range(steps):
        ending = [i for i in live if rng.random() < 0.15]
        deciding = [i for i in live if i not in ending and rng.random() < 0.85]
        joining = list(range(fresh, fresh + len(ending)))
        fresh += len(joining)
        deciding += joining
        live = [i for i in live if i not in ending] + joining
        values = rng.normal(size=len(deciding)).astype(np.float32)
        masks = [rng.random((len(deciding), 3)) < 0.8]
        groups = [int(rng.integers(0, 3)) for _ in deciding]
        decision = decision_steps(
            deciding,
            [np.repeat(values.reshape(-1, 1), 2, axis=1)],
            rng.normal(size=len(deciding)),
            masks=masks,
            group_ids=groups,
            group_rewards=rng.normal(size=len(deciding)),
        )
        terminal = terminal_steps(
            ending,
            [np.full((len(ending), 2), float(t), np.float32)],
            rng.normal(size=len(ending)),
            rng.random(len(ending)) < 0.3,
            [int(rng.integers(0, 3)) for _ in ending],
            rng.normal(size=len(ending)),
        )
        previous = None
        if decided:
            n = len(decided)
            previous = action_info(
                decided,
                rng.normal(size=(n, 1)).tolist(),
                rng.integers(0, 3, size=(n, 1)).tolist(),
                rng.normal(size=(n, 2)).tolist(),
                rng.random(n).tolist(),
            )
        sequence.append((decision, terminal, previous))
        decided = deciding
    return sequence


class _ListedStats(StatsReporter):
    """Every stat added, in order, as (key, values)."""

    def __init__(self) -> None:
        super().__init__("Ball")
        self.rows: list[tuple[str, list[float]]] = []

    def add_stat(self, key, value, aggregation=None) -> None:
        self.rows.append((key, [float(value)]))

    def add_stats(self, key, values, aggregation=None) -> None:
        self.rows.append((key, np.asarray(values, np.float64).reshape(-1).tolist()))


@pytest.mark.parametrize("seed", range(12))
def test_the_few_agent_and_batched_recording_paths_give_the_same_trajectories(monkeypatch, seed):
    """The processor records a handful of agents one by one (cheaper than array operations
    for so few) and more in batches: both must give the same trajectories, field by field,
    and report the same episodes and entropies."""
    import processors.agent_processor as agent_processor

    spec = behavior_spec(continuous=1, branches=(3,))
    published, reported = [], []
    for few_up_to in (0, 1 << 20):  # every step batched; every step one agent at a time
        monkeypatch.setattr(agent_processor, "_SMALL_BATCH", few_up_to)
        stats = _ListedStats()
        manager = make_manager(horizon=3, memory_size=2, spec=spec, reporter=stats)
        for decision, terminal, previous in _random_scene(seed):
            manager.add_experiences(decision, terminal, 0, previous)
        manager.end_episode()
        published.append(drain(manager.trajectory_queue))
        reported.append(stats.rows)
    assert reported[0] == reported[1] and any(key == EPISODE_LENGTH for key, _ in reported[0])
    batched, one_by_one = published
    assert len(batched) == len(one_by_one) > 10
    assert any(t.groupmates is not None for t in batched) and any(not t.done_reached for t in batched)
    for a, b in zip(batched, one_by_one, strict=True):
        assert (a.agent_id, a.episode_start, a.length) == (b.agent_id, b.episode_start, b.length)
        for name in ("obs", "next_obs"):
            for x, y in zip(getattr(a, name), getattr(b, name), strict=True):
                np.testing.assert_array_equal(x, y)
        for name in (
            "rewards",
            "done",
            "interrupted",
            "continuous_actions",
            "discrete_actions",
            "continuous_log_probs",
            "discrete_log_probs",
            "action_masks",
            "prev_continuous_actions",
            "prev_discrete_actions",
            "memories",
            "group_id",
            "group_rewards",
        ):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
        assert (a.groupmates is None) == (b.groupmates is None)
        if a.groupmates is not None and b.groupmates is not None:
            for name in ("present", "continuous_actions", "discrete_actions", "rewards", "done"):
                np.testing.assert_array_equal(getattr(a.groupmates, name), getattr(b.groupmates, name), err_msg=name)
            for name in ("obs", "next_obs"):
                for x, y in zip(getattr(a.groupmates, name), getattr(b.groupmates, name), strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=f"groupmates.{name}")
