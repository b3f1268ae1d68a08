"""Checkpoints written by mlagents-learn, read into agents-learn's PPO networks (``--initialize-from``).

mlagents-learn (ML-Agents' ``TorchModelSaver``, 0.2x to 1.1) saves, per behavior, one dict of
``{module name: state_dict}``: ``Policy`` (the actor), ``global_step``,
``Optimizer:value_optimizer`` (Adam), ``Optimizer:critic`` (the value network; the actor
itself when the critic is shared) and ``Module:<signal>`` (curiosity, GAIL, RND networks).
Our networks mirror ML-Agents' architecture, so the weights carry over by renaming
(ML-Agents' key -> ours, in ``Policy`` and ``Optimizer:critic`` alike)::

    network_body.observation_encoder.processors.<i>.conv_layers.<k>.*  -> encoder.inputs.<i>.convs.<k>.*
    network_body.observation_encoder.processors.<i>.dense.0.*          -> encoder.inputs.<i>.dense.0.*
      resnet: processors.<i>.sequential.<k>.* (convolutions)           -> encoder.inputs.<i>.convs.<k>.*
              processors.<i>.sequential.<k>.layers.<j>.* (blocks)      -> encoder.inputs.<i>.convs.<k>.body.<j>.*
              processors.<i>.dense.*                                   -> encoder.inputs.<i>.dense.0.*
    network_body.observation_encoder.processors.<i>.normalizer.
        running_mean                                                   -> encoder.inputs.<i>.normalizer.mean
        running_variance / normalization_steps                         -> encoder.inputs.<i>.normalizer.var
        normalization_steps                                            -> encoder.inputs.<i>.normalizer.count
    network_body._body_endoder.seq_layers.<2j>.*                       -> encoder.body.layers.<j>.*
    network_body.lstm.lstm.{weight,bias}_{ih,hh}_l0                    -> memory.lstm.{weight,bias}_{ih,hh}_l0
    action_model._continuous_distribution.mu.*                         -> mean_head.*
    action_model._continuous_distribution.log_sigma                    -> log_std
    action_model._discrete_distribution.branches.<n>.* (concatenated)  -> logits_head.*
    value_heads.value_heads.<signal>.* (stacked in our signal order)   -> value_heads.linear.*

(ML-Agents' ``running_variance`` is a sum of squared deviations over ``normalization_steps``
samples, one of them its initial pseudo-sample; ours is the variance over ``count``, so the
statistics continue to update exactly as ML-Agents' would. Both LSTMs are ``torch.nn.LSTM`` of
``memory_size / 2`` units, a memory being the hidden state then the cell state, so a recurrent
network's memories mean the same in both.) ``network_body.processors.*``
repeats ``observation_encoder.processors`` and the export constants (``version_number``,
``*_size_vector``...) only describe the actor: neither is loaded. The optimiser, the step and
reward-signal networks are not carried over: an initialized run starts them fresh.

mlagents 1.1 (for Unity package 3.x/4.x builds) writes the same modules under the same keys as
0.28: its torch code moved (``mlagents.trainers.torch`` -> ``torch_entities``), not its state
dicts, and for the same network, seed and steps the two write the same tensors. Its visual
encoders take ``[C, H, W]`` images where 0.28's permuted ``[H, W, C]`` first; the convolutions
are ``[out, C, kh, kw]`` in both, and ours permute our ``[H, W, C]`` images (a 3.x build's are
turned so at the edge) before the same convolutions, so one translation serves both versions.

The actor carries over whole or not at all: anything that does not fit is one
:class:`CheckpointError` naming the file, the behavior and what differs. The critic carries over
when it fits; when it cannot (a separate critic into ``shared_critic: true``, a missing value
head), a warning says why and it starts fresh.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import torch
from mlagents_envs.base_env import ActionSpec
from torch import Tensor

from trainers.exceptions import CheckpointError
from trainers.settings import TrainerSettings

logger = logging.getLogger(__name__)

POLICY = "Policy"
CRITIC = "Optimizer:critic"
GLOBAL_STEP = "global_step"

# Plain numbers ML-Agents' actor keeps for its ONNX export; they describe, they are not weights.
_EXPORT_CONSTANTS = frozenset(
    {
        "version_number",
        "memory_size_vector",
        "is_continuous_int_deprecated",
        "continuous_act_size_vector",
        "discrete_act_size_vector",
        "act_size_vector_deprecated",
    }
)
_PROCESSORS = "network_body.observation_encoder.processors."
_PROCESSORS_ALIAS = "network_body.processors."  # the same modules, saved a second time
_ENCODER_LAYER = re.compile(r"network_body\.observation_encoder\.processors\.(\d+)\.(conv_layers\.\d+|dense\.0)\.(\w+)")
# ResNetVisualEncoder: ``sequential.<k>`` convolutions, ``sequential.<k>.layers.<j>`` inside its
# residual blocks, and a bare Linear ``dense`` (the other encoders' ``dense`` is a Sequential).
_RESNET_LAYER = re.compile(
    r"network_body\.observation_encoder\.processors\.(\d+)\.(?:sequential\.(\d+)(?:\.layers\.(\d+))?|dense)\.(weight|bias)"
)
_NORMALIZER = re.compile(r"network_body\.observation_encoder\.processors\.(\d+)\.normalizer\.(\w+)")
_HIDDEN_LAYER = re.compile(r"network_body\._body_endoder\.seq_layers\.(\d+)\.(\w+)")
_LSTM = re.compile(r"network_body\.lstm\.lstm\.((?:weight|bias)_(?:ih|hh)_l0)")
_LSTM_HIDDEN = "memory.lstm.weight_hh_l0"  # ours; [4 * memory_size / 2, memory_size / 2]
_MEAN_HEAD = re.compile(r"action_model\._continuous_distribution\.mu\.(\w+)")
_LOG_SIGMA = "action_model._continuous_distribution.log_sigma"
_BRANCH = re.compile(r"action_model\._discrete_distribution\.branches\.(\d+)\.(\w+)")
_VALUE_HEAD = re.compile(r"value_heads\.value_heads\.(.+)\.(weight|bias)")
_NORMALIZER_PARTS = frozenset({"running_mean", "running_variance", "normalization_steps"})
# Output channels of each ML-Agents convolution stack, to name the encoder a checkpoint used.
_CONV_CHANNELS = {(16, 32): "simple", (32, 64, 64): "nature_cnn", (35, 144): "match3"}
_MAX_PROBLEMS = 4  # listed in one error; the rest are counted


def is_mlagents_checkpoint(state: Mapping[str, Any]) -> bool:
    """Whether a loaded checkpoint was written by mlagents-learn (its actor is under ``Policy``;
    ours keep it under ``actor``, next to ``format``)."""
    return isinstance(state, Mapping) and isinstance(state.get(POLICY), Mapping) and "format" not in state


def resume_refusal(path: Path, run_id: str) -> CheckpointError:
    """The one-line refusal of ``--resume`` on a run mlagents-learn wrote."""
    return CheckpointError(
        f"{path}: written by mlagents-learn; agents-learn cannot resume an mlagents-learn run (its optimiser "
        f"and step are ML-Agents' own). Start a new run from its weights instead: --initialize-from {run_id}"
    )


def import_weights(
    state: Mapping[str, Any],
    target: Mapping[str, Any],
    *,
    settings: TrainerSettings,
    action_spec: ActionSpec,
    path: Path,
    behavior: str,
) -> dict[str, Any]:
    """``target`` (the PPO state of this behavior as built: ``{"actor": ..., "critic": ...}``)
    with the mlagents-learn checkpoint ``state``'s weights in place and ``step`` 0, ready for
    ``Algorithm.load(..., weights_only=True)``. Raises CheckpointError when the actor does not fit."""
    where = f"{path}: cannot initialize behavior {behavior!r} from this mlagents-learn checkpoint"
    actor_target, critic_target = target.get("actor"), target.get("critic")
    if not isinstance(actor_target, Mapping) or not isinstance(critic_target, Mapping):
        raise CheckpointError(f"{where}: only PPO and POCA behaviors can start from mlagents-learn weights")
    policy = state[POLICY]
    actor_net = _translate(policy)
    actor, problems = _fit(POLICY, actor_net, actor_target, list(actor_target))
    if problems:
        items = _differences(actor_net, policy, actor_target, settings, action_spec) + problems
        more = f" (and {len(items) - _MAX_PROBLEMS} more)" if len(items) > _MAX_PROBLEMS else ""
        raise CheckpointError(f"{where}: {'; '.join(items[:_MAX_PROBLEMS])}{more}")
    critic, reason = _critic(state, actor_net, actor, critic_target, settings)
    normalisers = sum(1 for key in actor if key.endswith(".normalizer.count"))
    parts = ["the actor", *([] if reason else ["the critic"])]
    parts += [f"{normalisers} observation normaliser(s)"] if normalisers else []
    step = _saved_step(state)
    logger.info(
        "%s: imported mlagents-learn weights (saved at step %s): %s; the optimiser and step start fresh",
        path,
        "unknown" if step is None else step,
        ", ".join(parts),
    )
    if reason:
        logger.warning(
            "%s: the value network (critic) of this mlagents-learn checkpoint does not fit behavior %r: %s; "
            "it starts from fresh weights",
            path,
            behavior,
            reason,
        )
    return {**target, "step": 0, "actor": actor, "critic": critic}


# ---------------------------------------------------------------- renaming


@attrs.define
class _Network:
    """One ML-Agents module's tensors under our names. ``sources``: our key -> ML-Agents'
    (for messages); ``value_heads``: signal -> {"weight", "bias"}; ``unknown``: ML-Agents keys
    with no counterpart in our networks."""

    tensors: dict[str, Tensor] = attrs.Factory(dict)
    sources: dict[str, str] = attrs.Factory(dict)
    value_heads: dict[str, dict[str, Tensor]] = attrs.Factory(dict)
    unknown: list[str] = attrs.Factory(list)
    continuous_size: int = 0
    branch_sizes: tuple[int, ...] = ()

    def add(self, key: str, tensor: Tensor, source: str) -> None:
        self.tensors[key] = tensor
        self.sources[key] = source


def _translate(module: Mapping[str, Any]) -> _Network:
    """An ML-Agents actor or value network's state dict, renamed (see the module docstring)."""
    net = _Network()
    normalizers: dict[str, dict[str, Tensor]] = {}
    branches: dict[int, dict[str, Tensor]] = {}
    for key, value in module.items():
        if not isinstance(value, Tensor):
            net.unknown.append(key)
        elif key in _EXPORT_CONSTANTS or key.startswith(_PROCESSORS_ALIAS):
            continue
        elif m := _ENCODER_LAYER.fullmatch(key):
            net.add(f"encoder.inputs.{m[1]}.{m[2].replace('conv_layers', 'convs')}.{m[3]}", value, key)
        elif m := _RESNET_LAYER.fullmatch(key):
            layer = "dense.0" if m[2] is None else f"convs.{m[2]}" + ("" if m[3] is None else f".body.{m[3]}")
            net.add(f"encoder.inputs.{m[1]}.{layer}.{m[4]}", value, key)
        elif (m := _NORMALIZER.fullmatch(key)) and m[2] in _NORMALIZER_PARTS:
            normalizers.setdefault(m[1], {})[m[2]] = value
        elif (m := _HIDDEN_LAYER.fullmatch(key)) and int(m[1]) % 2 == 0:  # odd indices: Swish, no weights
            net.add(f"encoder.body.layers.{int(m[1]) // 2}.{m[2]}", value, key)
        elif m := _LSTM.fullmatch(key):
            net.add(f"memory.lstm.{m[1]}", value, key)
        elif m := _MEAN_HEAD.fullmatch(key):
            net.add(f"mean_head.{m[1]}", value, key)
            net.continuous_size = int(value.shape[0])
        elif key == _LOG_SIGMA:
            net.add("log_std", value, key)
        elif m := _BRANCH.fullmatch(key):
            branches.setdefault(int(m[1]), {})[m[2]] = value
        elif m := _VALUE_HEAD.fullmatch(key):
            net.value_heads.setdefault(m[1], {})[m[2]] = value
        else:
            net.unknown.append(key)
    for index, parts in normalizers.items():
        source = f"{_PROCESSORS}{index}.normalizer"
        if set(parts) != _NORMALIZER_PARTS or parts["normalization_steps"].numel() != 1:
            net.unknown += [f"{source}.{name}" for name in parts]
            continue
        steps = parts["normalization_steps"].double().reshape(())
        ours = f"encoder.inputs.{index}.normalizer"
        net.add(f"{ours}.mean", parts["running_mean"].double(), f"{source}.running_mean")
        net.add(f"{ours}.var", parts["running_variance"].double() / steps, f"{source}.running_variance")
        net.add(f"{ours}.count", steps, f"{source}.normalization_steps")
    _add_branches(net, branches)
    return net


