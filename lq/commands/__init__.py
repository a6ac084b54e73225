"""The ``lq`` command's subcommands, one module per family (:mod:`lq.cli` builds the parser and runs them): the data
commands (:mod:`lq.commands.data`), what is done with trained agents (:mod:`lq.commands.agents`: play, eval, gradients,
export) and the drivers of stages and experiments (:mod:`lq.commands.experiments`). Each module adds its parsers with
``add_parsers(sub)``; what they share is here."""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Sequence


class UsageError(Exception):
    """A command-line mistake: printed as one line, exit status 2."""


class Stopped(Exception):
    """Jobs of a driver that were killed or failed (:class:`lq.experiments.launchers.JobFailed`): a line each."""

    def __init__(self, failures: Sequence[object]):
        self.failures = list(failures)
        super().__init__("; ".join(map(str, self.failures)))


def again(argv: Sequence[str], resume: bool) -> str:
    """The command that goes on from where ``lq ARGV`` stopped: the same, with ``--resume`` for an experiment (its
    finished children are kept); a stage's finished steps are kept anyway."""
    argv = list(argv)
    if resume and "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["lq", *argv])


def positive_count(text: str) -> int:
    """A count of quests (``--quests N``, ``lq data pool DATA N``): a positive whole number (argparse names the option
    when this refuses)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive whole number of quests, e.g. 5")
    return int(text)
