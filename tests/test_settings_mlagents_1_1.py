"""Configurations for ``mlagents-learn`` 1.1 (Python package of Unity package 3.x/4.x, Release 22)
load here: every key 1.1 accepts, defaults as 1.1 has them where ours follow ML-Agents, derived
values resolved as 1.1 resolves them, and ML-Agents' example configs in both.

mlagents 1.1 is not importable in CI (Python 3.10 only, old numpy and protobuf); its settings
classes, their defaults, and what its loader makes of a few small configurations are recorded in
tests/fixtures/mlagents_1_1/settings_keys.json by the script beside it.

What 1.1 changed from 0.28 in the settings: trainer types come from a plugin registry (the
built-ins are still ppo, sac and poca; POCA has its own class, without ``shared_critic``), and
four keys are new (``shared_critic``, ``even_checkpoints``, ``timeout_wait``,
``no_graphics_monitor``). No default changed.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.mlagents_0_28 import Findings, check_configuration, load_schema
from tests.support.paths import MLAGENTS_CONFIGS, REPO
from trainers.exceptions import ConfigError
from trainers.settings import (
    BehavioralCloningSettings,
    CheckpointSettings,
    CompletionCriteria,
    ConstantSampler,
    CuriositySettings,
    EngineSettings,
    EnvironmentSettings,
    GAILSettings,
    GaussianSampler,
    Lesson,
    MemorySettings,
    MultiRangeUniformSampler,
    NetworkSettings,
    POCASettings,
    PPOSettings,
    RNDSettings,
    RunOptions,
    SACSettings,
    SelfPlaySettings,
    TorchSettings,
    TrainerSettings,
    UniformSampler,
    load_run_options,
    structure_run_options,
    unstructure_run_options,
    write_configuration,
)
from trainers.settings.schema import ExtrinsicSettings

SETTINGS_KEYS_1_1 = REPO / "tests" / "fixtures" / "mlagents_1_1" / "settings_keys.json"
SCHEMA = load_schema(SETTINGS_KEYS_1_1)
SCHEMA_0_28 = load_schema()
ALL_CONFIGS = sorted(MLAGENTS_CONFIGS.glob("*/*.yaml"))


def config_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of nested mappings (and lists of mappings) by dotted path; other lists are leaves."""
    if isinstance(value, Mapping) and value:
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return out
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        return {k: v for i, item in enumerate(value) for k, v in flatten(item, f"{prefix}.{i}").items()}
    return {prefix: value}


def plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


# ---------------------------------------------------------------- the recorded schema


def test_the_recorded_schema_is_mlagents_1_1() -> None:
    assert SCHEMA["mlagents_version"] == "1.1.0" and SCHEMA["root"] == "RunOptions"
    classes = SCHEMA["classes"]
    trainer_type = classes["TrainerSettings"]["trainer_type"]["type"]
    assert trainer_type["values"] == ["ppo", "sac", "poca"]
    hyperparameters = classes["TrainerSettings"]["hyperparameters"]["type"]["classes"]
    assert hyperparameters == {"ppo": "PPOSettings", "sac": "SACSettings", "poca": "POCASettings"}
    assert "shared_critic" in classes["PPOSettings"] and "shared_critic" not in classes["POCASettings"]


def _keys_by_place(schema: Mapping[str, Any]) -> set[str]:
    """``Class.key`` for every field, hyperparameters as ``hyperparameters[type].key``."""
    classes = schema["classes"]
    by_type = classes["TrainerSettings"]["hyperparameters"]["type"]["classes"]
    hp_classes = set(by_type.values())
    out = {f"{c}.{k}" for c, fields in classes.items() if c not in hp_classes for k in fields}
    out |= {f"hyperparameters[{t}].{k}" for t, c in by_type.items() for k in classes[c]}
    return out


def test_1_1_adds_four_keys_to_0_28_and_takes_none_away() -> None:
    new, old = _keys_by_place(SCHEMA), _keys_by_place(SCHEMA_0_28)
    assert old - new == set()
    assert new - old == {
        "TrainerSettings.even_checkpoints",
        "hyperparameters[ppo].shared_critic",
        "EnvironmentSettings.timeout_wait",
        "EngineSettings.no_graphics_monitor",
    }
    for name, fields in SCHEMA_0_28["classes"].items():
        for key, field in fields.items():
            if key == "hyperparameters" or name not in SCHEMA["classes"]:
                continue
            there = SCHEMA["classes"][name][key]
            assert field["nullable"] == there["nullable"], f"{name}.{key}"
            if key != "trainer_type":  # an enum in 0.28, a registered name in 1.1: the same three
                assert field["type"].get("values") == there["type"].get("values"), f"{name}.{key}"


