"""One child process per worker (``--num-envs``), each owning its environment.

Workers are polled asynchronously, so a slow worker does not stall the others. A worker that
does not answer in time is killed and reported HUNG; one whose pipe breaks is reported LOST.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import sys
import time
from collections.abc import Mapping
from multiprocessing.connection import Connection, wait
from typing import Any, cast

import attrs
from mlagents_envs.base_env import ActionTuple

from envs.parameters import ParameterValue
from envs.workers.faults import classify_error
from envs.workers.launch import EnvLaunch, OpenEnv
from envs.workers.log_lines import LogFormat, log_to
from envs.workers.pool import EnvWorkerPool, apply_and_step, observe, with_parameters
from envs.workers.records import FaultKind, WorkerFault, WorkerResult
from envs.workers.sources import open_environment, worker_port

logger = logging.getLogger(__name__)

# Messages parent -> child.
_STEP, _RESET, _CLOSE = "step", "reset", "close"


def _worker_main(conn: Connection, launch: EnvLaunch, worker_id: int, generation: int, log_format: LogFormat) -> None:
    """A child process: open the env, answer each step with a WorkerResult (or a WorkerFault)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle

    def on_term(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, on_term)
    # The child's log lines go where the parent's go (stdout), in the same format; stderr is
    # kept for the run's one-line error.
    log_to(sys.stdout, log_format)
    opened: OpenEnv | None = None
    known: set[str] = set()

    def fault(error: BaseException) -> WorkerFault:
        kind, message, retriable = classify_error(error, worker_id, worker_port(launch, worker_id))
        return WorkerFault(worker_id, generation, kind, message, retriable)

    try:
        try:
            opened = open_environment(launch, worker_id)
            conn.send(observe(opened, known, worker_id, generation, 0.0))
        except Exception as error:  # noqa: BLE001 - a fault value
            conn.send(fault(error))
            return
        while True:
            message = conn.recv()
            if message[0] == _CLOSE:
                return
            try:
                if message[-1]:  # environment parameters sent since the last request
                    opened.set_parameters(message[-1])
                if message[0] == _RESET:
                    start = time.perf_counter()
                    opened.env.reset()
                    seconds = time.perf_counter() - start
                else:
                    seconds = apply_and_step(opened, message[1])
                conn.send(observe(opened, known, worker_id, generation, seconds))
            except Exception as error:  # noqa: BLE001 - a fault value
                conn.send(fault(error))
                return
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass
    finally:
        if opened is not None:
            try:
                opened.env.close()
            except Exception:  # noqa: BLE001
                pass


@attrs.define
class _Worker:
    process: Any
    conn: Connection
    generation: int
    waiting_since: float | None  # when the outstanding request was sent (None: idle)


