"""``lq data generate``: the embedded default dataset, in exactly the real LIGHT formats.

Writes, into one folder that appears only when complete::

    quests/{train,valid,test}/<quest_id>.json   LIGHT-Quests stems
    demos/{train,valid,test}.json               demonstrations (wild-completions format)
    episodes/{train,valid,test}.json            goal-free LIGHT-style episodes (same format)
    chitchat/{train,valid,test}.jsonl           general chit-chat, {"dialogue": [...]} per line
    atomic/seed.csv                             the ATOMIC-format seed it was built from
    atomic_light/{train,valid,test}.jsonl       ATOMIC-LIGHT samples (context, tail, relation, event)
    manifest.json                               seed, scale, DB source and counts

Every record is drawn from its own random stream (seed, kind, split, index), so a seed always gives
the same dataset, and the tiny scale is a prefix of nothing but itself.

``lq data pool DATA N`` (:func:`generate_pool`) writes a **training pool** beside a generated dataset: further
training quests with their demonstrations (:mod:`lq.data.pools`), which RL and BC can train on beside the dataset's own
while everything else (the dataset, its spaces, its environment models, the evaluation) stays as it is.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from lq.data.atomic import write_atomic_csv
from lq.data.atomic_light import write_atomic_light
from lq.data.atomic_seed import seed_events
from lq.data.dataset import dataset_id, load_dataset
from lq.data.default_db import load_default_db
from lq.data.demos import Demonstration, demonstration_spaces, write_demos
from lq.data.errors import DataFormatError
from lq.data.io import atomic_dir, atomic_open, write_json
from lq.data.light_db import LightDB, load_light_db
from lq.data.quests import Quest, write_quests
from lq.data.splits import SPLITS, Splits
from lq.generate.chitchat import generate_conversation
from lq.generate.demos import generate_demo, generate_episode
from lq.generate.quests import generate_quest
from lq.generate.worlds import Pools
from lq.tasks.atomic_light import build_atomic_light, engine_triples, light_nouns


@dataclass(frozen=True)
class Scale:
    quests: tuple[int, int, int]
    demos: tuple[int, int, int]
    episodes: tuple[int, int, int]
    chitchat: tuple[int, int, int]
    engine_triples_per_verb: int


SCALES = {
    "tiny": Scale((48, 8, 8), (24, 6, 6), (24, 6, 6), (60, 10, 10), 10),
    "default": Scale((800, 100, 100), (400, 60, 80), (400, 50, 50), (1000, 100, 100), 40),
    # paper 3.1: 5982 / 756 / 748 quests, 1800 / 100 / 211 demonstrations; LIGHT: 8538 / 500 / 1000 episodes
    "paper": Scale((5982, 756, 748), (1800, 100, 211), (8538, 500, 1000), (20000, 1000, 1000), 200),
}


def _stream(seed: int, *key: object) -> random.Random:
    return random.Random(f"{seed}/" + "/".join(map(str, key)))


def _until(count: int, make: Callable[[int], object | None], what: str, per_item: int = 20) -> list:
    """``count`` items from ``make(attempt)``, which may decline (None); gives up loudly, never silently, after
    ``per_item`` attempts an item (and 100 more)."""
    out, attempt = [], 0
    while len(out) < count:
        if attempt > per_item * count + 100:
            raise ValueError(
                f"could not generate {count} {what} ({len(out)} after {attempt} attempts): "
                "the environment DB offers too few usable characters and objects"
            )
        item = make(attempt)
        attempt += 1
        if item is not None:
            out.append(item)
    return out


def _pool(
    pools: Pools, seed: int, count: int, spaces: tuple[list[str], list[str]]
) -> tuple[list[Quest], list[Demonstration]]:
    """``count`` training quests, each with its demonstration: quest i from the stream ("pool-quest", i), its
    demonstration from ("pool-demo", i), its id ``pool_{i:05d}``. A quest is kept only where it can be won within the
    dataset's ``spaces`` (actions, utterances), as the dataset's own quests can: its goal action is one of the actions
    and one of its demonstration's self utterances one of the utterances (the speech goal); the others, and quests the
    demonstrator cannot play, are passed over. A larger pool of one seed holds a smaller one's."""
    quests: list[Quest] = []
    actions, utterances = set(spaces[0]), set(spaces[1])

    def make(i: int) -> Demonstration | None:
        quest = generate_quest(pools, _stream(seed, "pool-quest", i), f"pool_{i:05d}")
        if quest is None or quest.goal not in actions:
            return None
        demo = generate_demo(quest, _stream(seed, "pool-demo", i))
        said = {a.text for a in demo.self_acts("speech")} if demo is not None else set()
        if not said & utterances:
            return None
        quests.append(quest)
        return demo

    # about one attempt in 20 to 25 is kept on the default data (the spaces of its 460 training and validation
    # demonstrations): room for ten times that
    return quests, _until(count, make, "training pool demonstrations (quests that can be won within the spaces)", 250)


