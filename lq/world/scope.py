"""What an actor's command can name: the candidates of each argument of a verb, the names that tell twins apart, the
nodes a name matches, and what is in sight. The listing (:func:`lq.world.actions.valid_actions`), the parser and the
refusals (:mod:`lq.world.refusals`) all name things through here, so they agree.

A name matches a node when it is the node's key as the engine lists it (lower case, no leading article), else when the
two are equal under :func:`lq.world.text.match_key` (Unicode compatibility form, typographic apostrophes, quotes and
dashes, case, articles): ``hug goblin king's veteran`` names the Goblin King\u2019s veteran. The listed texts keep the
world's own spelling.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from lq.world.state import Node, World
from lq.world.text import match_key


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


def candidates(world: World, actor: Node, verb: str, role: str) -> Iterator[Node]:
    """Candidates for an argument (``role``: "obj" or "target"), in the order the listing visits them."""
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


def named(nodes: Iterable[Node], key: str, exits: dict[str, str] | None = None, *, numbered: bool = True) -> list[Node]:
    """The nodes ``key`` names: those whose key it is; else those whose key it matches under
    :func:`~lq.world.text.match_key`; else (``numbered``) the ones :func:`scope_names` calls so among ``nodes``
    (``sword 2``, a place's path label where two places share a name), matched the same way."""
    nodes = list(nodes)
    same = [n for n in nodes if n.key == key]
    if same:
        return same
    wanted = match_key(key)
    same = [n for n in nodes if n.match == wanted]
    if same or not numbered:
        return same
    names = scope_names(nodes, exits)
    return [n for n in nodes if n.id in names and (names[n.id] == key or match_key(names[n.id]) == wanted)]


def name_in(world: World, actor: Node, verb: str, role: str, node: Node, among: Sequence[Node] | None = None) -> str:
    """What a command calls ``node`` as the ``role`` argument of ``verb`` (``among``: the candidates, if not the
    verb's own; a thing inside a container or a character is named among what it holds)."""
    room = actor.container
    nodes = list(among) if among is not None else list(candidates(world, actor, verb, role))
    exits = room.exits if verb == "go" and room is not None else None
    return scope_names(nodes, exits).get(node.id, node.key)


def in_sight(world: World, actor: Node) -> list[Node]:
    """Every character and thing in the actor's room (inside what is there, too, and what it carries), in containment
    order (the room's contents first, then what they hold), then the rooms it can go to: what a name typed by the
    player may mean."""
    room = actor.container
    if room is None:
        return []
    here: list[Node] = []
    level = [n for n in room.contents.values() if n is not actor] + list(actor.contents.values())
    while level:  # breadth first: what lies in the open before what is inside it
        here += level
        level = [c for n in level for c in n.contents.values()]
    return here + [world.nodes[t] for t in room.neighbors if t in world.nodes]


def command_text(verb: str, obj: str, target: str | None = None, surface: str = "in") -> str:
    """A command from its names: ``get sword``, ``get sword from chest``, ``put sword in chest``, ``give sword to
    knight``."""
    if target is None:
        return f"{verb} {obj}"
    if verb == "put":
        return f"put {obj} {surface} {target}"
    return f"{verb} {obj} {'to' if verb == 'give' else 'from'} {target}"
