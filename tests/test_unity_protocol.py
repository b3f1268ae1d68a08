"""envs.unity.protocol: descriptor-built ML-Agents messages, byte-compatible with the stock ones."""

from __future__ import annotations

import base64
import inspect
import json
import os
import subprocess
import sys
import textwrap

import pytest

from envs.unity import protocol
from envs.unity.stock_venv import ensure_stock_venv

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fill(message, depth: int = 0) -> None:
    """Set every field of ``message`` to a non-default value derived from its number.

    Self-contained (shipped as source into the stock venv), descriptor-driven so the same
    content is built by either protobuf.
    """
    from google.protobuf.descriptor import FieldDescriptor as F

    for field in message.DESCRIPTOR.fields:
        n = field.number
        repeated = getattr(field, "is_repeated", None)  # protobuf >= 6 (7 drops .label)
        if repeated is None:
            repeated = field.label == F.LABEL_REPEATED
        if field.type == F.TYPE_MESSAGE:
            if field.message_type.GetOptions().map_entry:
                value_field = field.message_type.fields_by_name["value"]
                container = getattr(message, field.name)
                for key in ("b?team=1", "a?team=0"):
                    if value_field.type == F.TYPE_MESSAGE:
                        if depth < 4:
                            fill(container[key], depth + 1)
                    else:
                        container[key] = n
            elif depth < 4:
                if repeated:
                    for _ in range(2):
                        fill(getattr(message, field.name).add(), depth + 1)
                else:
                    fill(getattr(message, field.name), depth + 1)
            continue
        if field.type in (F.TYPE_FLOAT, F.TYPE_DOUBLE):
            values = [n + 0.25, -n - 1.5]
        elif field.type == F.TYPE_BOOL:
            values = [True, False, True]
        elif field.type == F.TYPE_STRING:
            values = [f"s{n}?team={depth}", "x"]
        elif field.type == F.TYPE_BYTES:
            values = [bytes(range(n, n + 40)), b"\x00\xff"]
        elif field.type == F.TYPE_ENUM:
            values = [v.number for v in field.enum_type.values][-1:] * 2
        else:
            values = [n * 1000 + depth, -n]
        if repeated:
            getattr(message, field.name).extend(values)
        else:
            setattr(message, field.name, values[0])


def all_message_names(modules) -> list:
    """(module short name, dotted class path) of every message type, nested ones included."""
    result = []

    def walk(module_name, prefix, descriptor):
        if descriptor.GetOptions().map_entry:
            return
        result.append((module_name, prefix + descriptor.name))
        for nested in descriptor.nested_types:
            walk(module_name, prefix + descriptor.name + ".", nested)

    for full_name, module in sorted(modules.items()):
        for descriptor in module.DESCRIPTOR.message_types_by_name.values():
            walk(full_name.rsplit(".", 1)[1], "", descriptor)
    return result


def resolve(module, dotted: str):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


STOCK_SCRIPT = """
import base64, importlib, json, sys
{fill}
def resolve(module, dotted):
    obj = module
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj
request = json.load(sys.stdin)
answer = {{}}
for key, payload in request.items():
    module_name, dotted = key.split(":")
    cls = resolve(importlib.import_module("mlagents_envs.communicator_objects." + module_name), dotted)
    theirs = cls()
    fill(theirs)
    decoded = cls.FromString(base64.b64decode(payload))
    answer[key] = {{
        "encoded": base64.b64encode(theirs.SerializeToString(deterministic=True)).decode(),
        "reencoded": base64.b64encode(decoded.SerializeToString(deterministic=True)).decode(),
        "equal": decoded == theirs,
    }}
import google.protobuf
from google.protobuf.internal import api_implementation
answer["__runtime__"] = [google.protobuf.__version__, api_implementation.Type()]
json.dump(answer, sys.stdout)
"""


@pytest.fixture(scope="module")
def built_modules():
    """Our descriptor-built modules (built directly, whatever protobuf is installed)."""
    return protocol.build_modules(protocol.read_file_descriptors())


@pytest.fixture(scope="module")
def stock_python(request):
    """Python of a cached venv with protobuf 3.20.3 and the stock mlagents-envs 0.28 modules
    (built afresh when pytest runs without its cache, ``-p no:cacheprovider``)."""
    pytest_cache = getattr(request.config, "cache", None)
    cache = pytest_cache.mkdir("stock-protobuf") if pytest_cache else None
    return ensure_stock_venv(str(cache) if cache else None)