def generate_dataset(
    out: str | Path,
    *,
    light_db: str | Path | None = None,
    scale: str = "default",
    seed: int = 0,
    overwrite: bool = False,
    atomic_fill: str = "vocab",
    mlm_steps: int = 300,
    mlm_settings: Mapping[str, object] | None = None,
    log: Callable[[str], None] = print,
) -> dict[str, object]:
    """Write the dataset (see the module doc); returns its manifest.

    ``atomic_fill="mlm"`` fills ATOMIC-LIGHT's masks with a masked LM fine-tuned on the DB's text for
    ``mlm_steps`` steps (as the paper does; minutes on a CPU) with ``mlm_settings`` (conf/generate/mlm_fill.yaml's,
    which the command reads: ``lq.conf.read("generate", "mlm_fill.yaml")``), ``"vocab"`` with random LIGHT nouns.
    """
    if scale not in SCALES:
        raise ValueError(f"unknown scale '{scale}': choose {', '.join(SCALES)}")
    if atomic_fill not in ("vocab", "mlm"):
        raise ValueError(f"unknown atomic_fill '{atomic_fill}': choose vocab or mlm")
    if atomic_fill == "mlm" and mlm_settings is None:
        raise ValueError("atomic_fill='mlm': give mlm_settings, the filler's fine-tuning (conf/generate/mlm_fill.yaml)")
    size = SCALES[scale]
    db: LightDB = load_light_db(light_db) if light_db else load_default_db()
    pools = Pools.from_db(db)
    start = time.perf_counter()
    quests: Splits[Quest] = Splits()
    demos: Splits[Demonstration] = Splits()
    episodes: Splits[Demonstration] = Splits()
    for k, split in enumerate(SPLITS):
        quests[split].extend(
            _until(
                size.quests[k],
                lambda i, s=split: generate_quest(pools, _stream(seed, "quest", s, i), f"{s}_{i:05d}"),
                f"{split} quests",
            )
        )
        pool = list(quests[split])
        _stream(seed, "demo-order", split).shuffle(pool)
        made: list[Demonstration] = []
        for i, q in enumerate(pool):
            if len(made) == size.demos[k]:
                break
            d = generate_demo(q, _stream(seed, "demo", split, i))
            if d is not None:
                made.append(d)
        if len(made) < size.demos[k]:
            raise ValueError(f"only {len(made)} of {size.demos[k]} {split} demonstrations could be played")
        demos[split].extend(made)
        episodes[split].extend(
            generate_episode(pools, _stream(seed, "episode", split, i), f"{split}_{i:05d}")
            for i in range(size.episodes[k])
        )
        log(
            f"  {split}: {len(quests[split])} quests, {len(demos[split])} demonstrations, "
            f"{len(episodes[split])} episodes"
        )
    atomic_events = seed_events()
    filler = None
    if atomic_fill == "mlm":
        from lq.models.mlm_fill import MaskedLMFiller  # torch and transformers only when asked for

        tune = {"steps": mlm_steps, "seed": seed, "log": log, **mlm_settings}
        filler = MaskedLMFiller.fine_tune(db, light_nouns(db), **tune).fill
    atomic_light = build_atomic_light(atomic_events, db, seed=seed, filler=filler)
    derived = engine_triples(db, seed=seed, per_verb=size.engine_triples_per_verb)
    for split in SPLITS:
        atomic_light[split].extend(derived[split])
    manifest = {
        "seed": seed,
        "scale": scale,
        "light_db": str(light_db) if light_db else "lq embedded DB",
        "atomic_fill": atomic_fill if atomic_fill == "vocab" else f"mlm ({mlm_steps} steps)",
        "counts": {
            "quests": quests.counts(),
            "demos": demos.counts(),
            "episodes": episodes.counts(),
            "chitchat": dict(zip(SPLITS, size.chitchat, strict=True)),
            "atomic_light": atomic_light.counts(),
        },
    }
    with atomic_dir(out, overwrite=overwrite) as tmp:
        write_quests(quests, tmp / "quests")
        write_demos(demos, tmp / "demos")
        write_demos(episodes, tmp / "episodes")
        (tmp / "chitchat").mkdir()
        for k, split in enumerate(SPLITS):
            with atomic_open(tmp / "chitchat" / f"{split}.jsonl", "w", encoding="utf-8") as handle:
                for i in range(size.chitchat[k]):
                    conversation = generate_conversation(_stream(seed, "chitchat", split, i))
                    handle.write(json.dumps({"dialogue": conversation}) + "\n")
        write_atomic_csv(atomic_events, tmp / "atomic" / "seed.csv")
        write_atomic_light(atomic_light, tmp / "atomic_light")
        write_json(tmp / "manifest.json", manifest)
    log(f"  generated in {time.perf_counter() - start:.1f} s")
    return manifest


