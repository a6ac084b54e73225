"""``lq play``: a terminal game on any LIGHT world graph (or a quest stem, which holds one).

What the player types is read as a player expects (``tw-play``'s habits): ``look``, ``examine``/``look in`` a thing or a
character, ``say`` a line (or any line that is not an action) to whoever is there, and a thing or character named by
any words of its name ("give rope to shepherd" for the old shepherd). The engine itself (:mod:`lq.world.actions`)
stays exact: these conveniences live here, for people, and never change what an agent's command means.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

from lq.data.io import atomic_open, read_json
from lq.data.quests import Quest
from lq.data.world_graph import parse_world_graph
from lq.world.actions import SEPARATORS, VERBS, StepResult, arguments, split_verb, step, valid_actions
from lq.world.goals import ActGoal
from lq.world.scope import candidates, in_sight, named, scope_names
from lq.world.state import WIELDED, WORN, Node, World
from lq.world.text import ARTICLES, capitalize, fold, join_list, match_key, normalize

HELP = """Commands:
  look (l)              describe where you are
  examine (x) THING     look at a thing or a character (also: look at / look in THING)
  say TEXT              say a line to whoever is here (a line that is not an action is said too)
  inventory (i)         what you carry, wear and wield
  actions (a)           list every action you can take now
  help (h, ?)           this text
  quit (q)              leave the game