# ---------------------------------------------------------------- every key 1.1 accepts


def _trainer(trainer_type: str, hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """A behavior with every TrainerSettings key set away from 1.1's default."""
    net = {
        "normalize": True,
        "hidden_units": 64,
        "num_layers": 3,
        "vis_encode_type": "nature_cnn",
        "memory": {"sequence_length": 16, "memory_size": 32},
        "goal_conditioning_type": "none",
        "deterministic": True,
    }
    small = {"normalize": True, "hidden_units": 32, "num_layers": 1}
    signal = {"gamma": 0.9, "strength": 0.5, "network_settings": small}
    return {
        "trainer_type": trainer_type,
        "hyperparameters": hyperparameters,
        "checkpoint_interval": 1000,
        "network_settings": net,
        "reward_signals": {
            "extrinsic": dict(signal),
            "gail": {
                **signal,
                "learning_rate": 1.0e-3,
                "encoding_size": 16,
                "use_actions": True,
                "use_vail": True,
                "demo_path": "expert.demo",
            },
            "curiosity": {**signal, "learning_rate": 1.0e-3, "encoding_size": 16},
            "rnd": {**signal, "learning_rate": 1.0e-3, "encoding_size": 16},
        },
        "init_path": "x.pt",
        "keep_checkpoints": 3,
        "even_checkpoints": True,
        "max_steps": 9000,
        "time_horizon": 32,
        "summary_freq": 1000,
        "threaded": True,
        "self_play": {
            "save_steps": 100,
            "team_change": 300,
            "swap_steps": 50,
            "window": 4,
            "play_against_latest_model_ratio": 0.3,
            "initial_elo": 1000.0,
        },
        "behavioral_cloning": {
            "demo_path": "expert.demo",
            "steps": 100,
            "strength": 0.3,
            "samples_per_update": 64,
            "num_epoch": 2,
            "batch_size": 32,
        },
    }


_ON_POLICY = {
    "batch_size": 256,
    "buffer_size": 2048,
    "learning_rate": 1.0e-3,
    "beta": 0.01,
    "epsilon": 0.1,
    "lambd": 0.9,
    "num_epoch": 5,
    "learning_rate_schedule": "constant",
    "beta_schedule": "constant",
    "epsilon_schedule": "constant",
}

EVERY_KEY: dict[str, Any] = {
    "behaviors": {
        "P": _trainer("ppo", {**_ON_POLICY, "shared_critic": True}),
        "C": _trainer("poca", dict(_ON_POLICY)),
        "S": _trainer(
            "sac",
            {
                "learning_rate": 1.0e-3,
                "learning_rate_schedule": "linear",
                "batch_size": 64,
                "buffer_size": 1000,
                "buffer_init_steps": 100,
                "tau": 0.01,
                "steps_per_update": 10.0,
                "save_replay_buffer": True,
                "init_entcoef": 0.5,
                "reward_signal_steps_per_update": 5.0,
            },
        ),
    },
    "env_settings": {
        "env_path": "build/Game.x86_64",
        "env_args": ["--flag", "1"],
        "base_port": 6000,
        "num_envs": 2,
        "num_areas": 3,
        "timeout_wait": 30,
        "seed": 7,
        "max_lifetime_restarts": 3,
        "restarts_rate_limit_n": 2,
        "restarts_rate_limit_period_s": 30,
    },
    "engine_settings": {
        "width": 64,
        "height": 48,
        "quality_level": 1,
        "time_scale": 5.0,
        "target_frame_rate": 30,
        "capture_frame_rate": 30,
        "no_graphics": True,
        "no_graphics_monitor": True,
    },
    "environment_parameters": {
        "u": {"sampler_type": "uniform", "sampler_parameters": {"min_value": 1.0, "max_value": 2.0, "seed": 3}},
        "g": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 0.5, "st_dev": 0.1, "seed": 4}},
        "m": {
            "sampler_type": "multirangeuniform",
            "sampler_parameters": {"intervals": [[1.0, 2.0], [3.0, 4.0]], "seed": 5},
        },
        "k": {"sampler_type": "constant", "sampler_parameters": {"value": 2.0, "seed": 6}},
        "c": {
            "curriculum": [
                {
                    "name": "one",
                    "value": 1.5,
                    "completion_criteria": {
                        "behavior": "P",
                        "measure": "progress",
                        "min_lesson_length": 10,
                        "signal_smoothing": False,
                        "threshold": 0.5,
                        "require_reset": True,
                    },
                },
                {"name": "two", "value": {"sampler_type": "uniform", "sampler_parameters": {"max_value": 3.0}}},
            ]
        },
    },
    "checkpoint_settings": {
        "run_id": "every",
        "initialize_from": "earlier",
        "load_model": True,
        "resume": True,
        "force": True,
        "train_model": True,
        "inference": True,
        "results_dir": "out",
    },
    "torch_settings": {"device": "cpu"},
    "debug": True,
}
# default_settings apart: 1.1 merges a resolved PPO default_settings (every PPO hyperparameter)
# into each behavior, so it refuses one beside SAC behaviors.
WITH_DEFAULTS: dict[str, Any] = {
    "default_settings": _trainer("ppo", {**_ON_POLICY, "shared_critic": True}),
    "behaviors": {"D": {"max_steps": 5000}},
}
# Rewritten on loading, as docs/coming-from-mlagents.md says: resume wins over initialize_from.
REWRITTEN = {"checkpoint_settings.initialize_from": None}


