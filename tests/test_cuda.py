"""What training on a GPU must keep: the same updates as on the CPU (within float noise), every
network kind differentiable there (convolutions, LSTMs), a replay buffer kept on the GPU that
draws the CPU's minibatches, and a run's checkpoints usable across devices (trained on cuda,
resumed on the CPU and back, its ONNX model run by onnxruntime). Runs only where torch sees a
CUDA device (CI has none; the device tool's machines do)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
import torch
import yaml
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from stats import StatsReporter
from tests.test_cli import REPO, run_cli
from trainers.loop.device_choice import synthetic_trajectories
from trainers.poca.algorithm import POCA
from trainers.ppo.algorithm import PPO
from trainers.sac.algorithm import SAC
from trainers.sac.replay_buffer import ReplayBuffer
from trainers.settings import TrainerSettings, structure_run_options

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

TE, NO = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE, DimensionProperty.NONE
VECTOR = ObservationSpec((6,), (NO,), ObservationType.DEFAULT, "vector")
CAMERA = ObservationSpec((20, 20, 3), (TE, TE, NO), ObservationType.DEFAULT, "camera")
SPECS = {
    "vector": BehaviorSpec([VECTOR], ActionSpec(2, (3,))),
    "camera": BehaviorSpec([CAMERA, VECTOR], ActionSpec(2, ())),
}
NETWORKS = {
    "mlp": {"hidden_units": 32, "num_layers": 2, "normalize": True},
    "lstm": {"hidden_units": 32, "num_layers": 1, "memory": {"memory_size": 16, "sequence_length": 4}},
}


def settings(trainer_type: str, network: dict) -> TrainerSettings:
    hyperparameters = {"batch_size": 32, "buffer_size": 128}
    if trainer_type == "sac":
        hyperparameters = {"batch_size": 32, "buffer_size": 1000, "buffer_init_steps": 0, "steps_per_update": 8}
    behavior = {
        "trainer_type": trainer_type,
        "hyperparameters": hyperparameters,
        "network_settings": network,
        "time_horizon": 16,
    }
    return structure_run_options({"behaviors": {"B": behavior}}).behavior_settings("B")


def trained(factory, spec: BehaviorSpec, behavior: TrainerSettings, device: str):
    algorithm = factory(
        behavior_name="B",
        behavior_spec=spec,
        settings=behavior,
        stats_reporter=StatsReporter("B"),
        seed=3,
        device=device,
    )
    rng = np.random.default_rng(3)
    for trajectory in synthetic_trajectories(spec, 129, 16, int(algorithm.policy.memory_size), rng):
        algorithm.add(trajectory)
    stats = algorithm.update(0)
    return algorithm, stats


@pytest.mark.parametrize("network", sorted(NETWORKS))
@pytest.mark.parametrize("spec", sorted(SPECS))
@pytest.mark.parametrize("factory", [PPO, POCA], ids=lambda f: f.__name__)
def test_an_on_policy_update_on_cuda_is_the_cpus_within_float_noise(factory, spec, network):
    behavior = settings("poca" if factory is POCA else "ppo", NETWORKS[network])
    on_cpu, cpu_stats = trained(factory, SPECS[spec], behavior, "cpu")
    on_gpu, gpu_stats = trained(factory, SPECS[spec], behavior, "cuda")
    # 12 Adam steps: a weight whose gradient is float noise may step the other way (up to the
    # learning rate, 3e-4, a step), hence the weights' tolerance; the losses are means
    for name, weight in on_cpu.policy.actor.state_dict().items():
        torch.testing.assert_close(on_gpu.policy.actor.state_dict()[name].cpu(), weight, rtol=1e-2, atol=2e-3)
    for tag in ("Losses/Value Loss", "Losses/Policy Loss"):
        assert gpu_stats[tag] == pytest.approx(cpu_stats[tag], rel=1e-2, abs=1e-5), tag


@pytest.mark.parametrize("network", sorted(NETWORKS))
@pytest.mark.parametrize("spec", sorted(SPECS))
def test_sac_trains_every_network_kind_on_cuda_with_its_replay_buffer_there(spec, network):
    """Convolutions (their gradients must take the weights' strides for the fused Adam) and
    LSTMs (cuDNN differentiates them only in training mode); the update noise is drawn on the
    GPU, so the weights are not the CPU's, but the losses are finite and the weights moved."""
    behavior = settings("sac", NETWORKS[network])
    algorithm, stats = trained(SAC, SPECS[spec], behavior, "cuda")
    assert algorithm.replay.device.type == "cuda"
    assert all(np.isfinite(value) for value in stats.values()), stats
    assert "Losses/Q1 Loss" in stats and not algorithm.policy.actor.training  # acts in eval mode again


def test_a_replay_buffer_on_cuda_draws_the_cpus_minibatches():
    spec = SPECS["camera"]
    buffers = {device: ReplayBuffer(100, [(20, 20, 3), (6,)], 2, (), 1, device=device) for device in ("cpu", "cuda")}
    rng = np.random.default_rng(0)
    for trajectory in synthetic_trajectories(spec, 150, 16, 0, rng):  # wraps around the ring
        for buffer in buffers.values():
            buffer.add(trajectory, trajectory.rewards[:, None])
    draws = {device: buffer.sample(32, torch.Generator().manual_seed(5)) for device, buffer in buffers.items()}
    for a, b in zip(draws["cpu"], draws["cuda"]):
        for x, y in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            if x is not None:
                assert y.device.type == "cuda"
                torch.testing.assert_close(y.cpu(), x, rtol=0, atol=0)
    saved = buffers["cuda"].state()
    assert all(t.device.type == "cpu" for t in saved["obs"])
    restored = ReplayBuffer(100, [(20, 20, 3), (6,)], 2, (), 1, device="cuda")
    restored.load(saved)
    again = restored.sample(32, torch.Generator().manual_seed(5))
    torch.testing.assert_close(again.obs[0].cpu(), draws["cpu"].obs[0], rtol=0, atol=0)


@pytest.mark.slow  # three short CLI runs
def test_a_run_trained_on_cuda_resumes_on_the_cpu_and_back_and_exports_onnx(tmp_path):
    def config(max_steps: int) -> Path:
        data = yaml.safe_load((REPO / "config/sac/Basic.yaml").read_text())
        data["behaviors"]["Basic"].update(max_steps=max_steps, summary_freq=200, checkpoint_interval=200)
        path = tmp_path / f"basic-{max_steps}.yaml"
        path.write_text(yaml.safe_dump(data))
        return path

    common = ["--env", "builtin:Basic", "--run-id=gpu", "--seed", "1"]
    first = run_cli(tmp_path, str(config(400)), *common, "--torch-device", "cuda")
    assert first.returncode == 0, first.stderr[-3000:]
    assert "Basic trains on cuda, as --torch-device" in first.stdout + first.stderr
    on_cpu = run_cli(tmp_path, str(config(800)), *common, "--resume", "--torch-device", "cpu")
    assert on_cpu.returncode == 0, on_cpu.stderr[-3000:]
    back = run_cli(tmp_path, str(config(1200)), *common, "--resume", "--torch-device", "cuda")
    assert back.returncode == 0, back.stderr[-3000:]
    run_dir = tmp_path / "results/gpu"
    status = json.loads((run_dir / "run_logs/training_status.json").read_text())
    assert max(int(c["steps"]) for c in status["Basic"]["checkpoints"]) >= 1200
    session = ort.InferenceSession(str(run_dir / "Basic.onnx"), providers=["CPUExecutionProvider"])
    feeds = {
        i.name: np.zeros([1 if not isinstance(d, int) else d for d in i.shape], np.float32)
        for i in session.get_inputs()
    }
    outputs = dict(zip([o.name for o in session.get_outputs()], session.run(None, feeds)))
    assert "discrete_actions" in outputs or "continuous_actions" in outputs, list(outputs)
