"""ML-Agents' POCA example configs (``poca/*.yaml``) train unchanged, through the run wiring, on
the built-in Simple with groups standing in for their Unity scenes: each behavior's config as
written (network size, batch, buffer, time horizon...), only ``max_steps`` and the summary and
checkpoint intervals cut so that one update runs, which is what the test checks (the POCA
losses are written and the ONNX model exported).

The stand-ins have the group size and observation width of the Unity scene; their actions are
Simple's (one discrete branch of 2), since only the trainer's plumbing is under test here:
learning is ``tests/test_poca_learning.py``'s business.
"""

from __future__ import annotations

import attrs
import pytest

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import RunOptions, load_run_options

pytestmark = pytest.mark.slow  # trains policies

# behavior -> Simple's options: group size (agents per group in the Unity scene) and a vector
# observation of the Unity agent's width
STAND_INS = {
    "DungeonEscape": {"num_agents": 3, "vec_obs_size": 60, "continuous_size": 0, "discrete_branches": 1},
    "PushBlockCollab": {"num_agents": 3, "vec_obs_size": 70, "continuous_size": 0, "discrete_branches": 1},
}


class Tags(StatsWriter):
    def __init__(self) -> None:
        self.seen: set[str] = set()

    def write_stats(self, category, values, step):
        self.seen |= set(values)


@pytest.mark.parametrize("behavior", sorted(STAND_INS))
def test_poca_example_config_trains(behavior, tmp_path):
    settings = load_run_options(MLAGENTS_CONFIGS / f"poca/{behavior}.yaml").behaviors[behavior]
    steps = settings.hyperparameters.buffer_size + 2 * settings.time_horizon  # one update
    settings = attrs.evolve(settings, max_steps=steps, summary_freq=steps, checkpoint_interval=steps)
    env = make_env("Simple", seed=1, num_areas=4, **STAND_INS[behavior])
    options = RunOptions(default_settings=settings)
    options = attrs.evolve(
        options,
        env_settings=attrs.evolve(options.env_settings, seed=1),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="example"),
    )
    tags = Tags()
    build_run(options, env_factory=lambda worker_id, seed: env, writers=[tags], console=False).run()
    assert {"Losses/Baseline Loss", "Losses/Policy Loss", "Environment/Group Cumulative Reward"} <= tags.seen
    assert (tmp_path / "example" / "Simple.onnx").exists()
