"""What the parity tests against ML-Agents 0.28 share: the weights their fixture scripts give
every parameter (``tests/fixtures/mlagents_0_28/pinned_values.py``, which the scripts import
too), ML-Agents' normaliser start, and the checks of an update's stats and parameters."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest
import torch

from trainers.networks.actor_critic import Normalizer


def start_normalizers_like_mlagents(module: torch.nn.Module) -> None:
    """ML-Agents' Normalizer starts from one pseudo-sample (normalization_steps 1, mean 0,
    variance 1); ours from none (count 0), which moves the first batches' statistics (RND Loss
    9.8836 instead of 9.4449 in the RND case): start every normaliser in ``module`` where
    ML-Agents' starts."""
    for child in module.modules():
        if isinstance(child, Normalizer):
            child.load_state_dict({"mean": child.mean, "var": child.var, "count": torch.ones((), dtype=torch.float64)})


def assert_stats_match(stats: Mapping[str, float], recorded: Mapping[str, float], tolerance: float) -> None:
    """The same tags as ML-Agents' update returned, each within ``tolerance`` (relative or absolute)."""
    assert stats.keys() == recorded.keys()
    for tag, value in recorded.items():
        assert stats[tag] == pytest.approx(value, rel=tolerance, abs=tolerance), tag


def assert_parameters_match(
    params: Mapping[str, torch.nn.Parameter], recorded: Mapping[str, Any], *, rtol: float = 0.0, atol: float = 1e-6
) -> None:
    """Each parameter's values at the fixture's sampled indices, as ML-Agents' were."""
    for name, sample in recorded.items():
        ours = params[name].detach().reshape(-1)[sample["index"]].numpy()
        np.testing.assert_allclose(ours, sample["values"], rtol=rtol, atol=atol, err_msg=name)
