"""AgentManagerQueue: back-pressure without loss, and safety with several producers."""

from __future__ import annotations

import queue
import threading
import time

import pytest

from processors import AgentManagerQueue


def test_empty_queue_raises_its_own_empty():
    q: AgentManagerQueue[int] = AgentManagerQueue("B?team=0")
    assert q.empty() and q.qsize() == 0
    with pytest.raises(AgentManagerQueue.Empty):
        q.get_nowait()


def test_fifo_and_attributes():
    q: AgentManagerQueue[int] = AgentManagerQueue("B?team=0", maxlen=3)
    assert (q.behavior_id, q.maxlen) == ("B?team=0", 3)
    for i in range(3):
        q.put(i)
    assert q.qsize() == 3 and not q.empty()
    assert [q.get_nowait() for _ in range(3)] == [0, 1, 2]


def test_drain_takes_everything_in_order_and_frees_a_blocked_producer():
    q: AgentManagerQueue[int] = AgentManagerQueue("B?team=0", maxlen=2)
    q.put(0)
    q.put(1)
    producer = threading.Thread(target=q.put, args=(2,))
    producer.start()
    time.sleep(0.05)
    assert q.drain() == [0, 1]
    producer.join(5)
    assert not producer.is_alive() and q.drain() == [2] and q.drain() == []


def test_full_bounded_queue_blocks_producer_until_consumer_takes():
    q: AgentManagerQueue[int] = AgentManagerQueue("B", maxlen=1)
    q.put(0)
    done = threading.Event()

    def produce() -> None:
        q.put(1)
        done.set()

    producer = threading.Thread(target=produce)
    producer.start()
    assert not done.wait(0.2), "put on a full queue must wait, not drop or overwrite"
    assert q.get_nowait() == 0
    assert done.wait(5)
    producer.join()
    assert q.get_nowait() == 1
    assert q.blocked_seconds >= 0.15


def test_put_with_timeout_raises_full_and_enqueues_nothing():
    q: AgentManagerQueue[int] = AgentManagerQueue("B", maxlen=1)
    q.put(0)
    with pytest.raises(queue.Full):
        q.put(1, timeout=0.05)
    assert q.qsize() == 1


def test_unbounded_queue_never_blocks():
    q: AgentManagerQueue[int] = AgentManagerQueue("B")
    for i in range(10_000):
        q.put(i)
    assert q.qsize() == 10_000 and q.blocked_seconds == 0.0


def test_several_producers_one_slow_consumer_lose_nothing():
    q: AgentManagerQueue[tuple[int, int]] = AgentManagerQueue("B", maxlen=20)
    producers, per_producer = 4, 2_000
    received: list[tuple[int, int]] = []
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set() or not q.empty():
            try:
                received.append(q.get_nowait())
            except AgentManagerQueue.Empty:
                time.sleep(0.0005)

    def produce(p: int) -> None:
        for i in range(per_producer):
            q.put((p, i))

    consumer = threading.Thread(target=consume)
    consumer.start()
    threads = [threading.Thread(target=produce, args=(p,)) for p in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stop.set()
    consumer.join()
    assert len(received) == producers * per_producer
    for p in range(producers):
        assert [i for (src, i) in received if src == p] == list(range(per_producer))  # per-producer order kept


def test_get_waits_for_an_item_or_times_out():
    q: AgentManagerQueue[int] = AgentManagerQueue("B")
    with pytest.raises(AgentManagerQueue.Empty):
        q.get(timeout=0.01)
    threading.Timer(0.05, q.put, args=(5,)).start()
    assert q.get(timeout=5) == 5


def test_put_many_fills_then_waits_for_room_in_order():
    q: AgentManagerQueue[int] = AgentManagerQueue("B", maxlen=2)
    done = threading.Event()
    producer = threading.Thread(target=lambda: (q.put_many(range(5)), done.set()))
    producer.start()
    received = []
    while len(received) < 5:
        try:
            received.append(q.get(timeout=5))
        except AgentManagerQueue.Empty:
            break
    assert done.wait(5)
    producer.join()
    assert received == [0, 1, 2, 3, 4]


def test_put_many_timeout_keeps_what_fitted():
    q: AgentManagerQueue[int] = AgentManagerQueue("B", maxlen=2)
    with pytest.raises(queue.Full):
        q.put_many([1, 2, 3], timeout=0.05)
    assert [q.get_nowait(), q.get_nowait()] == [1, 2] and q.empty()
