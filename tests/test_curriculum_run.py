"""Curricula and samplers end to end, through the run wiring, on built-in 3DBall: lessons advance
on reward and on progress and reach every worker, the lesson numbers are written as
``Environment/Lesson Number/<parameter>``, a lesson asking for it resets the environments,
``--resume`` continues in the lesson it stopped in, a restarted worker opens with the current
lesson's values, and ML-Agents' 3DBall_randomize.yaml's samplers reach the episodes."""

from __future__ import annotations

import json

import attrs
import numpy as np
import pytest
from mlagents_envs.base_env import BaseEnv

from envs.builtin import make_env
from envs.parameters import ParameterValue
from envs.workers import InProcessPool, SubprocessPool, WorkerFault, WorkerResult
from envs.workers.launch import EnvLaunch
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import load_run_options, structure_run_options

GRAVITY = {"earth": 9.81, "moon": 1.6, "space": 0.5}


class Watch(StatsWriter):
    """Per summary: the lesson number of gravity, the gravity of the episodes that ended, and
    the (mean, std) of the masses and scales balls started with."""

    def __init__(self) -> None:
        self.lessons: list[tuple[int, float]] = []  # (step, lesson)
        self.gravities: list[tuple[int, float]] = []  # (step, gravity of the last episode to end)
        self.masses: list[tuple[float, float]] = []
        self.scales: list[tuple[float, float]] = []

    def write_stats(self, category, values, step):
        lesson = values.get("Environment/Lesson Number/gravity")
        if lesson is not None:
            self.lessons.append((int(step), lesson.mean))
        gravity = values.get("3DBall/Gravity")
        if gravity is not None and gravity.count:
            self.gravities.append((int(step), gravity.mean))
        for tag, rows in (("3DBall/Mass", self.masses), ("3DBall/Scale", self.scales)):
            summary = values.get(tag)
            if summary is not None and summary.count:
                rows.append((summary.mean, summary.std))


def curriculum_options(tmp_path, max_steps: int, num_envs: int = 2, **checkpoint):
    criteria = {"behavior": "3DBall", "signal_smoothing": True}
    return structure_run_options(
        {
            "behaviors": {
                "3DBall": {
                    "trainer_type": "ppo",
                    "hyperparameters": {"batch_size": 64, "buffer_size": 512},
                    "network_settings": {"hidden_units": 16, "num_layers": 1},
                    "max_steps": max_steps,
                    "summary_freq": 250,
                    "checkpoint_interval": 1000,
                    "threaded": False,
                }
            },
            "environment_parameters": {
                "gravity": {
                    "curriculum": [
                        {
                            "name": "earth",
                            "value": GRAVITY["earth"],
                            # random play scores about 0.8 per episode: the first lesson ends
                            # once 50 episodes finished
                            "completion_criteria": {
                                **criteria,
                                "measure": "reward",
                                "threshold": 0.3,
                                "min_lesson_length": 50,
                            },
                        },
                        {
                            "name": "moon",
                            "value": GRAVITY["moon"],
                            "completion_criteria": {
                                **criteria,
                                "measure": "progress",
                                "threshold": 0.75,
                                "require_reset": True,
                            },
                        },
                        {"name": "space", "value": GRAVITY["space"]},
                    ]
                }
            },
            "env_settings": {"env_path": "builtin:3DBall", "seed": 1, "num_envs": num_envs},
            "checkpoint_settings": {"results_dir": str(tmp_path), "run_id": "lessons", **checkpoint},
        }
    )


@pytest.mark.slow
def test_lessons_advance_reach_every_worker_and_survive_resume(tmp_path):
    watch = Watch()
    run = build_run(curriculum_options(tmp_path, 4_000), writers=[watch], console=False)
    run.run()
    lessons = [lesson for _, lesson in watch.lessons]
    assert lessons[0] == 0 and lessons[-1] == 2 and lessons == sorted(lessons) and 1 in lessons, watch.lessons
    assert min(step for step, lesson in watch.lessons if lesson == 2) > 3_000  # progress 0.75 of 4000
    # The episodes ran under each lesson's gravity in turn. They are worker 0's: 3DBall reports
    # its gravity as most recent, which the run takes from worker 0 alone (as ML-Agents). Worker 0
    # may start after the first lesson ended (worker 1 ran the 50 episodes; seen once in a loaded
    # CI run: no gravity before step 1250, then moon and space), and then opens in the lesson of
    # then, never an earlier one. (Space, from step 3000 after a reset, may end no episode of
    # worker 0's before the run's end at 4000.)
    order = list(GRAVITY.values())
    seen = list(dict.fromkeys(g for _, g in watch.gravities))
    start = order.index(seen[0])
    assert GRAVITY["moon"] in seen and seen == order[start : start + len(seen)], watch.gravities
    first_step, first_gravity = watch.gravities[0]
    assert order.index(first_gravity) <= dict(watch.lessons)[first_step], (watch.gravities, watch.lessons)
    assert run.env_manager.reset_count >= 2  # the last lesson asked for a reset: both workers reset
    status = json.loads((tmp_path / "lessons" / "run_logs" / "training_status.json").read_text())
    assert status["gravity"]["lesson_num"] == 2

    resumed = Watch()
    build_run(curriculum_options(tmp_path, 5_000, resume=True), writers=[resumed], console=False).run()
    assert resumed.lessons and all(lesson == 2 for _, lesson in resumed.lessons)
    assert all(gravity == GRAVITY["space"] for _, gravity in resumed.gravities)


def launch(parameters: dict[str, ParameterValue]) -> EnvLaunch:
    return EnvLaunch(env_path="builtin:3DBall", seed=3, env_parameters=tuple(parameters.items()))


