"""``--env gymnasium:<id>`` and ``--env pettingzoo:<module>`` through the run (issue 35): the
source's checks before any work, its settings (``envs_per_worker``, ``env_kwargs``) refused
where a source cannot take them, the results a Unity user knows, and CartPole learning with RL
Zoo's tuned PPO settings (config/gymnasium/ppo/CartPole.yaml).

CartPole-v1 PPO (random play: about 22), seeds 1-8, the first 5k-step summary at 475 or more
within 100k steps, and the last summary (100k), on an AVX-512 machine:

====================================  ===  ===  ===  ===  ===  ===  ===  ===
seed                                  1    2    3    4    5    6    7    8
====================================  ===  ===  ===  ===  ===  ===  ===  ===
ML-Agents' PPO (Swish, no clipping)   50k  --   --   65k  70k  25k  50k  --
  last summary                        500  287  182  500  500  500  500  222
SB3's choices (config/gymnasium)      40k  20k  35k  35k  20k  30k  30k  20k
  last summary                        500  500  500  500  331  500  500  500
====================================  ===  ===  ===  ===  ===  ===  ===  ===

The second pair of rows is config/gymnasium/ppo/CartPole.yaml as it is: RL Zoo's settings plus
Stable-Baselines3's PPO where ML-Agents' differs (tanh hidden layers, gradients clipped at 0.5,
Adam's epsilon 1e-5, the clip range decaying to 0). Stable-Baselines3 with the same settings
reaches 475 at 25k, 30k and 40k on seeds 1-3 (benchmarks/gymnasium_vs_sb3.json) and RL Zoo publishes
500 at 100k. The learning test asks what every seed above does: a summary of 475 or more within
50k steps (the configuration's 100k-step schedules, stopped there), first or second seed."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import attrs
import gymnasium
import numpy as np
import pytest

from orchestration.checks import check_run
from orchestration.run import build_run
from tests.support.learning import RewardLog, first_or_second_seed
from trainers.exceptions import ConfigError
from trainers.loop.registry import TrainerRegistry
from trainers.settings import RunOptions, load_run_options

REPO = Path(__file__).resolve().parents[1]
CARTPOLE = REPO / "config/gymnasium/ppo/CartPole.yaml"


class UnboundedActions(gymnasium.Env):
    """A continuous action without bounds, which a policy's [-1, 1] cannot be mapped onto."""

    observation_space = gymnasium.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gymnasium.spaces.Box(-np.inf, np.inf, (1,), np.float32)


# ``gymnasium:tests.test_gymnasium_run:Unbounded-v0`` imports this module, which registers it.
if "Unbounded-v0" not in gymnasium.registry:
    gymnasium.register("Unbounded-v0", entry_point=UnboundedActions)


def options_with(env_path: str | None, **env_changes) -> RunOptions:
    """config/gymnasium/ppo/CartPole.yaml with another environment (envs_per_worker left unset
    unless changed)."""
    options = load_run_options(CARTPOLE)
    env_changes = {"envs_per_worker": None, **env_changes}
    return attrs.evolve(options, env_settings=attrs.evolve(options.env_settings, env_path=env_path, **env_changes))


@pytest.mark.parametrize(
    ("env_path", "env_changes", "message"),
    [
        ("gymnasium:NoSuchEnv-v0", {}, "--env (env_settings.env_path): gymnasium:NoSuchEnv-v0"),
        ("gymnasium:CartPole-v1", {"env_kwargs": {"gravity_x": 1}}, "gravity_x"),
        ("gymnasium:tests.test_gymnasium_run:Unbounded-v0", {}, "Unbounded-v0"),
        ("gymnasium:no_such_module:Env-v0", {}, "no_such_module"),
        ("builtin:3DBall", {"envs_per_worker": 4}, "--envs-per-worker (env_settings.envs_per_worker) with"),
        ("builtin:3DBall", {"env_kwargs": {"a": 1}}, "env_settings.env_kwargs (a) with --env builtin:3DBall"),
        ("gymnasium:CartPole-v1", {"num_areas": 2}, "--envs-per-worker sets its copies"),
        ("gymnasium:CartPole-v1", {"env_args": ("-x",)}, "--env-args (env_settings.env_args) with"),
        ("pettingzoo:no_such_module_v0", {}, "--env (env_settings.env_path): pettingzoo:no_such_module_v0"),
        (None, {"env_kwargs": {"a": 1}}, "the Unity Editor is not made with keyword arguments"),
    ],
)
def test_what_a_source_cannot_take_is_refused_before_any_work(env_path, env_changes, message, tmp_path):
    options = options_with(env_path, **env_changes)
    options = attrs.evolve(
        options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path))
    )
    with pytest.raises(ConfigError) as error:
        check_run(options, registry=TrainerRegistry.with_plugins())
    assert message in str(error.value)
    assert not any(tmp_path.iterdir())  # nothing written


