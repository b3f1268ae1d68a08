"""Hostile or absurd YAML is refused cheaply, with the file named and errors bounded: alias
bombs, deep nesting, huge integers and values whose repr would be enormous."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from trainers.exceptions import ConfigError
from trainers.settings import load_run_options, structure_run_options
from trainers.settings.files import MAX_YAML_DEPTH, MAX_YAML_VALUES
from trainers.settings.text import short_repr


def billion_laughs() -> str:
    """Nine levels of nine aliases (9**9 values once expanded) in default_settings.max_steps."""
    names = "abcdefghi"
    lines = ["default_settings:", "  trainer_type: ppo", "  x:"]
    lines.append(f"    - &a [{', '.join(['1'] * 9)}]")
    for prev, name in zip(names, names[1:]):
        lines.append(f"    - &{name} [{', '.join([f'*{prev}'] * 9)}]")
    lines.append("  max_steps: *i")
    return "\n".join(lines) + "\n"


def peak_bytes(fn) -> int:  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_alias_bomb_is_refused_with_the_file_named_and_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(billion_laughs())
    info: list[str] = []

    def load() -> None:
        with pytest.raises(ConfigError) as caught:
            load_run_options(path)
        info.append(str(caught.value))

    assert peak_bytes(load) < 50 * 2**20
    assert info[0].startswith(f"{path}: the document expands through aliases to more than ")
    assert f"{MAX_YAML_VALUES:,} values" in info[0]


def test_alias_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "loop.yaml"
    path.write_text("behaviors:\n  A:\n    env_args: &x [1, *x]\n")
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value) == f"{path}: an alias refers to the value that contains it (line 3)"


def test_ordinary_aliases_still_work(tmp_path: Path) -> None:
    path = tmp_path / "anchors.yaml"
    path.write_text(
        "behaviors:\n"
        "  A: &common\n    max_steps: 1000\n    hyperparameters: {batch_size: 32, buffer_size: 320}\n"
        "  B: *common\n"
    )
    options = load_run_options(path)
    assert options.behaviors["A"] == options.behaviors["B"]
    assert options.behaviors["B"].max_steps == 1000


@pytest.mark.parametrize(
    "text",
    [
        "a: " + "[" * 3000 + "]" * 3000 + "\n",
        "a: " + "{x: " * 3000 + "1" + "}" * 3000 + "\n",
        "a:\n  " + "- " * 3000 + "1\n",
        "".join(" " * i + f"k{i}:\n" for i in range(300)) + " " * 300 + "v\n",
    ],
    ids=["flow-sequences", "flow-mappings", "block-sequences", "block-mappings"],
)
def test_deep_nesting_is_a_config_error_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value).startswith(f"{path}: nested too deeply (more than {MAX_YAML_DEPTH} levels")


def test_nesting_within_the_limit_loads(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text("behaviors:\n  A:\n    env_args: " + "[" * 20 + "]" * 20 + "\n")
    with pytest.raises(ConfigError) as info:  # reaches structuring: a list is no behavior key
        load_run_options(path)
    assert "behaviors.A.env_args: unknown key" in str(info.value)


def test_integer_too_long_for_python_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "long.yaml"
    path.write_text("default_settings:\n  max_steps: " + "9" * 5000 + "\n")
    with pytest.raises(ConfigError) as info:
        load_run_options(path)
    assert str(info.value) == (f"{path}: malformed YAML at line 2, column 14: integer too long (5000 characters)")


def test_error_messages_show_values_in_bounded_length() -> None:
    huge = [[list(range(1000))] * 1000] * 1000  # shared lists: small in memory, 10**9 in repr
    with pytest.raises(ConfigError) as info:
        structure_run_options({"default_settings": {"max_steps": huge, "time_horizon": "x" * 10_000}})
    lines = str(info.value).splitlines()
    assert len(str(info.value)) < 600
    assert any(
        line.strip().startswith("default_settings.max_steps: expected an integer, got [[[0, 1")
        and line.endswith("... (list)")
        for line in lines
    )
    assert any(
        line.strip().startswith("default_settings.time_horizon: expected an integer, got 'xxx") for line in lines
    )


def test_long_keys_are_shortened_in_paths() -> None:
    with pytest.raises(ConfigError) as info:
        structure_run_options({"behaviors": {"B" * 10_000: {"max_step": 1}}})
    text = str(info.value)
    assert text.startswith("behaviors." + "B" * 77 + "...")
    assert text.endswith(".max_step: unknown key (did you mean max_steps?)")
    assert len(text) < 200


def test_short_repr_is_bounded_and_cheap() -> None:
    assert short_repr("abc") == "'abc'"
    assert len(short_repr("x" * 10**6)) == 80
    assert short_repr(10**5000) == "<an integer of about 5000 digits>"
    nested: list = [1] * 9
    for _ in range(8):
        nested = [nested] * 9
    assert peak_bytes(lambda: short_repr(nested)) < 2**20
    assert short_repr(nested).endswith("...")
