"""The ``lq`` command (also ``python -m lq``).

Data commands are plain argparse and import nothing heavy; training stages (added with their
LightningModules) go through LightningCLI. The stages and jobs it names are the registry's (:mod:`lq.stages`).
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from lq.stages import JOBS, STAGES  # the registry: light (its kinds import torch only to compute)


class UsageError(Exception):
    """A command-line mistake: printed as one line, exit status 2."""


class Stopped(Exception):
    """Jobs of a driver that were killed or failed (:class:`lq.experiments.launchers.JobFailed`): a line each."""

    def __init__(self, failures: Sequence[object]):
        self.failures = list(failures)
        super().__init__("; ".join(map(str, self.failures)))


def _again(argv: Sequence[str], resume: bool) -> str:
    """The command that goes on from where ``lq ARGV`` stopped: the same, with ``--resume`` for an experiment (its
    finished children are kept); a stage's finished steps are kept anyway."""
    argv = list(argv)
    if resume and "--resume" not in argv:
        argv.append("--resume")
    return shlex.join(["lq", *argv])


def _cmd_data_download(args: argparse.Namespace) -> int:
    from lq.data.download import RESOURCES, download_all

    unknown = set(args.only or ()) - {r.name for r in RESOURCES}
    if unknown:
        names = ", ".join(r.name for r in RESOURCES)
        raise UsageError(f"unknown resource {', '.join(sorted(unknown))}; choose from {names}")
    download_all(
        args.dest,
        [r for r in RESOURCES if not args.only or r.name in args.only],
        timeout=args.timeout,
        mirror=args.mirror,
    )
    return 0


def _cmd_data_stats(args: argparse.Namespace) -> int:
    from lq.data.stats import dataset_stats, format_stats, link_reports

    print(format_stats(dataset_stats(args.path)))
    reports = link_reports(args.path)
    if reports:
        from lq.data.dataset import load_dataset
        from lq.envs.episode import playable_instances

        print("\nDemonstrations and their quests (paper: 1800 / 100 / 211):")
        for report in reports:
            print("\n".join(report.lines()))
        dataset = load_dataset(args.path)
        _, problems = playable_instances(dataset.quests.all(), dataset.demos.all())
        print(f"linked demonstrations whose goal the engine cannot play: {len(problems)}", end="")
        print(f" (first: {problems[0]})" if problems else "")
    return 0


def _cmd_data_link(args: argparse.Namespace) -> int:
    from lq.data.dataset import link_dataset

    dataset = link_dataset(args.src, args.out, args.demos, overwrite=args.overwrite)
    print("\n".join(dataset.report.lines()))
    print(f"wrote {args.out}/quests, {args.out}/demos and {args.out}/link-report.json")
    return 0


def _cmd_data_generate(args: argparse.Namespace) -> int:
    from lq.generate import generate_dataset

    manifest = generate_dataset(
        args.out,
        light_db=args.light_db,
        scale=args.scale,
        seed=args.seed,
        overwrite=args.overwrite,
        atomic_fill=args.atomic_fill,
        mlm_steps=args.mlm_steps,
    )
    counts = "; ".join(f"{k} {'/'.join(str(v) for v in c.values())}" for k, c in manifest["counts"].items())
    print(f"wrote {args.out} (scale {args.scale}, seed {args.seed}): {counts}")
    return 0


def _cmd_data_pool(args: argparse.Namespace) -> int:
    from lq.data.pools import pool_dir
    from lq.generate import generate_pool

    out = args.out or Path(pool_dir(args.data, args.count))
    generate_pool(args.data, out, args.count, overwrite=args.overwrite)
    print(f"wrote {out}: train on it beside {args.data} with --model.env.pool {out}")
    return 0