class _Visits:
    """The (class, key) pairs of the 1.1 schema a configuration sets, with the values set."""

    def __init__(self) -> None:
        self.classes = SCHEMA["classes"]
        self.values: dict[tuple[str, str], list[Any]] = {}

    def value(self, value: Any, ref: Mapping[str, Any]) -> None:
        kind = ref["kind"]
        if kind == "class":
            self.mapping(value, ref["name"])
        elif kind == "mapping":
            for item in value.values():
                self.value(item, ref["of"])
        elif kind == "keyed":
            for key, item in value.items():
                self.mapping(item, ref["classes"][key])
        elif kind == "list":
            for item in value:
                self.value(item, ref["of"])
        elif kind == "sampler":
            if isinstance(value, Mapping):
                self.mapping(value["sampler_parameters"], ref["classes"][value["sampler_type"]])
        elif kind == "environment_parameter":
            if isinstance(value, Mapping) and "curriculum" in value:
                self.mapping(value, ref["curriculum"])
            else:
                self.value(value, ref["sampler"])

    def mapping(self, value: Mapping[str, Any], class_name: str) -> None:
        fields = self.classes[class_name]
        for key, item in value.items():
            self.values.setdefault((class_name, key), []).append(item)
            kind = fields[key]["type"]["kind"]
            if kind == "by_trainer_type":
                self.mapping(item, fields[key]["type"]["classes"][value.get("trainer_type", "ppo")])
            elif kind != "leaf" and item is not None:
                self.value(item, fields[key]["type"])


def test_the_every_key_configurations_set_every_1_1_key_away_from_its_default() -> None:
    visits = _Visits()
    for data in (EVERY_KEY, WITH_DEFAULTS):
        assert check_configuration(data, SCHEMA) == Findings()
        visits.mapping(data, SCHEMA["root"])
    every = {(c, k) for c, fields in SCHEMA["classes"].items() for k in fields}
    assert every - set(visits.values) == set()
    for (class_name, key), values in visits.values.items():
        field = SCHEMA["classes"][class_name][key]
        if field["type"]["kind"] == "leaf" and "default" in field:
            assert any(v != field["default"] for v in values), f"{class_name}.{key} only at its default"


@pytest.mark.parametrize("data", [EVERY_KEY, WITH_DEFAULTS], ids=["every_key", "default_settings"])
def test_every_key_1_1_accepts_loads_here_with_the_value_set(data: dict[str, Any]) -> None:
    options = structure_run_options(copy.deepcopy(data))
    written = flatten(unstructure_run_options(options))
    for path, value in flatten(data).items():
        expected = REWRITTEN.get(path, value)
        assert path in written and written[path] == expected, f"{path}: set {value!r}, got {written.get(path)!r}"


