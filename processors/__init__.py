"""Steps in, trajectories out: AgentProcessor, AgentManager and their queues and types."""

from processors.agent_processor import AgentManager, AgentProcessor, UnrecordedStep
from processors.behavior_id import BehaviorIdentifiers, create_name_behavior_id, get_global_agent_id
from processors.queue import AgentManagerQueue
from processors.trajectory import ActionInfo, AgentExperience, Trajectory

__all__ = [
    "ActionInfo",
    "AgentExperience",
    "AgentManager",
    "AgentManagerQueue",
    "AgentProcessor",
    "BehaviorIdentifiers",
    "Trajectory",
    "UnrecordedStep",
    "create_name_behavior_id",
    "get_global_agent_id",
]
