"""POCA through the public wiring, on built-in Simple with groups of three: a run writes
POCA's TensorBoard tags, exports the decentralised actor as PPO's ONNX model, ``--resume``
continues at the checkpoint's step with the critic it saved, ``--initialize-from`` starts from
its weights; and the trainer's own pieces (group reward report, checkpoint round trip)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
import torch

from orchestration import train
from processors import AgentManager
from stats import StatsReporter, StatsWriter
from tests.steps import NO_TERMINALS, action_info, behavior_spec, drain, fake_policy, vector_steps, vector_terminals
from trainers.files.checkpoints import load_state
from trainers.poca.algorithm import POCA
from trainers.poca.networks import GroupObservations
from trainers.reward_signals.base import ExtrinsicReward
from trainers.settings import ExtrinsicSettings, POCASettings, TrainerSettings, structure_run_options


def options_for(tmp_path, max_steps: int, trainer_type: str = "poca", **checkpoint):
    return structure_run_options(
        {
            "behaviors": {
                "Simple": {
                    "trainer_type": trainer_type,
                    "hyperparameters": {"batch_size": 32, "buffer_size": 128, "learning_rate": 0.003},
                    "network_settings": {"hidden_units": 16, "num_layers": 1, "normalize": True},
                    "max_steps": max_steps,
                    "summary_freq": 200,
                    "checkpoint_interval": 400,
                    "threaded": False,
                }
            },
            "environment_parameters": {"num_agents": 3, "continuous_size": 1, "discrete_branches": 1},
            "env_settings": {"env_path": "builtin:Simple", "seed": 2},
            "checkpoint_settings": {"results_dir": str(tmp_path), "run_id": trainer_type, **checkpoint},
        }
    )


class Tags(StatsWriter):
    def __init__(self) -> None:
        self.tags: set[str] = set()
        self.group_rewards: list[float] = []

    def write_stats(self, category, values, step):
        self.tags.update(values)
        if "Environment/Group Cumulative Reward" in values:
            self.group_rewards.append(values["Environment/Group Cumulative Reward"].mean)


def onnx_signature(path) -> tuple[list, list]:
    model = onnx.load(str(path))

    def shapes(values):
        return sorted((v.name, [d.dim_value or d.dim_param for d in v.type.tensor_type.shape.dim]) for v in values)

    return shapes(model.graph.input), shapes(model.graph.output)


@pytest.mark.slow
def test_train_export_resume_and_initialize_from(tmp_path):
    tags = Tags()
    outcome = train(options_for(tmp_path, 800), writers=[tags], console=False)
    assert outcome.steps["Simple"] >= 800
    assert {
        "Losses/Policy Loss",
        "Losses/Value Loss",
        "Losses/Baseline Loss",
        "Policy/Extrinsic Value Estimate",
        "Policy/Extrinsic Baseline Estimate",
        "Policy/Extrinsic Reward",
        "Environment/Group Cumulative Reward",
        "Environment/Cumulative Reward",
    } <= tags.tags
    assert all(-1.2 < reward < 1.2 for reward in tags.group_rewards)  # a group's success reward is 1.06

    # The exported actor is PPO's: same inputs and outputs as a PPO run of the same behavior.
    train(options_for(tmp_path, 200, trainer_type="ppo"), console=False)
    assert onnx_signature(tmp_path / "poca" / "Simple.onnx") == onnx_signature(tmp_path / "ppo" / "Simple.onnx")

    first = load_state(tmp_path / "poca" / "Simple" / "checkpoint.pt")
    assert first["step"] == outcome.steps["Simple"]
    assert float(first["critic"]["max_members"]) == 3.0  # the counts scale by the largest group seen
    resumed = train(options_for(tmp_path, 1_200, resume=True), console=False)
    assert resumed.steps["Simple"] >= 1_200
    after = load_state(tmp_path / "poca" / "Simple" / "checkpoint.pt")
    assert after["step"] == resumed.steps["Simple"]
    assert not torch.equal(after["critic"]["value_heads.linear.weight"], first["critic"]["value_heads.linear.weight"])

    started = train(options_for(tmp_path, 200, run_id="init", initialize_from="poca"), console=False)
    assert started.steps["Simple"] >= 200


def grouped_trajectories():
    """Agents 1, 2 in group 4: 2 leaves early at step 2; 1 ends with a group reward of 1 at step 3."""
    manager = AgentManager(fake_policy(behavior_spec()), "T?team=0", StatsReporter("T"), 1000, threaded=False)
    manager.add_experiences(vector_steps([1, 2], [0, 0], [0, 0], [4, 4]), NO_TERMINALS, 0, None)
    manager.add_experiences(
        vector_steps([1, 2], [1, 1], [0, 0], [4, 4]), NO_TERMINALS, 0, action_info([1, 2], [[0.1]] * 2)
    )
    terminals = vector_terminals([2], [2], [0.0], group_ids=[4])
    manager.add_experiences(vector_steps([1], [2], [0], [4]), terminals, 0, action_info([1, 2], [[0.1]] * 2))
    terminals = vector_terminals([1], [3], [0.0], group_ids=[4], group_rewards=[1.0])
    manager.add_experiences(vector_steps([], [], []), terminals, 0, action_info([1], [[0.1]]))
    return {t.agent_id: t for t in drain(manager.trajectory_queue)}


def test_group_cumulative_reward_counts_only_agents_there_at_the_end():
    reporter = StatsReporter("T")
    poca = POCA(
        behavior_name="T",
        behavior_spec=behavior_spec(),
        settings=TrainerSettings(trainer_type="poca", hyperparameters=POCASettings(batch_size=2, buffer_size=2)),
        stats_reporter=reporter,
    )
    trajectories = grouped_trajectories()
    assert not trajectories["agent_0-2"].all_group_dones_reached
    assert trajectories["agent_0-1"].all_group_dones_reached
    for trajectory in trajectories.values():
        poca.add(trajectory)
    summary = reporter.write_stats(0)["Environment/Group Cumulative Reward"]
    assert summary.count == 1 and summary.mean == 1.0


def test_checkpoint_state_round_trips():
    settings = TrainerSettings(trainer_type="poca", hyperparameters=POCASettings(batch_size=2, buffer_size=2))

    def build(seed: int) -> POCA:
        return POCA(
            behavior_name="T",
            behavior_spec=behavior_spec(),
            settings=settings,
            stats_reporter=StatsReporter("T"),
            seed=seed,
        )

    trained = build(1)
    for trajectory in grouped_trajectories().values():
        trained.add(trajectory)
    trained.update(10)
    copy = build(2)
    copy.load(trained.state(), weights_only=False)
    obs = [torch.tensor([[0.5, 0.5]])]
    group = GroupObservations(
        [torch.tensor([[[1.0, 1.0]]])],
        torch.tensor([[True]]),
        torch.zeros(1, 1, 1),
        torch.zeros(1, 1, 0, dtype=torch.int64),
    )
    for a, b in ((trained, copy),):
        assert torch.allclose(a.critic.values(obs, group)["extrinsic"], b.critic.values(obs, group)["extrinsic"])
        assert torch.allclose(a.critic.baselines(obs, group)["extrinsic"], b.critic.baselines(obs, group)["extrinsic"])
    assert np.isclose(float(copy.critic.max_members), 2.0)


def test_extrinsic_reward_adds_the_group_reward_and_for_poca_the_mates_rewards():
    """As ML-Agents' ExtrinsicRewardProvider: own + group reward for every trainer; POCA
    (add_groupmate_rewards) also adds the mates' individual rewards of the same step."""
    manager = AgentManager(fake_policy(behavior_spec()), "T?team=0", StatsReporter("T"), 1000, threaded=False)
    manager.add_experiences(vector_steps([1, 2], [0, 0], [0, 0], [4, 4]), NO_TERMINALS, 0, None)
    steps = vector_steps([1, 2], [1, 1], [0.5, 0.25], [4, 4], [2.0, 2.0])
    manager.add_experiences(steps, NO_TERMINALS, 0, action_info([1, 2], [[0.1]] * 2))
    manager.end_episode()
    first = {t.agent_id: t for t in drain(manager.trajectory_queue)}["agent_0-1"]
    settings = ExtrinsicSettings(strength=2.0)
    assert ExtrinsicReward(settings).rewards(first).tolist() == [2 * (0.5 + 2.0)]
    assert ExtrinsicReward(settings, add_groupmate_rewards=True).rewards(first).tolist() == [2 * (0.5 + 2.0 + 0.25)]
