"""ATOMIC v4 CSV (Sap et al. 2019), as released in ``atomic_data.tgz`` (``v4_atomic_*.csv``).

Columns: event, the nine relations oEffect, oReact, oWant, xAttr, xEffect, xIntent, xNeed, xReact,
xWant (each cell a JSON list of strings), prefix (a JSON list of words) and split (trn, dev, tst).
ATOMIC-LIGHT uses xIntent, xEffect, xWant and xNeed.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path

from lq.data.errors import DataFormatError
from lq.data.io import atomic_open

RELATIONS = ("oEffect", "oReact", "oWant", "xAttr", "xEffect", "xIntent", "xNeed", "xReact", "xWant")
LIGHT_RELATIONS = ("xIntent", "xEffect", "xWant", "xNeed")
COLUMNS = ("event", *RELATIONS, "prefix", "split")
ATOMIC_SPLITS = ("trn", "dev", "tst")


@dataclass
class AtomicEvent:
    event: str
    relations: dict[str, list[str]]
    prefix: list[str] = field(default_factory=list)
    split: str = "trn"

    def to_row(self) -> list[str]:
        return [
            self.event,
            *(json.dumps(self.relations.get(r, [])) for r in RELATIONS),
            json.dumps(self.prefix),
            self.split,
        ]


def _json_list(cell: str, path: Path, line: int, column: str) -> list[str]:
    try:
        value = json.loads(cell)
    except json.JSONDecodeError:
        value = None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataFormatError(
            path,
            f"expected a JSON list of strings, found {cell[:60]!r}",
            record=f"line {line}",
            field=column,
            fix='write the cell as a JSON list, e.g. ["none"]',
        )
    return value


def load_atomic_csv(path: str | Path) -> list[AtomicEvent]:
    path = Path(path)
    try:
        handle = path.open(newline="", encoding="utf-8")
    except FileNotFoundError:
        raise DataFormatError(path, "file not found", fix="check the path (e.g. v4_atomic_trn.csv)") from None
    except IsADirectoryError:
        raise DataFormatError(path, "is a directory, expected a CSV file", fix="pass a v4_atomic_*.csv file") from None
    events = []
    with handle:
        try:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                raise DataFormatError(path, "empty file", fix="an ATOMIC CSV starts with its header row")
            missing = [c for c in COLUMNS if c not in header]
            if missing:
                raise DataFormatError(
                    path,
                    f"header lacks {', '.join(missing)}",
                    record="line 1",
                    field=missing[0],
                    fix=f"the header must name {', '.join(COLUMNS)}",
                )
            index = {c: header.index(c) for c in COLUMNS}
            for row in reader:
                line = reader.line_num
                if not any(cell.strip() for cell in row):
                    continue
                if len(row) != len(header):
                    raise DataFormatError(
                        path,
                        f"has {len(row)} cells, the header has {len(header)}",
                        record=f"line {line}",
                        fix="quote cells that contain commas",
                    )
                event = row[index["event"]]
                if not event.strip():
                    raise DataFormatError(
                        path,
                        "empty event",
                        record=f"line {line}",
                        field="event",
                        fix="give the event text, e.g. 'PersonX gets a sword'",
                    )
                split = row[index["split"]]
                if split not in ATOMIC_SPLITS:
                    raise DataFormatError(
                        path,
                        f"unknown split '{split}'",
                        record=f"line {line}",
                        field="split",
                        fix=f"use one of {', '.join(ATOMIC_SPLITS)}",
                    )
                events.append(
                    AtomicEvent(
                        event=event,
                        relations={r: _json_list(row[index[r]], path, line, r) for r in RELATIONS},
                        prefix=_json_list(row[index["prefix"]], path, line, "prefix"),
                        split=split,
                    )
                )
        except csv.Error as err:
            raise DataFormatError(path, f"malformed CSV: {err}", fix="repair the quoting on that line") from None
        except UnicodeDecodeError as err:
            raise DataFormatError(path, f"not UTF-8 text ({err.reason})", fix="re-save the file as UTF-8") from None
    return events


def write_atomic_csv(events: list[AtomicEvent], path: str | Path) -> None:
    with atomic_open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS)
        writer.writerows(e.to_row() for e in events)