def test_an_unbounded_action_space_is_named_with_the_environment(tmp_path):
    options = options_with("gymnasium:tests.test_gymnasium_run:Unbounded-v0")
    with pytest.raises(ConfigError, match=r"Unbounded-v0.*Box"):
        check_run(options, registry=TrainerRegistry.with_plugins())


@pytest.mark.slow  # a CLI run with worker processes
def test_a_gymnasium_run_from_the_command_line_writes_what_a_unity_run_writes(tmp_path):
    config = tmp_path / "cartpole.yaml"
    text = CARTPOLE.read_text().replace("max_steps: 100000", "max_steps: 1200")
    config.write_text(text.replace("summary_freq: 5000", "summary_freq: 600"))
    command = [sys.executable, "-m", "orchestration.cli", str(config), "--run-id=cp", "--seed=4"]
    command += ["--num-envs=2", "--envs-per-worker=3"]
    result = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    output = result.stdout + result.stderr
    assert "CartPole-v1. Step: 600." in output
    run = tmp_path / "results/cp"
    assert (run / "CartPole-v1.onnx").exists()
    status = json.loads((run / "run_logs/training_status.json").read_text())
    assert "CartPole-v1" in status
    written = (run / "configuration.yaml").read_text()
    assert "envs_per_worker: 3" in written and "env_path: gymnasium:CartPole-v1" in written


def cartpole_curve(seed: int) -> list[tuple[int, float]]:
    """Mean returns of config/gymnasium/ppo/CartPole.yaml's summaries, until one reaches 475 or
    the run passes 50k steps (of its 100k: the schedules decay as in a whole run)."""
    log = RewardLog(lambda curve: curve[-1][1] >= 475.0 or curve[-1][0] >= 50_000)
    options = options_with("gymnasium:CartPole-v1", seed=seed)
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="cp")
        )
        build_run(options, writers=[log], console=False, stop=log.stop).run()
    return log.curve


@pytest.mark.slow  # trains a policy
def test_cartpole_learns_with_rl_zoos_settings():
    first_or_second_seed(cartpole_curve, lambda curve: any(r >= 475.0 for step, r in curve if step <= 50_000))


@pytest.mark.slow  # runs a policy
def test_cartpole_control_without_learning_stays_near_random_play():
    log = RewardLog()
    options = options_with("gymnasium:CartPole-v1", seed=1)
    behaviors = {
        name: attrs.evolve(b, max_steps=15_000, hyperparameters=attrs.evolve(b.hyperparameters, learning_rate=0.0))
        for name, b in options.behaviors.items()
    }
    with tempfile.TemporaryDirectory() as results:
        options = attrs.evolve(
            options,
            behaviors=behaviors,
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="cp"),
        )
        build_run(options, writers=[log], console=False).run()
    assert max(log.rewards) < 60.0, log.curve  # random play: about 22


