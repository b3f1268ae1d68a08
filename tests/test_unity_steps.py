"""``envs.unity.steps.decode_vector_steps`` gives what mlagents_envs 0.28's ``steps_from_proto``
gives, array for array (values, dtypes, shapes, masks, group ids), and refuses what it refuses
with its messages."""

from __future__ import annotations

import numpy as np
import pytest

import envs.unity  # noqa: F401  (protocol modules under this protobuf)
from envs.unity.steps import decode_vector_steps

# isort: split
from mlagents_envs.base_env import ActionSpec, BehaviorSpec, DimensionProperty, ObservationSpec, ObservationType
from mlagents_envs.communicator_objects.agent_info_pb2 import AgentInfoProto
from mlagents_envs.communicator_objects.observation_pb2 import ObservationProto
from mlagents_envs.rpc_utils import steps_from_proto

VECTOR = ObservationSpec((5,), (DimensionProperty.NONE,), ObservationType.DEFAULT, "vector")
ENTITIES = ObservationSpec(
    (3, 4), (DimensionProperty.VARIABLE_SIZE, DimensionProperty.NONE), ObservationType.DEFAULT, "entities"
)
GOAL = ObservationSpec((2,), (DimensionProperty.NONE,), ObservationType.GOAL_SIGNAL, "goal")


def agent(agent_id: int, obs: list[list[float]], *, done=False, max_step=False, mask=(), group=0, reward=0.5):
    observations = []
    for values in obs:
        proto = ObservationProto(shape=[len(values)], observation_type=0)
        proto.float_data.data.extend(values)
        observations.append(proto)
    return AgentInfoProto(
        id=agent_id,
        reward=reward,
        done=done,
        max_step_reached=max_step,
        observations=observations,
        action_mask=list(mask),
        group_id=group,
        group_reward=0.25 * group,
    )


def scene(rng: np.random.Generator, specs, branches=(), agents: int = 9):
    """Agents deciding and ending (interrupted or not), in groups, with masks of the right
    width, the wrong width and none."""
    width = sum(branches)
    infos = []
    for i in range(agents):
        obs = [rng.normal(size=int(np.prod(s.shape))).astype(np.float32).tolist() for s in specs]
        mask = [] if i % 4 == 3 else (rng.random(width) < 0.4).tolist() if i % 4 else [True] * (width + 1)
        infos.append(
            agent(100 + i, obs, done=i % 3 == 2, max_step=i % 6 == 2, mask=mask, group=i % 2, reward=float(i) - 3)
        )
    return infos


def assert_same(got, want) -> None:
    for kind, ours, theirs in (("decision", got[0], want[0]), ("terminal", got[1], want[1])):
        assert len(ours.obs) == len(theirs.obs)
        for a, b in zip(ours.obs, theirs.obs, strict=True):
            assert a.dtype == b.dtype and a.shape == b.shape, kind
            np.testing.assert_array_equal(a, b)
        for field in ("reward", "agent_id", "group_reward"):
            a, b = getattr(ours, field), getattr(theirs, field)
            assert a.dtype == b.dtype, (kind, field)
            np.testing.assert_array_equal(a, b)
        assert list(ours.group_id) == list(theirs.group_id)
    np.testing.assert_array_equal(got[1].interrupted, want[1].interrupted)
    assert got[1].interrupted.dtype == want[1].interrupted.dtype
    if want[0].action_mask is None:
        assert got[0].action_mask is None
    else:
        assert len(got[0].action_mask) == len(want[0].action_mask)
        for a, b in zip(got[0].action_mask, want[0].action_mask, strict=True):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize(
    ("specs", "branches"),
    [
        ([VECTOR], ()),
        ([VECTOR, GOAL], (3,)),
        ([VECTOR, ENTITIES], (2, 3, 1)),
    ],
    ids=["vector-continuous", "goal-one-branch", "entities-three-branches"],
)
@pytest.mark.parametrize("agents", [0, 1, 9])
def test_the_steps_are_steps_from_proto_s(specs, branches, agents):
    rng = np.random.default_rng(agents)
    spec = BehaviorSpec(specs, ActionSpec(2, branches))
    infos = scene(rng, specs, branches, agents)
    assert_same(decode_vector_steps(infos, spec), steps_from_proto(infos, spec))


def test_only_ending_agents_have_no_decision_mask():
    spec = BehaviorSpec([VECTOR], ActionSpec(0, (2,)))
    infos = [agent(1, [[0.0] * 5], done=True, mask=[True, False])]
    ours = decode_vector_steps(infos, spec)
    assert ours[0].action_mask is None and len(ours[1]) == 1
    assert_same(ours, steps_from_proto(infos, spec))


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("obs", float("nan"), "The observations provided had NaN values."),
        ("obs", float("inf"), "The observations provided had Infinite values."),
        ("obs", 3e38, "The observations provided had Infinite values."),  # the float32 sum overflows
        ("reward", float("nan"), "The rewards provided had NaN values."),
        ("reward", float("-inf"), "The rewards provided had Infinite values."),
    ],
)
def test_nan_and_inf_are_refused_as_steps_from_proto_refuses_them(where, value, message):
    spec = BehaviorSpec([VECTOR], ActionSpec(1, ()))
    row = [0.0] * 5
    if where == "obs":
        row[0] = value
        row[1] = value if value == 3e38 else 0.0  # two finite values whose sum is not
    infos = [agent(1, [row], reward=value if where == "reward" else 0.0), agent(2, [[0.0] * 5])]
    for decode in (steps_from_proto, decode_vector_steps):
        with pytest.raises(RuntimeError) as refused:
            decode(infos, spec)
        assert str(refused.value) == message


def test_an_observation_that_does_not_fit_its_shape_gets_steps_from_proto_s_error():
    spec = BehaviorSpec([VECTOR], ActionSpec(1, ()))
    infos = [agent(1, [[0.0] * 5]), agent(2, [[0.0] * 4])]
    with pytest.raises(Exception) as theirs:
        steps_from_proto(infos, spec)
    with pytest.raises(type(theirs.value)) as ours:
        decode_vector_steps(infos, spec)
    assert str(ours.value) == str(theirs.value)
