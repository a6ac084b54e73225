"""The drivers: ``lq stage`` (a stage and what it needs, in waves) and ``lq experiment`` (the ablation tables as
MLflow parent and child runs, their plans, tables, records and jobs)."""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from lq.commands import Stopped, UsageError
from lq.stages import JOBS, STAGES  # the registry: light (its kinds import torch only to compute)

if TYPE_CHECKING:
    from lq.experiments import Experiment, Setup


def _setup(args: argparse.Namespace, stage: str, **fields):
    """The experiment setup of ``lq stage`` and ``lq experiment``: ``--args`` go to ``stage`` ("*": every stage),
    ``--rl-args`` (``lq experiment``) to the RL runs after them."""
    from lq.experiments import Setup
    from lq.experiments.launchers import launcher

    try:
        return Setup(
            seeds=args.seeds,
            data_dir=args.data,
            tracking_uri=args.tracking_uri,
            eval_seeds=args.eval_seeds,
            extra_args={
                s: shlex.split(a) for s, a in ((stage, args.args), ("rl", getattr(args, "rl_args", None))) if a
            },
            launcher=launcher(args.launcher, args.launcher_args or ()),
            **fields,
        )
    except (FileNotFoundError, ValueError) as e:
        raise UsageError(str(e)) from None


def _choice(value: str, choices: Sequence[str], flag: str, variable: str) -> str | None:
    """The line that refuses ``value`` where it is not one of ``choices``: the flag and make variable, a "did you
    mean" where one is close, and the choices; None where it is one."""
    import difflib

    if value in choices:
        return None
    near = difflib.get_close_matches(value, choices, n=1)
    hint = f" (did you mean {near[0]}?)" if near else ""
    return f"{flag} {value} ({variable}={value}): unknown{hint}; choose from {', '.join(choices)}"


def _check_stage_choices(args: argparse.Namespace) -> None:
    """Refuse, before anything starts, an encoder the stage does not train (pretraining: the four pretrained encoders;
    the agents: the paper's five), an ability and a switch lq does not know: one line, the fix in it."""
    from lq.experiments.specs import ENCODERS
    from lq.rl.acting import ABILITIES
    from lq.rl.switch import SWITCHES
    from lq.stages import ENV_STAGES, kind_of

    problems = []
    if args.encoder and kind_of(args.stage).names_model:
        from lq.llm.model import ModelError, model_file

        try:
            model_file(args.encoder)
        except ModelError as e:
            problems.append(str(e).replace("--llm", "--encoder", 1))
    elif args.encoder and args.stage not in ENV_STAGES:
        # pretraining: scratch too, which says itself that it is not pretrained
        problems.append(_choice(args.encoder, ENCODERS, "--encoder", "ENCODER"))
    if kind_of(args.stage).agent:
        problems.append(_choice(args.ability, ABILITIES, "--ability", "ABILITY"))
        problems.append(_choice(args.switch, SWITCHES, "--switch", "SWITCH"))
    problems = [p for p in problems if p]
    if problems:
        raise UsageError("; ".join(problems))


def _cmd_stage(args: argparse.Namespace) -> int:
    from lq import experiments as X
    from lq.experiments.launchers import JobFailed
    from lq.stages import ENV_STAGES, kind_of

    _check_stage_choices(args)
    setup = _setup(
        args, args.stage, profile=args.profile, protocol=args.protocol, objective=args.objective, jobs=args.jobs
    )
    encoder = args.encoder or (setup.env_encoder if args.stage in ENV_STAGES else "general_light")
    if not args.encoder and kind_of(args.stage).names_model:
        from lq.llm.model import DEFAULT_MODEL

        encoder = DEFAULT_MODEL
    if args.compare and args.stage != "rl":
        raise UsageError(f"--compare compares RL agents with BC's and the baselines: lq stage rl, not {args.stage}")
    if args.print:  # the same jobs run_stage runs, as command lines
        try:
            waves = X.running.stage_waves(
                args.stage, setup, encoder, args.ability, args.switch, args.compare, args.force
            )
        except FileNotFoundError as e:
            raise UsageError(str(e)) from None
        print("\n".join(X.running.shown_waves(waves)))
        return 0
    try:
        X.run_stage(args.stage, setup, encoder, args.ability, args.switch, compare=args.compare, force=args.force)
    except FileNotFoundError as e:  # a dataset that is not there, a config that does not exist
        raise UsageError(str(e)) from None
    except JobFailed as e:
        raise Stopped(e.failures) from None
    return 0


