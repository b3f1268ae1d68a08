"""The optimiser every algorithm makes (``trainers.networks.optimizers.adam``): torch's Adam to
the bit, without importing torch's compiler (2-2.7 s of every trainer process's start); its
epsilon and PPO's gradient clipping as configured."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from tests.support.imports import imported_modules, run_cli_timing_imports
from trainers.networks.optimizers import adam, gradient_step

REPO = Path(__file__).resolve().parents[1]


def network(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(5, 16), torch.nn.SiLU(), torch.nn.Linear(16, 3))


def train(make_optimizer, steps: int = 6) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    net = network(0)
    optimizer = make_optimizer(net.parameters())
    inputs = torch.linspace(-1, 1, 40).reshape(8, 5)
    for _ in range(steps):
        optimizer.zero_grad()
        net(inputs).square().mean().backward()
        optimizer.step()
    return net, optimizer


def test_steps_equal_torchs_fused_adam_bit_for_bit():
    ours, ours_optimizer = train(lambda p: adam(p, 3e-3))
    torchs, torchs_optimizer = train(lambda p: torch.optim.Adam(p, lr=3e-3, fused=True))
    for a, b in zip(ours.parameters(), torchs.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(ours_optimizer.state.values(), torchs_optimizer.state.values()):
        assert all(torch.equal(a[key], b[key]) for key in ("step", "exp_avg", "exp_avg_sq"))


def test_adam_epsilon_is_torchs_unless_a_configuration_sets_it():
    net = network(0)
    assert adam(net.parameters(), 3e-3).param_groups[0]["eps"] == 1e-8
    ours, _ = train(lambda p: adam(p, 3e-3, epsilon=1e-5))
    torchs, _ = train(lambda p: torch.optim.Adam(p, lr=3e-3, eps=1e-5, fused=True))
    assert all(torch.equal(a, b) for a, b in zip(ours.parameters(), torchs.parameters()))


@pytest.mark.parametrize("max_grad_norm", [None, 0.05, 100.0])
def test_a_gradient_step_clips_the_total_norm_only_past_max_grad_norm(max_grad_norm):
    """``max_grad_norm`` (PPO's and POCA's): the gradients of every parameter together are
    scaled to that norm when longer, then the step; without it, torch's plain step. SGD, so
    the step shows the gradient it took."""
    inputs = torch.linspace(-1, 1, 40).reshape(8, 5)
    net, reference = network(0), network(0)
    reference(inputs).square().mean().backward()
    gradients = [p.grad.clone() for p in reference.parameters()]
    norm = float(torch.linalg.vector_norm(torch.cat([g.flatten() for g in gradients])))
    scale = 1.0 if max_grad_norm is None or norm <= max_grad_norm else max_grad_norm / (norm + 1e-6)
    gradient_step(torch.optim.SGD(net.parameters(), lr=1.0), net(inputs).square().mean(), max_grad_norm=max_grad_norm)
    for after, before, gradient in zip(net.parameters(), reference.parameters(), gradients):
        torch.testing.assert_close(after.detach(), before.detach() - scale * gradient)
    assert (scale < 1.0) == (max_grad_norm == 0.05)  # the short norm clips, the long one does not


def test_steps_equal_torchs_when_gradients_come_and_go_and_the_state_is_reloaded():
    """The kernel called directly, with each group's tensors kept between steps, is torch's step:
    also when a parameter has no gradient on some steps (SAC's unused entropy coefficient), one
    gets its first gradient late, and after a state dict is loaded (the kept tensors replaced)."""

    def run(make_optimizer):
        net = network(0)
        optimizer = make_optimizer(net.parameters())
        inputs = torch.linspace(-1, 1, 40).reshape(8, 5)
        late = net[2].bias
        for step in range(10):
            optimizer.zero_grad()
            net(inputs).square().mean().backward()
            if step < 3 or step % 2:
                late.grad = None
            if step == 6:
                optimizer.load_state_dict(optimizer.state_dict())
            optimizer.step()
        return net, optimizer

    ours, ours_optimizer = run(lambda p: adam(p, 3e-3))
    assert len(ours_optimizer._group_tensors) == 2  # the kernel was called directly, with and without `late`
    torchs, torchs_optimizer = run(lambda p: torch.optim.Adam(p, lr=3e-3, fused=True))
    for a, b in zip(ours.parameters(), torchs.parameters()):
        assert torch.equal(a, b)
    for a, b in zip(ours_optimizer.state.values(), torchs_optimizer.state.values()):
        assert all(torch.equal(a[key], b[key]) for key in ("step", "exp_avg", "exp_avg_sq"))


def test_zero_grad_forgets_gradients_or_zeroes_them():
    net = network(0)
    optimizer = adam(net.parameters(), 3e-3)
    net(torch.ones(2, 5)).sum().backward()
    optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in net.parameters())
    optimizer.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_a_saved_state_loads_into_torchs_adam_and_back():
    _, ours_optimizer = train(lambda p: adam(p, 3e-3))
    torchs = torch.optim.Adam(network(1).parameters(), lr=3e-3, fused=True)
    torchs.load_state_dict(ours_optimizer.state_dict())
    again = adam(network(1).parameters(), 3e-3)
    again.load_state_dict(torchs.state_dict())
    assert again.state_dict()["param_groups"] == ours_optimizer.state_dict()["param_groups"]


def test_steps_still_work_once_the_compiler_is_imported():
    code = (
        "import torch, torch._dynamo\n"
        "from trainers.networks.optimizers import adam\n"
        "p = torch.nn.Parameter(torch.ones(3))\n"
        "o = adam([p], 0.1)\n"
        "p.sum().backward(); o.step(); o.zero_grad(); o.load_state_dict(o.state_dict())\n"
        "assert p.grad is None and float(p[0]) < 1.0\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
def test_a_training_run_never_imports_the_compiler(tmp_path, trainer_type):
    """A whole CLI run (updates, a checkpoint, the ONNX export) with intrinsic signals, whose
    optimisers are made the same way."""
    signals = {"extrinsic": {"gamma": 0.9}, "curiosity": {"strength": 0.01}, "rnd": {"strength": 0.01}}
    hyperparameters = {"batch_size": 16, "buffer_size": 64}
    if trainer_type == "sac":
        hyperparameters = {"batch_size": 16, "buffer_size": 500, "buffer_init_steps": 50}
    config = {
        "behaviors": {
            "Basic": {
                "trainer_type": trainer_type,
                "max_steps": 150,
                "summary_freq": 100,
                "hyperparameters": hyperparameters,
                "reward_signals": signals,
            }
        }
    }
    path = tmp_path / "basic.yaml"
    path.write_text(yaml.safe_dump(config))
    result = run_cli_timing_imports(tmp_path, str(path), "--env", "builtin:Basic")
    assert result.returncode == 0, result.stderr[-3000:]
    assert (tmp_path / "results/ppo/Basic.onnx").exists()
    imported = imported_modules(result.stderr)
    assert "torch" in imported and not [name for name in imported if name.startswith("torch._dynamo")]
