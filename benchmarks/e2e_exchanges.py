"""Where one exchange with the build goes: the build alone (``e2e.py``'s floor) against agents-learn.

For every step the stand-in build sends, its round trip (from its send to the reply, written by
the build's ``--exchange-log``) is cut at three stamps taken in this process: the gRPC handler
thread entering the exchange, the main thread taking the step, and the main thread handing the
reply back. So per step, in microseconds:

- ``to_handler``: the build's send to our handler thread (gRPC, client and server);
- ``to_main``: the build's send to our main thread taking it (``to_handler`` plus the hand-over,
  plus whatever the main thread was still doing: recording, trajectories, an update);
- ``hold``: the main thread's work before the reply (decoding, acting, encoding);
- ``back``: the reply handed over to the build receiving it (gRPC again);
- ``round_trip``: the build's whole wait, the sum of the three.

Both runs happen in this process, one after the other, with those three points wrapped
(instrumentation only: nothing else changes); ``time.perf_counter`` is the machine's monotonic
clock in both processes. The floor steps random actions as ``e2e.py --floor`` does; agents-learn
trains ``e2e.py``'s configuration. Prints one JSON document: per run and measure, the median,
mean and 90th percentile, and the steps matched::

    .venv/bin/python benchmarks/e2e_exchanges.py [--steps 24000] [--step-sleep-ms 0]

``e2e_exchanges.json`` holds one run at 0 and one at 2 ms.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _cli_run import machine
from e2e import floor, trainer_args, write_config  # this folder: the scripts run from it


class Stamps:
    """The three points of our side, wrapped for one run."""

    def __init__(self) -> None:
        self.handler: list[float] = []
        self.main: list[float] = []
        self.reply: list[float] = []

    @contextlib.contextmanager
    def wrapped(self):  # noqa: ANN201 - a context manager
        from envs.unity import communicator

        rendezvous, loopback = communicator._Rendezvous, communicator.LoopbackCommunicator
        originals = (rendezvous.exchange, rendezvous.reply, loopback._receive)

        def exchange(self_: Any, request: Any, context: Any) -> Any:
            self.handler.append(time.perf_counter())
            return originals[0](self_, request, context)

        def reply(self_: Any, message: Any, **kwargs: Any) -> None:
            self.reply.append(time.perf_counter())
            originals[1](self_, message, **kwargs)

        def receive(self_: Any, *args: Any, **kwargs: Any) -> Any:
            message = originals[2](self_, *args, **kwargs)
            if message is not None:
                self.main.append(time.perf_counter())
            return message

        rendezvous.exchange, rendezvous.reply, loopback._receive = exchange, reply, receive
        try:
            yield self
        finally:
            rendezvous.exchange, rendezvous.reply, loopback._receive = originals


def split(build: list[list[float]], stamps: Stamps) -> dict[str, Any]:
    """Each build step's round trip cut at our stamps (the first of each after its send)."""
    sent, replied = (np.array(column) for column in zip(*build, strict=True))
    handler, main, reply = (np.array(s) for s in (stamps.handler, stamps.main, stamps.reply))
    at_handler = np.searchsorted(handler, sent)
    at_main = np.searchsorted(main, sent)
    ok = (at_handler < handler.size) & (at_main < main.size)
    took = main[np.minimum(at_main, main.size - 1)]
    at_reply = np.searchsorted(reply, took)
    ok &= at_reply < reply.size
    handed = reply[np.minimum(at_reply, reply.size - 1)]
    ok &= handed <= replied  # the reply this step got
    parts = {
        "round_trip": replied - sent,
        "to_handler": handler[np.minimum(at_handler, handler.size - 1)] - sent,
        "to_main": took - sent,
        "hold": handed - took,
        "back": replied - handed,
    }
    out: dict[str, Any] = {"steps": int(ok.sum())}
    for name, seconds in parts.items():
        us = seconds[ok] * 1e6
        out[name] = {
            "median": round(float(np.median(us))),
            "mean": round(float(np.mean(us))),
            "p90": round(float(np.percentile(us, 90))),
        }
    return out


def measured(run: Callable[[str], None], folder: Path, sleep_ms: float) -> dict[str, Any]:
    """One run through a fresh stand-in that logs its exchanges."""
    from tests.support.standin import write_launcher

    log = folder / "exchanges.json"
    launcher = write_launcher(str(folder), extra_args=["--step-sleep-ms", str(sleep_ms), "--exchange-log", str(log)])
    stamps = Stamps()
    with stamps.wrapped(), contextlib.redirect_stdout(io.StringIO()):
        run(launcher)
    deadline = time.monotonic() + 30
    while not log.exists() and time.monotonic() < deadline:  # the build writes it as it quits
        time.sleep(0.05)
    return split(json.loads(log.read_text()), stamps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=24_000, help="agent steps (max_steps)")
    parser.add_argument("--step-sleep-ms", type=float, default=0.0, help="the build's cost per academy step")
    args = parser.parse_args()

    def agents_learn(launcher: str) -> None:
        from orchestration.cli import main as cli

        folder = Path(launcher).parent
        cli(trainer_args(write_config(folder, args.steps), launcher, folder / "results", "exchanges"))

    runs: dict[str, Any] = {}
    for name, run in (("floor", lambda launcher: floor(launcher, args.steps)), ("agents_learn", agents_learn)):
        with tempfile.TemporaryDirectory(prefix=f"e2e-exchanges-{name}-") as tmp:
            runs[name] = measured(run, Path(tmp), args.step_sleep_ms)
    settings = {"steps": args.steps, "step_sleep_ms": args.step_sleep_ms}
    print(json.dumps({"machine": machine(), "settings": settings, "microseconds": runs}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
