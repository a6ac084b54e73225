"""``lq data``: download, generate, pool, link and inspect datasets; ATOMIC-LIGHT and the affordance table. Plain
argparse: nothing heavy is imported until a command runs."""

from __future__ import annotations

import argparse
from pathlib import Path

from lq.commands import UsageError, positive_count
from lq.conf import read


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
    from lq.data.errors import DataFormatError
    from lq.data.stats import dataset_stats, format_stats, link_reports, space_stats

    try:  # before anything is printed
        held = space_stats(args.path, args.spaces) if args.spaces else None
    except DataFormatError as err:
        if err.path != str(args.path):
            raise  # the spaces' dataset
        raise DataFormatError(
            args.path, f"{err.problem}: --spaces counts the demonstrations of a dataset", fix="pass a dataset folder"
            " (quests/ and demos/, e.g. a training pool), or leave --spaces out"
        ) from None
    print(format_stats(dataset_stats(args.path)))
    if held is not None:
        print(f"\nIn the action and utterance spaces of {args.spaces} (what a speech and an act goal can be won with):")
        print(format_stats(held))
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
        mlm_settings=read("generate", "mlm_fill.yaml") if args.atomic_fill == "mlm" else None,
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

        tune = {"steps": args.mlm_steps, "seed": args.seed, **read("generate", "mlm_fill.yaml")}
        filler = MaskedLMFiller.fine_tune(db, light_nouns(db), **tune).fill
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


def add_parsers(sub) -> None:
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
    st.add_argument(
        "--spaces",
        type=Path,
        metavar="DATA",
        help="also count how many of PATH's demonstrations' self utterances and goal actions lie in the spaces of the "
        "dataset DATA (e.g. a training pool against its dataset: a pool quest's speech goal has only those to be won "
        "with)",
    )
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
    po.add_argument("count", type=positive_count, help="how many quests (each winnable within the dataset's spaces)")
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