def _add_branches(net: _Network, branches: dict[int, dict[str, Tensor]]) -> None:
    """ML-Agents' one Linear per discrete branch -> our one Linear over all of them."""
    if not branches:
        return
    source = "action_model._discrete_distribution.branches"
    order = sorted(branches)
    if order != list(range(len(order))) or any(set(branches[i]) != {"weight", "bias"} for i in order):
        net.unknown += [f"{source}.{i}.{name}" for i in order for name in branches[i]]
        return
    net.branch_sizes = tuple(int(branches[i]["weight"].shape[0]) for i in order)
    for name in ("weight", "bias"):
        net.add(f"logits_head.{name}", torch.cat([branches[i][name] for i in order]), f"{source}.*.{name}")


# ---------------------------------------------------------------- fitting


def _shape(tensor: Tensor) -> str:
    return str(tuple(tensor.shape))


def _fit(
    label: str, net: _Network, target: Mapping[str, Tensor], keys: Sequence[str]
) -> tuple[dict[str, Tensor], list[str]]:
    """Our tensors ``keys`` of ``target`` taken from ``net`` (in our dtypes), and every way in
    which they do not fit (a missing tensor, a shape, a tensor with no place here)."""
    fitted: dict[str, Tensor] = {}
    problems: list[str] = []
    for key in keys:
        want, have = target[key], net.tensors.get(key)
        if have is None:
            problems.append(f"this configuration's network has {key} {_shape(want)}, which {label} lacks")
        elif have.shape != want.shape:
            problems.append(f"{label} {net.sources[key]} is {_shape(have)}, {key} here is {_shape(want)}")
        else:
            fitted[key] = have.detach().to(dtype=want.dtype).clone()
    wanted = set(keys)
    for key, tensor in net.tensors.items():
        if key not in wanted:
            problems.append(f"{label} {net.sources[key]} {_shape(tensor)} has no place in this configuration's network")
    problems += [f"{label} {key} has no counterpart in agents-learn's networks" for key in net.unknown]
    return fitted, problems


