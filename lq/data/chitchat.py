"""Chit-chat corpora (the general dialogue pretraining task's source): JSONL, one conversation per line,
``{"dialogue": [turn, turn, ...]}``."""

from __future__ import annotations

from pathlib import Path

from lq.data.errors import DataFormatError
from lq.data.io import read_jsonl


def load_chitchat(path: str | Path) -> list[list[str]]:
    out = []
    for i, obj in read_jsonl(path, 'a chit-chat corpus, JSONL of {"dialogue": [...]}'):
        turns = obj.get("dialogue") if isinstance(obj, dict) else None
        if not isinstance(turns, list) or len(turns) < 2 or not all(isinstance(t, str) for t in turns):
            raise DataFormatError(
                path,
                'expected {"dialogue": [at least two strings]}',
                record=f"line {i}",
                field="dialogue",
                fix="write each conversation as a list of its turns",
            )
        out.append(turns)
    return out
