"""Torch networks of the policy and the critic: observation encoders, the running
normaliser, the hidden MLP, action heads, the actor and the value heads.

Shape convention: ``B`` batch rows; vector observations are [B, n]; visual observations are
[B, H, W, C] as Unity sends them (float in [0, 1], or uint8 which is scaled by 1/255), and
[B, C, H, W] only where ``channels_first=True`` (the exported ONNX graph, as ML-Agents does);
``c`` continuous action size, ``b`` discrete branches, ``m`` total discrete choices.

Architecture (as ML-Agents' defaults, our own code): every observation is encoded on its own
(vector: optional running normalisation, identity; visual: ``vis_encode_type`` encoder with
``hidden_units`` outputs), the encodings are concatenated and go through ``num_layers`` Linear
layers of ``hidden_units`` with Swish (SiLU) activations (``num_layers`` 0 builds one layer,
like 1, as ML-Agents' ``LinearEncoder`` does). Visual encoders use LeakyReLU (``resnet``: Swish
inside, ReLU after its dense layer), as ML-Agents' do. Continuous actions: Gaussian with a learned
state-independent log-std (no tanh; the env gets the sample clipped to [-3, 3] / 3), or, for
SAC, a log-std head on the features and ``tanh`` of the sample (``Actor(conditional_sigma=True,
tanh_squash=True)``), as ML-Agents builds each.
Discrete actions: one categorical per branch over masked logits. The entropy is ML-Agents':
the mean of the continuous dimensions' entropies plus the sum of the branches' (the PPO bonus
``beta`` is tuned against it).

Variable-length observations (Unity's BufferSensor, [B, n, s], absent entities zero rows) are
read by entity embeddings and residual self-attention (:mod:`trainers.networks.attention`); goal
observations with ``goal_conditioning_type: hyper`` condition the last hidden layer through a
hypernetwork (:mod:`trainers.networks.conditioning`), both as ML-Agents' :class:`ObservationEncoder`.

Recurrent memory (``network_settings.memory``): an LSTM of ``memory_size / 2`` units after the
hidden layers, as ML-Agents' ``NetworkBody``; the action and value heads read its output. A
memory is ``[N, memory_size]``, the LSTM's hidden state then its cell state, one row per
sequence; a batch of ``B`` rows is ``N = B / sequence_length`` sequences laid end to end.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple, cast

import numpy as np
import torch
from mlagents_envs.base_env import ActionSpec, DimensionProperty, ObservationSpec, ObservationType
from torch import Tensor, nn
from torch.nn import functional as F

from trainers.exceptions import ConfigError
from trainers.networks.activations import hidden_activation
from trainers.networks.attention import (
    ATTENTION_EMBEDDING_SIZE,
    EntityEmbedding,
    ResidualSelfAttention,
    entity_mask,
    init_tfixup,
)
from trainers.networks.conditioning import ConditionalEncoder
from trainers.networks.distributions import (
    atanh_clamped,
    branch_log_probs,
    categorical_entropy,
    categorical_sample,
    gather_log_probs,
    gaussian_entropy,
    gaussian_log_prob,
    mask_logits,
    standard_normal_log_prob,
    tanh_log_abs_det,
)
from trainers.networks.initialization import initialize

if TYPE_CHECKING:
    from trainers.settings import NetworkSettings


class UnsupportedNetworkError(ConfigError):
    """The behavior's observations/actions or the network settings ask for something these
    networks cannot build (an image too small for its encoder, recurrent memory...)."""


# Normalised observations are clipped to this many standard deviations, as ML-Agents does.
NORMALIZATION_CLIP = 5.0
# Added to the variance before the square root, so a constant feature normalises to 0.
NORMALIZATION_EPSILON = 1e-8

# A state-dependent log-std (``conditional_sigma``) is clamped to this range, as ML-Agents does.
LOG_STD_MIN = -20.0
LOG_STD_MAX = 2.0

# Smallest image side (pixels) each visual encoder accepts (ML-Agents' documented minimums).
MIN_RESOLUTION = {"simple": 20, "nature_cnn": 36, "resnet": 15, "match3": 5, "fully_connected": 1}


# ---------------------------------------------------------------- initialisation


# As ML-Agents initialises its layers (so tuned configurations start from the same place):
# dense layers draw N(0, gain^2 / fan_in) ("KaimingHeNormal" with a linear gain) and start with
# zero biases: gain 1 in the hidden MLP, 1.41 for the dense layer after a visual encoder's
# convolutions, 0.2 for the Gaussian mean head and 0.1 for the discrete logits head, so the
# first policy is near uniform. Convolutions keep torch's default (Kaiming-uniform, a=sqrt(5)).
VISUAL_DENSE_GAIN = 1.41
CONTINUOUS_HEAD_GAIN = 0.2
DISCRETE_HEAD_GAIN = 0.1


def init_dense(layer: nn.Linear, gain: float, generator: torch.Generator | None) -> None:
    """N(0, gain^2 / fan_in) weights, zero bias."""
    nn.init.kaiming_normal_(layer.weight, nonlinearity="linear", generator=generator)
    with torch.no_grad():
        layer.weight.mul_(gain)
    nn.init.zeros_(layer.bias)


def _init_conv(layer: nn.Conv2d, generator: torch.Generator | None) -> None:
    """torch's default Conv2d initialisation, drawn from ``generator`` (seeded, not global)."""
    nn.init.kaiming_uniform_(layer.weight, a=math.sqrt(5), generator=generator)
    if layer.bias is not None:
        fan_in = layer.weight[0].numel()
        bound = 1.0 / math.sqrt(fan_in)
        nn.init.uniform_(layer.bias, -bound, bound, generator=generator)


