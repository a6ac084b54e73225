"""LIGHT world graphs: the LIGHT engine's own JSON, as in ``../shared/data/light_worlds``.

``{"agents": [...], "nodes": {id: {...}}, "objects": [...], "rooms": [...], ...}``. A node is a
room, an agent (character) or an object; ``container_node`` says where it is, ``contained_nodes``
what it holds, rooms list ``neighbors``. The same JSON is the ``graph`` field of a quest stem
(there it may be embedded as a JSON string). The records here are a typed, validated view;
:mod:`lq.world` builds the playable state from them.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lq.data.errors import DataFormatError
from lq.data.fields import Fields
from lq.data.io import read_json, write_json

VOID = "VOID"
NodeKind = Literal["room", "agent", "object"]
AFFORDANCES = ("gettable", "wearable", "wieldable", "food", "drink", "container")
# LIGHT's defaults (light/graph/elements/graph_nodes.py) where a node has no size or contain_size (or null):
# a thing's own size, and the room left inside it. LIGHT saves contain_size as the room *left* (its
# engine subtracts a thing's size when it moves in), so that is what the field means here too.
AGENT_SIZE, AGENT_CONTAIN_SIZE = 20, 20
ROOM_SIZE, ROOM_CONTAIN_SIZE = 1, 100_000
OBJECT_SIZE, CONTAINER_SIZE, CONTAINER_CONTAIN_SIZE = 1, 20, 20
MAX_WIELDABLE_ITEMS, MAX_WEARABLE_ITEMS = 1, 3
SIZES = ("size", "contain_size")
LIMITS = ("max_wieldable_items", "max_wearable_items")


@dataclass
class Edge:
    """A path from one room to a neighbouring room."""

    target_id: str
    label: str
    examine_desc: str | None = None
    locked_edge: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = frozenset({"target_id", "label", "examine_desc", "locked_edge"})


@dataclass
class GraphNode:
    node_id: str
    kind: NodeKind
    name: str
    container_id: str
    contained_ids: list[str]
    name_prefix: str = "a"
    desc: str = ""
    neighbors: dict[str, Edge] = field(default_factory=dict)
    # objects
    gettable: bool = False
    wearable: bool = False
    wieldable: bool = False
    food: bool = False
    drink: bool = False
    container: bool = False
    surface_type: str = "on"
    equipped: Any = None
    # every node: its size and the room left inside it (LIGHT's defaults: see default_sizes)
    size: float = OBJECT_SIZE
    contain_size: float = 0
    # agents
    persona: str = ""
    char_type: str = ""
    max_wieldable_items: int = MAX_WIELDABLE_ITEMS
    max_wearable_items: int = MAX_WEARABLE_ITEMS
    raw: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    def affordances(self) -> dict[str, bool]:
        return {a: getattr(self, a) for a in AFFORDANCES}

    def to_json(self) -> dict[str, Any]:
        """The node as LIGHT JSON: the fields it was read from, with every typed field that changed since
        written over them (so an unchanged node writes back exactly as it was read)."""
        out = dict(self.raw)
        before = parse_node(self.raw, None, self.node_id) if self.raw else None

        def changed(*names: str) -> bool:
            return before is None or any(getattr(before, n) != getattr(self, n) for n in names)

        for name in ("node_id", "name", "name_prefix", "desc"):
            if changed(name):
                out[name] = getattr(self, name)
        if changed("kind"):
            out.update(room=self.kind == "room", agent=self.kind == "agent", object=self.kind == "object")
            out["classes"] = [self.kind]
        if changed("container_id"):
            out["container_node"] = {"target_id": self.container_id}
        if changed("contained_ids"):
            out["contained_nodes"] = {cid: {"target_id": cid} for cid in self.contained_ids}
        if self.kind == "room" and changed("neighbors"):
            out["neighbors"] = {
                tid: {
                    "examine_desc": e.examine_desc,
                    "label": e.label,
                    "locked_edge": e.locked_edge,
                    "target_id": e.target_id,
                    **e.extra,
                }
                for tid, e in self.neighbors.items()
            }
        for name in SIZES:
            if changed(name):
                out[name] = getattr(self, name)
        if self.kind == "object":
            for name in (*AFFORDANCES, "surface_type", "equipped"):
                if changed(name):
                    out[name] = getattr(self, name)
        if self.kind == "agent":
            for name in ("persona", "char_type", *LIMITS):
                if changed(name):
                    out[name] = getattr(self, name)
        return out


def _node_kind(f: Fields) -> NodeKind:
    flags = [k for k in ("room", "agent", "object") if f.flag(k, False)]
    if len(flags) == 1:
        return flags[0]  # type: ignore[return-value]
    if not flags:
        classes = f.str_list("classes", [])
        flags = [k for k in ("room", "agent", "object") if k in classes]
        if len(flags) == 1:
            return flags[0]  # type: ignore[return-value]
    raise f.error(
        "room/agent/object",
        f"node must be exactly one of room, agent, object (found {flags or 'none'})",
        'set exactly one of "room", "agent", "object" to true',
    )


def _target(f: Fields, key: str) -> str:
    ref = Fields(f.dict(key), f.path, f.record, key)
    return ref.str("target_id", nonempty=True)


def _flag(f: Fields, name: str, classes: list[str]) -> bool:
    """An affordance: the node's own field where it has one, else its LIGHT classes."""
    if name in f.obj:
        return f.flag(name)
    if name == "gettable":
        return "not_gettable" not in classes
    return name in classes


