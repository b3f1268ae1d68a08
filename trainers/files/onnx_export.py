"""Export a policy's actor as an ONNX model that Unity's inference engine (Sentis /
Barracuda) runs, to the contract of REFERENCE 1.9 (ML-Agents' model API version 3).

Graph inputs: ``obs_0 .. obs_{N-1}`` (visual ones NCHW; variable-length ones declared
[batch, max_entities, entity_size] but read, as ML-Agents' graphs read them, in the layout
Unity's runtime fills: the graph transposes the last two axes and reshapes back to
[batch, max_entities, entity_size], so the buffer is taken feature-major; goal observations
are ordinary ``obs_N`` inputs), then ``action_masks`` [batch,
sum(branches)] float with 1 = allowed, only when there are discrete branches (a
continuous-only model has no mask input, as ML-Agents' pruned exports), then for a recurrent
policy ``recurrent_in`` [batch, 1, memory_size]. Outputs in order: ``version_number`` [1] = 3,
``memory_size`` [1] (0 without memory), then
for continuous actions ``continuous_actions`` (a Gaussian sample clipped to [-3, 3] / 3),
``continuous_action_output_shape`` [1], ``deterministic_continuous_actions`` (the mean,
clipped and scaled the same way; a tanh-squashed SAC actor outputs ``tanh`` of the sample
and of the mean instead, already in [-1, 1]); for discrete actions ``discrete_actions`` [batch, b] int64
sampled indices, ``discrete_action_output_shape`` [1, b] (branch sizes),
``deterministic_discrete_actions`` (argmax); for a recurrent policy ``recurrent_out``
[batch, 1, memory_size], which Unity feeds back as the agent's next ``recurrent_in``.
Observation normalisation is inside the graph.

Sampling uses opset-9 ops, as ML-Agents' exports: ``RandomNormalLike`` for the Gaussian noise
and ``Multinomial`` for each branch.
"""

from __future__ import annotations

import copy
import os
import warnings
from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

from trainers.networks.actor_critic import Actor, is_variable_length

if TYPE_CHECKING:
    from trainers.networks.policy import TorchPolicy

MODEL_API_VERSION = 3  # ML-Agents 2.0+ model format (Unity accepts 2..3)
OPSET_VERSION = 9
ACTION_CLIP = 3.0

# Names Unity's model loader looks for.
OBS_INPUT = "obs_{}"
ACTION_MASKS = "action_masks"
VERSION_NUMBER = "version_number"
MEMORY_SIZE = "memory_size"
CONTINUOUS_ACTIONS = "continuous_actions"
CONTINUOUS_SHAPE = "continuous_action_output_shape"
DETERMINISTIC_CONTINUOUS = "deterministic_continuous_actions"
DISCRETE_ACTIONS = "discrete_actions"
DISCRETE_SHAPE = "discrete_action_output_shape"
DETERMINISTIC_DISCRETE = "deterministic_discrete_actions"
RECURRENT_IN = "recurrent_in"
RECURRENT_OUT = "recurrent_out"


class _ExportableActor(nn.Module):
    """Wraps an :class:`Actor` with the constants and outputs Unity reads."""

    def __init__(self, actor: Actor, num_obs: int, entity_shapes: dict[int, tuple[int, int]]) -> None:
        super().__init__()
        self.actor = actor
        self.num_obs = num_obs
        self.entity_shapes = entity_shapes  # var-len observation index -> (max entities, entity size)
        self.version_number = nn.Parameter(torch.tensor([float(MODEL_API_VERSION)]), requires_grad=False)
        self.memory_size = nn.Parameter(torch.tensor([float(actor.memory_size)]), requires_grad=False)
        if actor.continuous_size:
            self.continuous_shape = nn.Parameter(torch.tensor([float(actor.continuous_size)]), requires_grad=False)
        if actor.discrete_branches:
            self.discrete_shape = nn.Parameter(
                torch.tensor([[float(n) for n in actor.discrete_branches]]), requires_grad=False
            )

    def forward(self, *inputs: Tensor) -> tuple[Tensor, ...]:
        obs = list(inputs[: self.num_obs])
        for i, (n, size) in self.entity_shapes.items():
            # ML-Agents' export-time reordering of entity buffers (attention.py: "ONNX only
            # support input in NCHW"): Unity feeds them in the layout this undoes.
            obs[i] = torch.transpose(obs[i], 1, 2).reshape(-1, n, size)
        masks = inputs[self.num_obs] if self.actor.discrete_branches else None
        memories = inputs[-1][:, 0, :] if self.actor.memory_size else None  # [batch, 1, k] -> [batch, k]
        dist = self.actor(obs, masks, memories=memories, channels_first=True)
        outputs: list[Tensor] = [self.version_number, self.memory_size]
        if self.actor.continuous_size:
            sample = dist.mean + torch.randn_like(dist.mean) * torch.exp(dist.log_std)
            if self.actor.tanh_squash:
                outputs += [torch.tanh(sample), self.continuous_shape, torch.tanh(dist.mean)]
            else:
                outputs += [
                    torch.clamp(sample, -ACTION_CLIP, ACTION_CLIP) / ACTION_CLIP,
                    self.continuous_shape,
                    torch.clamp(dist.mean, -ACTION_CLIP, ACTION_CLIP) / ACTION_CLIP,
                ]
        if self.actor.discrete_branches:
            outputs += [
                torch.cat([torch.multinomial(torch.exp(lp), 1) for lp in dist.log_probs], dim=1),
                self.discrete_shape,
                torch.cat([lp.argmax(dim=1, keepdim=True) for lp in dist.log_probs], dim=1),
            ]
        if self.actor.memory_size:
            outputs.append(dist.memories.unsqueeze(1))
        return tuple(outputs)