def test_every_generated_module_has_a_descriptor(built_modules):
    names = protocol.pb2_module_names()
    assert "unity_message_pb2" in names and "agent_info_pb2" in names
    assert len(built_modules) == len(names)
    for name, data in protocol.read_file_descriptors().items():
        from google.protobuf import descriptor_pb2

        proto = descriptor_pb2.FileDescriptorProto.FromString(data)
        assert proto.name == f"mlagents_envs/communicator_objects/{name[:-4]}.proto"
    # Top-level enum values are module attributes, as in the generated modules.
    command = built_modules["mlagents_envs.communicator_objects.command_pb2"]
    assert (command.STEP, command.RESET, command.QUIT) == (0, 1, 2)
    assert built_modules["mlagents_envs.communicator_objects.observation_pb2"].PNG == 1


def test_serialized_descriptor_reader_handles_both_protoc_styles():
    old = "DESCRIPTOR = _descriptor.FileDescriptor(name='x', serialized_pb=_b('\\n\\x01x'))"
    new = "DESCRIPTOR = _descriptor_pool.Default().AddSerializedFile(b'\\n\\x01x')"
    assert protocol.serialized_file_descriptor(old) == b"\n\x01x"
    assert protocol.serialized_file_descriptor(new) == b"\n\x01x"
    with pytest.raises(ValueError):
        protocol.serialized_file_descriptor("x = 1")


def test_every_message_type_is_byte_compatible_with_stock(built_modules, stock_python):
    names = all_message_names(built_modules)
    assert len(names) == 23  # 21 files: 20 top-level messages, 3 nested (FloatData, two lists)
    ours = {}
    for module_name, dotted in names:
        cls = resolve(built_modules[f"mlagents_envs.communicator_objects.{module_name}"], dotted)
        message = cls()
        fill(message)
        ours[f"{module_name}:{dotted}"] = message
    request = {key: base64.b64encode(m.SerializeToString(deterministic=True)).decode() for key, m in ours.items()}
    script = STOCK_SCRIPT.format(fill=textwrap.dedent(inspect.getsource(fill)))
    result = subprocess.run(
        [stock_python, "-c", script],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    answer = json.loads(result.stdout)
    assert answer.pop("__runtime__") == ["3.20.3", "python"]
    assert set(answer) == set(ours)
    for key, message in ours.items():
        stock_bytes = base64.b64decode(answer[key]["encoded"])
        assert stock_bytes == base64.b64decode(request[key]), key  # same content, same bytes
        assert answer[key]["equal"], key  # stock decodes ours to the same message
        assert base64.b64decode(answer[key]["reencoded"]) == stock_bytes, key
        decoded = type(message).FromString(stock_bytes)  # ours decodes stock's
        assert decoded == message, key
        # Only CustomResetParametersProto has no fields (so encodes to nothing).
        assert (len(stock_bytes) == 0) == (not message.DESCRIPTOR.fields), key


def test_fill_sets_fields_so_the_comparison_means_something(built_modules):
    agent_info = built_modules["mlagents_envs.communicator_objects.agent_info_pb2"].AgentInfoProto()
    fill(agent_info)
    assert agent_info.reward == 7.25 and agent_info.id == 10000
    assert len(agent_info.observations) == 2 and list(agent_info.observations[0].shape) == [1001, -1]


def _run(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60, cwd=REPO
    )


@pytest.mark.parametrize(
    "code",
    [
        # ours first, then the stock module that mlagents_envs users import
        """
        import envs.unity
        import mlagents_envs.environment
        from envs.unity import UnityEnvironment
        print(UnityEnvironment.__mro__[1].__module__)
        """,
        # mlagents_envs modules that do not load protocol messages first
        """
        import mlagents_envs, mlagents_envs.base_env, mlagents_envs.exception
        from envs.unity import UnityEnvironment
        print(UnityEnvironment.__mro__[1].__module__)
        """,
        # a failed stock import first (what protobuf >= 4 does to it), then ours
        """
        try:
            import mlagents_envs.side_channel.stats_side_channel
        except TypeError:
            pass
        from envs.unity import UnityEnvironment
        print(UnityEnvironment.__mro__[1].__module__)
        """,
        # any envs module first (envs/__init__ registers the hook), then side channels
        """
        import envs.exceptions
        import mlagents_envs.side_channel.stats_side_channel
        from envs.unity import UnityEnvironment
        print(UnityEnvironment.__mro__[1].__module__)
        """,
    ],
    ids=["envs-first", "mlagents-first", "after-failed-stock-import", "envs-package-first"],
)
def test_import_orders(code):
    result = _run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mlagents_envs.environment"


def test_backend_matches_protobuf_version():
    mode = protocol.install()
    if protocol.protobuf_major() >= 4:
        assert mode == "descriptors"
        assert protocol.protobuf_backend() in ("upb", "cpp")
        from mlagents_envs.communicator_objects import unity_message_pb2

        assert getattr(unity_message_pb2, "__agents_learn_protocol__", False)
    else:
        assert mode == "stock"
