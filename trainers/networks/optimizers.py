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

``tests/test_optimizers.py`` checks the steps equal torch's, bit for bit, and that a trainer
process never imports the compiler.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Iterable
from typing import Any

import torch

_SKIPPED_BY_COMPILE = ("add_param_group", "zero_grad", "state_dict", "load_state_dict")


def adam(parameters: Iterable[torch.nn.Parameter], learning_rate: float) -> torch.optim.Adam:
    """Adam as ML-Agents makes it (default betas and eps), fused: one kernel per step."""
    _defer_dynamo_import()
    return _Adam(parameters, lr=learning_rate, fused=True)


_ADAM_STEP = inspect.unwrap(torch.optim.Adam.step)  # the step itself, below torch's wrappers


class _Adam(torch.optim.Adam):
    """torch's Adam, stepped without the wrapper that imports the compiler."""

    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        with torch.no_grad():
            return _ADAM_STEP(self, closure)


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