def _init_encoder(module: nn.Module, generator: torch.Generator | None) -> None:
    """Every layer of an observation encoder, as ML-Agents initialises it (see above)."""
    for layer in module.modules():
        if isinstance(layer, nn.Conv2d):
            _init_conv(layer, generator)
        elif isinstance(layer, _ConvEncoder):
            init_dense(cast(nn.Linear, layer.dense[0]), VISUAL_DENSE_GAIN, generator)
        elif isinstance(layer, MLP):
            for dense in layer.dense_layers:
                init_dense(dense, 1.0, generator)


# ---------------------------------------------------------------- normaliser


class Normalizer(nn.Module):
    """Running mean and variance of a vector observation, in float64 buffers (saved in the
    state dict, so a checkpoint restores them).

    Before the first ``update`` it is the identity (mean 0, variance 1). ``forward`` returns
    ``clip((x - mean) / sqrt(var + 1e-8), -5, 5)`` in float32, from float32 copies of the
    statistics that ``update`` and ``load_state_dict`` refresh (fewer ops per inference, and
    the exported graph holds float32 constants only: Unity has no float64).
    """

    mean: Tensor  # [n] float64
    var: Tensor  # [n] float64, population variance (ddof 0)
    count: Tensor  # [] float64, samples merged so far
    offset: Tensor  # [n] float32 mean (not saved: derived)
    inv_std: Tensor  # [n] float32 1 / sqrt(var + eps) (not saved: derived)

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size
        self.register_buffer("mean", torch.zeros(size, dtype=torch.float64))
        self.register_buffer("var", torch.ones(size, dtype=torch.float64))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.register_buffer("offset", torch.zeros(size), persistent=False)
        self.register_buffer("inv_std", torch.ones(size), persistent=False)
        self._refresh()
        self.register_load_state_dict_post_hook(lambda module, _keys: module._refresh())

    def _refresh(self) -> None:
        mean, var = _host(self.mean), _host(self.var)
        _store(self.offset, mean.astype(np.float32))
        _store(self.inv_std, (1.0 / np.sqrt(var + NORMALIZATION_EPSILON)).astype(np.float32))

    def update(self, x: Tensor | np.ndarray) -> None:
        """Merge a batch [B, n] into the running statistics (Chan et al.'s parallel formula), in
        float64 numpy: it runs for every trajectory of every normalised network, and on
        vectors this short the same steps as torch ops cost more (8 floats, 20 rows: 41 µs a
        call as torch ops, 29 µs here)."""
        batch = x.detach().cpu().numpy() if isinstance(x, Tensor) else np.asarray(x)
        batch = batch.reshape(-1, self.size).astype(np.float64, copy=False)
        m = batch.shape[0]
        if m == 0:
            return
        batch_mean = batch.mean(axis=0)
        centred = batch - batch_mean
        batch_var = np.einsum("ij,ij->j", centred, centred) / m
        mean, var = _host(self.mean), _host(self.var)
        n = float(_host(self.count))
        total = n + m
        delta = batch_mean - mean
        m2 = var * n + batch_var * m + delta * delta * (n * m / total)
        _store(self.mean, mean + delta * (m / total))
        _store(self.var, m2 / total)
        _store(self.count, np.asarray(total))
        self._refresh()

    def statistics(self) -> dict[str, Tensor]:
        """The saved statistics (the state dict's entries), as the buffers themselves."""
        return {"mean": self.mean, "var": self.var, "count": self.count}

    def load_statistics(self, statistics: Mapping[str, Tensor]) -> None:
        """Take :meth:`statistics` of a normaliser of the same size (all of them, nothing else):
        the state dict's load without its per-call machinery (done after every trajectory)."""
        if statistics.keys() != {"mean", "var", "count"}:
            raise KeyError(f"normaliser statistics: expected mean, var and count, got {sorted(statistics)}")
        for name, value in statistics.items():
            buffer = getattr(self, name)
            if value.shape != buffer.shape:
                raise ValueError(f"normaliser {name}: expected shape {list(buffer.shape)}, got {list(value.shape)}")
            _store(buffer, _host(value))
        self._refresh()

    def forward(self, x: Tensor) -> Tensor:
        return torch.clamp((x - self.offset) * self.inv_std, -NORMALIZATION_CLIP, NORMALIZATION_CLIP)


def _host(buffer: Tensor) -> np.ndarray:
    """A buffer's values in numpy: the buffer's own memory on the CPU, a copy elsewhere."""
    return buffer.numpy() if buffer.device.type == "cpu" else buffer.cpu().numpy()


def _store(buffer: Tensor, value: np.ndarray) -> None:
    """Write ``value`` into ``buffer`` in place (its dtype and device stay)."""
    if buffer.device.type == "cpu":
        buffer.numpy()[...] = value
    else:
        buffer.copy_(torch.from_numpy(np.ascontiguousarray(value)))


# ---------------------------------------------------------------- encoders