Verbs: go ROOM (or PATH), follow / hit / hug CHARACTER, get THING [from CONTAINER], put THING in/on CONTAINER,
  drop THING, steal THING from CHARACTER, give THING to CHARACTER, wear / wield / remove THING,
  eat / drink THING. Case, spacing and articles do not matter; "pick up" means get; a name may be any of its
  words ("shepherd" for the old shepherd, "go hut" or "go witch" for the witch's hut)."""
EXAMINE = ("examine ", "x ", "look at ", "look in ", "look inside ", "l at ", "l in ")
SAY = ("say ", "'", '"')
POSSESSIVE = re.compile(r"'s?$")  # "witch's", "hunters'": the word a player types without it


def name_words(name: str) -> set[str]:
    """A name's words, each also without its possessive ending: "witch" names the witch's hut, "hunters" the
    hunters' camp, as a player reads them."""
    words = set(match_key(name).split())
    return words | {POSSESSIVE.sub("", w) for w in words} - {""}


def named_by_words(sight: list[Node], phrase: str, exits: Mapping[str, str] | None = None) -> list[Node]:
    """The nodes of ``sight`` whose name holds every word of ``phrase`` (articles aside; none for no words); a room
    also by the words of its path label in ``exits`` (node id -> label, the actor's room's: "go dirt" for "a dirt
    path to the mill")."""
    wanted = set(match_key(phrase).split()) - ARTICLES
    exits = exits or {}
    return [n for n in sight if wanted and wanted <= name_words(n.key) | name_words(exits.get(n.id, ""))]


def exits_of(actor: Node) -> dict[str, str]:
    """The path labels of the ways out of the actor's room, by the room each leads to."""
    return actor.container.exits if actor.container is not None else {}


def which(keys: list[str]) -> str:
    """The question an ambiguous name gets: "Which do you mean: the old gate keeper or the young gate keeper?"."""
    return f"Which do you mean: {join_list([f'the {k}' for k in keys]).replace(' and ', ' or ')}?"


def complete_names(world: World, actor: Node, line: str) -> tuple[str, str]:
    """``line`` with each partial name completed to the one name in sight holding all its words (``give rope to
    shepherd`` -> ``give small rope to old shepherd``), and ``""``; or ``line`` unchanged and why a name is ambiguous.

    Only names that are not already a whole name in sight are completed; separator words ("to", "from", "in") split
    the names, as the engine reads them.
    """
    words = line.lower().split()
    verb, rest = split_verb(words) if words else (None, [])
    if verb is None or not rest:
        return line, ""
    sight = in_sight(world, actor)
    keys = {n.match for n in sight}
    seps = set(SEPARATORS.get(verb, ())) | ({"to"} if verb == "go" else set())
    spans: list[list[str]] = [[]]
    for w in rest:
        if fold(w) in seps:
            spans.append([w])
            spans.append([])
        else:
            spans[-1].append(w)
    out = [" ".join(words[: len(words) - len(rest)])]
    for span in spans:
        phrase = normalize(" ".join(span))
        if not span or fold(span[0]) in seps or match_key(phrase) in keys:
            out.append(" ".join(span))
            continue
        matches = sorted({n.key for n in named_by_words(sight, phrase, exits_of(actor))})
        if len(matches) > 1:
            return line, which(matches)
        out.append(matches[0] if matches else " ".join(span))
    return " ".join(w for w in out if w), ""


def which_twin(world: World, actor: Node, line: str) -> str:
    """The question to ask where a name in the command ``line`` fits two or more of the candidates the engine lists
    apart (:func:`lq.world.actions.scope_names`: ``go east lane``, ``get sword 2``), else ``""``."""
    words = normalize(line).split()
    verb, rest = split_verb(words) if words else (None, [])
    if verb is None or not rest:
        return ""
    room = actor.container
    for obj_key, target_key in arguments(verb, rest[1:] if verb == "go" and rest[0] == "to" else rest):
        roles = [(obj_key, "obj")] if target_key is None or verb not in ("get", "steal") else []
        roles += [(target_key, "target")] if target_key is not None else []
        for key, role in roles:
            nodes = list(candidates(world, actor, verb, role))
            twins = named(nodes, key, numbered=False)
            if len(twins) > 1:
                names = scope_names(nodes, room.exits if verb == "go" and room is not None else None)
                return which([names[n.id] for n in twins])
    return ""


def find_in_sight(world: World, actor: Node, name: str) -> tuple[Node | None, str]:
    """The character or thing in sight named ``name`` (exactly, else by any of its words; ``me`` is the actor), or
    ``None`` and why."""
    key = normalize(name)
    if key in ("me", "myself", "self") or match_key(key) == actor.match:
        return actor, ""
    sight = in_sight(world, actor)
    exact = named(sight, key, numbered=False)
    if exact:
        return exact[0], ""
    matches = named_by_words(sight, key, exits_of(actor))
    if len({n.key for n in matches}) > 1:
        return None, which(sorted({n.key for n in matches}))
    return (matches[0], "") if matches else (None, f"You don't see '{key}' here.")


def examine(world: World, actor: Node, name: str) -> str:
    """What the actor sees looking at a thing or a character in sight (``examine``, ``look at``, ``look in``)."""
    node, why = find_in_sight(world, actor, name)
    if node is None:
        return why
    if node is actor:
        return f"{capitalize(actor.persona or 'You look like yourself.')}\n{world.inventory(actor)}"
    if node.kind == "room":
        return f"{capitalize(node.a())} lies that way: go {node.name} to enter it."
    lines = [f"{capitalize(node.a() if node.prefix in ('a', 'an', None, '') else node.the())}."]
    if node.kind == "agent":
        if node.persona:
            lines.append(node.persona)
        for how, verb in ((None, "carries"), (WORN, "wears"), (WIELDED, "wields")):
            things = [o.a() for o in node.contents.values() if o.equipped == how]
            if things:
                lines.append(f"{capitalize(node.the())} {verb} {join_list(things)}.")
        return "\n".join(lines)
    if node.desc:
        lines.append(node.desc)
    if node.is_container:
        inside = [o.a() for o in node.contents.values()]
        lines.append(f"{capitalize(node.surface)} it: {join_list(inside)}." if inside else "It is empty.")
    return "\n".join(lines)


def say(world: World, actor: Node, text: str, partner: Node | None = None) -> str:
    """A line said aloud: to the partner if it is here, else to whoever is, else to no one."""
    room = actor.container
    others = [n for n in (room.contents.values() if room else ()) if n.kind == "agent" and n is not actor]
    to = [partner] if partner in others else others
    whom = join_list([n.the() for n in to]) if to else "no one in particular"
    return f'You say to {whom}: "{text}"'


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
    write(f"You are {actor.a() if actor.common else actor.name}. {actor.persona}".strip())
    if goal is not None:
        write(f"Your goal: {goal.text}" + (f" (your partner is {partner.the()})" if partner else ""))
    write("Type 'help' for the commands.\n")
    write(world.describe(actor))
    reached = told = False
    while True:
        try:
            line = read("> ").strip()
        except (EOFError, KeyboardInterrupt):  # Ctrl-D or Ctrl-C: the player leaves, as with quit
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
        elif command.startswith(EXAMINE):
            write(examine(world, actor, line.split(" ", 2 if command.startswith(("look ", "l ")) else 1)[-1]))
        elif command.startswith(SAY) or command == "say":
            text = line[1:].strip(" '\"") if command[0] in "'\"" else line[4:].strip()
            write(say(world, actor, text, partner) if text else "Say what?")
        elif command and split_verb(command.split())[0] is None:
            write(say(world, actor, line, partner))  # not an action: said aloud, as to a partner in the game
            if not told:  # once a game, as the Gymnasium environment's rule has it: why it was said, not done
                told = True
                write(f"('{command.split()[0]}' is not one of the verbs, so that was said aloud; 'help' lists them)")
        elif command and (question := which_twin(world, actor, line)):
            write(question)
        elif command:
            held = goal is not None and goal.satisfied(world)  # credited on the turn that makes it true
            result = step(world, actor, line)
            if not result.success:
                completed, ambiguous = complete_names(world, actor, line)
                if ambiguous:
                    result = StepResult(False, ambiguous)
                elif completed != line:  # the whole names: its reason, if refused too, is the one about them
                    result = step(world, actor, completed)
            write(result.message)
            if result.success and goal is not None and not reached:
                who = goal.reached_by(world, actor, result.action, held)
                if who is not None:
                    reached = True
                    write(f"*** Goal reached: {goal.text} ***")


def main(
    path: str,
    character: str | None = None,
    goal_text: str | None = None,
    partner_name: str | None = None,
    transcript: str | Path | None = None,
    read: Callable[[str], str] = input,
    write: Callable[[str], None] = print,
) -> int:
    """Play ``path`` in the terminal; with ``transcript``, save the game as it was on screen there (``.txt``)."""
    world, quest_character, quest_goal = load_game(path)
    name = character or quest_character
    actor = world.find_agent(name) if name else next(iter(world.agents()), None)
    if actor is None:
        raise ValueError(f"{path}: this world has no characters to play")
    partner = world.find_agent(partner_name) if partner_name else None
    goal_text = goal_text or quest_goal
    goal = ActGoal.parse(world, goal_text, actor.id, partner.id if partner else None) if goal_text else None
    screen: list[str] = []

    def typed(prompt: str) -> str:
        line = read(prompt)
        screen.append(prompt + line)
        return line

    def shown(text: str) -> None:
        screen.append(text)
        write(text)

    try:
        play(world, actor, goal, partner, typed, shown)
    finally:  # a game stopped by Ctrl-C keeps its transcript too
        if transcript is not None:
            out = Path(transcript).with_suffix(".txt")
            with atomic_open(out) as f:
                f.write("\n".join(screen) + "\n")
            write(f"transcript: {out}")
    return 0


__all__ = [
    "HELP",
    "VERBS",
    "complete_names",
    "examine",
    "exits_of",
    "in_sight",
    "load_game",
    "main",
    "name_words",
    "named_by_words",
    "play",
    "say",
]
