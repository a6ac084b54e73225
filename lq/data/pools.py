"""Training pools: more training quests than a dataset's own, each with its demonstration, kept beside the dataset.

``lq data pool DATA N`` (:func:`lq.generate.generate_pool`) draws N further quests as ``DATA`` was generated (its
environment DB, its seed) and writes them in lq's own layout (``quests/train/``, ``demos/train.json``) with a manifest
that names ``DATA``'s fingerprint (:func:`lq.data.dataset.dataset_id`). An agent trains on the dataset's training
quests and the pool's (``model.env.pool``: :class:`lq.envs.spec.EnvSpec`); the dataset itself, its action and
utterance spaces, its validation and test quests, its partner and Dungeon Master are those of ``DATA`` whatever the
pool, so agents trained on pools of any size are evaluated on the same quests against the same candidates.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from lq.data.dataset import dataset_id, load_dataset
from lq.data.demos import Demonstration
from lq.data.errors import DataFormatError
from lq.data.quests import Quest


def pool_dir(data_dir: str | Path, count: int) -> str:
    """Where ``lq data pool DATA COUNT`` writes by default: ``DATA-pool-COUNT`` beside the dataset."""
    data = Path(data_dir)
    return str(data.with_name(f"{data.name}-pool-{count}"))


@dataclass(frozen=True)
class Pool:
    root: Path
    quests: list[Quest]
    demos: list[Demonstration]  # linked to their quests


def load_pool(root: str | Path, data_dir: str | Path) -> Pool:
    """The training pool at ``root``, refused unless it was drawn for the dataset at ``data_dir`` (as it is now)."""
    root = Path(root)
    manifest = root / "manifest.json"
    try:
        made = json.loads(manifest.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataFormatError(
            manifest, "no training pool here", fix=f"write one with `lq data pool {data_dir} N --out {root}`"
        ) from None
    except json.JSONDecodeError as e:
        raise DataFormatError(manifest, f"not JSON ({e})", fix=f"write it again: lq data pool {data_dir} N") from None
    if made.get("pool_of") != (ours := dataset_id(data_dir)):
        raise DataFormatError(
            manifest,
            f"a training pool of dataset {made.get('pool_of')!r}, and the run reads {data_dir} ({ours})",
            field="pool_of",
            fix=f"draw a pool for this dataset (`lq data pool {data_dir} N`)",
        )
    dataset = load_dataset(root)
    return Pool(root, dataset.quests.train, dataset.demos.train)