# ---------------------------------------------------------------- defaults


def _ours(class_name: str) -> Any:
    """Our class built with its defaults, for 1.1's class of that name."""
    build: dict[str, Any] = {
        "TrainerSettings": TrainerSettings,
        "PPOSettings": PPOSettings,
        "SACSettings": SACSettings,
        "POCASettings": POCASettings,
        "NetworkSettings": NetworkSettings,
        "MemorySettings": MemorySettings,
        "RewardSignalSettings": ExtrinsicSettings,
        "GAILSettings": lambda: GAILSettings(demo_path="x"),
        "CuriositySettings": CuriositySettings,
        "RNDSettings": RNDSettings,
        "SelfPlaySettings": SelfPlaySettings,
        "BehavioralCloningSettings": lambda: BehavioralCloningSettings(demo_path="x"),
        "EnvironmentSettings": EnvironmentSettings,
        "EngineSettings": EngineSettings,
        "CheckpointSettings": CheckpointSettings,
        "TorchSettings": TorchSettings,
        "CompletionCriteriaSettings": lambda: CompletionCriteria(behavior="x"),
        "UniformSettings": UniformSampler,
        "GaussianSettings": GaussianSampler,
        "MultiRangeUniformSettings": MultiRangeUniformSampler,
        "ConstantSettings": ConstantSampler,
        "Lesson": lambda: Lesson(name="x", value=ConstantSampler()),
        "RunOptions": RunOptions,
    }
    return build[class_name]()


# 1.1's default -> ours, where they are written differently but mean the same.
SAME_MEANING: dict[tuple[str, str], tuple[Any, Any]] = {("RunOptions", "environment_parameters"): (None, {})}


def test_defaults_are_1_1_defaults() -> None:
    """Every default of every 1.1 settings class (derived ones with the fields before them at
    theirs) is ours; class-valued fields are compared class by class."""
    checked = 0
    for class_name, fields in SCHEMA["classes"].items():
        if class_name == "EnvironmentParameterSettings":  # only the required curriculum
            continue
        ours = _ours(class_name)
        for key, field in fields.items():
            if "default" not in field:
                continue
            theirs = field["default"]
            if field["type"]["kind"] != "leaf" and theirs is not None:
                if field["type"]["kind"] == "keyed":  # reward_signals: extrinsic alone
                    assert sorted(getattr(ours, key)) == sorted(theirs), f"{class_name}.{key}"
                continue
            mine = plain(getattr(ours, key))
            if (class_name, key) in SAME_MEANING:
                theirs, expected = SAME_MEANING[class_name, key]
                assert mine == expected
                continue
            same = mine == theirs and isinstance(mine, bool) == isinstance(theirs, bool)
            assert same, f"{class_name}.{key}: {mine!r} != {theirs!r}"
            checked += 1
    assert checked > 100


def test_a_constant_sampler_without_a_value_is_0_as_in_1_1() -> None:
    parameter = {"sampler_type": "constant", "sampler_parameters": {"seed": 3}}
    data = {"environment_parameters": {"p": parameter}}
    assert check_configuration(data, SCHEMA) == Findings()
    assert SCHEMA["classes"]["ConstantSettings"]["value"]["default"] == 0.0
    lesson = structure_run_options(data).environment_parameters["p"].curriculum[0]
    assert lesson.value == ConstantSampler(value=0.0, seed=3)


def test_1_1_resolves_reward_signal_steps_per_update_from_steps_per_update() -> None:
    """OffPolicyHyperparamSettings says 4; SACSettings (the class 1.1 uses) follows steps_per_update."""
    field = SCHEMA["classes"]["SACSettings"]["reward_signal_steps_per_update"]
    assert field["derived"] and field["default"] == SCHEMA["classes"]["SACSettings"]["steps_per_update"]["default"]
    follows = SCHEMA["resolved"]["sac_reward_signal_steps_per_update"]["behaviors"]["follows"]["hyperparameters"]
    assert follows["reward_signal_steps_per_update"] == follows["steps_per_update"] == 10


