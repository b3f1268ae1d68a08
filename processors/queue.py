"""The queues between the environment side and the trainer threads."""

from __future__ import annotations

import queue
import threading
import time
from typing import Generic, TypeVar

T = TypeVar("T")


class AgentManagerQueue(Generic[T]):
    """A FIFO of trajectories (env side to trainer) or policies (trainer to env side).

    Bounded trajectory queues give back-pressure: ``put`` blocks while the queue is full,
    so a slow trainer slows the environments down instead of losing data. ``maxlen=0``
    is unbounded (policy queues, and trajectory queues of non-threaded trainers).
    The time producers spent blocked is kept in ``blocked_seconds`` so it can be shown.
    """

    class Empty(Exception):
        """Raised by :meth:`get_nowait` when the queue holds nothing."""

    def __init__(self, behavior_id: str, maxlen: int = 0):
        self._behavior_id = behavior_id
        self._maxlen = maxlen
        self._queue: queue.Queue[T] = queue.Queue(maxsize=maxlen)
        self._blocked_lock = threading.Lock()
        self._blocked_seconds = 0.0

    @property
    def behavior_id(self) -> str:
        return self._behavior_id

    @property
    def maxlen(self) -> int:
        """The capacity; 0 means unbounded."""
        return self._maxlen

    @property
    def blocked_seconds(self) -> float:
        """Total seconds producers have waited on a full queue."""
        return self._blocked_seconds

    def qsize(self) -> int:
        return self._queue.qsize()

    def empty(self) -> bool:
        return self._queue.empty()

    def get_nowait(self) -> T:
        """The oldest item; raises ``AgentManagerQueue.Empty`` if there is none."""
        try:
            return self._queue.get_nowait()
        except queue.Empty:
            raise self.Empty() from None

    def get(self, timeout: float | None = None) -> T:
        """The oldest item, waiting up to ``timeout`` seconds (0: not at all, None: forever);
        raises ``AgentManagerQueue.Empty`` if none arrives."""
        if timeout is not None and timeout <= 0:
            return self.get_nowait()
        try:
            return self._queue.get(timeout=timeout)
        except queue.Empty:
            raise self.Empty() from None

    def put(self, item: T, timeout: float | None = None) -> None:
        """Append ``item``, waiting while the queue is full.

        With a ``timeout`` (seconds) it raises ``queue.Full`` instead of waiting longer, so
        a producer can check for shutdown; the item is then not enqueued.
        """
        try:
            self._queue.put_nowait(item)
            return
        except queue.Full:
            pass
        start = time.perf_counter()
        try:
            self._queue.put(item, timeout=timeout)
        finally:
            waited = time.perf_counter() - start
            with self._blocked_lock:
                self._blocked_seconds += waited
