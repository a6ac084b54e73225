"""ATOMIC-LIGHT's format (paper 3.2, 7.4): a sample is an ATOMIC triple told of LIGHT characters, a context
and the tail to complete; a folder holds ``train.jsonl``, ``valid.jsonl`` and ``test.jsonl``. How samples are
built from ATOMIC and the LIGHT database is :mod:`lq.tasks.atomic_light`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from lq.data.errors import DataFormatError
from lq.data.io import atomic_open, read_jsonl
from lq.data.splits import SPLITS, Splits


@dataclass(frozen=True)
class AtomicLightSample:
    context: str
    tail: str
    relation: str
    event: str

    @property
    def sentence(self) -> str:
        return f"{self.context} {self.tail}"


def write_atomic_light(splits: Splits[AtomicLightSample], directory: str | Path) -> None:
    """``directory/{train,valid,test}.jsonl``, one sample per line."""
    for split, samples in splits.items():
        with atomic_open(Path(directory) / f"{split}.jsonl", "w", encoding="utf-8") as handle:
            for s in samples:
                handle.write(json.dumps(asdict(s), ensure_ascii=False) + "\n")


def load_atomic_light(directory: str | Path) -> Splits[AtomicLightSample]:
    out: Splits[AtomicLightSample] = Splits()
    for split in SPLITS:
        path = Path(directory) / f"{split}.jsonl"
        for i, obj in read_jsonl(path, "ATOMIC-LIGHT samples (an ATOMIC-LIGHT folder holds train/valid/test.jsonl)"):
            if not isinstance(obj, dict) or not all(
                isinstance(obj.get(k), str) for k in ("context", "tail", "relation", "event")
            ):
                raise DataFormatError(
                    path,
                    "expected an object with string fields context, tail, relation, event",
                    record=f"line {i}",
                    fix="write samples as lq does",
                )
            out[split].append(AtomicLightSample(obj["context"], obj["tail"], obj["relation"], obj["event"]))
    return out
