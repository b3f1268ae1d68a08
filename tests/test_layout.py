"""The package layout DESIGN.md promises: imports flow one way between packages and there is
no import circle between modules (counting imports inside functions and TYPE_CHECKING blocks,
which hide circles rather than break them)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("stats", "envs", "processors", "trainers", "orchestration")
# What each package may import of ours (besides itself).
ALLOWED = {
    "stats": set(),
    "envs": set(),
    "processors": {"stats"},
    "trainers": {"processors", "stats"},
    "orchestration": {"envs", "processors", "stats", "trainers"},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """First-party modules ``path`` imports, anywhere in the file."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return {m for m in found if m.split(".")[0] in PACKAGES}


def first_party_modules() -> dict[str, Path]:
    return {module_name(p): p for package in PACKAGES for p in (REPO / package).rglob("*.py")}


def test_packages_import_only_what_the_design_allows():
    problems = []
    for name, path in first_party_modules().items():
        package = name.split(".")[0]
        for imported in imports_of(path):
            other = imported.split(".")[0]
            if other != package and other not in ALLOWED[package]:
                problems.append(f"{name} imports {imported}")
    assert not problems, problems


# Inside trainers: what each part (a sub-package, or a top-level module) may import of the
# others; the order of trainers/__init__.py's list.
TRAINERS_BASE = {"exceptions", "seeding", "settings"}
TRAINERS_ALLOWED = {
    "exceptions": set(),
    "seeding": set(),
    "settings": {"exceptions"},
    "networks": TRAINERS_BASE,
    "files": TRAINERS_BASE | {"networks"},
    "reward_signals": TRAINERS_BASE | {"networks", "files"},
    "ppo": TRAINERS_BASE | {"networks", "files", "reward_signals"},
    "poca": TRAINERS_BASE | {"networks", "files", "reward_signals", "ppo"},
    "sac": TRAINERS_BASE | {"networks", "files", "reward_signals"},
    "loop": TRAINERS_BASE | {"networks", "files", "reward_signals", "ppo", "poca", "sac"},
}


def test_trainers_parts_import_down_the_layers():
    problems = []
    for name, path in first_party_modules().items():
        parts = name.split(".")
        if parts[0] != "trainers" or len(parts) < 2:
            continue
        part = parts[1]
        for imported in imports_of(path):
            other = imported.split(".")
            if other[0] != "trainers" or len(other) < 2 or other[1] == part:
                continue
            if other[1] not in TRAINERS_ALLOWED[part]:
                problems.append(f"{name} imports {imported}")
    assert not problems, problems


def test_trainers_has_a_short_top_level():
    """A newcomer sees the concepts, not every file: at most 10 entries besides __init__."""
    entries = [p.name for p in (REPO / "trainers").iterdir() if p.name not in ("__init__.py", "__pycache__")]
    assert set(entries) == {f"{part}.py" if part in ("exceptions", "seeding") else part for part in TRAINERS_ALLOWED}
    assert len(entries) <= 10


def test_no_import_circles_between_modules():
    modules = first_party_modules()
    graph = {}
    for name, path in modules.items():
        # an import of a package's attribute counts as the package or the submodule it names
        graph[name] = {m for m in imports_of(path) if m in modules and m != name}
    circles = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1 and not node.startswith(nxt + "."):  # a submodule using its package is fine
                circles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    assert not circles, circles
