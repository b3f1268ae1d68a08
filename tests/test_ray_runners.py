"""``--ray-address``: env runners as Ray actors on a simulated two-node cluster (Ray's own
``cluster_utils.Cluster``, all on this machine): the runner makes exactly the trajectories the env
manager makes, 3DBall learns across two nodes, a killed runner and a lost node are survived,
and a run without ``--ray-address`` never imports Ray."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import attrs
import numpy as np
import pytest

from envs.workers import EnvLaunch, InProcessPool
from orchestration.checks import check_run
from orchestration.env_manager import BehaviorRuntime, EnvManager
from orchestration.env_runner import EnvRunner
from orchestration.run import build_run
from processors import AgentManager
from stats import StatsHub, StatsWriter
from stats.tags import CUMULATIVE_REWARD, EPISODE_LENGTH
from tests.support.learning import RewardLog, config
from trainers.exceptions import ConfigError
from trainers.loop.registry import TrainerRegistry
from trainers.networks.policy import TorchPolicy
from trainers.settings import NetworkSettings, RunOptions, SACSettings, TrainerSettings

HORIZON = 16


def test_a_runner_makes_the_env_managers_trajectories_and_stats_exactly():
    """Same environment, same policy weights and sampling stream: the runner, acting where it
    is, publishes the trajectories (and episode stats, replayed) that the env manager would."""
    launch = EnvLaunch(env_path="builtin:Basic", seed=3, num_areas=3)
    hub = StatsHub()

    def create_runtime(behavior_id, spec):
        policy = TorchPolicy(spec, NetworkSettings(hidden_units=16), seed=11)
        manager = AgentManager(policy, behavior_id, hub.reporter("direct"), HORIZON, threaded=False)
        return BehaviorRuntime(manager, policy)

    manager = EnvManager(InProcessPool(launch), create_runtime)
    while manager.perf.env_steps_total() < 150:
        manager.advance()
    (behavior_id,) = manager.runtimes
    expected = manager.runtimes[behavior_id].manager.trajectory_queue.drain()

    runner = EnvRunner(launch, 0, 0, policy_seed=11)
    first = runner.start()
    assert first.fault is None and list(first.new_specs) == [behavior_id]
    blueprint = TorchPolicy(first.new_specs[behavior_id].to_spec(), NetworkSettings(hidden_units=16), seed=11)
    runner.add_behavior(behavior_id, blueprint.blueprint(), HORIZON)
    batches = [runner.sample(50, 60.0) for _ in range(3)]
    assert [b.env_steps for b in batches] == [50, 50, 50]
    got = [t for b in batches for t in b.trajectories[behavior_id]]
    assert len(got) == len(expected) > 10
    for ours, theirs in zip(got, expected, strict=True):
        for field in ("obs", "rewards", "discrete_actions", "discrete_log_probs", "done", "interrupted", "next_obs"):
            a, b = getattr(ours, field), getattr(theirs, field)
            if isinstance(a, (list, tuple)):
                for x, y in zip(a, b, strict=True):
                    np.testing.assert_array_equal(x, y, err_msg=field)
            else:
                np.testing.assert_array_equal(a, b, err_msg=field)
    replayed = hub.reporter("replayed")
    for b in batches:
        for call in b.stats[behavior_id]:
            replayed.add_stats(call.key, call.values, call.aggregation)
    direct = hub.reporter("direct")
    for tag in (CUMULATIVE_REWARD, EPISODE_LENGTH):
        assert replayed.get_stats_summaries(tag).count == direct.get_stats_summaries(tag).count > 0
        assert replayed.get_stats_summaries(tag).mean == pytest.approx(direct.get_stats_summaries(tag).mean)
    rewards = np.concatenate([r for b in batches for r in b.episode_rewards[behavior_id]])
    assert len(rewards) == direct.get_stats_summaries(CUMULATIVE_REWARD).count
    runner.close()


def test_closing_names_the_runners_that_never_returned_steps(monkeypatch, caplog):
    """The manager trains on whichever runner is ready, so a short run can end before a runner
    has started (CI, stop 49): closing says which runners never stepped."""
    import ray

    from orchestration import ray_env_manager

    class Actor:
        class close:  # noqa: N801 - as a Ray actor's method handle
            @staticmethod
            def remote() -> object:
                return object()

    manager = ray_env_manager.RayEnvManager(
        EnvLaunch(env_path="builtin:Basic", seed=1), 3, lambda *_: None, address="local", policy_seed=0
    )
    manager._started = True
    manager.runners = {
        0: ray_env_manager._Runner(Actor(), 0, None, 0.0, placed=True),
        1: ray_env_manager._Runner(Actor(), 2, None, 0.0),
        2: ray_env_manager._Runner(Actor(), 0, None, 0.0, placed=True),
    }
    monkeypatch.setattr(ray, "is_initialized", lambda: True)
    monkeypatch.setattr(ray, "wait", lambda refs, **_: (refs, []))
    monkeypatch.setattr(ray, "kill", lambda actor, no_restart: None)
    with caplog.at_level("WARNING"):
        manager.close()
    (record,) = caplog.records
    assert record.getMessage().startswith("Env runner[1] (generation 2) returned no steps before the run ended")
    assert not manager.runners


def test_a_runner_that_never_starts_is_a_setting_to_fix_named_with_its_timeout(monkeypatch):
    """A runner whose start does not come back within --timeout-wait and the start-up grace (a
    slow or busy node: over 50 s in a loaded suite here) ends the run before any training, saying
    how long it waited and what gives it longer; nothing is retried."""
    import ray

    from orchestration import ray_env_manager
    from trainers.exceptions import RunEnvironmentError

    now = [0.0]
    manager = ray_env_manager.RayEnvManager(
        EnvLaunch(env_path="builtin:Basic", seed=1, timeout_wait=20),
        1,
        lambda *_: None,
        address="local",
        policy_seed=0,
        clock=lambda: now[0],
    )
    manager.runners = {0: ray_env_manager._Runner(object(), 0, "start call", 0.0)}
    killed = []
    monkeypatch.setattr(ray, "wait", lambda refs, **_: ([], refs))
    monkeypatch.setattr(ray, "kill", lambda actor, no_restart: killed.append(actor))
    now[0] = 49.0
    manager._check_hung()  # within 20 + 30 s: still starting
    assert not killed
    now[0] = 51.0
    with pytest.raises(RunEnvironmentError) as error:
        manager._check_hung()
    assert str(error.value) == (
        "env runner 0 did not answer in 50 s (--timeout-wait 20 s and 30 s for a runner's start-up; "
        "a slow or busy node needs a longer --timeout-wait) (while starting worker 0; not retried)"
    )
    assert len(killed) == 1 and manager.restart_count == 0


def test_refusals_before_any_work(tmp_path):
    registry = TrainerRegistry.with_plugins()

    def options(**env):
        o = RunOptions()
        o = attrs.evolve(o, env_settings=attrs.evolve(o.env_settings, **env))
        return attrs.evolve(o, checkpoint_settings=attrs.evolve(o.checkpoint_settings, results_dir=str(tmp_path)))

    with pytest.raises(ConfigError, match="--record-demo with --ray-address"):
        check_run(options(env_path="builtin:3DBall", ray_address="local"), registry=registry, record_demo=tmp_path)
    uniform = SACSettings(buffer_init_steps=1000, buffer_init_actions="uniform")
    warming = attrs.evolve(
        options(env_path="builtin:3DBall", ray_address="local"),
        behaviors={"3DBall": TrainerSettings(trainer_type="sac", hyperparameters=uniform)},
    )
    with pytest.raises(ConfigError) as refused:
        check_run(warming, registry=registry)
    assert str(refused.value) == (
        "behaviors.3DBall.hyperparameters.buffer_init_actions: uniform with --ray-address: each env runner acts "
        "with its own copy of the policy, which does not count the run's steps; leave the key out (the policy "
        "acts from the start, as in ML-Agents) or train without --ray-address"
    )
    from trainers.settings.validate import check_run_options

    report = check_run_options(options(ray_address="auto"))
    assert any("the Unity Editor cannot be one" in e for e in report.errors), report.errors
    report = check_run_options(options(env_path="builtin:3DBall", ray_address=" "))
    assert any("env_settings.ray_address: must not be empty" in e for e in report.errors), report.errors
    report = check_run_options(options(env_path="external:9900", ray_address="auto"))
    assert any("the policy server (external:9900) runs beside the trainer" in e for e in report.errors), report.errors
    assert not list(tmp_path.iterdir())


def test_a_run_without_ray_address_never_imports_ray(tmp_path):
    script = f"""
