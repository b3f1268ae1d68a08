"""Where test inputs live: ML-Agents' example configs are in ``shared/`` beside the checkout
(CI clones the repository with ``shared/`` next to it)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MLAGENTS_CONFIGS = next(
    (p for p in (REPO.parent / "shared" / "mlagents-configs", Path("/work/shared/mlagents-configs")) if p.is_dir()),
    REPO.parent / "shared" / "mlagents-configs",
)