class MLP(nn.Module):
    """``num_layers`` x (Linear(hidden_units) + ``activation``), [B, input_size] -> [B, hidden_units].

    At least one layer: ``num_layers`` 0 (or less) builds one, exactly like 1, because
    ML-Agents' ``LinearEncoder`` always builds the first layer and then ``num_layers - 1``
    more. A configuration tuned with ``num_layers: 0`` in mlagents-learn so gets the network it
    trained there. ``activation``: ``network_settings.activation`` (ML-Agents' Swish unless set).
    """

    def __init__(self, input_size: int, hidden_units: int, num_layers: int, activation: str = "swish") -> None:
        super().__init__()
        layers = []
        size = input_size
        for _ in range(max(num_layers, 1)):
            layers.append(nn.Linear(size, hidden_units))
            size = hidden_units
        self.layers = nn.ModuleList(layers)
        self.output_size = size
        self.activation = hidden_activation(activation)

    @property
    def dense_layers(self) -> list[nn.Linear]:
        return cast("list[nn.Linear]", list(self.layers))

    def forward(self, x: Tensor) -> Tensor:
        # functional calls: a module call per layer costs more than the 3DBall-sized matmul
        activation = self.activation
        for layer in cast("list[nn.Linear]", self.layers):
            x = activation(F.linear(x, layer.weight, layer.bias))
        return x


class _NoHiddenLayers(nn.Module):
    """The identity, in the place of an encoder's hidden layers (``hidden_layers=False``)."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.output_size = size

    def forward(self, x: Tensor) -> Tensor:
        return x


class _ConvEncoder(nn.Module):
    """Convolutions, flatten (channels, then rows, then columns, as ML-Agents' reshape of
    [B, C, H, W]), Linear(output_size) + activation; input [B, C, H, W]. The Linear layer is
    ``dense.0`` whatever the encoder (ML-Agents names resnet's ``dense``, the others' ``dense.0``)."""

    def __init__(
        self, convs: nn.Module, shape_chw: tuple[int, int, int], output_size: int, activation: type[nn.Module]
    ) -> None:
        super().__init__()
        self.convs = convs
        with torch.no_grad():
            flat = int(torch.flatten(convs(torch.zeros(1, *shape_chw)), 1).shape[1])
        self.dense = nn.Sequential(nn.Linear(flat, output_size), activation())

    def forward(self, x: Tensor) -> Tensor:
        return self.dense(torch.flatten(self.convs(x), 1))


class _ResidualBlock(nn.Module):
    """``x + conv(swish(conv(swish(x))))``, 3x3 convolutions keeping size and channels
    (ML-Agents' ``ResNetBlock``; ``body.<j>`` is its ``layers.<j>``)."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.SiLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
            nn.SiLU(),
            nn.Conv2d(channels, channels, 3, padding=1),
        )

    def forward(self, x: Tensor) -> Tensor:
        return x + self.body(x)


def _visual_encoder(kind: str, shape_chw: tuple[int, int, int], output_size: int) -> nn.Module:
    """The ``vis_encode_type`` encoder for an image of ``shape_chw``; outputs [B, output_size]."""
    c = shape_chw[0]
    if kind == "simple":
        convs = nn.Sequential(
            nn.Conv2d(c, 16, 8, stride=4), nn.LeakyReLU(), nn.Conv2d(16, 32, 4, stride=2), nn.LeakyReLU()
        )
        return _ConvEncoder(convs, shape_chw, output_size, nn.LeakyReLU)
    if kind == "nature_cnn":
        convs = nn.Sequential(
            nn.Conv2d(c, 32, 8, stride=4),
            nn.LeakyReLU(),
            nn.Conv2d(32, 64, 4, stride=2),
            nn.LeakyReLU(),
            nn.Conv2d(64, 64, 3, stride=1),
            nn.LeakyReLU(),
        )
        return _ConvEncoder(convs, shape_chw, output_size, nn.LeakyReLU)
    if kind == "match3":
        convs = nn.Sequential(nn.Conv2d(c, 35, 3), nn.LeakyReLU(), nn.Conv2d(35, 144, 3), nn.LeakyReLU())
        return _ConvEncoder(convs, shape_chw, output_size, nn.LeakyReLU)
    if kind == "resnet":
        # ML-Agents' ResNetVisualEncoder, module for module (``convs.<k>`` is its
        # ``sequential.<k>``): three stages of conv 3x3 (padded), an unpadded 3x3 max-pool with
        # stride 2 (each side (n - 3) // 2 + 1: 15 -> 7 -> 3 -> 1, 84 -> 41 -> 20 -> 9) and two
        # residual blocks, then Swish; flattened to 32 * h * w, then dense + ReLU.
        stages: list[nn.Module] = []
        in_ch = c
        for out_ch in (16, 32, 32):
            stages += [
                nn.Conv2d(in_ch, out_ch, 3, padding=1),
                nn.MaxPool2d(3, stride=2),
                _ResidualBlock(out_ch),
                _ResidualBlock(out_ch),
            ]
            in_ch = out_ch
        stages.append(nn.SiLU())
        return _ConvEncoder(nn.Sequential(*stages), shape_chw, output_size, nn.ReLU)
    if kind == "fully_connected":
        return _ConvEncoder(nn.Identity(), shape_chw, output_size, nn.LeakyReLU)
    raise UnsupportedNetworkError(f"vis_encode_type {kind!r} is unknown; expected one of {', '.join(MIN_RESOLUTION)}")


class _VectorInput(nn.Module):
    """A vector observation, normalised when asked."""

    def __init__(self, size: int, normalize: bool) -> None:
        super().__init__()
        self.output_size = size
        self.normalizer = Normalizer(size) if normalize else None

    def forward(self, x: Tensor) -> Tensor:
        return x if self.normalizer is None else self.normalizer(x)


def _describe(index: int, spec: ObservationSpec) -> str:
    name = getattr(spec, "name", "") or ""
    return f"observation {index}" + (f" ({name!r})" if name else "") + f" of shape {tuple(spec.shape)}"