import sys, attrs
from orchestration.run import build_run
from tests.support.learning import config
from trainers.settings import RunOptions
o = RunOptions(default_settings=config("Basic", max_steps=200, summary_freq=100))
o = attrs.evolve(o, env_settings=attrs.evolve(o.env_settings, env_path="builtin:Basic", seed=1))
o = attrs.evolve(o, checkpoint_settings=attrs.evolve(o.checkpoint_settings, results_dir={str(tmp_path)!r}))
build_run(o, console=False).run()
assert "ray" not in sys.modules, "ray was imported"
print("no ray")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "no ray" in result.stdout, result.stderr[-2000:]


# ---------------------------------------------------------------- on a simulated cluster


HEAD_CPUS, WORKER_CPUS = 2, 1
# A runner's start (a Ray worker process importing torch, then its environment) takes 3-20 s on
# this machine with two other busy processes, and over 50 s in the whole suite beside two more
# (2026-12-07): the runs give it ML-Agents' default timeout_wait (60 s, and the env manager's
# START_GRACE_S beyond it), and the tests wait as long for every runner to be up.
TIMEOUT_WAIT_S = 60
START_S = 120.0


@pytest.fixture(scope="module")
def two_nodes():
    """A head (2 CPUs: room to re-place a lost node's runner) and a second node (1 CPU) on this
    machine (Ray's own simulated cluster, on this host's address), with small object stores."""
    ray = pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    common = {"object_store_memory": 80 * 1024**2}
    # a lost node is declared dead within about a second (Ray's default takes tens)
    fast_health = {"health_check_period_ms": 200, "health_check_failure_threshold": 3}
    head = {"num_cpus": HEAD_CPUS, "include_dashboard": False, "_system_config": fast_health, **common}
    cluster = Cluster(initialize_head=True, head_node_args=head)
    worker = cluster.add_node(num_cpus=WORKER_CPUS, **common)
    ray.init(address=cluster.address, log_to_driver=False)
    yield cluster, worker
    ray.shutdown()
    cluster.shutdown()


