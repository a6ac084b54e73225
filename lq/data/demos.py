"""Human demonstrations of quests: the "wild completions" list format.

A file is a JSON list of ``{"conv_info": {"room": {"category", "description"}, "characters":
[[key, {"name", "personas", "motivation", ...}], ...] (partner first, self second), "acts": [{"type":
"speech"|"action"|"emote", "text", "id", "task_data": {"actions": [...]}}]}}``. A character's key is its
id, or ``[name, id]`` as in the public release (``formatted_wild_completions.json``); the release's
characters also carry ``goal`` and ``motivation_type``. An act's ``id`` names who took it (one of the
two characters' ids); acts without one alternate, partner at even indices and self at odd ones (what
``lq data generate`` writes). ``task_data.actions`` lists the valid actions at that turn.

Splits: a folder holding ``train.json``, ``valid.json`` and ``test.json`` (what ``lq data
generate`` writes) is read as it is; a single file (the public release) is split in file order
80 / 10 / 10 as the original builder does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lq.data.errors import DataFormatError
from lq.data.fields import Fields
from lq.data.io import atomic_dir, read_json_list, write_json
from lq.data.splits import SPLITS, Splits, split_by_percent

ACT_TYPES = ("speech", "action", "emote")
ActType = Literal["speech", "action", "emote"]
PARTNER, SELF = "partner", "self"


@dataclass
class DemoCharacter:
    id: str | int
    name: str
    personas: list[str]
    motivation: str
    extra: dict[str, Any] = field(default_factory=dict)
    key_name: str | None = None  # the release keys a character by [name, id]: the name written there

    @property
    def persona(self) -> str:
        return " ".join(self.personas)

    @property
    def goal(self) -> str:
        """The act goal the character was given (the release's processed file says it; else empty)."""
        goal = self.extra.get("goal")
        return goal if isinstance(goal, str) else ""

    def to_json(self) -> list[Any]:
        key = self.id if self.key_name is None else [self.key_name, self.id]
        return [key, {"name": self.name, "personas": self.personas, "motivation": self.motivation, **self.extra}]


@dataclass
class DemoAct:
    type: ActType
    text: str
    actions: list[str] | None = None  # valid actions at this turn (task_data.actions)
    task_data_extra: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    speaker_id: str | int | None = None  # the "id" of who took the act, where the file says it

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "text": self.text}
        if self.speaker_id is not None:
            out["id"] = self.speaker_id
        if self.actions is not None or self.task_data_extra:
            task_data = dict(self.task_data_extra)
            if self.actions is not None:
                task_data["actions"] = self.actions
            out["task_data"] = task_data
        out.update(self.extra)
        return out


@dataclass
class Demonstration:
    room_category: str
    room_description: str
    partner: DemoCharacter
    self_character: DemoCharacter
    acts: list[DemoAct]
    room_extra: dict[str, Any] = field(default_factory=dict)
    conv_extra: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def speaker(self, turn: int) -> str:
        """Who took act ``turn``: by the act's ``id`` where it has one, else the partner at even turns and the
        self character at odd ones."""
        sid = self.acts[turn].speaker_id
        if sid is None:
            return PARTNER if turn % 2 == 0 else SELF
        return SELF if sid == self.self_character.id else PARTNER

    def self_acts(self, act_type: str | None = None) -> list[DemoAct]:
        return [
            a for i, a in enumerate(self.acts) if self.speaker(i) == SELF and (act_type is None or a.type == act_type)
        ]

    def count(self, act_type: str) -> int:
        return sum(a.type == act_type for a in self.acts)

    def to_json(self) -> dict[str, Any]:
        room = {"category": self.room_category, "description": self.room_description, **self.room_extra}
        conv = {
            "room": room,
            "characters": [self.partner.to_json(), self.self_character.to_json()],
            "acts": [a.to_json() for a in self.acts],
            **self.conv_extra,
        }
        return {"conv_info": conv, **self.extra}

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: int | None = None) -> Demonstration:
        outer = Fields(obj, path, record, "demonstration")
        f = Fields(outer.dict("conv_info"), path, record, "conv_info")
        rf = Fields(f.dict("room"), path, record, "room")
        chars = f.list("characters")
        if len(chars) != 2:
            raise f.error(
                "characters",
                f"has {len(chars)} entries, expected 2 (partner first, self second)",
                "list exactly [[partner_id, {...}], [self_id, {...}]]",
            )
        partner, self_character = (_character(c, path, record, i) for i, c in enumerate(chars))
        if partner.id == self_character.id:  # every act would be credited to the self character
            raise f.error(
                "characters[1][0]",
                f"the self character's id {self_character.id!r} is the partner's too",
                "give the two characters different ids (the acts' \"id\" says who took each)",
            )
        acts_raw = f.list("acts")
        if not acts_raw:
            raise f.error("acts", "has no turns", "give the demonstration at least one act")
        acts = [_act(a, path, record, i) for i, a in enumerate(acts_raw)]
        ids = (partner.id, self_character.id)
        for i, act in enumerate(acts):
            if act.speaker_id is not None and act.speaker_id not in ids:
                raise f.error(
                    f"acts[{i}].id",
                    f"names '{act.speaker_id}', who is neither character ({partner.id!r}, {self_character.id!r})",
                    "give the id of the partner or of the self character (or leave it out: acts then alternate)",
                )
        return cls(
            room_category=rf.str("category"),
            room_description=rf.str("description"),
            partner=partner,
            self_character=self_character,
            acts=acts,
            room_extra=rf.extra({"category", "description"}),
            conv_extra=f.extra({"room", "characters", "acts"}),
            extra=outer.extra({"conv_info"}),
        )