def _cmd_experiment(args: argparse.Namespace) -> int:
    from lq import experiments as X
    from lq.experiments.launchers import JobFailed

    names = args.names or list(X.EXPERIMENTS)
    unknown = [n for n in names if n not in X.EXPERIMENTS]
    if unknown:
        raise UsageError(f"unknown experiment {', '.join(unknown)}; choose from {', '.join(X.EXPERIMENTS)}")
    if args.action in JOBS:
        return _experiment_job(args, names)
    if args.action == "import":
        from lq.experiments.records import import_records

        done = import_records(args.tracking_uri, args.records)
        made = [(path, parent) for path, parent in done if parent]
        for path, parent in made:
            print(f"{path}: imported as parent run {parent}")
        print(f"{len(made)} of {len(done)} records in {args.records}/ imported into {args.tracking_uri}", end="")
        print(f" ({len(done) - len(made)} held already)" if len(made) < len(done) else "")
        return 0
    if args.action == "export":
        from lq.experiments.claims import export_current
        from lq.experiments.records import export_parent

        if args.parent:
            print(f"wrote {export_parent(args.tracking_uri, args.parent, args.records)}")
            return 0
        profile, protocol = args.profile or "tiny", args.protocol or "paper"
        for path in export_current(args.tracking_uri, profile, protocol, args.records):
            print(f"wrote {path}")
        return 0
    if args.action == "report":
        from lq.experiments.claims import write_results_page

        profile, protocol = args.profile or "tiny", args.protocol or "paper"
        page = write_results_page(args.tracking_uri, profile, protocol, args.page)
        print(f"{page}: every experiment and objective of profile {profile} and protocol {protocol} in the store")
        return 0
    setup = _setup(
        args, "*", profile=args.profile or "tiny", protocol=args.protocol or "paper", jobs=args.jobs,
        objective=args.objective or "lq", outputs=args.outputs or "",
    )  # fmt: skip
    if args.action == "graph":
        for name in names:
            experiment = X.EXPERIMENTS[name](*([args.encoders] if args.encoders else []), objective=setup.objective)
            print("\n".join(X.running.experiment_graph(experiment, setup)))
        return 0
    if args.parent and len(names) != 1:
        raise UsageError(f"experiment {args.action} --parent: name the one experiment the parent run belongs to")
    if args.action in ("run", "plan"):
        for name in names:
            experiment = _experiment(name, args, setup)
            if args.action == "plan":
                lines = X.plan(experiment, setup, resume=args.resume, parent=args.parent, dry_run=args.dry_run)
                print("\n".join(lines))
                continue
            try:
                parent, tables = X.run_experiment(experiment, setup, resume=args.resume, parent=args.parent)
            except FileNotFoundError as e:  # a dataset that is not there, a config that does not exist
                raise UsageError(str(e)) from None
            except JobFailed as e:
                raise Stopped(e.failures) from None
            print(f"{experiment.title}: parent run {parent} in MLflow experiment lq-{name}")
            X.write_local(tables, args.out, experiment)
            if args.log_model:  # the best agent exported and logged on the parent, once its tables are built
                from mlflow.tracking import MlflowClient

                from lq.commands.jobs import log_best_model

                log_best_model(MlflowClient(setup.tracking_uri), experiment, parent, setup, print)
        if args.action == "plan":
            return 0
    else:
        from mlflow.tracking import MlflowClient

        from lq.experiments.claims import current_parents
        from lq.experiments.records import parent_here

        client = MlflowClient(setup.tracking_uri)
        if args.parent:
            found = [(names[0], None, parent_here(client, args.parent, setup.tracking_uri))]
        elif args.objective:
            identity = (args.profile, args.protocol, args.objective)
            found = [(n, args.objective, X.latest_parent(setup.tracking_uri, n, *identity)) for n in names]
        else:  # each objective's newest parent, as the results page shows them; where it shows none, the newest
            # of any objective (a parent from before objectives were tagged)
            found = []
            for n in names:
                each = [f for f in current_parents(setup.tracking_uri, args.profile, args.protocol, [n]) if f[2]]
                found += each or [(n, None, X.latest_parent(setup.tracking_uri, n, args.profile, args.protocol))]
        for name, objective, parent in found:
            identity = {"profile": args.profile, "protocol": args.protocol, "objective": objective}
            if parent is None:
                of = ", ".join(f"{k} {v}" for k, v in identity.items() if v)
                print(
                    f"{name}: no finished parent run{f' of {of}' if of else ''} in {setup.tracking_uri} (run: lq "
                    f"experiment run {name})"
                )
                continue
            experiment = X.experiment_for(client, parent)
            run = client.get_run(parent)
            tags = run.data.tags
            shown_identity = ", ".join(f"{k} {tags.get(f'lq.{k}', '?')}" for k in ("profile", "protocol", "objective"))
            print(f"{experiment.title}: from parent run {parent}, {shown_identity} (no training)")
            X.write_local(X.build_tables(experiment, parent, setup.tracking_uri), args.out, experiment)
            if run.info.status == "RUNNING":  # a planned parent: its children ran elsewhere, the tables finish it
                playing = [r for r in X.children(client, parent, finished=False) if r.info.status == "RUNNING"]
                if playing:  # unless its driver is still at work: a look at a running campaign leaves it running
                    print(f"{name}: parent run {parent} left running ({len(playing)} of its children still run)")
                else:
                    client.set_terminated(parent, "FINISHED")
    print(f"tables in {args.out}/ and on the parent runs; browse them with: make ui (http://127.0.0.1:5000)")
    return 0


