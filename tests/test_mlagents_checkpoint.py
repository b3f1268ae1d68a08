"""mlagents-learn checkpoints: ``--initialize-from`` one makes our networks compute what ML-Agents'
computed; what does not fit, and ``--resume`` of an mlagents-learn run, are one clear error.

The fixtures are real mlagents-learn 0.28 checkpoints with ML-Agents' own outputs next to them,
written by ``tests/fixtures/mlagents_0_28/make_checkpoints.py`` (run by hand with ML-Agents
installed; CI only reads the files).
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import attrs
import pytest
import torch
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from orchestration.run import build_run
from stats import StatsReporter
from tests.test_cli import basic_config, one_line_error, run_cli
from tests.test_cli_defects import snapshot
from trainers.exceptions import CheckpointError
from trainers.files import mlagents_checkpoint
from trainers.files.checkpoints import load_state
from trainers.loop.trainer import Trainer
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.settings import (
    ExtrinsicSettings,
    MemorySettings,
    NetworkSettings,
    POCASettings,
    PPOSettings,
    RewardSignalType,
    TrainerSettings,
    load_run_options,
)

FIXTURES = Path(__file__).parent / "fixtures" / "mlagents_0_28"
TOLERANCE = 1e-5


def spec(obs_shapes: list[tuple[int, ...]], continuous: int, branches: tuple[int, ...]) -> BehaviorSpec:
    observations = [
        ObservationSpec(shape, (DimensionProperty.NONE,) * len(shape), ObservationType.DEFAULT, f"obs{i}")
        for i, shape in enumerate(obs_shapes)
    ]
    return BehaviorSpec(observations, ActionSpec(continuous, branches))


# As make_checkpoints.py built each case: (behavior spec, network settings, shared critic).
CASES = {
    "Basic": (spec([(20,)], 0, (3,)), NetworkSettings(hidden_units=20, num_layers=1), False),
    "3DBall": (spec([(8,)], 2, ()), NetworkSettings(hidden_units=24, num_layers=2, normalize=True), False),
    "3DBallShared": (spec([(8,)], 2, ()), NetworkSettings(hidden_units=16, num_layers=1, normalize=True), True),
    "Hybrid": (
        spec([(20, 20, 1), (4,)], 2, (3, 2)),
        NetworkSettings(hidden_units=16, num_layers=1, normalize=True, vis_encode_type="simple"),
        True,
    ),
    "ResNet": (
        spec([(24, 32, 1), (3,)], 1, (3,)),
        NetworkSettings(hidden_units=16, num_layers=1, normalize=True, vis_encode_type="resnet"),
        True,
    ),
    "ZeroLayers": (spec([(6,)], 0, (3,)), NetworkSettings(hidden_units=8, num_layers=0), False),
    "Recurrent": (
        spec([(6,)], 2, (3,)),
        NetworkSettings(hidden_units=16, num_layers=1, memory=MemorySettings(memory_size=16, sequence_length=4)),
        False,
    ),
}


def make_trainer(
    case: str,
    *,
    behavior_spec: BehaviorSpec | None = None,
    shared_critic: bool | None = None,
    seed: int = 3,
    **network_changes,
) -> Trainer:
    """A PPO trainer configured as ``case`` was in mlagents-learn, with ``network_changes``."""
    case_spec, network, shared = CASES[case]
    settings = TrainerSettings(
        hyperparameters=PPOSettings(
            batch_size=16, buffer_size=64, shared_critic=shared if shared_critic is None else shared_critic
        ),
        network_settings=attrs.evolve(network, **network_changes),
        reward_signals={RewardSignalType.EXTRINSIC: ExtrinsicSettings()},
    )
    reporter = StatsReporter(case)
    ppo = PPO(
        behavior_name=case,
        behavior_spec=behavior_spec or case_spec,
        settings=settings,
        stats_reporter=reporter,
        seed=seed,
    )
    return Trainer(behavior_name=case, settings=settings, algorithm=ppo, stats_reporter=reporter, checkpoints=None)


def expected(case: str) -> dict:
    return torch.load(FIXTURES / f"{case}.expected.pt", weights_only=True)


def masks_of(out: dict) -> torch.Tensor | None:
    return out["masks"] if out["masks"].shape[1] else None


def recurrent_of(out: dict) -> dict:
    """The actor's start memories and sequence length of a recurrent case's batch ({} otherwise)."""
    return {"memories": out["memories"], "sequence_length": out["sequence_length"]} if "memories" in out else {}


def mismatch(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    """max |ours - theirs| / (1 + |theirs|): the absolute difference for values up to about 1,
    the relative one for larger values, whose float32 rounding grows with them. (ResNet's
    encoding reaches 9.6 through 13 convolutions and differs from ML-Agents' by 8.6e-6: torch's
    fused SiLU rounds unlike ML-Agents' x * sigmoid(x), and ML-Agents multiplies on one thread.)"""
    assert ours.shape == theirs.shape
    return float(((ours.double() - theirs.double()).abs() / (1 + theirs.double().abs())).max())


# ---------------------------------------------------------------- the layout


@pytest.mark.parametrize("case", list(CASES))
def test_mlagents_checkpoints_load_weights_only_and_are_recognised(case):
    state = load_state(FIXTURES / f"{case}.pt")  # torch.load(weights_only=True)
    assert mlagents_checkpoint.is_mlagents_checkpoint(state)
    assert set(state) >= {"Policy", "global_step", "Optimizer:value_optimizer", "Optimizer:critic"}
    trainer = make_trainer(case)
    assert not mlagents_checkpoint.is_mlagents_checkpoint(trainer.checkpoint_state())


# ---------------------------------------------------------------- the same numbers as ML-Agents


@pytest.mark.parametrize("case", list(CASES))
def test_initialize_from_an_mlagents_checkpoint_computes_what_mlagents_computed(case):
    trainer = make_trainer(case)
    trainer.initialize_from(FIXTURES / f"{case}.pt")
    assert trainer.step == 0
    out = expected(case)
    actor, critic = trainer.algorithm.policy.actor, trainer.algorithm.critic
    obs, masks, recurrent = out["obs"], masks_of(out), recurrent_of(out)
    with torch.no_grad():
        features, memories = actor.features(obs, **recurrent)  # ML-Agents' NetworkBody output
        assert mismatch(features, out["encoding"]) < TOLERANCE
        dist = actor(obs, masks, **recurrent)
        continuous = out.get("continuous_actions", torch.zeros((len(obs[0]), 0)))
        discrete = out.get("discrete_actions", torch.zeros((len(obs[0]), 0), dtype=torch.int64))
        cont_log_probs, disc_log_probs, entropy = actor.evaluate_actions(obs, masks, continuous, discrete, **recurrent)
        assert mismatch(entropy, out["entropy"]) < TOLERANCE
        if out["continuous_size"]:
            assert mismatch(dist.mean, out["mean"]) < TOLERANCE  # the deterministic action
            assert mismatch(cont_log_probs, out["continuous_log_probs"]) < TOLERANCE
        if out["discrete_branches"]:
            # ML-Agents takes log(p + 1e-7); probabilities compare without that offset's blow-up
            assert mismatch(disc_log_probs.exp(), out["discrete_log_probs"].exp()) < TOLERANCE
            for ours, theirs in zip(dist.log_probs, out["probs"]):
                assert mismatch(ours.exp(), theirs) < TOLERANCE
            deterministic = actor.sample(obs, masks, deterministic=True, **recurrent).discrete
            assert torch.equal(deterministic, out["deterministic_discrete"])
        if recurrent:  # the memories after each sequence, the actor's and the critic's own
            assert mismatch(dist.memories, out["memories_out"]) < TOLERANCE
            assert mismatch(memories, out["memories_out"]) < TOLERANCE
            critic_memories = out["critic_memories"]
            values = critic(obs, critic_memories, out["sequence_length"])
            _, critic_out = critic.features(obs, critic_memories, out["sequence_length"])
            assert mismatch(critic_out, out["critic_memories_out"]) < TOLERANCE
        else:
            values = critic(obs)
        assert mismatch(values["extrinsic"], out["values"]["extrinsic"]) < TOLERANCE


@pytest.mark.parametrize("case", ["3DBall", "Hybrid", "ResNet"])
def test_imported_normalisers_continue_as_mlagents_would(case):
    trainer = make_trainer(case)
    trainer.initialize_from(FIXTURES / f"{case}.pt")
    update = expected(case)["normalizer_update"]
    normalizer = trainer.algorithm.policy.actor.encoder.inputs[update["index"]].normalizer
    normalizer.update(update["batch"])
    assert mismatch(normalizer.mean, update["mean"]) < TOLERANCE
    assert mismatch(normalizer.var, update["var"]) < TOLERANCE
    assert int(normalizer.count) == int(update["count"])


@pytest.mark.parametrize(("case", "num_layers"), [("Basic", 0), ("ZeroLayers", 1)])
def test_num_layers_0_and_1_are_the_same_network_in_both_trainers(case, num_layers):
    # ML-Agents builds one hidden layer for num_layers 0 as for 1, in the actor and the critic
    trainer = make_trainer(case, num_layers=num_layers)
    trainer.initialize_from(FIXTURES / f"{case}.pt")
    out = expected(case)
    with torch.no_grad():
        assert mismatch(trainer.algorithm.policy.actor.encoder(out["obs"]), out["encoding"]) < TOLERANCE
        assert mismatch(trainer.algorithm.critic(out["obs"])["extrinsic"], out["values"]["extrinsic"]) < TOLERANCE


def test_a_shared_mlagents_critic_fills_a_separate_one_exactly():
    trainer = make_trainer("3DBallShared", shared_critic=False)
    trainer.initialize_from(FIXTURES / "3DBallShared.pt")
    out = expected("3DBallShared")
    with torch.no_grad():
        values = trainer.algorithm.critic(out["obs"])["extrinsic"]
    assert mismatch(values, out["values"]["extrinsic"]) < TOLERANCE


@pytest.mark.parametrize("case", ["3DBall", "Recurrent"])
def test_a_separate_mlagents_critic_cannot_be_shared_so_its_heads_start_fresh(case, caplog):
    trainer = make_trainer(case, shared_critic=True)
    heads_before = {k: v.clone() for k, v in trainer.algorithm.critic.value_heads.state_dict().items()}
    with caplog.at_level(logging.WARNING):
        trainer.initialize_from(FIXTURES / f"{case}.pt")
    assert f"does not fit behavior {case!r}" in caplog.text and "starts from fresh weights" in caplog.text
    out = expected(case)
    with torch.no_grad():  # the shared critic holds the actor: loading it left the imported actor
        assert mismatch(trainer.algorithm.policy.actor(out["obs"], **recurrent_of(out)).mean, out["mean"]) < TOLERANCE
    for key, tensor in trainer.algorithm.critic.value_heads.state_dict().items():
        assert torch.equal(tensor, heads_before[key])


def test_a_critic_without_our_value_head_starts_fresh_and_the_actor_still_loads(caplog):
    state = load_state(FIXTURES / "Basic.pt")
    critic = dict(state["Optimizer:critic"])
    for name in ("weight", "bias"):
        critic[f"value_heads.value_heads.gail.{name}"] = critic.pop(f"value_heads.value_heads.extrinsic.{name}")
    trainer = make_trainer("Basic")
    target = trainer.algorithm.state()
    critic_before = {k: v.clone() for k, v in target["critic"].items()}
    with caplog.at_level(logging.WARNING):
        imported = mlagents_checkpoint.import_weights(
            {**state, "Optimizer:critic": critic, "global_step": 1500},  # a plain-int step reads too
            target,
            settings=trainer.settings,
            action_spec=trainer.policy.behavior_spec.action_spec,
            path=Path("Basic.pt"),
            behavior="Basic",
        )
    assert "no value head for extrinsic (it has gail)" in caplog.text
    assert all(torch.equal(imported["critic"][k], critic_before[k]) for k in critic_before)
    branch = state["Policy"]["action_model._discrete_distribution.branches.0.bias"]
    assert torch.equal(imported["actor"]["logits_head.bias"], branch)


# ---------------------------------------------------------------- what does not fit


MISMATCHES = [
    # case, trainer changes, what the message must say
    (
        "Basic",
        {"hidden_units": 32},
        [
            "hidden_units: 20 in the checkpoint, 32 configured",
            "Policy network_body._body_endoder.seq_layers.0.weight is (20, 20), encoder.body.layers.0.weight here is (32, 20)",
        ],
    ),
    ("Basic", {"num_layers": 2}, ["num_layers: 1 in the checkpoint, 2 configured"]),
    (
        "Basic",
        {"behavior_spec": spec([(20,)], 0, (4,))},
        [
            "actions: no continuous and discrete branches (3,) in the checkpoint, "
            "no continuous and discrete branches (4,) in the environment",
            "action_model._discrete_distribution.branches.*.weight is (3, 20), logits_head.weight here is (4, 20)",
        ],
    ),
    (
        "Basic",
        {"behavior_spec": spec([(20,)], 2, ())},
        [
            "actions: no continuous and discrete branches (3,) in the checkpoint, "
            "2 continuous and no discrete actions in the environment"
        ],
    ),
    (
        "3DBall",
        {"behavior_spec": spec([(10,)], 2, ())},
        [
            "the encoded observations are 8 wide in the checkpoint, 10 here",
            "network_body.observation_encoder.processors.0.normalizer.running_mean is (8,), "
            "encoder.inputs.0.normalizer.mean here is (10,)",
        ],
    ),
    ("3DBall", {"normalize": False}, ["normalize: true in the checkpoint, false configured"]),
    ("Basic", {"normalize": True}, ["normalize: false in the checkpoint, true configured"]),
    (
        "Hybrid",
        {"vis_encode_type": "fully_connected"},
        ["vis_encode_type: simple in the checkpoint (observation 0), fully_connected configured"],
    ),
    (
        "ResNet",
        {"vis_encode_type": "simple"},
        ["vis_encode_type: resnet in the checkpoint (observation 0), simple configured"],
    ),
    ("ZeroLayers", {"num_layers": 2}, ["num_layers: 1 in the checkpoint, 2 configured"]),
    (
        "Recurrent",
        {"memory": None},
        [
            ": memory_size: 16 in the checkpoint, none (no network_settings.memory) configured; ",
            "Policy network_body.lstm.lstm.weight_ih_l0 (32, 16) has no place in this configuration's network",
        ],
    ),
    (
        "Recurrent",
        {"memory": MemorySettings(memory_size=32, sequence_length=4)},
        [
            ": memory_size: 16 in the checkpoint, 32 configured; ",
            "Policy network_body.lstm.lstm.weight_ih_l0 is (32, 16), memory.lstm.weight_ih_l0 here is (64, 16)",
        ],
    ),
    (
        "Basic",
        {"memory": MemorySettings(memory_size=16, sequence_length=4)},
        [": memory_size: none (no memory) in the checkpoint, 16 configured; "],
    ),
]


def assert_refused_whole(trainer, path: Path, behavior: str, phrases: list[str]) -> None:
    """``initialize_from(path)`` is one one-line CheckpointError naming the file, the behavior
    and each of ``phrases``, and loads nothing."""
    before = {k: v.clone() for k, v in trainer.algorithm.policy.actor.state_dict().items()}
    with pytest.raises(CheckpointError) as error:
        trainer.initialize_from(path)
    message = str(error.value)
    assert message.startswith(f"{path}: cannot initialize behavior {behavior!r} from this mlagents-learn checkpoint: ")
    assert "\n" not in message
    for phrase in phrases:
        assert phrase in message
    for key, tensor in trainer.algorithm.policy.actor.state_dict().items():  # nothing was loaded
        assert torch.equal(tensor, before[key])


@pytest.mark.parametrize(("case", "changes", "phrases"), MISMATCHES)
def test_an_architecture_that_differs_is_one_error_naming_file_behavior_and_difference(case, changes, phrases):
    assert_refused_whole(make_trainer(case, **changes), FIXTURES / f"{case}.pt", case, phrases)


def test_sac_policies_are_named_as_such():
    state = load_state(FIXTURES / "3DBall.pt")
    policy = dict(state["Policy"])
    sigma = policy.pop("action_model._continuous_distribution.log_sigma")
    policy["action_model._continuous_distribution.log_sigma.weight"] = sigma.new_zeros((2, 24))
    policy["action_model._continuous_distribution.log_sigma.bias"] = sigma.new_zeros(2)
    trainer = make_trainer("3DBall")
    with pytest.raises(CheckpointError) as error:
        mlagents_checkpoint.import_weights(
            {**state, "Policy": policy},
            trainer.algorithm.state(),
            settings=trainer.settings,
            action_spec=trainer.policy.behavior_spec.action_spec,
            path=Path("3DBall.pt"),
            behavior="3DBall",
        )
    message = str(error.value)
    assert "state-dependent sigma (a SAC policy)" in message


# ---------------------------------------------------------------- through the run wiring and the CLI


def mlagents_run(results: Path, run_id: str = "mla") -> Path:
    """An mlagents-learn results folder for Basic, as mlagents-learn leaves it."""
    run = results / run_id
    (run / "Basic").mkdir(parents=True)
    (run / "run_logs").mkdir()
    shutil.copyfile(FIXTURES / "Basic.pt", run / "Basic/checkpoint.pt")
    shutil.copyfile(FIXTURES / "Basic.pt", run / "Basic/Basic-1500.pt")
    (run / "Basic/Basic-1500.onnx").write_bytes(b"onnx")
    (run / "Basic.onnx").write_bytes(b"onnx")
    (run / "configuration.yaml").write_text("behaviors: {}\n")
    (run / "run_logs/training_status.json").write_text(
        '{"Basic": {"checkpoints": [{"steps": 1500, "file_path": "results/mla/Basic/Basic-1500.onnx", '
        '"reward": 0.5, "creation_time": 1.0, "auxillary_file_paths": ["results/mla/Basic/Basic-1500.pt"]}]}, '
        '"metadata": {"stats_format_version": "0.3.0", "mlagents_version": "0.28.0", "torch_version": "1.8.1"}}'
    )
    return run


def test_resume_of_an_mlagents_run_is_refused_before_anything_changes(tmp_path):
    run = mlagents_run(tmp_path / "results")
    before = snapshot(run)
    options = load_run_options(str(basic_config(tmp_path, 2_000)))
    options = attrs.evolve(
        options,
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=str(tmp_path / "results"), run_id="mla", resume=True
        ),
    )
    with pytest.raises(CheckpointError) as error:
        build_run(options, console=False)
    message = str(error.value)
    assert str(run / "Basic/checkpoint.pt") in message and "written by mlagents-learn" in message
    assert "--initialize-from mla" in message
    assert snapshot(run) == before
    assert sorted(p.name for p in run.iterdir()) == ["Basic", "Basic.onnx", "configuration.yaml", "run_logs"]


