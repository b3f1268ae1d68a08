"""Entity embeddings and residual self-attention: how a set of entities of variable count (a
variable-length observation, Unity's BufferSensor) becomes one fixed-size feature vector.

Shapes: ``B`` batch rows, ``n`` entities of one observation (its maximum; absent entities are
rows of zeros), ``N`` entities of all var-len observations together, ``s`` entity size, ``E``
embedding size (ML-Agents' observation encoder fixes it at 128, whatever ``hidden_units``).

Architecture and initialisation are ML-Agents 0.28's (``EntityEmbedding``,
``ResidualSelfAttention``, ``get_zero_entities_mask``; our own code), so a configuration tuned
in mlagents-learn starts from the same network:

* each entity, joined with an embedding of the agent's other observations ("self") when there
  are any, goes through Linear(E) + Swish;
* the embeddings of all var-len observations are concatenated along the entity axis, layer
  normalised (no learned gain/bias), projected to queries, keys and values, and attended over
  with 4 heads; scores are scaled by ``1 / sqrt(E)`` (the whole embedding, not a head's size:
  ML-Agents' choice); absent entities' scores are replaced by -1e6;
* the attention output goes through Linear(E), is added to the normalised input (residual),
  layer normalised again, and the present entities are averaged (absent ones are left out of
  the mean; no present entity gives zeros).

Every Linear here draws its weights from N(0, 0.125 / E) with zero biases (ML-Agents' T-Fixup
scheme: small enough for the residual path to start near the identity), not the hidden MLP's
N(0, 1 / fan_in). The modules take a ``generator`` so seeded networks are reproducible.

Kept free of observation bookkeeping so that POCA's multi-agent body can reuse the blocks.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from torch.nn import functional as F

# The embedding size of ML-Agents' observation encoder's attention, fixed whatever hidden_units.
ATTENTION_EMBEDDING_SIZE = 128
NUM_HEADS = 4
# An entity is absent when the sum of its squared features is below this (ML-Agents' threshold).
ABSENT_ENTITY_THRESHOLD = 0.01
# Scores of absent entities before the softmax (finite, so a set with no present entity gives a
# uniform softmax and no NaN).
MASKED_SCORE = -1e6
# Added to the count of present entities before the mean (no present entity: zeros, not NaN).
POOLING_EPSILON = 1e-7
LAYER_NORM_EPSILON = 1e-5


def entity_mask(entities: Tensor) -> Tensor:
    """[B, n, s] -> [B, n] float32: 1 where the entity is absent (its row is zeros: sum of
    squares < 0.01, as ML-Agents tests it), 0 where present. Not differentiable (a selection)."""
    with torch.no_grad():
        return (torch.sum(entities * entities, dim=2) < ABSENT_ENTITY_THRESHOLD).float()


def layer_norm(x: Tensor) -> Tensor:
    """Normalise the last axis to mean 0, variance 1 (biased variance, epsilon 1e-5), without
    learned gain or bias, as ML-Agents' ``LayerNorm`` (written out: opset 9 has no
    LayerNormalization op)."""
    mean = torch.mean(x, dim=-1, keepdim=True)
    centred = x - mean
    var = torch.mean(centred * centred, dim=-1, keepdim=True)
    return centred / torch.sqrt(var + LAYER_NORM_EPSILON)


def init_tfixup(layer: nn.Linear, embedding_size: int, generator: torch.Generator | None) -> None:
    """N(0, 0.125 / embedding_size) weights, zero bias (ML-Agents' attention initialisation)."""
    nn.init.normal_(layer.weight, 0.0, math.sqrt(0.125 / embedding_size), generator=generator)
    nn.init.zeros_(layer.bias)


class EntityEmbedding(nn.Module):
    """Entities [B, n, s] (with an optional "self" vector [B, self_size] joined to each) ->
    embeddings [B, n, E] by one Linear(E) + Swish.

    ``max_entities`` is the observation's fixed first dimension (what the exported graph
    declares). ``self_size`` 0: entities alone (a behavior with no other observation).
    """

    def __init__(
        self,
        entity_size: int,
        max_entities: int,
        embedding_size: int,
        *,
        self_size: int = 0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.entity_size = int(entity_size)
        self.max_entities = int(max_entities)
        self.self_size = int(self_size)
        self.embedding_size = int(embedding_size)
        self.dense = nn.Linear(self.self_size + self.entity_size, self.embedding_size)
        self.init_weights(generator)

    def init_weights(self, generator: torch.Generator | None) -> None:
        init_tfixup(self.dense, self.embedding_size, generator)

    def forward(self, x_self: Tensor | None, entities: Tensor) -> Tensor:
        """``x_self`` [B, self_size] (None when ``self_size`` is 0), ``entities`` [B, n, s]."""
        if self.self_size:
            if x_self is None:
                raise ValueError("this entity embedding joins a self vector to each entity; got None")
            expanded = x_self.unsqueeze(1).expand(-1, entities.shape[1], -1)
            entities = torch.cat([expanded, entities], dim=2)
        return F.silu(self.dense(entities))


class ResidualSelfAttention(nn.Module):
    """Multi-head self-attention over entity embeddings [B, N, E] with a residual connection
    and a masked mean over the entities -> [B, E]. See the module docstring for the maths.

    Written with reshape/permute/matmul/softmax (not torch's fused attention) so that it
    exports to opset 9 and Unity's inference engine runs it.
    """

    def __init__(
        self,
        embedding_size: int,
        max_entities: int,
        *,
        num_heads: int = NUM_HEADS,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.num_heads = int(num_heads)
        self.head_size = int(embedding_size) // self.num_heads
        # ML-Agents uses head_size * heads as the embedding size (sizes not divisible by the
        # heads would not reshape; ours are 128 or hidden_units).
        self.embedding_size = self.head_size * self.num_heads
        if self.embedding_size != embedding_size:
            raise ValueError(f"embedding size {embedding_size} is not divisible by {num_heads} heads")
        self.max_entities = int(max_entities)
        self.fc_q = nn.Linear(embedding_size, embedding_size)
        self.fc_k = nn.Linear(embedding_size, embedding_size)
        self.fc_v = nn.Linear(embedding_size, embedding_size)
        self.fc_out = nn.Linear(embedding_size, embedding_size)
        self.init_weights(generator)

    def init_weights(self, generator: torch.Generator | None) -> None:
        for layer in (self.fc_q, self.fc_k, self.fc_v, self.fc_out):
            init_tfixup(layer, self.embedding_size, generator)

    def forward(self, embeddings: Tensor, mask: Tensor) -> Tensor:
        """``embeddings`` [B, N, E]; ``mask`` [B, N], 1 = absent (:func:`entity_mask`)."""
        n, heads, size = embeddings.shape[1], self.num_heads, self.head_size
        x = layer_norm(embeddings)
        # [B, N, E] -> [B, heads, N, head_size]
        q = self.fc_q(x).reshape(-1, n, heads, size).permute(0, 2, 1, 3)
        k = self.fc_k(x).reshape(-1, n, heads, size).permute(0, 2, 3, 1)  # [B, heads, head_size, N]
        v = self.fc_v(x).reshape(-1, n, heads, size).permute(0, 2, 1, 3)
        key_mask = mask.reshape(-1, 1, 1, n)
        scores = (1.0 - key_mask) * torch.matmul(q, k) / math.sqrt(self.embedding_size) + key_mask * MASKED_SCORE
        attended = torch.matmul(torch.softmax(scores, dim=3), v)  # [B, heads, N, head_size]
        attended = attended.permute(0, 2, 1, 3).reshape(-1, n, self.embedding_size)
        out = layer_norm(self.fc_out(attended) + x)
        present = (1.0 - mask).reshape(-1, n, 1)
        return torch.sum(out * present, dim=1) / (torch.sum(present, dim=1) + POOLING_EPSILON)
