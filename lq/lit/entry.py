"""The stage CLIs' entry points: ``lq STAGE COMMAND ...`` (:func:`stage_main`), a stage trained with its work after
fitting (:func:`fit_stage`, and ``fit_pretrain`` ... ``fit_rl``: the Python API's), and each stage's LightningModule and
DataModule (:func:`stage_classes`)."""

from __future__ import annotations

from collections.abc import Sequence

from lq.lit.cli import BCCLI, RLCLI, DungeonMasterCLI, LanguageModelBCCLI, PartnerCLI, PretrainCLI, StageCLI

STAGE_CLIS: dict[str, type[StageCLI]] = {
    "pretrain": PretrainCLI,
    "partner": PartnerCLI,
    "dm": DungeonMasterCLI,
    "bc": BCCLI,
    "rl": RLCLI,
    "llm_bc": LanguageModelBCCLI,
}


def stage_main(stage: str, args: Sequence[str] | None = None) -> StageCLI:
    """``lq STAGE COMMAND ...`` with LightningCLI's commands (fit, validate, test, predict)."""
    return STAGE_CLIS[stage](
        *stage_classes(stage), args=list(args) if args is not None else None, seed_everything_default=0
    )


def fit_stage(stage: str, args: Sequence[str] | dict) -> dict[str, float]:
    """Train one stage as ``lq STAGE fit ARGS`` does, with its work after fitting (the pretraining stages' test and
    Table 4/5 artifacts, the agents' zero-shot evaluation), and return its metrics. ``args``: the command line after
    ``fit`` (``["--config", "conf/rl.yaml", ...]``) or the same as a dict."""
    import torch

    args = args if isinstance(args, dict) else list(args)
    threads = torch.get_num_threads()  # the run sets its own (--threads); the caller's come back after it
    try:
        return STAGE_CLIS[stage](*stage_classes(stage), args=args, run=False, seed_everything_default=0).fit()
    finally:
        torch.set_num_threads(threads)


def fit_pretrain(args: Sequence[str] | dict) -> dict[str, float]:
    """:func:`fit_stage` of the pretraining stage: Hits@k of validation and test, Tables 4/5 cells, wall times."""
    return fit_stage("pretrain", args)


def fit_partner(args: Sequence[str] | dict) -> dict[str, float]:
    return fit_stage("partner", args)


def fit_dm(args: Sequence[str] | dict) -> dict[str, float]:
    return fit_stage("dm", args)


def fit_bc(args: Sequence[str] | dict) -> dict[str, float]:
    """:func:`fit_stage` of behaviour cloning: the last validation figures and the zero-shot test rates."""
    return fit_stage("bc", args)


def fit_rl(args: Sequence[str] | dict) -> dict[str, float]:
    """:func:`fit_stage` of RL: the last training figures (``rl/*``, ``losses/*``) and the zero-shot test rates."""
    return fit_stage("rl", args)


def stage_classes(stage: str) -> tuple[type, type | None]:
    """The LightningModule and DataModule of a stage."""
    if stage == "rl":
        from lq.lit.rl import RLModule

        return RLModule, None
    if stage == "bc":
        from lq.lit.bc import BCModule

        return BCModule, None
    if stage == "llm_bc":
        from lq.lit.llm_bc import LanguageModelBCModule

        return LanguageModelBCModule, None
    from lq.lit.pretrain import PretrainDataModule, PretrainModule

    return PretrainModule, PretrainDataModule
