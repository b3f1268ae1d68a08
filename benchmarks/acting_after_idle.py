"""What one decision costs where it runs in a training loop: ``TorchPolicy.act`` for 12 agents
with ML-Agents' 3DBall network (8 floats, 2 continuous actions, 2 x 128 swish, normalize), timed
alone, after the thread waited for the build (a sleep of ``--gaps-ms``) or spun as long, and the
same network's sampled actions as plain numpy arithmetic (a lower bound for any torch path, not
a second policy: nothing of the project uses it).

Through a Unity build the trainer decides once per build step, after waiting for it: the e2e
runs' ``TorchPolicy.evaluate`` took 300-800 us a call (``run_logs/timers.json``, 0 and 2 ms
builds) while this loop, hot, takes 150-200 us. Measured on a shared 2-core VM (2026-12-07):
after a gap of 3-10 ms the same call takes 300-1000 us whether the thread slept or spun (so it
is not a CPU idle state; most likely other tenants' work evicts torch's code and data from the
caches meanwhile), and the numpy arithmetic of the same network 4-7x less. Taking all of
``act``'s outputs through one ``torch.cat`` and one ``.numpy()`` instead of six was tried and
was slower, hot and after gaps.

Prints one JSON document: per gap and kind, the median and mean microseconds per call over
``--calls`` calls::

    .venv/bin/python benchmarks/acting_after_idle.py [--gaps-ms 0 1 3 10] [--calls 300]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np
import torch
from _cli_run import machine  # this folder: the scripts run from it
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType

from trainers.networks.policy import TorchPolicy
from trainers.settings import NetworkSettings

AGENTS = 12
SPEC = BehaviorSpec(
    [ObservationSpec((8,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")], ActionSpec(2, ())
)


def numpy_actions(policy: TorchPolicy, rng: np.random.Generator) -> Callable[[np.ndarray], np.ndarray]:
    """The policy's sampled actions from its weights in numpy (normaliser, swish layers, mean
    head, Gaussian noise): the arithmetic a decision needs, without torch's per-op dispatch."""
    actor = policy.actor
    vector_input = actor.encoder.inputs[0]
    offset, inv_std = vector_input.normalizer.offset.numpy(), vector_input.normalizer.inv_std.numpy()
    layers = [
        (layer.weight.detach().numpy().T.copy(), layer.bias.detach().numpy()) for layer in actor.encoder.body.layers
    ]
    head_w, head_b = actor.mean_head.weight.detach().numpy().T.copy(), actor.mean_head.bias.detach().numpy()
    std = np.exp(actor.log_std.detach().numpy())

    def act(x: np.ndarray) -> np.ndarray:
        h = np.clip((x - offset) * inv_std, -5.0, 5.0)
        for w, b in layers:
            h = h @ w + b
            h = h / (1.0 + np.exp(-h))
        mean = h @ head_w + head_b
        return mean + rng.standard_normal(mean.shape, dtype=np.float32) * std

    return act


def spin(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def waits(seconds: float) -> dict[str, Callable[[], None]]:
    """How the thread passes the gap before each call: asleep, or spinning (no gap: neither)."""
    if seconds <= 0:
        return {"none": lambda: None}
    return {"sleep": lambda: time.sleep(seconds), "spin": lambda: spin(seconds)}


def per_call_us(call: Callable[[], object], wait: Callable[[], None], calls: int) -> dict[str, float]:
    """Microseconds of ``call`` after each ``wait`` (the wait itself not timed)."""
    times = []
    for _ in range(calls):
        wait()
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1e6)
    return {"median": round(statistics.median(times), 1), "mean": round(statistics.fmean(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaps-ms", type=float, nargs="+", default=[0.0, 1.0, 3.0, 10.0])
    parser.add_argument("--calls", type=int, default=300)
    args = parser.parse_args()
    torch.set_num_threads(1)
    policy = TorchPolicy(SPEC, NetworkSettings(normalize=True, hidden_units=128, num_layers=2), seed=1)
    obs = [np.random.default_rng(0).standard_normal((AGENTS, 8)).astype(np.float32)]
    ids = np.arange(AGENTS, dtype=np.int32)
    plain = numpy_actions(policy, np.random.default_rng(1))
    kinds: dict[str, Callable[[], object]] = {
        "act": lambda: policy.act(obs, None, ids),
        "numpy_arithmetic": lambda: plain(obs[0]),
    }
    for call in kinds.values():
        for _ in range(50):  # warm-up
            call()
    results = []
    for gap_ms in args.gaps_ms:
        for wait_name, wait in waits(gap_ms / 1000.0).items():
            row: dict[str, object] = {"gap_ms": gap_ms, "wait": wait_name}
            row.update({kind: per_call_us(call, wait, args.calls) for kind, call in kinds.items()})
            results.append(row)
    print(
        json.dumps(
            {"benchmark": "acting_after_idle", "machine": machine(), "agents": AGENTS, "results": results}, indent=1
        )
    )


if __name__ == "__main__":
    main()
