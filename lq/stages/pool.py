"""A training pool of a dataset (``lq data pool DATA N``, :mod:`lq.data.pools`): the quests an agent of a run that
names one (``--model.env.pool DIR``) trains on beside the dataset's own, drawn before it."""

from __future__ import annotations

from pathlib import Path

from lq.stages.data import Data
from lq.stages.run import Run


def pool_count(folder: str) -> int | None:
    """The quests of the pool to draw into ``folder``, as its name says (``DATA-pool-N``:
    :func:`lq.data.pools.pool_dir`), or None where it says none (a pool written elsewhere by hand: used as it is, never
    drawn)."""
    name = Path(folder).name
    count = name.rsplit("-pool-", 1)[-1]
    return int(count) if "-pool-" in name and count.isdigit() else None


class Pool(Data):
    """A dataset's preparation, whose manifest is in the pool's folder and which needs the dataset first."""

    name = "pool"

    def outputs(self, run: Run) -> dict[str, str]:
        return {"manifest": f"{run.folder}/manifest.json"}

    def needs(self, run: Run) -> list[Run]:
        return [run.another("data")]

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