def _cmd_data_atomic_light(args: argparse.Namespace) -> int:
    from lq.data.atomic import load_atomic_csv
    from lq.data.atomic_light import write_atomic_light
    from lq.data.default_db import load_default_db
    from lq.data.io import atomic_dir
    from lq.data.light_db import load_light_db
    from lq.tasks.atomic_light import build_atomic_light, light_nouns

    db = load_light_db(args.light_db) if args.light_db else load_default_db()
    events = [e for path in args.atomic for e in load_atomic_csv(path)]
    filler = None
    if args.fill == "mlm":
        from lq.models.mlm_fill import MaskedLMFiller

        filler = MaskedLMFiller.fine_tune(db, light_nouns(db), steps=args.mlm_steps, seed=args.seed).fill
    samples = build_atomic_light(events, db, seed=args.seed, filler=filler)
    with atomic_dir(args.out, overwrite=args.overwrite) as tmp:
        write_atomic_light(samples, tmp)
    print(f"wrote {args.out}: " + ", ".join(f"{k} {v}" for k, v in samples.counts().items()))
    return 0


def _cmd_data_affordances(args: argparse.Namespace) -> int:
    from lq.data.affordances import evaluate, format_scores
    from lq.data.world_graph import load_world_graph

    worlds = sorted(Path(args.worlds).glob("*.json"))
    if not worlds:
        raise UsageError(f"no world graphs (*.json) in {args.worlds}")
    scores = evaluate(load_world_graph(w) for w in worlds)
    print(f"affordance inference against {len(worlds)} LIGHT world graphs in {args.worlds}")
    print(format_scores(scores))
    return 0


def default_quest(data_dir: Path) -> Path:
    """The first test quest stem of a dataset folder, generating the default dataset there first if it is missing."""
    folder = data_dir / "quests" / "test"
    if not folder.is_dir():
        from lq.generate import generate_dataset

        print(f"{data_dir} is missing: generating the default dataset there first (about half a minute)")
        generate_dataset(data_dir, scale="default", seed=0, log=lambda _: None)
    quests = sorted(folder.glob("*.json"))
    if not quests:
        raise FileNotFoundError(f"{folder}: no quest stems (*.json); name a world or quest file to play")
    return quests[0]


def quest_file(target: Path, data_dir: Path) -> Path:
    """What ``lq play TARGET`` plays without an agent: a world or quest file, or a quest id of ``data_dir``."""
    if target.is_file():
        return target
    found = sorted((data_dir / "quests").glob(f"*/{target.name}.json")) if target.name == str(target) else []
    if not found:
        raise UsageError(
            f"{target}: neither a world or quest file nor a quest id of {data_dir} (ids look like test_00006; "
            f"--data DIR names another dataset)"
        )
    return found[0]


def _quest_id(target: Path) -> str:
    """What ``lq play TARGET --agent ...`` plays: a quest id, or the id of the quest file named."""
    if not target.is_file():
        return str(target)
    from lq.data.io import read_json

    quest = read_json(target)
    return str(quest.get("quest_id") or target.stem) if isinstance(quest, dict) else target.stem


def _transcript(args: argparse.Namespace, game: str) -> Path:
    """Where a game's transcript goes: ``--transcript``, or one per game named by its quest (or world) and the time."""
    import time

    return args.transcript or Path("outputs/play") / f"{game}-{time.strftime('%Y%m%d-%H%M%S')}"


def _cmd_play(args: argparse.Namespace) -> int:
    if args.agent is not None:
        from lq.lit.checkpoints import load_agent
        from lq.lit.interactive import play_against

        side = args.character or "partner"
        if side not in ("partner", "self"):
            raise UsageError(f"--as {side}: with --agent you play the partner or the self character")
        if args.goal or args.partner:
            raise UsageError("--goal and --partner are the quest's own with --agent: name a quest id instead")
        quest = _quest_id(args.world) if args.world is not None else None
        try:  # the transcript is named by the quest played (QUEST-TIME), known once the agent's data is read
            play_against(load_agent(args.agent), quest, side, lambda played: _transcript(args, played))
        except KeyboardInterrupt:  # a game stopped by Ctrl-C saves its transcript: this one stopped while loading
            print("interrupted before the game began: nothing to save", file=sys.stderr)
            return 130
        return 0
    from lq.world.play import main as play_main

    world = quest_file(args.world, args.data) if args.world is not None else default_quest(args.data)
    return play_main(str(world), args.character, args.goal, args.partner, _transcript(args, world.stem))


