"""The LIGHT environment DB: ``rooms.json``, ``characters.json`` and ``objects.json``.

Each file is a JSON list of records. The real DB (``../shared/data/light_env``) holds 661 rooms,
1755 characters and 3462 objects; lq ships a smaller one of the same shape as package data.
Objects carry no affordances here: :mod:`lq.data.affordances` infers them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lq.data.errors import DataFormatError
from lq.data.fields import Fields
from lq.data.io import read_json_list, write_json

ROOMS_FILE = "rooms.json"
CHARACTERS_FILE = "characters.json"
OBJECTS_FILE = "objects.json"


@dataclass
class Room:
    id: int
    name: str
    category: str
    description: str
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = frozenset({"id", "name", "category", "description"})

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: int | None = None) -> Room:
        f = Fields(obj, path, record, "room")
        return cls(
            id=f.int("id"),
            name=f.str("name", nonempty=True),
            category=f.str("category"),
            description=f.str("description"),
            extra=f.extra(cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category,
            "name": self.name,
            "description": self.description,
            "id": self.id,
            **self.extra,
        }


@dataclass
class Character:
    id: int
    name: str
    char_type: str
    persona: list[str]
    description: str
    emojis: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    _KNOWN = frozenset({"id", "name", "char_type", "persona", "description", "emojis"})

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: int | None = None) -> Character:
        f = Fields(obj, path, record, "character")
        return cls(
            id=f.int("id"),
            name=f.str("name", nonempty=True),
            char_type=f.str("char_type"),
            persona=f.str_list("persona"),
            description=f.str("description"),
            emojis=f.str_list("emojis", []),
            extra=f.extra(cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "char_type": self.char_type,
            "name": self.name,
            "persona": self.persona,
            "id": self.id,
            "description": self.description,
            "emojis": self.emojis,
            **self.extra,
        }


@dataclass
class LightObject:
    id: int
    name: str
    base_form: list[str]
    descriptions: list[str]
    emojis: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    # The real file spells the description field "descripton"; we read and write it as it is.
    _KNOWN = frozenset({"id", "name", "base_form", "descripton", "emojis"})

    @classmethod
    def from_json(cls, obj: Any, path: str | Path | None = None, record: int | None = None) -> LightObject:
        f = Fields(obj, path, record, "object")
        return cls(
            id=f.int("id"),
            name=f.str("name", nonempty=True),
            base_form=f.str_list("base_form"),
            descriptions=f.str_list("descripton"),
            emojis=f.str_list("emojis", []),
            extra=f.extra(cls._KNOWN),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "base_form": self.base_form,
            "name": self.name,
            "descripton": self.descriptions,
            "id": self.id,
            "emojis": self.emojis,
            **self.extra,
        }


@dataclass
class LightDB:
    rooms: list[Room]
    characters: list[Character]
    objects: list[LightObject]

    def __repr__(self) -> str:
        return f"LightDB({len(self.rooms)} rooms, {len(self.characters)} characters, {len(self.objects)} objects)"


def _load_list(path: Path, cls: type) -> list:
    data = read_json_list(path, "records", "the file must be [ {...}, {...} ] as in the LIGHT release")
    records = [cls.from_json(obj, path, i) for i, obj in enumerate(data)]
    seen: dict[int, int] = {}
    for i, rec in enumerate(records):
        if rec.id in seen:
            raise DataFormatError(
                path,
                f"duplicate id {rec.id} (also record {seen[rec.id]})",
                record=i,
                field="id",
                fix="give every record its own id",
            )
        seen[rec.id] = i
    return records


def load_light_db(directory: str | Path) -> LightDB:
    """Load ``rooms.json``, ``characters.json`` and ``objects.json`` from ``directory``."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataFormatError(
            directory,
            "LIGHT DB directory not found",
            fix="pass a folder holding rooms.json, characters.json and objects.json",
        )
    return LightDB(
        rooms=_load_list(directory / ROOMS_FILE, Room),
        characters=_load_list(directory / CHARACTERS_FILE, Character),
        objects=_load_list(directory / OBJECTS_FILE, LightObject),
    )


def write_light_db(db: LightDB, directory: str | Path) -> None:
    """Write the three DB files into ``directory`` (each atomically)."""
    directory = Path(directory)
    for name, records in ((ROOMS_FILE, db.rooms), (CHARACTERS_FILE, db.characters), (OBJECTS_FILE, db.objects)):
        write_json(directory / name, [r.to_json() for r in records])
