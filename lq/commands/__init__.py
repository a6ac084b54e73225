"""The ``lq`` command's subcommands, one module per family (:mod:`lq.cli` builds the parser and runs them): the data
commands (:mod:`lq.commands.data`), what is done with trained agents (:mod:`lq.commands.agents`: play, eval, gradients,
export), the drivers of stages and experiments (:mod:`lq.commands.experiments`) and a language model as a
zero-shot agent (:mod:`lq.commands.llm`). Each module adds its parsers with
``add_parsers(sub)``; what they share is here."""

from __future__ import annotations

import argparse
import os
import shlex
from collections.abc import Sequence


class UsageError(Exception):
    """A command-line mistake: printed as one line, exit status 2."""


class Stopped(Exception):
    """Jobs of a driver that were killed or failed (:class:`lq.experiments.launchers.JobFailed`): a line each."""

    def __init__(self, failures: Sequence[object]):
        self.failures = list(failures)
        super().__init__("; ".join(map(str, self.failures)))


# the make command a user typed (``make rl ENCODER=scratch SEEDS="0 1"``), which the Makefile exports to the ``lq`` it
# runs: a driver stopped says how to go on in the user's own words
MAKE_COMMAND = "LQ_MAKE"


def again(argv: Sequence[str], resume: bool) -> str:
    """The one command that goes on from where ``lq ARGV`` stopped, without ``--force`` (a forced run that stopped
    left the finished one in place: the command finds it done): the make command the user typed (``LQ_MAKE``), with
    ``RESUME=1`` for an experiment; else ``lq ARGV``, with ``--resume`` for an experiment (its finished children are
    kept). A stage's finished steps are kept anyway, and a stopped one goes on from its last checkpoint."""
    typed = os.environ.get(MAKE_COMMAND, "").split(maxsplit=1)
    if len(typed) == 2 and typed[0] == "make":
        words = [w for w in shlex.split(typed[1]) if not w.startswith(("RESUME=", "FORCE="))]
        return shlex.join(["make", *words, *(["RESUME=1"] if resume else [])])
    argv = [a for a in argv if a != "--force"]
    if resume and "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["lq", *argv])


def positive_count(text: str) -> int:
    """A count of quests (``--quests N``, ``lq data pool DATA N``): a positive whole number (argparse names the option
    when this refuses)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive whole number of quests, e.g. 5")
    return int(text)
