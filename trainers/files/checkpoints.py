"""Checkpoint files and ``run_logs/training_status.json``, laid out as ML-Agents users expect.

Per behavior, under ``results/<run-id>/<Behavior>/``: ``<Behavior>-<step>.pt`` and
``<Behavior>-<step>.onnx`` every checkpoint (the oldest removed beyond ``keep_checkpoints``)
and ``checkpoint.pt``, the latest state, which ``--resume`` reads. At the end,
``results/<run-id>/<Behavior>.onnx``. Files are written to a temporary name and renamed,
so a crash mid-write never leaves a truncated checkpoint behind. Checkpoints are read with
``torch.load(weights_only=True)``: a checkpoint file cannot run code.
"""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import threading
import time
import zipfile
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import attrs
import torch

from trainers.exceptions import CheckpointError

logger = logging.getLogger(__name__)

STATUS_FORMAT_VERSION = "0.3.0"
LATEST_CHECKPOINT = "checkpoint.pt"
# The replay buffer saved with the latest checkpoint (``save_replay_buffer``), one file per
# behavior, replaced at every checkpoint as ML-Agents' ``last_replay_buffer.hdf5`` is.
REPLAY_BUFFER_FILE = "last_replay_buffer.pt"


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
                "torch_version": torch.__version__,
            }
        }
        data.update(self._behaviors)
        _atomic_write_text(self.path, json.dumps(data, indent=4))


class BehaviorCheckpoints:
    """Writes and reads one behavior's checkpoints under ``run_dir/<behavior>/``."""

    def __init__(self, run_dir: Path, behavior: str, keep_checkpoints: int, status: TrainingStatus):
        self.run_dir = Path(run_dir)
        self.behavior = behavior
        self.directory = self.run_dir / behavior
        self.keep_checkpoints = max(int(keep_checkpoints), 1)
        self.status = status

    @property
    def latest_path(self) -> Path:
        return self.directory / LATEST_CHECKPOINT

    def save(
        self, step: int, state: dict[str, Any], export_onnx: Callable[[Path], None], reward: float | None
    ) -> CheckpointRecord:
        """Write ``<B>-<step>.pt``, ``<B>-<step>.onnx`` and ``checkpoint.pt``; drop the oldest."""
        self.directory.mkdir(parents=True, exist_ok=True)
        pt_path = self.directory / f"{self.behavior}-{step}.pt"
        onnx_path = self.directory / f"{self.behavior}-{step}.onnx"
        _atomic_torch_save(state, pt_path)
        shutil.copyfile(pt_path, self.latest_path.with_suffix(".tmp"))
        os.replace(self.latest_path.with_suffix(".tmp"), self.latest_path)
        export_onnx(onnx_path)
        logger.info("Exported %s", onnx_path)
        record = CheckpointRecord(step, str(onnx_path), reward, time.time(), (str(pt_path),))
        for old in self.status.add_checkpoint(self.behavior, record, self.keep_checkpoints):
            for path in (old.file_path, *old.auxillary_file_paths):
                try:
                    os.remove(path)
                except FileNotFoundError:
                    pass
        return record

    @property
    def replay_buffer_path(self) -> Path:
        return self.directory / REPLAY_BUFFER_FILE

    def save_replay_buffer(self, step: int, state: dict[str, Any]) -> None:
        """Write the replay buffer of the checkpoint at ``step`` (replacing the previous one)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        _atomic_torch_save({"step": int(step), "replay_buffer": state}, self.replay_buffer_path)
        logger.info("Saved the replay buffer to %s", self.replay_buffer_path)

    def load_replay_buffer(self) -> tuple[int, dict[str, Any]] | None:
        """(step it was saved at, contents), or None when no replay buffer was saved."""
        if not self.replay_buffer_path.exists():
            return None
        saved = load_state(self.replay_buffer_path)
        if "replay_buffer" not in saved:
            raise CheckpointError(f"{self.replay_buffer_path}: not a saved replay buffer")
        return int(saved.get("step", -1)), saved["replay_buffer"]

    def save_final(self, record: CheckpointRecord) -> Path:
        """Copy the last checkpoint's ONNX model to ``run_dir/<B>.onnx`` and record it."""
        final_path = self.run_dir / f"{self.behavior}.onnx"
        shutil.copyfile(record.file_path, final_path)
        logger.info("Copied %s to %s.", record.file_path, final_path)
        self.status.set_final(self.behavior, attrs.evolve(record, file_path=str(final_path)))
        return final_path

    def load_latest(self) -> dict[str, Any]:
        """The state saved last (for --resume); a clear error if there is none."""
        if not self.latest_path.exists():
            raise CheckpointError(
                f"cannot resume behavior {self.behavior!r}: {self.latest_path} does not exist "
                "(was this run ever checkpointed? start it without --resume, or with --force)"
            )
        return load_state(self.latest_path)


def load_state(path: Path) -> dict[str, Any]:
    """A checkpoint's contents, loaded without unpickling arbitrary objects."""
    path = Path(path)
    try:
        is_archive = zipfile.is_zipfile(path)
    except OSError as error:
        raise CheckpointError(f"{path}: cannot read checkpoint ({error.strerror or error})") from None
    if not is_archive:
        raise CheckpointError(
            f"{path}: not a checkpoint (not a file written by torch.save); was it truncated or replaced?"
        )
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as error:
        if "weights only" not in str(error).lower():
            raise CheckpointError(f"{path}: not a checkpoint (its contents cannot be read)") from None
        raise CheckpointError(
            f"{path}: cannot load checkpoint (it holds objects other than tensors and plain data, "
            "which agents-learn refuses to unpickle)"
        ) from None
    except (OSError, RuntimeError, ValueError, EOFError) as error:
        raise CheckpointError(f"{path}: cannot load checkpoint ({' '.join(str(error).split())[:200]})") from None
    if not isinstance(state, dict):
        raise CheckpointError(f"{path}: not a checkpoint (it holds a {type(state).__name__}, not a dict of state)")
    return state


# What an interrupted atomic write leaves behind (``<name>.tmp`` next to the file it replaces).
PARTIAL_WRITE_SUFFIX = ".tmp"


def remove_partial_writes(run_dir: Path) -> list[Path]:
    """Delete the temporary files a run killed mid-write left in ``run_dir``; returns them."""
    removed = []
    for path in Path(run_dir).rglob(f"*{PARTIAL_WRITE_SUFFIX}"):
        if path.is_file():
            path.unlink()
            removed.append(path)
    return removed


def _atomic_torch_save(state: dict[str, Any], path: Path) -> None:
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def _atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
