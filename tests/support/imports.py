"""What a process imported: ``python -X importtime`` writes one line per module to stderr, which
tests read to show that a path never loads something heavy (torch, its compiler)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def run_cli_timing_imports(cwd: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``agents-learn *args`` in a subprocess under ``-X importtime``."""
    command = [sys.executable, "-X", "importtime", "-m", "orchestration.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def imported_modules(stderr: str) -> list[str]:
    """The modules named by ``-X importtime`` lines in ``stderr``, in import order."""
    return [line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")]
