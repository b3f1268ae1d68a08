"""A ``.demo`` header's step count, as ML-Agents reads it: a file whose header counts no steps
(ML-Agents' own learning tests write theirs so, and a Unity recording that ended before its
header was rewritten is one) is read to its end, with a warning naming the file, and feeds GAIL
and behavioral cloning; a count reached ends the reading; a count past the file's end is a
warning."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from mlagents_envs.communicator_objects.brain_parameters_pb2 import ActionSpecProto, BrainParametersProto
from mlagents_envs.communicator_objects.demonstration_meta_pb2 import DemonstrationMetaProto

from envs.builtin import make_env
from stats import StatsSummary, StatsWriter
from tests.support.expert_demos import SIMPLE_DEMO_STEPS, record_simple_demo
from tests.support.learning import PPO_TEST_CONFIG, train_env
from trainers.files.demonstrations import INITIAL_POS, delimited, load_demonstrations, read_demo_file
from trainers.settings import BehavioralCloningSettings, GAILSettings, RewardSignalType

BRAIN_NAME = "1D"  # test_simple_rl.py's


def expert_pairs(tmp_path: Path) -> list[Any]:
    """The ``AgentInfoActionPairProto`` of each step ``simple_record`` records (100 steps of
    the expert on Simple, one continuous action)."""
    return read_demo_file(record_simple_demo(tmp_path / "expert.demo")).pairs


def write_demo(path: Path, meta: DemonstrationMetaProto, pairs: list[Any]) -> Path:
    """As ML-Agents' ``demo_loader.write_demo`` with ``simple_record``'s brain parameters: the
    delimited header at 0, the delimited brain parameters at INITIAL_POS, then one delimited
    pair per step."""
    brain = BrainParametersProto(
        brain_name=BRAIN_NAME,
        is_training=True,
        action_spec=ActionSpecProto(num_continuous_actions=1, num_discrete_actions=0),
    )
    path.write_bytes(
        delimited(meta).ljust(INITIAL_POS, b"\0") + delimited(brain) + b"".join(delimited(p) for p in pairs)
    )
    return path


class Tags(StatsWriter):
    """Every stat tag written."""

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category: str, values: Mapping[str, StatsSummary], step: int) -> None:
        self.seen |= set(values)


def count_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "header counts" in r.getMessage()
    ]


@pytest.mark.slow  # trains a policy (2 s)
def test_a_demo_with_an_empty_header_trains_gail_and_behavioral_cloning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``simple_record``'s file (``DemonstrationMetaProto()``: no field set) as ``demo_path`` of
    GAIL and behavioral cloning in a run: both load all 100 steps and take updates."""
    demo = write_demo(tmp_path / "1DTestContinuous.demo", DemonstrationMetaProto(), expert_pairs(tmp_path))
    settings = attrs.evolve(
        PPO_TEST_CONFIG,
        hyperparameters=attrs.evolve(PPO_TEST_CONFIG.hyperparameters, batch_size=32, buffer_size=64),
        reward_signals={RewardSignalType.GAIL: GAILSettings(encoding_size=32, demo_path=str(demo))},
        behavioral_cloning=BehavioralCloningSettings(demo_path=str(demo), steps=1000),
        max_steps=128,
        summary_freq=128,
    )
    tags = Tags()
    with caplog.at_level(logging.WARNING):
        train_env(make_env("Simple", seed=1, step_size=0.2), settings, writers=[tags])
    assert {"Losses/GAIL Loss", "Policy/GAIL Expert Estimate", "Losses/Pretraining Loss"} <= tags.seen
    warnings = count_warnings(caplog)
    assert len(warnings) == 2, warnings  # one per loader, each naming its key and the file
    for key in ("reward_signals.gail.demo_path", "behavioral_cloning.demo_path"):
        (line,) = [w for w in warnings if key in w]
        assert f"{demo}: the header counts 0 recorded steps but the file holds {SIMPLE_DEMO_STEPS}" in line


def test_reading_stops_at_the_headers_count_and_a_count_past_the_file_is_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pairs = expert_pairs(tmp_path)
    spec = make_env("Simple", seed=0).behavior_specs["Simple?team=0"]
    with caplog.at_level(logging.WARNING):
        exact = load_demonstrations(
            write_demo(tmp_path / "exact.demo", DemonstrationMetaProto(number_steps=100), pairs), spec
        )
        assert exact.number_steps == 100 and not count_warnings(caplog)
        # ML-Agents stops at the count: the steps after it are not read, and that is no warning
        # (Unity's own files carry bytes after their steps).
        short = load_demonstrations(
            write_demo(tmp_path / "short.demo", DemonstrationMetaProto(number_steps=40), pairs), spec
        )
        assert short.number_steps == 40 and len(short) == 39 and not count_warnings(caplog)
        np.testing.assert_array_equal(short.obs[0], exact.obs[0][:39])
        over = write_demo(tmp_path / "over.demo", DemonstrationMetaProto(number_steps=150), pairs)
        assert load_demonstrations(over, spec, where="demo").number_steps == 100
    assert count_warnings(caplog) == [
        f"demo: {over}: the header counts 150 recorded steps but the file holds 100; reading them all, as ML-Agents does"
    ]
