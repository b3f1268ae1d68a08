"""GAIL alone (no extrinsic reward, no behavioral cloning) imitating a scripted expert on built-in
Basic, across seeds. Prints JSON.

Each run records 100 steps of an expert walking straight to Basic's large goal (return 0.93) or,
the control, to its small goal (return 0.07), trains with GAIL on them as the only reward
signal (``tests/support/gail_alone.py``: ML-Agents' PPO and SAC learning-test settings, GAIL's
defaults but ``use_actions: true`` and ``gamma: 0.3``) and reports the environment's own return:
the mean of the last two summaries (the last 1000 steps) and the curve of (step, mean return)
summaries every 500 steps. ``followed`` is whether the score is within 0.1 of the demonstrated
goal's return (a policy that wanders until Basic's 100-decision limit scores about -1); ``best``
is the best summary, and ``relapsed`` marks a run whose best summary came within 0.03 of the
goal's return but whose score ends more than 0.13 below it (for the large goal: reached 0.9,
ends below 0.8), ``dipped`` one with a summary that far below after its first within 0.03 (a
relapse at any time, recovered or not).

Variants (``--variants``; default ``chosen``, about 100 s):

- ``chosen``: the setting above, PPO (5000 steps) and SAC (3000 steps), both goals.
- ``obs_only``: ``use_actions: false`` (ML-Agents' default) with gamma 0.99 (its default) and
  0.3, PPO, large goal.
- ``gamma``: ``use_actions: true`` with gamma 0.5, 0.7 (PPO) and 0.99 (PPO and SAC), large goal.
- ``vail``: ``use_actions`` and ``use_vail`` with gamma 0.5, 0.3 and 0.1, PPO, large goal.

``--runs NAME ...`` keeps only those runs of the variants (``ppo_large``...).

``--mlagents [PYTHON]`` also trains each run with ML-Agents 0.28's own ``mlagents-learn`` (its
trainer, GAIL and demo loader, on the same built-in Basic through
``benchmarks/_mlagents_builtin_learn.py``, the same demo file and seed), reported as
``mlagents_<run>``; ``--mlagents-only`` skips ours. PYTHON is the scratch ML-Agents venv's
interpreter (default ``/tmp/mla/bin/python``; set up as ``benchmarks/mlagents_sac_anchor.py``
says). The settings are ours converted to an mlagents-learn YAML (every key written out, so
neither side's defaults matter; beta and epsilon follow the constant learning rate, as they do
when mlagents-learn reads a YAML without those keys). Its curve is its console's summaries
(``Mean Reward``: ``Environment/Cumulative Reward`` to 3 decimals). A seed's ML-Agents run is
repeatable (seeds 1 and 2 twice: the same curves). On a shared 2-core machine an ML-Agents PPO
run took 80-120 s, ours 25-40 s. Results of ``--runs ppo_large --seeds 20`` both ways:
``benchmarks/gail_seeds_mlagents.json``.

The cattrs patch that ``mlagents_sac_anchor.py`` describes leaves ML-Agents' hook for
``Dict[RewardSignalType, RewardSignalSettings]`` unregistered (``register_cls_list`` clears the
direct table right after filling it), so mlagents-learn would build a plain
``RewardSignalSettings`` for ``gail`` and fail on ``use_vail``; the ML-Agents side re-registers
that hook as a function hook before it starts (:data:`MLAGENTS_MAIN`).

Usage: ``PYTHONPATH=. python benchmarks/gail_seeds.py [--variants NAME ...] [--seeds N]
[--first-seed K] [--runs NAME ...] [--mlagents [PYTHON]] [--mlagents-only] [--out FILE]``.
``--seeds N``: seeds 1 to N (default 5; with ``--first-seed K``, K to N). One run after
another, one torch thread each. ``--out`` also writes the JSON to FILE, after every run.
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
from pathlib import Path
from typing import Any

import torch
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.support.gail_alone import (  # noqa: E402 - after the path set-up
    EXPERT_RETURN,
    gail_alone_config,
    gail_alone_score,
    record_basic_demo,
)

DEFAULT_SEEDS = 5
MLAGENTS_PYTHON = "/tmp/mla/bin/python"
REACHED, RELAPSED = 0.03, 0.13  # within this of the goal's return at best; this far below it at the end

# variant -> its runs: (name, trainer, goal, GAIL keywords)
VARIANTS: dict[str, list[tuple[str, str, str, dict]]] = {
    "chosen": [
        ("ppo_large", "ppo", "large", {}),
        ("ppo_small", "ppo", "small", {}),
        ("sac_large", "sac", "large", {}),
        ("sac_small", "sac", "small", {}),
    ],
    "obs_only": [
        ("ppo_obs_only_gamma_0.99", "ppo", "large", {"use_actions": False, "gamma": 0.99}),
        ("ppo_obs_only_gamma_0.3", "ppo", "large", {"use_actions": False, "gamma": 0.3}),
    ],
    "gamma": [
        ("ppo_gamma_0.5", "ppo", "large", {"gamma": 0.5}),
        ("ppo_gamma_0.7", "ppo", "large", {"gamma": 0.7}),
        ("ppo_gamma_0.99", "ppo", "large", {"gamma": 0.99}),
        ("sac_gamma_0.99", "sac", "large", {"gamma": 0.99}),
    ],
    "vail": [
        ("ppo_vail_gamma_0.5", "ppo", "large", {"use_vail": True, "gamma": 0.5}),
        ("ppo_vail_gamma_0.3", "ppo", "large", {"use_vail": True, "gamma": 0.3}),
        ("ppo_vail_gamma_0.1", "ppo", "large", {"use_vail": True, "gamma": 0.1}),
    ],
}

# the hyperparameters written to ML-Agents' YAML, per trainer (ML-Agents 0.28's names)
MLAGENTS_HYPERPARAMETERS = {
    "ppo": (
        "batch_size",
        "buffer_size",
        "learning_rate",
        "learning_rate_schedule",
        "beta",
        "epsilon",
        "lambd",
        "num_epoch",
        "beta_schedule",
        "epsilon_schedule",
    ),
    "sac": (
        "batch_size",
        "buffer_size",
        "learning_rate",
        "learning_rate_schedule",
        "buffer_init_steps",
        "tau",
        "steps_per_update",
        "init_entcoef",
        "reward_signal_steps_per_update",
    ),
}
NETWORK_KEYS = ("normalize", "hidden_units", "num_layers")

# mlagents-learn's entry, run as ``python -c MLAGENTS_MAIN script args``: the reward signals'
# structure hook registered so that it survives (see the module docstring), then ``script``
MLAGENTS_MAIN = """
import runpy, sys
from typing import Dict
import cattr
from mlagents.trainers.settings import RewardSignalSettings, RewardSignalType
signals = Dict[RewardSignalType, RewardSignalSettings]
cattr.register_structure_hook_func(lambda t: t == signals, RewardSignalSettings.structure)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""
SUMMARY = re.compile(r"\. Step: (\d+)\. Time Elapsed: [\d.]+ s\. Mean Reward: (-?\d+(?:\.\d+)?)")


