"""A training pool of a dataset (``lq data pool DATA N``, :mod:`lq.data.pools`): the quests an agent of a run that
names one (``--model.env.pool DIR``) trains on beside the dataset's own, drawn before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lq.stages.families import NO_CHOICES
from lq.stages.run import Run, Stage


def pool_count(folder: str) -> int:
    """The quests of the pool in ``folder`` (``DATA-pool-N``, :func:`lq.data.pools.pool_dir`)."""
    name = Path(folder).name
    count = name.rsplit("-pool-", 1)[-1]
    if "-pool-" not in name or not count.isdigit():
        raise ValueError(f"{folder}: a training pool's folder is DATA-pool-N (lq data pool DATA N writes it)")
    return int(count)


class Pool(Stage):
    name = "pool"
    wave, at_once = 1, 1

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"objective": "lq", **NO_CHOICES, "protocol": "paper", "encoder": "", "profile": "tiny"}

    def outputs(self, run: Run) -> dict[str, str]:
        return {"manifest": f"{run.folder}/manifest.json"}

    def done_as(self, run: Run) -> str | None:
        manifest = run.outputs["manifest"]
        return manifest if Path(manifest).is_file() else None

    def config(self, run: Run) -> dict[str, Any]:
        return {}

    def args(self, run: Run) -> list[str]:
        return ["data", "pool", run.data, str(pool_count(run.folder)), "--out", run.folder]

    def label(self, run: Run) -> str:
        return f"a training pool of {pool_count(run.folder)} quests ({run.folder})"

    def graph_label(self, run: Run) -> str:
        return f"pool {pool_count(run.folder)}"

    def check(self, run: Run) -> None:
        pool_count(run.folder)
