"""PPO self-play on PettingZoo's connect_four_v3 (``config/gymnasium/ppo/ConnectFour.yaml``) against
a uniformly random player, per seed. Prints JSON (and writes it to ``--out`` after every seed).

Per seed: train with the CLI in a subprocess (``python -m orchestration.cli <config> --run-id=c4
--seed=S --results-dir=<tmp>``, ``OMP_NUM_THREADS=1``; ``--max-steps`` writes a copy of the YAML
with ``max_steps`` changed, for quick checks), then load the final checkpoint's actor
(``<run>/player/checkpoint.pt``, ``actor``) into the project's ``TorchPolicy``, built with the
run's own ``configuration.yaml`` network settings, and play ``--games`` games against a player
choosing uniformly among the legal columns, half with the policy moving first (``player_0``,
behavior ``player?team=0``) and half second (``player_1``, ``player?team=1``).

Observations and masks are exactly those of training: the games are played through the
project's PettingZoo adapter (``envs.pettingzoo.pettingzoo_env``, the BaseEnv the trainer steps),
so the policy gets the adapter's observation (``envs/gymnasium/observations.py``: the
``observation`` leaf, [6, 7, 2] int8, flattened to 84 float32, planes from the mover's side) and
the mask the trainer builds (``processors/agent_processor.py``: allowed = not
``DecisionSteps.action_mask``). Two checks ride along: every observation the policy gets is
compared with PettingZoo's own ``observe(mover)["observation"]`` flattened (``obs_mismatches``),
every move with the legal columns (``illegal_moves``), and the seat by the empty boards the policy
decides on (``empty_board_decisions``: one a game moving first, none second). The deterministic moves are also
recomputed with the exported ``player.onnx`` (onnxruntime, ``deterministic_discrete_actions``)
and compared with the checkpoint's (``onnx_disagreements``).

Modes: ``deterministic`` (each branch's most likely legal action) and ``stochastic`` (sampled
from the masked distribution, the policy's own seeded stream ``--eval-seed``). Per mode and seat
(``first``, ``second``, ``all``): games, wins, draws, losses and their rates, from the policy's
terminal reward (+1 win, -1 loss, 0 draw). ``beats_random_90``: the win rate over all games is at
least 0.9. Training: ``wall_s`` (the subprocess, start to exit), ``steps`` (the last console
summary's), ``final_elo_line`` (the last summary line with ``ELO:``) and ``elo`` [(step, ELO)].
``random_vs_random``: the same harness with a uniformly random player in the policy's seat (a
check of the harness: the first player wins a little more often).

How to run (from the repository root; one training at a time, single-threaded)::

    .venv/bin/python benchmarks/connect_four_vs_random.py --seeds 1 2 3
    .venv/bin/python benchmarks/connect_four_vs_random.py --seeds 1 --max-steps 20000 --out /tmp/c4.json
    .venv/bin/python benchmarks/connect_four_vs_random.py --seeds 2 --keep benchmarks/connect_four_vs_random.json
    .venv/bin/python benchmarks/connect_four_vs_random.py --evaluate results/c4  # an existing run folder

``--keep``: an earlier output whose runs of other seeds are kept (to add seeds one at a time).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _cli_run import run_cli, with_max_steps
from mlagents_envs.base_env import ActionTuple

from envs.pettingzoo import pettingzoo_env
from trainers.files.checkpoints import LATEST_CHECKPOINT, load_state
from trainers.networks.policy import TorchPolicy
from trainers.settings.files import load_run_options

REPO = Path(__file__).resolve().parents[1]

CONFIG = REPO / "config/gymnasium/ppo/ConnectFour.yaml"
TARGET = "pettingzoo.classic.connect_four_v3"
BEHAVIOR = "player"
TEAMS = {"first": f"{BEHAVIOR}?team=0", "second": f"{BEHAVIOR}?team=1"}
SUMMARY = re.compile(r"\. Step: (\d+)\. Time Elapsed: .*?ELO: (-?\d+(?:\.\d+)?)")
STEP = re.compile(r"\. Step: (\d+)\. ")

# A player: (observations, allowed [N, 7] bool) -> chosen columns [N].
Chooser = Callable[[list[np.ndarray], np.ndarray], np.ndarray]


def train(seed: int, max_steps: int | None, results: Path) -> dict[str, Any]:
    """One training run of the CLI in a subprocess, as a user starts it; its console gives the
    steps and ELO, the clock the wall time."""
    elo: list[tuple[int, float]] = []
    steps: list[int] = []
    elo_lines: list[str] = []

    def read(line: str) -> None:
        if (match := STEP.search(line)) is not None:
            steps.append(int(match.group(1)))
        if (match := SUMMARY.search(line)) is not None:
            elo.append((int(match.group(1)), float(match.group(2))))
            elo_lines.append(line.strip())

    config = with_max_steps(CONFIG, max_steps, results.parent)
    run = run_cli(config, run_id="c4", seed=seed, results=results, on_line=read)
    return {
        "command": run.command,
        "wall_s": run.wall_s,
        "steps": steps[-1] if steps else None,
        "final_elo_line": elo_lines[-1] if elo_lines else None,
        "elo": elo,
    }


def load_policy(run_dir: Path, sample_seed: int) -> TorchPolicy:
    """The run's final actor in a TorchPolicy with the run's own network settings, so it acts as
    the trainer's policy did (same masking, argmax and sampling code)."""
    options = load_run_options(run_dir / "configuration.yaml")
    network = options.behavior_settings(BEHAVIOR).network_settings
    env = pettingzoo_env(TARGET, seed=0)
    try:
        spec = env.behavior_specs[TEAMS["first"]]
    finally:
        env.close()
    policy = TorchPolicy(spec, network, seed=sample_seed)
    policy.load_weights(load_state(run_dir / BEHAVIOR / LATEST_CHECKPOINT)["actor"])
    return policy


