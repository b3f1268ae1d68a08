"""Any Gymnasium environment as an ``mlagents_envs`` BaseEnv: ``env_path: gymnasium:<env id>``.

``<env id>`` is a registered id (``CartPole-v1``) or ``module:Id`` (``ale_py:ALE/Pong-v5``:
``module`` is imported first, which registers ``Id``). Each worker runs ``copies`` copies of
``gymnasium.make(Id, **env_kwargs)``, stepped in turn, as one behavior with one agent per copy.
gymnasium is an optional extra, imported only when one of these functions is called.

Behavior: ``Id?team=0``, every character of ``Id`` other than letters, digits, ``_ . -``
replaced by ``_`` (``ALE/Pong-v5`` -> ``ALE_Pong-v5?team=0``).

Episodes: ``terminated`` ends the agent's episode (no bootstrap); ``truncated`` (and not
terminated) ends it as interrupted (bootstrapped, as ML-Agents' max step). The terminal row
carries that step's final observation and reward; the copy is reset at once and its next
episode starts, under a new agent id, in the same step. Copy i of worker w is first reset with
a seed derived from (seed, w, i); later resets continue gymnasium's generator.

Observations (one per leaf, float32):

=====================================  ==================================================
Gymnasium space                        ML-Agents observation
=====================================  ==================================================
``Box`` float, rank 1                  vector of the same size
``Box`` float, any other rank          vector, flattened (C order)
``Box`` uint8, (H, W, C)               image (H, W, C), values / 255
``Box`` uint8, (H, W)                  image (H, W, 1), values / 255
``Box`` other integer or bool dtype    vector of the raw values, flattened (not scaled)
``Discrete(n, start)``                 one-hot vector of n
``MultiDiscrete(nvec, start)``         one-hots concatenated, sum(nvec) values
``MultiBinary(n)``                     vector of 0/1, flattened
``Dict``                               one observation per entry, in the space's key order,
                                       named after the key; entry ``action_mask`` (top
                                       level) is the action mask, not an observation
``Tuple``                              one observation per element, named ``0``, ``1``...
nested ``Dict``/``Tuple``              flattened depth-first, named ``key/0/...``
``Text``, ``Graph``, ``Sequence``,     refused (GymnasiumEnvError)
``OneOf``, anything else
=====================================  ==================================================

Actions (the policy acts with continuous values in [-1, 1] and discrete branch choices):

=====================================  ==================================================
Gymnasium space                        ML-Agents action
=====================================  ==================================================
``Box`` float, finite bounds           continuous, prod(shape) values; a -> low + (a + 1)
                                       / 2 * (high - low), cast and reshaped to the Box
``Box`` with an infinite bound         refused (the policy's actions are bounded)
``Box`` integer dtype                  refused (use Discrete or MultiDiscrete)
``Discrete(n, start)``                 one branch of n (start added back)
``MultiDiscrete(nvec, start)``         one branch per element, flattened
``MultiBinary(n)``                     n branches of 2
``Tuple``/``Dict`` of the above        hybrid: continuous parts, then discrete branches,
                                       each in order, rebuilt into the tuple/dict
=====================================  ==================================================

Action masks: ``info["action_mask"]`` (from reset or step) or the Dict observation's
``action_mask`` entry (which wins when both exist), 1/True = available, one flat array over
all choices branch after branch or one array per branch; ignored for continuous-only actions.

Environment parameters (``environment_parameters``, a curriculum's lessons) reach each copy as
``reset(options={key: float})`` at every reset once set, the first included (a sampler is drawn
anew per reset); ``info`` is otherwise ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs.builtin._core import BuiltinEnv, ParameterInput
from envs.gymnasium.errors import GymnasiumEnvError
from envs.gymnasium.specs import ActionSource, GymnasiumSpecs, ObservationSource

#: How to install gymnasium when it is missing.
INSTALL_HINT = "install the extra with `pip install -c constraints.txt -e '.[gymnasium]'`"


def gymnasium_env(
    env_id: str,
    *,
    copies: int,
    seed: int,
    worker_id: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    env_parameters: Mapping[str, ParameterInput] | None = None,
) -> BuiltinEnv:
    """``copies`` copies of ``env_id`` as one behavior, reset and ready for ``get_steps``.

    seed (>= 0) and worker_id (>= 0) derive each copy's seed; env_kwargs go to every
    ``gymnasium.make``; env_parameters are the first resets' options. Raises
    GymnasiumEnvError naming the env for anything it cannot use.
    """
    _require_gymnasium(env_id)
    from envs.gymnasium.vector_env import GymnasiumVectorEnv

    return GymnasiumVectorEnv(
        env_id, copies=copies, seed=seed, worker_id=worker_id, env_kwargs=env_kwargs, env_parameters=env_parameters
    )


def check_gymnasium(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> GymnasiumSpecs:
    """Make one copy, map its spaces, close it: the specs a run will see, or GymnasiumEnvError
    naming the env and the problem, before any work is started. Nothing is reset or stepped."""
    _require_gymnasium(env_id)
    from envs.gymnasium.making import make_copy
    from envs.gymnasium.spaces import map_spaces

    env = make_copy(env_id, env_kwargs)
    try:
        return map_spaces(env_id, env).specs
    finally:
        env.close()


def _require_gymnasium(env_id: str) -> None:
    try:
        import gymnasium  # noqa: F401  (only whether it imports)
    except ImportError as error:
        raise GymnasiumEnvError(f"gymnasium:{env_id}: gymnasium is not installed; {INSTALL_HINT}") from error


__all__ = [
    "ActionSource",
    "GymnasiumEnvError",
    "GymnasiumSpecs",
    "ObservationSource",
    "check_gymnasium",
    "gymnasium_env",
]
