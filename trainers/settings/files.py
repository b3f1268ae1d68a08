"""Reading a run configuration from YAML and writing the resolved one back
(``results/<run-id>/configuration.yaml``)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from typing import Any

import yaml

from trainers.exceptions import CheckpointError, ConfigError
from trainers.settings.schema import RunOptions
from trainers.settings.structure import structure_run_options, unstructure_run_options


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (PyYAML keeps the last)."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:
            continue
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (first at line {first})", key_node.start_mark
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """The parsed YAML in ``path``; ConfigError naming the file (and line) when it is missing,
    unreadable or malformed."""
    name = os.fspath(path)
    try:
        with open(name, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise ConfigError(f"{name}: configuration file not found") from None
    except IsADirectoryError:
        raise ConfigError(f"{name}: is a directory, not a configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{name}: cannot read configuration file ({exc})") from None
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"{name}: malformed YAML{where}: {problem}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{name}: malformed YAML: {exc}") from None


def load_run_options(
    path: str | os.PathLike[str] | None,
    *,
    hyperparameter_types: Mapping[str, type] | None = None,
) -> RunOptions:
    """RunOptions from a YAML file; None (no file given) gives the defaults for every behavior.

    Every ConfigError message starts with the file name.
    """
    if path is None:
        return RunOptions(config_specified=False)
    data = read_yaml(path)
    try:
        return structure_run_options(data, hyperparameter_types=hyperparameter_types)
    except ConfigError as exc:
        raise type(exc)(f"{os.fspath(path)}: {exc}") from None


def dump_run_options(options: RunOptions) -> str:
    """The YAML text of ``options`` (every key, in schema order)."""
    return yaml.safe_dump(unstructure_run_options(options), sort_keys=False, default_flow_style=False)


def write_configuration(options: RunOptions, path: str | os.PathLike[str]) -> None:
    """Write the resolved configuration to ``path`` (parent folders made; replaced
    atomically so a crash never leaves half a file). CheckpointError if it cannot be written."""
    name = os.fspath(path)
    folder = os.path.dirname(name) or "."
    text = dump_run_options(options)
    try:
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".configuration.", suffix=".yaml")
    except OSError as exc:
        raise CheckpointError(f"{name}: cannot write the configuration ({exc})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, name)
    except OSError as exc:
        raise CheckpointError(f"{name}: cannot write the configuration ({exc})") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