def _experiment(name: str, args: argparse.Namespace, setup: Setup) -> Experiment:
    """The experiment ``name`` that ``run`` and ``plan`` train: ``generalisation_long`` with the generalisation
    variant chosen on the validation quests (a resumed parent's: the one it recorded), every other as it is."""
    from lq import experiments as X

    encoders = [args.encoders] if args.encoders else []
    if name != "generalisation_long":
        return X.EXPERIMENTS[name](*encoders, objective=setup.objective)
    if args.parent:  # its id where it ran, or here: a campaign's record imported on another machine is resumed there
        from mlflow.tracking import MlflowClient

        from lq.experiments.records import parent_here

        client = MlflowClient(setup.tracking_uri)
        return X.experiment_for(client, parent_here(client, args.parent, setup.tracking_uri))
    try:
        variant, line = X.reporting.chosen_generalisation_variant(setup.tracking_uri, setup.profile, setup.protocol)
    except LookupError as e:
        raise UsageError(str(e)) from None
    print(f"generalisation_long: {line}")
    return X.EXPERIMENTS[name](*encoders, objective=setup.objective, variants=[variant])


def _experiment_job(args: argparse.Namespace, names: list[str]) -> int:
    """``lq experiment spaces``, ``calibrate``, ``baselines`` and ``llm``: the preparation jobs and the children that
    train nothing, each a :class:`Run` named by the options ``lq experiment plan`` prints (profile, protocol,
    objective, data, outputs, encoder (``llm``: the language model), ability, switch, seed; ``--args``: its agent
    module's extra arguments)."""
    from lq import experiments as X
    from lq.commands.jobs import run_baselines, run_language_model, run_preparation

    if len(args.seeds) != 1 or len(args.encoders or [""]) != 1:
        raise UsageError(f"experiment {args.action}: one --seeds N and at most one --encoders ENCODER")
    if args.action in ("spaces", "llm") and not args.encoders:
        what = "the pretrained encoder whose vectors to compute" if args.action == "spaces" else "the language model"
        raise UsageError(f"experiment {args.action}: --encoders ENCODER, {what}")
    setup = _setup(
        args, "*", profile=args.profile or "tiny", protocol=args.protocol or "paper", objective=args.objective or "lq",
        outputs=args.outputs or "",
    )  # fmt: skip
    encoder = (args.encoders or [""])[0]
    run = X.running.prep(args.action, setup, encoder, ability=args.ability, switch=args.switch, seed=args.seeds[0])
    run = dataclasses.replace(run, written=args.config or "")  # the config its scheduler resolved, read alone
    if args.action not in ("baselines", "llm"):
        run_preparation(run)
        return 0
    if len(names) != 1 or not args.parent:
        raise UsageError(f"experiment {args.action}: name one experiment and --parent RUN_ID")
    experiment = X.EXPERIMENTS[names[0]](objective=setup.objective)
    keys = [c.key for c in experiment.configs if c.stage == args.action]
    if (key := X.Config(args.action, run.encoder, args.ability, args.switch).key) not in keys:
        raise UsageError(f"{key}: not a child of {names[0]}; its {args.action} children: {', '.join(keys) or 'none'}")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(args.tracking_uri)
    if args.action == "llm":
        child = run_language_model(client, names[0], run, args.parent)
    else:
        child = run_baselines(client, names[0], run, args.parent, validation=experiment.validation_baselines)
    print(f"{args.action} child run {child} ({key}) of parent {args.parent}")
    return 0


