"""The public wiring: a user's own BaseEnv trains from Python with one call, in this process or
one process per worker, and a factory that cannot be called as workers call it is refused
before any work."""

from __future__ import annotations

import attrs
import pytest

from envs.workers import EnvFactoryError
from orchestration import train
from tests.support.learning import RewardLog
from tests.support.python_envs import make_3dball, make_basic
from trainers.settings import ConstantSampler, EnvironmentParameterSettings, Lesson, load_run_options


def options_for(tmp_path, config: str, behavior: str, max_steps: int, **env_changes):
    options = load_run_options(config)
    behaviors = {
        behavior: attrs.evolve(options.behavior_settings(behavior), max_steps=max_steps, summary_freq=max_steps // 2)
    }
    return attrs.evolve(
        options,
        behaviors=behaviors,
        env_settings=attrs.evolve(options.env_settings, env_path=None, seed=3, **env_changes),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="py"),
    )


def test_a_python_env_factory_trains_in_process(tmp_path):
    log = RewardLog()
    outcome = train(
        options_for(tmp_path, "config/ppo/Basic.yaml", "Basic", 2_000),
        env_factory=make_basic,
        writers=[log],
        console=False,
    )
    assert outcome.steps["Basic"] >= 2_000 and log.rewards
    assert (tmp_path / "py/Basic.onnx").exists()


def test_a_python_env_factory_runs_in_worker_processes_with_env_parameters(tmp_path):
    options = options_for(tmp_path, "config/ppo/3DBall.yaml", "3DBall", 1_000, num_envs=2)
    lesson = Lesson(name="gravity", value=ConstantSampler(value=9.0))
    options = attrs.evolve(
        options, environment_parameters={"gravity": EnvironmentParameterSettings(curriculum=(lesson,))}
    )
    outcome = train(options, env_factory=make_3dball, console=False)
    assert outcome.steps["3DBall"] >= 1_000


def test_a_factory_without_env_parameters_is_refused_when_the_run_sets_them(tmp_path):
    options = options_for(tmp_path, "config/ppo/Basic.yaml", "Basic", 1_000)
    lesson = Lesson(name="x", value=ConstantSampler(value=1.0))
    options = attrs.evolve(options, environment_parameters={"x": EnvironmentParameterSettings(curriculum=(lesson,))})
    with pytest.raises(EnvFactoryError, match="must accept the keyword arguments worker_id, seed, env_parameters"):
        train(options, env_factory=make_basic, console=False)
    assert not (tmp_path / "py").exists()
