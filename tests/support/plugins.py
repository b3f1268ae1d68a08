"""Fake installed plugins: a module plus a ``.dist-info`` declaring its entry points, in a
folder that goes on ``sys.path`` (or ``PYTHONPATH`` of a subprocess)."""

from __future__ import annotations

import textwrap
from pathlib import Path


def write_fake_plugin(folder: Path, module: str, source: str, group: str, entry_points: dict[str, str]) -> None:
    """Write ``<module>.py`` and ``fake_plugin_<module>-1.0.dist-info`` (entry points of
    ``group``: name -> ``module:attr``) into ``folder``."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    dist = folder / f"fake_plugin_{module}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: fake-plugin-{module}\nVersion: 1.0\n")
    body = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (dist / "entry_points.txt").write_text(f"[{group}]\n{body}")