def _cmd_eval(args: argparse.Namespace) -> int:
    from lq.data.io import atomic_open
    from lq.eval import lost_table, results_table
    from lq.lit.checkpoints import evaluate_checkpoints, training_curves

    overrides = {"eval_max_steps": args.max_steps} if args.max_steps else {}
    if args.protocol:
        from lq.envs.protocol import protocol_of

        overrides["protocol"] = protocol_of(args.protocol)
    overrides.update(_places(args))
    if args.demonstrations:
        from lq.lit.checkpoints import demonstration_table

        table = demonstration_table(args.checkpoints, args.split, args.quests, **overrides)
        print(f"\nTeacher-forced on the demonstrations (the first {args.quests or 'all'} of each split)\n{table}")
        if args.out:
            with atomic_open(args.out.with_suffix(".md")) as f:
                f.write(table + "\n")
        return 0
    played = {"sampled": not args.greedy_only, "temperature": args.temperature, "seed": args.seed}
    played["quests"] = args.quests  # the first N quests of the split only (None: all)
    if args.worlds:
        played["worlds"] = _worlds(args)
    rows = evaluate_checkpoints(args.checkpoints, args.baselines, args.split, **played, **overrides)
    markdown, csv = results_table(rows)
    which = f"the first {args.quests} {args.split} quests" if args.quests else f"the {args.split} quests"
    if args.worlds:
        partner, dm = played["worlds"][1:]
        which += f" of {args.worlds} (partner {partner}, DM {dm})"
    protocol = f"the {args.protocol} protocol" if args.protocol else "each agent's own protocol"
    decoding = "greedy only" if args.greedy_only else f"greedy and sampled at temperature {args.temperature:g}"
    title = (f"Zero-shot evaluation on {which} under {protocol}, evaluation seed {args.seed}, {decoding} (one episode "
             "per quest; mean ± std over the agents' seeds; the baselines over their own seeds)")  # fmt: skip
    print(f"\n{title}")
    print(markdown)
    lost = "Where the act goals were lost (shares of all episodes; the goal is valid where the agent could take it)"
    lost += f"\n\n{lost_table(rows)}"
    print(lost)
    if args.out:
        with atomic_open(args.out.with_suffix(".md")) as f:
            f.write(f"{title}\n\n{markdown}\n{lost}")
        with atomic_open(args.out.with_suffix(".csv")) as f:
            f.write(csv)
        print(f"written to {args.out.with_suffix('.md')} and {args.out.with_suffix('.csv')}")
        curves = args.out.with_name(args.out.name + "-curves.png")
        if training_curves(args.checkpoints, curves):
            print(f"learning curves: {curves}")
    return 0