def _character(entry: Any, path: str | Path | None, record: int | None, i: int) -> DemoCharacter:
    name = f"characters[{i}]"
    if not isinstance(entry, list) or len(entry) != 2:
        raise DataFormatError(
            path,
            "expected a pair [id, {name, personas, motivation}]",
            record=record,
            field=name,
            fix="write each character as [id, {...}]",
        )
    key, info = entry
    key_name = None
    if isinstance(key, list) and len(key) == 2 and isinstance(key[0], str):  # the release's [name, id]
        key_name, key = key
    if not _is_id(key):
        raise DataFormatError(
            path,
            "character key must be its id (a string or an integer) or [name, id]",
            record=record,
            field=f"{name}[0]",
            fix="write the character's id, or [name, id] as the public release does",
        )
    cf = Fields(info, path, record, f"{name}[1]")
    try:
        return DemoCharacter(
            id=key,
            name=cf.str("name", nonempty=True),
            personas=cf.str_list("personas"),
            motivation=cf.str("motivation"),
            extra=cf.extra({"name", "personas", "motivation"}),
            key_name=key_name,
        )
    except DataFormatError as err:
        raise err.within(name) from None


def _is_id(value: Any) -> bool:
    return isinstance(value, (str, int)) and not isinstance(value, bool)


def _act(obj: Any, path: str | Path | None, record: int | None, i: int) -> DemoAct:
    af = Fields(obj, path, record, f"acts[{i}]")
    try:
        kind = af.str("type")
        if kind not in ACT_TYPES:
            raise af.error("type", f"unknown act type '{kind}'", f"use one of {', '.join(ACT_TYPES)}")
        actions, td_extra = None, {}
        if "task_data" in af.obj and af.obj["task_data"] is not None:
            tf = Fields(af.obj["task_data"], path, record, "task_data")
            actions = tf.str_list("actions", None)
            td_extra = tf.extra({"actions"})
        speaker_id = af.obj.get("id")
        if speaker_id is not None and not _is_id(speaker_id):
            raise af.error("id", "must be a character's id (a string or an integer)", "give who took the act")
        return DemoAct(
            type=kind,
            text=af.str("text"),
            actions=actions,
            task_data_extra=td_extra,  # type: ignore[arg-type]
            extra=af.extra({"type", "text", "task_data", "id"}),
            speaker_id=speaker_id,
        )
    except DataFormatError as err:
        raise err.within(f"acts[{i}]") from None


def load_demo_file(path: str | Path) -> list[Demonstration]:
    data = read_json_list(path, "demonstrations", 'the file must be [ {"conv_info": ...}, ... ]')
    return [Demonstration.from_json(d, path, i) for i, d in enumerate(data)]


def write_demo_file(demos: list[Demonstration], path: str | Path) -> None:
    write_json(path, [d.to_json() for d in demos])


def load_demos(path: str | Path) -> Splits[Demonstration]:
    """Demonstrations from a split folder (train/valid/test.json) or one release file (see module doc)."""
    path = Path(path)
    if path.is_dir():
        files = [path / f"{s}.json" for s in SPLITS]
        missing = [p.name for p in files if not p.is_file()]
        if missing:
            raise DataFormatError(
                path,
                f"missing {', '.join(missing)}",
                fix="a demonstrations folder holds train.json, valid.json and test.json",
            )
        return Splits(*(load_demo_file(p) for p in files))
    return split_by_percent(load_demo_file(path))


def write_demos(splits: Splits[Demonstration], directory: str | Path, *, overwrite: bool = False) -> None:
    with atomic_dir(directory, overwrite=overwrite) as tmp:
        for split, demos in splits.items():
            write_demo_file(demos, tmp / f"{split}.json")


def demonstration_spaces(demos: list[Demonstration]) -> tuple[list[str], list[str]]:
    """The action space (every demonstration action) and the utterance space (every utterance), in first-seen
    order: 4710 and 22672 on the paper's data."""
    actions = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "action"))
    utterances = list(dict.fromkeys(a.text for d in demos for a in d.acts if a.type == "speech"))
    return actions, utterances
