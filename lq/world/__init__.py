"""The LIGHT game engine (paper 4.1): graph state, the quest verbs, valid actions, act goals. Pure Python."""

from lq.world.actions import VERBS, Action, StepResult, execute, parse, step, valid_actions
from lq.world.goals import ActGoal, GoalError
from lq.world.state import Node, World

__all__ = [
    "VERBS",
    "ActGoal",
    "Action",
    "GoalError",
    "Node",
    "StepResult",
    "World",
    "execute",
    "parse",
    "step",
    "valid_actions",
]
