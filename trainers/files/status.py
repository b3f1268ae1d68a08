"""``run_logs/training_status.json``: the checkpoints of every behavior and the values ML-Agents
keeps beside them (``elo``, ``lesson_num``), in ML-Agents' layout.

A module of its own, without torch: a run reads it (``--resume``, the curriculum's lesson)
before it launches its environments, and torch loads while they start.
"""

from __future__ import annotations

import json
import os
import threading
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs

from trainers.exceptions import CheckpointError

STATUS_FORMAT_VERSION = "0.3.0"


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


@attrs.frozen
class CheckpointRecord:
    """One entry of training_status.json (key names as ML-Agents writes them)."""

    steps: int
    file_path: str
    reward: float | None
    creation_time: float
    auxillary_file_paths: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        return {
            "steps": int(self.steps),
            "file_path": self.file_path,
            "reward": None if self.reward is None else float(self.reward),
            "creation_time": float(self.creation_time),
            "auxillary_file_paths": list(self.auxillary_file_paths),
        }

    @staticmethod
    def from_json(data: dict[str, Any]) -> CheckpointRecord:
        return CheckpointRecord(
            steps=int(data["steps"]),
            file_path=str(data["file_path"]),
            reward=None if data.get("reward") is None else float(data["reward"]),
            creation_time=float(data.get("creation_time", 0.0)),
            auxillary_file_paths=tuple(data.get("auxillary_file_paths", ())),
        )


class TrainingStatus:
    """``run_logs/training_status.json``: checkpoints per behavior, shared by every trainer
    of a run (thread-safe); written after every change."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._behaviors: dict[str, dict[str, Any]] = {}

    @staticmethod
    def load(path: Path) -> TrainingStatus:
        """Read an existing file (for --resume); a missing file gives an empty status."""
        status = TrainingStatus(path)
        if not status.path.exists():
            return status
        try:
            data = json.loads(status.path.read_text())
        except (OSError, ValueError) as error:
            raise CheckpointError(f"{status.path}: cannot read training status ({error})") from None
        status._behaviors = {k: v for k, v in data.items() if k != "metadata" and isinstance(v, dict)}
        return status

    def checkpoints(self, behavior: str) -> list[CheckpointRecord]:
        with self._lock:
            entries = self._behaviors.get(behavior, {}).get("checkpoints", [])
            return [CheckpointRecord.from_json(e) for e in entries]

    def add_checkpoint(self, behavior: str, record: CheckpointRecord, keep: int) -> list[CheckpointRecord]:
        """Record a checkpoint; returns the records dropped beyond ``keep`` (oldest first)."""
        with self._lock:
            entry = self._behaviors.setdefault(behavior, {})
            entries = entry.setdefault("checkpoints", [])
            entries.append(record.as_json())
            dropped = entries[: max(len(entries) - keep, 0)]
            entry["checkpoints"] = entries[len(dropped) :]
            self._write_locked()
        return [CheckpointRecord.from_json(e) for e in dropped]

    def set_final(self, behavior: str, record: CheckpointRecord) -> None:
        with self._lock:
            self._behaviors.setdefault(behavior, {})["final_checkpoint"] = record.as_json()
            self._write_locked()

    def final(self, behavior: str) -> CheckpointRecord | None:
        with self._lock:
            data = self._behaviors.get(behavior, {}).get("final_checkpoint")
        return None if data is None else CheckpointRecord.from_json(data)

    def set_parameter(self, behavior: str, key: str, value: float | int | str | None) -> None:
        """A per-behavior value ML-Agents keeps beside the checkpoints (``elo``, ``lesson_num``)."""
        with self._lock:
            self._behaviors.setdefault(behavior, {})[key] = value
            self._write_locked()

    def parameter(self, behavior: str, key: str) -> Any:
        """The value :meth:`set_parameter` recorded (or a resumed file held), else None."""
        with self._lock:
            return self._behaviors.get(behavior, {}).get(key)

    def _write_locked(self) -> None:
        data: dict[str, Any] = {
            "metadata": {
                "stats_format_version": STATUS_FORMAT_VERSION,
                "agents_learn_version": _version("agents-learn"),
                "mlagents_version": _version("mlagents-envs"),
                "torch_version": _version("torch"),
            }
        }
        data.update(self._behaviors)
        _atomic_write_text(self.path, json.dumps(data, indent=4))


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
