"""Gymnasium tasks, ours (``agents-learn``) against Stable-Baselines3 2.9.2 with the same RL Zoo
settings, per task and seed. Prints JSON (and writes it to ``--out`` after every run).

Trainers: ``ours`` (the configuration as it is), ``sb3`` (and ``sb3-no-sde``: see ``pendulum-ppo``),
and two with ML-Agents' choices, the configuration without the keys agents-learn has beyond
ML-Agents' (``OWN_KEYS``: ``activation``, ``max_grad_norm``, ``adam_epsilon``, ``epsilon_floor``,
``advantage_normalization``, ``log_std_init``): ``ours-mlagents`` (agents-learn) and
``mlagents`` (ML-Agents 0.28's own ``mlagents-learn`` trainers through
``benchmarks/_mlagents_builtin_learn.py``, our Gymnasium adapter as its environment, in its
process; ``--mlagents-python``, a scratch venv as ``benchmarks/mlagents_sac_anchor.py`` sets it
up, with ``gymnasium[classic-control]`` added). Both ML-Agents-choice runs use the same copies.

- ``cartpole``: PPO on CartPole-v1, ``config/gymnasium/ppo/CartPole.yaml`` (8 copies, RL Zoo's
  tuned settings, 100k steps). SB3: ``PPO('MlpPolicy', make_vec_env('CartPole-v1', n_envs=8,
  seed=S), n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0,
  learning_rate=lin 1e-3, clip_range=lin 0.2, seed=S)``. Threshold: a window mean >= 475
  (Gymnasium's reward threshold; 500 is the cap). Window: 5000 steps.
- ``pendulum``: SAC on Pendulum-v1, ``config/gymnasium/sac/Pendulum.yaml`` (one copy, RL Zoo's
  settings: lr 1e-3, SB3's defaults otherwise, 20k steps). SB3: ``SAC('MlpPolicy', 'Pendulum-v1',
  learning_rate=1e-3, seed=S)``. Threshold: a window mean >= -200 (about -150 is solved).
  Window: 2000 steps.
- ``halfcheetah``: SAC on the MuJoCo HalfCheetah-v5, ``config/gymnasium/sac/HalfCheetah.yaml``
  (one copy, RL Zoo's settings for MuJoCo: learning_starts 10000, SB3's defaults otherwise),
  100k of the configuration's 1M steps: RL Zoo publishes 9535 +- 100 at 1M and no figure at 100k,
  so the two trainers are compared with each other. SB3: ``SAC('MlpPolicy', 'HalfCheetah-v5',
  learning_starts=10000, seed=S)``. Threshold: a window mean >= 3000. Window: 10000 steps.
  SB3's venv needs ``gymnasium[mujoco]`` for it.
- ``hopper``: SAC on Hopper-v5, ``config/gymnasium/sac/Hopper.yaml`` (RL Zoo's Hopper settings,
  the same as HalfCheetah's), 100k of the configuration's 1M steps (RL Zoo publishes 2326 +- 1130
  for Hopper-v3, deterministic evaluation). SB3: as ``halfcheetah``; ``sb3-swish``: the same with
  ``policy_kwargs=dict(activation_fn=nn.SiLU)``, ML-Agents' activation. Threshold: a window mean >=
  1000. Window: 10000 steps.
- ``halfcheetah-ppo``: PPO on HalfCheetah-v5, ``config/gymnasium/ppo/HalfCheetah.yaml`` (RL Zoo's
  tuned PPO settings, ``normalize: true`` as observation and reward scaling), 300k of the 1M
  steps by default (``--max-steps`` sets another; RL Zoo publishes 5819 +- 664 at 1M). SB3:
  ``PPO('MlpPolicy', VecNormalize(make_vec_env('HalfCheetah-v5', seed=S), gamma=0.98), ...)``
  with RL Zoo's settings, ``vf_coef`` included (no key here). ``ours-mlagents-std``: the
  configuration without ``log_std_init`` (ML-Agents' starting spread); ``ours-unscaled``:
  without ``log_std_init`` and without ``reward_signals.*.normalize``. Threshold: a window mean
  >= 1500. Window: 10000 steps.
- ``hopper-ppo``: PPO on Hopper-v5, ``config/gymnasium/ppo/Hopper.yaml`` (RL Zoo's tuned PPO
  settings, translated as for HalfCheetah), the configuration's 1M steps (RL Zoo publishes 2410 +-
  10 at 1M, deterministic evaluation of one run). SB3: as ``halfcheetah-ppo`` with Hopper's
  settings (``gamma=0.999`` for VecNormalize too, ``vf_coef`` included). ``ours-mlagents-std`` and
  ``ours-unscaled`` as for HalfCheetah. Threshold: a window mean >= 1000. Window: 10000 steps.
- ``pendulum-ppo``: PPO on Pendulum-v1, ``config/gymnasium/ppo/Pendulum.yaml`` (4 copies, RL Zoo's
  tuned settings without gSDE, the configuration's 100k steps; RL Zoo publishes -172 +- 104 at
  100k). SB3: ``PPO('MlpPolicy', make_vec_env('Pendulum-v1', n_envs=4, seed=S), n_steps=1024,
  gae_lambda=0.95, gamma=0.9, n_epochs=10, ent_coef=0.0, learning_rate=1e-3, clip_range=0.2,
  use_sde=True, sde_sample_freq=4, seed=S)``, RL Zoo's settings; ``sb3-no-sde``: the same without
  ``use_sde`` and ``sde_sample_freq``. Threshold: a window mean >= -200. Window: 10000 steps.
- ``walker-ppo``: PPO on Walker2d-v5, ``config/gymnasium/ppo/Walker2d.yaml`` (RL Zoo's tuned PPO
  settings, which keep SB3's default networks: tanh 2 x 64, orthogonal initialisation, a starting
  log standard deviation of 0), the configuration's 1M steps. SB3: as ``halfcheetah-ppo`` with
  Walker2d's settings and no ``policy_kwargs``. Threshold: a window mean >= 1000. Window: 10000 steps.
- ``acrobot``: PPO on Acrobot-v1, ``config/gymnasium/ppo/Acrobot.yaml`` (16 copies, RL Zoo's
  settings), 200k steps (the configuration says 1M), ours and the two ML-Agents-choice trainers
  only. Threshold: a window mean >= -100. Window: 20000 steps.

Every trainer but SB3 runs a copy of the configuration with the task's ``max_steps``.

Per run: ``curve``, [(step, mean return of the episodes that ended in the window)] every window
(null where none ended); ours is the console summary (``Mean Reward``, every ``summary_freq``
steps, the mean of ``Environment/Cumulative Reward``: whole undiscounted episodes), SB3's a
callback averaging ``Monitor``'s episode returns (``info['episode']['r']``) of the episodes that
ended since the last multiple of the window. ``first_step_at_threshold``: the first window step
whose mean reaches the threshold, or null. ``final``: the last window's mean. ``steps``: the agent
steps trained (ours: the last summary's step, that is ``max_steps``; SB3: ``num_timesteps`` at the
end, which rounds up to whole rollouts: 100096 for CartPole). ``wall_s``: the training process,
from start to exit (interpreter start-up, imports, saving included); ``steps_per_s``: ``steps /
wall_s``; ``train_steps_per_s``: the steps between the first and last window divided by the time
between them, as this script saw the two lines arrive (start-up and the first window left out).

Runs go one at a time, each with one torch thread (``OMP_NUM_THREADS=1``; SB3's script also calls
``torch.set_num_threads(1)``). The SB3 side runs with ``--sb3-python`` (a scratch venv, never this
repository's: ``python3 -m venv /tmp/sb3 && /tmp/sb3/bin/pip install -c constraints.txt
torch==2.13.0 stable-baselines3==2.9.2 'gymnasium[classic-control]==1.4.0'``) and is skipped, with
a note in the JSON, when that interpreter is missing. The seed numbers do not draw the same random
numbers in the two trainers: compare the spread over seeds, not seed by seed.

How to run (from the repository root)::

    .venv/bin/python benchmarks/gymnasium_vs_sb3.py --tasks cartpole --seeds 1 2 3 --out benchmarks/gymnasium_vs_sb3.json
    .venv/bin/python benchmarks/gymnasium_vs_sb3.py --tasks cartpole --trainers ours-mlagents mlagents --seeds 1 2 3 4 5 6 7 8 --out benchmarks/cartpole_mlagents_choices.json

A variant of one task's configuration (a choice measured before it lands in ``config/``) runs
with ``--config`` and is stored under its own name with ``--label``::

    .venv/bin/python benchmarks/gymnasium_vs_sb3.py --tasks hopper --trainers ours --config /tmp/Hopper-relu.yaml --label ours-relu --keep benchmarks/gymnasium_vs_sb3.json --out /tmp/hopper.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[1]
TRAINERS = (
    "ours",
    "sb3",
    "ours-mlagents",
    "mlagents",
    "ours-unscaled",
    "ours-mlagents-std",
    "sb3-no-sde",
    "sb3-swish",
)
SB3_TRAINERS = ("sb3", "sb3-no-sde", "sb3-swish")  # run by --sb3-python
SB3_TASK_SUFFIX = {"sb3": "", "sb3-no-sde": "-no-sde", "sb3-swish": "-swish"}
SUMMARY = re.compile(r"\. Step: (\d+)\. Time Elapsed: ([\d.]+) s\. (?:Mean Reward: (-?\d+(?:\.\d+)?)|No episode)")
# The keys agents-learn has beyond ML-Agents' (docs/gymnasium.md); without them a configuration
# trains with ML-Agents' choices, as mlagents-learn reads it.
OWN_KEYS = {
    "hyperparameters": (
        "epsilon_floor",
        "max_grad_norm",
        "adam_epsilon",
        "advantage_normalization",
        "log_std_init",
        "target_critic",
        "buffer_init_actions",
    ),
    "network_settings": ("activation", "initialization"),
}


@dataclass(frozen=True)
class Task:
    name: str
    env_id: str
    config: Path
    max_steps: int  # every trainer's, whatever the configuration says
    window: int
    threshold: float
    trainers: tuple[str, ...] = ("ours", "sb3", "ours-mlagents", "mlagents")  # SB3_SCRIPT knows the first four


TASKS = {
    "cartpole": Task("cartpole", "CartPole-v1", REPO / "config/gymnasium/ppo/CartPole.yaml", 100_000, 5000, 475.0),
    "pendulum": Task("pendulum", "Pendulum-v1", REPO / "config/gymnasium/sac/Pendulum.yaml", 20_000, 2000, -200.0),
    "halfcheetah": Task(
        "halfcheetah",
        "HalfCheetah-v5",
        REPO / "config/gymnasium/sac/HalfCheetah.yaml",
        100_000,
        10_000,
        3000.0,
        ("ours", "sb3"),
    ),
    "hopper": Task(
        "hopper",
        "Hopper-v5",
        REPO / "config/gymnasium/sac/Hopper.yaml",
        100_000,
        10_000,
        1000.0,
        ("ours", "sb3", "mlagents", "sb3-swish"),
    ),
    "halfcheetah-ppo": Task(
        "halfcheetah-ppo",
        "HalfCheetah-v5",
        REPO / "config/gymnasium/ppo/HalfCheetah.yaml",
        300_000,
        10_000,
        1500.0,
        ("ours", "sb3", "ours-unscaled", "ours-mlagents-std"),
    ),
    "hopper-ppo": Task(
        "hopper-ppo",
        "Hopper-v5",
        REPO / "config/gymnasium/ppo/Hopper.yaml",
        1_000_000,
        10_000,
        1000.0,
        ("ours", "sb3", "ours-unscaled", "ours-mlagents-std"),
    ),
    "pendulum-ppo": Task(
        "pendulum-ppo",
        "Pendulum-v1",
        REPO / "config/gymnasium/ppo/Pendulum.yaml",
        100_000,
        10_000,
        -200.0,
        ("ours", "sb3", "sb3-no-sde", "ours-mlagents"),
    ),
    "walker-ppo": Task(
        "walker-ppo",
        "Walker2d-v5",
        REPO / "config/gymnasium/ppo/Walker2d.yaml",
        1_000_000,
        10_000,
        1000.0,
        ("ours", "sb3", "ours-unscaled", "ours-mlagents-std"),
    ),
    "acrobot": Task(
        "acrobot",
        "Acrobot-v1",
        REPO / "config/gymnasium/ppo/Acrobot.yaml",
        200_000,
        20_000,
        -100.0,
        ("ours", "ours-mlagents", "mlagents"),
    ),
}

# Run by --sb3-python: argv task env_id seed max_steps window. Prints one JSON object a line:
# {"step", "mean", "episodes"} per window, then {"steps", "learn_s"}.
SB3_SCRIPT = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from torch import nn
from stable_baselines3 import PPO, SAC
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import VecNormalize

task, env_id, seed, max_steps, window = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])


class Windows(BaseCallback):
    # the mean Monitor return of the episodes that ended since the last multiple of `window` steps
    def _on_training_start(self):
        self.returns, self.next_step = [], window

    def _on_step(self):
        for info in self.locals["infos"]:
            if "episode" in info:
                self.returns.append(float(info["episode"]["r"]))
        while self.num_timesteps >= self.next_step:
            mean = sum(self.returns) / len(self.returns) if self.returns else None
            print(json.dumps({"step": self.next_step, "mean": mean, "episodes": len(self.returns)}), flush=True)
            self.returns, self.next_step = [], self.next_step + window
        return True


TUNED_256 = dict(log_std_init=-2, ortho_init=False, activation_fn=nn.ReLU, net_arch=dict(pi=[256, 256], vf=[256, 256]))
MUJOCO_PPO = {  # RL Zoo's settings; policy_kwargs: its tuned networks, or SB3's defaults where it gives none
    "halfcheetah-ppo": dict(batch_size=64, gamma=0.98, learning_rate=2.0633e-05, ent_coef=0.000401762,
                            clip_range=0.1, n_epochs=20, gae_lambda=0.92, max_grad_norm=0.8, vf_coef=0.58096,
                            policy_kwargs=TUNED_256),
    "hopper-ppo": dict(batch_size=32, gamma=0.999, learning_rate=9.80828e-05, ent_coef=0.00229519,
                       clip_range=0.2, n_epochs=5, gae_lambda=0.99, max_grad_norm=0.7, vf_coef=0.835671,
                       policy_kwargs=TUNED_256),
    "walker-ppo": dict(batch_size=32, gamma=0.99, learning_rate=5.05041e-05, ent_coef=0.000585045,
                       clip_range=0.1, n_epochs=20, gae_lambda=0.95, max_grad_norm=1.0, vf_coef=0.871923),
}


def linear(start):
    return lambda progress_remaining: progress_remaining * start


if task == "cartpole":
    model = PPO("MlpPolicy", make_vec_env(env_id, n_envs=8, seed=seed), n_steps=32, batch_size=256,
                gae_lambda=0.8, gamma=0.98, n_epochs=20, ent_coef=0.0, learning_rate=linear(1e-3),
                clip_range=linear(0.2), seed=seed, device="cpu")
elif task in MUJOCO_PPO:
    # RL Zoo's MuJoCo PPO: one copy, VecNormalize with the task's gamma; Monitor is inside
    # VecNormalize (make_vec_env wraps each copy), so episode returns stay raw
    settings = MUJOCO_PPO[task]
    model = PPO("MlpPolicy", VecNormalize(make_vec_env(env_id, n_envs=1, seed=seed), gamma=settings["gamma"]),
                n_steps=512, seed=seed, device="cpu", **settings)
elif task in ("pendulum-ppo", "pendulum-ppo-no-sde"):
    # RL Zoo's tuned PPO for Pendulum-v1, gSDE resampled every 4 steps; "-no-sde": without gSDE
    sde = dict(use_sde=True, sde_sample_freq=4) if task == "pendulum-ppo" else {}
    model = PPO("MlpPolicy", make_vec_env(env_id, n_envs=4, seed=seed), n_steps=1024, gae_lambda=0.95,
                gamma=0.9, n_epochs=10, ent_coef=0.0, learning_rate=1e-3, clip_range=0.2, seed=seed,
                device="cpu", **sde)
elif task == "pendulum":
    model = SAC("MlpPolicy", env_id, learning_rate=1e-3, seed=seed, device="cpu")
elif task == "hopper-swish":
    # Swish (SiLU), ML-Agents' activation, in Stable-Baselines3's SAC: is the activation what parts them?
    model = SAC("MlpPolicy", env_id, learning_starts=10000, seed=seed, device="cpu",
                policy_kwargs=dict(activation_fn=nn.SiLU))
else:
    model = SAC("MlpPolicy", env_id, learning_starts=10000, seed=seed, device="cpu")
start = time.monotonic()
model.learn(total_timesteps=max_steps, callback=Windows())
print(json.dumps({"steps": model.num_timesteps, "learn_s": time.monotonic() - start}), flush=True)
"""


