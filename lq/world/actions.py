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

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from lq.world.state import WIELDED, WORN, Node, World
from lq.world.text import capitalize, join_list, normalize

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
        v, o, t = self.verb, self.obj, self.target
        if t is None:
            return f"{v} {o.key}"
        if v == "put":
            return f"put {o.key} {t.surface} {t.key}"
        return f"{v} {o.key} {'to' if v == 'give' else 'from'} {t.key}"


@dataclass
class StepResult:
    success: bool
    message: str  # what the actor sees
    action: Action | None = None
    room_message: str = ""  # what others in the room see

    def __bool__(self) -> bool:
        return self.success


# -- preconditions: None when possible, else why not (second person, for the actor) -------------------


def _here(actor: Node, other: Node) -> bool:
    return other.container is actor.container and other is not actor


def _carried(actor: Node, obj: Node) -> bool:
    return obj.container is actor


def _free(actor: Node, obj: Node) -> bool:
    return obj.container is actor and obj.equipped is None


def _reachable_container(actor: Node, c: Node) -> bool:
    return c.kind == "object" and c.is_container and (c.container is actor.container or c.container is actor)


def _why_not(verb: str, actor: Node, o: Node, t: Node | None) -> str | None:
    if verb == "go":
        if o.kind != "room" or actor.container is None or o.id not in actor.container.neighbors:
            return f"You can't go to {o.name} from here."
        return None if o.fits(actor) else f"There's not enough room for you in {o.name}."
    if verb in ("follow", "hit", "hug"):
        if o.kind != "agent" or not _here(actor, o):
            return f"You can't {verb} {o.the()}."
        if verb == "follow" and actor.following is o:
            return f"You are already following {o.the()}."
        return None
    if o.kind != "object":
        return f"You can't {verb} {o.the()}."
    if verb == "get":
        if not o.gettable:
            return f"You can't pick up {o.the()}."
        if t is None:
            if o.container is not actor.container:
                return f"{capitalize(o.the())} is not here for the taking."
        elif not (_reachable_container(actor, t) and o.container is t):
            return f"{capitalize(o.the())} is not {t.surface if t.kind == 'object' else 'with'} {t.the()}."
        return None if actor.fits(o) else f"You can't get {o.the()}: you can't carry that much more."
    if verb == "put":
        if not _free(actor, o):
            return f"You aren't holding {o.the()} free in your hands."
        if t is None or t is o or not _reachable_container(actor, t):
            return f"You can't put {o.the()} there."
        return None if t.fits(o) else f"You can't put {o.the()} {t.surface} {t.the()}: there's no room left for it."
    if verb == "drop":
        if not _free(actor, o):
            return f"You aren't holding {o.the()} free in your hands."
        return None if actor.container.fits(o) else f"There's no room here to drop {o.the()}."
    if verb == "give":
        if not _free(actor, o):
            return f"You aren't holding {o.the()} free in your hands."
        if t is None or t.kind != "agent" or not _here(actor, t):
            return "There is no one here to take it."
        return None if t.fits(o) else f"{capitalize(t.the())} has no room to carry {o.the()}."
    if verb == "steal":
        if t is None or t.kind != "agent" or not _here(actor, t):
            return "There is no one here to steal from."
        if not (o.container is t and o.equipped is None and o.gettable):
            return f"{capitalize(t.the())} has no {o.name} you could take."
        return None if actor.fits(o) else f"You can't steal {o.the()}: you can't carry that much more."
    if verb == "wear":
        if not (_free(actor, o) and o.wearable):
            return f"You can't wear {o.the()}."
        return None if actor.equipped_count(WORN) < actor.max_worn else "You can't wear any more items."
    if verb == "wield":
        if not (_free(actor, o) and o.wieldable):
            return f"You can't wield {o.the()}."
        return None if actor.equipped_count(WIELDED) < actor.max_wielded else "You can't wield any more items."
    if verb == "remove":
        return None if _carried(actor, o) and o.equipped else f"You aren't wearing or wielding {o.the()}."
    if verb == "eat":
        return None if _carried(actor, o) and o.food else f"You can't eat {o.the()}."
    if verb == "drink":
        return None if _carried(actor, o) and o.drink else f"You can't drink {o.the()}."
    raise ValueError(f"unknown verb {verb}")


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