class SubprocessPool(EnvWorkerPool):
    """One child process per worker (``spawn``), each owning its environment.

    A worker that has not answered within ``hang_timeout_s`` (default ``timeout_wait`` + 30 s:
    a Unity worker times out by itself at ``timeout_wait``) is killed and reported HUNG; a
    worker whose pipe breaks is reported LOST.
    """

    def __init__(self, launch: EnvLaunch, num_workers: int, *, hang_timeout_s: float | None = None):
        if num_workers < 1:
            raise ValueError(f"num_workers must be at least 1, got {num_workers}")
        self.launch = launch
        self.num_workers = num_workers
        self.hang_timeout_s = float(hang_timeout_s if hang_timeout_s is not None else launch.timeout_wait + 30.0)
        self._context = multiprocessing.get_context("spawn")
        self._log_format = LogFormat.current()
        self._workers: dict[int, _Worker] = {}
        self._generations = [0] * num_workers
        self._closed = False
        # environment parameters not yet sent, per worker: they ride with its next request
        self._pending: dict[int, dict[str, ParameterValue]] = {}

    def _launch(self, worker_id: int) -> None:
        parent, child = self._context.Pipe(duplex=True)
        process = self._context.Process(
            target=_worker_main,
            args=(child, self.launch, worker_id, self._generations[worker_id], self._log_format),
            name=f"agents-learn-worker-{worker_id}",
            daemon=True,
        )
        process.start()
        child.close()
        self._workers[worker_id] = _Worker(process, parent, self._generations[worker_id], time.monotonic())

    def start(self) -> None:
        for worker_id in range(self.num_workers):
            self._launch(worker_id)

    def step(self, worker_id: int, actions: Mapping[str, ActionTuple]) -> None:
        worker = self._workers.get(worker_id)
        if worker is None:
            return
        try:
            worker.conn.send((_STEP, dict(actions), self._pending.pop(worker_id, {})))
            worker.waiting_since = time.monotonic()
        except (BrokenPipeError, OSError):
            worker.waiting_since = time.monotonic() - self.hang_timeout_s  # reported by poll

    def reset(self, worker_id: int) -> None:
        worker = self._workers.get(worker_id)
        if worker is None:
            return
        try:
            worker.conn.send((_RESET, self._pending.pop(worker_id, {})))
            worker.waiting_since = time.monotonic()
        except (BrokenPipeError, OSError):
            worker.waiting_since = time.monotonic() - self.hang_timeout_s  # reported by poll

    def set_parameters(self, parameters: Mapping[str, ParameterValue]) -> None:
        self.launch = with_parameters(self.launch, parameters)  # what a restarted worker opens with
        for worker_id in self._workers:
            self._pending.setdefault(worker_id, {}).update(parameters)

    def poll(self, timeout: float) -> list[WorkerResult | WorkerFault]:
        waiting = {w.conn: wid for wid, w in self._workers.items() if w.waiting_since is not None}
        out: list[WorkerResult | WorkerFault] = []
        if waiting:
            for ready in wait(list(waiting), timeout=timeout):
                conn = cast(Connection, ready)
                worker_id = waiting[conn]
                worker = self._workers[worker_id]
                try:
                    item: WorkerResult | WorkerFault = conn.recv()
                except (EOFError, OSError):
                    worker.process.join(1.0)
                    code = worker.process.exitcode
                    out.append(
                        WorkerFault(
                            worker_id,
                            worker.generation,
                            FaultKind.LOST,
                            f"worker {worker_id}: its process ended unexpectedly (exit code {code})",
                            True,
                        )
                    )
                    self._end(worker_id)
                    continue
                worker.waiting_since = None
                out.append(item)
                if isinstance(item, WorkerFault):
                    self._end(worker_id)
        now = time.monotonic()
        for worker_id, worker in list(self._workers.items()):
            if worker.waiting_since is not None and now - worker.waiting_since > self.hang_timeout_s:
                out.append(
                    WorkerFault(
                        worker_id,
                        worker.generation,
                        FaultKind.HUNG,
                        f"worker {worker_id}: no answer for {self.hang_timeout_s:.0f} s",
                        True,
                    )
                )
                self._end(worker_id, grace_s=0.0)
        return out

    def _end(self, worker_id: int, grace_s: float = 10.0) -> None:
        worker = self._workers.pop(worker_id, None)
        if worker is None:
            return
        try:
            worker.conn.send((_CLOSE,))
        except (BrokenPipeError, OSError):
            pass
        _stop_process(worker.process, grace_s)
        worker.conn.close()

    def restart(self, worker_id: int) -> None:
        self._pending.pop(worker_id, None)  # the new process opens with self.launch's values
        self._end(worker_id)
        self._generations[worker_id] += 1
        self._launch(worker_id)

    def generation(self, worker_id: int) -> int:
        return self._generations[worker_id]

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        workers = list(self._workers.items())
        self._workers = {}
        for _, worker in workers:
            try:
                worker.conn.send((_CLOSE,))
            except (BrokenPipeError, OSError):
                pass
        deadline = time.monotonic() + 10.0
        for _, worker in workers:
            _stop_process(worker.process, max(0.0, deadline - time.monotonic()))
            worker.conn.close()


def _stop_process(process: Any, grace_s: float) -> None:
    """Wait for a child to exit, then SIGTERM (it closes its env), then SIGKILL."""
    process.join(grace_s)
    if process.exitcode is None:
        process.terminate()
        process.join(5.0)
    if process.exitcode is None:
        process.kill()
        process.join(5.0)
