"""A worker's step through each behavior's processor and policy, in the three parts that the env
manager and the Ray env runner share: read it (with the actions it follows), decide the next
actions, record it.

Both decide before they record, so a build simulates the next step while this one is recorded;
deciding first gives the policy the memories recording will leave (``UnrecordedStep``), so the
actions and trajectories are those of recording first (``recorded=True``, ``--debug``).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Mapping
from typing import NamedTuple, Protocol

from mlagents_envs.base_env import ActionTuple, DecisionSteps, TerminalSteps

from envs.workers import WorkerResult
from envs.workers.records import TakenActions
from orchestration.acting import Deciding, decide
from processors import ActionInfo, AgentManager, UnrecordedStep
from stats import Timers
from stats.timer_names import POLICY_EVALUATE
from trainers.networks.policy import TorchPolicy

#: The actions each worker's agents of a behavior were last sent, by (worker id, behavior id).
LastActions = dict[tuple[int, str], ActionInfo]


class Acting(Protocol):
    """What a step needs of a behavior: its processor and the policy that acts for it."""

    @property
    def manager(self) -> AgentManager: ...

    @property
    def policy(self) -> TorchPolicy: ...


class BehaviorStep(NamedTuple):
    """One worker's step of one behavior, as read from its result."""

    worker_id: int
    behavior_id: str
    behavior: Acting
    decision: DecisionSteps
    terminal: TerminalSteps
    previous: ActionInfo | None  # the actions the step follows
    taken: TakenActions | None  # the actions its agents took themselves (a policy client's)


class EnvStatAggregation(NamedTuple):
    """An aggregation number from a pool as the ``.value`` that ``record_environment_stats`` reads."""

    value: int


def read_steps(result: WorkerResult, behaviors: Mapping[str, Acting], last_actions: LastActions) -> list[BehaviorStep]:
    """The result's steps of every behavior in ``behaviors`` (others are skipped: their spec
    came in a generation that was dropped), each with the actions it follows, taken out of
    ``last_actions``."""
    steps = []
    for behavior_id, record in result.steps.items():
        behavior = behaviors.get(behavior_id)
        if behavior is None:
            continue
        decision, terminal = record.to_steps()
        previous = last_actions.pop((result.worker_id, behavior_id), None)
        steps.append(BehaviorStep(result.worker_id, behavior_id, behavior, decision, terminal, previous, record.taken))
    return steps


def decide_steps(
    steps: list[BehaviorStep], last_actions: LastActions, *, recorded: bool, timers: Timers | None = None
) -> dict[int, dict[str, ActionTuple]]:
    """Each behavior's actions for its deciding agents in ``steps`` (one batch a behavior, across
    workers), by worker id and behavior id, and remembered in ``last_actions``. ``recorded``:
    the steps are already recorded (else their memories are taken as recording will leave them)."""
    deciding: dict[str, list[Deciding]] = defaultdict(list)
    behaviors: dict[str, Acting] = {}
    for step in steps:
        if len(step.decision) > 0:
            unrecorded = None if recorded else UnrecordedStep(step.previous, step.terminal.agent_id)
            deciding[step.behavior_id].append(Deciding(step.worker_id, step.decision, step.taken, unrecorded))
            behaviors[step.behavior_id] = step.behavior
    actions: dict[int, dict[str, ActionTuple]] = defaultdict(dict)
    for behavior_id, parts in deciding.items():
        behavior = behaviors[behavior_id]
        with timers.scope(POLICY_EVALUATE) if timers is not None else contextlib.nullcontext():
            infos = decide(behavior.policy, behavior.manager, parts)
        for part, info in zip(parts, infos, strict=True):
            last_actions[(part.worker_id, behavior_id)] = info
            actions[part.worker_id][behavior_id] = info.env_actions
    return actions


def record_step(step: BehaviorStep) -> int:
    """The step into its behavior's processor; returns its agent steps (decisions and ends)."""
    step.behavior.manager.add_experiences(step.decision, step.terminal, step.worker_id, step.previous)
    return len(step.decision) + len(step.terminal)


def record_env_stats(result: WorkerResult, behaviors: Mapping[str, Acting]) -> None:
    """The environment's custom stats of the result, to every behavior's stats."""
    if not result.env_stats:
        return
    stats = {key: [(v, EnvStatAggregation(a)) for v, a in values] for key, values in result.env_stats.items()}
    for behavior in behaviors.values():
        behavior.manager.record_environment_stats(stats, result.worker_id)
