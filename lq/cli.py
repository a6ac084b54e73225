"""The ``lq`` command (also ``python -m lq``).

Data commands are plain argparse and import nothing heavy; training stages (added with their
LightningModules) go through LightningCLI. The stages and jobs it names are the registry's (:mod:`lq.stages`); each
family of subcommands is a module of :mod:`lq.commands`.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence

from lq.commands import Stopped, UsageError, again, agents, data, experiments, llm
from lq.stages import CHILD, STAGES, kind_of  # the registry: light (its kinds import torch only to compute)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lq", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for stage in STAGES:  # the registry's training stages, each a LightningCLI (lq STAGE fit --config ...)
        sub.add_parser(stage, help=f"{kind_of(stage).summary} (LightningCLI)", add_help=False)
    agents.add_parsers(sub)
    experiments.add_parsers(sub)
    data.add_parsers(sub)
    llm.add_parsers(sub)
    return parser


def go_on_from(argv: Sequence[str], last: str | None) -> str:
    """How a stage run stopped goes on: ``lq STAGE fit ... --ckpt_path LAST`` from the last checkpoint it saved, else
    (none yet) the same command, which trains it from its start."""
    if last is None:
        return f"nothing was saved yet; train it from its start with: {shlex.join(['lq', *argv])}"
    argv = list(argv)
    if "--ckpt_path" in argv[:-1]:
        del argv[argv.index("--ckpt_path") : argv.index("--ckpt_path") + 2]
    argv = [a for a in argv if not a.startswith("--ckpt_path=")]
    return f"go on with: {shlex.join(['lq', *argv, '--ckpt_path', last])}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; a user's mistake (bad file, unknown name, no network) prints one line, not a traceback.

    Training stages (``lq pretrain fit --config ...``) hand the rest of the command line to LightningCLI
    (``fit`` through :func:`lq.lit.entry.fit_stage`).
    """
    from lq.data.download import DownloadError
    from lq.data.errors import DataFormatError
    from lq.world.goals import GoalError
    from lq.world.state import UnknownCharacter

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in STAGES:
        from lq.lit.entry import fit_stage, stage_main

        try:
            if argv[1:2] == ["fit"]:  # train, then the stage's own work after fitting (lq.lit.entry.fit_stage)
                fit_stage(argv[0], argv[2:])
            else:  # LightningCLI's other commands (validate, test, --help ...)
                stage_main(argv[0], argv[1:])
        except (DataFormatError, FileNotFoundError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt as stop:
            if not os.environ.get(CHILD):  # a driver's child: its driver says how to go on
                print(f"interrupted: the run is marked KILLED; {go_on_from(argv, getattr(stop, 'last', None))}",
                      file=sys.stderr)  # fmt: skip
            return 130
        return 0
    args = build_parser().parse_args(argv)
    drivers = (experiments._cmd_experiment, experiments._cmd_stage)
    resumable = getattr(args, "func", None) in drivers and getattr(args, "action", "run") == "run"
    try:
        return args.func(args)
    except Stopped as err:  # a line per job (and the end of its log); the last says how to go on
        go_on = f"go on with: {again(argv, args.func is experiments._cmd_experiment)}" if resumable else ""
        for i, failure in enumerate(err.failures, 1):
            said = f"error: {failure}"
            if go_on and i == len(err.failures):
                said += f"\n{go_on}" if "\n" in said else f"; {go_on}"
            print(said, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        go_on = f"; go on with: {again(argv, args.func is experiments._cmd_experiment)}" if resumable else ""
        kept = ", the finished ones kept as they were" if getattr(args, "force", False) else ""
        print(f"interrupted: the runs stopped are marked KILLED{kept}{go_on}", file=sys.stderr)
        return 130
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (
        DataFormatError,
        DownloadError,
        GoalError,
        UnknownCharacter,
        FileExistsError,
        FileNotFoundError,
        ValueError,
    ) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
