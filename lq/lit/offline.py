"""A stage run's LightningModule built from the run's resolved configuration (:attr:`lq.stages.Run.config`) without
running its CLI: the module a preparation job computes with (the partner's calibration, the spaces' vectors, the
baselines)."""

from __future__ import annotations

import functools

from lightning.pytorch.cli import LightningArgumentParser

from lq.conf.lengths import length_problems
from lq.lit.entry import stage_classes


@functools.cache
def module_parser(stage: str) -> LightningArgumentParser:
    """A parser of the stage's LightningModule's arguments alone (``model``: their types and the module's defaults),
    as its CLI adds them."""
    parser = LightningArgumentParser(exit_on_error=False)
    parser.add_lightning_class_args(stage_classes(stage)[0], "model", subclass_mode=False)
    return parser


def build_module(run):
    """The module of a stage run (not set up: nothing built yet) from its resolved configuration's ``model`` (every
    path in it: :meth:`lq.stages.Stage.resolve`), its context lengths checked as its CLI checks them
    (:func:`lq.conf.lengths.length_problems`)."""
    parser = module_parser(run.stage)
    config = parser.parse_object({"model": run.config.get("model") or {}})
    problems = length_problems(run.stage, config.as_dict(), [str(f) for f in run.configs])
    if problems:
        raise ValueError("\n".join(problems))
    return parser.instantiate(config).model
