"""The world state: LIGHT graph nodes with containment, built for a fast step loop.

Every thing has exactly one container: a room is in nothing, an agent is in a room, an object is
in a room, carried (worn, wielded or just held) by an agent, or in / on a container object. Each
node keeps its contents in insertion order (a dict, so removal is O(1)), which is also the order
in which names are resolved and valid actions listed.

Sizes as in LIGHT: every node has a ``size`` and a ``contain_size``, the room left inside it (a
thing fits where its size is at most that room; moving it in takes its size, moving it out gives it
back). A character follows at most one other; when a character moves, its followers come along.
"""

from __future__ import annotations

import copy
from typing import Any

from lq.data.world_graph import VOID, GraphNode, WorldGraph, load_world_graph
from lq.world.text import article, capitalize, join_list, match_key, normalize

WORN, WIELDED = "worn", "wielded"


class UnknownCharacter(LookupError):
    """A character name that is not in the world."""


class Node:
    __slots__ = (
        "id",
        "kind",
        "name",
        "key",
        "prefix",
        "desc",
        "container",
        "contents",
        "gettable",
        "wearable",
        "wieldable",
        "food",
        "drink",
        "is_container",
        "surface",
        "equipped",
        "persona",
        "neighbors",
        "following",
        "health",
        "size",
        "contain_size",
        "max_wielded",
        "max_worn",
        "exits",
        "raw",
    )

    def __init__(self, gn: GraphNode):
        self.id = gn.node_id
        self.kind = gn.kind
        self.name = " ".join(gn.name.split())
        self.key = normalize(gn.name)
        # the world's own article, or None where it gives none (then "a" or "an" by the name's first letter)
        self.prefix = gn.name_prefix if "name_prefix" in gn.raw else None
        self.desc = gn.desc
        self.container: Node | None = None
        self.contents: dict[str, Node] = {}
        self.gettable = gn.gettable
        self.wearable = gn.wearable
        self.wieldable = gn.wieldable
        self.food = gn.food
        self.drink = gn.drink
        self.is_container = gn.container
        self.surface = "on" if gn.surface_type == "on" else "in"
        self.equipped: str | None = None
        self.persona = gn.persona
        self.neighbors: dict[str, str] = {tid: e.label for tid, e in gn.neighbors.items()}
        # the way to each neighbour by its path label, as typed ("go a dirt path to the mill")
        self.exits: dict[str, str] = {tid: normalize(label) for tid, label in self.neighbors.items() if label.strip()}
        self.following: Node | None = None
        self.health = gn.raw.get("health", 10) if isinstance(gn.raw.get("health"), (int, float)) else 10
        self.size = gn.size
        self.contain_size = gn.contain_size  # the room left inside
        self.max_wielded = gn.max_wieldable_items
        self.max_worn = gn.max_wearable_items
        self.raw = gn.raw

    def __repr__(self) -> str:
        return f"Node({self.id!r})"

    @property
    def room(self) -> Node | None:
        """The room this node is in, through any chain of containers."""
        node = self
        while node.container is not None:
            node = node.container
        return node if node.kind == "room" else None

    def fits(self, thing: Node) -> bool:
        """Whether ``thing`` would fit inside this node now (LIGHT's ``would_fit``)."""
        return thing.size <= self.contain_size

    def equipped_count(self, how: str) -> int:
        """How many things this character has equipped ``how`` (worn or wielded)."""
        return sum(1 for o in self.contents.values() if o.equipped == how)

    def holds(self, other: Node) -> bool:
        """Whether ``other`` is inside this node, at any depth."""
        node = other.container
        while node is not None:
            if node is self:
                return True
            node = node.container
        return False

    @property
    def match(self) -> str:
        """The name as typed names are compared with it (:func:`lq.world.text.match_key`)."""
        return match_key(self.key)

    def a(self) -> str:
        return article(self.name, self.prefix if self.kind != "room" else None)

    def the(self) -> str:
        proper = self.kind == "agent" and self.prefix not in (None, "a", "an", "the")  # "Sirin", not "the Sirin"
        return self.name if proper else f"the {self.name}"

    @property
    def common(self) -> bool:
        """Whether the node's name takes an article (``a knight``), not a proper name (``Sirin``)."""
        return self.prefix in (None, "a", "an")


