"""The small demonstration file ML-Agents 0.28's loader read for the fixture
``tests/fixtures/mlagents_0_28/demo_loader.json`` (see make_demo_fixture.py there).

Two agents of one behavior with a vector and a visual (uint8) sensor, one continuous action
and two discrete branches, steps interleaved as an environment delivers them, one episode
ending at max step: what :func:`write_fixture_demo` writes must not change (message for
message; PNG images compared decoded).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

FIXTURE_DEMO = Path(__file__).resolve().parents[1] / "fixtures" / "mlagents_0_28" / "demo" / "Fixture.demo"


def fixture_spec() -> BehaviorSpec:
    vector = ObservationSpec((3,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")
    visual = ObservationSpec(
        (2, 2, 1),
        (
            DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
            DimensionProperty.TRANSLATIONAL_EQUIVARIANCE,
            DimensionProperty.NONE,
        ),
        ObservationType.DEFAULT,
        "camera",
    )
    return BehaviorSpec([vector, visual], ActionSpec(1, (3, 2)))


def write_fixture_demo(path: Path) -> None:
    """Write the fixture's file to ``path`` with agents-learn's writer."""
    from trainers.files.demonstrations import DemonstrationWriter

    with DemonstrationWriter(path, behavior_name="Fixture", behavior_spec=fixture_spec()) as writer:
        # (agent, step, done, max_step_reached) in the order the environment delivers them.
        schedule = [(0, 0, False, False), (1, 0, False, False), (0, 1, False, False), (1, 1, False, False)]
        schedule += [(0, 2, True, False), (1, 2, False, False), (0, 3, False, False), (1, 3, True, True)]
        schedule += [(0, 4, False, False)]
        for n, (agent, t, done, max_step) in enumerate(schedule):
            vector = np.array([agent, t, 0.25 * n], np.float32)
            image = np.array([[[10 * n], [20 + n]], [[255 - n], [n]]], np.uint8)
            writer.add_step(
                agent,
                (vector, image),
                reward=0.5 * n - 1.0,
                done=done,
                max_step_reached=max_step,
                continuous_action=None if done else np.array([(n - 3) / 8], np.float32),
                discrete_action=None if done else np.array([n % 3, (n // 2) % 2], np.int32),
                action_mask=np.array([True, n % 2 == 0, True, True, n % 3 != 0]),
                agent_id=agent,
            )
