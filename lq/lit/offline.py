"""A stage run's LightningModule built from the run's configuration (:attr:`lq.stages.Run.config`) without running
its CLI: what the drivers read of a run before it trains (the hyperparameters its checkpoints will hold) and the module
a preparation job computes with (the partner's calibration, the spaces' vectors, the baselines)."""

from __future__ import annotations

import functools

from lightning.pytorch.cli import LightningArgumentParser

from lq.conf.lengths import length_problems
from lq.lit.entry import STAGES, stage_classes


@functools.cache
def module_parser(stage: str) -> LightningArgumentParser:
    """A parser of the stage's LightningModule's arguments alone (``model``: their types and the module's defaults),
    as its CLI adds them."""
    parser = LightningArgumentParser(exit_on_error=False)
    parser.add_lightning_class_args(stage_classes(stage)[0], "model", subclass_mode=False)
    return parser


def _module_config(run):
    """``run``'s module arguments, resolved once: its configuration (:attr:`lq.stages.Run.config`: its config files,
    then its arguments), what its CLI links (:meth:`StageCLI.module_links`), the module's defaults and types."""
    config = run.config
    model = {**(config.get("model") or {}), **STAGES[run.stage].module_links(config)}
    return module_parser(run.stage).parse_object({"model": model})


def module_hparams(run) -> dict:
    """The hyperparameters the module of a stage run (:class:`lq.stages.Run`) is built with, read without building it:
    what its checkpoints' ``hyper_parameters`` hold. Whether a BC agent is the start an RL run would use and whether a
    last checkpoint is a run's own (:mod:`lq.experiments.running`) read this."""
    return _module_config(run).model.as_dict()


def build_module(run):
    """The module of a stage run (not set up: nothing built yet), its context lengths checked as its CLI checks them
    (:func:`lq.conf.lengths.length_problems`)."""
    config = _module_config(run)
    problems = length_problems(run.stage, config.as_dict(), [str(f) for f in run.configs])
    if problems:
        raise ValueError("\n".join(problems))
    return module_parser(run.stage).instantiate(config).model