def _our_view(options: RunOptions, name: str) -> dict[str, Any]:
    """A behavior as 1.1 writes it: effective values where ours keep the given one apart."""
    settings = options.behaviors[name]
    view = flatten(unstructure_run_options(options)["behaviors"][name])
    view["even_checkpoints"] = settings.even_checkpoints
    view["checkpoint_interval"] = settings.effective_checkpoint_interval  # 1.1 overwrites it
    if isinstance(settings.hyperparameters, PPOSettings):
        view["hyperparameters.shared_critic"] = settings.hyperparameters.shared_critic
    return view


# (probe, behavior, key) -> (1.1's value, ours). With default_settings, 1.1 resolves the
# default first and merges each behavior over it, so a value derived from another field keeps
# the default's; ours follow the behavior's own field (docs/coming-from-mlagents.md, the differences).
DERIVED_UNDER_DEFAULT_SETTINGS = {
    ("default_settings_resolved_first", "lr", "hyperparameters.beta_schedule"): ("linear", "constant"),
    ("default_settings_resolved_first", "lr", "hyperparameters.epsilon_schedule"): ("linear", "constant"),
    ("default_settings_resolved_first", "save", "self_play.team_change"): (500, 5000),
    ("default_settings_sac_resolved_first", "S", "hyperparameters.reward_signal_steps_per_update"): (1.0, 10.0),
}
# 1.1 refuses: a default_settings of another trainer type brings every PPO hyperparameter into
# SACSettings. Ours inherit only the hyperparameters the behavior's type has.
REFUSED_THERE = {"default_settings_of_another_trainer_type": "The option beta was specified in your YAML file"}
# 1.1 ignores unknown keys in sections it structures without its strict_to_cls; ours refuse them.
IGNORED_THERE = "unknown_keys_in_sections_without_strict_structuring"


@pytest.mark.parametrize("probe", sorted(SCHEMA["resolved"]))
def test_configurations_resolve_as_in_1_1(probe: str) -> None:
    recorded = SCHEMA["resolved"][probe]
    if probe in REFUSED_THERE:
        assert REFUSED_THERE[probe] in recorded["error"]
        options = structure_run_options(copy.deepcopy(recorded["config"]))
        assert options.behaviors["S"].hyperparameters == SACSettings()
        return
    assert "error" not in recorded
    if probe == IGNORED_THERE:
        with pytest.raises(ConfigError) as raised:
            structure_run_options(copy.deepcopy(recorded["config"]))
        for key in ("hiden_units", "memory_sise", "windw", "stregth", "devise"):
            assert f"{key}: unknown key" in str(raised.value)
        return
    options = structure_run_options(copy.deepcopy(recorded["config"]))
    assert sorted(options.behaviors) == sorted(recorded["behaviors"])
    for name, theirs in recorded["behaviors"].items():
        mine, theirs = _our_view(options, name), flatten(theirs)
        assert sorted(mine) == sorted(theirs), name
        differ = {key: (theirs[key], mine[key]) for key in theirs if mine[key] != theirs[key]}
        expected = {k[2]: v for k, v in DERIVED_UNDER_DEFAULT_SETTINGS.items() if k[:2] == (probe, name)}
        assert differ == expected, name


def test_every_probe_is_compared() -> None:
    handled = {p for p, _, _ in DERIVED_UNDER_DEFAULT_SETTINGS} | set(REFUSED_THERE) | {IGNORED_THERE}
    assert handled <= set(SCHEMA["resolved"])
    assert {"defaults", "default_settings_reward_signals_merge", "even_checkpoints"} <= set(SCHEMA["resolved"])


# ---------------------------------------------------------------- ML-Agents' example configs


def test_the_recorded_example_configs_are_the_ones_here() -> None:
    assert sorted(SCHEMA["example_configs"]) == [config_id(p) for p in ALL_CONFIGS]


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=config_id)
def test_every_example_config_loads_in_1_1_and_here(path: Path, tmp_path: Path) -> None:
    """1.1 loaded each file (recorded), the recorded schema agrees, we load it, and the
    configuration.yaml we write holds nothing 1.1 would refuse."""
    assert SCHEMA["example_configs"][config_id(path)] == "ok"
    assert check_configuration(yaml.safe_load(path.read_text()), SCHEMA) == Findings()
    options = load_run_options(path)
    out = tmp_path / "configuration.yaml"
    write_configuration(options, out)
    assert check_configuration(yaml.safe_load(out.read_text()), SCHEMA) == Findings()
