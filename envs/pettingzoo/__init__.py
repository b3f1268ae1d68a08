"""Any PettingZoo environment as an ``mlagents_envs`` BaseEnv: ``env_path: pettingzoo:<module>``.

``<module>`` is a module path (``mpe2.simple_spread_v3``, ``pettingzoo.classic.connect_four_v3``),
imported when the environment is made; ``env_kwargs`` go to its constructor. pettingzoo is an
optional extra, imported only when one of these functions is called.

API: a module with ``parallel_env`` is driven through the parallel API, one with only ``env``
through the AEC (turn-based) API. With both (most PettingZoo modules), ``env()`` is made and
its ``metadata["is_parallelizable"]`` decides: True (MPE, butterfly, SISL) -> parallel; False
or missing (classic games: connect_four, chess, go...) -> AEC.

Behaviors, from agent names: the part before a trailing ``_<n>`` (``piston_3`` -> ``piston``,
``agent_0`` -> ``agent``, ``adversary_1`` -> ``adversary``); a name without ``_<n>`` is its own
behavior. Agents of one behavior must share observation and action spaces (refused otherwise);
each is one slot of it, with a fresh agent id every episode. Behaviors are team 0
(``agent?team=0``), except a turn-based (AEC) game of exactly two agents of one behavior,
whose players are two teams of it: connect_four's ``player_0`` is ``player?team=0`` and
``player_1`` is ``player?team=1``, so ML-Agents' ghost trainer (self-play, ELO) works
unchanged. (Go's ``black_0``/``white_0`` are two behaviors, trained separately.)

Spaces map as in ``envs.gymnasium`` (one observation per leaf of a Dict/Tuple, the Dict entry
``action_mask`` or ``info["action_mask"]`` as the action mask; Box actions scaled from
[-1, 1]...).

Steps, parallel API: every live agent decides at every step. An agent whose ``terminations``
or ``truncations`` entry is True, or that vanishes from ``env.agents``, ends its episode: a
terminal row with that step's final observation and reward, interrupted = truncated and not
terminated (vanished without a flag: terminated). Agents that appear start an episode. When no
live agent is left, the environment is reset in the same step and every agent starts a new
episode with a fresh id.

Steps, AEC API: only the agent to move (``env.agent_selection``) decides; one ``step()`` plays
its move, then advances to the next agent that needs a decision, giving every terminated or
truncated agent on the way its terminal row (and PettingZoo's ``step(None)``). An agent's
reward is what ``env.last()`` reports on its turn, all it received since it last acted, so
rewards given between its turns come with its next row and a game's final rewards (+1/-1)
with the terminal rows. When the game is over for all, it is reset and the first decision of
the next game is reported in the same step. An agent whose game ends before its first turn
reports nothing.

Groups (``groups=True``, for POCA): every agent is in one group (group id 1, ML-Agents'
SimpleMultiAgentGroup); each agent's own rows carry reward 0, and every reward an agent
receives is shared out as group reward among the agents of the episode that have not ended
before that step, so each step's group reward is the mean of the agents' rewards (rewards are
not counted twice: POCA adds group reward to an agent's own). Not for two-player games (their
teams are opponents). Default False: own rewards, no group.

Seeds: the first reset gets a seed derived from (seed, worker_id); later resets pass none, so
the environment continues its own generator. Environment parameters (``environment_parameters``,
a curriculum's lessons) reach every reset once set as ``reset(options={key: float})``, the first
included (a sampler drawn anew per reset). ``close()`` closes the environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from envs.builtin._core import BuiltinEnv, ParameterInput
from envs.pettingzoo.errors import PettingZooEnvError
from envs.pettingzoo.specs import Api, PettingZooBehavior, PettingZooSpecs

#: How to install pettingzoo when it is missing.
INSTALL_HINT = "install the extra with `pip install -c constraints.txt -e '.[pettingzoo]'`"


def pettingzoo_env(
    target: str,
    *,
    seed: int,
    worker_id: int = 0,
    env_kwargs: Mapping[str, Any] | None = None,
    env_parameters: Mapping[str, ParameterInput] | None = None,
    groups: bool = False,
) -> BuiltinEnv:
    """``target``'s environment with its agents as ML-Agents behaviors (module docstring), reset
    and ready for ``get_steps``.

    seed (>= 0) and worker_id (>= 0) derive the first reset's seed; env_kwargs go to the
    constructor; env_parameters are the resets' options; groups puts every agent in one group.
    Raises PettingZooEnvError naming the target for anything it cannot use.
    """
    _require_pettingzoo(target)
    from envs.pettingzoo.environment import PettingZooEnv

    return PettingZooEnv(
        target,
        seed=seed,
        worker_id=worker_id,
        env_kwargs=env_kwargs,
        env_parameters=env_parameters,
        groups=groups,
    )


def check_pettingzoo(target: str, env_kwargs: Mapping[str, Any] | None = None) -> PettingZooSpecs:
    """Make the environment, map its agents' spaces, close it: the behaviors and specs a run
    will see, or PettingZooEnvError naming the target and the problem, before any work is
    started. Nothing is reset or stepped."""
    _require_pettingzoo(target)
    from envs.pettingzoo.making import make_env
    from envs.pettingzoo.roster import build_roster

    made = make_env(target, env_kwargs)
    try:
        return build_roster(target, made.api, made.env).specs
    finally:
        made.env.close()


def _require_pettingzoo(target: str) -> None:
    try:
        import pettingzoo  # noqa: F401  (only whether it imports)
    except ImportError as error:
        raise PettingZooEnvError(f"pettingzoo:{target}: pettingzoo is not installed; {INSTALL_HINT}") from error


__all__ = [
    "Api",
    "PettingZooBehavior",
    "PettingZooEnvError",
    "PettingZooSpecs",
    "check_pettingzoo",
    "pettingzoo_env",
]
