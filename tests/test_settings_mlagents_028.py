"""The configuration.yaml we write loads in ``mlagents-learn`` 0.28: only keys 0.28 knows (at
their nesting) unless the user set a newer one, derived values resolved instead of null, and it
still loads back in agents-learn to the same RunOptions. 0.28's own configuration.yaml loads here.

ML-Agents 0.28 is not importable in CI; its key set is recorded in
tests/fixtures/mlagents_0_28/settings_keys.json (generated from its attrs classes), and the
script beside it checks the same files with 0.28 itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml

from tests.support.mlagents_0_28 import FIXTURES, Findings, check_configuration, load_schema
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import (
    BehavioralCloningSettings,
    CompletionCriteria,
    ConstantSampler,
    CuriositySettings,
    EngineSettings,
    EnvironmentParameterSettings,
    EnvironmentSettings,
    GAILSettings,
    GaussianSampler,
    Lesson,
    MemorySettings,
    MultiRangeUniformSampler,
    NetworkSettings,
    POCASettings,
    PPOSettings,
    RewardSignalType,
    RNDSettings,
    RunOptions,
    SACSettings,
    ScheduleType,
    SelfPlaySettings,
    TrainerSettings,
    UniformSampler,
    apply_cli_overrides,
    dump_run_options,
    load_run_options,
    structure_run_options,
    write_configuration,
)
from trainers.settings.schema import NEWER_KEY, ExtrinsicSettings

ALL_CONFIGS = sorted(MLAGENTS_CONFIGS.glob("*/*.yaml"))
NEWER_PATHS = {
    "behaviors.B.even_checkpoints",
    "behaviors.B.hyperparameters.shared_critic",
    "behaviors.B.hyperparameters.epsilon_floor",
    "behaviors.B.hyperparameters.max_grad_norm",
    "behaviors.B.hyperparameters.adam_epsilon",
    "behaviors.B.hyperparameters.advantage_normalization",
    "behaviors.B.hyperparameters.log_std_init",
    "behaviors.B.network_settings.activation",
    "behaviors.B.network_settings.initialization",
    "env_settings.timeout_wait",
    "env_settings.ray_address",
    "env_settings.envs_per_worker",
    "env_settings.env_kwargs",
    "engine_settings.no_graphics_monitor",
}

# Every PPO key newer than 0.28, set away from its default.
NEWER_PPO_KEYS: dict[str, Any] = {
    "shared_critic": True,
    "epsilon_floor": 0.0,
    "max_grad_norm": 0.5,
    "adam_epsilon": 1e-5,
    "advantage_normalization": "minibatch",
    "log_std_init": -2.0,
}


def config_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def written(options: RunOptions, tmp_path: Path) -> dict[str, Any]:
    """The configuration.yaml of ``options``, parsed; it must load back to ``options``."""
    path = tmp_path / "run" / "configuration.yaml"
    write_configuration(options, path)
    assert load_run_options(path) == options
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    return data


def test_the_recorded_schema_is_mlagents_0_28() -> None:
    schema = load_schema()
    assert schema["mlagents_version"] == "0.28.0" and schema["root"] == "RunOptions"
    assert set(schema["classes"]["TrainerSettings"]) >= {"trainer_type", "hyperparameters", "checkpoint_interval"}
    assert "even_checkpoints" not in schema["classes"]["TrainerSettings"]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=config_id)
def test_every_example_configuration_yaml_loads_in_mlagents_0_28(path: Path, tmp_path: Path) -> None:
    """Loading does not refuse features we do not train (sac, poca, memory, curiosity...)."""
    data = written(load_run_options(path), tmp_path)
    assert check_configuration(data) == Findings()


def test_the_check_finds_what_0_28_refuses() -> None:
    """A negative control: the check is not vacuous."""
    data = {
        "behaviors": {
            "B": {
                "trainer_type": "ppo",
                "hyperparameters": {"beta_schedule": None, "shared_critic": True},
                "reward_signals": {"extrinsic": {"gamma": 0.9}, "surprise": {}},
                "network_settings": {"vis_encode_type": "mobilenet"},
            }
        },
        "environment_parameters": {"p": {"sampler_type": "beta", "sampler_parameters": {}}},
        "env_settings": {"timeout_wait": 60},
    }
    found = check_configuration(data)
    assert set(found.unknown_keys) == {
        "behaviors.B.hyperparameters.shared_critic",
        "behaviors.B.reward_signals.surprise",
        "env_settings.timeout_wait",
    }
    assert found.nulls == ("behaviors.B.hyperparameters.beta_schedule",)
    assert set(found.bad_values) == {
        "behaviors.B.network_settings.vis_encode_type: 'mobilenet'",
        "environment_parameters.p.sampler_type: 'beta'",
    }


def test_derived_values_are_written_resolved(tmp_path: Path) -> None:
    data = {
        "behaviors": {
            "P": {"hyperparameters": {"learning_rate_schedule": "constant", "epsilon_schedule": "linear"}},
            "S": {"trainer_type": "sac", "hyperparameters": {"steps_per_update": 10}},
            "G": {"trainer_type": "poca", "self_play": {"save_steps": 1000}},
        }
    }
    out = written(structure_run_options(data), tmp_path)["behaviors"]
    assert out["P"]["hyperparameters"]["beta_schedule"] == "constant"  # follows learning_rate_schedule
    assert out["P"]["hyperparameters"]["epsilon_schedule"] == "linear"  # as set
    assert out["G"]["hyperparameters"]["beta_schedule"] == "linear"  # POCA's learning_rate_schedule
    assert out["S"]["hyperparameters"]["reward_signal_steps_per_update"] == 10.0
    assert out["G"]["self_play"]["team_change"] == 5000


def test_derived_values_follow_when_built_in_python() -> None:
    assert PPOSettings(learning_rate_schedule=ScheduleType.CONSTANT).beta_schedule is ScheduleType.CONSTANT
    assert SACSettings(steps_per_update=4.0).reward_signal_steps_per_update == 4.0
    assert SelfPlaySettings(save_steps=10, team_change=3).team_change == 3


def test_null_derived_values_from_earlier_files_still_follow() -> None:
    """agents-learn wrote ``beta_schedule: null`` before; such a file means "follow"."""
    hp = {"learning_rate_schedule": "constant", "beta_schedule": None, "epsilon_schedule": None}
    options = structure_run_options(
        {"behaviors": {"B": {"hyperparameters": hp, "self_play": {"save_steps": 10, "team_change": None}}}}
    )
    b = options.behaviors["B"]
    assert b.hyperparameters.beta_schedule is ScheduleType.CONSTANT
    assert b.hyperparameters.epsilon_schedule is ScheduleType.CONSTANT
    assert b.self_play is not None and b.self_play.team_change == 50


def test_newer_keys_are_left_out_unless_set(tmp_path: Path) -> None:
    options = load_run_options(MLAGENTS_CONFIGS / "ppo/3DBall.yaml")
    out = written(options, tmp_path)
    assert "even_checkpoints" not in out["behaviors"]["3DBall"]
    assert "shared_critic" not in out["behaviors"]["3DBall"]["hyperparameters"]
    assert "timeout_wait" not in out["env_settings"] and "no_graphics_monitor" not in out["engine_settings"]
    # Unset, they read as their defaults.
    ball = options.behaviors["3DBall"]
    assert ball.even_checkpoints is False and ball.hyperparameters.shared_critic is False
    assert options.env_settings.timeout_wait == 60 and options.engine_settings.no_graphics_monitor is False


@pytest.mark.parametrize("where", ["behavior", "default_settings"])
def test_newer_keys_set_in_yaml_are_kept_even_at_their_defaults(where: str, tmp_path: Path) -> None:
    sb3 = {"epsilon_floor": 0.1, "max_grad_norm": 0.5, "adam_epsilon": 1e-8, "advantage_normalization": "buffer"}
    sb3["log_std_init"] = -1.0  # no default value to restate: unset is ML-Agents' start
    trainer = {
        "even_checkpoints": False,
        "hyperparameters": {"shared_critic": False, **sb3},
        "network_settings": {"activation": "swish", "initialization": "mlagents"},
    }
    data: dict[str, Any] = {
        "env_settings": {
            "env_path": "builtin:3DBall",
            "timeout_wait": 60,
            "ray_address": "auto",
            "envs_per_worker": 8,
            "env_kwargs": {},
        },
        "engine_settings": {"no_graphics_monitor": False},
    }
    if where == "behavior":
        data["behaviors"] = {"B": trainer}
    else:
        data["default_settings"] = trainer
        data["behaviors"] = {"B": {"max_steps": 10}}
    out = written(structure_run_options(data), tmp_path)
    found = set(check_configuration(out).unknown_keys)
    expected = NEWER_PATHS | (
        {path.replace("behaviors.B.", "default_settings.") for path in NEWER_PATHS if path.startswith("behaviors.B.")}
        if where == "default_settings"
        else set()
    )
    assert found == expected
    assert out["behaviors"]["B"]["even_checkpoints"] is False and out["env_settings"]["timeout_wait"] == 60


def test_newer_keys_typed_on_the_command_line_are_kept(tmp_path: Path) -> None:
    options = apply_cli_overrides(
        load_run_options(MLAGENTS_CONFIGS / "ppo/3DBall.yaml"), {"timeout_wait": 30, "no_graphics_monitor": True}
    )
    out = written(options, tmp_path)
    assert (out["env_settings"]["timeout_wait"], out["engine_settings"]["no_graphics_monitor"]) == (30, True)
    assert set(check_configuration(out).unknown_keys) == {
        "env_settings.timeout_wait",
        "engine_settings.no_graphics_monitor",
    }


def test_newer_keys_set_in_python_are_kept(tmp_path: Path) -> None:
    options = RunOptions(
        behaviors={
            "B": TrainerSettings(
                even_checkpoints=True,
                hyperparameters=PPOSettings(**NEWER_PPO_KEYS),
                network_settings=NetworkSettings(activation="tanh", initialization="pytorch"),
            )
        },
        env_settings=EnvironmentSettings(
            env_path="builtin:3DBall", timeout_wait=5, ray_address="auto", envs_per_worker=2, env_kwargs={"a": 1}
        ),
        engine_settings=EngineSettings(no_graphics_monitor=True),
    )
    assert set(check_configuration(written(options, tmp_path)).unknown_keys) == NEWER_PATHS


def _everything() -> RunOptions:
    """A configuration using every section, signal, sampler and newer key the schema has
    (default_settings is TrainerSettings again, checked in the tests above)."""
    net = NetworkSettings(
        memory=MemorySettings(sequence_length=16, memory_size=32), activation="tanh", initialization="pytorch"
    )
    signals = {
        RewardSignalType.EXTRINSIC: ExtrinsicSettings(normalize=True),
        RewardSignalType.CURIOSITY: CuriositySettings(encoding_size=64),
        RewardSignalType.RND: RNDSettings(encoding_size=64),
        RewardSignalType.GAIL: GAILSettings(demo_path="a.demo", encoding_size=64),
    }
    ppo = TrainerSettings(
        even_checkpoints=True,
        hyperparameters=PPOSettings(**NEWER_PPO_KEYS),
        network_settings=net,
        reward_signals=signals,
        init_path="x.pt",
        self_play=SelfPlaySettings(),
        behavioral_cloning=BehavioralCloningSettings(demo_path="a.demo", num_epoch=2, batch_size=64),
    )
    lessons = (
        Lesson(
            name="one",
            value=GaussianSampler(seed=3),
            completion_criteria=CompletionCriteria(behavior="B", threshold=0.5),
        ),
        Lesson(name="two", value=MultiRangeUniformSampler(intervals=((0.0, 1.0), (2.0, 3.0)))),
    )
    return RunOptions(
        behaviors={
            "B": ppo,
            "S": TrainerSettings(trainer_type="sac", hyperparameters=SACSettings()),
            "P": TrainerSettings(trainer_type="poca", hyperparameters=POCASettings()),
        },
        environment_parameters={
            "c": EnvironmentParameterSettings(curriculum=(Lesson(name="c", value=ConstantSampler(value=1.0, seed=2)),)),
            "u": EnvironmentParameterSettings(curriculum=(Lesson(name="u", value=UniformSampler()),)),
            "l": EnvironmentParameterSettings(curriculum=lessons),
        },
        env_settings=EnvironmentSettings(
            env_path="build",
            env_args=("-x",),
            timeout_wait=5,
            ray_address="auto",
            envs_per_worker=2,
            env_kwargs={"continuous": True},
        ),
        engine_settings=EngineSettings(no_graphics_monitor=True),
    )


def _newer_aliases(cl: type) -> set[str]:
    return {a.alias for a in attrs.fields(cl) if a.metadata.get(NEWER_KEY)}


def test_every_key_0_28_does_not_know_is_marked_newer(tmp_path: Path) -> None:
    """A key added to the schema that 0.28 does not know must carry NEWER_KEY (so it is left
    out while unset); every other key is one 0.28 knows, at the same nesting."""
    found = check_configuration(written(_everything(), tmp_path))
    assert found.nulls == () and found.bad_values == ()
    marked = set().union(
        *(
            _newer_aliases(cl)
            for cl in (
                TrainerSettings,
                PPOSettings,
                NetworkSettings,
                ExtrinsicSettings,
                EnvironmentSettings,
                EngineSettings,
            )
        )
    )
    assert {path.rsplit(".", 1)[1] for path in found.unknown_keys} == marked
    assert marked == {
        "even_checkpoints",
        "shared_critic",
        "epsilon_floor",
        "max_grad_norm",
        "adam_epsilon",
        "advantage_normalization",
        "log_std_init",
        "activation",
        "initialization",
        "normalize",
        "timeout_wait",
        "ray_address",
        "envs_per_worker",
        "env_kwargs",
        "no_graphics_monitor",
    }


@pytest.mark.parametrize("path", sorted((FIXTURES / "written").glob("*.yaml")), ids=lambda p: p.name)
def test_configuration_yaml_written_by_mlagents_0_28_loads_the_same(path: Path) -> None:
    """0.28's own configuration.yaml (kept by verify_configuration_yaml.py --keep) loads to what
    agents-learn makes of the original example file."""
    original = MLAGENTS_CONFIGS / path.name.replace("__", "/")
    assert load_run_options(path) == load_run_options(original)


def test_written_text_keeps_schema_order() -> None:
    text = dump_run_options(RunOptions(behaviors={"B": TrainerSettings(even_checkpoints=True)}))
    keys = list(yaml.safe_load(text)["behaviors"]["B"])
    assert keys[keys.index("keep_checkpoints") : keys.index("checkpoint_interval") + 1] == [
        "keep_checkpoints",
        "even_checkpoints",
        "checkpoint_interval",
    ]
