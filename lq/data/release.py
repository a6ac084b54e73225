"""The public LIGHT-Quests release in LIGHT's own layout, its demonstrations linked to the quests they were played on.

Paths are relative to the LIGHT data root (``LIGHT_DATAPATH`` in LIGHT's code; ``DATA=<root>`` in lq)::

    quests/stems/batch_1/<name>.json                                  the quest stems
    quests/rl_quests_resources/wild_quest_completions/perfect2.json   raw game logs: the paper's RL data
    quests/wild_chats/formatted_wild_completions.json                 processed demonstrations

A raw game log is ``{"score", "dialogue": [location, {"id": "human" | <bot>, "type": "speech" | "action" | "choice",
"text", "score"}, ...], "human_persona": {"name", "id", "persona", "motivation", "goal"}, "bot_persona": {"name",
"id", "persona"}, "location": {"name", "description", "quest_file"}}``. It names its stem (``location.quest_file``).
LIGHT's preprocess (``light/modeling/agents/quests/rl/switch/process/format.py``) drops logs scored below 10 and logs
with no action before the human turn scored 5 (the goal), skips ``choice`` turns, and keeps the first nine tenths for
training and the tenth for testing; lq carves its validation split from the end of that training part.

The processed file names no stem: a demonstration is linked to the stem whose goal and one of whose three motivations
are the self character's (and, among several, whose character has its name). Either way the self and partner ids are
the graph's (the ids the file gives when the stem's graph has them, else the agents of those names), and the linked
demonstration carries ``conv_info.quest_id``, ``self_id``, ``partner_id`` and ``goal`` as lq's generated data does.
Nothing is dropped silently: :class:`LinkReport` counts what was linked, filtered and left unlinked, and why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lq.data.demos import DemoAct, DemoCharacter, Demonstration, load_demo_file
from lq.data.errors import DataFormatError
from lq.data.fields import Fields
from lq.data.io import read_json_list, write_json
from lq.data.quests import MOTIVATIONS, Quest
from lq.data.splits import Splits, split_by_percent
from lq.data.world_graph import WorldGraph

STEMS = Path("quests/stems/batch_1")
RAW_LOGS = Path("quests/rl_quests_resources/wild_quest_completions/perfect2.json")
PROCESSED = Path("quests/wild_chats/formatted_wild_completions.json")
MIN_SCORE = 10  # LIGHT's preprocess keeps logs scored at least this
GOAL_SCORE = 5  # the human turn scored this reached the goal
HUMAN = "human"
RAW_TURN_TYPES = ("speech", "action", "choice")

FILTERED_SCORE = f"score < {MIN_SCORE}"
FILTERED_NO_ACTION = "no action before the goal"
LEFT_BY_SPLIT = "beyond the ten tenths of the split"
_TURN_KEYS = frozenset({"id", "type", "text", "score"})


def is_release(root: str | Path) -> bool:
    """Whether ``root`` is a LIGHT data root (it has ``quests/stems/batch_1``)."""
    return (Path(root) / STEMS).is_dir()


def _score(f: Fields, key: str, *, required: bool = False) -> int | None:
    """A score as LIGHT writes it: an integer, or a number or numeric string (its preprocess calls ``int()``)."""
    value = f.obj.get(key)
    if value is None:
        if required:
            raise f.error(key, "missing required field", f'add "{key}" (an integer) to this record')
        return None
    if not isinstance(value, bool):
        try:
            return int(value)
        except (TypeError, ValueError):
            pass
    raise f.error(key, f"expected an integer score, found {value!r}", f'set "{key}" to an integer')


@dataclass
class RawTurn:
    speaker: str | int  # "human", or the bot's id
    type: str
    text: str
    score: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.speaker, "type": self.type, "text": self.text}
        if self.score is not None:
            out["score"] = self.score
        return {**out, **self.extra}


@dataclass
class RawPersona:
    name: str
    id: str | int
    persona: str
    motivation: str | None = None  # the partner (bot) has none
    goal: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = frozenset({"name", "id", "persona", "motivation", "goal"})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "id": self.id, "persona": self.persona}
        if self.motivation is not None:
            out["motivation"] = self.motivation
        if self.goal is not None:
            out["goal"] = self.goal
        return {**out, **self.extra}


@dataclass
class RawLog:
    """One game log of ``perfect2.json``; every field is kept, so writing gives back what was read."""

    score: int
    location_turn: Any  # dialogue[0]: the location, which the preprocess skips
    turns: list[RawTurn]
    human: RawPersona
    bot: RawPersona
    location_name: str
    location_description: str
    quest_file: str
    location_extra: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = frozenset({"score", "dialogue", "human_persona", "bot_persona", "location"})

    @property
    def quest_id(self) -> str:
        return Path(self.quest_file).stem

    def actions_before_goal(self) -> int:
        """Non-empty actions up to the human turn scored 5, as the preprocess counts them (either side's)."""
        count = 0
        for t in self.turns:
            count += t.type == "action" and t.text != ""
            if t.speaker == HUMAN and t.score == GOAL_SCORE:
                break
        return count

    def to_json(self) -> dict[str, Any]:
        location = {
            "name": self.location_name,
            "description": self.location_description,
            "quest_file": self.quest_file,
            **self.location_extra,
        }
        return {
            "score": self.score,
            "dialogue": [self.location_turn, *(t.to_json() for t in self.turns)],
            "human_persona": self.human.to_json(),
            "bot_persona": self.bot.to_json(),
            "location": location,
            **self.extra,
        }

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: int | None = None) -> RawLog:
        f = Fields(obj, path, record, "game log")
        dialogue = f.list("dialogue")
        if not dialogue:
            raise f.error("dialogue", "is empty", "a game log's dialogue starts with its location, then the turns")
        turns = []
        for i, t in enumerate(dialogue[1:], start=1):
            tf = Fields(t, path, record, f"dialogue[{i}]")
            try:
                kind = tf.str("type")
                if kind not in RAW_TURN_TYPES:
                    raise tf.error("type", f"unknown turn type '{kind}'", f"use one of {', '.join(RAW_TURN_TYPES)}")
                turns.append(RawTurn(tf.id("id"), kind, tf.str("text"), _score(tf, "score"), tf.extra(_TURN_KEYS)))
            except DataFormatError as err:
                raise err.within(f"dialogue[{i}]") from None
        loc = Fields(f.dict("location"), path, record, "location")
        try:
            quest_file = loc.str("quest_file", nonempty=True)
            name, description = loc.str("name"), loc.str("description")
        except DataFormatError as err:
            raise err.within("location") from None
        return cls(
            score=_score(f, "score", required=True),  # type: ignore[arg-type]
            location_turn=dialogue[0],
            turns=turns,
            human=_persona(f, "human_persona", path, record),
            bot=_persona(f, "bot_persona", path, record),
            location_name=name,
            location_description=description,
            quest_file=quest_file,
            location_extra=loc.extra({"name", "description", "quest_file"}),
            extra=f.extra(cls._KNOWN),
        )


