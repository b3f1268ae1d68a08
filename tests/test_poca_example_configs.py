"""ML-Agents' POCA example configs (``poca/*.yaml``) train unchanged, through the run wiring, on
the built-in Simple with groups standing in for their Unity scenes: each behavior's config as
written (network size, batch, buffer, time horizon...), only ``max_steps`` and the summary and
checkpoint intervals cut so that one update runs, which is what the test checks (the POCA
losses are written and the ONNX model exported).

The stand-ins have the group size and observation width of the Unity scene; their actions are
Simple's (one discrete branch of 2), since only the trainer's plumbing is under test here:
learning is ``tests/test_poca_learning.py``'s business. The two self-play configs (SoccerTwos:
two teams of one behavior; StrikersVsGoalie: two behaviors, one per team) run on Simple with two
teams of groups, their behaviors renamed onto Simple's (``Simple``, ``SimpleOpp``), with the
buffer cut to 2048 and the batch to 512 (their 20480 / 2048 with 512 hidden units would take
minutes for one update); the self-play section is as written, so the first team learns and the
other plays its snapshot, until the learning team changes after that update.
"""

from __future__ import annotations

import attrs
import pytest

from envs.builtin import make_env
from orchestration.run import build_run
from stats import StatsWriter
from tests.support.paths import MLAGENTS_CONFIGS
from trainers.settings import RunOptions, TrainerSettings, load_run_options

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


# config -> (Simple's options, the config's behavior names in Simple's)
SELF_PLAY = {
    "SoccerTwos": (
        {"num_teams": 2, "num_agents": 2, "vec_obs_size": 336, "continuous_size": 0, "discrete_branches": 1},
        {"SoccerTwos": "Simple"},
    ),
    "StrikersVsGoalie": (
        {
            "num_teams": 2,
            "asymmetric": 1,
            "num_agents": 2,
            "vec_obs_size": 294,
            "continuous_size": 0,
            "discrete_branches": 1,
        },
        {"Striker": "Simple", "Goalie": "SimpleOpp"},
    ),
}


def cut_for_one_update(settings: TrainerSettings) -> TrainerSettings:
    """The buffer and batch cut, and the learning team changed once one update is done (an
    asymmetric run ends only when every behavior reached max_steps, and only one team learns at
    a time: at the configured 200k the other behavior would wait that long)."""
    hp = attrs.evolve(settings.hyperparameters, buffer_size=2048, batch_size=512)
    steps = hp.buffer_size + 2 * settings.time_horizon
    assert settings.self_play is not None
    self_play = attrs.evolve(settings.self_play, team_change=steps)
    return attrs.evolve(
        settings,
        hyperparameters=hp,
        self_play=self_play,
        max_steps=steps,
        summary_freq=steps,
        checkpoint_interval=steps,
    )


@pytest.mark.parametrize("config", sorted(SELF_PLAY))
def test_self_play_poca_example_config_trains(config, tmp_path):
    env_options, names = SELF_PLAY[config]
    options = load_run_options(MLAGENTS_CONFIGS / f"poca/{config}.yaml")
    behaviors = {names[name]: cut_for_one_update(settings) for name, settings in options.behaviors.items()}
    env = make_env("Simple", seed=1, num_areas=4, **env_options)
    options = attrs.evolve(
        options,
        behaviors=behaviors,
        env_settings=attrs.evolve(options.env_settings, env_path=None, seed=1),
        checkpoint_settings=attrs.evolve(options.checkpoint_settings, results_dir=str(tmp_path), run_id="example"),
    )
    tags = Tags()
    build_run(options, env_factory=lambda worker_id, seed: env, writers=[tags], console=False).run()
    assert {"Losses/Baseline Loss", "Self-play/ELO"} <= tags.seen
    for name in behaviors:
        assert (tmp_path / "example" / f"{name}.onnx").exists()
