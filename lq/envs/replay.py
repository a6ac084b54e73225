"""Demonstrations replayed through the engine exactly as :class:`lq.envs.quest_env.QuestEnv` plays them: the
supervised examples of behaviour cloning."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from lq.data.demos import PARTNER
from lq.envs.episode import QuestInstance, new_slot, play_turn, slot_context
from lq.world import valid_actions


@dataclass
class DemoTurn:
    """One self turn of a demonstration as the environment shows it: the context, what was done, the valid actions."""

    context: str
    kind: str  # "action" or "speech"
    text: str
    valid_actions: list[str]


def demonstration_turns(
    instance: QuestInstance, motivations: Sequence[str] = ("short", "mid", "long")
) -> list[DemoTurn]:
    """Replay a demonstration through the engine exactly as :class:`QuestEnv` plays (the partner's turns, then the
    self's): the supervised examples of behaviour cloning. Stops where the act goal is reached, as an episode does."""
    if instance.demo is None:
        return []
    slot = new_slot(instance)
    turns = []
    for i, act in enumerate(instance.demo.acts):
        kind = "action" if act.type == "action" else "speech"
        if instance.demo.speaker(i) == PARTNER:
            play_turn(slot, "partner", kind, act.text)
        else:
            turns.append(
                DemoTurn(
                    slot_context(slot, "self", motivations), kind, act.text, list(valid_actions(slot.world, slot.me))
                )
            )
            play_turn(slot, "self", kind, act.text)
        if slot.act_goal is not None:
            break
    return turns