def _cmd_gradients(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    import torch

    from lq.lit.checkpoints import load_agent
    from lq.rl.losses import A2CSettings

    module = load_agent(args.checkpoint)
    if module.stage != "rl":
        raise UsageError(f"{args.checkpoint}: a {module.stage.upper()} agent has no RL objective; name an RL agent's")
    if args.paper_objective:  # conf/objective/paper.yaml's loss (coefficients, gamma, reduction, raw advantages)
        import yaml

        from lq.conf import path

        paper = yaml.safe_load(path("objective", "paper.yaml").read_text(encoding="utf-8"))["model"]
        module.settings = A2CSettings(
            {**asdict(module.settings.coefficients), **paper["coefficients"]},  # Table 6's stay conf/rl.yaml's
            paper["gamma"],
            paper["normalize_advantages"],
            paper["valid_reduction"],
            module.settings.imitation_batch,
        )
    torch.manual_seed(0)
    module.train()
    module.setup("fit")
    terms = module.term_gradients(args.rollouts)
    h, settings = module.hparams, module.settings
    print(
        f"{args.checkpoint}: valid_reduction {settings.valid_reduction}, coefficients {asdict(settings.coefficients)}; "
        f"{args.rollouts} rollouts of {h.num_envs} environments x {h.rollout_steps} steps"
    )
    print("| term (weighted) | value | gradient norm | share of the total's norm |\n| --- | ---: | ---: | ---: |")
    total = terms["total"][1] or 1.0
    for name, (value, norm) in terms.items():
        print(f"| {name} | {value:.4g} | {norm:.4g} | {norm / total:.3f} |")
    return 0


# an agent's dataset and models, named in place of where its checkpoint says they are (lq.lit.places finds those
# from any folder; these are for what it cannot find: a checkpoint copied away from its training folder)
PLACE_OPTIONS = {
    "data_dir": ("--data", "DIR", "the dataset the agent was trained on (of the fingerprint its checkpoint records)"),
    "partner_checkpoint": ("--partner", "CKPT", "the environment's partner the agent was trained with"),
    "dm_checkpoint": ("--dm", "CKPT", "the environment's Dungeon Master the agent was trained with"),
    "pretrained_checkpoint": ("--pretrained", "CKPT", "the pretrained poly-encoder of a non-scratch agent"),
}


def _worlds(args: argparse.Namespace) -> tuple[str, str, str]:
    """``lq eval --worlds DIR``: the dataset and its environment's partner and DM (where ``make partner dm DATA=DIR``
    leaves them at the tiny profile, unless ``--worlds-partner`` / ``--worlds-dm`` name them)."""
    from lq.stages.run import Resolver

    where = Resolver(data_dir=str(args.worlds))
    partner = args.worlds_partner or where.checkpoint("partner")
    dm = args.worlds_dm or where.checkpoint("dm")
    for flag, path in (("--worlds-partner", partner), ("--worlds-dm", dm)):
        if not Path(path).is_file():
            raise FileNotFoundError(
                f"{path}: no environment model for {args.worlds}; train it (make partner dm DATA={args.worlds}) or "
                f"name one with {flag}"
            )
    return str(args.worlds), str(partner), str(dm)


def _add_places(parser: argparse.ArgumentParser) -> None:
    for dest, (flag, metavar, what) in PLACE_OPTIONS.items():
        parser.add_argument(flag, dest=dest, metavar=metavar, help=f"{what}, where its checkpoint's is not found")


def _places(args: argparse.Namespace) -> dict[str, str]:
    """The overrides of :data:`PLACE_OPTIONS` given (:func:`lq.lit.checkpoints.load_agent`'s keywords)."""
    return {dest: str(value) for dest in PLACE_OPTIONS if (value := getattr(args, dest, None)) is not None}


def _cmd_export(args: argparse.Namespace) -> int:
    from lq.lit.checkpoints import export_agent

    table = export_agent(
        args.checkpoint,
        args.out,
        args.baselines,
        evaluate=not args.no_eval,
        overwrite=args.overwrite,
        quests=args.quests,
        **_places(args),
    )
    which = f"the first {args.quests} test quests" if args.quests else "the test quests"
    if table:
        print(f"\nZero-shot evaluation of the bundle on {which}\n{table}")
    print(f"wrote {args.out} (model card: {args.out / 'README.md'})")
    if args.log_model:
        from lq.lit.mlflow_model import log_agent_model

        print(f"logged model: {log_agent_model(args.out, args.log_model, args.tracking_uri)}")
    return 0


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
    if args.encoder and args.stage not in ENV_STAGES:
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
    from lq.stages import ENV_STAGES

    _check_stage_choices(args)
    setup = _setup(
        args, args.stage, profile=args.profile, protocol=args.protocol, objective=args.objective, jobs=args.jobs
    )
    encoder = args.encoder or (setup.env_encoder if args.stage in ENV_STAGES else "general_light")
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
        log_model=args.log_model, objective=args.objective or "lq", outputs=args.outputs or "",
    )  # fmt: skip
    if args.action == "graph":
        for name in names:
            experiment = X.EXPERIMENTS[name](*([args.encoders] if args.encoders else []), objective=setup.objective)
            print("\n".join(X.running.experiment_graph(experiment, setup)))
        return 0
    if args.action in ("run", "plan"):
        if args.parent and len(names) != 1:
            raise UsageError(f"experiment {args.action} --parent: name the one experiment the parent run belongs to")
        for name in names:
            experiment = X.EXPERIMENTS[name](*([args.encoders] if args.encoders else []), objective=setup.objective)
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
            X.write_local(tables, args.out)
        if args.action == "plan":
            return 0
    else:
        from mlflow.tracking import MlflowClient

        client = MlflowClient(setup.tracking_uri)
        for name in names:
            identity = {"profile": args.profile, "protocol": args.protocol, "objective": args.objective}
            parent = args.parent or X.latest_parent(setup.tracking_uri, name, **identity)
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
            X.write_local(X.build_tables(experiment, parent, setup.tracking_uri), args.out)
            if run.info.status == "RUNNING":  # a planned parent: its children ran elsewhere, the tables finish it
                playing = [r for r in X.children(client, parent, finished=False) if r.info.status == "RUNNING"]
                if playing:  # unless its driver is still at work: a look at a running campaign leaves it running
                    print(f"{name}: parent run {parent} left running ({len(playing)} of its children still run)")
                else:
                    client.set_terminated(parent, "FINISHED")
    print(f"tables in {args.out}/ and on the parent runs; browse them with: make ui (http://127.0.0.1:5000)")
    return 0


