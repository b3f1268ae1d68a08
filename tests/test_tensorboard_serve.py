"""The ``tensorboard`` of this venv starts and serves what our TensorBoardWriter writes, read back
over its HTTP API as the browser reads it (a missing ``pkg_resources`` once kept it from starting)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from stats import StatsAggregationMethod, StatsHub, StatsProperty, TensorBoardWriter, tags

TENSORBOARD = Path(sys.executable).parent / "tensorboard"
STARTUP_TIMEOUT_S = 60.0
RUN = "ball/3DBall"  # results/<run-id>/<Behavior>, as tensorboard --logdir results names it
REWARDS = {12000: [1.0, 3.0], 24000: [5.0, 7.0, 9.0]}


def write_run(results: Path) -> None:
    """Two summaries of behavior 3DBall in run ``ball``, through the writer a run uses."""
    hub = StatsHub([TensorBoardWriter(results / "ball")])
    reporter = hub.reporter("3DBall")
    reporter.add_property(StatsProperty.HYPERPARAMETERS, {"trainer_type": "ppo", "hyperparameters": {"batch_size": 64}})
    for step, rewards in REWARDS.items():
        reporter.add_stats(tags.CUMULATIVE_REWARD, rewards, StatsAggregationMethod.HISTOGRAM)
        reporter.add_stats(tags.EPISODE_LENGTH, [100.0, 200.0])
        reporter.add_stat(tags.POLICY_ENTROPY, 1.4)
        reporter.set_stat(tags.STEP, float(step))
        reporter.write_stats(step)
    hub.close()


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.load(response)


def wait_for(ready: Callable[[], bool], process: subprocess.Popen, log: Path) -> None:
    """Poll ``ready()`` until it holds; fail with tensorboard's output if it exits or takes too long."""
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"tensorboard exited with {process.returncode}:\n{log.read_text()[-3000:]}")
        try:
            if ready():
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass  # not listening yet
        time.sleep(0.25)
    pytest.fail(f"tensorboard did not serve {RUN} within {STARTUP_TIMEOUT_S:.0f} s:\n{log.read_text()[-3000:]}")


@pytest.mark.slow
def test_tensorboard_serves_our_scalars_histogram_and_hyperparameters(tmp_path: Path) -> None:
    results = tmp_path / "results"
    write_run(results)
    log = tmp_path / "tensorboard.log"
    base = f"http://127.0.0.1:{free_port()}"
    command = [str(TENSORBOARD), "--logdir", str(results), "--host", "127.0.0.1", "--port", base.rsplit(":", 1)[1]]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        wait_for(
            lambda: tags.CUMULATIVE_REWARD in get_json(f"{base}/data/plugin/scalars/tags").get(RUN, {}), process, log
        )
        scalar_tags = set(get_json(f"{base}/data/plugin/scalars/tags")[RUN])
        assert {tags.CUMULATIVE_REWARD, tags.EPISODE_LENGTH, tags.POLICY_ENTROPY} == scalar_tags  # Step is hidden

        query = urllib.parse.urlencode({"run": RUN, "tag": tags.CUMULATIVE_REWARD})
        series = get_json(f"{base}/data/plugin/scalars/scalars?{query}")
        assert [(step, value) for _, step, value in series] == [(12000, 2.0), (24000, 7.0)]

        histograms = get_json(f"{base}/data/plugin/histograms/tags")[RUN]
        assert list(histograms) == ["Environment/Cumulative Reward_hist"]
        text_tags = get_json(f"{base}/data/plugin/text/tags")[RUN]
        assert text_tags == ["Hyperparameters/text_summary"]
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