def scope_names(nodes: Sequence[Node], exits: dict[str, str] | None = None) -> dict[str, str]:
    """What a command calls each of ``nodes`` (the candidates of one argument, in the order the listing and the parser
    visit them) that shares its name with another of them, up to case and punctuation (node id -> name): a place by its
    path label where ``exits`` tells them apart (``east lane``), else by the name and its place among those of that
    name (``sword 1``, ``sword 2``); a name no other shares is its key, and left out."""
    keys = [n.key for n in nodes]
    if len(set(keys)) == len(keys):  # no shared name (most listings): nothing to tell apart
        return {}
    count = Counter(keys)
    labels = Counter((exits or {}).get(n.id) for n in nodes)
    seen: Counter = Counter()
    out: dict[str, str] = {}
    for n in nodes:
        if count[n.key] < 2:
            continue
        seen[n.key] += 1
        label = (exits or {}).get(n.id)
        out[n.id] = label if label and labels[label] == 1 and label not in count else f"{n.key} {seen[n.key]}"
    return out


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

    def named(names: dict[str, str], n: Node) -> str:
        return names.get(n.id, n.key)

    def inside(c: Node) -> tuple[list[Node], dict[str, str]]:
        contents = list(c.contents.values())
        return contents, scope_names(contents)

    for n in others:
        if n.kind == "agent":
            k = named(who, n)
            if actor.following is not n:
                add(f"follow {k}", Action("follow", n))
            add(f"hit {k}", Action("hit", n))
            add(f"hug {k}", Action("hug", n))
        elif n.kind == "object":
            if n.gettable and n.size <= carry_left:
                add(f"get {named(here, n)}", Action("get", n))
            if n.is_container:
                contents, names = inside(n)
                for c in contents:
                    if c.gettable and c.size <= carry_left:
                        add(f"get {named(names, c)} from {named(boxes, n)}", Action("get", c, n))
    held = []
    wielded = worn = 0
    for o in actor.contents.values():
        if o.equipped == WIELDED:
            wielded += 1
        elif o.equipped == WORN:
            worn += 1
    can_wield, can_wear = wielded < actor.max_wielded, worn < actor.max_worn
    for o in actor.contents.values():
        k = named(held_names, o)
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
                    add(f"get {named(names, c)} from {named(boxes, o)}", Action("get", c, o))
    for o in held:
        k, s = named(held_names, o), o.size
        for b in agents:
            if s <= b.contain_size:
                add(f"give {k} to {named(who, b)}", Action("give", o, b))
        for c in containers:
            if c is not o and s <= c.contain_size:
                add(f"put {k} {c.surface} {named(boxes, c)}", Action("put", o, c))
    for b in agents:
        contents, names = inside(b)
        for o in contents:
            if o.equipped is None and o.gettable and o.size <= carry_left:
                add(f"steal {named(names, o)} from {named(who, b)}", Action("steal", o, b))
    return out


# -- parsing ---------------------------------------------------------------------------------------


def candidates(world: World, actor: Node, verb: str, role: str) -> Iterator[Node]:
    """Candidates for an argument, in the order the listing visits them."""
    room = actor.container
    if room is None:
        return
    if verb == "go":
        for rid in room.neighbors:
            if rid in world.nodes:
                yield world.nodes[rid]
    elif role == "target" and verb in ("give", "steal") or verb in ("follow", "hit", "hug"):
        for n in room.contents.values():
            if n.kind == "agent" and n is not actor:
                yield n
    elif role == "target":  # get ... from C / put ... in C: containers on the floor, then carried
        for n in room.contents.values():
            if n.kind == "object" and n.is_container:
                yield n
        for n in actor.contents.values():
            if n.is_container:
                yield n
    elif verb == "get":
        yield from (n for n in room.contents.values() if n.kind == "object")
    else:
        yield from actor.contents.values()


