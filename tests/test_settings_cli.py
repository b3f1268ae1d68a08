"""Run configuration from files and the command line: loading errors name the file (and the
YAML line); only flags the user typed override YAML; resume/initialize-from rules."""

from __future__ import annotations

import logging
import os
import pickle
from pathlib import Path

import attrs
import pytest

from tests.support.paths import MLAGENTS_CONFIGS
from trainers.exceptions import CheckpointError, ConfigError
from trainers.settings import (
    CLI_DESTS,
    RunOptions,
    apply_cli_overrides,
    flag_name,
    load_run_options,
    write_configuration,
)

CONFIGS = MLAGENTS_CONFIGS


def write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# ---------------------------------------------------------------- files


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value) == f"{path}: configuration file not found"


def test_directory_is_not_a_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="is a directory"):
        load_run_options(tmp_path)


def test_unreadable_path(tmp_path: Path) -> None:
    # A file used as a folder: open() fails with an OSError other than "not found".
    path = write(tmp_path, "behaviors: {}\n") / "config.yaml"
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value).startswith(f"{path}: cannot read configuration file (")


def test_undecodable_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00behaviors")
    with pytest.raises(ConfigError, match=r"cannot read configuration file"):
        load_run_options(path)


def test_malformed_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "behaviors:\n  3DBall:\n    trainer_type: ppo\n   max_steps: [1\n")
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    message = str(info.value)
    assert message.startswith(f"{path}: malformed YAML at line 4, column 4:")


def test_duplicate_key_is_refused_with_both_lines(tmp_path: Path) -> None:
    path = write(tmp_path, "behaviors:\n  A:\n    max_steps: 10\n  A:\n    max_steps: 20\n")
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value) == (f"{path}: malformed YAML at line 4, column 3: duplicate key 'A' (first at line 2)")


def test_config_errors_from_a_file_start_with_its_name(tmp_path: Path) -> None:
    path = write(tmp_path, "behaviors:\n  3DBall:\n    hyperparameters:\n      batchsize: 64\n")
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value) == (
        f"{path}: behaviors.3DBall.hyperparameters.batchsize: unknown key (did you mean batch_size?)"
    )


def test_empty_file_is_an_empty_configuration(tmp_path: Path) -> None:
    options = load_run_options(write(tmp_path, "# nothing yet\n"))
    assert options == RunOptions()
    with pytest.raises(ConfigError, match="not in the run configuration"):
        options.behavior_settings("A")


