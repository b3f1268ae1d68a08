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
from trainers.settings.text import short_repr

# A run configuration is a few hundred YAML values (ML-Agents' largest example has ~150) nested
# at most ~7 deep. These bounds are far above any real file and far below what hurts: 100,000
# values structure in well under a second, and 100 levels stay clear of Python's recursion limit
# (about 3 frames per level while composing). They stop a "billion laughs" file (nine levels of
# aliases expanding to 9**9 values) and a 3,000-deep nesting before they cost anything.
MAX_YAML_VALUES = 100_000
MAX_YAML_DEPTH = 100


class _TooBig(yaml.YAMLError):
    """The document expands past MAX_YAML_VALUES values or nests past MAX_YAML_DEPTH levels."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses a key repeated in one mapping (PyYAML keeps the last), a
    document that nests deeper than MAX_YAML_DEPTH, and one whose aliases would expand it past
    MAX_YAML_VALUES values (or into itself).

    Sizes are counted while composing: each node's size is 1 plus its children's, and an alias
    counts the full size of the node it names, so the expanded size is known without expanding.
    """

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self._depth = 0
        self._sizes: dict[int, int] = {}
        self._total = 0

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        # The scanner looks ahead to the end of a flow collection that could be a key, so
        # depth is bounded here too (else [[[[...]]]] 3,000 deep scans for seconds first).
        if self.flow_level >= MAX_YAML_DEPTH:
            self._too_deep(self.get_mark())
        super().fetch_flow_collection_start(token_class)

    def add_indent(self, column: int) -> bool:
        if len(self.indents) >= MAX_YAML_DEPTH:
            self._too_deep(self.get_mark())
        return super().add_indent(column)

    @staticmethod
    def _too_deep(mark: Any) -> None:
        raise _TooBig(f"nested too deeply (more than {MAX_YAML_DEPTH} levels, at line {mark.line + 1})")

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            if id(node) not in self._sizes:
                raise _TooBig(f"an alias refers to the value that contains it (line {mark.line + 1})")
            self._count(self._sizes[id(node)], mark, alias=True)
            return node
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                self._too_deep(self.peek_event().start_mark)
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        size = 1
        if isinstance(node, yaml.SequenceNode):
            size += sum(self._sizes[id(child)] for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            size += sum(self._sizes[id(k)] + self._sizes[id(v)] for k, v in node.value)
        self._sizes[id(node)] = size
        self._count(1, node.start_mark)
        return node

    def _count(self, values: int, mark: Any, *, alias: bool = False) -> None:
        self._total += values
        if self._total > MAX_YAML_VALUES:
            how = "expands through aliases" if alias else "grows"
            raise _TooBig(
                f"the document {how} to more than {MAX_YAML_VALUES:,} values by line "
                f"{mark.line + 1}; a run configuration has a few hundred"
            )


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
                None,
                None,
                f"duplicate key {short_repr(key)} (first at line {first})",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line + 1
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    try:
        return yaml.constructor.SafeConstructor.construct_yaml_int(loader, node)
    except ValueError:  # Python refuses to convert more than 4,300 digits
        raise yaml.constructor.ConstructorError(
            None, None, f"integer too long ({len(node.value)} characters)", node.start_mark
        ) from None


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)


def read_yaml(path: str | os.PathLike[str]) -> Any:
    """The parsed YAML in ``path``; ConfigError naming the file (and line) when it is missing,
    unreadable, malformed, nested more than MAX_YAML_DEPTH deep, or expanding (through
    aliases) past MAX_YAML_VALUES values."""
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
    except _TooBig as exc:
        raise ConfigError(f"{name}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{name}: nested too deeply") from None
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
    """The YAML text of ``options``, in schema order, loadable by ``mlagents-learn`` 0.28 as well
    as by agents-learn (where it gives back equal RunOptions).

    Derived values are written resolved (``beta_schedule`` as the schedule in effect, never
    ``null``, which 0.28 rejects). Keys 0.28 does not know (``shared_critic``,
    ``even_checkpoints``, ``env_settings.timeout_wait``, ``engine_settings.no_graphics_monitor``)
    are written only when the user set them (in YAML, on the command line or in Python), so
    the file round-trips here; such a file needs those keys removed before 0.28 loads it.
    """
    return yaml.safe_dump(unstructure_run_options(options), sort_keys=False, default_flow_style=False)


def write_configuration(options: RunOptions, path: str | os.PathLike[str]) -> None:
    """Write the resolved configuration (``dump_run_options``) to ``path`` (parent folders made;
    replaced atomically so a crash never leaves half a file). CheckpointError if it cannot be
    written."""
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