def plain(value: Any) -> Any:
    """A settings value as YAML writes it (enums by value)."""
    return getattr(value, "value", value)


def mlagents_config(trainer: str, demo: Path, **gail) -> dict[str, Any]:
    """:func:`gail_alone_config` as an mlagents-learn run configuration (behavior ``Basic``)."""
    settings = gail_alone_config(trainer, demo, **gail)
    signal = next(iter(settings.reward_signals.values()))
    behavior = {
        "trainer_type": trainer,
        "hyperparameters": {
            key: plain(getattr(settings.hyperparameters, key)) for key in MLAGENTS_HYPERPARAMETERS[trainer]
        },
        "network_settings": {key: plain(getattr(settings.network_settings, key)) for key in NETWORK_KEYS},
        "reward_signals": {
            "gail": {
                "gamma": signal.gamma,
                "strength": signal.strength,
                "demo_path": str(demo),
                "learning_rate": signal.learning_rate,
                "use_actions": signal.use_actions,
                "use_vail": signal.use_vail,
                "network_settings": {key: plain(getattr(signal.network_settings, key)) for key in NETWORK_KEYS},
            }
        },
        "max_steps": settings.max_steps,
        "time_horizon": settings.time_horizon,
        "summary_freq": settings.summary_freq,
        "threaded": settings.threaded,
    }
    return {"behaviors": {"Basic": behavior}}


