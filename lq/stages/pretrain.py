"""Poly-encoder pretraining (paper 4.1, Tables 4 and 5): one encoder per folder, ``adaptive`` starting from the
``general`` encoder of the same folder."""

from __future__ import annotations

import dataclasses
from typing import Any

from lq.conf.resolver import merged
from lq.stages.families import PolyEncoder, model_dir
from lq.stages.run import Run


class Pretrain(PolyEncoder):
    name = "pretrain"
    summary = "multi-task poly-encoder pretraining"
    profile_file = "pretrain"
    wave, at_once = 0, 1  # one at a time, each on every core

    def fixed(self, run: Run) -> dict[str, Any]:
        return {**super().fixed(run), "seed": run.seed}  # an experiment's pretraining children differ by seed

    def needs(self, run: Run) -> list[Run]:
        needed = super().needs(run)
        if run.encoder == "adaptive":  # initialised from the general encoder of its folder
            needed.append(dataclasses.replace(run, encoder="general", extra=()))
        return needed

    def settings(self, run: Run) -> dict[str, Any]:
        """A poly-encoder's; ``adaptive`` starts from the general encoder of the same folder."""
        settings = super().settings(run)
        if run.encoder == "adaptive":
            start = {"model": {"encoder": {"init_from": f"{model_dir(run.stage_dir(), 'general')}/best.ckpt"}}}
            settings = merged(settings, start)
        return settings

    def label(self, run: Run) -> str:
        return f"pretrain {run.encoder}"

    def graph_label(self, run: Run) -> str:
        """An experiment's pretraining child (in its seed's folder) says its seed."""
        return f"{super().graph_label(run)} s{run.seed}" if run.folder else super().graph_label(run)

    def prepared(self, run: Run) -> Run:
        """An encoder that agents or other encoders need: Table 4/5 is make pretrain's and table45's to write."""
        return dataclasses.replace(run, extra=(*run.extra, "--tables.enabled", "false"))

