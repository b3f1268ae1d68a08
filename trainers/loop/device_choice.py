"""The ``auto`` device: train each behavior where its own training runs faster.

A GPU pays off for wide networks, images and SAC's many gradient steps, and loses to the CPU
for small networks, where kernel launches and transfers cost more than the arithmetic (3DBall's
2x128 PPO ran 1.7x slower on an H200 than on the CPU). Which one wins depends on the behavior's
networks and batch, so it is measured, once per behavior, before its first update: the
behavior's own algorithm, built with its own settings on each device, takes synthetic
trajectories of its real shapes and updates on them (a few minibatches: see :func:`probe`),
one round to warm up, then a timed round. The score is seconds per training sample, trajectory
processing included, which is what a run spends per step (a second or two in all on a CPU
for the largest of ML-Agents' example networks). Group mates are left out of the
synthetic trajectories (POCA's baseline then sees none): the choice is a measurement of the
networks' cost, not of the scene.

A GPU is chosen only when it measures at least :data:`GPU_MARGIN` times faster: what the probe
does not see costs more there (CUDA's start, the weights copied to the CPU's acting policy after
each update, warming up). On an H200, GridWorld's PPO and DungeonEscape's POCA measured within 3%
of the CPU, and whole runs on the GPU then took 24-31% longer than on the CPU.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import BehaviorSpec

from processors.trajectory import Trajectory
from stats import StatsReporter
from trainers.loop.algorithm import Algorithm, AlgorithmFactory
from trainers.settings import TrainerSettings

logger = logging.getLogger(__name__)

DEVICE_KEY = "device"  # where training_status.json records a behavior's choice, for --resume
PROBE_MINIBATCHES = 4  # an on-policy probe's buffer, in minibatches
MAX_PROBE_UPDATES = 64  # gradient steps a probe round runs at most (SAC: steps_per_update below 1)
GPU_MARGIN = 1.25  # how many times faster per sample a GPU must measure to be chosen over the CPU

# (device) -> seconds per training sample; injectable so tests can decide without a GPU
Timing = Callable[[str], float]


@attrs.frozen
class DeviceChoice:
    """The device a behavior trains on and what was measured to choose it."""

    device: str
    seconds_per_sample: Mapping[str, float]  # per device measured; empty when nothing was

    def describe(self) -> str:
        if not self.seconds_per_sample:
            return f"on {self.device}"
        timings = ", ".join(f"{d} {s * 1e6:.0f} µs" for d, s in self.seconds_per_sample.items())
        return f"on {self.device} (training per sample: {timings})"


def candidate_devices() -> list[str]:
    """Where ``auto`` may train: the CPU, and the first GPU when torch sees one."""
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def choose_device(timing: Timing, candidates: Sequence[str]) -> DeviceChoice:
    """The candidate with the least time per sample, a GPU's counted :data:`GPU_MARGIN` times
    (the CPU on a tie); a single candidate is taken without measuring."""
    if len(candidates) == 1:
        return DeviceChoice(candidates[0], {})
    measured = {device: timing(device) for device in candidates}

    def cost(device: str) -> tuple[float, bool]:
        on_cpu = torch.device(device).type == "cpu"
        return (measured[device] * (1.0 if on_cpu else GPU_MARGIN), not on_cpu)

    return DeviceChoice(min(candidates, key=cost), measured)


@attrs.frozen
class Probe:
    """A behavior's training cut to a probe's size: ``settings`` to build the algorithm with,
    ``samples`` per round, and ``update_scale``, by which the measured update time is multiplied
    to stand for the behavior's own (off-policy: the gradient steps per sample it was thinned by)."""

    settings: TrainerSettings
    samples: int
    update_scale: float = 1.0


def probe(settings: TrainerSettings) -> Probe:
    """An on-policy buffer of :data:`PROBE_MINIBATCHES` minibatches, one more sample per round
    (they update once the buffer holds more than ``buffer_size``, as ML-Agents'); an off-policy
    algorithm updating from its first minibatch, at most :data:`MAX_PROBE_UPDATES` gradient
    steps a round."""
    hp: Any = settings.hyperparameters
    fields = attrs.fields_dict(type(hp))
    base = attrs.evolve(settings, init_path=None)
    if "buffer_init_steps" in fields and "steps_per_update" in fields:
        samples = hp.batch_size
        thinned = max(float(hp.steps_per_update), samples / MAX_PROBE_UPDATES)
        scale = thinned / float(hp.steps_per_update)
        changes = {"buffer_init_steps": 0, "steps_per_update": thinned}
        if "reward_signal_steps_per_update" in fields:
            changes["reward_signal_steps_per_update"] = float(hp.reward_signal_steps_per_update) * scale
        return Probe(attrs.evolve(base, hyperparameters=attrs.evolve(hp, **changes)), samples, scale)
    if "num_epoch" in fields and "buffer_size" in fields:
        buffer = min(hp.buffer_size, PROBE_MINIBATCHES * hp.batch_size)
        return Probe(attrs.evolve(base, hyperparameters=attrs.evolve(hp, buffer_size=buffer)), buffer + 1)
    return Probe(base, int(getattr(hp, "batch_size", 64)))