def generate_pool(
    data_dir: str | Path, out: str | Path, count: int, *, overwrite: bool = False, log: Callable[[str], None] = print
) -> dict[str, object]:
    """Write a training pool of ``count`` generated quests with their demonstrations for the dataset at ``data_dir``
    (one ``lq data generate`` wrote: its DB and seed), into ``out`` (quests/train/, demos/train.json, manifest.json
    naming the dataset's fingerprint; it appears only when complete): drawn as :func:`_pool` says, from the dataset's
    environment DB, winnable within the spaces of its training and validation demonstrations (never chosen by its
    test quests: the agents' spaces hold the test demonstrations' texts too, and a pool drawn toward them would be
    drawn toward the test). Returns the manifest."""
    manifest_path = Path(data_dir) / "manifest.json"
    if not manifest_path.is_file():
        raise DataFormatError(
            manifest_path,
            "a training pool is drawn as its dataset was generated, and this folder has no generation manifest",
            fix="give a folder `lq data generate` wrote (make data writes data/default)",
        )
    made = json.loads(manifest_path.read_text(encoding="utf-8"))
    if count < 1:
        raise ValueError(f"a training pool of {count} quests: give at least 1")
    light_db = made.get("light_db")
    db = load_light_db(light_db) if light_db and light_db != "lq embedded DB" else load_default_db()
    dataset = load_dataset(data_dir)
    start = time.perf_counter()
    spaces = demonstration_spaces(dataset.demos.train + dataset.demos.valid)
    quests, demos = _pool(Pools.from_db(db), made["seed"], count, spaces)
    manifest = {
        "pool_of": dataset_id(data_dir),
        "data_dir": str(data_dir),
        "seed": made["seed"],
        "counts": {"quests": len(quests), "demos": len(demos)},
    }
    with atomic_dir(out, overwrite=overwrite) as tmp:
        write_quests(Splits(train=quests), tmp / "quests")
        write_demos(Splits(train=demos), tmp / "demos")
        write_json(tmp / "manifest.json", manifest)
    log(f"  a training pool of {len(demos)} quests for {data_dir} in {time.perf_counter() - start:.1f} s")
    return manifest