def test_yaml_that_is_not_a_mapping(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_run_options(write(tmp_path, "- a\n- b\n"))
    assert "must be a mapping of sections" in str(info.value)


# ---------------------------------------------------------------- CLI over YAML


@pytest.fixture
def ball() -> RunOptions:
    return load_run_options(CONFIGS / "ppo/3DBall.yaml")


def yaml_options(tmp_path: Path, sections: str) -> RunOptions:
    return load_run_options(write(tmp_path, "behaviors:\n  3DBall: {}\n" + sections))


def test_typed_flags_override_yaml_untyped_keep_it(tmp_path: Path) -> None:
    options = yaml_options(
        tmp_path,
        (
            "env_settings:\n  env_path: build/ball.x86_64\n  seed: 42\n  base_port: 6000\n"
            "checkpoint_settings:\n  run_id: from-yaml\n"
            "engine_settings:\n  time_scale: 5\n"
        ),
    )
    new = apply_cli_overrides(options, {"run_id": "typed", "num_envs": 3, "width": 160})
    assert new.checkpoint_settings.run_id == "typed"
    assert new.env_settings.num_envs == 3 and new.engine_settings.width == 160
    # Not typed: the YAML values stay, even where they differ from the flag defaults.
    assert (new.env_settings.seed, new.env_settings.base_port) == (42, 6000)
    assert new.env_settings.env_path == "build/ball.x86_64"
    assert new.engine_settings.time_scale == 5.0
    assert options.checkpoint_settings.run_id == "from-yaml"  # the input is not changed


def test_every_dest_reaches_its_yaml_key(ball: RunOptions) -> None:
    values = {
        "env": "builtin:3DBall",
        "env_args": ["--level", "2"],
        "base_port": 6005,
        "num_envs": 2,
        "ray_address": "auto",
        "num_areas": 3,
        "envs_per_worker": 4,
        "timeout_wait": 30,
        "seed": 7,
        "max_lifetime_restarts": -1,
        "restarts_rate_limit_n": 4,
        "restarts_rate_limit_period_s": 10,
        "width": 100,
        "height": 50,
        "quality_level": 1,
        "time_scale": 1.5,
        "target_frame_rate": 30,
        "capture_frame_rate": 0,
        "no_graphics": True,
        "no_graphics_monitor": True,
        "run_id": "r",
        "force": True,
        "train_model": True,
        "inference": True,
        "results_dir": "out",
        "torch_device": "cuda:1",
        "debug": True,
    }
    assert set(values) | {"initialize_from", "load_model", "resume"} == set(CLI_DESTS)
    new = apply_cli_overrides(ball, values)
    for dest, value in values.items():
        section, name = CLI_DESTS[dest]
        got = getattr(new if section is None else getattr(new, section), name)
        assert got == (tuple(value) if isinstance(value, list) else value), dest


def test_seed_minus_one_is_kept_for_run_time(ball: RunOptions) -> None:
    assert apply_cli_overrides(ball, {"seed": -1}).env_settings.seed == -1


def test_deterministic_sets_every_behavior() -> None:
    match3 = load_run_options(CONFIGS / "ppo/Match3.yaml")
    new = apply_cli_overrides(match3, {"deterministic": True})
    assert all(s.network_settings.deterministic for s in new.behaviors.values())
    assert new.default_settings.network_settings.deterministic
    assert new.behavior_settings("Unlisted").network_settings.deterministic
    assert not any(s.network_settings.deterministic for s in match3.behaviors.values())
    no_file = apply_cli_overrides(load_run_options(None), {"deterministic": True})
    assert no_file.behavior_settings("Any").network_settings.deterministic


def test_initialize_from_sets_every_init_path(ball: RunOptions) -> None:
    new = apply_cli_overrides(ball, {"initialize_from": "older", "results_dir": "res"})
    assert new.checkpoint_settings.initialize_from == "older"
    # The checkpoint file, as ML-Agents writes it (0.28 refuses a folder when it starts).
    expected = os.path.join("res", "older", "3DBall", "checkpoint.pt")
    assert new.behaviors["3DBall"].init_path == expected
    assert new.behavior_settings("3DBall?team=0").init_path == expected


def test_initialize_from_in_yaml_reaches_behavior_settings(tmp_path: Path) -> None:
    options = yaml_options(tmp_path, "checkpoint_settings:\n  initialize_from: base\n")
    expected = os.path.join("results", "base", "3DBall", "checkpoint.pt")
    assert options.behavior_settings("3DBall").init_path == expected


def test_initialize_from_keeps_a_set_init_path_as_mlagents_does(ball: RunOptions) -> None:
    """ML-Agents' setup_init_path: a bare file name is looked up in the behavior's folder of
    the run initialized from; a path is kept."""
    bare = attrs.evolve(ball, behaviors={"3DBall": attrs.evolve(ball.behaviors["3DBall"], init_path="3DBall-500.pt")})
    new = apply_cli_overrides(bare, {"initialize_from": "older"})
    assert new.behaviors["3DBall"].init_path == os.path.join("results", "older", "3DBall", "3DBall-500.pt")
    kept = os.path.join("elsewhere", "3DBall", "checkpoint.pt")
    full = attrs.evolve(ball, behaviors={"3DBall": attrs.evolve(ball.behaviors["3DBall"], init_path=kept)})
    assert apply_cli_overrides(full, {"initialize_from": "older"}).behavior_settings("3DBall").init_path == kept


def test_typed_resume_beats_initialize_from(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    options = yaml_options(tmp_path, "checkpoint_settings:\n  initialize_from: base\n")
    with caplog.at_level(logging.WARNING):
        new = apply_cli_overrides(options, {"resume": True})
    assert new.checkpoint_settings.resume is True
    assert new.checkpoint_settings.initialize_from is None
    assert new.behavior_settings("3DBall").init_path is None
    assert "resumed" in caplog.text


def test_typed_initialize_from_beats_yaml_resume(tmp_path: Path) -> None:
    options = yaml_options(tmp_path, "checkpoint_settings:\n  resume: true\n")
    new = apply_cli_overrides(options, {"initialize_from": "base"})
    assert new.checkpoint_settings.resume is False
    assert new.checkpoint_settings.initialize_from == "base"


def test_both_typed_resume_wins(ball: RunOptions) -> None:
    new = apply_cli_overrides(ball, {"resume": True, "initialize_from": "base"})
    assert new.checkpoint_settings.resume is True and new.checkpoint_settings.initialize_from is None


def test_yaml_only_conflict_resume_wins(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        options = yaml_options(tmp_path, "checkpoint_settings:\n  resume: true\n  initialize_from: b\n")
    assert options.checkpoint_settings.resume is True
    assert options.checkpoint_settings.initialize_from is None
    assert "initialization ignored" in caplog.text


def test_deprecated_load_means_resume(ball: RunOptions, tmp_path: Path) -> None:
    assert apply_cli_overrides(ball, {"load_model": True}).checkpoint_settings.resume is True
    assert yaml_options(tmp_path, "checkpoint_settings:\n  load_model: true\n").checkpoint_settings.resume


def test_bad_cli_values_are_all_reported_with_flag_and_key(ball: RunOptions) -> None:
    with pytest.raises(ConfigError) as info:
        apply_cli_overrides(ball, {"seed": "abc", "width": 0, "num_envs": 4})
    lines = {line.strip() for line in str(info.value).splitlines()[1:]}
    assert lines == {
        "--seed (env_settings.seed): expected an integer, got 'abc' (str)",
        "engine_settings.width: must be > 0 (got 0)",
        "env_settings: num_envs (4) must be 1 without env_path (the Unity Editor is a single "
        "environment; set env_path or --env)",
    }


def test_num_envs_with_typed_env_is_fine(ball: RunOptions) -> None:
    assert apply_cli_overrides(ball, {"env": "builtin:3DBall", "num_envs": 4}).env_settings.num_envs == 4


def test_non_config_dests_are_ignored_and_unknown_ones_refused(ball: RunOptions) -> None:
    same = apply_cli_overrides(ball, {"trainer_config_path": "x.yaml", "torch": True, "tensorflow": True})
    assert same == ball
    with pytest.raises(ConfigError, match="unknown command-line option 'num_env'"):
        apply_cli_overrides(ball, {"num_env": 2})


def test_new_warnings_only_are_logged(ball: RunOptions, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        apply_cli_overrides(ball, {"run_id": "x"})
    assert "buffer_size (12000)" not in caplog.text  # already said when the file was loaded


def test_flag_names() -> None:
    assert [flag_name(d) for d in ("env", "num_envs", "load_model", "torch_device")] == [
        "--env",
        "--num-envs",
        "--load",
        "--torch-device",
    ]


def test_configuration_that_cannot_be_written_is_a_checkpoint_error(ball: RunOptions, tmp_path: Path) -> None:
    blocker = write(tmp_path, "not a folder\n", "results")
    with pytest.raises(CheckpointError, match="cannot write the configuration"):
        write_configuration(ball, blocker / "run" / "configuration.yaml")


def test_write_replaces_and_leaves_no_temporary_file(ball: RunOptions, tmp_path: Path) -> None:
    path = tmp_path / "configuration.yaml"
    write_configuration(ball, path)
    write_configuration(apply_cli_overrides(ball, {"run_id": "second"}), path)
    assert load_run_options(path).checkpoint_settings.run_id == "second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configuration.yaml"]


def test_options_pickle_for_worker_processes() -> None:
    options = load_run_options(CONFIGS / "ppo/WallJump_curriculum.yaml")
    assert pickle.loads(pickle.dumps(options)) == options
