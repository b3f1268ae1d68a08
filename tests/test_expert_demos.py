"""The imitation tests' demonstrations (:mod:`tests.support.expert_demos`) hold what they claim:
Simple's expert acts toward the observed goal and reaches it, the anti-expert the opposite, and
random-policy demos of the example behaviors' environments load against their specs."""

from __future__ import annotations

import numpy as np
import pytest

from envs.builtin import make_env
from tests.support.expert_demos import SIMPLE_DEMO_STEPS, random_policy, record_demo, record_simple_demo
from tests.support.spec_envs import SpecEnv
from trainers.files.demonstrations import load_demonstrations


@pytest.mark.parametrize("anti", [False, True], ids=["expert", "anti-expert"])
@pytest.mark.parametrize(
    "options",
    [
        {"continuous_size": 1, "discrete_branches": 0},
        {"continuous_size": 0, "discrete_branches": 1},
        {"continuous_size": 1, "discrete_branches": 0, "num_visual": 1, "num_vector": 0},
    ],
    ids=["continuous", "discrete", "visual"],
)
def test_simple_demos_act_toward_or_away_from_the_goal(tmp_path, options, anti):
    path = record_simple_demo(tmp_path / "simple.demo", anti=anti, **options)
    spec = make_env("Simple", seed=0, **options).behavior_specs["Simple?team=0"]
    demo = load_demonstrations(path, spec)
    assert demo.number_steps == SIMPLE_DEMO_STEPS and len(demo) == SIMPLE_DEMO_STEPS - 1
    goal = demo.obs[0].reshape(len(demo), -1)[:, 0]
    assert set(np.unique(goal)) == {-1.0, 1.0}  # both goals shown
    toward = -goal if anti else goal
    # A done row's next step starts a new episode; the rows before it are decisions, except
    # those that end an episode (recorded with no action, as Unity does).
    ends = np.flatnonzero(demo.done) + 1
    acting = np.setdiff1d(np.arange(len(demo)), ends)
    if options["continuous_size"]:
        np.testing.assert_array_equal(demo.continuous_actions[acting, 0], toward[acting])
    else:
        np.testing.assert_array_equal(demo.discrete_actions[acting, 0], (toward[acting] > 0).astype(np.int32))
    # Five moves of 0.2 reach an end: every episode scores +-(1.06 - 0.04) = +-1.02.
    finished = demo.rewards[demo.done]
    np.testing.assert_allclose(finished, -1.06 if anti else 1.06, rtol=1e-6)


@pytest.mark.parametrize("behavior", ["Hallway", "Pyramids", "Crawler", "PushBlock"])
def test_random_demos_match_the_behaviors_spec(tmp_path, behavior):
    def make(seed: int):
        return make_env(behavior, seed=seed) if behavior in ("Hallway", "Pyramids") else SpecEnv(behavior, seed=seed)

    path = record_demo(make(7), tmp_path / f"{behavior}.demo", steps=120, policy=random_policy)
    demo = load_demonstrations(path, make(1).behavior_specs[f"{behavior}?team=0"])
    assert demo.behavior_name == behavior and len(demo) == 119
    if demo.action_masks.shape[1]:  # every recorded choice was allowed where it was taken
        taken = demo.action_masks[np.arange(len(demo)), demo.discrete_actions[:, 0]]
        ends = np.flatnonzero(demo.done) + 1
        assert taken[np.setdiff1d(np.arange(len(demo)), ends)].all()