def policy_chooser(policy: TorchPolicy, deterministic: bool, seen: list[tuple[np.ndarray, np.ndarray]]) -> Chooser:
    """The policy as a player; ``seen`` collects (observation, allowed) for the ONNX check."""

    def choose(obs: list[np.ndarray], allowed: np.ndarray) -> np.ndarray:
        seen.extend(zip(obs[0], allowed))
        ids = np.arange(allowed.shape[0], dtype=np.int32)
        return policy.act(obs, allowed, ids, deterministic=deterministic).discrete_actions[:, 0]

    return choose


def random_chooser(rng: np.random.Generator) -> Chooser:
    """A player choosing uniformly among the legal columns."""

    def choose(obs: list[np.ndarray], allowed: np.ndarray) -> np.ndarray:
        return np.array([rng.choice(np.flatnonzero(row)) for row in allowed], dtype=np.int32)

    return choose


def play(me: Chooser, seat: str, games: int, rng: np.random.Generator, env_seed: int) -> dict[str, Any]:
    """``games`` games of ``me`` in ``seat`` (behavior ``TEAMS[seat]``) against random play,
    through the adapter the trainer steps; results from ``me``'s terminal rewards."""
    env = pettingzoo_env(TARGET, seed=env_seed)
    opponent = random_chooser(rng)
    mine = TEAMS[seat]
    players = {mine: me, next(t for t in TEAMS.values() if t != mine): opponent}
    counts = {"win": 0, "draw": 0, "loss": 0}
    illegal = obs_mismatches = interrupted = empty_board = 0
    try:
        while sum(counts.values()) < games:
            for behavior, choose in players.items():
                if behavior not in env.behavior_specs:  # a behavior appears with its first report
                    continue
                decisions, terminals = env.get_steps(behavior)
                if behavior == mine:
                    for reward, cut in zip(terminals.reward, terminals.interrupted):
                        interrupted += int(cut)
                        counts["win" if reward > 0 else "loss" if reward < 0 else "draw"] += 1
                    if sum(counts.values()) >= games:  # not into the next game's first move
                        break
                if len(decisions) == 0:
                    continue
                allowed = ~np.concatenate(decisions.action_mask, axis=1).astype(bool)  # as the trainer
                if behavior == mine:
                    raw = env.env.observe(env.env.agent_selection)["observation"]
                    empty_board += int(not decisions.obs[0][0].any())  # moves first: once a game
                    obs_mismatches += int(not np.array_equal(decisions.obs[0][0], np.asarray(raw, np.float32).ravel()))
                columns = np.asarray(choose(list(decisions.obs), allowed), dtype=np.int32)
                illegal += int((~allowed[np.arange(len(columns)), columns]).sum())
                env.set_actions(behavior, ActionTuple(discrete=columns[:, None]))
            env.step()
    finally:
        env.close()
    played = sum(counts.values())
    return {
        "games": played,
        **counts,
        **{f"{k}_rate": round(v / played, 4) for k, v in counts.items()},
        "illegal_moves": illegal,
        "obs_mismatches": obs_mismatches,
        "empty_board_decisions": empty_board,
        "interrupted": interrupted,
    }


