"""``lq play``: a terminal game on any LIGHT world graph (or a quest stem, which holds one)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from lq.data.io import read_json
from lq.data.quests import Quest
from lq.data.world_graph import parse_world_graph
from lq.world.actions import VERBS, step, valid_actions
from lq.world.goals import ActGoal
from lq.world.state import Node, World

HELP = """Commands:
  look (l)              describe where you are
  inventory (i)         what you carry, wear and wield
  actions (a)           list every action you can take now
  help (h, ?)           this text
  quit (q)              leave the game
Verbs: go ROOM (or PATH), follow / hit / hug CHARACTER, get THING [from CONTAINER], put THING in/on CONTAINER,
  drop THING, steal THING from CHARACTER, give THING to CHARACTER, wear / wield / remove THING,
  eat / drink THING. Case, spacing and articles do not matter; "pick up" means get."""


def load_game(path: str | Path) -> tuple[World, str | None, str | None]:
    """A world from a world-graph file or a quest stem; for a quest, also its character and goal."""
    raw = read_json(path)
    if isinstance(raw, dict) and "data" in raw and "nodes" not in raw:
        quest = Quest.from_json(raw, path)
        if quest.graph is None:
            raise ValueError(f"{path}: this quest has no 'graph' to play in")
        return World(quest.graph), quest.character, quest.goal
    return World(parse_world_graph(raw, path)), None, None


def play(
    world: World,
    actor: Node,
    goal: ActGoal | None = None,
    partner: Node | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
) -> bool:
    """Run the game loop until quit or end of input; returns whether the goal was reached."""
    write(f"You are {actor.a() if actor.prefix in ('a', 'an') else actor.name}. {actor.persona}".strip())
    if goal is not None:
        write(f"Your goal: {goal.text}" + (f" (your partner is {partner.the()})" if partner else ""))
    write("Type 'help' for the commands.\n")
    write(world.describe(actor))
    reached = False
    while True:
        try:
            line = read("> ").strip()
        except EOFError:
            write("")
            return reached
        command = line.lower()
        if command in ("q", "quit", "exit"):
            return reached
        if command in ("h", "help", "?"):
            write(HELP)
        elif command in ("l", "look"):
            write(world.describe(actor))
        elif command in ("i", "inventory", "inv"):
            write(world.inventory(actor))
        elif command in ("a", "actions", "valid"):
            options = list(valid_actions(world, actor))
            write("\n".join(f"  {t}" for t in options) if options else "  (nothing)")
        elif command:
            result = step(world, actor, line)
            write(result.message)
            if result.success and goal is not None and not reached:
                who = goal.reached_by(world, actor, result.action)
                if who is not None:
                    reached = True
                    write(f"*** Goal reached: {goal.text} ***")


def main(path: str, character: str | None = None, goal_text: str | None = None, partner_name: str | None = None) -> int:
    world, quest_character, quest_goal = load_game(path)
    name = character or quest_character
    actor = world.find_agent(name) if name else next(iter(world.agents()), None)
    if actor is None:
        raise ValueError(f"{path}: this world has no characters to play")
    partner = world.find_agent(partner_name) if partner_name else None
    goal_text = goal_text or quest_goal
    goal = ActGoal.parse(world, goal_text, actor.id, partner.id if partner else None) if goal_text else None
    play(world, actor, goal, partner)
    return 0


__all__ = ["HELP", "VERBS", "load_game", "main", "play"]