def gravity_of_next_episode_end(pool) -> float:
    """Step worker 0 (its balls act with zeros, so they drop) until an episode ends; the
    gravity it ran under (3DBall reports it as episodes end)."""
    for _ in range(500):
        for result in pool.poll(30.0):
            assert isinstance(result, WorkerResult), result
            if "3DBall/Gravity" in result.env_stats:
                return result.env_stats["3DBall/Gravity"][-1][0]
        pool.step(0, {})
    raise AssertionError("no episode ended")


@pytest.mark.parametrize("pool_type", ["in-process", "subprocess"])
def test_a_restarted_worker_opens_with_the_current_lesson(pool_type):
    first = launch({"gravity": ParameterValue.constant(9.81)})
    pool = InProcessPool(first) if pool_type == "in-process" else SubprocessPool(first, 1)
    try:
        pool.start()
        assert gravity_of_next_episode_end(pool) == pytest.approx(9.81)
        pool.set_parameters({"gravity": ParameterValue.constant(1.6)})  # a lesson changed
        pool.restart(0)  # the worker crashed
        assert gravity_of_next_episode_end(pool) == pytest.approx(1.6)
    finally:
        pool.close()


@pytest.mark.slow
def test_3dball_randomize_samples_reach_the_episodes(tmp_path):
    options = load_run_options(MLAGENTS_CONFIGS / "ppo/3DBall_randomize.yaml")
    settings = attrs.evolve(options.behaviors["3DBall"], max_steps=3_000, summary_freq=1_000, threaded=False)
    options = attrs.evolve(
        options,
        behaviors={"3DBall": settings},
        env_settings=attrs.evolve(options.env_settings, env_path="builtin:3DBall", seed=2),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="random"),
    )
    watch = Watch()
    build_run(options, writers=[watch], console=False).run()
    # mass ~ uniform(0.5, 10): mean 5.25, standard deviation 2.74 (the constant default would be 1.0, 0)
    means, stds = np.array(watch.masses).T
    assert np.all((means > 3.5) & (means < 7.0)) and np.all(stds > 1.5), watch.masses
    # scale ~ uniform(0.75, 3): mean 1.875, standard deviation 0.65
    means, stds = np.array(watch.scales).T
    assert np.all((means > 1.4) & (means < 2.4)) and np.all(stds > 0.4), watch.scales


class WithoutParameterSetters(BaseEnv):
    """A user's BaseEnv that takes no parameter updates (built-in Basic inside)."""

    def __init__(self) -> None:
        self.inner = make_env("Basic", seed=0)

    behavior_specs = property(lambda self: self.inner.behavior_specs)

    def step(self) -> None:
        self.inner.step()

    def reset(self) -> None:
        self.inner.reset()

    def close(self) -> None:
        self.inner.close()

    def set_actions(self, behavior_name, action) -> None:
        self.inner.set_actions(behavior_name, action)

    def set_action_for_agent(self, behavior_name, agent_id, action) -> None:
        self.inner.set_action_for_agent(behavior_name, agent_id, action)

    def get_steps(self, behavior_name):
        return self.inner.get_steps(behavior_name)


def test_a_python_environment_that_cannot_take_a_new_lesson_is_a_fault_naming_what_it_lacks():
    pool = InProcessPool(
        EnvLaunch(env_path=None, seed=0, env_factory=lambda worker_id, seed: WithoutParameterSetters())
    )
    pool.start()
    pool.poll(1.0)
    pool.set_parameters({"size": ParameterValue.constant(2.0)})
    (fault,) = pool.poll(1.0)
    assert isinstance(fault, WorkerFault)
    assert "WithoutParameterSetters cannot take the new value of environment parameter 'size'" in fault.message
    assert "set_env_parameter_value(key, ParameterValue)" in fault.message
    pool.close()


def renamed(options, names: dict[str, str], max_steps: int):
    """``options`` with its behaviors (and the behaviors its lessons watch) renamed by ``names``,
    and ``max_steps`` cut (everything else as written)."""
    behaviors = {
        names[name]: attrs.evolve(settings, max_steps=max_steps, summary_freq=1_000, threaded=False)
        for name, settings in options.behaviors.items()
    }
    parameters = {
        key: attrs.evolve(
            parameter,
            curriculum=tuple(
                lesson
                if lesson.completion_criteria is None
                else attrs.evolve(
                    lesson,
                    completion_criteria=attrs.evolve(
                        lesson.completion_criteria, behavior=names[lesson.completion_criteria.behavior]
                    ),
                )
                for lesson in parameter.curriculum
            ),
        )
        for key, parameter in options.environment_parameters.items()
    }
    return attrs.evolve(options, behaviors=behaviors, environment_parameters=parameters)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("config", "env", "names"),
    [
        ("WallJump_curriculum", "TwoBehaviors", {"BigWallJump": "LineWalker", "SmallWallJump": "Reacher"}),
        ("Sorter_curriculum", "Basic", {"Sorter": "Basic"}),
    ],
)
def test_mlagents_curriculum_configs_advance_on_builtin_envs(config, env, names, tmp_path):
    """ML-Agents' curriculum configs as written, their behaviors renamed onto a built-in
    environment with as many behaviors: their progress lessons (100 episodes at least) advance
    within the run, and the lessons are saved (the built-in envs ignore the parameters' names,
    as Unity ignores parameters a scene does not read)."""
    options = renamed(load_run_options(MLAGENTS_CONFIGS / f"ppo/{config}.yaml"), names, 10_000)
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, env_path=f"builtin:{env}", seed=1, num_areas=8),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="mla"),
    )
    build_run(options, console=False).run()
    status = json.loads((tmp_path / "mla" / "run_logs" / "training_status.json").read_text())
    for parameter in options.environment_parameters:
        assert status[parameter]["lesson_num"] >= 1, status