def _differences(
    net: _Network,
    policy: Mapping[str, Any],
    actor_target: Mapping[str, Tensor],
    settings: TrainerSettings,
    action_spec: ActionSpec,
) -> list[str]:
    """What the checkpoint's actor was built with that this behavior's is not, in the
    configuration's words (the tensor-level details follow them in the error)."""
    found = []
    network = settings.network_settings
    theirs_memory = _memory_size(net, policy)
    ours_memory = 0 if network.memory is None else int(network.memory.memory_size)
    if theirs_memory != ours_memory:
        found.append(
            f"memory_size: {theirs_memory or 'none (no memory)'} in the checkpoint, "
            f"{ours_memory or 'none (no network_settings.memory)'} configured"
        )
    if f"{_LOG_SIGMA}.weight" in policy:
        found.append("its continuous actions have a state-dependent sigma (a SAC policy); only PPO policies carry over")
    theirs = (net.continuous_size, net.branch_sizes)
    ours = (int(action_spec.continuous_size), tuple(int(b) for b in action_spec.discrete_branches))
    if theirs != ours:
        found.append(f"actions: {_actions(*theirs)} in the checkpoint, {_actions(*ours)} in the environment")
    layers = sorted(
        (key for key in net.tensors if key.startswith("encoder.body.layers.") and key.endswith(".weight")),
        key=lambda key: int(key.split(".")[3]),
    )
    if layers:
        first = net.tensors[layers[0]]
        if len(layers) != max(network.num_layers, 1):  # 0 builds one layer, in both trainers
            found.append(f"num_layers: {len(layers)} in the checkpoint, {network.num_layers} configured")
        if first.shape[0] != network.hidden_units:
            found.append(f"hidden_units: {first.shape[0]} in the checkpoint, {network.hidden_units} configured")
        here = actor_target.get("encoder.body.layers.0.weight")
        if here is not None and here.shape[1] != first.shape[1]:
            found.append(
                f"the encoded observations are {first.shape[1]} wide in the checkpoint, {here.shape[1]} here "
                "(do the observations or vis_encode_type differ?)"
            )
    normalized = any(".normalizer." in key for key in net.tensors)
    if normalized != any(".normalizer." in key for key in actor_target):
        found.append(
            f"normalize: {str(normalized).lower()} in the checkpoint, {str(bool(network.normalize)).lower()} configured"
        )
    configured = str(getattr(network.vis_encode_type, "value", network.vis_encode_type))
    for index, kind in _visual_encoders(policy).items():
        if kind != configured:
            found.append(f"vis_encode_type: {kind} in the checkpoint (observation {index}), {configured} configured")
        elif channels := _channels(net.tensors, actor_target, index):
            found.append(
                f"observation {index} is an image of {channels[0]} channel(s) in the checkpoint, {channels[1]} here"
            )
    return found