def all_cpus_free(cpus: float = HEAD_CPUS + WORKER_CPUS, timeout: float = 60.0) -> None:
    """Wait until at least ``cpus`` CPUs are known to the cluster (a node's resources reach the
    head a moment after it joins: on two busy cores, SPREAD once placed both runners on the head)
    and the actors of earlier runs have given theirs back (a kill frees them asynchronously), so
    that SPREAD has both nodes to place runners on. A test that runs once the worker node is
    removed (test_a_lost_node_...) asks for the head's alone."""
    import ray

    deadline = time.monotonic() + timeout
    while True:
        known = ray.cluster_resources().get("CPU", 0.0)
        if known >= cpus and ray.available_resources().get("CPU", 0.0) == known:
            return
        assert time.monotonic() < deadline, (ray.available_resources(), ray.cluster_resources())
        time.sleep(0.1)


def runners_started(run, timeout: float = START_S) -> None:
    """Start ``run``'s runners and wait until each has its environment up. The manager trains on
    whichever runner is ready first: on two busy cores one runner once took the whole of a short
    run before the other had started (CI, stop 49), so a test that asserts every runner steps
    waits for all of them first. Runners that are not up in time are ended with the run's env
    manager, so that their CPUs are the cluster's again for the tests after this one."""
    import ray

    run.env_manager.start()
    starts = [runner.call for runner in run.env_manager.runners.values()]
    ready, _ = ray.wait(starts, num_returns=len(starts), timeout=timeout)
    if len(ready) < len(starts):
        run.env_manager.close()
    assert len(ready) == len(starts), f"{len(starts) - len(ready)} runner(s) not up after {timeout} s"


