"""Turn settings objects (attrs, dataclasses, mappings, enums) into plain nested data for text."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

import attrs


def to_plain(value: Any) -> Any:
    """Nested dicts/lists of str/int/float/bool/None; unknown objects become ``str(value)``."""
    if attrs.has(type(value)):
        # Private fields with an alias (``_shared_critic``) are shown under the YAML key, with the
        # value in effect (the public property of that name, when the class has one).
        return {(f.alias or f.name): to_plain(_in_effect(value, f)) for f in attrs.fields(type(value))}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, enum.Enum):
        return to_plain(value.value)
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    item = getattr(value, "item", None)  # numpy scalars
    if callable(item):
        try:
            return item()
        except (TypeError, ValueError):
            pass
    return str(value)


def _in_effect(value: Any, field: attrs.Attribute) -> Any:
    if field.alias and field.alias != field.name and isinstance(getattr(type(value), field.alias, None), property):
        return getattr(value, field.alias)
    return getattr(value, field.name)


def flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """``[("hyperparameters.batch_size", 1024), ...]`` in field order; leaves only."""
    plain = to_plain(value)
    if not isinstance(plain, dict):
        return [(prefix or "value", plain)]
    rows: list[tuple[str, Any]] = []
    for key, item in plain.items():
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(item, dict) and item:
            rows.extend(flatten(item, path))
        else:
            rows.append((path, item))
    return rows


def indented_text(value: Any, indent: int = 0) -> str:
    """Nested ``key:\\tvalue`` lines, children indented by two spaces (the console dump)."""
    plain = to_plain(value)
    if not isinstance(plain, dict):
        return str(plain)
    lines = []
    pad = "  " * indent
    for key, item in plain.items():
        if isinstance(item, dict) and item:
            lines.append(f"{pad}{key}:")
            lines.append(indented_text(item, indent + 1))
        else:
            lines.append(f"{pad}{key}:\t{item}")
    return "\n".join(lines)


def markdown_table(value: Any) -> str:
    """A two-column markdown table of the flattened leaves (TensorBoard renders markdown)."""
    rows = ["| key | value |", "| --- | --- |"]
    for key, item in flatten(value):
        text = str(item).replace("|", "\\|").replace("\n", " ")
        rows.append(f"| {key} | {text} |")
    return "\n".join(rows)
