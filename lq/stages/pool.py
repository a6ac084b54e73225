"""A training pool of a dataset (``lq data pool DATA N``, :mod:`lq.data.pools`): the quests an agent of a run that
names one (``--model.env.pool DIR``) trains on beside the dataset's own, drawn before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lq.stages.families import NO_CHOICES
from lq.stages.run import Run, Stage


def pool_count(folder: str) -> int | None:
    """The quests of the pool to draw into ``folder``, as its name says (``DATA-pool-N``:
    :func:`lq.data.pools.pool_dir`), or None where it says none (a pool written elsewhere by hand: used as it is, never
    drawn)."""
    name = Path(folder).name
    count = name.rsplit("-pool-", 1)[-1]
    return int(count) if "-pool-" in name and count.isdigit() else None


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
        return f"the training pool {run.folder}"

    def graph_label(self, run: Run) -> str:
        return f"pool {Path(run.folder).name}"

    def check(self, run: Run) -> None:
        """A pool that is missing is drawn where its folder's name says how many quests (``DATA-pool-N``)."""
        if not Path(run.outputs["manifest"]).is_file() and pool_count(run.folder) is None:
            raise FileNotFoundError(
                f"{run.outputs['manifest']}: no training pool there; write one (lq data pool {run.data} N --out "
                f"{run.folder}), or name its folder {Path(run.data).name}-pool-N for the runs to draw it"
            )
