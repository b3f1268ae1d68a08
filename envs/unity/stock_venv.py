"""A cached virtualenv with the stock protocol stack (protobuf 3.20 + mlagents-envs 0.28).

Used by the byte-compatibility test and the protocol benchmark to run the unmodified
generated modules next to ours. Created once per requirement set under ``cache_dir``
(a marker file records a completed install) with the ordinary pip client.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Sequence

STOCK_PROTOBUF = "protobuf==3.20.3"
STOCK_MLAGENTS_ENVS = "mlagents-envs==0.28.0"
# What mlagents_envs.environment needs at run time besides protobuf (versions from constraints).
RUNTIME_PACKAGES = ("numpy", "grpcio", "pillow", "cloudpickle", "pyyaml")


def default_cache_dir() -> str:
    """$AGENTS_LEARN_CACHE, else $XDG_CACHE_HOME/agents-learn, else ~/.cache/agents-learn."""
    if os.environ.get("AGENTS_LEARN_CACHE"):
        return os.environ["AGENTS_LEARN_CACHE"]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "agents-learn")


def _pins(constraints_file: str | None, names: Sequence[str]) -> list:
    """``name==version`` for each name pinned in constraints_file (else the bare name)."""
    pinned = {}
    if constraints_file and os.path.exists(constraints_file):
        with open(constraints_file, encoding="utf-8") as f:
            for line in f:
                line = line.split("#")[0].strip()
                if "==" in line:
                    name, version = line.split("==", 1)
                    pinned[name.strip().lower()] = version.strip()
    return [f"{n}=={pinned[n]}" if n in pinned else n for n in names]


def ensure_stock_venv(
    cache_dir: str | None = None,
    *,
    runtime: bool = False,
    constraints_file: str | None = None,
    timeout_s: float = 600.0,
) -> str:
    """Path of the stock venv's python, creating the venv if needed.

    runtime=False: protobuf 3.20.3 and mlagents-envs 0.28.0 only (enough to import the
    generated modules). runtime=True adds numpy, grpcio, pillow, cloudpickle and pyyaml,
    pinned from ``constraints_file`` where it lists them, for a working UnityEnvironment.
    """
    packages = [STOCK_PROTOBUF] + (_pins(constraints_file, RUNTIME_PACKAGES) if runtime else [])
    key = hashlib.sha256("\n".join([sys.version, STOCK_MLAGENTS_ENVS] + packages).encode()).hexdigest()[:12]
    root = os.path.join(cache_dir or default_cache_dir(), f"stock-protobuf-venv-{key}")
    python = os.path.join(root, "bin", "python")
    marker = os.path.join(root, ".complete")
    if os.path.exists(marker) and os.path.exists(python):
        return python

    def run(args: list) -> None:
        subprocess.run(args, check=True, timeout=timeout_s, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    try:
        run([sys.executable, "-m", "venv", "--clear", root])
        pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        run(pip + packages)
        run(pip + ["--no-deps", STOCK_MLAGENTS_ENVS])
    except subprocess.CalledProcessError as e:
        raise RuntimeError(
            f"could not build the stock protobuf venv at {root}: {e.stderr.decode(errors='replace')[-2000:]}"
        ) from e
    with open(marker, "w", encoding="utf-8") as f:
        f.write("\n".join(packages) + "\n")
    return python