def synthetic_trajectories(
    spec: BehaviorSpec, samples: int, length: int, memory_size: int, rng: np.random.Generator
) -> list[Trajectory]:
    """``samples`` transitions of ``spec``'s shapes in trajectories of at most ``length``."""
    c = spec.action_spec.continuous_size
    branches = tuple(spec.action_spec.discrete_branches)
    out = []
    for start in range(0, samples, length):
        n = min(length, samples - start)
        continuous = rng.standard_normal((n, c)).astype(np.float32)
        discrete = np.stack([rng.integers(0, b, n) for b in branches], axis=1).astype(np.int32) if branches else None
        done = np.zeros(n, bool)
        done[-1] = True
        out.append(
            Trajectory(
                behavior_id="probe?team=0",
                agent_id=f"agent_0-{start}",
                obs=tuple(rng.random((n, *o.shape), dtype=np.float32) for o in spec.observation_specs),
                next_obs=tuple(rng.random(o.shape, dtype=np.float32) for o in spec.observation_specs),
                rewards=rng.standard_normal(n).astype(np.float32),
                done=done,
                interrupted=np.zeros(n, bool),
                continuous_actions=continuous,
                discrete_actions=np.zeros((n, 0), np.int32) if discrete is None else discrete,
                continuous_log_probs=-0.5 * continuous**2 - 0.92,
                discrete_log_probs=np.full((n, len(branches)), -1.0, np.float32),
                action_masks=np.ones((n, int(sum(branches))), bool),
                prev_continuous_actions=np.zeros((n, c), np.float32),
                prev_discrete_actions=np.zeros((n, len(branches)), np.int32),
                memories=np.zeros((n, memory_size), np.float32),
            )
        )
    return out


def _train_round(algorithm: Algorithm, trajectories: list[Trajectory], device: str) -> tuple[float, float]:
    """Seconds spent taking the trajectories in, then updating while updates are due."""

    def now() -> float:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return time.perf_counter()

    start = now()
    for trajectory in trajectories:
        algorithm.add(trajectory)
    added = now()
    for _ in range(MAX_PROBE_UPDATES):
        if not algorithm.ready():
            break
        algorithm.update(0)
    return added - start, now() - added


def training_timing(
    factory: AlgorithmFactory, *, behavior_name: str, spec: BehaviorSpec, settings: TrainerSettings, seed: int
) -> Timing:
    """Seconds per sample that ``factory``'s algorithm spends training on a device (see the
    module docstring): one round to warm up, then a timed one."""
    cut = probe(settings)

    def timing(device: str) -> float:
        with _unlogged():
            return measure(device)

    def measure(device: str) -> float:
        algorithm = factory(
            behavior_name=behavior_name,
            behavior_spec=spec,
            settings=cut.settings,
            stats_reporter=StatsReporter(f"{behavior_name} (device probe)"),
            seed=seed,
            device=device,
        )
        rng = np.random.default_rng(seed)
        memory_size = int(getattr(algorithm.policy, "memory_size", 0) or 0)
        length = max(1, min(cut.settings.time_horizon, cut.samples))
        _train_round(algorithm, synthetic_trajectories(spec, cut.samples, length, memory_size, rng), device)
        adding, updating = _train_round(
            algorithm, synthetic_trajectories(spec, cut.samples, length, memory_size, rng), device
        )
        return (adding + updating * cut.update_scale) / cut.samples

    return timing


class _OtherThreads(logging.Filter):
    """Passes records logged by any thread but one."""

    def __init__(self, thread: int) -> None:
        super().__init__()
        self.thread = thread

    def filter(self, record: logging.LogRecord) -> bool:
        return record.thread != self.thread


@contextlib.contextmanager
def _unlogged() -> Iterator[None]:
    """What this thread logs, unsaid: a probe builds the behavior's algorithm once per device
    before the run builds it, which then logs the same (demonstration file warnings, the replay
    buffer's size); other threads' records still pass."""
    handlers = list(logging.getLogger().handlers)
    quiet = _OtherThreads(threading.get_ident())
    for handler in handlers:
        handler.addFilter(quiet)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(quiet)
