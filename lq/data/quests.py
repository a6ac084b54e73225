"""LIGHT-Quests stems: one JSON file per quest, ``{"data": {...}}``.

A stem holds the self character, its persona, the setting text, the goal (the "now" action),
short / mid / long motivations, six timeline steps (three past, three future; the goal goes in at
index 3 to make the 7-step timeline) and the quest's world ``graph``.

Splits: a folder with ``train/``, ``valid/`` and ``test/`` sub-folders (what ``lq data generate``
writes) is read as it is. A flat folder (the public release) is split as the original builder
does: shuffled with seed 42, then 80 / 10 / 10. File names are sorted first, so the split is the
same on every machine (the original shuffled in file-system order).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lq.data.errors import DataFormatError
from lq.data.fields import Fields
from lq.data.io import atomic_dir, read_json, write_json
from lq.data.splits import SPLITS, Splits, shuffled, split_by_tenths
from lq.data.world_graph import WorldGraph, parse_world_graph

TIMELINE_STEPS = 6  # three before the goal, three after
GOAL_INDEX = 3
MOTIVATIONS = ("short_motivation", "mid_motivation", "long_motivation")


@dataclass
class TimelineStep:
    label: str
    action: str
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "action": self.action, **self.extra}


@dataclass
class Quest:
    quest_id: str
    character: str
    persona: str
    description: str
    goal: str
    short_motivation: str
    mid_motivation: str
    long_motivation: str
    timeline: list[TimelineStep]
    graph: WorldGraph | None = None
    graph_as_string: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # unmodelled keys inside "data"
    file_extra: dict[str, Any] = field(default_factory=dict)  # unmodelled keys beside "data"
    source: str | None = field(default=None, compare=False)  # the file it was read from

    _KNOWN = frozenset({"character", "persona", "description", "goal", "timeline", "graph", *MOTIVATIONS})

    @property
    def full_timeline(self) -> list[TimelineStep]:
        """The 7-step timeline: the six stored steps with the goal inserted at index 3 as "now"."""
        steps = list(self.timeline)
        steps.insert(GOAL_INDEX, TimelineStep("now", self.goal))
        return steps

    @property
    def timeline_actions(self) -> list[str]:
        return [s.action for s in self.full_timeline]

    def motivation(self, level: str) -> str:
        return getattr(self, f"{level}_motivation")

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, quest_id: str | None = None) -> Quest:
        outer = Fields(obj, path, None, "quest file")
        f = Fields(outer.dict("data"), path, "data", "quest")
        steps_raw = f.list("timeline")
        if len(steps_raw) != TIMELINE_STEPS:
            raise f.error(
                "timeline",
                f"has {len(steps_raw)} steps, expected {TIMELINE_STEPS} "
                "(three past, three future; the goal is stored apart)",
                f'give exactly {TIMELINE_STEPS} {{"label", "action"}} steps',
            )
        timeline = []
        for i, step in enumerate(steps_raw):
            sf = Fields(step, path, "data", f"timeline[{i}]")
            try:
                timeline.append(
                    TimelineStep(sf.str("label"), sf.str("action", nonempty=True), sf.extra({"label", "action"}))
                )
            except DataFormatError as err:
                raise err.within(f"timeline[{i}]") from None
        graph_value = f.obj.get("graph")
        graph = parse_world_graph(graph_value, path, "data.graph") if graph_value is not None else None
        return cls(
            quest_id=quest_id if quest_id is not None else (Path(path).stem if path else ""),
            character=f.str("character", nonempty=True),
            persona=f.str("persona"),
            description=f.str("description"),
            goal=f.str("goal", nonempty=True),
            short_motivation=f.str("short_motivation"),
            mid_motivation=f.str("mid_motivation"),
            long_motivation=f.str("long_motivation"),
            timeline=timeline,
            graph=graph,
            graph_as_string=isinstance(graph_value, str),
            extra=f.extra(cls._KNOWN),
            file_extra=outer.extra({"data"}),
            source=str(path) if path is not None else None,
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "character": self.character,
            "persona": self.persona,
            "description": self.description,
            "goal": self.goal,
            "short_motivation": self.short_motivation,
            "mid_motivation": self.mid_motivation,
            "long_motivation": self.long_motivation,
            "timeline": [s.to_json() for s in self.timeline],
        }
        if self.graph is not None:
            g = self.graph.to_json()
            data["graph"] = json.dumps(g) if self.graph_as_string else g
        data.update(self.extra)
        return {"data": data, **self.file_extra}


def load_quest(path: str | Path) -> Quest:
    return Quest.from_json(read_json(path), path)


def write_quest(quest: Quest, path: str | Path) -> None:
    write_json(path, quest.to_json())


def _load_many(files: list[Path], skip_invalid: bool) -> list[Quest]:
    quests, bad = [], []
    for p in files:
        try:
            quests.append(load_quest(p))
        except DataFormatError as err:
            if not skip_invalid:
                raise
            bad.append(str(err))
    if bad:
        warnings.warn(f"skipped {len(bad)} malformed quest files; first: {bad[0]}", stacklevel=3)
    return quests


def load_quests(directory: str | Path, *, skip_invalid: bool = False) -> Splits[Quest]:
    """All quests under ``directory``, split into train / valid / test (see the module doc)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataFormatError(
            directory,
            "quest folder not found",
            fix="pass a folder of quest JSON files (or with train/ valid/ test/ inside)",
        )
    if all((directory / s).is_dir() for s in SPLITS):
        return Splits(*(_load_many(sorted((directory / s).glob("*.json")), skip_invalid) for s in SPLITS))
    files = sorted(directory.rglob("*.json"))
    if not files:
        raise DataFormatError(directory, "no quest JSON files found", fix="point at the folder holding the stems")
    return split_by_tenths(shuffled(_load_many(files, skip_invalid), seed=42))


def write_quests(splits: Splits[Quest], directory: str | Path, *, overwrite: bool = False) -> None:
    """Write ``directory/{train,valid,test}/<quest_id>.json``; the folder appears only when complete."""
    with atomic_dir(directory, overwrite=overwrite) as tmp:
        for split, quests in splits.items():
            (tmp / split).mkdir()
            for q in quests:
                if not q.quest_id:
                    raise ValueError("every quest needs a quest_id to be written (it names the file)")
                write_quest(q, tmp / split / f"{q.quest_id}.json")
