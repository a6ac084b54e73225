"""Data formats of LIGHT and LIGHT-Quests: typed records, validating loaders, atomic writers.

Every loader raises :class:`DataFormatError` (naming file, record, field and fix) for bad input.
"""

from lq.data.atomic import AtomicEvent, load_atomic_csv, write_atomic_csv
from lq.data.demos import (
    DemoAct,
    DemoCharacter,
    Demonstration,
    load_demo_file,
    load_demos,
    write_demo_file,
    write_demos,
)
from lq.data.errors import DataFormatError
from lq.data.light_db import Character, LightDB, LightObject, Room, load_light_db, write_light_db
from lq.data.quests import Quest, TimelineStep, load_quest, load_quests, write_quest, write_quests
from lq.data.splits import SPLITS, Splits
from lq.data.world_graph import GraphNode, WorldGraph, load_world_graph, parse_world_graph, write_world_graph

__all__ = [
    "SPLITS",
    "AtomicEvent",
    "Character",
    "DataFormatError",
    "DemoAct",
    "DemoCharacter",
    "Demonstration",
    "GraphNode",
    "LightDB",
    "LightObject",
    "Quest",
    "Room",
    "Splits",
    "TimelineStep",
    "WorldGraph",
    "load_atomic_csv",
    "load_demo_file",
    "load_demos",
    "load_light_db",
    "load_quest",
    "load_quests",
    "load_world_graph",
    "parse_world_graph",
    "write_atomic_csv",
    "write_demo_file",
    "write_demos",
    "write_light_db",
    "write_quest",
    "write_quests",
    "write_world_graph",
]
