"""The curriculum (orchestration.curriculum): lesson values, when a lesson completes (ML-Agents'
need_increment: progress, smoothed reward, min_lesson_length), sampler seeds, and lesson
numbers saved in training_status.json and restored by --resume."""

from __future__ import annotations

import numpy as np
import pytest

from envs.parameters import ParameterKind, ParameterValue
from orchestration.curriculum import LESSON_NUM, Curriculum
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.files.status import TrainingStatus
from trainers.settings import load_run_options, structure_run_options


def parameters(curriculum: list[dict], **more) -> dict:
    return structure_run_options(
        {"behaviors": {"B": {}}, "environment_parameters": {"size": {"curriculum": curriculum}, **more}}
    ).environment_parameters


def lesson(name: str, value, measure: str = "reward", threshold: float = 0.5, **criteria) -> dict:
    return {
        "name": name,
        "value": value,
        "completion_criteria": {"behavior": "B", "measure": measure, "threshold": threshold, **criteria},
    }


def test_constants_and_samplers_become_values_with_run_seeded_samplers():
    settings = parameters(
        [lesson("easy", 1.0), {"name": "hard", "value": 3.0}],
        mass={"sampler_type": "uniform", "sampler_parameters": {"min_value": 0.5, "max_value": 10}},
        noise={"sampler_type": "gaussian", "sampler_parameters": {"mean": 0, "st_dev": 2, "seed": 7}},
        spread={"sampler_type": "multirangeuniform", "sampler_parameters": {"intervals": [[0, 1], [3, 4]]}},
    )
    curriculum = Curriculum(settings, run_seed=100)
    assert curriculum.values() == {
        "size": ParameterValue.constant(1.0),
        # seed -1: the run seed + the position among lesson values without a seed, the two
        # constants of size counted too (ML-Agents' _set_sampler_seeds)
        "mass": ParameterValue(ParameterKind.UNIFORM, (0.5, 10.0), 102),
        "noise": ParameterValue(ParameterKind.GAUSSIAN, (0.0, 2.0), 7),
        "spread": ParameterValue(ParameterKind.MULTIRANGEUNIFORM, (0.0, 1.0, 3.0, 4.0), 103),
    }
    assert curriculum.has_lessons and curriculum.lessons == {"size": 0, "mass": 0, "noise": 0, "spread": 0}


def test_reward_lesson_waits_for_min_lesson_length_and_smooths():
    curriculum = Curriculum(
        parameters([lesson("a", 1.0, min_lesson_length=3), lesson("b", 2.0, threshold=0.0), {"name": "c", "value": 3}]),
        run_seed=0,
    )
    curriculum.add_episode_rewards("B", np.array([1.0, 1.0]))
    assert curriculum.update({"B": 0.0}).lessons == {}  # 2 episodes < min_lesson_length 3
    curriculum.add_episode_rewards("B", np.array([1.0]))
    # smoothed: 0.25 * 0 + 0.75 * 1.0 = 0.75 > 0.5
    assert curriculum.update({"B": 0.0}) == ({"size": 1}, False)
    assert curriculum.values()["size"] == ParameterValue.constant(2.0)
    assert curriculum.update({"B": 0.0}).lessons == {}  # the reward buffer was emptied by the change
    curriculum.add_episode_rewards("B", np.array([0.1]))
    assert curriculum.update({"B": 0.0}).lessons == {"size": 2}
    curriculum.add_episode_rewards("B", np.array([5.0]))
    assert curriculum.update({"B": 1.0}).lessons == {}  # the last lesson never ends


def test_smoothing_holds_a_lesson_back_until_the_average_climbs():
    curriculum = Curriculum(parameters([lesson("a", 1.0, threshold=0.9), {"name": "b", "value": 2}]), run_seed=0)
    curriculum.add_episode_rewards("B", np.array([1.0]))
    assert curriculum.update({"B": 0.0}).lessons == {}  # 0.25 * 0 + 0.75 * 1 = 0.75
    assert curriculum.update({"B": 0.0}).lessons == {"size": 1}  # 0.25 * 0.75 + 0.75 * 1 = 0.9375


def test_progress_lesson_and_require_reset():
    curriculum = Curriculum(
        parameters(
            [lesson("a", 1.0, measure="progress", threshold=0.3, require_reset=True), {"name": "b", "value": 2}]
        ),
        run_seed=0,
    )
    assert curriculum.update({}).lessons == {}  # the behavior has no trainer yet
    assert curriculum.update({"B": 0.3}).lessons == {}  # not above the threshold
    assert curriculum.update({"B": 0.31}) == ({"size": 1}, True)


def test_lessons_are_saved_and_restored_by_resume(tmp_path):
    path = tmp_path / "run_logs" / "training_status.json"
    path.parent.mkdir()
    settings = parameters(
        [lesson("a", 1.0, measure="progress", threshold=0.1), lesson("b", 2.0, measure="progress", threshold=0.2)]
        + [{"name": "c", "value": 3.0}]
    )
    curriculum = Curriculum(settings, run_seed=0, status=TrainingStatus(path))
    curriculum.update({"B": 0.5})
    assert TrainingStatus.load(path).parameter("size", LESSON_NUM) == 1
    resumed = Curriculum(settings, run_seed=0, status=TrainingStatus.load(path), resume=True)
    assert resumed.lessons == {"size": 1} and resumed.values()["size"] == ParameterValue.constant(2.0)
    fresh = Curriculum(settings, run_seed=0, status=TrainingStatus.load(path), resume=False)
    assert fresh.lessons == {"size": 0}  # a new run starts at the first lesson


@pytest.mark.parametrize(
    ("config", "behavior", "parameter", "second"),
    [
        ("WallJump_curriculum", "BigWallJump", "big_wall_height", ParameterValue(ParameterKind.UNIFORM, (4.0, 7.0), 1)),
        ("Sorter_curriculum", "Sorter", "num_tiles", ParameterValue.constant(4.0)),
    ],
)
def test_mlagents_curricula_advance_when_their_criteria_hold(config, behavior, parameter, second):
    """Their lessons end on progress once 100 episodes finished (min_lesson_length)."""
    options = load_run_options(MLAGENTS_CONFIGS / f"ppo/{config}.yaml")
    curriculum = Curriculum(options.environment_parameters, run_seed=0)
    criteria = options.environment_parameters[parameter].curriculum[0].completion_criteria
    assert criteria is not None and criteria.behavior == behavior
    progress = {behavior: criteria.threshold + 0.01}
    curriculum.add_episode_rewards(behavior, np.zeros(99))
    assert parameter not in curriculum.update(progress).lessons  # 99 episodes < 100
    curriculum.add_episode_rewards(behavior, np.zeros(1))
    assert curriculum.update(progress).lessons[parameter] == 1
    value = curriculum.values()[parameter]
    assert value.kind == second.kind and value.numbers == second.numbers