def mlagents_score(
    python: str, trainer: str, goal: str, seed: int, demo_dir: Path, **gail
) -> tuple[float, list[tuple[int, float]]]:
    """:func:`gail_alone_score` with ML-Agents' mlagents-learn: the same demo file and seed."""
    demo = record_basic_demo(demo_dir / f"{trainer}-{goal}-{seed}.demo", goal=goal, seed=seed)
    with tempfile.TemporaryDirectory(prefix="gail-mlagents-") as tmp:
        config = Path(tmp) / "config.yaml"
        config.write_text(yaml.safe_dump(mlagents_config(trainer, demo, **gail)))
        script = REPO / "benchmarks" / "_mlagents_builtin_learn.py"
        arguments = [str(config), "--env=builtin:Basic", "--run-id=gail", f"--seed={seed}", "--torch-device=cpu"]
        environ = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        done = subprocess.run(
            [python, "-c", MLAGENTS_MAIN, str(script), *arguments],
            cwd=tmp,
            env=environ,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        log = done.stdout + done.stderr
        curve = [(int(step), float(reward)) for step, reward in SUMMARY.findall(log)]
        if done.returncode != 0 or not curve:
            raise RuntimeError(f"mlagents-learn {trainer} {goal} seed {seed} failed:\n{log[-3000:]}")
    return float(sum(reward for _, reward in curve[-2:]) / len(curve[-2:])), curve


def result(seed: int, goal: str, score: float, curve: list[tuple[int, float]], seconds: float) -> dict[str, Any]:
    rewards = [reward for _, reward in curve]
    best = max(rewards)
    goal_return = EXPERT_RETURN[goal]
    first = next((i for i, reward in enumerate(rewards) if reward >= goal_return - REACHED), None)
    return {
        "seed": seed,
        "score": round(score, 3),
        "followed": abs(score - EXPERT_RETURN[goal]) < 0.1,
        "best": round(best, 3),
        "relapsed": best >= goal_return - REACHED and score < goal_return - RELAPSED,
        "dipped": first is not None and min(rewards[first:]) < goal_return - RELAPSED,
        "curve": [(step, round(reward, 3)) for step, reward in curve],
        "seconds": round(seconds, 1),
    }


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", nargs="*", default=["chosen"], choices=list(VARIANTS))
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds 1 (or --first-seed) to N")
    parser.add_argument("--first-seed", type=int, default=1)
    parser.add_argument("--runs", nargs="*", default=None, help="only these runs of the variants")
    parser.add_argument("--mlagents", nargs="?", const=MLAGENTS_PYTHON, default=None, metavar="PYTHON")
    parser.add_argument("--mlagents-only", action="store_true", help="skip our trainer")
    parser.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = parser.parse_args()
    if args.mlagents_only and args.mlagents is None:
        args.mlagents = MLAGENTS_PYTHON
    sides = ([] if args.mlagents_only else ["ours"]) + ([] if args.mlagents is None else ["mlagents"])
    out: dict[str, object] = {}
    with tempfile.TemporaryDirectory() as demos:
        for variant in args.variants:
            for name, trainer, goal, gail in VARIANTS[variant]:
                if args.runs is not None and name not in args.runs:
                    continue
                for side in sides:
                    key = name if side == "ours" else f"mlagents_{name}"
                    results = []
                    for seed in range(args.first_seed, args.seeds + 1):
                        start = time.perf_counter()
                        if side == "ours":
                            score, curve = gail_alone_score(trainer, goal, seed, Path(demos), **gail)
                        else:
                            score, curve = mlagents_score(args.mlagents, trainer, goal, seed, Path(demos), **gail)
                        results.append(result(seed, goal, score, curve, time.perf_counter() - start))
                        print(json.dumps({key: results[-1]}), file=sys.stderr, flush=True)
                        out[key] = results
                        if args.out is not None:
                            args.out.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