def is_variable_length(spec: ObservationSpec) -> bool:
    """A variable-length observation (Unity's BufferSensor): rank 2, (max entities, entity
    size), its first dimension marked VARIABLE_SIZE."""
    props = tuple(getattr(spec, "dimension_property", ()))
    return (
        len(spec.shape) == 2 and len(props) == 2 and DimensionProperty.VARIABLE_SIZE in DimensionProperty(int(props[0]))
    )


def is_goal(spec: ObservationSpec) -> bool:
    return getattr(spec, "observation_type", ObservationType.DEFAULT) == ObservationType.GOAL_SIGNAL


def goal_conditioned(observation_specs: Sequence[ObservationSpec], network_settings: NetworkSettings) -> bool:
    """Whether :class:`ObservationEncoder` builds a hypernetwork-conditioned body: the behavior
    has vector or visual goal observations and ``goal_conditioning_type`` is ``hyper``.
    Variable-length goals cannot condition (ML-Agents' goal encoding size counts them as 0):
    they are read by the attention like any other."""
    conditioning = str(getattr(network_settings.goal_conditioning_type, "value", "hyper"))
    return conditioning == "hyper" and any(is_goal(spec) and not is_variable_length(spec) for spec in observation_specs)


# The kinds of observation an ObservationEncoder reads (how ``encode_inputs`` treats each).
_VECTOR, _VISUAL, _ENTITIES = "vector", "visual", "entities"