def default_sizes(kind: NodeKind, container: bool = False) -> tuple[int, int]:
    """LIGHT's (size, contain_size) for a node that gives none: rooms hold 100000, characters are 20
    and carry 20, containers are 20 and hold 20, other objects are 1 and hold nothing."""
    if kind == "room":
        return ROOM_SIZE, ROOM_CONTAIN_SIZE
    if kind == "agent":
        return AGENT_SIZE, AGENT_CONTAIN_SIZE
    return (CONTAINER_SIZE, CONTAINER_CONTAIN_SIZE) if container else (OBJECT_SIZE, 0)


def _amount(f: Fields, key: str, default: float) -> float:
    """A size, a capacity or a limit: a number >= 0; absent or null means LIGHT's default."""
    value = f.obj.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        shown = json.dumps(value) if isinstance(value, (str, bool, int, float)) else type(value).__name__
        raise f.error(key, f"expected a number >= 0, found {shown}", f'set "{key}" to a number >= 0 (or leave it out)')
    return value


def parse_node(obj: Any, path: str | Path | None, key: str) -> GraphNode:
    f = Fields(obj, path, f"node '{key}'", "node")
    kind = _node_kind(f)
    node_id = f.str("node_id", nonempty=True)
    if node_id != key:
        raise f.error(
            "node_id",
            f"node_id '{node_id}' differs from its key '{key}'",
            'make the key of each entry in "nodes" its node_id',
        )
    contained = f.dict("contained_nodes", {})
    for cid, ref in contained.items():
        Fields(ref, path, f"node '{key}'", f"contained_nodes['{cid}']").str("target_id", nonempty=True)
    classes = f.str_list("classes", [])
    node = GraphNode(
        node_id=node_id,
        kind=kind,
        name=f.str("name", nonempty=True),
        container_id=_target(f, "container_node"),
        contained_ids=list(contained),
        name_prefix=f.str("name_prefix", "a"),
        desc=f.str("desc", ""),
        raw=dict(obj),
    )
    if kind == "room":
        for tid, e in f.dict("neighbors", {}).items():
            ef = Fields(e, path, f"node '{key}'", f"neighbors['{tid}']")
            node.neighbors[tid] = Edge(
                target_id=ef.str("target_id", nonempty=True),
                label=ef.str("label", ""),
                examine_desc=ef.str("examine_desc", None, nullable=True),
                locked_edge=e.get("locked_edge"),
                extra=ef.extra(Edge._KNOWN),
            )
            if node.neighbors[tid].target_id != tid:
                raise ef.error("target_id", f"target_id differs from its key '{tid}'", "make them equal")
    elif kind == "object":
        for a in AFFORDANCES:
            setattr(node, a, _flag(f, a, classes))
        node.surface_type = f.str("surface_type", "on") or "on"
        node.equipped = obj.get("equipped")
    else:
        node.persona = f.str("persona", "")
        node.char_type = f.str("char_type", "")
        node.max_wieldable_items = _amount(f, "max_wieldable_items", MAX_WIELDABLE_ITEMS)
        node.max_wearable_items = _amount(f, "max_wearable_items", MAX_WEARABLE_ITEMS)
    size, contain_size = default_sizes(kind, node.container)
    node.size = _amount(f, "size", size)
    node.contain_size = _amount(f, "contain_size", contain_size)
    return node