def _launcher_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--launcher",
        default="local",
        choices=["local", "submitit"],
        help="local: child processes here (--jobs side by side, one GPU each); submitit: each job to SLURM (or "
        "submitit's local executor: --launcher-args cluster=local)",
    )
    parser.add_argument(
        "--launcher-args",
        nargs="+",
        metavar="KEY=VALUE",
        help="submitit's parameters, e.g. slurm_partition=gpu gpus_per_node=1 timeout_min=240 mem_gb=32",
    )


def _experiment_parser(sub) -> None:
    """``lq experiment``: the paper's tables as MLflow parent and child runs."""
    xp = sub.add_parser("experiment", help="the paper's tables: train as MLflow parent/child runs, or rebuild tables")
    xp.add_argument(
        "action",
        choices=["run", "plan", "graph", "tables", "report", "export", "import", *JOBS],
        help="run: train and tabulate; plan: print every job as a command line, for any scheduler; graph: its stage "
        "runs and what each needs, as a Mermaid flowchart (nothing opened or run); tables: from the "
        "store only (--parent: that parent, finished by it); report: the results page (every experiment and objective "
        "of --profile and --protocol, the paper's orderings marked) from the store only, to --page; export: the runs "
        "of each parent that page shows, one file each, to --records; import: those files' runs into the store, once; "
        f"{', '.join(JOBS)}: jobs plan prints",
    )
    xp.add_argument("names", nargs="*", help="table1, table2, table7, table45 (default: all)")
    xp.add_argument("--encoders", nargs="+", help="encoder types to include (default: the paper's for that table)")
    xp.add_argument(
        "--profile",
        help="run, plan: the folder conf/profile/PROFILE/ (default tiny; quick: tiny's stages trained for less); "
        "tables: the newest parent run of this profile (default: of any)",
    )
    xp.add_argument(
        "--protocol",
        help="run: conf/protocol/PROTOCOL.yaml, how the agents are trained and evaluated (default paper; restricted: "
        "lq's earlier one); tables: the newest parent run of this protocol (default: of any)",
    )
    xp.add_argument(
        "--objective",
        help="run: conf/objective/OBJECTIVE.yaml, what RL optimises (default lq; paper: Table 6 and the released "
        "code); tables: the newest parent run of this objective (default: each objective's, as the results page shows "
        "them)",
    )
    xp.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds per configuration")
    xp.add_argument("--eval-seeds", type=int, default=1, help="zero-shot evaluations per trained agent")
    xp.add_argument(
        "--jobs", type=int, default=1, help="agent runs (RL, BC) trained side by side, the cores shared among them"
    )
    xp.add_argument("--data", default="data/default", help="dataset folder (generated if missing)")
    xp.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow store or tracking server")
    xp.add_argument(
        "--parent",
        help="tables: this parent run instead of the latest; run, plan with --resume: this unfinished parent run "
        "instead of the newest; export: this parent run's record alone, finished or not (to resume elsewhere); an "
        "imported parent is named by its id here or the id it had where it ran",
    )
    xp.add_argument(
        "--resume",
        action="store_true",
        help="run: continue the newest unfinished parent run (same profile, seeds, encoders), training what is missing",
    )
    xp.add_argument(
        "--dry-run",
        action="store_true",
        help="plan: open no parent run (a new one is shown as PARENT; with --resume, the one it would resume), so "
        "that a look at the plan beside a running campaign leaves nothing for --resume to pick",
    )
    xp.add_argument(
        "--config",
        metavar="FILE",
        help="calibrate, spaces, baselines: the RL run's resolved config its scheduler wrote (lq experiment plan "
        "names it; without it, resolved here from the options)",
    )
    xp.add_argument("--args", help="extra arguments for every stage run, e.g. '--trainer.max_epochs 1'")
    xp.add_argument(
        "--rl-args",
        help="extra arguments for the RL runs, after the objective's file, e.g. '--model.lr 3e-4'",
    )
    xp.add_argument(
        "--log-model",
        action="store_true",
        help="run: export the best agent as a bundle (OUTPUTS/bundles/) and log it on the parent as an MLflow model",
    )
    xp.add_argument("--out", type=Path, default=Path("outputs/tables"), help="also write the tables here")
    xp.add_argument(
        "--page", type=Path, default=Path("docs/results/current.md"), help="report: where the results page goes"
    )
    xp.add_argument(
        "--records",
        type=Path,
        default=Path("docs/results/runs"),
        help="export, import: the folder of the runs' records (*.json.gz)",
    )
    _launcher_arguments(xp)
    xp.add_argument(
        "--outputs", help="where the stages' checkpoints go (default outputs/, or outputs/DATASET for another dataset)"
    )
    xp.add_argument("--ability", default="act_speech", help=f"{', '.join(JOBS)}: the agent's ability")
    xp.add_argument("--switch", default="hardcoded", help=f"{', '.join(JOBS)}: the agent's switch")
    xp.set_defaults(func=_cmd_experiment)