def _persona(f: Fields, key: str, path: str | Path | None, record: int | None) -> RawPersona:
    pf = Fields(f.dict(key), path, record, key)
    try:
        return RawPersona(
            name=pf.str("name", nonempty=True),
            id=pf.id("id"),
            persona=pf.str("persona", ""),
            motivation=pf.str("motivation", None, nullable=True),
            goal=pf.str("goal", None, nullable=True),
            extra=pf.extra(RawPersona._KNOWN),
        )
    except DataFormatError as err:
        raise err.within(key) from None


def load_raw_logs(path: str | Path) -> list[RawLog]:
    data = read_json_list(
        path,
        "game logs",
        'perfect2.json is [ {"score", "dialogue", "human_persona", "bot_persona", "location"}, ... ]',
    )
    return [RawLog.from_json(d, path, i) for i, d in enumerate(data)]


def write_raw_logs(logs: Sequence[RawLog], path: str | Path) -> None:
    write_json(path, [log.to_json() for log in logs])


@dataclass
class LinkReport:
    """What became of every demonstration of one file: linked to its quest, filtered as the paper does, or left
    unlinked (with the reason and the first example of each)."""

    source: str
    total: int = 0
    filtered: Counter[str] = field(default_factory=Counter)
    unlinked: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)
    split: dict[str, int] = field(default_factory=dict)

    @property
    def linked(self) -> int:
        return sum(self.split.values())

    def skip(self, reason: str, example: str, *, filtered: bool = False) -> None:
        (self.filtered if filtered else self.unlinked)[reason] += 1
        self.examples.setdefault(reason, example)

    def lines(self) -> list[str]:
        split = " / ".join(f"{n} {s}" for s, n in self.split.items())
        out = [f"{self.source}: {self.total} demonstrations, {self.linked} linked to their quests ({split})"]
        for title, counts in (("filtered", self.filtered), ("unlinked", self.unlinked)):
            for reason, n in counts.most_common():
                out.append(f"  {title}: {n} ({reason}; first: {self.examples[reason]})")
        return out


def norm_text(text: str) -> str:
    """A text as the linking compares goals, names and motivations: case and spacing aside."""
    return " ".join(text.lower().split())


def _graph_id(graph: WorldGraph, given: str | int, name: str) -> str | None:
    """The node id of a character in a quest's graph: the id the file gives when the graph has it, else the agent
    of that name."""
    if str(given) in graph.nodes and graph.nodes[str(given)].kind == "agent":
        return str(given)
    matches = [a.node_id for a in graph.agents() if norm_text(a.name) == norm_text(name)]
    return matches[0] if len(matches) == 1 else None


def _link(demo: Demonstration, quest: Quest, report: LinkReport, where: str) -> Demonstration | None:
    """``demo`` with ``quest_id``, ``self_id``, ``partner_id`` and ``goal`` set from ``quest``, or None (reported)."""
    if quest.graph is None:
        report.skip("its quest has no graph", f"{where}: {quest.source}")
        return None
    ids = {}
    for side, c in (("self", demo.self_character), ("partner", demo.partner)):
        ids[side] = _graph_id(quest.graph, c.id, c.name)
        if ids[side] is None:
            report.skip(f"the {side} character is not in its quest's graph", f"{where}: {c.name!r} ({quest.source})")
            return None
    demo.conv_extra.update(quest_id=quest.quest_id, self_id=ids["self"], partner_id=ids["partner"], goal=quest.goal)
    return demo


