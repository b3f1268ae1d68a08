"""The two image layouts Unity builds send, and the one agents-learn uses inside.

Package 2.x (``mlagents`` 0.28's generation) describes a camera, render texture or grid sensor
as ``[H, W, C]`` with dimension properties (TE, TE, NONE); package 3.x and 4.x (Unity 6,
``mlagents`` 1.1) as ``[C, H, W]`` with (NONE, TE, TE), and send uncompressed pixels in that
order. PNG data is the same in both: images of three channels each, mapped onto the
observation's channels by ``compressed_channel_mapping``.

Inside agents-learn every image is ``[H, W, C]`` (processors, buffers, demonstrations,
networks, the policy server), as it always was; a channel-first build is converted here, at
the edge, and nowhere else. The ONNX contract does not depend on the generation: both export
visual inputs as ``[batch, C, H, W]`` (0.28 transposed its ``[H, W, C]`` specs at export; 1.1
exports its ``[C, H, W]`` specs as they are), which is what the graph takes either way.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
from mlagents_envs.base_env import BehaviorSpec, DecisionSteps, DimensionProperty, ObservationSpec, TerminalSteps
from mlagents_envs.rpc_utils import steps_from_proto

from envs.unity.steps import decode_vector_steps
from envs.unity.versions import package_generation

_TE = DimensionProperty.TRANSLATIONAL_EQUIVARIANCE
_NONE = DimensionProperty.NONE
_COMPRESSION_NONE = 0  # ObservationProto.compression_type of uncompressed float data


class ImageLayout(enum.Enum):
    """How a build lays out its rank-3 observations."""

    HWC = "channels last ([H, W, C], Unity package 2.x)"
    CHW = "channels first ([C, H, W], Unity package 3.x and later)"


def layout_of(spec: ObservationSpec, package_version: str) -> ImageLayout | None:
    """The layout of one observation as the build declares it (None unless rank 3).

    The dimension properties decide; a build that leaves them unspecified is taken by its
    package generation (3 and later: channels first)."""
    if len(spec.shape) != 3:
        return None
    properties = tuple(spec.dimension_property)
    if properties == (_NONE, _TE, _TE):
        return ImageLayout.CHW
    if properties == (_TE, _TE, _NONE):
        return ImageLayout.HWC
    return ImageLayout.CHW if package_generation(package_version) >= 3 else ImageLayout.HWC


def build_layout(build_spec: BehaviorSpec, package_version: str) -> ImageLayout | None:
    """The layout of a behavior's images (None without any). A behavior that mixes both is
    refused: no Unity package sends that, and guessing would train on transposed pixels."""
    layouts = {layout_of(o, package_version) for o in build_spec.observation_specs} - {None}
    if len(layouts) > 1:
        described = ", ".join(f"{o.name} {tuple(o.shape)}" for o in build_spec.observation_specs if len(o.shape) == 3)
        raise ValueError(f"a behavior sends images in both layouts ({described}); a Unity package sends one")
    return layouts.pop() if layouts else None


def internal_spec(build_spec: BehaviorSpec, layout: ImageLayout | None) -> BehaviorSpec:
    """``build_spec`` as agents-learn sees it: channel-first images turned ``[H, W, C]``."""
    if layout is not ImageLayout.CHW:
        return build_spec
    observations = [
        ObservationSpec((o.shape[1], o.shape[2], o.shape[0]), (_TE, _TE, _NONE), o.observation_type, o.name)
        if len(o.shape) == 3
        else o
        for o in build_spec.observation_specs
    ]
    return BehaviorSpec(observations, build_spec.action_spec)


def decode_steps(
    agent_infos: Collection[Any], build_spec: BehaviorSpec, layout: ImageLayout | None = None
) -> tuple[DecisionSteps, TerminalSteps]:
    """A behavior's steps from a build's ``AgentInfoProto`` messages, images ``[H, W, C]``.

    ``layout`` is the build's (see :func:`build_layout`; read from ``build_spec`` when None).
    Channel-last builds decode as ``mlagents_envs`` 0.28 decodes them (without images, by
    :func:`envs.unity.steps.decode_vector_steps`, the same arrays faster). For a channel-first
    build, PNG observations are declared ``[H, W, C]`` to the decoder (PNG decodes so; only
    the proto's shape field is rewritten for the call, then restored) and uncompressed ones are
    decoded ``[C, H, W]`` and handed over as an ``[H, W, C]`` view, with no copy."""
    if layout is None:
        layout = build_layout(build_spec, "")
    if layout is not ImageLayout.CHW or not agent_infos:
        spec = build_spec if layout is not ImageLayout.CHW else internal_spec(build_spec, layout)
        return decode_vector_steps(agent_infos, spec)  # steps_from_proto's steps; itself with images
    first = next(iter(agent_infos))
    uncompressed = [
        len(o.shape) == 3 and first.observations[i].compression_type == _COMPRESSION_NONE
        for i, o in enumerate(build_spec.observation_specs)
    ]
    png = [len(o.shape) == 3 and not raw for o, raw in zip(build_spec.observation_specs, uncompressed)]
    decode_spec = BehaviorSpec(
        [
            ObservationSpec((o.shape[1], o.shape[2], o.shape[0]), (_TE, _TE, _NONE), o.observation_type, o.name)
            if is_png
            else o
            for o, is_png in zip(build_spec.observation_specs, png)
        ],
        build_spec.action_spec,
    )
    declared = [
        (info.observations[i].shape, tuple(info.observations[i].shape))
        for info in agent_infos
        for i in np.flatnonzero(png)
    ]
    try:
        for shape, (c, h, w) in declared:
            shape[:] = (h, w, c)
        decision, terminal = steps_from_proto(agent_infos, decode_spec)
    finally:  # the messages are left as they came
        for shape, chw in declared:
            shape[:] = chw
    _channels_last(decision.obs, uncompressed)
    _channels_last(terminal.obs, uncompressed)
    return decision, terminal


def _channels_last(obs: list[np.ndarray], channel_first: Sequence[bool]) -> None:
    for i, is_chw in enumerate(channel_first):
        if is_chw:
            obs[i] = obs[i].transpose(0, 2, 3, 1)