def _stage_parser(sub) -> None:
    """``lq stage``: one stage and what it needs first (the make targets)."""
    st = sub.add_parser(
        "stage",
        help="one stage as the resolver configures it: what it needs first, then one run per seed (the make targets)",
    )
    st.add_argument("stage", choices=STAGES)
    st.add_argument("--encoder", help="conf/encoder/ENCODER.yaml (default general_light; partner, dm: the profile's)")
    st.add_argument("--profile", default="tiny", help="the folder conf/profile/PROFILE/ (tiny, paper, quick, ...)")
    st.add_argument("--protocol", default="paper", help="conf/protocol/PROTOCOL.yaml (agents: paper or restricted)")
    st.add_argument("--objective", default="lq", help="rl: conf/objective/OBJECTIVE.yaml (lq or paper)")
    st.add_argument("--ability", default="act_speech", help="agents: act_speech, act, speech, speech_no_speech_goals")
    st.add_argument("--switch", default="hardcoded", help="agents: hardcoded or ratio")
    st.add_argument("--seeds", type=int, nargs="+", default=[0], help="agents: one run per seed")
    st.add_argument(
        "--jobs", type=int, default=1, help="agents: runs trained side by side, the cores shared among them (the "
        "same figures: each run fixes its own threads)",
    )  # fmt: skip
    st.add_argument("--eval-seeds", type=int, default=1, help="agents: zero-shot evaluations after fitting")
    st.add_argument("--data", default="data/default", help="dataset folder (data/default is generated if missing)")
    st.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow store or tracking server")
    st.add_argument("--args", help="extra arguments of this stage's runs, e.g. '--trainer.max_epochs 1'")
    st.add_argument(
        "--compare", action="store_true", help="rl: then BC where missing, and both evaluated beside the baselines"
    )
    st.add_argument(
        "--force", action="store_true", help="train the stage's runs again from their start, even those that finished "
        "with these settings (which are otherwise kept; a stopped run goes on from its last checkpoint)",
    )  # fmt: skip
    st.add_argument("--print", action="store_true", help="print the stage's command lines and run nothing")
    _launcher_arguments(st)
    st.set_defaults(func=_cmd_stage)


def add_parsers(sub) -> None:
    _experiment_parser(sub)
    _stage_parser(sub)
