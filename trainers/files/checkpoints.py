"""Checkpoint files, laid out as ML-Agents users expect (``run_logs/training_status.json``,
which lists them: :mod:`trainers.files.status`).

Per behavior, under ``results/<run-id>/<Behavior>/``: ``<Behavior>-<step>.pt`` and
``<Behavior>-<step>.onnx`` every checkpoint (the oldest removed beyond ``keep_checkpoints``)
and ``checkpoint.pt``, the latest state, which ``--resume`` reads. At the end,
``results/<run-id>/<Behavior>.onnx``. Files are written to a temporary name and renamed,
so a crash mid-write never leaves a truncated checkpoint behind. Checkpoints are read with
``torch.load(weights_only=True)``: a checkpoint file cannot run code.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import torch

from trainers.exceptions import CheckpointError
from trainers.files.status import CheckpointRecord, TrainingStatus

logger = logging.getLogger(__name__)

LATEST_CHECKPOINT = "checkpoint.pt"
# The replay buffer saved with the latest checkpoint (``save_replay_buffer``), one file per
# behavior, replaced at every checkpoint as ML-Agents' ``last_replay_buffer.hdf5`` is.
REPLAY_BUFFER_FILE = "last_replay_buffer.pt"


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