def _channels(theirs: Mapping[str, Tensor], ours: Mapping[str, Tensor], index: int) -> tuple[int, int] | None:
    """(checkpoint's, ours) channels of image observation ``index`` where they differ: the
    input channels of its first convolution, ``[out, C, kh, kw]`` in ML-Agents 0.28 and 1.1
    alike (1.1 takes images as ``[C, H, W]``, 0.28 permuted ``[H, W, C]``: the weights agree)."""
    key = f"encoder.inputs.{index}.convs.0.weight"
    first, here = theirs.get(key), ours.get(key)
    if first is None or here is None or first.ndim != 4 or here.ndim != 4 or first.shape[1] == here.shape[1]:
        return None
    return int(first.shape[1]), int(here.shape[1])


def _memory_size(net: _Network, policy: Mapping[str, Any]) -> int:
    """The memory_size of ML-Agents' actor: twice its LSTM's units (0 without one)."""
    hidden = net.tensors.get(_LSTM_HIDDEN)
    if hidden is not None and hidden.ndim == 2:
        return 2 * int(hidden.shape[1])
    vector = policy.get("memory_size_vector")  # the export constant, for an LSTM we could not read
    return int(vector.sum()) if isinstance(vector, Tensor) and vector.numel() else 0


def _actions(continuous: int, branches: tuple[int, ...]) -> str:
    """``2 continuous and discrete branches (3, 2)``, ``no continuous and discrete branches (3,)``..."""
    continuous_part = f"{continuous} continuous" if continuous else "no continuous"
    return f"{continuous_part} and " + (f"discrete branches {branches}" if branches else "no discrete actions")


