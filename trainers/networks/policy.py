"""The torch policy the env manager acts with: batched inference over all agents of a
behavior that need a decision, returning a :class:`processors.ActionInfo`.

The policy holds only the actor (the critic belongs to the optimiser, as in ML-Agents) and
a ``torch.Generator`` for its draws, so a seed fixes both the initial weights and every
sampled action; nothing global (torch's default RNG, thread counts) is touched.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, TypeAlias

import attrs
import numpy as np
import torch
from mlagents_envs.base_env import ActionTuple, BehaviorSpec
from torch import Tensor

from processors.trajectory import ActionInfo
from trainers import seeding
from trainers.networks.actor_critic import Actor, Normalizer
from trainers.seeding import Stream

if TYPE_CHECKING:
    from trainers.settings import NetworkSettings

# Unity's actuators expect [-1, 1]; samples are clipped to [-3, 3] and scaled by 1/3, as
# ML-Agents and the ONNX contract do (a tanh-squashed actor's samples are already in range).
ACTION_CLIP = 3.0

Weights: TypeAlias = dict[str, Tensor]


@attrs.frozen
class NormalizerStats:
    """The actor's observation normalisers alone (their ``state_dict`` entries, CPU copies).

    A trainer publishes these after the trajectories it takes, between the full weights of its
    updates: ML-Agents acts with the trainer's own policy, whose normalisers move with every
    trajectory while its weights change only with an update, and the acting copies here follow
    the same statistics."""

    state: Weights


PolicyUpdate: TypeAlias = Weights | NormalizerStats  # what a policy queue carries


def newest_updates(published: Sequence[PolicyUpdate]) -> tuple[Weights | None, NormalizerStats | None]:
    """Of the updates drained from a policy queue (oldest first), those still to apply: the
    newest full weights, and the newest normaliser statistics published after them (each
    holds every normaliser, so older ones are superseded)."""
    weights: Weights | None = None
    stats: NormalizerStats | None = None
    for update in published:
        if isinstance(update, NormalizerStats):
            stats = update
        else:
            weights, stats = update, None
    return weights, stats


class TorchPolicy:
    """Actor + sampling for one behavior.

    ``seed`` fixes the initial weights and the stream of sampled actions (None: random).
    ``conditional_sigma``/``tanh_squash``: the actor's continuous head (see
    :class:`trainers.networks.actor_critic.Actor`; SAC sets both). ``memory_size`` is the LSTM memory's
    width (``network_settings.memory``; 0 without): the policy stays a pure function, memories
    in with the observations and out with the actions; the processor keeps them per agent.
    """

    def __init__(
        self,
        behavior_spec: BehaviorSpec,
        network_settings: NetworkSettings,
        *,
        seed: int | None = None,
        device: str | torch.device = "cpu",
        conditional_sigma: bool = False,
        tanh_squash: bool = False,
    ) -> None:
        self.behavior_spec = behavior_spec
        self.network_settings = network_settings
        self.device = torch.device(device)
        self.continuous_size = int(behavior_spec.action_spec.continuous_size)
        self.discrete_branches = tuple(int(n) for n in behavior_spec.action_spec.discrete_branches)
        self._obs_shapes = tuple(tuple(int(s) for s in spec.shape) for spec in behavior_spec.observation_specs)
        self.seed = int(seed) if seed is not None else int(torch.Generator().seed())
        self.actor = Actor(
            behavior_spec.observation_specs,
            network_settings,
            behavior_spec.action_spec,
            conditional_sigma=conditional_sigma,
            tanh_squash=tanh_squash,
            generator=seeding.generator(self.seed, Stream.POLICY_INIT),
        )
        self.actor.to(self.device).eval()
        self.memory_size = self.actor.memory_size
        self._generator = seeding.generator(self.seed, Stream.POLICY_SAMPLING, self.device)
        # decisions still to take uniformly at random before acting with the actor (set on a
        # training run's acting copy: SAC's buffer_init_actions: uniform); counts down per agent
        self.uniform_decisions = 0
        # found once: they are published after every trajectory a trainer takes
        self._normalizers = {name: m for name, m in self.actor.named_modules() if isinstance(m, Normalizer)}

    @contextlib.contextmanager
    def training(self) -> Iterator[None]:
        """The actor in training mode while an update differentiates it (cuDNN's LSTM has no
        backward in eval mode; nothing else differs, the networks have no dropout or batch
        norm), and in the mode it was in after (eval, to act; nested, as behavioral cloning's
        update inside SAC's loop, still training)."""
        was_training = self.actor.training
        self.actor.train()
        try:
            yield
        finally:
            self.actor.train(was_training)

    def inference_copy(self, *, seed: int, device: str | torch.device = "cpu") -> TorchPolicy:
        """A policy of the same kind with this one's current weights, acting from its own
        stream ``seed`` on ``device`` (the env manager's copy; the trainer keeps training this one)."""
        return self.blueprint().build(seed=seed, device=device)

    def blueprint(self) -> PolicyBlueprint:
        """Everything another process needs to build this policy (picklable)."""
        return PolicyBlueprint(
            self.behavior_spec,
            self.network_settings,
            self.actor.conditional_sigma,
            self.actor.tanh_squash,
            self.get_weights(),
        )

    def reseed(self, seed: int) -> None:
        """Restart the stream of sampled actions from ``seed`` (weights unchanged)."""
        self._generator.manual_seed(seeding.stream_seed(int(seed), Stream.POLICY_SAMPLING))

    # ------------------------------------------------------------ conversions

    def obs_to_tensors(self, obs: Sequence[np.ndarray]) -> list[Tensor]:
        """Observations, one [N, *shape] array per sensor in spec order, as tensors on the
        policy's device (float32; uint8 images stay uint8 and are scaled inside the network)."""
        if len(obs) != len(self._obs_shapes):
            raise ValueError(f"expected {len(self._obs_shapes)} observation arrays (one per sensor), got {len(obs)}")
        tensors = []
        for i, (o, shape) in enumerate(zip(obs, self._obs_shapes)):
            o = np.asarray(o)
            if o.shape[1:] != shape:
                raise ValueError(
                    f"observation {i}: expected shape [N, {', '.join(map(str, shape))}], got {list(o.shape)}"
                )
            if o.dtype != np.uint8 and o.dtype != np.float32:
                o = o.astype(np.float32)
            tensors.append(torch.as_tensor(o, device=self.device))
        return tensors

    def masks_to_tensor(self, action_masks: np.ndarray | None) -> Tensor | None:
        """[N, sum(branches)] bool, True = allowed, as a tensor (None when no discrete branch
        or no mask: everything allowed)."""
        if action_masks is None or not self.discrete_branches:
            return None
        return torch.as_tensor(np.asarray(action_masks, dtype=bool), device=self.device)

    def memories_to_tensor(self, memories: np.ndarray | None, n: int) -> Tensor | None:
        """[N, memory_size] memories as a tensor (None: no memory, or zeros for every agent)."""
        if not self.memory_size or memories is None:
            return None
        memories = np.asarray(memories, dtype=np.float32)
        if memories.shape != (n, self.memory_size):
            raise ValueError(f"memories: expected shape [{n}, {self.memory_size}], got {list(memories.shape)}")
        return torch.as_tensor(memories, device=self.device)

    # ------------------------------------------------------------ inference

    def act(
        self,
        obs: Sequence[np.ndarray],
        action_masks: np.ndarray | None,
        agent_ids: np.ndarray,
        memories: np.ndarray | None = None,
        deterministic: bool | None = None,
    ) -> ActionInfo:
        """Actions for the N agents whose observations are rows of ``obs``, in one batch.

        ``action_masks``: [N, sum(branches)] bool, True where allowed (None: all allowed).
        ``memories``: [N, memory_size], what each agent's previous decision returned (zeros
        at an episode's start; None: zeros). ``deterministic`` (default: the network
        settings' value) takes the Gaussian means and each branch's most likely action.
        """
        if deterministic is None:
            deterministic = bool(self.network_settings.deterministic)
        agent_ids = np.asarray(agent_ids, dtype=np.int32)
        n = agent_ids.shape[0]
        if n == 0:
            return ActionInfo.empty(self.continuous_size, len(self.discrete_branches), self.memory_size)
        if self.uniform_decisions > 0:
            self.uniform_decisions = max(0, self.uniform_decisions - n)
            continuous, discrete = self._uniform_actions(n, action_masks)
            return self.act_taken(obs, action_masks, agent_ids, memories, continuous, discrete)
        with torch.inference_mode():
            out = self.actor.sample(
                self.obs_to_tensors(obs),
                self.masks_to_tensor(action_masks),
                deterministic,
                memories=self.memories_to_tensor(memories, n),
                generator=self._generator,
            )
            continuous = _numpy(out.continuous)
            discrete = _numpy(out.discrete).astype(np.int32)
            if self.actor.tanh_squash:
                env_continuous = continuous  # already in [-1, 1]
            else:
                # float32 clip and divide, the same arithmetic as the exported graph's (the clip
                # as np.minimum/np.maximum: np.clip's numbers, cheaper to call)
                clipped = np.minimum(np.maximum(continuous, -ACTION_CLIP), ACTION_CLIP)
                env_continuous = clipped / np.float32(ACTION_CLIP)
            info = ActionInfo(
                agent_ids=agent_ids,
                env_actions=ActionTuple(continuous=env_continuous, discrete=discrete),
                continuous_actions=continuous,
                discrete_actions=discrete,
                continuous_log_probs=_numpy(out.continuous_log_probs),
                discrete_log_probs=_numpy(out.discrete_log_probs),
                entropy=_numpy(out.entropy),
                memories=_numpy(out.memories),
            )
        return info

    def _uniform_actions(self, n: int, action_masks: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """``n`` agents' actions drawn uniformly from the action space, as the environment takes
        them: continuous in [-1, 1], each branch among its allowed actions (all of them where
        a mask allows none, as the masked policy does), from the policy's own stream."""
        generator, device = self._generator, self.device
        with torch.inference_mode():
            continuous = torch.rand((n, self.continuous_size), generator=generator, device=device) * 2.0 - 1.0
            masks = self.masks_to_tensor(action_masks)
            columns = [torch.zeros((n, 0), dtype=torch.int64, device=device)]
            offset = 0
            for size in self.discrete_branches:
                allowed = torch.ones((n, size), device=device)
                if masks is not None:
                    branch = masks[:, offset : offset + size].to(torch.float32)
                    allowed = torch.where(branch.sum(dim=1, keepdim=True) > 0, branch, allowed)
                columns.append(torch.multinomial(allowed, 1, generator=generator))
                offset += size
            discrete = torch.cat(columns, dim=1)
        return _numpy(continuous), _numpy(discrete).astype(np.int32)

    def act_taken(
        self,
        obs: Sequence[np.ndarray],
        action_masks: np.ndarray | None,
        agent_ids: np.ndarray,
        memories: np.ndarray | None,
        continuous: np.ndarray,
        discrete: np.ndarray,
    ) -> ActionInfo:
        """The :class:`ActionInfo` of actions the agents already took (an external client
        chose them), with this policy's log-probabilities of them, so the trainer learns from
        them as from its own samples.

        ``continuous``: [N, c] as the environment received them, in [-1, 1] (the sample they
        stand for is 3x that, or the value itself for a tanh-squashed actor); ``discrete``:
        [N, b] branch indices. Other arguments as :meth:`act`.
        """
        agent_ids = np.asarray(agent_ids, dtype=np.int32)
        n = agent_ids.shape[0]
        if n == 0:
            return ActionInfo.empty(self.continuous_size, len(self.discrete_branches), self.memory_size)
        env_continuous = np.clip(np.asarray(continuous, np.float32), -1.0, 1.0)
        sample = env_continuous if self.actor.tanh_squash else env_continuous * np.float32(ACTION_CLIP)
        discrete = np.asarray(discrete, np.int32)
        with torch.inference_mode():
            obs_t = self.obs_to_tensors(obs)
            masks_t = self.masks_to_tensor(action_masks)
            memories_t = self.memories_to_tensor(memories, n)
            cont_log_probs, disc_log_probs, entropy = self.actor.evaluate_actions(
                obs_t,
                masks_t,
                torch.as_tensor(sample, device=self.device),
                torch.as_tensor(discrete, device=self.device).long(),
                memories=memories_t,
            )
            if self.memory_size:
                next_memories = self.actor(obs_t, masks_t, memories=memories_t).memories.cpu().numpy()
            else:
                next_memories = np.zeros((n, 0), np.float32)
        return ActionInfo(
            agent_ids=agent_ids,
            env_actions=ActionTuple(continuous=env_continuous, discrete=discrete),
            continuous_actions=sample,
            discrete_actions=discrete,
            continuous_log_probs=cont_log_probs.cpu().numpy(),
            discrete_log_probs=disc_log_probs.cpu().numpy(),
            entropy=entropy.cpu().numpy(),
            memories=next_memories,
        )

    def update_normalization(self, obs: Sequence[np.ndarray]) -> None:
        """Merge a batch of observations (one [T, *shape] array per sensor) into the actor's
        running normalisers (no-op unless ``normalize``)."""
        if not self.network_settings.normalize:
            return
        self.actor.update_normalization(obs)

    # ------------------------------------------------------------ weights

    def get_weights(self) -> dict[str, Tensor]:
        """CPU copies of the actor's state (parameters and normaliser), safe to hand to
        another thread: later training does not change them."""
        return {k: v.detach().to("cpu", copy=True) for k, v in self.actor.state_dict().items()}

    def load_weights(self, weights: Mapping[str, Tensor]) -> None:
        """Replace the actor's state with ``weights`` (from :meth:`get_weights`); strict."""
        self.actor.load_state_dict(dict(weights), strict=True)

    def normalizer_stats(self) -> NormalizerStats | None:
        """CPU copies of the actor's normalisers (None when it has none: ``normalize`` off, or
        no vector observation)."""
        state = {
            f"{name}.{key}": value.detach().to("cpu", copy=True)
            for name, module in self._normalizers.items()
            for key, value in module.statistics().items()
        }
        return NormalizerStats(state) if state else None

    def load_normalizer_stats(self, stats: NormalizerStats) -> None:
        """Set the actor's normalisers from :meth:`normalizer_stats` of an equal policy; the
        weights stay. Every normaliser must be there, and nothing else."""
        parts: dict[str, dict[str, Tensor]] = {name: {} for name in self._normalizers}
        for key, value in stats.state.items():
            name, _, field = key.rpartition(".")
            if name not in parts:
                raise KeyError(f"normaliser statistics name {key!r}, which this policy's actor does not have")
            parts[name][field] = value
        for name, module in self._normalizers.items():
            module.load_statistics(parts[name])


@attrs.frozen
class PolicyBlueprint:
    """A policy as plain data (spec, settings, head kind, CPU weights): how a Ray env runner
    on another machine gets an equal policy to act with."""

    behavior_spec: BehaviorSpec
    network_settings: NetworkSettings
    conditional_sigma: bool
    tanh_squash: bool
    weights: dict[str, Tensor]

    def build(self, *, seed: int, device: str | torch.device = "cpu") -> TorchPolicy:
        """A policy with these weights, sampling from its own stream ``seed``."""
        policy = TorchPolicy(
            self.behavior_spec,
            self.network_settings,
            seed=seed,
            device=device,
            conditional_sigma=self.conditional_sigma,
            tanh_squash=self.tanh_squash,
        )
        policy.load_weights(self.weights)
        return policy


def _numpy(tensor: Tensor) -> np.ndarray:
    """``tensor`` as an array, without the ``.cpu()`` dispatch where it is there already (a
    one-agent decision is mostly such per-op costs)."""
    return tensor.numpy() if tensor.device.type == "cpu" else tensor.cpu().numpy()