def raw_to_demonstration(log: RawLog) -> Demonstration:
    """A game log as lq's demonstration, laid out as LIGHT's preprocess formats it (partner first, self second; who
    took each turn by its id; ``choice`` turns skipped). Turns with empty text are left out too."""
    partner = DemoCharacter(
        log.bot.id, log.bot.name, [log.bot.persona], "", {"goal": "", "motivation_type": ""}, key_name=log.bot.name
    )
    self_character = DemoCharacter(
        log.human.id,
        log.human.name,
        [log.human.persona],
        log.human.motivation or "",
        {"goal": log.human.goal or "", "motivation_type": ""},
        key_name=log.human.name,
    )
    acts = []
    for t in log.turns:
        if t.type == "choice" or not t.text.strip():
            continue
        sid = log.human.id if t.speaker == HUMAN else log.bot.id
        extra = {} if t.score is None else {"score": t.score}
        acts.append(DemoAct(t.type, t.text, extra=extra, speaker_id=sid))  # type: ignore[arg-type]
    return Demonstration(
        room_category=log.location_name,
        room_description=log.location_description,
        partner=partner,
        self_character=self_character,
        acts=acts,
        conv_extra={"score": log.score, "quest_file": log.quest_file},
    )


def link_raw_logs(
    logs: Sequence[RawLog], stems: dict[str, Quest], source: str = str(RAW_LOGS)
) -> tuple[Splits[Demonstration], LinkReport]:
    """The paper's RL demonstrations: filtered and split as LIGHT's preprocess does, each linked to its stem."""
    report = LinkReport(source, total=len(logs))
    kept = []
    for i, log in enumerate(logs):
        where = f"record {i} ({log.quest_file})"
        if log.score < MIN_SCORE:
            report.skip(FILTERED_SCORE, where, filtered=True)
        elif log.actions_before_goal() == 0:
            report.skip(FILTERED_NO_ACTION, where, filtered=True)
        elif log.quest_id not in stems:
            report.skip("its quest_file is not among the stems", f"{where}: no stems/batch_1/{log.quest_file}")
        else:
            demo = raw_to_demonstration(log)
            if not demo.acts:
                report.skip("no turn with text", where)
            elif _link(demo, stems[log.quest_id], report, where) is not None:
                kept.append(demo)
    tenth = len(kept) // 10
    splits = Splits(kept[: 8 * tenth], kept[8 * tenth : 9 * tenth], kept[9 * tenth : 10 * tenth])
    for _ in kept[10 * tenth :]:
        report.skip(LEFT_BY_SPLIT, "the preprocess splits int(n/10) * 10 logs", filtered=True)
    report.split = splits.counts()
    return splits, report


def match_stem(demo: Demonstration, index: dict[tuple[str, str], list[Quest]]) -> tuple[Quest | None, str]:
    """The stem a processed demonstration was played on: same goal and one of its motivations, then same name."""
    me = demo.self_character
    found = index.get((norm_text(me.goal), norm_text(me.motivation)), [])
    if len(found) > 1:
        named = [q for q in found if norm_text(q.character) == norm_text(me.name)]
        found = named or found
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, "no stem has its goal and motivation"
    return None, "ambiguous: several stems have its goal, motivation and name"


def stem_index(quests: Sequence[Quest]) -> dict[tuple[str, str], list[Quest]]:
    index: dict[tuple[str, str], list[Quest]] = {}
    for q in quests:
        for m in dict.fromkeys(norm_text(getattr(q, m)) for m in MOTIVATIONS):
            index.setdefault((norm_text(q.goal), m), []).append(q)
    return index


def link_processed(
    demos: Sequence[Demonstration], quests: Sequence[Quest], source: str = str(PROCESSED)
) -> tuple[Splits[Demonstration], LinkReport]:
    """The processed demonstrations, split 80 / 10 / 10 in file order as the original builder does, each linked to
    the stem it matches (unmatched and ambiguous ones are counted, not kept)."""
    report = LinkReport(source, total=len(demos))
    index = stem_index(quests)
    out: Splits[Demonstration] = Splits()
    offset = 0
    for split, part in split_by_percent(list(demos)).items():
        for i, demo in enumerate(part, start=offset):
            where = f"record {i}"
            quest, why = match_stem(demo, index)
            if quest is None:
                report.skip(why, f"{where}: goal {demo.self_character.goal!r}")
            elif _link(demo, quest, report, where) is not None:
                out[split].append(demo)
        offset += len(part)
    report.split = out.counts()
    return out, report


def load_processed(path: str | Path, quests: Sequence[Quest]) -> tuple[Splits[Demonstration], LinkReport]:
    return link_processed(load_demo_file(path), quests, str(path))
