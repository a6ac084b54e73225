"""The dataset a run reads: generated where it is the embedded default (``lq data generate``), else there already."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lq.stages.families import NO_CHOICES
from lq.stages.run import Run, Stage


class Data(Stage):
    name = "data"
    wave, at_once = 1, 1

    def fixed(self, run: Run) -> dict[str, Any]:
        return {"objective": "lq", **NO_CHOICES, "protocol": "paper", "encoder": "", "profile": "tiny"}

    def outputs(self, run: Run) -> dict[str, str]:
        return {"manifest": f"{run.data}/manifest.json"}

    def done_as(self, run: Run) -> str | None:
        manifest = run.outputs["manifest"]
        return manifest if Path(manifest).is_file() else None

    def config(self, run: Run) -> dict[str, Any]:
        return {}

    def needs(self, run: Run) -> list[Run]:
        return []

    def args(self, run: Run) -> list[str]:
        return ["data", "generate", run.data]

    def graph_label(self, run: Run) -> str:
        return f"data {run.data}"

    def check(self, run: Run) -> None:
        """The embedded default data is generated where it is missing (seconds); another must exist."""
        if not Path(run.outputs["manifest"]).exists() and Path(run.data) != Path("data/default"):
            raise FileNotFoundError(
                f"{run.outputs['manifest']}: no dataset in {run.data}; lq data generate {run.data} writes the embedded "
                "default data there, lq data download DEST fetches the release"
            )
