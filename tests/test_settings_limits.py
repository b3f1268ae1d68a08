"""Settings refused before any work: run ids that are not a plain folder name (they would write
outside the results folder) and networks too large to allocate."""

from __future__ import annotations

import pytest

from tests.support.paths import MLAGENTS_CONFIGS
from trainers.exceptions import ConfigError
from trainers.settings import (
    NetworkSettings,
    apply_cli_overrides,
    estimate_network_parameters,
    load_run_options,
    structure_run_options,
)
from trainers.settings.validate import MAX_NETWORK_PARAMETERS

CONFIGS = MLAGENTS_CONFIGS

BAD_NAMES = {
    "../escaped": "must be a plain folder name inside results_dir, without / or \\ (got '../escaped')",
    "a/b": "must be a plain folder name inside results_dir, without / or \\ (got 'a/b')",
    "a\\b": "must be a plain folder name inside results_dir, without / or \\ (got 'a\\\\b')",
    "/tmp/x": "must be a plain folder name inside results_dir, without / or \\ (got '/tmp/x')",
    "C:x": "must be a plain folder name inside results_dir, without / or \\ (got 'C:x')",
    ".": "must be a folder name inside results_dir, not '.'",
    "..": "must be a folder name inside results_dir, not '..'",
    "": "must not be empty",
    "  ": "must not be empty",
    "a\0b": "must not contain a NUL character (got 'a\\x00b')",
}


def errors_of(fn, *args) -> set[str]:  # type: ignore[no-untyped-def]
    with pytest.raises(ConfigError) as info:
        fn(*args)
    text = str(info.value)
    lines = text.splitlines()
    return {line.strip() for line in lines[1:]} if len(lines) > 1 else {text}


@pytest.mark.parametrize("name", list(BAD_NAMES), ids=repr)
def test_typed_run_id_and_initialize_from_must_be_plain_folder_names(name: str) -> None:
    ball = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    assert errors_of(apply_cli_overrides, ball, {"run_id": name}) == {
        f"--run-id (checkpoint_settings.run_id): {BAD_NAMES[name]}"
    }
    assert errors_of(apply_cli_overrides, ball, {"initialize_from": name}) == {
        f"--initialize-from (checkpoint_settings.initialize_from): {BAD_NAMES[name]}"
    }


def test_run_id_in_yaml_is_checked_with_its_key_path() -> None:
    data = {"checkpoint_settings": {"run_id": "../escaped", "initialize_from": ".."}}
    assert errors_of(structure_run_options, data) == {
        f"checkpoint_settings.run_id: {BAD_NAMES['../escaped']}",
        f"checkpoint_settings.initialize_from: {BAD_NAMES['..']}",
    }


@pytest.mark.parametrize("name", ["ball", "3DBall_run-2", "run.v1", "run:1", "ünïcode"])
def test_plain_run_ids_are_accepted(name: str) -> None:
    ball = load_run_options(CONFIGS / "ppo/3DBall.yaml")
    new = apply_cli_overrides(ball, {"run_id": name, "initialize_from": name + "-old"})
    assert new.checkpoint_settings.run_id == name


def test_absurd_hidden_units_are_refused_with_the_estimated_size() -> None:
    data = {"behaviors": {"A": {"network_settings": {"hidden_units": 1_000_000_000}}}}
    assert errors_of(structure_run_options, data) == {
        "behaviors.A.network_settings: hidden_units (1000000000) x num_layers (2) make the actor "
        "and critic at least 2e+18 parameters, about 29,802,322,507 GiB to train (weights, "
        "gradients, Adam state); the limit is 1.07e+09 parameters"
    }


def test_one_wide_layer_is_refused_too() -> None:
    # num_layers 1 has no hidden x hidden matrix, but input and output layers still scale.
    data = {"behaviors": {"A": {"network_settings": {"hidden_units": 1_000_000_000, "num_layers": 1}}}}
    (error,) = errors_of(structure_run_options, data)
    assert error.startswith("behaviors.A.network_settings: hidden_units (1000000000) x num_layers (1)")


def test_reward_signal_networks_are_sized_too() -> None:
    data = {
        "behaviors": {
            "A": {"reward_signals": {"extrinsic": {}, "curiosity": {"network_settings": {"hidden_units": 100_000}}}}
        }
    }
    (error,) = errors_of(structure_run_options, data)
    assert error.startswith(
        "behaviors.A.reward_signals.curiosity.network_settings: hidden_units "
        "(100000) x num_layers (2) make the network at least 1e+10 parameters"
    )


def test_zero_units_or_negative_layers_are_refused() -> None:
    data = {"behaviors": {"A": {"network_settings": {"hidden_units": 0, "num_layers": -1}}}}
    assert errors_of(structure_run_options, data) == {
        "behaviors.A.network_settings.hidden_units: must be > 0 (got 0)",
        "behaviors.A.network_settings.num_layers: must be >= 0 (got -1)",
    }


def test_zero_layers_are_accepted_and_sized_as_one_like_mlagents() -> None:
    # mlagents-learn builds one hidden layer for num_layers: 0 (its LinearEncoder always builds the first)
    data = {"behaviors": {"A": {"network_settings": {"num_layers": 0}}}}
    assert structure_run_options(data).behaviors["A"].network_settings.num_layers == 0
    zero, one = NetworkSettings(hidden_units=64, num_layers=0), NetworkSettings(hidden_units=64, num_layers=1)
    assert estimate_network_parameters(zero) == estimate_network_parameters(one) == 64 + 64 + 65
    huge = {"behaviors": {"A": {"network_settings": {"hidden_units": 1_000_000_000, "num_layers": 0}}}}
    (error,) = errors_of(structure_run_options, huge)
    assert error.startswith("behaviors.A.network_settings: hidden_units (1000000000) x num_layers (0)")


def test_parameter_estimate() -> None:
    net = NetworkSettings(hidden_units=128, num_layers=2)
    # per body: Linear(1, 128) + Linear(128, 128) + Linear(128, 1)
    assert estimate_network_parameters(net) == 256 + 128 * 128 + 128 + 129
    assert estimate_network_parameters(net, bodies=2) == 2 * estimate_network_parameters(net)
    largest_sane = NetworkSettings(hidden_units=8192, num_layers=8)
    assert estimate_network_parameters(largest_sane, bodies=2) < MAX_NETWORK_PARAMETERS


def test_sac_counts_its_four_trained_networks() -> None:
    # 6 layers of 8192: two bodies (PPO's actor and critic) fit the limit, four (SAC's actor, two
    # Q networks and value network) do not
    network = {"hidden_units": 8192, "num_layers": 6}
    assert estimate_network_parameters(NetworkSettings(**network), bodies=2) < MAX_NETWORK_PARAMETERS
    ppo = {"behaviors": {"A": {"network_settings": network}}}
    structure_run_options(ppo)  # accepted
    sac = {"behaviors": {"A": {"trainer_type": "sac", "network_settings": network}}}
    (error,) = errors_of(structure_run_options, sac)
    assert error.startswith("behaviors.A.network_settings: hidden_units (8192) x num_layers (6) make the actor, Q")