def written_config(task: Task, folder: Path, trainer: str) -> tuple[Path, int]:
    """The task's configuration with the task's ``max_steps``, as ``trainer`` runs it, written
    into ``folder``: ML-Agents' choices (``ours-mlagents``, ``mlagents``) without ``OWN_KEYS``,
    the reward signals' ``normalize`` and ``env_settings`` (which mlagents-learn does not know);
    ``ours-mlagents-std`` without ``log_std_init``; ``ours-unscaled`` without that and the reward
    signals' ``normalize``. And the copies its ``env_settings`` asked for."""
    mlagents_choices = trainer in ("ours-mlagents", "mlagents")
    unscaled = mlagents_choices or trainer == "ours-unscaled"
    default_std = unscaled or trainer == "ours-mlagents-std"
    config = yaml.safe_load(task.config.read_text())
    copies = int(config.get("env_settings", {}).get("envs_per_worker", 1))
    if mlagents_choices:
        del config["env_settings"]
    for behavior in config["behaviors"].values():
        behavior["max_steps"] = task.max_steps
        for section, keys in OWN_KEYS.items() if mlagents_choices else ():
            for key in keys:
                behavior.get(section, {}).pop(key, None)
        for signal in behavior.get("reward_signals", {}).values() if unscaled else ():
            signal.pop("normalize", None)
        if default_std:
            behavior.get("hyperparameters", {}).pop("log_std_init", None)
    path = folder / f"{task.name}-{trainer}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path, copies