class ObservationEncoder(nn.Module):
    """All observations of a behavior -> one [B, output_size] feature vector.

    Each vector or visual observation is encoded on its own (``inputs[i]``). Variable-length
    observations [B, n, s] (absent entities are zero rows) are read by attention, as ML-Agents'
    encoder does (:mod:`trainers.networks.attention`): the other observations' encodings, joined, go
    through ``self_encoder`` (Linear(128) + Swish) to a "self" vector that is joined to every
    entity; each var-len observation's entities are embedded by ``inputs[i]`` (an
    :class:`~trainers.networks.attention.EntityEmbedding` of size 128); one ``attention`` block
    (:class:`~trainers.networks.attention.ResidualSelfAttention`) over all their entities pools them to
    128 features, appended after the other encodings. Var-len observations are not normalised.

    The hidden layers (``body``) are an :class:`MLP`, or, when the behavior has goal
    observations and ``goal_conditioning_type`` is ``hyper``, a
    :class:`~trainers.networks.conditioning.ConditionalEncoder` whose last layer's weights a
    hypernetwork computes from the goal observations' encodings (joined in spec order;
    a visual goal's is its visual encoder's output). As in ML-Agents, the goal observations
    are then also ordinary inputs; with ``goal_conditioning_type: none`` they are only that,
    and so are variable-length goals always (ML-Agents gives them no goal encoding; where it
    would fail at the first step on a var-len goal next to another goal, we condition on the
    other goals).

    ``extra_inputs``: columns appended to the encoded observations before the hidden layers
    (SAC's Q networks' continuous action, ML-Agents' ``encoded_act_size``); with it, use
    :meth:`encode_inputs` and :meth:`hidden`, not ``forward``.

    ``output_size`` is ``hidden_units`` (``num_layers`` 0 builds one hidden layer, like 1: see
    :class:`MLP`). ``hidden_layers=False``: no hidden layers (nor goal conditioning), the
    encodings joined are the output (``output_size`` is ``inputs_width``): ML-Agents'
    ``ObservationEncoder`` alone, as POCA's multi-agent critic reads each agent. Raises :class:`UnsupportedNetworkError` naming the observation for
    an image smaller than its encoder's minimum or an observation rank it cannot encode.
    """

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        network_settings: NetworkSettings,
        *,
        extra_inputs: int = 0,
        hidden_layers: bool = True,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        if len(observation_specs) == 0:
            raise UnsupportedNetworkError("the behavior has no observations to encode")
        hidden = int(network_settings.hidden_units)
        kind = str(getattr(network_settings.vis_encode_type, "value", network_settings.vis_encode_type))
        conditioned = hidden_layers and goal_conditioned(observation_specs, network_settings)
        kinds: list[str] = []
        inputs: list[nn.Module | None] = []
        self_size = 0  # width of the fixed-size observations' encodings, joined
        goal_slices: list[tuple[int, int]] = []
        for i, spec in enumerate(observation_specs):
            shape = tuple(int(s) for s in spec.shape)
            if len(shape) == 1:
                vec = _VectorInput(shape[0], bool(network_settings.normalize))
                kinds.append(_VECTOR)
                inputs.append(vec)
                width = vec.output_size
            elif len(shape) == 3:
                if kind not in MIN_RESOLUTION:
                    raise UnsupportedNetworkError(
                        f"vis_encode_type {kind!r} is unknown; expected one of {', '.join(MIN_RESOLUTION)}"
                    )
                h, w, c = shape
                minimum = MIN_RESOLUTION[kind]
                if h < minimum or w < minimum:
                    raise UnsupportedNetworkError(
                        f"{_describe(i, spec)} is {h}x{w} pixels; vis_encode_type {kind!r} needs at "
                        f"least {minimum}x{minimum}. Use a larger camera/render texture or an encoder "
                        f"with a smaller minimum (resnet 15, match3 5, fully_connected 1)."
                    )
                kinds.append(_VISUAL)
                inputs.append(_visual_encoder(kind, (c, h, w), hidden))
                width = hidden
            elif is_variable_length(spec):
                kinds.append(_ENTITIES)
                inputs.append(None)  # built below, once the self vector's size is known
                continue
            else:
                raise UnsupportedNetworkError(
                    f"{_describe(i, spec)}: only vector (rank 1), visual (rank 3, HxWxC) and "
                    "variable-length (rank 2, first dimension VARIABLE_SIZE) observations are supported"
                )
            if conditioned and is_goal(spec):
                goal_slices.append((self_size, self_size + width))
            self_size += width
        self.kinds = tuple(kinds)
        self.visual = tuple(k == _VISUAL for k in kinds)
        total = self_size
        self.self_encoder: nn.Linear | None = None
        self.attention: ResidualSelfAttention | None = None
        if _ENTITIES in kinds:
            size = ATTENTION_EMBEDDING_SIZE
            if self_size:
                self.self_encoder = nn.Linear(self_size, size)
                init_tfixup(self.self_encoder, size, generator)
            max_entities = 0
            for i, spec in enumerate(observation_specs):
                if kinds[i] == _ENTITIES:
                    n, s = (int(d) for d in spec.shape)
                    inputs[i] = EntityEmbedding(s, n, size, self_size=size if self_size else 0, generator=generator)
                    max_entities += n
            self.attention = ResidualSelfAttention(size, max_entities, generator=generator)
            total += size
        self.inputs = nn.ModuleList(cast("list[nn.Module]", inputs))
        self.inputs_width = total
        self.goal_slices = tuple(goal_slices)
        self.body: MLP | ConditionalEncoder | _NoHiddenLayers
        if not hidden_layers:
            self.body = _NoHiddenLayers(total + extra_inputs)
        elif conditioned:
            goal_size = sum(end - start for start, end in goal_slices)
            self.body = ConditionalEncoder(
                total + extra_inputs,
                goal_size,
                hidden,
                int(network_settings.num_layers),
                activation=network_settings.activation,
                generator=generator,
            )
        else:
            self.body = MLP(total + extra_inputs, hidden, int(network_settings.num_layers), network_settings.activation)
        self.output_size = self.body.output_size
        _init_encoder(self, generator)

    def forward(self, obs: Sequence[Tensor], *, channels_first: bool = False) -> Tensor:
        """``obs``: one tensor per observation spec, in spec order -> [B, output_size]."""
        return self.hidden(self.encode_inputs(obs, channels_first=channels_first))

    def hidden(self, inputs: Tensor) -> Tensor:
        """The hidden layers on :meth:`encode_inputs`' output (with any ``extra_inputs``
        columns appended) [B, inputs_width + extra_inputs] -> [B, output_size]. A conditioned
        body reads the goal encodings from their columns of ``inputs``."""
        if isinstance(self.body, (MLP, _NoHiddenLayers)):
            return self.body(inputs)
        goals = [inputs[:, start:end] for start, end in self.goal_slices]
        return self.body(inputs, goals[0] if len(goals) == 1 else torch.cat(goals, dim=1))

    def encode_inputs(self, obs: Sequence[Tensor], *, channels_first: bool = False) -> Tensor:
        """Every observation's own encoding, joined in spec order, then the attention's pooled
        entities (when there are var-len observations): the hidden layers' input
        [B, inputs_width]. Var-len observations are [B, n, s] in either layout."""
        encoded = []
        entities: list[tuple[nn.Module, Tensor]] = []
        for x, kind, encoder in zip(obs, self.kinds, self.inputs):
            if kind == _ENTITIES:
                entities.append((encoder, x))
                continue
            if kind == _VISUAL:
                if x.dtype == torch.uint8:
                    x = x.float() * (1.0 / 255.0)
                if not channels_first:
                    x = x.permute(0, 3, 1, 2)
            encoded.append(encoder(x))
        if not entities:
            return encoded[0] if len(encoded) == 1 else torch.cat(encoded, dim=1)
        x_self = None
        if encoded:
            joined = encoded[0] if len(encoded) == 1 else torch.cat(encoded, dim=1)
            x_self = F.silu(cast(nn.Linear, self.self_encoder)(joined))
        mask = torch.cat([entity_mask(x) for _, x in entities], dim=1)
        embeddings = torch.cat([embed(x_self, x) for embed, x in entities], dim=1)
        pooled = cast(ResidualSelfAttention, self.attention)(embeddings, mask)
        return torch.cat([*encoded, pooled], dim=1)

    def normalize(self, obs: Sequence[Tensor]) -> list[Tensor]:
        """The observations as this encoder's normalisers see them (vector ones normalised,
        the rest as given): for networks that share this encoder's statistics (SAC's critics)."""
        return [
            encoder.normalizer(x) if isinstance(encoder, _VectorInput) and encoder.normalizer is not None else x
            for x, encoder in zip(obs, self.inputs)
        ]

    def update_normalization(self, obs: Sequence[Tensor | np.ndarray]) -> None:
        """Merge a batch of every observation into the vector normalisers (visual and
        variable-length: no-op, as ML-Agents); arrays or tensors, one per observation."""
        for x, encoder in zip(obs, self.inputs):
            if isinstance(encoder, _VectorInput) and encoder.normalizer is not None:
                encoder.normalizer.update(x)

    def read_normalizers_of(self, other: ObservationEncoder) -> None:
        """Normalise with ``other``'s vector normalisers (the same modules) wherever both
        normalise the same observation. ML-Agents updates a PPO critic's normalisers with the
        same observations as the actor's, so theirs always hold the same statistics: shared, one
        update per trajectory serves both (the critic's checkpoint keys stay)."""
        for mine, theirs in zip(self.inputs, other.inputs):
            if (
                isinstance(mine, _VectorInput)
                and isinstance(theirs, _VectorInput)
                and mine.normalizer is not None
                and theirs.normalizer is not None
                and mine.output_size == theirs.output_size
            ):
                mine.normalizer = theirs.normalizer


