"""Demonstration files a configuration names (``behavioral_cloning.demo_path``,
``reward_signals.gail.demo_path``) must exist before any work, as mlagents-learn requires.

A ``demo_path`` is a ``.demo`` file or a folder holding ``.demo`` files; a relative path is
relative to the folder agents-learn runs in (as in mlagents-learn).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from trainers.settings.schema import GAILSettings, RewardSignalType, RunOptions, TrainerSettings

DEMO_SUFFIX = ".demo"


def demo_path_problems(options: RunOptions) -> list[str]:
    """One ``key.path: what is wrong`` line per demo_path that names no demonstrations."""
    problems: list[str] = []
    sections = [(f"behaviors.{name}", settings) for name, settings in options.behaviors.items()]
    if options.default_settings is not None:
        sections.append(("default_settings", options.default_settings))
    for where, settings in sections:
        for path, demo_path in _demo_paths(where, settings):
            problem = demo_path_problem(demo_path)
            if problem is not None:
                problems.append(f"{path}: {problem}")
    return problems


def demo_path_problem(demo_path: str) -> str | None:
    """What is wrong with ``demo_path`` (None: it names at least one .demo file)."""
    path = Path(demo_path)
    if path.is_dir():
        if not any(p.is_file() for p in path.glob(f"*{DEMO_SUFFIX}")):
            return f"{demo_path} is a folder with no {DEMO_SUFFIX} files in it"
        return None
    if not path.exists():
        return f"{demo_path} does not exist (a {DEMO_SUFFIX} file or a folder of them, relative to {Path.cwd()})"
    if path.suffix != DEMO_SUFFIX:
        return f"{demo_path} is not a {DEMO_SUFFIX} file"
    return None


def _demo_paths(where: str, settings: TrainerSettings) -> Iterator[tuple[str, str]]:
    for kind, signal in settings.reward_signals.items():
        if kind is RewardSignalType.GAIL and isinstance(signal, GAILSettings):
            yield f"{where}.reward_signals.gail.demo_path", signal.demo_path
    if settings.behavioral_cloning is not None:
        yield f"{where}.behavioral_cloning.demo_path", settings.behavioral_cloning.demo_path