def _named(nodes: Iterable[Node], key: str, exits: dict[str, str] | None = None) -> list[Node]:
    """The candidates ``key`` names: those whose name it is, else the one :func:`scope_names` calls so (``sword 2``,
    a place's path label where two places share a name)."""
    nodes = list(nodes)
    same = [n for n in nodes if n.key == key]
    if same:
        return same
    names = scope_names(nodes, exits)
    return [n for n in nodes if names.get(n.id) == key]


def _resolve(world: World, actor: Node, verb: str, obj_key: str, target_key: str | None) -> tuple[Action | None, str]:
    """First possible action matching the names; else the reason the first match is impossible."""
    if target_key is None:
        exits = actor.container.exits if verb == "go" and actor.container is not None else None
        objs = _named(candidates(world, actor, verb, "obj"), obj_key, exits)
        if verb == "go" and actor.container is not None:  # then the ways out by their path labels
            objs += [
                world.nodes[t]
                for t, label in actor.container.exits.items()
                if label == obj_key and t in world.nodes and world.nodes[t] not in objs
            ]
        if not objs:
            return None, f"You don't see '{obj_key}' here."
        for o in objs:
            if _why_not(verb, actor, o, None) is None:
                return Action(verb, o), ""
        return None, _why_not(verb, actor, objs[0], None) or ""
    targets = _named(candidates(world, actor, verb, "target"), target_key)
    if not targets:
        return None, f"You don't see '{target_key}' here."
    first_reason = ""
    if verb in ("steal", "get"):  # the object is looked for inside the target (a character, a container)
        for t in targets:
            for o in _named(t.contents.values(), obj_key):
                reason = _why_not(verb, actor, o, t)
                if reason is None:
                    return Action(verb, o, t), ""
                first_reason = first_reason or reason
        t = targets[0]
        return None, first_reason or (
            f"{capitalize(t.the())} has no '{obj_key}'."
            if verb == "steal"
            else f"There is no '{obj_key}' {t.surface} {t.the()}."
        )
    objs = _named(candidates(world, actor, verb, "obj"), obj_key)
    if not objs:
        return None, f"You aren't carrying '{obj_key}'."
    for o in objs:
        for t in targets:
            reason = _why_not(verb, actor, o, t)
            if reason is None:
                return Action(verb, o, t), ""
            first_reason = first_reason or reason
    return None, first_reason


_SYNONYM_WORDS = sorted(((p.split(), v) for p, v in SYNONYMS.items()), key=lambda pv: -len(pv[0]))


def split_verb(words: list[str]) -> tuple[str | None, list[str]]:
    """The verb a command starts with (synonyms mapped, longest phrase first) and the words after it."""
    for phrase, verb in _SYNONYM_WORDS:
        if words[: len(phrase)] == phrase:
            return verb, words[len(phrase) :]
    if words[0] in VERBS:
        return words[0], words[1:]
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
        if w in seps and 0 < i < len(words) - 1
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
    if verb == "go" and rest[0] == "to" and len(rest) > 1:
        action, why = _resolve(world, actor, verb, normalize(" ".join(rest)), None)
        if action is not None:
            return action, ""
        rest = rest[1:]
    attempts = arguments(verb, rest)
    if not attempts:
        usage = {"put": "put X in Y (or on Y)", "give": "give X to Y", "steal": "steal X from Y"}[verb]
        return None, f"Usage: {usage}."
    why = ""
    for obj_key, target_key in attempts:
        action, reason = _resolve(world, actor, verb, obj_key, target_key)
        if action is not None:
            return action, ""
        why = why or reason
    return None, why


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