def _experiment_job(args: argparse.Namespace, names: list[str]) -> int:
    """``lq experiment spaces``, ``calibrate`` and ``baselines``: the preparation jobs, each a :class:`Run` named by
    the options ``lq experiment plan`` prints (profile, protocol, objective, data, outputs, encoder, ability, switch,
    seed; ``--args``: its agent module's extra arguments)."""
    from lq import experiments as X

    if len(args.seeds) != 1 or len(args.encoders or [""]) != 1:
        raise UsageError(f"experiment {args.action}: one --seeds N and at most one --encoders ENCODER")
    if args.action == "spaces" and not args.encoders:
        raise UsageError("experiment spaces: --encoders ENCODER, the pretrained encoder whose vectors to compute")
    setup = _setup(
        args, "*", profile=args.profile or "tiny", protocol=args.protocol or "paper", objective=args.objective or "lq",
        outputs=args.outputs or "",
    )  # fmt: skip
    encoder = (args.encoders or [""])[0]
    run = X.running.prep(args.action, setup, encoder, ability=args.ability, switch=args.switch, seed=args.seeds[0])
    if args.action != "baselines":
        X.running.run_preparation(run)
        return 0
    if len(names) != 1 or not args.parent:
        raise UsageError("experiment baselines: name one experiment and --parent RUN_ID")
    experiment = X.EXPERIMENTS[names[0]](objective=setup.objective)
    keys = [c.key for c in experiment.configs if c.stage == "baselines"]
    if (key := X.Config("baselines", "", args.ability, args.switch).key) not in keys:
        raise UsageError(f"--ability {args.ability} --switch {args.switch}: {names[0]}'s baselines: {', '.join(keys)}")
    from mlflow.tracking import MlflowClient

    child = X.run_baselines(
        MlflowClient(args.tracking_uri), names[0], run, args.parent, validation=experiment.validation_baselines
    )
    print(f"baselines child run {child} ({key}) of parent {args.parent}")
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


