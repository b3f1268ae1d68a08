"""The queues between the environment side and the trainer threads."""

from __future__ import annotations

import collections
import queue
import threading
import time
from collections.abc import Iterable
from typing import Generic, TypeVar

T = TypeVar("T")


class AgentManagerQueue(Generic[T]):
    """A FIFO of trajectories (env side to trainer) or policies (trainer to env side).

    Bounded trajectory queues give back-pressure: ``put`` blocks while the queue is full,
    so a slow trainer slows the environments down instead of losing data. ``maxlen=0``
    is unbounded (policy queues, and trajectory queues of non-threaded trainers).
    The time producers spent blocked is kept in ``blocked_seconds`` so it can be shown.
    Built on a deque and one condition: a step publishes dozens of trajectories, and
    ``put_many`` takes the lock once for all of them.
    """

    class Empty(Exception):
        """Raised by :meth:`get_nowait` (and :meth:`get` on timeout) when nothing is queued."""

    class Closed(Exception):
        """Raised by ``put`` on a queue whose consumer is gone (:meth:`close`): a producer
        blocked on a full queue wakes up instead of waiting forever for a dead trainer."""

    def __init__(self, behavior_id: str, maxlen: int = 0):
        self._behavior_id = behavior_id
        self._maxlen = maxlen
        self._items: collections.deque[T] = collections.deque()
        self._lock = threading.Lock()
        self._not_empty = threading.Condition(self._lock)
        self._not_full = threading.Condition(self._lock)
        self._blocked_seconds = 0.0
        self._closed = False

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

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """The consumer stopped for good: every ``put`` from now on (and any blocked one)
        raises :class:`Closed`; what is queued stays readable."""
        with self._lock:
            self._closed = True
            self._not_full.notify_all()

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def get_nowait(self) -> T:
        """The oldest item; raises ``AgentManagerQueue.Empty`` if there is none."""
        with self._lock:
            if not self._items:
                raise self.Empty()
            item = self._items.popleft()
            if self._maxlen:
                self._not_full.notify()
            return item

    def drain(self) -> list[T]:
        """Every queued item, oldest first, leaving the queue empty."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
            if self._maxlen:
                self._not_full.notify_all()
            return items

    def get(self, timeout: float | None = None) -> T:
        """The oldest item, waiting up to ``timeout`` seconds (0: not at all, None: forever);
        raises ``AgentManagerQueue.Empty`` if none arrives."""
        with self._lock:
            if not self._items:
                if timeout is not None and timeout <= 0:
                    raise self.Empty()
                if not self._not_empty.wait_for(lambda: self._items, timeout):
                    raise self.Empty()
            item = self._items.popleft()
            if self._maxlen:
                self._not_full.notify()
            return item

    def put(self, item: T, timeout: float | None = None) -> None:
        """Append ``item``, waiting while the queue is full.

        With a ``timeout`` (seconds) it raises ``queue.Full`` instead of waiting longer, so
        a producer can check for shutdown; the item is then not enqueued.
        """
        self.put_many((item,), timeout)

    def put_many(self, items: Iterable[T], timeout: float | None = None) -> None:
        """Append ``items`` in order, waiting for room whenever the queue is full.

        On ``timeout`` (seconds of waiting in all) raises ``queue.Full``; the items before
        the one that did not fit are enqueued. Raises :class:`Closed` once the queue is closed.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            if self._closed:
                raise self.Closed(f"the queue of {self._behavior_id} is closed (its consumer stopped)")
            added = 0
            for item in items:
                if self._maxlen and len(self._items) >= self._maxlen:
                    if added:  # let consumers take what is queued before waiting for room
                        self._not_empty.notify(added)
                        added = 0
                    self._wait_for_room(deadline)
                self._items.append(item)
                added += 1
            if added:
                self._not_empty.notify(added)

    def _wait_for_room(self, deadline: float | None) -> None:
        """Caller holds the lock and found the queue full."""
        start = time.perf_counter()
        try:
            while len(self._items) >= self._maxlen:
                if self._closed:
                    raise self.Closed(f"the queue of {self._behavior_id} is closed (its consumer stopped)")
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise queue.Full()
                self._not_full.wait(remaining)
        finally:
            self._blocked_seconds += time.perf_counter() - start
