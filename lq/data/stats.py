"""``lq data stats PATH``: counts and averages of a dataset, printed beside the paper's figures."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lq.data.dataset import load_dataset
from lq.data.demos import Demonstration, demonstration_spaces, load_demos
from lq.data.errors import DataFormatError
from lq.data.quests import Quest, load_quests
from lq.data.release import PROCESSED, RAW_LOGS, LinkReport, is_release
from lq.data.splits import SPLITS, Splits

# LIGHT-Quests as reported in the paper (section 3.1, Figure 3, section 4.1).
PAPER = {
    "quests/train": 5982,
    "quests/valid": 756,
    "quests/test": 748,
    "quests/total": 7486,
    "demos/train": 1800,
    "demos/valid": 100,
    "demos/test": 211,
    "demos/total": 2111,
    "mean turns per demo": 12.92,
    "mean actions per demo": 2.18,
    "mean utterances per demo": 10.74,
    "distinct actions": 4710,
    "distinct utterances": 22672,
}


@dataclass
class DatasetPaths:
    quests: Path | None
    demos: Path | None


def find_dataset(path: str | Path) -> DatasetPaths:
    """Where the quests and demonstrations of ``path`` are: a dataset root (``quests/``, ``demos/``),
    a quest folder, a demonstrations folder or a demonstrations file."""
    path = Path(path)
    if not path.exists():
        raise DataFormatError(
            path, "not found", fix="pass a dataset folder written by `lq data generate` or a downloaded release"
        )
    if path.is_file():
        return DatasetPaths(None, path)
    quests, demos = path / "quests", path / "demos"
    if quests.is_dir() or demos.exists():
        return DatasetPaths(quests if quests.is_dir() else None, demos if demos.exists() else None)
    if all((path / f"{s}.json").is_file() for s in SPLITS):
        return DatasetPaths(None, path)
    return DatasetPaths(path, None)


def compute_stats(quests: Splits[Quest] | None, demos: Splits[Demonstration] | None) -> dict[str, float]:
    out: dict[str, float] = {}
    if quests is not None:
        for split, items in quests.items():
            out[f"quests/{split}"] = len(items)
        out["quests/total"] = len(quests.all())
    if demos is not None:
        for split, items in demos.items():
            out[f"demos/{split}"] = len(items)
        every = demos.all()
        out["demos/total"] = len(every)
        n = max(len(every), 1)
        utterances = [a.text for d in every for a in d.acts if a.type == "speech"]
        actions = [a.text for d in every for a in d.acts if a.type == "action"]
        out["mean turns per demo"] = sum(len(d.acts) for d in every) / n
        out["mean actions per demo"] = len(actions) / n
        out["mean utterances per demo"] = len(utterances) / n
        out["distinct actions"] = len(set(actions))
        out["distinct utterances"] = len(set(utterances))
        out["share of utterances distinct"] = len(set(utterances)) / max(len(utterances), 1)
    return out


def dataset_stats(path: str | Path) -> dict[str, float]:
    """The statistics of a dataset folder or file. For a LIGHT data root (the public release) the demonstrations are
    those linked to their quests, as every stage reads them (see :func:`link_reports` for the others)."""
    if is_release(path):
        dataset = load_dataset(path)
        return compute_stats(dataset.quests, dataset.demos)
    where = find_dataset(path)
    return compute_stats(
        load_quests(where.quests) if where.quests else None, load_demos(where.demos) if where.demos else None
    )


def space_stats(path: str | Path, spaces: str | Path) -> dict[str, float]:
    """What the action and utterance spaces of the dataset at ``spaces`` (every split's demonstrations:
    :func:`lq.data.demos.demonstration_spaces`, the candidates an agent of that dataset chooses among) hold of the
    linked demonstrations at ``path``, per split: their self utterances in the utterance space (the speech goal, a
    demonstration utterance said, has only those to be won with) and their quests' goal actions in the action space.
    A training pool (``lq data pool``) is drawn so that each of its quests has at least one of each
    (docs/deviations.md)."""
    actions, utterances = (set(space) for space in demonstration_spaces(load_dataset(spaces).demos.all()))
    dataset = load_dataset(path)
    quests = dataset.quests_by_id()
    out: dict[str, float] = {}
    for split, demos in dataset.demos.items():
        if not demos:
            continue
        said = [{a.text for a in d.self_acts("speech")} for d in demos]
        held = [len(texts & utterances) for texts in said]
        out[f"{split}: mean distinct self utterances per demo"] = sum(map(len, said)) / len(demos)
        out[f"{split}: mean of them in the utterance space"] = sum(held) / len(demos)
        out[f"{split}: share of demos with one in it"] = sum(n > 0 for n in held) / len(demos)
        goals = [quests[d.conv_extra["quest_id"]].goal in actions for d in demos]
        out[f"{split}: share of goals in the action space"] = sum(goals) / len(demos)
    return out


def link_reports(path: str | Path) -> list[LinkReport]:
    """How the demonstrations of a dataset root link to its quests: one report per demonstrations file (for the
    release both the raw game logs and the processed file, where present); none for a single file or folder."""
    path = Path(path)
    if is_release(path):
        sources = [(name, p) for name, p in (("raw", RAW_LOGS), ("processed", PROCESSED)) if (path / p).is_file()]
        return [load_dataset(path, name).report for name, _ in sources]
    if (path / "quests").is_dir() and (path / "demos").exists():
        return [load_dataset(path).report]
    return []


def _fmt(key: str, value: float) -> str:
    return f"{value:.2f}" if key.split(": ")[-1].startswith(("mean", "share")) else str(int(value))


def format_stats(stats: dict[str, float]) -> str:
    rows = [("statistic", "this dataset", "paper")]
    for key, value in stats.items():
        paper = PAPER.get(key)
        rows.append((key, _fmt(key, value), "" if paper is None else _fmt(key, paper)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