def _count(text: str) -> int:
    """``--quests N``: a positive whole number (argparse names the option when this refuses)."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a positive number of quests, e.g. --quests 5")
    return int(text)


def _eval_parser(sub) -> None:
    """``lq eval``: trained agents evaluated zero-shot side by side."""
    ev = sub.add_parser("eval", help="zero-shot evaluation of trained agents, side by side (mean and std over seeds)")
    ev.add_argument(
        "checkpoints", type=Path, nargs="+", help="BC or RL agent checkpoints or bundles (lq export; one per seed)"
    )
    ev.add_argument(
        "--baselines",
        "--random",
        type=int,
        default=0,
        metavar="N",
        help="add the baselines over N seeds (random among valid candidates and whole spaces, word overlap) and the "
        "ceiling",
    )
    ev.add_argument("--greedy-only", action="store_true", help="skip the sampled (temperature 1) evaluation")
    ev.add_argument(
        "--temperature",
        type=float,
        default=1.0,
        help="sample at this temperature (default 1: the agent's own distribution, as the protocols sample; another "
        "says how much sharper the agent could be, a diagnostic, never a table's row)",
    )
    ev.add_argument(
        "--protocol",
        help="evaluate under this protocol (paper, restricted) instead of the one each agent trained under",
    )
    ev.add_argument("--split", default="test", choices=["train", "valid", "test"])
    ev.add_argument(
        "--seed", type=int, default=0, help="the evaluation's seed (environment and sampling), whatever seed trained "
        "each agent (default 0: what its own run evaluated and logged)",
    )  # fmt: skip
    ev.add_argument("--max-steps", type=int, help="agent turns per episode (default: the checkpoint's protocol's)")
    ev.add_argument("--quests", type=_count, metavar="N", help="play only the first N quests of the split")
    ev.add_argument(
        "--worlds",
        type=Path,
        metavar="DIR",
        help="play another dataset's quests instead, against its spaces, with its own partner and DM (e.g. quests "
        "generated from the LIGHT DB: lq data generate DIR --light-db ../shared/data/light_env): worlds the agents "
        "never saw",
    )
    ev.add_argument("--worlds-partner", type=Path, metavar="CKPT", help="--worlds' partner (default: its tiny one)")
    ev.add_argument("--worlds-dm", type=Path, metavar="CKPT", help="--worlds' Dungeon Master (default: its tiny one)")
    ev.add_argument(
        "--demonstrations",
        action="store_true",
        help="play nothing: each agent's teacher-forced cloning loss and accuracies on the training demonstrations and "
        "on --split's (--quests: the first N of each), to see how much of what it imitates is memorised",
    )
    ev.add_argument(
        "--out", type=Path, help="also write the table here (.md; a .csv beside it, but for --demonstrations)"
    )
    _add_places(ev)
    ev.set_defaults(func=_cmd_eval)


def _gradients_parser(sub) -> None:
    """``lq gradients``: where an RL agent's update goes."""
    gr = sub.add_parser(
        "gradients", help="where an RL agent's update goes: each term's gradient norm and its share of the total's"
    )
    gr.add_argument("checkpoint", type=Path, help="an RL agent checkpoint (lq rl's agent.ckpt or last.ckpt)")
    gr.add_argument("--rollouts", type=int, default=4, help="rollouts of the training environment to average over")
    gr.add_argument(
        "--paper-objective",
        action="store_true",
        help="the paper objective's loss (conf/objective/paper.yaml: its coefficients, valid terms summed over "
        "candidates and steps, raw advantages) at these weights and sizes, not the run's own",
    )
    gr.set_defaults(func=_cmd_gradients)


def _export_parser(sub) -> None:
    """``lq export``: a trained agent as a bundle."""
    ex = sub.add_parser(
        "export", help="a trained agent as a self-contained bundle (weights, data, partner, DM, model card)"
    )
    ex.add_argument("checkpoint", type=Path, help="a BC or RL agent checkpoint")
    ex.add_argument("out", type=Path, help="the bundle folder to write (lq eval / lq play --agent / lq.load_agent)")
    ex.add_argument("--baselines", type=int, default=1, metavar="N", help="baseline seeds in the model card's table")
    ex.add_argument("--no-eval", action="store_true", help="write the bundle without evaluating it for its card")
    ex.add_argument("--quests", type=_count, metavar="N", help="evaluate on the first N test quests (default: all)")
    ex.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    ex.add_argument("--log-model", metavar="RUN_ID", help="also log the bundle as an MLflow logged model of this run")
    ex.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="the MLflow store of --log-model's run")
    _add_places(ex)
    ex.set_defaults(func=_cmd_export)


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
        "code); tables: the newest parent run of this objective (default: of any)",
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
        "instead of the newest; export: this parent run's record alone, finished or not (to resume elsewhere)",
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


