"""One environment's spaces mapped both ways, and the specs ``check_gymnasium`` reports."""

from __future__ import annotations

import attrs
import gymnasium
from mlagents_envs.base_env import BehaviorSpec

from envs.gymnasium.actions import ActionLayout, map_action_space
from envs.gymnasium.making import behavior_name_for
from envs.gymnasium.observations import MASK_KEY, ObservationLayout, map_observation_space
from envs.gymnasium.specs import GymnasiumSpecs


@attrs.frozen(eq=False)
class SpaceMapping:
    """How to read observations and masks from, and write actions to, copies of one environment."""

    observations: ObservationLayout
    actions: ActionLayout
    specs: GymnasiumSpecs


def map_spaces(env_id: str, env: gymnasium.Env) -> SpaceMapping:
    """Map ``env``'s observation and action spaces (GymnasiumEnvError naming the env and the
    space it refuses); nothing is reset or stepped."""
    observations = map_observation_space(env_id, env.observation_space)
    actions = map_action_space(env_id, env.action_space)
    mask_source = None
    if actions.spec.discrete_size > 0:
        mask_source = f"observation[{MASK_KEY!r}]" if observations.has_mask else f"info[{MASK_KEY!r}] when present"
    spec = BehaviorSpec([leaf.spec for leaf in observations.leaves], actions.spec)
    specs = GymnasiumSpecs(
        env_id=env_id,
        behavior_name=behavior_name_for(env_id),
        behavior_spec=spec,
        observations=tuple(leaf.source for leaf in observations.leaves),
        actions=actions.sources,
        mask_source=mask_source,
    )
    return SpaceMapping(observations, actions, specs)
