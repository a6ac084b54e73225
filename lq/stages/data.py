"""The dataset a run reads: generated where it is the embedded default (``lq data generate``) or the LIGHT worlds (the
same generator over the real LIGHT environment DB: worlds, characters and objects lq's own DB has none of), else there
already."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from lq.conf.resolver import ROOT
from lq.stages.families import NO_CHOICES
from lq.stages.run import Run, Stage

# quests generated from the LIGHT environment DB (its rooms, characters and objects), for agents to play zero-shot in
# worlds they never saw; the DB from LQ_LIGHT_DB, else beside the repository (../shared/data/light_env)
LIGHT_WORLDS = "data/light-worlds"
BESIDE = ROOT.parents[1].parent / "shared" / "data" / "light_env"  # ROOT: lq/conf


def light_db() -> Path:
    """The LIGHT environment DB the LIGHT worlds are generated from (rooms.json, characters.json, objects.json)."""
    return Path(os.environ.get("LQ_LIGHT_DB", BESIDE))


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
        light = ["--light-db", str(light_db())] if Path(run.data) == Path(LIGHT_WORLDS) else []
        return ["data", "generate", run.data, *light]

    def graph_label(self, run: Run) -> str:
        return f"data {run.data}"

    def check(self, run: Run) -> None:
        """The embedded default data and the LIGHT worlds are generated where they are missing (seconds, from the
        LIGHT DB for the worlds); another must exist."""
        if Path(run.outputs["manifest"]).exists():
            return
        if Path(run.data) == Path(LIGHT_WORLDS) and not (light_db() / "rooms.json").is_file():
            raise FileNotFoundError(
                f"{light_db()}: no LIGHT environment DB (rooms.json, characters.json, objects.json) to generate "
                f"{LIGHT_WORLDS} from; set LQ_LIGHT_DB to its folder"
            )
        if Path(run.data) not in (Path("data/default"), Path(LIGHT_WORLDS)):
            raise FileNotFoundError(
                f"{run.outputs['manifest']}: no dataset in {run.data}; lq data generate {run.data} writes the embedded "
                "default data there, lq data download DEST fetches the release"
            )