def _data_parser(sub) -> None:
    """``lq data``: download, generate and inspect datasets."""
    data = sub.add_parser("data", help="download, generate and inspect datasets")
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="SUBCOMMAND")

    dl = data_sub.add_parser("download", help="fetch the public LIGHT-Quests and ATOMIC releases")
    dl.add_argument(
        "dest", nargs="?", type=Path, default=Path("data/release"), help="destination folder (default: data/release)"
    )
    dl.add_argument(
        "--only",
        nargs="+",
        metavar="NAME",
        help="only these resources: quest_stems, rl_quests_resources, wild_completions, atomic",
    )
    dl.add_argument("--timeout", type=float, default=30.0, help="seconds to wait on the network")
    dl.add_argument("--mirror", metavar="URL", help="fetch every file as URL/<file name> (same checksums)")
    dl.set_defaults(func=_cmd_data_download)

    st = data_sub.add_parser("stats", help="counts and averages of a dataset beside the paper's")
    st.add_argument("path", type=Path, help="dataset folder, quest folder, or demonstrations file/folder")
    st.set_defaults(func=_cmd_data_stats)

    ln = data_sub.add_parser(
        "link", help="write a dataset (e.g. the LIGHT release) in lq's layout, each demonstration naming its quest"
    )
    ln.add_argument("src", type=Path, help="a LIGHT data root (quests/stems/batch_1, ...) or an lq dataset")
    ln.add_argument("out", type=Path, help="output folder: quests/, demos/, link-report.json (appears when complete)")
    ln.add_argument(
        "--demos",
        choices=("auto", "raw", "processed"),
        default="auto",
        help="which demonstrations of the release: the raw game logs (perfect2.json; auto prefers them) or the "
        "processed file",
    )
    ln.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    ln.set_defaults(func=_cmd_data_link)

    gen = data_sub.add_parser("generate", help="write the embedded default dataset (quests, demos, episodes, ...)")
    gen.add_argument("out", type=Path, help="output folder (appears only when complete)")
    gen.add_argument(
        "--light-db",
        type=Path,
        metavar="DIR",
        help="build from this LIGHT environment DB (rooms/characters/objects.json) instead of lq's own",
    )
    gen.add_argument(
        "--scale",
        choices=["tiny", "default", "paper"],
        default="default",
        help="tiny (tests), default (minutes on a laptop) or paper (the paper's counts)",
    )
    gen.add_argument("--seed", type=int, default=0, help="random seed; the same seed gives the same dataset")
    gen.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    gen.add_argument(
        "--atomic-fill",
        choices=["vocab", "mlm"],
        default="vocab",
        help="fill ATOMIC-LIGHT masks with random LIGHT nouns (fast) or a masked LM fine-tuned on "
        "LIGHT text (the paper's way; minutes on a CPU)",
    )
    gen.add_argument("--mlm-steps", type=int, default=300, help="fine-tuning steps for --atomic-fill mlm")
    gen.set_defaults(func=_cmd_data_generate)

    po = data_sub.add_parser(
        "pool", help="a training pool: N more generated training quests with demonstrations, beside a dataset"
    )
    po.add_argument("data", type=Path, help="the dataset (one lq data generate wrote, e.g. data/default)")
    po.add_argument("count", type=_count, help="how many quests (each winnable within the dataset's spaces)")
    po.add_argument("--out", type=Path, help="output folder (default: DATA-pool-COUNT beside it)")
    po.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    po.set_defaults(func=_cmd_data_pool)

    al = data_sub.add_parser("atomic-light", help="build ATOMIC-LIGHT from ATOMIC v4 CSV files")
    al.add_argument("atomic", type=Path, nargs="+", help="v4_atomic_{trn,dev,tst}.csv (or the aggregated file)")
    al.add_argument("out", type=Path, help="output folder: train/valid/test.jsonl")
    al.add_argument("--light-db", type=Path, metavar="DIR", help="LIGHT environment DB (default: lq's own)")
    al.add_argument(
        "--fill",
        choices=["vocab", "mlm"],
        default="mlm",
        help="masked LM fine-tuned on LIGHT text (the paper's way) or random LIGHT nouns",
    )
    al.add_argument("--mlm-steps", type=int, default=300, help="fine-tuning steps for --fill mlm")
    al.add_argument("--seed", type=int, default=0)
    al.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    al.set_defaults(func=_cmd_data_atomic_light)

    af = data_sub.add_parser("affordances", help="check affordance inference against labelled world graphs")
    af.add_argument("worlds", type=Path, help="folder of LIGHT world graphs (e.g. ../shared/data/light_worlds)")
    af.set_defaults(func=_cmd_data_affordances)


