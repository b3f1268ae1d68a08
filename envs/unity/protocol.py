"""The ML-Agents protocol messages, usable with any protobuf from 3.20 to 7.x.

mlagents-envs 0.28 ships protoc-3 generated modules (``*_pb2.py``) that only execute under
protobuf 3.20, whose parser is pure Python. Each module carries its ``.proto`` file as a
serialized ``FileDescriptorProto`` literal. Under protobuf >= 4 we read those literals out of
the source files with :mod:`ast` (never executing the modules), add them to a private
descriptor pool and build the message classes with the compiled (upb) backend. A meta-path
finder then serves these modules under the stock names
(``mlagents_envs.communicator_objects.<name>_pb2``), so ``mlagents_envs.environment`` and
everything else in mlagents_envs uses them unchanged. The wire format is the same: the
classes come from the very same descriptors.

Under protobuf 3.x nothing is changed: the stock modules work there.
"""

from __future__ import annotations

import ast
import importlib.abc
import importlib.machinery
import os
import sys
import types
from collections.abc import Iterable, Sequence

from envs.exceptions import ProtocolSetupError

PB2_PACKAGE = "mlagents_envs.communicator_objects"
_MARKER = "__agents_learn_protocol__"


def protobuf_major() -> int:
    """Major version of the installed protobuf runtime (3, 4, 5, 6, 7...)."""
    import google.protobuf

    return int(google.protobuf.__version__.split(".")[0])


def protobuf_backend() -> str:
    """'upb', 'cpp' or 'python': which protobuf implementation parses messages."""
    from google.protobuf.internal import api_implementation

    return api_implementation.Type()


def _pb2_directory() -> str:
    """Folder of the installed generated modules, found without importing any of them."""
    import mlagents_envs.communicator_objects as package

    return list(package.__path__)[0]


def pb2_module_names() -> list[str]:
    """Short names (``agent_info_pb2``...) of the generated message modules installed."""
    return sorted(name[:-3] for name in os.listdir(_pb2_directory()) if name.endswith("_pb2.py"))


def serialized_file_descriptor(source: str) -> bytes:
    """The ``serialized_pb`` literal of a protoc-generated module's source text.

    Handles both the protoc 3.0-3.19 form ``FileDescriptor(serialized_pb=_b('...'))`` and
    the 3.20+ form ``AddSerializedFile(b'...')``. Raises ValueError if none is found.
    """
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func_name = getattr(node.func, "attr", getattr(node.func, "id", ""))
        candidates: list[ast.expr] = []
        if func_name == "FileDescriptor":
            candidates = [kw.value for kw in node.keywords if kw.arg == "serialized_pb"]
        elif func_name == "AddSerializedFile" and node.args:
            candidates = [node.args[0]]
        for value in candidates:
            # `_b('...')` wraps a latin-1 str literal; newer protoc writes bytes directly.
            if isinstance(value, ast.Call) and len(value.args) == 1:
                value = value.args[0]
            literal = ast.literal_eval(value)
            return literal.encode("latin1") if isinstance(literal, str) else bytes(literal)
    raise ValueError("no serialized file descriptor in this generated module")


def read_file_descriptors(names: Iterable[str] | None = None) -> dict[str, bytes]:
    """Serialized FileDescriptorProtos by module short name, read from the installed sources."""
    directory = _pb2_directory()
    result: dict[str, bytes] = {}
    for name in names if names is not None else pb2_module_names():
        path = os.path.join(directory, name + ".py")
        with open(path, encoding="utf-8") as f:
            try:
                result[name] = serialized_file_descriptor(f.read())
            except (ValueError, SyntaxError) as e:
                raise ProtocolSetupError(f"cannot read the protocol description from {path}: {e}") from e
    return result


def build_modules(serialized: dict[str, bytes]) -> dict[str, types.ModuleType]:
    """Build stand-ins for the generated modules from serialized file descriptors.

    Each module has DESCRIPTOR, one class per top-level message, each top-level enum as an
    EnumTypeWrapper and its values as ints: the names the generated modules export.
    Classes come from a private descriptor pool, so they never clash with other users of
    the default pool (a failed import of the stock modules leaves half-registered files
    there). Keys are full module names.
    """
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from google.protobuf.internal import enum_type_wrapper

    protos = {}
    for name, data in serialized.items():
        proto = descriptor_pb2.FileDescriptorProto.FromString(data)
        protos[proto.name] = (name, proto)

    pool = descriptor_pool.DescriptorPool()
    added: set = set()

    def add(file_name: str) -> None:
        if file_name in added:
            return
        if file_name not in protos:
            raise ProtocolSetupError(f"protocol file {file_name} is missing from mlagents_envs")
        for dependency in protos[file_name][1].dependency:
            add(dependency)
        pool.Add(protos[file_name][1])
        added.add(file_name)

    for file_name in protos:
        add(file_name)

    get_class = getattr(message_factory, "GetMessageClass", None)
    if get_class is None:  # protobuf < 4.22
        get_class = message_factory.MessageFactory(pool).GetPrototype

    modules: dict[str, types.ModuleType] = {}
    for file_name, (name, _) in protos.items():
        file_descriptor = pool.FindFileByName(file_name)
        module = types.ModuleType(f"{PB2_PACKAGE}.{name}")
        module.__doc__ = f"ML-Agents protocol messages of {file_name}, built by envs.unity.protocol."
        setattr(module, "DESCRIPTOR", file_descriptor)  # noqa: B010 - a module attribute protobuf reads
        setattr(module, _MARKER, True)
        for message_name, descriptor in file_descriptor.message_types_by_name.items():
            setattr(module, message_name, _message_class(descriptor, get_class))
        for enum_name, descriptor in file_descriptor.enum_types_by_name.items():
            setattr(module, enum_name, enum_type_wrapper.EnumTypeWrapper(descriptor))
            for value in descriptor.values:
                setattr(module, value.name, value.number)
        modules[module.__name__] = module
    return modules