def command(trainer: str, task: Task, seed: int, results: Path, interpreters: dict[str, str]) -> list[str]:
    run = ["--run-id=run", f"--seed={seed}", f"--results-dir={results}"]
    agents_learn = str(Path(sys.executable).with_name("agents-learn"))
    if trainer in SB3_TRAINERS:
        name = task.name + SB3_TASK_SUFFIX[trainer]
        args = [name, task.env_id, str(seed), str(task.max_steps), str(task.window)]
        return [interpreters["sb3"], "-c", SB3_SCRIPT, *args]
    config, copies = written_config(task, results.parent, trainer)
    if trainer in ("ours", "ours-unscaled", "ours-mlagents-std"):
        return [agents_learn, str(config), *run]
    env = f"--env=gymnasium:{task.env_id}"
    if trainer == "ours-mlagents":
        return [agents_learn, str(config), env, f"--envs-per-worker={copies}", *run]
    runner = str(REPO / "benchmarks/_mlagents_builtin_learn.py")
    return [interpreters["mlagents"], runner, str(config), env, "--copies", str(copies), "--in-process-env", *run]


def parse(trainer: str, line: str) -> tuple[str, Any] | None:
    """A window ("window", (step, mean or None)) or SB3's end ("end", {...}) from one output line."""
    if trainer not in SB3_TRAINERS:
        match = SUMMARY.search(line)
        if match is None:
            return None
        return "window", (int(match.group(1)), float(match.group(3)) if match.group(3) else None)
    if not line.startswith("{"):
        return None
    record = json.loads(line)
    if "step" in record:
        return "window", (record["step"], record["mean"])
    return "end", record