class NodeLog(StatsWriter):
    """Calls ``act(step)`` once, at the first summary at or past ``at``."""

    def __init__(self, at: int, act) -> None:
        self.at, self.act, self.done = at, act, False

    def write_stats(self, category, values, step):
        if not self.done and step >= self.at:
            self.done = True
            threading.Thread(target=self.act, daemon=True).start()


def ray_options(tmp_path, address: str, *, max_steps: int, run_id: str) -> RunOptions:
    settings = config("3DBall", max_steps=max_steps, summary_freq=4_000, threaded=True)
    settings = attrs.evolve(settings, hyperparameters=attrs.evolve(settings.hyperparameters, buffer_size=4_000))
    o = RunOptions(behaviors={"3DBall": settings})
    o = attrs.evolve(
        o,
        env_settings=attrs.evolve(
            o.env_settings,
            env_path="builtin:3DBall",
            seed=1,
            num_envs=2,
            ray_address=address,
            timeout_wait=TIMEOUT_WAIT_S,
        ),
    )
    return attrs.evolve(
        o, checkpoint_settings=attrs.evolve(o.checkpoint_settings, results_dir=str(tmp_path), run_id=run_id)
    )


@pytest.mark.slow
def test_3dball_learns_on_two_nodes_and_survives_a_killed_runner(tmp_path, two_nodes):
    import ray

    cluster, _ = two_nodes
    log = RewardLog()
    holder = {}

    def kill_runner_0() -> None:
        ray.kill(holder["run"].env_manager.runners[0].actor, no_restart=True)

    killer = NodeLog(12_000, kill_runner_0)
    all_cpus_free()
    run = build_run(
        ray_options(tmp_path, cluster.address, max_steps=48_000, run_id="two"), writers=[log, killer], console=False
    )
    holder["run"] = run
    nodes = set()

    def where() -> None:  # which nodes the first runners landed on (both: they start one by one)
        while len(run.env_manager.runners) < 2:
            time.sleep(0.05)
        nodes.update(ray.get([r.node for r in run.env_manager.runners.values()]))

    watcher = threading.Thread(target=where, daemon=True)
    watcher.start()
    outcome = run.run()
    watcher.join(5)
    assert len(nodes) == 2  # spread over both nodes
    assert killer.done and run.env_manager.restart_count == 1
    assert outcome.steps["3DBall"] >= 48_000 and not outcome.interrupted
    assert (tmp_path / "two" / "3DBall.onnx").exists()
    assert log.rewards[-1] >= 3 * log.rewards[0] and log.rewards[-1] >= 4.0, log.curve  # random play: about 1.2


@pytest.mark.slow
def test_curriculum_lessons_and_resets_reach_the_runner(tmp_path, two_nodes, monkeypatch):
    """The curriculum run of test_curriculum_run on a Ray runner: each lesson's gravity reaches
    the runner's episodes (its environment stats come back), the lesson that asks for a reset
    resets it. One runner: gravity is a MOST_RECENT stat, taken from worker 0 only, and in a run
    this short a second runner may do all the work before worker 0's actor is up. Small
    samples: the summaries every 250 steps (and the short middle lesson) would otherwise fall
    between two batches."""
    from tests.test_curriculum_run import GRAVITY, Watch, curriculum_options

    monkeypatch.setattr("orchestration.ray_env_manager.STEPS_PER_SAMPLE", 4)
    cluster, _ = two_nodes
    options = curriculum_options(tmp_path, 4_000, num_envs=1)
    options = attrs.evolve(options, env_settings=attrs.evolve(options.env_settings, ray_address=cluster.address))
    watch = Watch()
    all_cpus_free()
    run = build_run(options, writers=[watch], console=False)
    run.run()
    lessons = [lesson for _, lesson in watch.lessons]
    assert lessons[0] == 0 and lessons[-1] == 2 and lessons == sorted(lessons), watch.lessons
    seen = list(dict.fromkeys(g for _, g in watch.gravities))
    assert seen[:2] == [GRAVITY["earth"], GRAVITY["moon"]] and set(seen) <= set(GRAVITY.values()), watch.gravities
    assert run.env_manager.reset_count >= 1