def _visual_encoders(policy: Mapping[str, Any]) -> dict[int, str]:
    """{observation index: vis_encode_type} for each visual observation of ML-Agents' actor."""
    convs: dict[int, dict[int, int]] = {}  # observation -> {layer index: output channels}
    visual: dict[int, str] = {}
    for key, value in policy.items():
        if not key.startswith(_PROCESSORS):
            continue
        number, _, rest = key[len(_PROCESSORS) :].partition(".")
        if rest.startswith("sequential."):
            visual[int(number)] = "resnet"
        elif rest.startswith("dense."):
            visual.setdefault(int(number), "")
        if (m := re.fullmatch(r"conv_layers\.(\d+)\.weight", rest)) and isinstance(value, Tensor):
            convs.setdefault(int(number), {})[int(m[1])] = int(value.shape[0])
    for index, kind in visual.items():
        if not kind:
            layers = convs.get(index, {})
            stack = tuple(layers[k] for k in sorted(layers))
            visual[index] = _CONV_CHANNELS.get(stack, "an unknown encoder") if stack else "fully_connected"
    return dict(sorted(visual.items()))


# ---------------------------------------------------------------- the critic


def _critic(
    state: Mapping[str, Any],
    actor_net: _Network,
    actor: Mapping[str, Tensor],
    critic_target: Mapping[str, Tensor],
    settings: TrainerSettings,
) -> tuple[dict[str, Tensor], str | None]:
    """Our critic's state from the checkpoint, or (fresh weights, why it cannot be). A shared
    critic's body (encoder and LSTM) is the actor's, so it always takes the imported actor's; a
    separate one's body is its own encoder and LSTM."""
    streams = [str(getattr(kind, "value", kind)) for kind in settings.reward_signals]
    shared_here = bool(getattr(settings.hyperparameters, "shared_critic", False))
    body_keys = [key for key in critic_target if key.startswith(("encoder.", "memory."))]
    fresh = dict(critic_target)
    if settings.trainer_type == "poca":
        return fresh, "POCA's centralised critic (attention over the group) is not translated from mlagents-learn yet"
    if shared_here:
        fresh.update({key: actor[key] for key in body_keys if key in actor})
    if actor_net.value_heads:  # mlagents-learn shared its critic: value heads on the actor's body
        if any(key not in actor or actor[key].shape != critic_target[key].shape for key in body_keys):
            return fresh, "its value heads sit on an encoder that does not match this critic's"
        body = {key: actor[key].clone() for key in body_keys}
        heads = actor_net.value_heads
    elif shared_here:
        return fresh, "its value network has an encoder of its own, and this configuration shares the actor's"
    else:
        module = state.get(CRITIC)
        if not isinstance(module, Mapping):
            return fresh, f"it holds no value network ({CRITIC})"
        net = _translate(module)
        body, problems = _fit(CRITIC, net, critic_target, body_keys)
        if problems:
            return fresh, "; ".join(problems[:2])
        heads = net.value_heads
    value_heads, reason = _value_heads(heads, streams, critic_target)
    if value_heads is None:
        return fresh, reason
    ignored = sorted(set(heads) - set(streams))
    if ignored:
        logger.info("Value heads of reward signals not configured here are not imported: %s", ", ".join(ignored))
    return {**fresh, **body, **value_heads}, None


