"""ML-Agents 0.28's YAML schema as recorded in ``tests/fixtures/mlagents_0_28/settings_keys.json``
(generated from its attrs classes by the script beside it), and a check of a configuration
mapping against it, so tests can tell whether 0.28 would load a file without importing mlagents.
The same for another recorded version (1.1's ``tests/fixtures/mlagents_1_1/settings_keys.json``,
in the same layout) by passing its path to ``load_schema``."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mlagents_0_28"
SETTINGS_KEYS = FIXTURES / "settings_keys.json"


@attrs.frozen
class Findings:
    """What ML-Agents 0.28 would not accept, as dotted paths (``behaviors.3DBall.even_checkpoints``)."""

    unknown_keys: tuple[str, ...] = ()  # keys 0.28's class has no field for
    nulls: tuple[str, ...] = ()  # null where 0.28's field is not Optional
    bad_values: tuple[str, ...] = ()  # enum values (or trainer / sampler types) 0.28 does not know

    @property
    def clean(self) -> bool:
        return not (self.unknown_keys or self.nulls or self.bad_values)


def load_schema(path: Path = SETTINGS_KEYS) -> dict[str, Any]:
    """The recorded schema: ``{"mlagents_version", "root", "classes": {name: {key: field}}}``;
    0.28's unless ``path`` names another (``tests/fixtures/mlagents_1_1/settings_keys.json``)."""
    data: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    return data


class _Walk:
    def __init__(self, schema: Mapping[str, Any]) -> None:
        self.classes = schema["classes"]
        self.unknown: list[str] = []
        self.nulls: list[str] = []
        self.bad: list[str] = []

    def value(self, value: Any, ref: Mapping[str, Any], path: str) -> None:
        kind = ref["kind"]
        if kind == "leaf":
            if "values" in ref and value not in ref["values"]:
                self.bad.append(f"{path}: {value!r}")
        elif kind == "class":
            self.mapping(value, ref["name"], path)
        elif kind == "mapping":
            for key, item in value.items():
                self.value(item, ref["of"], f"{path}.{key}")
        elif kind == "keyed":
            for key, item in value.items():
                if key in ref["classes"]:
                    self.mapping(item, ref["classes"][key], f"{path}.{key}")
                else:
                    self.unknown.append(f"{path}.{key}")
        elif kind == "list":
            for i, item in enumerate(value):
                self.value(item, ref["of"], f"{path}.{i}")
        elif kind == "sampler":
            self.sampler(value, ref, path)
        elif kind == "environment_parameter":
            if isinstance(value, Mapping) and "curriculum" in value:
                self.mapping(value, ref["curriculum"], path)
            else:
                self.sampler(value, ref["sampler"], path)
        else:
            raise ValueError(f"{path}: unknown kind {kind!r} in the recorded schema")

    def sampler(self, value: Any, ref: Mapping[str, Any], path: str) -> None:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return
        for key in value:
            if key not in ("sampler_type", "sampler_parameters"):
                self.unknown.append(f"{path}.{key}")
        name = ref["classes"].get(value.get("sampler_type"))
        if name is None:
            self.bad.append(f"{path}.sampler_type: {value.get('sampler_type')!r}")
        else:
            self.mapping(value.get("sampler_parameters"), name, f"{path}.sampler_parameters")

    def mapping(self, value: Any, class_name: str, path: str) -> None:
        fields = self.classes[class_name]
        for key, item in value.items():
            where = f"{path}.{key}" if path else str(key)
            field = fields.get(key)
            if field is None:
                self.unknown.append(where)
            elif item is None:
                if not field["nullable"]:
                    self.nulls.append(where)
            elif field["type"]["kind"] == "by_trainer_type":
                name = field["type"]["classes"].get(value.get("trainer_type", "ppo"))
                if name is not None:  # an unknown trainer_type is reported at that key
                    self.mapping(item, name, where)
            else:
                self.value(item, field["type"], where)


def check_configuration(data: Mapping[str, Any], schema: Mapping[str, Any] | None = None) -> Findings:
    """What in a run configuration mapping (a parsed configuration.yaml) ML-Agents 0.28's loader
    would refuse: keys it does not know, nulls where it needs a value, values it does not know.
    Another version's with its ``schema`` (``load_schema(path)``)."""
    schema = schema if schema is not None else load_schema()
    walk = _Walk(schema)
    walk.mapping(data, schema["root"], "")
    return Findings(tuple(walk.unknown), tuple(walk.nulls), tuple(walk.bad))
