"""The capability check: everything a configuration asks for that agents-learn cannot do yet is
refused together, before any work, with its key path; ML-Agents' example configs are refused
exactly where they need a missing feature and accepted otherwise."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support.paths import MLAGENTS_CONFIGS
from trainers.exceptions import ConfigError
from trainers.settings import (
    GAILSettings,
    POCASettings,
    RewardSignalType,
    RunOptions,
    UnsupportedFeatureError,
    check_capabilities,
    load_run_options,
    require_capabilities,
    structure_run_options,
)

CONFIGS = MLAGENTS_CONFIGS
ALL_CONFIGS = sorted(CONFIGS.glob("*/*.yaml"))
BUILTIN = frozenset({"ppo", "sac", "poca"})  # the trainer types agents-learn implements

# Every example config of ML-Agents trains: none is refused.
ACCEPTED = [
    "imitation/Crawler.yaml",
    "imitation/Hallway.yaml",
    "imitation/PushBlock.yaml",
    "imitation/Pyramids.yaml",
    "poca/DungeonEscape.yaml",
    "poca/PushBlockCollab.yaml",
    "poca/SoccerTwos.yaml",
    "poca/StrikersVsGoalie.yaml",
    "ppo/3DBall.yaml",
    "ppo/3DBallHard.yaml",
    "ppo/3DBall_randomize.yaml",
    "ppo/Basic.yaml",
    "ppo/Crawler.yaml",
    "ppo/FoodCollector.yaml",
    "ppo/GridWorld.yaml",
    "ppo/Hallway.yaml",
    "ppo/Match3.yaml",
    "ppo/PushBlock.yaml",
    "ppo/Pyramids.yaml",
    "ppo/PyramidsRND.yaml",
    "ppo/Sorter_curriculum.yaml",
    "ppo/Visual3DBall.yaml",
    "ppo/VisualFoodCollector.yaml",
    "ppo/Walker.yaml",
    "ppo/WallJump.yaml",
    "ppo/WallJump_curriculum.yaml",
    "ppo/Worm.yaml",
    "sac/3DBall.yaml",
    "sac/3DBallHard.yaml",
    "sac/Basic.yaml",
    "sac/Crawler.yaml",
    "sac/FoodCollector.yaml",
    "sac/GridWorld.yaml",
    "sac/Hallway.yaml",
    "sac/PushBlock.yaml",
    "sac/Pyramids.yaml",
    "sac/Walker.yaml",
    "sac/WallJump.yaml",
    "sac/Worm.yaml",
]


def config_id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def test_every_example_config_is_accepted() -> None:
    assert [config_id(p) for p in ALL_CONFIGS] == ACCEPTED


@pytest.mark.parametrize("path", ALL_CONFIGS, ids=config_id)
def test_example_config_capabilities(path: Path) -> None:
    options = load_run_options(path)
    assert check_capabilities(options, BUILTIN) == []


@pytest.mark.parametrize("name", ACCEPTED)
def test_configs_that_should_train_pass_the_raising_check(name: str, tmp_path, monkeypatch) -> None:
    options = load_run_options(CONFIGS / name)
    monkeypatch.chdir(tmp_path)  # where the demonstrations the config names exist
    for demo in demo_paths(options):
        (tmp_path / demo).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / demo).write_bytes(b"")
    require_capabilities(options, BUILTIN)


def demo_paths(options: RunOptions) -> list[str]:
    """The demo_path of every gail signal and behavioral_cloning section of ``options``."""
    paths = []
    for settings in options.behaviors.values():
        gail = settings.reward_signals.get(RewardSignalType.GAIL)
        paths += [gail.demo_path] if isinstance(gail, GAILSettings) else []
        paths += [settings.behavioral_cloning.demo_path] if settings.behavioral_cloning else []
    return paths


def test_raising_wrapper_lists_every_problem_together() -> None:
    options = structure_run_options(
        {
            "behaviors": {
                "A": {
                    "reward_signals": {
                        "extrinsic": {"network_settings": {"hidden_units": 32}},
                        "curiosity": {"network_settings": {"memory": {"memory_size": 16}}},
                    }
                }
            }
        }
    )
    with pytest.raises(UnsupportedFeatureError) as info:
        require_capabilities(options, BUILTIN)
    assert isinstance(info.value, ConfigError)
    lines = str(info.value).splitlines()
    assert lines[0] == "2 things in the run configuration are not supported yet:"
    assert [line.strip() for line in lines[1:]] == [
        "behaviors.A.reward_signals.extrinsic.network_settings: the extrinsic reward has no network, so these "
        "settings would be ignored; remove them",
        "behaviors.A.reward_signals.curiosity.network_settings.memory: the curiosity signal's network has no "
        "memory; remove it",
    ]


def test_one_problem_is_one_line() -> None:
    options = structure_run_options(
        {"behaviors": {"A": {"trainer_type": "mappo", "self_play": {}}}}, hyperparameter_types={"mappo": POCASettings}
    )
    with pytest.raises(UnsupportedFeatureError) as info:
        require_capabilities(options, BUILTIN)
    assert str(info.value) == "behaviors.A.trainer_type: 'mappo' has no trainer yet (available: poca, ppo, sac)"


def test_plugin_trainer_types_are_allowed_and_own_their_components() -> None:
    plugin = structure_run_options(
        {"behaviors": {"P": {"trainer_type": "mappo", "reward_signals": {"curiosity": {}}}}},
        hyperparameter_types={"mappo": POCASettings},
    )
    # With a mappo plugin installed, mappo trains; its curiosity signal is the plugin's business.
    assert check_capabilities(plugin, {*BUILTIN, "mappo"}) == []
    assert check_capabilities(plugin, BUILTIN) == [
        "behaviors.P.trainer_type: 'mappo' has no trainer yet (available: poca, ppo, sac)",
        "behaviors.P.reward_signals.curiosity: the curiosity reward signal is not supported yet for trainer_type "
        "mappo (only extrinsic); remove it",
    ]
    # Self-play wraps the trainer loop, whatever the algorithm: accepted for plugin types too.
    soccer = load_run_options(CONFIGS / "poca/SoccerTwos.yaml")
    assert check_capabilities(soccer, {"ppo", "poca"}) == []


def test_default_settings_are_checked_since_they_train_unlisted_behaviors() -> None:
    options = structure_run_options(
        {
            "default_settings": {
                "trainer_type": "poca",
                "reward_signals": {"curiosity": {"network_settings": {"memory": {"memory_size": 16}}}},
            }
        }
    )
    assert check_capabilities(options, BUILTIN) == [
        "default_settings.reward_signals.curiosity.network_settings.memory: the curiosity signal's network has no "
        "memory; remove it",
    ]


def test_unused_extrinsic_network_settings_are_refused_when_set() -> None:
    data = {"behaviors": {"A": {"reward_signals": {"extrinsic": {"network_settings": {"hidden_units": 64}}}}}}
    assert check_capabilities(structure_run_options(data), BUILTIN) == [
        "behaviors.A.reward_signals.extrinsic.network_settings: the extrinsic reward has no "
        "network, so these settings would be ignored; remove them"
    ]
    default = {"behaviors": {"A": {"reward_signals": {"extrinsic": {"network_settings": {}}}}}}
    assert check_capabilities(structure_run_options(default), BUILTIN) == []


def test_constants_samplers_and_curricula_are_accepted() -> None:
    options = structure_run_options(
        {
            "behaviors": {"A": {}},
            "environment_parameters": {
                "mass": 2.5,
                "gravity": {"sampler_type": "constant", "sampler_parameters": {"value": 9.8}},
                "size": {"curriculum": [{"name": "only", "value": 3}]},
                "noise": {"sampler_type": "gaussian", "sampler_parameters": {"mean": 0, "st_dev": 1}},
                "spread": {
                    "curriculum": [
                        {
                            "name": "only",
                            "value": {
                                "sampler_type": "multirangeuniform",
                                "sampler_parameters": {"intervals": [[0, 1]]},
                            },
                        }
                    ]
                },
            },
        }
    )
    assert check_capabilities(options, BUILTIN) == []  # constants, samplers and curricula all train


def test_self_play_and_cloning_are_accepted() -> None:
    options = structure_run_options(
        {
            "behaviors": {
                "A": {
                    "behavioral_cloning": {"demo_path": "x.demo"},
                    "self_play": {},
                }
            }
        }
    )
    assert check_capabilities(options, BUILTIN) == []


# ---------------------------------------------------------------- import direction


SETTINGS = Path(__file__).resolve().parents[1] / "trainers" / "settings"
# Which sibling modules each settings module may import (imports flow one way).
ALLOWED = {
    "text": set(),
    "schema": {"text"},
    "trainer_types": {"schema"},
    "validate": {"schema", "text", "trainer_types"},
    "demo_files": {"schema"},
    "capabilities": {"schema", "text", "demo_files", "trainer_types"},
    "structure": {"schema", "text", "validate", "trainer_types"},
    "overrides": {"schema", "structure", "validate"},
    "files": {"schema", "structure", "text"},
    "schedules": {"schema"},
}


def settings_imports(module: str) -> tuple[set[str], list[int]]:
    """Sibling modules imported by ``module``, and lines of imports inside functions."""
    tree = ast.parse((SETTINGS / f"{module}.py").read_text())
    top = {id(node) for node in tree.body}
    found, nested = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("trainers.settings"):
            found.add(node.module.rsplit(".", 1)[-1])
            if id(node) not in top:
                nested.append(node.lineno)
    return found, nested


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_settings_imports_flow_one_way(module: str) -> None:
    found, nested = settings_imports(module)
    assert nested == [], f"{module}.py imports settings modules inside functions"
    assert found <= ALLOWED[module]


def test_every_settings_module_is_in_the_import_map() -> None:
    modules = {p.stem for p in SETTINGS.glob("*.py")} - {"__init__"}
    assert modules == set(ALLOWED)


# ---------------------------------------------------------------- demonstration files


def bc_and_gail(demo: str) -> dict:
    return {
        "behaviors": {
            "A": {
                "reward_signals": {"extrinsic": {}, "gail": {"demo_path": demo}},
                "behavioral_cloning": {"demo_path": demo},
            }
        }
    }


def test_a_demo_path_that_does_not_exist_is_refused_with_its_key_path(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as error:
        require_capabilities(structure_run_options(bc_and_gail("Demos/Expert.demo")), BUILTIN)
    assert not isinstance(error.value, UnsupportedFeatureError)
    lines = str(error.value).splitlines()
    assert lines[0] == "2 things in the run configuration cannot run:"
    assert lines[1].strip() == (
        f"behaviors.A.reward_signals.gail.demo_path: Demos/Expert.demo does not exist (a .demo file "
        f"or a folder of them, relative to {tmp_path})"
    )
    assert lines[2].strip().startswith("behaviors.A.behavioral_cloning.demo_path: Demos/Expert.demo does not exist")
    assert len(lines) == 3


def test_demo_folders_and_files(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Demos").mkdir()
    options = structure_run_options({"behaviors": {"A": {"behavioral_cloning": {"demo_path": "Demos"}}}})
    with pytest.raises(ConfigError, match="Demos is a folder with no .demo files in it"):
        require_capabilities(options, BUILTIN)
    (tmp_path / "Demos" / "notes.txt").write_text("")
    options = structure_run_options({"behaviors": {"A": {"behavioral_cloning": {"demo_path": "Demos/notes.txt"}}}})
    with pytest.raises(ConfigError, match="Demos/notes.txt is not a .demo file"):
        require_capabilities(options, BUILTIN)
    (tmp_path / "Demos" / "Expert.demo").write_bytes(b"")
    for demo in ("Demos", "Demos/Expert.demo"):
        options = structure_run_options({"behaviors": {"A": {"behavioral_cloning": {"demo_path": demo}}}})
        require_capabilities(options, BUILTIN)  # found: its contents are checked against the spec later