def _play_parser(sub) -> None:
    """``lq play``: a person plays a world, a quest, or beside a trained agent."""
    pl = sub.add_parser(
        "play", help="play a LIGHT world or quest in the terminal, alone or against a trained agent (--agent)"
    )
    pl.add_argument(
        "world",
        type=Path,
        nargs="?",
        help="what to play: a quest id (test_00006: of --data, or with --agent of the agent's data), a quest stem JSON "
        "or a LIGHT world graph JSON (default: the first test quest)",
    )
    pl.add_argument(
        "--agent",
        type=Path,
        metavar="CKPT_OR_BUNDLE",
        help="play against this trained agent (lq export bundle or checkpoint)",
    )
    pl.add_argument(
        "--as",
        dest="character",
        metavar="CHARACTER",
        help="whom to play: a character of the world (default: the quest's, or the first); with --agent, partner "
        "(default: the agent pursues its motivation) or self (the environment's partner answers you)",
    )
    pl.add_argument("--data", type=Path, default=Path("data/default"), help="where the default quest comes from")
    pl.add_argument(
        "--transcript",
        type=Path,
        help="save the game's transcript here (.txt; with --agent also .html; default: outputs/play/QUEST-TIME)",
    )
    pl.add_argument("--goal", help='an act goal to check, e.g. "get golden dragon egg"')
    pl.add_argument("--partner", metavar="CHARACTER", help="the partner, for partner act completion")
    pl.set_defaults(func=_cmd_play)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lq", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("partner", help="train the partner agent's poly-encoder (LightningCLI)", add_help=False)
    sub.add_parser("dm", help="train the Dungeon Master's poly-encoder (LightningCLI)", add_help=False)
    sub.add_parser("bc", help="behaviour cloning of the switch agent on demonstrations (LightningCLI)", add_help=False)
    sub.add_parser("rl", help="train the switch A2C agent in QuestEnv (LightningCLI)", add_help=False)
    _eval_parser(sub)
    _gradients_parser(sub)
    _export_parser(sub)
    _experiment_parser(sub)
    _stage_parser(sub)
    sub.add_parser(
        "pretrain",
        help="multi-task poly-encoder pretraining (LightningCLI: lq pretrain fit --config ...)",
        add_help=False,
    )
    _data_parser(sub)
    _play_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; a user's mistake (bad file, unknown name, no network) prints one line, not a traceback.

    Training stages (``lq pretrain fit --config ...``) hand the rest of the command line to LightningCLI
    (``fit`` through :func:`lq.lit.cli.fit_stage`).
    """
    from lq.data.download import DownloadError
    from lq.data.errors import DataFormatError
    from lq.world.goals import GoalError
    from lq.world.state import UnknownCharacter

    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in STAGES:
        from lq.lit.cli import fit_stage, stage_main

        try:
            if argv[1:2] == ["fit"]:  # train, then the stage's own work after fitting (lq.lit.cli.fit_stage)
                fit_stage(argv[0], argv[2:])
            else:  # LightningCLI's other commands (validate, test, --help ...)
                stage_main(argv[0], argv[1:])
        except (DataFormatError, FileNotFoundError, ValueError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            print(f"interrupted: the run is marked KILLED; train it again with: {_again(argv, False)}", file=sys.stderr)
            return 130
        return 0
    args = build_parser().parse_args(argv)
    resumable = getattr(args, "func", None) in (_cmd_experiment, _cmd_stage) and getattr(args, "action", "run") == "run"
    try:
        return args.func(args)
    except Stopped as err:  # a line per job (and the end of its log); the last says how to go on
        again = f"go on with: {_again(argv, args.func is _cmd_experiment)}" if resumable else ""
        for i, failure in enumerate(err.failures, 1):
            said = f"error: {failure}"
            if again and i == len(err.failures):
                said += f"\n{again}" if "\n" in said else f"; {again}"
            print(said, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        again = f"; go on with: {_again(argv, args.func is _cmd_experiment)}" if resumable else ""
        print(f"interrupted: the runs stopped are marked KILLED{again}", file=sys.stderr)
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