class World:
    """A LIGHT world: nodes by id, and the void (objects placed nowhere, kept out of play)."""

    def __init__(self, graph: WorldGraph):
        self.graph = graph
        self.nodes: dict[str, Node] = {nid: Node(gn) for nid, gn in graph.nodes.items()}
        self.void: dict[str, Node] = {}
        for gn in graph.nodes.values():  # containment, in each container's own listed order
            parent = self.nodes[gn.node_id]
            for cid in gn.contained_ids:
                child = self.nodes[cid]
                child.container = parent
                parent.contents[cid] = child
        for node in self.nodes.values():
            if node.kind != "room" and node.container is None:
                self.void[node.id] = node
            raw = node.raw
            if node.kind == "object" and raw.get("equipped"):
                eq = raw["equipped"]
                node.equipped = eq if eq in (WORN, WIELDED) else (WORN if node.wearable else WIELDED)
        for node in self.nodes.values():
            follow = node.raw.get("following") if node.kind == "agent" else None
            target = follow.get("target_id") if isinstance(follow, dict) else follow
            if isinstance(target, str) and target in self.nodes:
                node.following = self.nodes[target]
        for vid in self.void:
            del self.nodes[vid]
        self._agents = [n for n in self.nodes.values() if n.kind == "agent"]
        # ids eaten or drunk so far (saved with the state, for event goals and episode logs)
        consumed = graph.extra.get("consumed", [])
        self.consumed: list[str] = [c for c in consumed if isinstance(c, str)] if isinstance(consumed, list) else []

    # -- construction and persistence ------------------------------------------------------------

    @classmethod
    def load(cls, path: str) -> World:
        return cls(load_world_graph(path))

    @classmethod
    def from_json(cls, obj: Any) -> World:
        return cls(WorldGraph.from_json(obj))

    def to_graph(self) -> WorldGraph:
        """The current state as a LIGHT world graph (engine state in LIGHT's own fields)."""
        nodes = {}
        for node in list(self.nodes.values()) + list(self.void.values()):
            gn = copy.copy(self.graph.nodes[node.id])
            gn.raw = dict(gn.raw)
            gn.container_id = node.container.id if node.container is not None else VOID
            gn.contained_ids = list(node.contents)
            gn.contain_size = node.contain_size
            if node.kind == "object":
                gn.equipped = node.equipped
                gn.raw["equipped"] = node.equipped
            if node.kind == "agent":
                gn.raw["following"] = {"target_id": node.following.id} if node.following else None
                gn.raw["health"] = node.health
                # LIGHT's equipment counters, kept in step where the graph has them
                for field, how in (("num_wieldable_items", WIELDED), ("num_wearable_items", WORN)):
                    if field in gn.raw:
                        gn.raw[field] = node.equipped_count(how)
            nodes[node.id] = gn
        return WorldGraph(
            nodes=nodes,
            title=self.graph.title,
            extra={**self.graph.extra, "consumed": list(self.consumed)},
            listed={k: [i for i in v if i in nodes] for k, v in self.graph.listed.items()},
        )

    def to_json(self) -> dict[str, Any]:
        return self.to_graph().to_json()

    def copy(self) -> World:
        """An independent copy of the current state (for environment resets)."""
        return World(self.to_graph())

    # -- queries -------------------------------------------------------------------------------------

    def __getitem__(self, node_id: str) -> Node:
        return self.nodes[node_id]

    def agents(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "agent"]

    def rooms(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "room"]

    def find_agent(self, name: str) -> Node:
        """An agent by id or by name (as typed: case, spacing and articles tolerated)."""
        if name in self.nodes and self.nodes[name].kind == "agent":
            return self.nodes[name]
        key = match_key(name)
        for node in self.nodes.values():
            if node.kind == "agent" and node.match == key:
                return node
        names = ", ".join(sorted(n.name for n in self.agents()))
        raise UnknownCharacter(f"no character '{name}' in this world; characters: {names}")

    # -- mutation ------------------------------------------------------------------------------------

    def move(self, node: Node, dest: Node) -> None:
        """Put ``node`` into ``dest`` (one container each, always); its size moves from the room left in
        ``dest`` to the room left in its old container. Whether it fits is the caller's check."""
        src = node.container
        if src is not None:
            del src.contents[node.id]
            src.contain_size += node.size
        node.container = dest
        dest.contents[node.id] = node
        dest.contain_size -= node.size

    def followers(self, leader: Node) -> list[Node]:
        """The characters following ``leader``, wherever they are."""
        return [n for n in self._agents if n.following is leader]

    def move_followers(self, leader: Node, dest: Node) -> list[Node]:
        """After ``leader`` went to room ``dest``: bring its followers, theirs, and so on, as LIGHT does.

        Followers come from wherever they are, each if there is room for it in ``dest`` (one that does
        not fit stays, and so do its own followers). Each character comes at most once, so following in
        a circle ends. Returns those who came, in order (breadth first).
        """
        came: list[Node] = []
        seen = {leader.id}
        queue = [leader]
        for current in queue:  # grows as followers come: breadth first, no recursion
            for f in self.followers(current):
                if f.id in seen:
                    continue
                seen.add(f.id)
                if f.container is not dest:
                    if not dest.fits(f):
                        continue
                    self.move(f, dest)
                    came.append(f)
                queue.append(f)
        return came

    def consume(self, node: Node) -> None:
        """Eaten or drunk: gone from the world."""
        if node.container is not None:
            del node.container.contents[node.id]
            node.container.contain_size += node.size
        for child in list(node.contents.values()):
            self.consume(child)
        node.container = None
        del self.nodes[node.id]
        self.consumed.append(node.id)

    # -- text ----------------------------------------------------------------------------------------

    def describe(self, actor: Node) -> str:
        """What ``actor`` sees, in the style of LIGHT's setting text (paper Figure 1)."""
        room = actor.container
        if room is None:
            return "You are nowhere."
        lines = [f"You are in {room.name if room.name.lower().startswith('the ') else 'the ' + room.name}."]
        if room.desc:
            lines.append(room.desc)
        things = [n.a() for n in room.contents.values() if n.kind == "object"]
        if things:
            lines.append(f"There's {join_list(things)} here.")
        others = [n for n in room.contents.values() if n.kind == "agent" and n is not actor]
        if others:
            names = join_list([n.a() if n.common else n.name for n in others])
            lines.append(f"{capitalize(names)} {'is' if len(others) == 1 else 'are'} here.")
        if room.neighbors:
            exits = [self.nodes[t].name for t in room.neighbors if t in self.nodes]
            lines.append(f"You can go to: {', '.join(exits)}.")
        lines.append("")
        lines.append(self.inventory(actor))
        return "\n".join(lines)

    def inventory(self, actor: Node) -> str:
        held = [n.a() for n in actor.contents.values() if not n.equipped]
        worn = [n.a() for n in actor.contents.values() if n.equipped == WORN]
        wielded = [n.a() for n in actor.contents.values() if n.equipped == WIELDED]
        parts = [f"You are carrying {join_list(held) if held else 'nothing'}."]
        if worn:
            parts.append(f"You are wearing {join_list(worn)}.")
        if wielded:
            parts.append(f"You are wielding {join_list(wielded)}.")
        return " ".join(parts)