def test_sac_stores_mujocos_own_transitions_from_config_hopper(tmp_path):
    """Every transition config/gymnasium/sac/Hopper.yaml's SAC puts in its replay buffer (1,500
    steps, about 60 falls, time-horizon cuts) is what MuJoCo itself makes of it: Hopper-v5 set
    to the stored observation (its dynamics ignore the x position, the one coordinate the
    observation leaves out) and stepped with the stored action gives the stored reward, next
    observation and ``done`` (a fall: nothing to bootstrap). Checked because this SAC learns Hopper
    less far in 100k steps than Stable-Baselines3 (docs/gymnasium.md): the transitions it
    learns from are not why."""
    options = load_run_options(REPO / "config/gymnasium/sac/Hopper.yaml")
    (name,) = options.behaviors
    behavior = options.behaviors[name]
    behavior = attrs.evolve(  # no update: the transitions are the same either way, and faster
        behavior,
        max_steps=1_500,
        summary_freq=1_500,
        hyperparameters=attrs.evolve(behavior.hyperparameters, buffer_init_steps=10_000),
    )
    options = attrs.evolve(
        options,
        behaviors={name: behavior},
        env_settings=attrs.evolve(options.env_settings, seed=1),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="hop"),
    )
    run = build_run(options, console=False)
    run.run()
    stored = run.controller.trainers[name].algorithm.replay.state()  # as saved: rows in the order taken
    n = stored["size"]
    (obs,), (next_obs,) = [o.numpy() for o in stored["obs"]], [o.numpy() for o in stored["next_obs"]]
    actions, rewards = stored["continuous_actions"].numpy(), stored["rewards"][:, 0].numpy()
    dones = stored["dones"].numpy().astype(bool)
    assert n >= 1_500 and dones.sum() >= 30
    mujoco = gymnasium.make("Hopper-v5").unwrapped
    mujoco.reset(seed=0)
    checked = 0
    for i in range(n):
        if np.any(np.abs(obs[i][5:]) >= 10.0):  # velocities clipped in the observation: no state to set
            continue
        mujoco.set_state(np.concatenate([[0.0], obs[i][:5]]), obs[i][5:].astype(np.float64))
        stepped, reward, terminated, _, _ = mujoco.step(actions[i].astype(np.float64))
        assert terminated == dones[i], i
        assert reward == pytest.approx(rewards[i], abs=1e-5), i
        if not dones[i]:
            np.testing.assert_allclose(stepped, next_obs[i], atol=1e-5, err_msg=f"row {i}")
        checked += 1
    mujoco.close()
    assert checked >= n - 10


def pendulum_warming_up(folder: Path, max_steps: int, *, resume: bool = False) -> tuple[int, np.ndarray, np.ndarray]:
    """config/gymnasium/sac/Pendulum.yaml with 150 uniform warm-up steps, acting with the mean
    action after them and a learning rate too small to move it: (the step the run ended at,
    each replay row's action, the policy's mean action on the row's observation)."""
    options = load_run_options(REPO / "config/gymnasium/sac/Pendulum.yaml")
    (name,) = options.behaviors
    behavior = options.behaviors[name]
    behavior = attrs.evolve(
        behavior,
        max_steps=max_steps,
        summary_freq=max_steps,
        hyperparameters=attrs.evolve(
            behavior.hyperparameters,
            buffer_init_steps=WARMUP,
            buffer_init_actions="uniform",
            batch_size=32,
            learning_rate=1e-12,
        ),
        network_settings=attrs.evolve(behavior.network_settings, hidden_units=32, deterministic=True),
    )
    options = attrs.evolve(
        options,
        behaviors={name: behavior},
        env_settings=attrs.evolve(options.env_settings, seed=1),
        checkpoint_settings=attrs.evolve(
            options.checkpoint_settings, results_dir=str(folder), run_id="pend", resume=resume
        ),
    )
    run = build_run(options, console=False)
    run.run()
    trainer = run.controller.trainers[name]
    stored = trainer.algorithm.replay.state()  # this session's rows, in the order taken
    (obs,), actions = stored["obs"], stored["continuous_actions"].numpy()[:, 0]
    mean = trainer.policy.act([obs.numpy()], None, np.arange(len(obs)), deterministic=True).continuous_actions
    return trainer.step, actions, mean[:, 0]


WARMUP = 150


def assert_uniform_then_policy(actions: np.ndarray, policy_actions: np.ndarray, uniform_rows: int) -> None:
    np.testing.assert_allclose(actions[uniform_rows:], policy_actions[uniform_rows:], atol=1e-5)
    uniform = actions[:uniform_rows]
    assert np.mean(np.abs(uniform - policy_actions[:uniform_rows]) > 1e-3) > 0.9
    if uniform_rows >= 100:
        assert uniform.min() < -0.9 and uniform.max() > 0.9  # the policy's own spread about 0.1 here
        assert np.median(np.abs(uniform)) == pytest.approx(0.5, abs=0.1)


