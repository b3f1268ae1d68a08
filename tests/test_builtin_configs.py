"""Every built-in environment has a ready config keyed by its behavior names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from envs.builtin import available, make_env
from envs.builtin.checks import random_action, rollout

CONFIG_DIR = Path(__file__).resolve().parents[1] / "config"


@pytest.mark.parametrize("trainer_type", ["ppo", "sac"])
@pytest.mark.parametrize("name", available())
def test_config_selects_the_env_and_covers_every_behavior(name, trainer_type):
    config = yaml.safe_load((CONFIG_DIR / trainer_type / f"{name}.yaml").read_text())
    assert config["env_settings"] == {"env_path": f"builtin:{name}"}
    env = make_env(config["env_settings"]["env_path"], seed=0)
    rng = np.random.default_rng(0)
    rollout(env, lambda n, d: random_action(env.behavior_specs[n], d, rng, respect_masks=True), 5)
    behaviors = {b.split("?team=")[0] for b in env.behavior_specs}
    assert set(config["behaviors"]) == behaviors
    for settings in config["behaviors"].values():
        assert settings["trainer_type"] == trainer_type
        hyper = settings["hyperparameters"]
        assert hyper["batch_size"] <= hyper["buffer_size"]
        assert settings["max_steps"] > 0 and settings["time_horizon"] > 0
