"""The quest verbs: parse free text, check preconditions, apply effects, list valid actions.

Verbs: go, follow, hit, hug, get (also ``get X from Y``), put (``in`` / ``on``), drop, steal
(``from`` a character), give (``to`` a character), wear, wield, remove, eat, drink.

One rule keeps listing and parsing in agreement: a name resolves to the *first* thing in scope,
in containment order, with that name for which the action is possible, and the listing keeps the
first action for each text. So every listed action, typed back, parses to that same action, and
an action that succeeds is always one the listing holds.

The rules follow the original LIGHT engine's (``light/graph/events/graph_events.py``), in listing
and in execution alike:

- Sizes: a thing goes into a container, a character or a room only if its ``size`` is at most the
  room left there (``contain_size``), for get, put, drop, give, steal and go alike.
- A character wields at most ``max_wieldable_items`` things (LIGHT: 1) and wears at most
  ``max_wearable_items`` (3), counted from what it has equipped.
- ``go`` takes a way out by its room's name or by its path label ("go a cobblestone pathway leading
  to Town Hall"); the listing names the room.
- A character that goes brings its followers, theirs in turn, from wherever they are, each if it
  fits; each comes once, so following in a circle ends.

Where these rules differ from LIGHT's (its counters, its listing's names and errors, circles of followers), lq keeps
its own (docs/deviations.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from lq.world.refusals import explain, why_not
from lq.world.scope import candidates, command_text, named, scope_names
from lq.world.state import WIELDED, WORN, Node, World
from lq.world.text import capitalize, fold, join_list, match_key, normalize

VERBS = ("go", "follow", "hit", "hug", "get", "put", "drop", "steal", "give", "wear", "wield", "remove", "eat", "drink")
# Other words players use, mapped to a verb (longest first when matching).
SYNONYMS = {
    "pick up": "get",
    "take": "get",
    "grab": "get",
    "put down": "drop",
    "walk": "go",
    "move": "go",
    "attack": "hit",
    "embrace": "hug",
    "take off": "remove",
    "unequip": "remove",
    "equip": "wield",
}
SEPARATORS = {"get": ("from",), "put": ("in", "on", "into", "onto"), "steal": ("from",), "give": ("to",)}


class Action(NamedTuple):
    verb: str
    obj: Node
    target: Node | None = None

    @property
    def text(self) -> str:
        """The canonical command: lower-case names, no articles."""
        t = self.target
        return command_text(self.verb, self.obj.key, t.key if t is not None else None, t.surface if t else "in")


@dataclass
class StepResult:
    success: bool
    message: str  # what the actor sees
    action: Action | None = None
    room_message: str = ""  # what others in the room see

    def __bool__(self) -> bool:
        return self.success


# -- effects ---------------------------------------------------------------------------------------


def _apply(world: World, actor: Node, a: Action) -> tuple[str, str]:
    """Change the state; return (what the actor sees, what others in the room see)."""
    verb, o, t = a
    me = actor.the() if actor.kind == "agent" else actor.name
    Me = capitalize(me)
    if verb == "go":
        world.move(actor, o)
        followers = world.move_followers(actor, o)
        tail = (
            f" {capitalize(join_list([f.the() for f in followers]))} follow{'s' if len(followers) == 1 else ''} you."
            if followers
            else ""
        )
        return f"You go to {o.name}.{tail}\n{world.describe(actor)}", f"{Me} leaves towards {o.name}."
    if verb == "follow":
        actor.following = o
        return f"You start following {o.the()}.", f"{Me} starts following {o.the()}."
    if verb == "hit":
        o.health = max(0, o.health - 1)
        return f"You hit {o.the()}!", f"{Me} hits {o.the()}!"
    if verb == "hug":
        return f"You hug {o.the()}.", f"{Me} hugs {o.the()}."
    if verb == "get":
        src = f" from {t.the()}" if t is not None else ""
        world.move(o, actor)
        return f"You get {o.the()}{src}.", f"{Me} gets {o.the()}{src}."
    if verb == "put":
        world.move(o, t)
        return f"You put {o.the()} {t.surface} {t.the()}.", f"{Me} puts {o.the()} {t.surface} {t.the()}."
    if verb == "drop":
        world.move(o, actor.container)
        return f"You drop {o.the()}.", f"{Me} drops {o.the()}."
    if verb == "give":
        world.move(o, t)
        return f"You give {o.the()} to {t.the()}.", f"{Me} gives {o.the()} to {t.the()}."
    if verb == "steal":
        world.move(o, actor)
        return f"You steal {o.the()} from {t.the()}.", f"{Me} steals {o.the()} from {t.the()}."
    if verb in ("wear", "wield"):
        o.equipped = WORN if verb == "wear" else WIELDED
        return f"You {verb} {o.the()}.", f"{Me} {verb}s {o.the()}."
    if verb == "remove":
        o.equipped = None
        return f"You remove {o.the()}.", f"{Me} removes {o.the()}."
    if verb in ("eat", "drink"):
        world.consume(o)
        return f"You {verb} {o.the()}. Delicious.", f"{Me} {verb}s {o.the()}."
    raise ValueError(f"unknown verb {verb}")


# -- listing ---------------------------------------------------------------------------------------


def valid_actions(world: World, actor: Node) -> dict[str, Action]:
    """Every action ``actor`` can take now, by canonical text, in a stable order. Where two candidates of one argument
    share a name, each is its own action under its own name (:func:`scope_names`: ``go east lane``, ``get sword 2``),
    which :func:`parse` reads back.

    Touches only the actor's room, its contents one level down, and the actor's inventory.
    """
    out: dict[str, Action] = {}
    room = actor.container
    if room is None:
        return out
    add = out.setdefault
    nodes = world.nodes
    size, room_left, carry_left = actor.size, room.contain_size, actor.contain_size
    neighbors = [nodes[r] for r in room.neighbors if r in nodes]
    places = scope_names(neighbors, room.exits)
    for r in neighbors:
        if size <= r.contain_size:
            add(f"go {places.get(r.id, r.key)}", Action("go", r))
    others = [n for n in room.contents.values() if n is not actor]
    agents = [n for n in others if n.kind == "agent"]
    floor = [n for n in others if n.kind == "object"]
    containers = [n for n in floor if n.is_container] + [o for o in actor.contents.values() if o.is_container]
    who, here, boxes = scope_names(agents), scope_names(floor), scope_names(containers)
    held_names = scope_names(list(actor.contents.values()))

    def name_of(names: dict[str, str], n: Node) -> str:
        return names.get(n.id, n.key)

    def inside(c: Node) -> tuple[list[Node], dict[str, str]]:
        contents = list(c.contents.values())
        return contents, scope_names(contents)

    for n in others:
        if n.kind == "agent":
            k = name_of(who, n)
            if actor.following is not n:
                add(f"follow {k}", Action("follow", n))
            add(f"hit {k}", Action("hit", n))
            add(f"hug {k}", Action("hug", n))
        elif n.kind == "object":
            if n.gettable and n.size <= carry_left:
                add(f"get {name_of(here, n)}", Action("get", n))
            if n.is_container:
                contents, names = inside(n)
                for c in contents:
                    if c.gettable and c.size <= carry_left:
                        add(f"get {name_of(names, c)} from {name_of(boxes, n)}", Action("get", c, n))
    held = []
    wielded = worn = 0
    for o in actor.contents.values():
        if o.equipped == WIELDED:
            wielded += 1
        elif o.equipped == WORN:
            worn += 1
    can_wield, can_wear = wielded < actor.max_wielded, worn < actor.max_worn
    for o in actor.contents.values():
        k = name_of(held_names, o)
        if o.equipped is not None:
            add(f"remove {k}", Action("remove", o))
        else:
            held.append(o)
            if o.size <= room_left:
                add(f"drop {k}", Action("drop", o))
            if o.wearable and can_wear:
                add(f"wear {k}", Action("wear", o))
            if o.wieldable and can_wield:
                add(f"wield {k}", Action("wield", o))
        if o.food:
            add(f"eat {k}", Action("eat", o))
        if o.drink:
            add(f"drink {k}", Action("drink", o))
        if o.is_container:
            contents, names = inside(o)
            for c in contents:
                if c.gettable and c.size <= carry_left:
                    add(f"get {name_of(names, c)} from {name_of(boxes, o)}", Action("get", c, o))
    for o in held:
        k, s = name_of(held_names, o), o.size
        for b in agents:
            if s <= b.contain_size:
                add(f"give {k} to {name_of(who, b)}", Action("give", o, b))
        for c in containers:
            if c is not o and s <= c.contain_size:
                add(f"put {k} {c.surface} {name_of(boxes, c)}", Action("put", o, c))
    for b in agents:
        contents, names = inside(b)
        for o in contents:
            if o.equipped is None and o.gettable and o.size <= carry_left:
                add(f"steal {name_of(names, o)} from {name_of(who, b)}", Action("steal", o, b))
    return out


# -- parsing ---------------------------------------------------------------------------------------


def _resolve(
    world: World, actor: Node, verb: str, obj_key: str, target_key: str | None
) -> tuple[Action | None, str, bool]:
    """The first possible action matching the names; else why not (:func:`lq.world.refusals.explain`: the first
    match's reason, or where the named thing is) and whether the names were seen here."""
    if target_key is None:
        room = actor.container
        exits = room.exits if verb == "go" and room is not None else None
        objs = named(candidates(world, actor, verb, "obj"), obj_key, exits)
        if verb == "go" and room is not None:  # then the ways out by their path labels
            wanted = match_key(obj_key)
            objs += [
                world.nodes[t]
                for t, label in room.exits.items()
                if (label == obj_key or match_key(label) == wanted) and t in world.nodes and world.nodes[t] not in objs
            ]
        for o in objs:
            if why_not(world, actor, verb, o) is None:
                return Action(verb, o), "", True
        return (None, *explain(world, actor, verb, objs[0] if objs else obj_key))
    targets = named(candidates(world, actor, verb, "target"), target_key)
    if not targets:
        return (None, *explain(world, actor, verb, obj_key, target_key))
    if verb in ("steal", "get"):  # the object is looked for inside the target (a character, a container)
        inside = [(o, t) for t in targets for o in named(t.contents.values(), obj_key)]
    else:
        inside = [(o, t) for o in named(candidates(world, actor, verb, "obj"), obj_key) for t in targets]
    for o, t in inside:
        if why_not(world, actor, verb, o, t) is None:
            return Action(verb, o, t), "", True
    return (None, *explain(world, actor, verb, *(inside[0] if inside else (obj_key, targets[0]))))


_SYNONYM_WORDS = sorted(((p.split(), v) for p, v in SYNONYMS.items()), key=lambda pv: -len(pv[0]))


def split_verb(words: list[str]) -> tuple[str | None, list[str]]:
    """The verb a command starts with (synonyms mapped, longest phrase first; its words compared :func:`folded
    <lq.world.text.fold>`, so ``ＧＥＴ`` and ``Pick up`` read) and the words after it."""
    head = [fold(w) for w in words[:2]]
    for phrase, verb in _SYNONYM_WORDS:
        if head[: len(phrase)] == phrase:
            return verb, words[len(phrase) :]
    if head and head[0] in VERBS:
        return head[0], words[1:]
    return None, words


def arguments(verb: str, words: list[str]) -> list[tuple[str, str | None]]:
    """Every way to read ``words`` as (object, target) names for ``verb``, splits first.

    Names may hold the separator words themselves ("rare wood from a tree", "path to the cave"),
    so each occurrence is tried; verbs with an optional target also try the whole phrase as one name.
    """
    seps = SEPARATORS.get(verb, ())
    out: list[tuple[str, str | None]] = [
        (normalize(" ".join(words[:i])), normalize(" ".join(words[i + 1 :])))
        for i, w in enumerate(words)
        if 0 < i < len(words) - 1 and fold(w) in seps
    ]
    if verb not in ("put", "give", "steal"):
        out.append((normalize(" ".join(words)), None))
    return out


def parse(world: World, actor: Node, text: str) -> tuple[Action | None, str]:
    """``(action, "")`` for a possible action, or ``(None, why)``. Never raises, never changes state."""
    if not isinstance(text, str):
        return None, "Type a command as text."
    words = text.lower().split()
    if not words:
        return None, "Say what you want to do (type 'help' for the verbs)."
    verb, rest = split_verb(words)
    if verb is None:
        return None, f"Unknown verb '{words[0]}'. Verbs: {', '.join(VERBS)}."
    if not rest:
        return None, f"{capitalize(verb)} what?"
    if verb == "go" and fold(rest[0]) == "to" and len(rest) > 1:
        action, _, _ = _resolve(world, actor, verb, normalize(" ".join(rest)), None)
        if action is not None:
            return action, ""
        rest = rest[1:]
    attempts = arguments(verb, rest)
    if not attempts:
        usage = {"put": "put X in Y (or on Y)", "give": "give X to Y", "steal": "steal X from Y"}[verb]
        return None, f"Usage: {usage}."
    why, seen_why = "", ""
    for obj_key, target_key in attempts:  # a name may hold a separator word: each reading in turn
        action, reason, seen = _resolve(world, actor, verb, obj_key, target_key)
        if action is not None:
            return action, ""
        why = why or reason
        seen_why = seen_why or (reason if seen else "")
    return None, seen_why or why or f"You can't {verb} that now."  # the first reason about things seen, else the first


def execute(world: World, actor: Node, action: Action) -> StepResult:
    """Apply a parsed, possible action."""
    self_msg, room_msg = _apply(world, actor, action)
    return StepResult(True, self_msg, action, room_msg)


def step(world: World, actor: Node, text: str) -> StepResult:
    """Parse and apply one command; on failure the state is unchanged and the message says why."""
    action, why = parse(world, actor, text)
    if action is None:
        return StepResult(False, why)
    return execute(world, actor, action)