# ---------------------------------------------------------------- recurrent memory


class LSTMMemory(nn.Module):
    """An LSTM over sequences of features, its state carried in a flat memory.

    ``memory_size`` is ML-Agents' (even): the LSTM has ``memory_size / 2`` units and a memory
    row holds the hidden state then the cell state, so ``recurrent_in``/``recurrent_out`` of
    an exported model mean what Unity expects. Initialised as ML-Agents' ``lstm_layer``:
    Xavier-uniform per gate block, zero biases plus 1 on the forget gate (in both bias
    vectors), so a new memory is kept rather than forgotten.
    """

    def __init__(self, input_size: int, memory_size: int, *, generator: torch.Generator | None = None) -> None:
        super().__init__()
        if memory_size <= 0 or memory_size % 2:
            raise UnsupportedNetworkError(f"memory_size must be even and > 0, got {memory_size}")
        self.memory_size = int(memory_size)
        self.hidden_size = self.memory_size // 2
        self.lstm = nn.LSTM(input_size, self.hidden_size, batch_first=True)
        for name, param in self.lstm.named_parameters():
            blocks = param.data.chunk(4, dim=0)  # input, forget, cell, output gates
            for gate, block in enumerate(blocks):
                if name.startswith("weight"):
                    nn.init.xavier_uniform_(block, generator=generator)
                else:
                    block.fill_(1.0 if gate == 1 else 0.0)

    def forward(self, x: Tensor, memories: Tensor | None, sequence_length: int = 1) -> tuple[Tensor, Tensor]:
        """``x`` [N * L, input_size] (N sequences of L = ``sequence_length`` steps, end to
        end), ``memories`` [N, memory_size] at each sequence's start (None: zeros) ->
        (outputs [N * L, memory_size / 2], memories after each sequence [N, memory_size])."""
        sequences = x.reshape(-1, sequence_length, x.shape[-1])
        if memories is None:
            memories = x.new_zeros((sequences.shape[0], self.memory_size))
        h0 = memories[:, : self.hidden_size].unsqueeze(0).contiguous()
        c0 = memories[:, self.hidden_size :].unsqueeze(0).contiguous()
        out, (h, c) = self.lstm(sequences, (h0, c0))
        return out.reshape(-1, self.hidden_size), torch.cat([h[0], c[0]], dim=1)


def memory_module(
    input_size: int, network_settings: NetworkSettings, generator: torch.Generator | None
) -> LSTMMemory | None:
    """The LSTM ``network_settings.memory`` asks for after a body of ``input_size``, or None."""
    memory = network_settings.memory
    return None if memory is None else LSTMMemory(input_size, int(memory.memory_size), generator=generator)


