"""What is done with trained agents: ``lq play`` (a quest, by hand or against an agent), ``lq eval`` (zero-shot, side
by side with the baselines; ``--worlds``: another dataset's quests), ``lq gradients`` (where an update goes) and
``lq export`` (a bundle with its model card)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lq.commands import UsageError, positive_count


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
        if args.data is not None:
            raise UsageError(f"--data {args.data}: with --agent the quests are the agent's data's; leave --data out")
        quest = _quest_id(args.world) if args.world is not None else None
        try:  # the transcript is named by the quest played (QUEST-TIME), known once the agent's data is read
            play_against(load_agent(args.agent), quest, side, lambda played: _transcript(args, played))
        except KeyboardInterrupt:  # a game stopped by Ctrl-C saves its transcript: this one stopped while loading
            print("interrupted before the game began: nothing to save", file=sys.stderr)
            return 130
        return 0
    from lq.world.play import main as play_main

    data = args.data if args.data is not None else Path("data/default")
    world = quest_file(args.world, data) if args.world is not None else default_quest(data)
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
    from dataclasses import asdict, replace

    import torch

    from lq.lit.checkpoints import load_agent
    from lq.rl.losses import LossCoefficients

    module = load_agent(args.checkpoint)
    if module.stage != "rl":
        raise UsageError(f"{args.checkpoint}: a {module.stage.upper()} agent has no RL objective; name an RL agent's")
    if args.paper_objective:  # conf/objective/paper.yaml's loss (coefficients, gamma, reduction, raw advantages)
        from lq.conf import read

        paper = read("objective", "paper.yaml")["model"]
        module.settings = replace(
            module.settings,
            coefficients=LossCoefficients(**{**asdict(module.settings.coefficients), **paper["coefficients"]}),
            gamma=paper["gamma"],
            normalize_advantages=paper["normalize_advantages"],
            valid_reduction=paper["valid_reduction"],
        )  # Table 6's coefficients stay conf/rl.yaml's
    torch.manual_seed(0)
    module.train()
    module.setup("fit")
    terms = module.a2c.term_gradients([p for p in module.parameters() if p.requires_grad], args.rollouts)
    h, settings = module.hparams, module.a2c.settings
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
    ev.add_argument("--quests", type=positive_count, metavar="N", help="play only the first N quests of the split")
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
    ex.add_argument(
        "--quests", type=positive_count, metavar="N", help="evaluate on the first N test quests (default: all)"
    )
    ex.add_argument("--overwrite", action="store_true", help="replace OUT if it exists")
    ex.add_argument("--log-model", metavar="RUN_ID", help="also log the bundle as an MLflow logged model of this run")
    ex.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="the MLflow store of --log-model's run")
    _add_places(ex)
    ex.set_defaults(func=_cmd_export)


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
    pl.add_argument(
        "--data",
        type=Path,
        default=None,
        help="where the default quest comes from (default data/default; with --agent, the agent's own data)",
    )
    pl.add_argument(
        "--transcript",
        type=Path,
        help="save the game's transcript here (.txt; with --agent also .html; default: outputs/play/QUEST-TIME)",
    )
    pl.add_argument("--goal", help='an act goal to check, e.g. "get golden dragon egg"')
    pl.add_argument("--partner", metavar="CHARACTER", help="the partner, for partner act completion")
    pl.set_defaults(func=_cmd_play)


def add_parsers(sub) -> None:
    _eval_parser(sub)
    _gradients_parser(sub)
    _export_parser(sub)
    _play_parser(sub)
