"""A dataset folder as every stage reads it: its quests, and its demonstrations linked to their quests.

Two layouts are read:

- lq's own (what ``lq data generate`` and ``lq data link`` write): ``quests/{train,valid,test}/<quest_id>.json`` and
  ``demos/{train,valid,test}.json``, each demonstration naming its quest in ``conv_info.quest_id``;
- a LIGHT data root holding the public release (``quests/stems/batch_1/``, see :mod:`lq.data.release`): the stems are
  split as LIGHT's builder does, and the demonstrations come from the raw game logs (``perfect2.json``, the paper's RL
  data) where they are present, else from the processed file (``demos="processed"`` picks that one).

Only linked demonstrations are kept; :attr:`Dataset.report` counts the others, with the reason.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

from lq.data.demos import Demonstration, load_demos, write_demos
from lq.data.errors import DataFormatError
from lq.data.io import atomic_dir, write_json
from lq.data.quests import Quest, load_quests, write_quests
from lq.data.release import (
    PROCESSED,
    RAW_LOGS,
    STEMS,
    LinkReport,
    is_release,
    link_raw_logs,
    load_processed,
    load_raw_logs,
    norm_text,
)
from lq.data.splits import Splits

DEMO_SOURCES = ("auto", "raw", "processed")


@dataclass
class Dataset:
    root: Path
    layout: str  # "lq" or "release"
    quests: Splits[Quest]
    demos: Splits[Demonstration]  # linked to their quests
    report: LinkReport

    def quests_by_id(self) -> dict[str, Quest]:
        return {q.quest_id: q for q in self.quests.all()}


def _link_by_quest_id(demos: Splits[Demonstration], quests: Splits[Quest], source: str) -> tuple[Splits, LinkReport]:
    by_id = {q.quest_id: q for q in quests.all()}
    report = LinkReport(source, total=len(demos.all()))
    out: Splits[Demonstration] = Splits()
    for split, items in demos.items():
        for i, d in enumerate(items):
            qid = d.conv_extra.get("quest_id")
            where = f"{split}.json record {i}"
            if not qid:
                report.skip("no conv_info.quest_id", where)
            elif qid not in by_id:
                report.skip("its quest_id is not among the quests", f"{where}: {qid}")
            elif by_id[qid].graph is None:
                report.skip("its quest has no graph", f"{where}: {qid}")
            elif not ("self_id" in d.conv_extra and "partner_id" in d.conv_extra):
                report.skip("no conv_info.self_id or partner_id", where)
            elif "goal" in d.conv_extra and norm_text(str(d.conv_extra["goal"])) != norm_text(by_id[qid].goal):
                report.skip(
                    "its conv_info.goal is not its quest's goal: link it to the quest it plays, or fix the goal",
                    f"{where}: {d.conv_extra['goal']!r}, its quest {qid} {by_id[qid].goal!r}",
                )
            else:
                out[split].append(d)
    report.split = out.counts()
    return out, report


def _signature(root: Path) -> str:
    """Names, sizes and times of the files a dataset is read from (a cache key, not a content hash)."""
    digest = hashlib.sha256()
    for sub in ("quests", "demos"):
        top = root / sub
        if top.exists():
            for p in sorted(top.rglob("*")):
                st = p.stat()
                digest.update(f"{p}|{st.st_size}|{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()


_CACHE: dict[tuple[str, str], tuple[str, Dataset]] = {}
_QUESTS: dict[str, tuple[str, Splits[Quest]]] = {}


def load_dataset(root: str | Path, demos: str = "auto") -> Dataset:
    """The dataset at ``root`` (either layout, see the module doc). The result is shared between callers with the
    same folder (it is read again when its files change): do not modify it."""
    if demos not in DEMO_SOURCES:
        raise ValueError(f"unknown demonstration source '{demos}': use one of {', '.join(DEMO_SOURCES)}")
    root = Path(root)
    key = (str(root.resolve()), demos)
    sig = _signature(root)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    dataset = _load(root, demos, sig)
    if len(_CACHE) >= 4:
        _CACHE.pop(next(iter(_CACHE)))
    _CACHE[key] = (sig, dataset)
    return dataset


def _quests(folder: Path, sig: str) -> Splits[Quest]:
    """The quests of a folder, read once for all the demonstration sources of one dataset."""
    key = str(folder.resolve())
    hit = _QUESTS.get(key)
    if hit is None or hit[0] != sig:
        _QUESTS.clear()
        _QUESTS[key] = hit = (sig, load_quests(folder))
    return hit[1]


def _load(root: Path, demos: str, sig: str) -> Dataset:
    if is_release(root):
        quests = _quests(root / STEMS, sig)
        raw, processed = root / RAW_LOGS, root / PROCESSED
        use_raw = demos == "raw" or (demos == "auto" and raw.is_file())
        path = raw if use_raw else processed
        if not path.is_file():
            raise DataFormatError(
                path,
                "demonstrations not found",
                fix="`lq data download` fetches them into this LIGHT data root (or copy the release files there)",
            )
        if use_raw:
            stems = {q.quest_id: q for q in quests.all()}
            linked, report = link_raw_logs(load_raw_logs(path), stems, str(path))
        else:
            linked, report = load_processed(path, quests.all())
        return Dataset(root, "release", quests, linked, report)
    if (root / "quests").is_dir():
        if demos != "auto":
            raise ValueError(f"{root}: demos='{demos}' picks a file of the LIGHT release; this is an lq dataset")
        quests = _quests(root / "quests", sig)
        linked, report = _link_by_quest_id(load_demos(root / "demos"), quests, str(root / "demos"))
        return Dataset(root, "lq", quests, linked, report)
    raise DataFormatError(
        root,
        "no dataset here (neither quests/ nor quests/stems/batch_1/)",
        fix="run `make data` (writes data/default), or point at a LIGHT data root (`lq data download DEST`)",
    )


def link_dataset(src: str | Path, out: str | Path, demos: str = "auto", *, overwrite: bool = False) -> Dataset:
    """Write the dataset at ``src`` (the release, or any dataset) in lq's own layout: ``out/quests/<split>/``, the
    linked ``out/demos/<split>.json`` (each naming its quest, self and partner) and ``out/link-report.json``. The
    folder appears only when complete."""
    dataset = load_dataset(src, demos)
    report = dataset.report
    with atomic_dir(out, overwrite=overwrite) as tmp:
        write_quests(dataset.quests, tmp / "quests")
        write_demos(dataset.demos, tmp / "demos")
        write_json(
            tmp / "link-report.json",
            {
                "source": report.source,
                "total": report.total,
                "split": report.split,
                "filtered": dict(report.filtered),
                "unlinked": dict(report.unlinked),
                "examples": report.examples,
            },
        )
    return dataset


@functools.lru_cache(maxsize=8)
def _dataset_id(resolved: str) -> str:
    root = Path(resolved)
    digest = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and p.suffix in (".json", ".jsonl", ".csv"):
            digest.update(f"{p.relative_to(root).as_posix()}|{p.stat().st_size}\n".encode())
    return f"{root.name}-{digest.hexdigest()[:12]}"


def dataset_id(root: str | Path) -> str:
    """The name of a dataset folder and a fingerprint of its files (their paths and sizes): what a checkpoint records
    of the data it was trained on, so that no stage reuses it on another dataset (see :func:`check_dataset`)."""
    return _dataset_id(str(Path(root).resolve()))


def check_dataset(checkpoint: dict, path: str | Path, root: str | Path) -> None:
    """Refuse a checkpoint (the loaded dict, read from ``path``) made on another dataset than ``root``. Checkpoints
    from before lq recorded their dataset pass."""
    saved = checkpoint.get("lq_dataset")
    if saved is not None and saved != dataset_id(root):
        raise ValueError(
            f"{path} was trained on dataset {saved}, and this run reads {root} ({dataset_id(root)}): a checkpoint is "
            f"never reused on another dataset. Train it on this one (the make targets keep each dataset's outputs "
            f"apart: outputs/<dataset>/ for any DATA other than data/default)"
        )