def _value_heads(
    heads: Mapping[str, Mapping[str, Tensor]], streams: Sequence[str], critic_target: Mapping[str, Tensor]
) -> tuple[dict[str, Tensor] | None, str]:
    """ML-Agents' one Linear per reward signal -> our one Linear with a row per signal."""
    missing = [name for name in streams if set(heads.get(name, {})) != {"weight", "bias"}]
    if missing:
        return None, f"it has no value head for {', '.join(missing)} (it has {', '.join(sorted(heads)) or 'none'})"
    stacked = {
        f"value_heads.linear.{name}": torch.cat([heads[stream][name] for stream in streams])
        for name in ("weight", "bias")
    }
    for key, tensor in stacked.items():
        want = critic_target[key]
        if tensor.shape != want.shape:
            return None, f"its value heads stack to {_shape(tensor)}, {key} here is {_shape(want)}"
        stacked[key] = tensor.detach().to(dtype=want.dtype).clone()
    return stacked, ""


def _saved_step(state: Mapping[str, Any]) -> int | None:
    """The step mlagents-learn saved (``global_step``: a module's state, a tensor or an int)."""
    value = state.get(GLOBAL_STEP)
    if isinstance(value, Mapping):
        value = next(iter(value.values()), None)
    if isinstance(value, Tensor) and value.numel() == 1:
        return int(value.item())
    return value if isinstance(value, int) else None