@dataclass
class WorldGraph:
    nodes: dict[str, GraphNode]
    title: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # The order of the "agents", "objects" and "rooms" lists as read, so that a write keeps it.
    listed: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)

    _KNOWN = frozenset({"nodes", "agents", "objects", "rooms", "title"})

    def ids(self, kind: NodeKind) -> list[str]:
        return [nid for nid, n in self.nodes.items() if n.kind == kind]

    @property
    def rooms(self) -> list[GraphNode]:
        return [n for n in self.nodes.values() if n.kind == "room"]

    @property
    def agents(self) -> list[GraphNode]:
        return [n for n in self.nodes.values() if n.kind == "agent"]

    @property
    def objects(self) -> list[GraphNode]:
        return [n for n in self.nodes.values() if n.kind == "object"]

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"nodes": {nid: n.to_json() for nid, n in self.nodes.items()}}
        for key in ("agents", "objects", "rooms"):
            ids = set(self.ids(key[:-1]))  # type: ignore[arg-type]
            kept = [nid for nid in self.listed.get(key, []) if nid in ids]
            out[key] = kept + sorted(ids - set(kept))
        if self.title is not None:
            out["title"] = self.title
        out.update(self.extra)
        return out

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: str | int | None = None) -> WorldGraph:
        f = Fields(obj, path, record, "world graph")
        raw_nodes = f.dict("nodes")
        if not raw_nodes:
            raise f.error("nodes", "world graph has no nodes", "add at least one room")
        nodes = {key: parse_node(n, path, key) for key, n in raw_nodes.items()}
        _check_references(nodes, path)
        listed = {}
        for key in ("agents", "objects", "rooms"):
            listed[key] = f.str_list(key, [])
            for nid in listed[key]:
                if nid not in nodes or nodes[nid].kind != key[:-1]:
                    raise f.error(
                        key,
                        f"lists '{nid}', which is not a {key[:-1]} node",
                        f'remove it from "{key}" or add the {key[:-1]} to "nodes"',
                    )
        return cls(nodes=nodes, title=f.str("title", None, nullable=True), extra=f.extra(cls._KNOWN), listed=listed)


def _check_references(nodes: dict[str, GraphNode], path: str | Path | None) -> None:
    for nid, n in nodes.items():
        record = f"node '{nid}'"
        # Real LIGHT worlds hold a few objects placed nowhere (container VOID): they are kept, out of play.
        if n.container_id == VOID:
            pass
        elif n.container_id not in nodes:
            raise DataFormatError(
                path,
                f"container '{n.container_id}' is not a node",
                record=record,
                field="container_node",
                fix='point it at a node in "nodes" (or VOID for rooms)',
            )
        elif nid not in nodes[n.container_id].contained_ids:
            raise DataFormatError(
                path,
                f"is inside '{n.container_id}', which does not list it",
                record=record,
                field="container_node",
                fix=f"add '{nid}' to contained_nodes of '{n.container_id}'",
            )
        if n.kind == "room" and n.container_id != VOID:
            raise DataFormatError(
                path,
                "a room must not be inside another node",
                record=record,
                field="container_node",
                fix='set its target_id to "VOID"',
            )
    # Second pass, once every node's own container is known good: the lists that point the other way.
    for nid, n in nodes.items():
        record = f"node '{nid}'"
        for cid in n.contained_ids:
            if cid not in nodes or nodes[cid].container_id != nid:
                raise DataFormatError(
                    path,
                    f"lists '{cid}' as contained, but that node is not inside it",
                    record=record,
                    field="contained_nodes",
                    fix=f"remove '{cid}' or set its container_node to '{nid}'",
                )
        for tid in n.neighbors:
            if tid not in nodes or nodes[tid].kind != "room":
                raise DataFormatError(
                    path,
                    f"neighbour '{tid}' is not a room node",
                    record=record,
                    field="neighbors",
                    fix='point every neighbour at a room in "nodes"',
                )
    _check_containment(nodes, path)


def _check_containment(nodes: dict[str, GraphNode], path: str | Path | None) -> None:
    """Every object and character ends in a room (or VOID) going out through its containers: no containment cycle
    (an object inside itself, two boxes inside each other, of any length), and no character inside an object or
    another character (a character stands in a room: one carried would be listed as a thing to drop)."""
    done: set[str] = set()  # nodes whose way out is known to end
    for start in nodes:
        chain, at = [], start
        while at in nodes and at not in done and nodes[at].kind != "room":
            if at in chain:
                cycle = chain[chain.index(at) :] + [at]
                raise DataFormatError(
                    path,
                    f"containment cycle {' -> '.join(cycle)}: no room holds them",
                    record=f"node '{at}'",
                    field="container_node",
                    fix=f"set the container_node of one of {', '.join(dict.fromkeys(cycle))} to a room (or VOID)",
                )
            chain.append(at)
            at = nodes[at].container_id
        done.update(chain)
    for nid, n in nodes.items():
        if n.kind == "agent" and n.container_id in nodes and nodes[n.container_id].kind != "room":
            holder = "character" if nodes[n.container_id].kind == "agent" else "object"
            raise DataFormatError(
                path,
                f"a character inside the {holder} '{n.container_id}'",
                record=f"node '{nid}'",
                field="container_node",
                fix="put the character in a room",
            )


def parse_world_graph(value: Any, path: str | Path | None = None, record: str | int | None = None) -> WorldGraph:
    """A world graph from its JSON object, or from a JSON string holding it (as quest stems embed it)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as err:
            raise DataFormatError(
                path,
                f"graph string is not valid JSON ({err.msg})",
                record=record,
                field="graph",
                fix="embed the world graph as a JSON object or valid JSON string",
            ) from None
    return WorldGraph.from_json(value, path, record)


def load_world_graph(path: str | Path) -> WorldGraph:
    return parse_world_graph(read_json(path), path)


def write_world_graph(graph: WorldGraph, path: str | Path) -> None:
    write_json(path, graph.to_json())