def _no_memory(h: Tensor, sequence_length: int) -> Tensor:
    """The empty memory [N, 0] of a network without one (N sequences of the batch ``h``)."""
    return h.new_zeros((h.shape[0] // max(sequence_length, 1), 0))


# ---------------------------------------------------------------- actor


class ActionDistribution(NamedTuple):
    """The actor's action distribution for a batch. Empty widths where the spec lacks a kind."""

    mean: Tensor  # [B, c] Gaussian means (before any tanh squashing)
    log_std: Tensor  # [1, c] state-independent log standard deviations, or [B, c] (conditional_sigma)
    log_probs: tuple[Tensor, ...]  # one [B, n_i] normalised (masked) log-probs per branch
    memories: Tensor  # [N, k] memory after each of the batch's N sequences ([N, 0] without memory)


class ActorOutput(NamedTuple):
    """Actions sampled (or chosen deterministically) for a batch, with their statistics."""

    continuous: Tensor  # [B, c] float, unclipped sample (or the mean); tanh of it when tanh_squash
    discrete: Tensor  # [B, b] int64 indices
    continuous_log_probs: Tensor  # [B, c]
    discrete_log_probs: Tensor  # [B, b] log-prob of the chosen index per branch
    entropy: Tensor  # [B] mean over continuous dimensions + sum over branches (nats), as ML-Agents
    memories: Tensor  # [N, k] memory after each of the batch's N sequences ([N, 0] without memory)


class Actor(nn.Module):
    """Observations (+ action masks) -> action distribution; see the module docstring.

    ``conditional_sigma``: the continuous log-std is a head on the features (clamped to
    [-20, 2]) instead of a free parameter; ``tanh_squash``: continuous actions are
    ``tanh`` of the Gaussian sample, already in [-1, 1]. SAC's actor has both, as ML-Agents'.
    With ``network_settings.memory`` an LSTM sits between the hidden layers and the heads:
    every call then takes the memories at its sequences' starts (None: zeros) and the
    ``sequence_length`` its batch is cut into (1 when acting).
    """

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        network_settings: NetworkSettings,
        action_spec: ActionSpec,
        *,
        conditional_sigma: bool = False,
        tanh_squash: bool = False,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.continuous_size = int(action_spec.continuous_size)
        self.discrete_branches = tuple(int(n) for n in action_spec.discrete_branches)
        self.conditional_sigma = bool(conditional_sigma)
        self.tanh_squash = bool(tanh_squash)
        if self.continuous_size == 0 and not self.discrete_branches:
            raise UnsupportedNetworkError("the behavior's action spec has no actions")
        if any(n < 1 for n in self.discrete_branches):
            raise UnsupportedNetworkError(f"discrete branch sizes must be >= 1, got {self.discrete_branches}")
        self.encoder = ObservationEncoder(observation_specs, network_settings, generator=generator)
        self.memory = memory_module(self.encoder.output_size, network_settings, generator)
        self.memory_size = 0 if self.memory is None else self.memory.memory_size
        hidden = self.encoder.output_size if self.memory is None else self.memory.hidden_size
        if self.continuous_size:
            self.mean_head = nn.Linear(hidden, self.continuous_size)
            init_dense(self.mean_head, CONTINUOUS_HEAD_GAIN, generator)
            if self.conditional_sigma:
                self.log_std_head = nn.Linear(hidden, self.continuous_size)
                init_dense(self.log_std_head, CONTINUOUS_HEAD_GAIN, generator)
            else:
                self.log_std = nn.Parameter(torch.zeros(1, self.continuous_size))
        if self.discrete_branches:
            self.logits_head = nn.Linear(hidden, sum(self.discrete_branches))
            init_dense(self.logits_head, DISCRETE_HEAD_GAIN, generator)
        initialize(self, network_settings, generator)

    def features(
        self,
        obs: Sequence[Tensor],
        memories: Tensor | None = None,
        sequence_length: int = 1,
        *,
        channels_first: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """What the heads read [B, features], and the memories after each sequence [N, k]."""
        h = self.encoder(obs, channels_first=channels_first)
        if self.memory is None:
            return h, _no_memory(h, sequence_length)
        return self.memory(h, memories, sequence_length)

    def forward(
        self,
        obs: Sequence[Tensor],
        masks: Tensor | None = None,
        *,
        memories: Tensor | None = None,
        sequence_length: int = 1,
        channels_first: bool = False,
    ) -> ActionDistribution:
        """``masks``: [B, m] bool/float, True/1 = allowed, or None (all allowed)."""
        h, memories_out = self.features(obs, memories, sequence_length, channels_first=channels_first)
        # the heads as functional calls, as MLP's layers: a module call costs more than the matmul
        if self.continuous_size:
            mean = F.linear(h, self.mean_head.weight, self.mean_head.bias)
            if self.conditional_sigma:
                log_std = torch.clamp(
                    F.linear(h, self.log_std_head.weight, self.log_std_head.bias), LOG_STD_MIN, LOG_STD_MAX
                )
            else:
                log_std = self.log_std
        else:
            mean = log_std = h.new_zeros((h.shape[0], 0))
        log_probs: tuple[Tensor, ...] = ()
        if self.discrete_branches:
            logits = mask_logits(F.linear(h, self.logits_head.weight, self.logits_head.bias), masks)
            log_probs = branch_log_probs(logits, self.discrete_branches)
        return ActionDistribution(mean, log_std, log_probs, memories_out)

    def continuous_sample(
        self, dist: ActionDistribution, deterministic: bool = False, *, generator: torch.Generator | None = None
    ) -> tuple[Tensor, Tensor]:
        """Continuous actions [B, c] drawn from ``dist`` (``deterministic``: the mode) and their
        log-probs [B, c]. Reparameterised (``mean + noise * std``), so differentiable in the
        network's outputs, as SAC's policy loss needs."""
        mean, log_std = dist.mean, dist.log_std
        if deterministic:
            u = mean
            log_probs = standard_normal_log_prob(torch.zeros_like(mean)) - log_std
        else:
            noise = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
            u = mean + noise * torch.exp(log_std)
            log_probs = standard_normal_log_prob(noise) - log_std
        if self.tanh_squash:
            return torch.tanh(u), log_probs - tanh_log_abs_det(u)
        return u, log_probs

    def entropy(self, dist: ActionDistribution, probs: Sequence[Tensor] | None = None) -> Tensor:
        """[B] mean over continuous dimensions + sum over branches (nats), as ML-Agents (of
        the Gaussian before any squashing). ``probs``: each branch's probabilities, when
        already taken (a draw takes them)."""
        batch = dist.mean.shape[0]
        if self.continuous_size:
            entropy = gaussian_entropy(dist.log_std).mean(dim=1).expand(batch)
        else:
            entropy = dist.mean.new_zeros(batch)
        for i, lp in enumerate(dist.log_probs):
            entropy = entropy + categorical_entropy(lp, None if probs is None else probs[i])
        return entropy

    def sample(
        self,
        obs: Sequence[Tensor],
        masks: Tensor | None,
        deterministic: bool = False,
        *,
        memories: Tensor | None = None,
        sequence_length: int = 1,
        generator: torch.Generator | None = None,
    ) -> ActorOutput:
        """Draw actions (``deterministic``: the means and per-branch argmax) with their
        log-probs and entropy. ``generator`` makes the draws reproducible."""
        dist = self(obs, masks, memories=memories, sequence_length=sequence_length)
        batch = dist.mean.shape[0]
        if self.continuous_size:
            continuous, cont_log_probs = self.continuous_sample(dist, deterministic, generator=generator)
        else:
            continuous = cont_log_probs = dist.mean
        probs = None
        if self.discrete_branches:
            if deterministic:
                discrete = torch.cat([lp.argmax(dim=1, keepdim=True) for lp in dist.log_probs], dim=1)
            else:
                probs = [torch.exp(lp) for lp in dist.log_probs]
                discrete = torch.cat([categorical_sample(p, generator) for p in probs], dim=1)
            disc_log_probs = gather_log_probs(dist.log_probs, discrete)
        else:
            discrete = torch.zeros((batch, 0), dtype=torch.int64, device=dist.mean.device)
            disc_log_probs = dist.mean.new_zeros((batch, 0))
        entropy = self.entropy(dist, probs)
        return ActorOutput(continuous, discrete, cont_log_probs, disc_log_probs, entropy, dist.memories)

    def evaluate_actions(
        self,
        obs: Sequence[Tensor],
        masks: Tensor | None,
        continuous: Tensor,
        discrete: Tensor,
        *,
        memories: Tensor | None = None,
        sequence_length: int = 1,
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Log-probs of given actions and the entropy, differentiable (for the PPO loss):
        continuous [B, c], discrete [B, b] -> ([B, c], [B, b], entropy [B])."""
        dist = self(obs, masks, memories=memories, sequence_length=sequence_length)
        batch = dist.mean.shape[0]
        if self.continuous_size:
            if self.tanh_squash:
                u = atanh_clamped(continuous)
                cont_log_probs = gaussian_log_prob(u, dist.mean, dist.log_std) - tanh_log_abs_det(u)
            else:
                cont_log_probs = gaussian_log_prob(continuous, dist.mean, dist.log_std)
        else:
            cont_log_probs = dist.mean
        if self.discrete_branches:
            disc_log_probs = gather_log_probs(dist.log_probs, discrete)
        else:
            disc_log_probs = dist.mean.new_zeros((batch, 0))
        return cont_log_probs, disc_log_probs, self.entropy(dist)

    def update_normalization(self, obs: Sequence[Tensor | np.ndarray]) -> None:
        """Merge a batch of observations into the encoder's normalisers."""
        self.encoder.update_normalization(obs)


# ---------------------------------------------------------------- critic


class ValueHeads(nn.Module):
    """One linear value head per reward signal: features [B, input_size] -> {name: [B]}.

    Usable on an actor's encoder output for a shared critic (``ValueHeads(actor.encoder.
    output_size, names)(actor.encoder(obs))``).
    """

    def __init__(
        self, input_size: int, stream_names: Sequence[str], *, generator: torch.Generator | None = None
    ) -> None:
        super().__init__()
        self.stream_names = tuple(str(s) for s in stream_names)
        if not self.stream_names:
            raise UnsupportedNetworkError("a critic needs at least one reward signal (value head)")
        if len(set(self.stream_names)) != len(self.stream_names):
            raise UnsupportedNetworkError(f"reward signal names repeat: {self.stream_names}")
        self.linear = nn.Linear(input_size, len(self.stream_names))
        nn.init.xavier_uniform_(self.linear.weight, generator=generator)
        nn.init.zeros_(self.linear.bias)

    def forward(self, h: Tensor) -> dict[str, Tensor]:
        values = self.linear(h)
        return {name: values[:, i] for i, name in enumerate(self.stream_names)}

    def stacked(self, h: Tensor) -> Tensor:
        """[B, S]: the values as columns, in stream order."""
        return self.linear(h)


class Critic(nn.Module):
    """Observations -> one value estimate per reward signal, with its own encoder/normaliser
    (and its own LSTM with ``network_settings.memory``, whose memories the trainer keeps)."""

    def __init__(
        self,
        observation_specs: Sequence[ObservationSpec],
        network_settings: NetworkSettings,
        stream_names: Sequence[str],
        *,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.encoder = ObservationEncoder(observation_specs, network_settings, generator=generator)
        self.memory = memory_module(self.encoder.output_size, network_settings, generator)
        self.memory_size = 0 if self.memory is None else self.memory.memory_size
        features = self.encoder.output_size if self.memory is None else self.memory.hidden_size
        self.value_heads = ValueHeads(features, stream_names, generator=generator)
        initialize(self, network_settings, generator)

    @property
    def stream_names(self) -> tuple[str, ...]:
        return self.value_heads.stream_names

    def features(
        self, obs: Sequence[Tensor], memories: Tensor | None = None, sequence_length: int = 1
    ) -> tuple[Tensor, Tensor]:
        """What the value heads read [B, features], and the memories after each sequence [N, k]."""
        h = self.encoder(obs)
        if self.memory is None:
            return h, _no_memory(h, sequence_length)
        return self.memory(h, memories, sequence_length)

    def forward(
        self, obs: Sequence[Tensor], memories: Tensor | None = None, sequence_length: int = 1
    ) -> dict[str, Tensor]:
        """-> {reward signal name: values [B]}."""
        return self.value_heads(self.features(obs, memories, sequence_length)[0])

    def values_and_memories(
        self, obs: Sequence[Tensor], memories: Tensor | None, sequence_length: int
    ) -> tuple[dict[str, Tensor], Tensor]:
        """({reward signal name: values [B]}, the memories after each sequence [N, k])."""
        features, memories_out = self.features(obs, memories, sequence_length)
        return self.value_heads(features), memories_out

    def stacked(self, obs: Sequence[Tensor], memories: Tensor | None = None, sequence_length: int = 1) -> Tensor:
        """[B, S]: the value estimates as columns, in stream order."""
        return self.value_heads.stacked(self.features(obs, memories, sequence_length)[0])

    def update_normalization(self, obs: Sequence[Tensor | np.ndarray]) -> None:
        """Merge a batch of observations into the encoder's normalisers."""
        self.encoder.update_normalization(obs)
