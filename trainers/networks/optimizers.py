"""The one way an algorithm, reward signal or behavioral cloning makes its optimiser.

Why a module for one call: torch's optimisers import ``torch._dynamo`` (the compiler) the first
time they step, and the first time one of the methods marked to be skipped by ``torch.compile``
(``add_param_group``, ``zero_grad``, ``state_dict``, ``load_state_dict``) runs: 2-2.7 s, more than
importing torch itself, in every trainer process (a 200-step CLI run spent 40% of its time there).
Nothing here compiles an optimiser, so:

- ``step`` runs torch's own Adam step below its wrapper, under ``no_grad`` as that wrapper does
  for a non-differentiable optimiser (the wrapper's other work is graph breaks for a compiler);
- the marked methods run as written while ``torch._dynamo`` is not imported (nothing can be
  compiling then); once anything imports it, the next call installs torch's own skip as before.

Around the kernel, torch's Adam costs a small network more than the kernel does, on every
gradient step (SAC's 20 tensors of 16 units: 341 µs a step, of which the kernel is 70 µs):

- ``step`` calls the fused kernel itself once a group's state exists, with the lists of that
  group's tensors kept between steps (torch's step rebuilds them in Python every time); the first
  step of a group, and anything the kernel call does not cover (a closure, amsgrad, a tensor
  learning rate, mixed devices, AMP's scaling), take torch's step;
- neither ``step`` nor ``zero_grad`` opens a profiler scope (torch's ``record_function`` around
  each: ~100 µs and ~25 µs), so optimizer step hooks (``register_step_pre_hook``), which nothing
  here registers, are not called.

``tests/test_optimizers.py`` checks the steps equal torch's, bit for bit, and that a trainer
process never imports the compiler.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from typing import Any, NamedTuple

import torch

_SKIPPED_BY_COMPILE = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def adam(parameters: Iterable[torch.nn.Parameter], learning_rate: float, *, epsilon: float = 1e-8) -> torch.optim.Adam:
    """Adam as ML-Agents makes it (default betas; ``epsilon`` torch's default unless a
    configuration's ``adam_epsilon`` sets it), fused: one kernel per step."""
    _defer_dynamo_import()
    return _Adam(parameters, lr=learning_rate, eps=epsilon, fused=True)


def gradient_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor, *, max_grad_norm: float | None = None) -> None:
    """One step down ``loss``: its gradients, clipped to a total norm of ``max_grad_norm`` over
    every parameter of ``optimizer`` when given (Stable-Baselines3's PPO clips at 0.5; ML-Agents
    does not clip), then the optimiser's step."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if max_grad_norm is not None:
        parameters = [p for group in optimizer.param_groups for p in group["params"] if p.grad is not None]
        torch.nn.utils.clip_grad_norm_(parameters, max_grad_norm)
    optimizer.step()


_ADAM_STEP = inspect.unwrap(torch.optim.Adam.step)  # the step itself, below torch's wrappers


class _Adam(torch.optim.Adam):
    """torch's Adam, stepped without the wrapper that imports the compiler (see the module
    docstring for the fused kernel called directly)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # (group index, ids of the parameters with gradients) -> their state tensors
        self._group_tensors: dict[tuple[int, tuple[int, ...]], _GroupTensors] = {}

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        with torch.no_grad():
            if closure is None and self._step_fused():
                return None
            return _ADAM_STEP(self, closure)

    step.hooked = True  # type: ignore[attr-defined]  # torch's profiler wrapper stays off

    def zero_grad(self, set_to_none: bool = True) -> None:
        if not set_to_none:
            super().zero_grad(set_to_none=False)
            return
        for group in self.param_groups:
            for parameter in group["params"]:
                parameter.grad = None

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        super().load_state_dict(state_dict)
        self._group_tensors.clear()  # the state tensors were replaced

    def _step_fused(self) -> bool:
        """Every group stepped by the fused kernel with its kept tensors; False (nothing done)
        where torch's own step is needed."""
        steps = []
        for index, group in enumerate(self.param_groups):
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            key = (index, tuple(map(id, params)))
            tensors = self._group_tensors.get(key)
            if tensors is None:
                tensors = self._kept_tensors(group, params)
                if tensors is None:
                    return False
                self._group_tensors[key] = tensors
            steps.append((group, params, tensors))
        for group, params, tensors in steps:
            beta1, beta2 = group["betas"]
            torch._foreach_add_(tensors.steps, tensors.ones)
            torch._fused_adam_(
                params,
                [p.grad for p in params],
                tensors.exp_avgs,
                tensors.exp_avg_sqs,
                [],
                tensors.steps,
                amsgrad=False,
                lr=group["lr"],
                beta1=beta1,
                beta2=beta2,
                weight_decay=group["weight_decay"],
                eps=group["eps"],
                maximize=group["maximize"],
                grad_scale=None,
                found_inf=None,
            )
        return True

    def _kept_tensors(self, group: dict[str, Any], params: list[torch.Tensor]) -> _GroupTensors | None:
        """The group's state tensors in parameter order, when the fused kernel alone can step
        it as torch would: state made (torch's first step makes it), one device and dtype, no
        amsgrad, capturable, differentiable or tensor learning rate, no AMP scaling."""
        if (
            group["amsgrad"]
            or group["capturable"]
            or group["differentiable"]
            or group.get("decoupled_weight_decay", False)
            or not group["fused"]
            or isinstance(group["lr"], torch.Tensor)
            or getattr(self, "grad_scale", None) is not None
            or getattr(self, "found_inf", None) is not None
            or len({(p.device, p.dtype) for p in params}) != 1
            or any(p.grad is None or p.grad.is_sparse or torch.is_complex(p) for p in params)
        ):
            return None
        states: list[dict[str, torch.Tensor]] = []
        for parameter in params:
            state = self.state.get(parameter)
            if not state:  # torch's first step makes it
                return None
            states.append(state)
        steps = [state["step"] for state in states]
        one = torch.ones_like(steps[0])
        return _GroupTensors(
            exp_avgs=[state["exp_avg"] for state in states],
            exp_avg_sqs=[state["exp_avg_sq"] for state in states],
            steps=steps,
            ones=[one] * len(steps),
        )


class _GroupTensors(NamedTuple):
    exp_avgs: list[torch.Tensor]
    exp_avg_sqs: list[torch.Tensor]
    steps: list[torch.Tensor]
    ones: list[torch.Tensor]  # what each step count gains per step: adding a list of tensors is a
    # third of the cost of adding the number 1 to each (35 µs against 107 µs for SAC's 24 tensors)


@functools.cache
def _defer_dynamo_import() -> None:
    """Give each marked ``Optimizer`` method a cached skip that calls the method itself while
    ``torch._dynamo`` is not imported (nothing can be compiling then) and torch's real skip
    from then on. A torch whose methods lack the mark is left alone."""
    for name in _SKIPPED_BY_COMPILE:
        method = getattr(torch.optim.Optimizer, name, None)
        original = getattr(method, "__wrapped__", None)
        if original is None or hasattr(original, "__dynamo_disable"):
            continue
        original.__dynamo_disable = _eager_until_dynamo(original)


def _eager_until_dynamo(original: Callable[..., Any]) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        if "torch._dynamo" not in sys.modules:
            return original(*args, **kwargs)
        skip = torch._dynamo.disable(original, recursive=True, wrapping=False)
        original.__dynamo_disable = skip  # type: ignore[attr-defined]
        return skip(*args, **kwargs)

    return call
