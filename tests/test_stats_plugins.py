"""Writer plugins through the agents_learn.stats_writer entry-point group (a fake dist-info on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from stats import STATS_WRITER_GROUP, StatsWriter, StatsWriterPluginError, load_stats_writer_plugins
from tests.support.plugins import write_fake_plugin


def install_fake_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, source: str, entry_points: dict[str, str]
) -> None:
    """Write ``<module>.py`` and its dist-info into tmp_path, put it on sys.path."""
    write_fake_plugin(tmp_path, module, source, STATS_WRITER_GROUP, entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module, raising=False)


PLUGIN_SOURCE = """
    from stats import StatsWriter

    class EchoWriter(StatsWriter):
        def __init__(self, options):
            self.options = options
            self.seen = []

        def write_stats(self, category, values, step):
            self.seen.append((category, step))

    def make_writers(run_options):
        return [EchoWriter(run_options)]

    def explode(run_options):
        raise ValueError("no dashboard url configured")

    def not_writers(run_options):
        return [object()]
"""


def test_good_plugin_is_loaded_and_called_with_run_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_plugin(tmp_path, monkeypatch, "echo_plugin_ok", PLUGIN_SOURCE, {"echo": "echo_plugin_ok:make_writers"})
    options = {"run_id": "ppo"}
    [writer] = load_stats_writer_plugins(options)
    assert isinstance(writer, StatsWriter) and type(writer).__name__ == "EchoWriter"
    assert writer.options is options
    writer.write_stats("B", {}, 3)
    assert writer.seen == [("B", 3)]


def test_no_plugins_gives_no_writers() -> None:
    assert load_stats_writer_plugins(None, group="agents_learn.no_such_group") == []


def test_plugin_that_fails_to_import_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_fake_plugin(tmp_path, monkeypatch, "echo_plugin_imp", PLUGIN_SOURCE, {"broken": "no_such_module_xyz:make"})
    with pytest.raises(StatsWriterPluginError) as info:
        load_stats_writer_plugins(None)
    message = str(info.value)
    assert "'broken'" in message and "no_such_module_xyz:make" in message
    assert "fake-plugin-echo_plugin_imp" in message and "ModuleNotFoundError" in message
    assert isinstance(info.value, RuntimeError)


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("echo_plugin_bad:explode", "raised while creating its writers: ValueError: no dashboard url configured"),
        ("echo_plugin_bad:not_writers", "returned object, which is not a stats.StatsWriter"),
        ("echo_plugin_bad:missing_attr", "failed to load: AttributeError"),
    ],
)
def test_plugin_that_raises_or_misbehaves_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, expected: str
) -> None:
    install_fake_plugin(tmp_path, monkeypatch, "echo_plugin_bad", PLUGIN_SOURCE, {"dash": target})
    with pytest.raises(StatsWriterPluginError, match=f"'dash' \\({target}\\)") as info:
        load_stats_writer_plugins(None)
    assert expected in str(info.value)