def onnx_input_shapes(policy: TorchPolicy) -> dict[str, tuple[int, ...]]:
    """Input name -> shape without the batch axis, as the exported graph declares them."""
    shapes: dict[str, tuple[int, ...]] = {}
    for i, spec in enumerate(policy.behavior_spec.observation_specs):
        shape = tuple(int(s) for s in spec.shape)
        if len(shape) == 3:
            shape = (shape[2], shape[0], shape[1])  # HWC -> CHW
        shapes[OBS_INPUT.format(i)] = shape
    if policy.discrete_branches:
        shapes[ACTION_MASKS] = (sum(policy.discrete_branches),)
    if policy.memory_size:
        shapes[RECURRENT_IN] = (1, policy.memory_size)
    return shapes


def onnx_output_names(policy: TorchPolicy) -> list[str]:
    """The graph's output names, in order."""
    names = [VERSION_NUMBER, MEMORY_SIZE]
    if policy.continuous_size:
        names += [CONTINUOUS_ACTIONS, CONTINUOUS_SHAPE, DETERMINISTIC_CONTINUOUS]
    if policy.discrete_branches:
        names += [DISCRETE_ACTIONS, DISCRETE_SHAPE, DETERMINISTIC_DISCRETE]
    if policy.memory_size:
        names.append(RECURRENT_OUT)
    return names


def export_policy_onnx(policy: TorchPolicy, path: str | os.PathLike) -> None:
    """Write ``policy``'s actor to ``path`` (opset 9, batch axis ``batch``).

    Works on a CPU copy of the actor, so the policy may keep acting (on any device) meanwhile.
    """
    actor = copy.deepcopy(policy.actor).to("cpu").eval()
    input_shapes = onnx_input_shapes(policy)
    specs = policy.behavior_spec.observation_specs
    entity_shapes = {
        i: (int(spec.shape[0]), int(spec.shape[1])) for i, spec in enumerate(specs) if is_variable_length(spec)
    }
    wrapper = _ExportableActor(actor, len(specs), entity_shapes).eval()
    dummy = tuple(
        torch.ones((1, *shape)) if name == ACTION_MASKS else torch.zeros((1, *shape))
        for name, shape in input_shapes.items()
    )
    output_names = onnx_output_names(policy)
    batch_outputs = [
        CONTINUOUS_ACTIONS,
        DETERMINISTIC_CONTINUOUS,
        DISCRETE_ACTIONS,
        DETERMINISTIC_DISCRETE,
        RECURRENT_OUT,
    ]
    dynamic_axes = {name: {0: "batch"} for name in [*input_shapes, *(n for n in batch_outputs if n in output_names)]}
    with torch.no_grad(), warnings.catch_warnings():
        # The TorchScript exporter is deprecated in favour of dynamo (which needs onnxscript).
        warnings.simplefilter("ignore", DeprecationWarning)
        # Tracing an LSTM warns about shape checks and about initial states, which are
        # graph inputs here (recurrent_in), so any batch size runs.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting a model to ONNX with a batch_size other than 1")
        torch.onnx.export(
            wrapper,
            dummy,
            os.fspath(path),
            dynamo=False,
            opset_version=OPSET_VERSION,
            input_names=list(input_shapes),
            output_names=output_names,
            dynamic_axes=dynamic_axes,
            do_constant_folding=True,
            export_params=True,
        )
