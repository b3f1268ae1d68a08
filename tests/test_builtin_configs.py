"""Every built-in environment has a ready config keyed by its behavior names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.builtin import available, make_env
from envs.builtin.checks import random_action, rollout
from trainers.settings import load_run_options

CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"


CONFIGS = sorted(CONFIG_DIR.glob("*/*.yaml"))


def test_every_env_has_a_ppo_config():
    assert {p.stem for p in CONFIGS if p.parent.name == "ppo"} >= set(available())


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_config_selects_the_env_and_covers_every_behavior(path):
    trainer_type = path.parent.name
    config = yaml.safe_load(path.read_text())
    name = config["env_settings"]["env_path"].removeprefix("builtin:")
    assert name in available() and path.stem.startswith(name)  # <Name>.yaml or a variant such as PyramidsRND
    assert set(config["env_settings"]) <= {"env_path", "num_areas"}
    constants = {k: v for k, v in (config.get("environment_parameters") or {}).items() if isinstance(v, int | float)}
    env = make_env(config["env_settings"]["env_path"], seed=0, env_parameters=constants)
    rng = np.random.default_rng(0)
    rollout(env, lambda n, d: random_action(env.behavior_specs[n], d, rng, respect_masks=True), 5)
    behaviors = {b.split("?team=")[0] for b in env.behavior_specs}
    assert set(config["behaviors"]) == behaviors
    for settings in config["behaviors"].values():
        assert settings["trainer_type"] == trainer_type
        hyper = settings["hyperparameters"]
        assert hyper["batch_size"] <= hyper["buffer_size"]
        assert settings["max_steps"] > 0 and settings["time_horizon"] > 0
    options = load_run_options(path)  # the run's own validation accepts it
    assert set(options.behaviors) == behaviors
