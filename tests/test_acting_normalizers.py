"""The acting copies of a policy act with the trainer's current observation normalisers.

ML-Agents acts with its trainer's own policy: its normalisers move with every trajectory the
trainer processes, while its weights change only with an update. Here the env manager acts with
a copy, so the trainer publishes the normalisers' statistics after the trajectories it takes,
between the full weights of its updates (``trainers.networks.policy.NormalizerStats``).
"""

from __future__ import annotations

import tempfile

import attrs
import numpy as np
import pytest
import torch

from envs.builtin import make_env
from envs.workers import EnvLaunch
from orchestration.env_runner import EnvRunner
from orchestration.run import Run, build_run
from tests.steps import behavior_spec
from tests.support.learning import PPO_TEST_CONFIG
from trainers.networks.policy import NormalizerStats, TorchPolicy, newest_updates
from trainers.settings import NetworkSettings, PPOSettings, RunOptions

SPEC = behavior_spec(obs_shapes=((3,), (20, 20, 1)), continuous=2)  # the image has no normaliser


def policy(normalize: bool = True, seed: int = 0) -> TorchPolicy:
    return TorchPolicy(SPEC, NetworkSettings(hidden_units=8, num_layers=1, normalize=normalize), seed=seed)


def test_only_the_newest_weights_and_the_statistics_after_them_are_applied():
    w1, w2 = {"w": torch.tensor(1)}, {"w": torch.tensor(2)}
    s1, s2, s3 = (NormalizerStats({"n": torch.tensor(n)}) for n in (1, 2, 3))
    assert newest_updates([w1, s1, w2, s2, s3]) == (w2, s3)
    assert newest_updates([s1, w1]) == (w1, None)  # the weights carry their own normalisers
    assert newest_updates([s1, s2]) == (None, s2)
    assert newest_updates([]) == (None, None)


def test_statistics_move_a_copy_s_normalisers_and_nothing_else():
    trainer, acting = policy(seed=1), policy(seed=2)
    trainer.update_normalization(
        [np.arange(30, dtype=np.float32).reshape(10, 3), np.zeros((10, 20, 20, 1), np.float32)]
    )
    before = {k: v.clone() for k, v in acting.actor.state_dict().items()}
    stats = trainer.normalizer_stats()
    assert stats is not None and set(stats.state) == {
        "encoder.inputs.0.normalizer.mean",
        "encoder.inputs.0.normalizer.var",
        "encoder.inputs.0.normalizer.count",
    }
    acting.load_normalizer_stats(stats)
    after = acting.actor.state_dict()
    for key, value in after.items():
        expected = trainer.actor.state_dict()[key] if key in stats.state else before[key]
        torch.testing.assert_close(value, expected, rtol=0, atol=0, msg=key)
    obs = [np.full((1, 3), 7.0, np.float32), np.zeros((1, 20, 20, 1), np.float32)]
    normalizer = acting.actor.encoder.inputs[0].normalizer
    torch.testing.assert_close(
        normalizer(torch.as_tensor(obs[0])), trainer.actor.encoder.inputs[0].normalizer(torch.as_tensor(obs[0]))
    )
    stats.state["encoder.inputs.0.normalizer.count"].fill_(0)  # a copy: the trainer's own is untouched
    assert float(trainer.actor.encoder.inputs[0].normalizer.count) == 10


def test_no_statistics_without_normalisation_and_foreign_ones_are_refused():
    assert policy(normalize=False).normalizer_stats() is None
    stats = policy().normalizer_stats()
    assert stats is not None
    with pytest.raises(KeyError, match="encoder.inputs.7.normalizer.mean"):
        policy().load_normalizer_stats(NormalizerStats({**stats.state, "encoder.inputs.7.normalizer.mean": 0}))
    partial = {k: v for k, v in stats.state.items() if not k.endswith(".count")}
    with pytest.raises(KeyError, match="count"):
        policy().load_normalizer_stats(NormalizerStats(partial))


class NormalizerCheck:
    """At each step of built-in 3DBall, the normalisers the env manager acted with against the
    trainer's (``run`` set before training)."""

    def __init__(self) -> None:
        self.env = make_env("3DBall", seed=1)
        self._step = self.env.step
        self.env.step = self.step  # type: ignore[method-assign]
        self.run: Run | None = None
        self.counts: list[float] = []
        self.weights_changed = False

    def step(self) -> None:
        assert self.run is not None
        runtimes = self.run.env_manager.runtimes  # type: ignore[attr-defined]
        if runtimes:
            (runtime,) = runtimes.values()
            trainer = self.run.controller.trainers["3DBall"]
            acting, learning = runtime.policy.normalizer_stats(), trainer.policy.normalizer_stats()
            for key, value in learning.state.items():
                torch.testing.assert_close(acting.state[key], value, rtol=0, atol=0, msg=key)
            self.counts.append(float(learning.state["encoder.inputs.0.normalizer.count"]))
            self.weights_changed |= runtime.weights_version > 1
        self._step()


def test_the_env_manager_acts_with_the_trainer_s_normalisers_after_every_trajectory():
    """Unthreaded, as ML-Agents' default: the env steps only after the trainer took what was
    queued, so the acting normalisers equal the trainer's at every step, long before the first
    update (buffer 1200, 12 agents, trajectories of 20 steps)."""
    settings = attrs.evolve(
        PPO_TEST_CONFIG,
        hyperparameters=PPOSettings(batch_size=64, buffer_size=1200),
        network_settings=NetworkSettings(num_layers=1, hidden_units=16, normalize=True),
        time_horizon=20,
        max_steps=1000,
    )
    check = NormalizerCheck()
    with tempfile.TemporaryDirectory() as results:
        options = RunOptions(default_settings=settings)
        options = attrs.evolve(
            options,
            env_settings=attrs.evolve(options.env_settings, seed=1),
            checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=results, run_id="n"),
        )
        run = build_run(options, env_factory=lambda worker_id, seed: check.env, console=False)
        check.run = run
        run.run()
    assert not check.weights_changed  # no update within the run: only the normalisers moved
    assert check.counts[0] == 0 and check.counts[-1] >= 12 * 20 * 3
    assert len(set(check.counts)) > 3  # they moved again and again, trajectory after trajectory


def test_a_ray_env_runner_acts_with_the_statistics_it_is_sent():
    """Ray env runners are sent the statistics the trainer publishes between its weights
    (``RayEnvManager`` puts them to every runner before its next sample); the runner (here
    driven without Ray) then acts with them, its weights unchanged."""
    runner = EnvRunner(EnvLaunch(env_path="builtin:3DBall", seed=1), 0, 0, policy_seed=5)
    try:
        ((behavior_id, record),) = runner.start().new_specs.items()
        settings = NetworkSettings(hidden_units=8, num_layers=1, normalize=True)
        trainer = TorchPolicy(record.to_spec(), settings, seed=1)
        runner.add_behavior(behavior_id, trainer.blueprint(), 16)
        acting = runner._behaviors[behavior_id].policy
        weights = {k: v.clone() for k, v in acting.get_weights().items()}
        trainer.update_normalization([np.random.default_rng(0).normal(3.0, 2.0, (50, 8)).astype(np.float32)])
        stats = trainer.normalizer_stats()
        assert stats is not None
        runner.set_normalizer_stats(behavior_id, stats)
        for key, value in acting.get_weights().items():
            expected = stats.state[key] if key in stats.state else weights[key]
            torch.testing.assert_close(value, expected, rtol=0, atol=0, msg=key)
        assert runner.sample(20, 10.0).fault is None  # and steps on with them
    finally:
        runner.close()