@pytest.mark.slow
def test_a_runner_whose_unity_build_crashes_is_restarted(tmp_path, two_nodes):
    """A stand-in Unity build (real gRPC protocol) opened by a runner crashes once: that runner
    is restarted as a new actor with a new build, and the run finishes."""
    from tests.test_e2e_standin import BALANCE, free_port_pair, setup
    from trainers.settings import load_run_options

    cluster, _ = two_nodes
    config, launcher = setup(tmp_path, crash_once_after=30)
    o = load_run_options(str(config))
    o = attrs.evolve(
        o,
        env_settings=attrs.evolve(
            o.env_settings,
            env_path=launcher,
            seed=2,
            num_envs=2,
            base_port=free_port_pair(),
            ray_address=cluster.address,
            timeout_wait=TIMEOUT_WAIT_S,
        ),
        checkpoint_settings=attrs.evolve(o.checkpoint_settings, results_dir=str(tmp_path), run_id="crash"),
    )
    all_cpus_free()
    run = build_run(o, console=False)
    runners_started(run)  # else the other runner can take the whole run before the crashing build steps 30 times
    outcome = run.run()
    assert run.env_manager.restart_count == 1
    assert outcome.steps["Balance"] >= BALANCE["behaviors"]["Balance"]["max_steps"]
    assert (tmp_path / "crash" / "Balance.onnx").exists()


@pytest.mark.slow
def test_a_lost_node_is_reported_and_its_runner_placed_again(tmp_path, two_nodes, caplog):
    import ray

    cluster, worker = two_nodes
    removed = threading.Event()
    holder = {}

    def remove_node() -> None:
        runners = holder["run"].env_manager.runners.values()
        holder["nodes"] = ray.get([r.node for r in runners])
        cluster.remove_node(worker, allow_graceful=False)
        removed.set()

    trigger = NodeLog(4_000, remove_node)
    all_cpus_free()
    run = build_run(
        ray_options(tmp_path, cluster.address, max_steps=40_000, run_id="lost"), writers=[trigger], console=False
    )
    holder["run"] = run
    with caplog.at_level("WARNING"):
        outcome = run.run()
    assert removed.is_set() and worker.node_id in holder["nodes"], holder
    assert run.env_manager.restart_count >= 1
    assert outcome.steps["3DBall"] >= 40_000
    assert "was lost from the cluster" in caplog.text and "Restarting env runner[" in caplog.text


@pytest.mark.slow
def test_a_gymnasium_environment_trains_on_ray_runners(tmp_path, two_nodes, caplog):
    """gymnasium:CartPole-v1 with config/gymnasium/ppo/CartPole.yaml on two Ray runners, each
    stepping its 8 copies as one behavior: whole episodes reach the stats, the run ends at
    max_steps with its model."""
    from trainers.settings import load_run_options

    cluster, _ = two_nodes
    options = load_run_options("config/gymnasium/ppo/CartPole.yaml")
    # 10k steps: at 3k one runner once took the whole run while the other's first sample was on
    # its way, though both had started (the suite, two busy cores)
    settings = attrs.evolve(options.behavior_settings("CartPole-v1"), max_steps=10_000, summary_freq=2_000)
    options = attrs.evolve(
        options,
        behaviors={"CartPole-v1": settings},
        env_settings=attrs.evolve(
            options.env_settings, seed=1, num_envs=2, ray_address=cluster.address, timeout_wait=TIMEOUT_WAIT_S
        ),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="gym"),
    )
    log = RewardLog()
    all_cpus_free(cpus=HEAD_CPUS)  # two runners fit on the head, also once the worker node is gone
    run = build_run(options, writers=[log], console=False)
    with caplog.at_level("INFO"):
        runners_started(run)
        outcome = run.run()
    assert "Env runner[0] (generation 0) steps" in caplog.text and "Env runner[1] (generation 0) steps" in caplog.text
    assert run.env_manager.restart_count == 0
    assert outcome.steps["CartPole-v1"] >= 10_000 and not outcome.interrupted
    assert (tmp_path / "gym" / "CartPole-v1.onnx").exists()
    assert len(log.curve) == 5 and all(8 <= reward <= 500 for _, reward in log.curve), log.curve  # whole episodes