@pytest.mark.slow
def test_resume_of_an_mlagents_run_is_one_line_on_the_command_line(tmp_path):
    run = mlagents_run(tmp_path / "results")
    before = snapshot(run)
    line = one_line_error(run_cli(tmp_path, str(basic_config(tmp_path, 2_000)), "--run-id=mla", "--resume"))
    assert "written by mlagents-learn" in line and "--initialize-from mla" in line
    assert snapshot(run) == before


@pytest.mark.slow
def test_agents_learn_trains_on_from_an_mlagents_run(tmp_path):
    mlagents_run(tmp_path / "results")
    result = run_cli(
        tmp_path,
        str(basic_config(tmp_path, 600)),
        "--env=builtin:Basic",
        "--initialize-from=mla",
        "--run-id=ours",
        "--seed=1",
    )
    assert result.returncode == 0, result.stderr
    assert "imported mlagents-learn weights (saved at step 1500)" in result.stdout + result.stderr
    saved = load_state(tmp_path / "results/ours/Basic/checkpoint.pt")
    assert saved["step"] >= 600
    imported = load_state(FIXTURES / "Basic.pt")["Policy"]["network_body._body_endoder.seq_layers.0.weight"]
    trained = saved["actor"]["encoder.body.layers.0.weight"]
    # trained on from the imported weights: moved by the updates, still close to where they began
    assert 0 < float((trained - imported).abs().max()) < 0.05


def test_a_poca_behavior_takes_the_actor_and_starts_its_centralised_critic_fresh(caplog):
    case_spec, network, _ = CASES["3DBall"]
    settings = TrainerSettings(
        trainer_type="poca", hyperparameters=POCASettings(batch_size=16, buffer_size=64), network_settings=network
    )
    reporter = StatsReporter("3DBall")
    poca = POCA(behavior_name="3DBall", behavior_spec=case_spec, settings=settings, stats_reporter=reporter, seed=3)
    trainer = Trainer(
        behavior_name="3DBall", settings=settings, algorithm=poca, stats_reporter=reporter, checkpoints=None
    )
    critic_before = {k: v.clone() for k, v in poca.critic.state_dict().items()}
    with caplog.at_level(logging.WARNING):
        trainer.initialize_from(FIXTURES / "3DBall.pt")
    assert "POCA's centralised critic" in caplog.text and "starts from fresh weights" in caplog.text
    out = expected("3DBall")
    with torch.no_grad():
        assert mismatch(poca.policy.actor(out["obs"]).mean, out["mean"]) < TOLERANCE
    for key, tensor in poca.critic.state_dict().items():
        assert torch.equal(tensor, critic_before[key])