def test_sac_acts_uniformly_for_its_buffer_init_steps_with_buffer_init_actions_uniform(tmp_path):
    """``buffer_init_actions: uniform`` (Stable-Baselines3's ``learning_starts``): the first
    ``buffer_init_steps`` transitions in the replay buffer hold actions drawn uniformly over
    Pendulum's bounds (the policy's [-1, 1]), whatever the policy would do, even with
    ``deterministic: true``; every later one is the policy's own (here its deterministic action,
    the learning rate too small to move it). A run resumed within the warm-up takes only what is
    left of it."""
    ended, actions, policy_actions = pendulum_warming_up(tmp_path, 2 * WARMUP)
    assert ended >= 2 * WARMUP and len(actions) == ended
    assert_uniform_then_policy(actions, policy_actions, WARMUP)

    begun, _, _ = pendulum_warming_up(tmp_path / "resumed", 100)  # its checkpoint's step
    ended, actions, policy_actions = pendulum_warming_up(tmp_path / "resumed", 2 * WARMUP, resume=True)
    assert 0 < begun < WARMUP and len(actions) == ended - begun  # the replay buffer was not saved
    assert_uniform_then_policy(actions, policy_actions, WARMUP - begun)


def shortened(config: Path, folder: Path, **replacements: str) -> Path:
    """``config`` with each ``key: value`` line replaced (``max_steps="2000"``), written in ``folder``."""
    lines = []
    for line in config.read_text().splitlines():
        key = line.strip().split(":")[0]
        if key in replacements:
            line = f"{line[: len(line) - len(line.lstrip())]}{key}: {replacements[key]}"
        lines.append(line)
    path = folder / config.name
    path.write_text("\n".join(lines) + "\n")
    return path


def run_cli(config: Path, folder: Path, *flags: str) -> str:
    command = [sys.executable, "-m", "orchestration.cli", str(config), "--run-id=r", "--seed=1", *flags]
    result = subprocess.run(command, cwd=folder, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    return output


@pytest.mark.slow  # a CLI run
def test_connect_four_players_are_two_teams_of_one_behavior_in_self_play(tmp_path):
    config = shortened(
        REPO / "config/gymnasium/ppo/ConnectFour.yaml",
        tmp_path,
        max_steps="2000",
        summary_freq="1000",
        buffer_size="512",
        save_steps="500",
        team_change="1000",
        swap_steps="500",
    )
    output = run_cli(config, tmp_path)
    assert "Connected new behavior player?team=0" in output and "Connected new behavior player?team=1" in output
    assert "player. Step: 2000." in output and "ELO:" in output
    assert (tmp_path / "results/r/player.onnx").exists()


@pytest.mark.slow  # a CLI run
def test_simple_spread_agents_train_as_one_poca_group(tmp_path):
    config = shortened(
        REPO / "config/gymnasium/poca/SimpleSpread.yaml",
        tmp_path,
        max_steps="1500",
        summary_freq="750",
        buffer_size="750",
        batch_size="250",
    )
    output = run_cli(config, tmp_path)
    assert "agent. Step: 1500." in output and "Mean Group Reward:" in output
    assert (tmp_path / "results/r/agent.onnx").exists()


@pytest.mark.parametrize(
    "path", sorted((REPO / "config/gymnasium").glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}"
)
def test_every_ready_configuration_names_its_environments_behaviors_and_passes_the_run_checks(path, tmp_path):
    from envs.gymnasium import check_gymnasium
    from envs.pettingzoo import check_pettingzoo

    options = load_run_options(path)
    env = options.env_settings
    assert env.env_path is not None
    kind, _, target = env.env_path.partition(":")
    if kind == "gymnasium":
        behaviors = {check_gymnasium(target, env.env_kwargs).behavior_name.split("?")[0]}
    else:
        behaviors = {b.behavior_name.split("?")[0] for b in check_pettingzoo(target, env.env_kwargs).behaviors}
    assert set(options.behaviors) == behaviors
    assert all(settings.trainer_type == path.parent.name for settings in options.behaviors.values())
    options = attrs.evolve(
        options, checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path))
    )
    check_run(options, registry=TrainerRegistry.with_plugins())