def train(trainer: str, task: Task, seed: int, interpreters: dict[str, str]) -> dict[str, Any]:
    """One run in a subprocess: its windows, the threshold step, wall time and rates."""
    with tempfile.TemporaryDirectory(prefix=f"gym-{trainer}-{task.name}-{seed}-") as tmp:
        environ = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        if trainer == "mlagents":  # its runner imports our environment adapter from the repository
            environ["PYTHONPATH"] = str(REPO)
        start = time.monotonic()
        process = subprocess.Popen(
            command(trainer, task, seed, Path(tmp) / "results", interpreters),
            cwd=tmp,
            env=environ,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert process.stdout is not None
        curve: list[tuple[int, float | None]] = []
        arrivals: list[float] = []
        end: dict[str, Any] = {}
        tail: list[str] = []
        for line in process.stdout:
            tail = (tail + [line])[-20:]
            parsed = parse(trainer, line)
            if parsed is None:
                continue
            kind, value = parsed
            if kind == "window":
                curve.append(value)
                arrivals.append(time.monotonic())
            else:
                end = value
        process.wait()
        wall = time.monotonic() - start
    if process.returncode != 0 or not curve or curve[-1][0] < task.max_steps:
        raise RuntimeError(f"{trainer} {task.name} seed {seed} failed (rc {process.returncode}):\n{''.join(tail)}")
    steps = int(end.get("steps", curve[-1][0]))
    reached = next((step for step, mean in curve if mean is not None and mean >= task.threshold), None)
    train_rate = (curve[-1][0] - curve[0][0]) / (arrivals[-1] - arrivals[0]) if len(curve) > 1 else None
    return {
        "seed": seed,
        "first_step_at_threshold": reached,
        "final": None if curve[-1][1] is None else round(curve[-1][1], 2),
        "steps": steps,
        "wall_s": round(wall, 1),
        "steps_per_s": round(steps / wall, 1),
        "train_steps_per_s": round(train_rate, 1) if train_rate else None,
        "curve": [(step, None if mean is None else round(mean, 2)) for step, mean in curve],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", choices=list(TASKS), nargs="+", default=list(TASKS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--trainers", choices=TRAINERS, nargs="+", default=list(TRAINERS))
    parser.add_argument("--sb3-python", default="/tmp/sb3/bin/python")
    parser.add_argument("--mlagents-python", default="/tmp/mla/bin/python")
    parser.add_argument("--max-steps", type=int, help="every run's steps (default: the task's)")
    parser.add_argument("--out", type=Path, help="rewrite the JSON here after every run")
    parser.add_argument("--keep", type=Path, help="an earlier output: its runs are kept, not run again")
    parser.add_argument("--config", type=Path, help="one task only: this configuration instead of the task's")
    parser.add_argument("--label", help="one trainer only: store its runs under this name, not the trainer's")
    args = parser.parse_args()
    if args.config is not None and len(args.tasks) != 1:
        parser.error("--config replaces one task's configuration: name one task")
    if args.label is not None and len(args.trainers) != 1:
        parser.error("--label names one trainer's runs: name one trainer")
    results: dict[str, Any] = json.loads(args.keep.read_text()) if args.keep else {}
    for name in args.tasks:
        task = TASKS[name] if args.max_steps is None else replace(TASKS[name], max_steps=args.max_steps)
        if args.config is not None:
            task = replace(task, config=args.config.resolve())
        entry = results.setdefault(
            name,
            {
                "env": task.env_id,
                "config": str(TASKS[name].config.relative_to(REPO)),
                "threshold": task.threshold,
                "window": task.window,
                "max_steps": task.max_steps,
            },
        )
        interpreters = {"sb3": args.sb3_python, "mlagents": args.mlagents_python}
        for trainer in args.trainers:
            if trainer not in task.trainers:
                entry[trainer] = {"skipped": f"not run on {name}"}
                continue
            interpreter = "sb3" if trainer in SB3_TRAINERS else trainer
            if interpreter in interpreters and not Path(interpreters[interpreter]).exists():
                entry[trainer] = {"skipped": f"no {interpreter} interpreter at {interpreters[interpreter]}"}
                continue
            key = args.label or trainer
            runs = [run for run in entry.get(key, {}).get("runs", []) if run["seed"] not in args.seeds]
            for seed in args.seeds:
                run = train(trainer, task, seed, interpreters)
                runs.append(run)
                print(
                    f"{trainer} {name} seed {seed}: at threshold {run['first_step_at_threshold']}, "
                    f"final {run['final']}, {run['wall_s']} s, {run['steps_per_s']} steps/s",
                    file=sys.stderr,
                    flush=True,
                )
                entry[key] = {"runs": sorted(runs, key=lambda r: r["seed"])}
                if args.config is not None:
                    entry[key]["config"] = str(args.config)
                if args.out is not None:
                    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