def summed(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """Both seats together."""
    keys = ("games", "win", "draw", "loss", "illegal_moves", "obs_mismatches", "empty_board_decisions", "interrupted")
    total = {k: first[k] + second[k] for k in keys}
    return {**total, **{f"{k}_rate": round(total[k] / total["games"], 4) for k in ("win", "draw", "loss")}}


def onnx_disagreements(run_dir: Path, policy: TorchPolicy, seen: list[tuple[np.ndarray, np.ndarray]]) -> Any:
    """How many of the positions seen the exported ``player.onnx`` answers with another
    deterministic move than the checkpoint's actor (0: the ONNX model is the policy evaluated)."""
    try:
        import onnxruntime
    except ImportError:
        return "onnxruntime not installed"
    obs = np.stack([o for o, _ in seen]).astype(np.float32)
    allowed = np.stack([a for _, a in seen])
    session = onnxruntime.InferenceSession(str(run_dir / f"{BEHAVIOR}.onnx"), providers=["CPUExecutionProvider"])
    (onnx_moves,) = session.run(
        ["deterministic_discrete_actions"], {"obs_0": obs, "action_masks": allowed.astype(np.float32)}
    )
    ids = np.arange(len(obs), dtype=np.int32)
    torch_moves = policy.act([obs], allowed, ids, deterministic=True).discrete_actions
    return int((np.asarray(onnx_moves)[:, 0] != torch_moves[:, 0]).sum())


def evaluate(run_dir: Path, games: int, eval_seed: int) -> dict[str, Any]:
    """Deterministic and stochastic play against random play, first and second, half the games
    each."""
    out: dict[str, Any] = {}
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    for mode in ("deterministic", "stochastic"):
        policy = load_policy(run_dir, eval_seed)
        me = policy_chooser(policy, mode == "deterministic", seen if mode == "deterministic" else [])
        rng = np.random.default_rng(eval_seed)
        first = play(me, "first", games // 2, rng, eval_seed)
        second = play(me, "second", games - games // 2, rng, eval_seed)
        every = summed(first, second)
        out[mode] = {"first": first, "second": second, "all": every, "beats_random_90": every["win_rate"] >= 0.9}
    out["onnx_disagreements"] = onnx_disagreements(run_dir, load_policy(run_dir, eval_seed), seen)
    out["onnx_positions_checked"] = len(seen)
    return out


def random_vs_random(games: int, eval_seed: int) -> dict[str, Any]:
    """The harness with random play in the policy's seat."""
    rng = np.random.default_rng(eval_seed)
    first = play(random_chooser(np.random.default_rng(eval_seed + 1)), "first", games // 2, rng, eval_seed)
    second = play(random_chooser(np.random.default_rng(eval_seed + 2)), "second", games - games // 2, rng, eval_seed)
    return {"first": first, "second": second, "all": summed(first, second)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--max-steps", type=int, help="train this many steps (a copy of the YAML); default 500k")
    parser.add_argument("--games", type=int, default=200, help="games per mode, half first and half second")
    parser.add_argument("--eval-seed", type=int, default=0, help="random player's and sampling's seed")
    parser.add_argument("--evaluate", type=Path, help="only evaluate this existing run folder (no training)")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/connect_four_vs_random.json")
    parser.add_argument("--keep", type=Path, help="an earlier output: its runs of other seeds are kept")
    args = parser.parse_args()
    kept = json.loads(args.keep.read_text())["runs"] if args.keep else []
    torch.set_num_threads(1)
    results: dict[str, Any] = {
        "config": str(CONFIG.relative_to(REPO)),
        "env": TARGET,
        "max_steps": args.max_steps or 500_000,
        "games": args.games,
        "eval_seed": args.eval_seed,
        "random_vs_random": random_vs_random(args.games, args.eval_seed),
        "runs": [run for run in kept if run.get("seed") not in args.seeds],
    }
    if args.evaluate is not None:
        results["max_steps"] = None
        results["runs"].append({"run_dir": str(args.evaluate), **evaluate(args.evaluate, args.games, args.eval_seed)})
    for seed in [] if args.evaluate is not None else args.seeds:
        with tempfile.TemporaryDirectory(prefix=f"c4-{seed}-") as tmp:
            run = {"seed": seed, **train(seed, args.max_steps, Path(tmp) / "results")}
            run.update(evaluate(Path(tmp) / "results" / "c4", args.games, args.eval_seed))
        results["runs"] = sorted([*results["runs"], run], key=lambda r: r["seed"])
        det, sto = run["deterministic"]["all"], run["stochastic"]["all"]
        print(
            f"seed {seed}: {run['wall_s']} s, {run['steps']} steps, ELO {run['elo'][-1][1] if run['elo'] else None}, "
            f"wins deterministic {det['win_rate']}, stochastic {sto['win_rate']}",
            file=sys.stderr,
            flush=True,
        )
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.evaluate is not None:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