def _message_class(descriptor, get_class):
    """Class of ``descriptor`` with its nested message classes as attributes (as generated
    code has them; protobuf 3.x's factory leaves them off)."""
    cls = get_class(descriptor)
    for nested in descriptor.nested_types:
        if not hasattr(cls, nested.name):
            setattr(cls, nested.name, _message_class(nested, get_class))
    return cls


class _Loader(importlib.abc.Loader):
    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return self._module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module was built from descriptors."""


class ProtocolFinder(importlib.abc.MetaPathFinder):
    """Serves ``mlagents_envs.communicator_objects.*_pb2`` from descriptor-built modules.

    The modules are built on the first request (about 20 ms), never at install time.
    """

    def __init__(self) -> None:
        self._modules: dict[str, types.ModuleType] | None = None

    def modules(self) -> dict[str, types.ModuleType]:
        if self._modules is None:
            self._modules = build_modules(read_file_descriptors())
        return self._modules

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if not (fullname.startswith(PB2_PACKAGE + ".") and fullname.endswith("_pb2")):
            return None
        module = self.modules().get(fullname)
        if module is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(module), origin="descriptors")


def _installed_finder() -> ProtocolFinder | None:
    for finder in sys.meta_path:
        if isinstance(finder, ProtocolFinder):
            return finder
    return None


def _loaded_stock_modules() -> list[str]:
    return [
        name
        for name, module in list(sys.modules.items())
        if name.startswith(PB2_PACKAGE + ".")
        and name.endswith("_pb2")
        and module is not None
        and not getattr(module, _MARKER, False)
    ]


def install() -> str:
    """Make ``mlagents_envs`` import protocol modules that work with the installed protobuf.

    Idempotent and cheap (nothing is built until a protocol module is imported). Returns
    which modules mlagents_envs gets: ``"stock"`` (protobuf 3.x, or stock modules already
    loaded and working) or ``"descriptors"`` (built by this module). Raises
    ProtocolSetupError if stock modules were loaded in a way that cannot work.
    """
    if _installed_finder() is not None:
        return "descriptors"
    if protobuf_major() < 4:
        return "stock"
    stock = _loaded_stock_modules()
    if stock:
        # Only possible where the stock modules actually executed (pure-Python protobuf 4.x);
        # mixing them with ours would give classes from two pools that cannot be copied
        # into each other, so keep the stock ones.
        for name in stock:
            if not hasattr(sys.modules[name], "DESCRIPTOR"):
                raise ProtocolSetupError(
                    f"{name} was imported in a broken state under protobuf "
                    f"{_protobuf_version()}; import envs.unity before mlagents_envs.environment"
                )
        return "stock"
    sys.meta_path.insert(0, ProtocolFinder())
    return "descriptors"


def uninstall() -> None:
    """Remove the finder and the modules it served (for tests that compare both states)."""
    finder = _installed_finder()
    if finder is None:
        return
    sys.meta_path.remove(finder)
    for name in list(sys.modules):
        if getattr(sys.modules[name], _MARKER, False):
            del sys.modules[name]


def _protobuf_version() -> str:
    import google.protobuf

    return google.protobuf.__version__


def check_environment_module() -> None:
    """Import ``mlagents_envs.environment``, turning protobuf's opaque failure into a clear one."""
    install()
    try:
        import mlagents_envs.environment  # noqa: F401
    except TypeError as e:
        if "Descriptors cannot be created directly" in str(e) or "descriptor" in str(e).lower():
            raise ProtocolSetupError(
                f"mlagents_envs' protocol modules failed to load under protobuf "
                f"{_protobuf_version()}: {e.__class__.__name__}: {str(e).splitlines()[0]}. "
                "Import envs.unity before anything that imports mlagents_envs.environment."
            ) from e
        raise
