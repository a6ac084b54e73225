"""QuestEnv throughput: a batch of environments at paper-scale candidate sets, and where the time goes.

    python benchmarks/env.py [--data data/default] [--batch 32] [--steps 10] [--actions 4710] [--utterances 22672]

The partner and the Dungeon Master are MiniLM-sized poly-encoders (untrained weights cost the same);
the action and utterance spaces are the dataset's demonstration actions and utterances, topped up
from its goal-free episodes to the paper's sizes (4710 and 22672). A random agent plays (half
speech, half valid actions). Prints seconds per step split into engine, partner, DM and tokenisation,
environment steps per second, and the ratio of the bare model forwards (context encoding and
candidate scoring on pre-tokenised inputs, the same work) to the whole step (target >= 0.7).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

import torch

import lq.envs.episode as episode
import lq.envs.quest_env as quest_env
from lq.data import load_demos, load_quests
from lq.envs.dungeon_master import DungeonMaster
from lq.envs.episode import instances_from_data
from lq.envs.partner import PolyEncoderPartner
from lq.envs.quest_env import QuestEnv
from lq.models.encoder import EncoderSpec
from lq.models.poly_encoder import PolyEncoder, TextBatcher
from lq.models.pretrained import load_tokenizer

from timing import TIMES, Yardstick, timed


def spaces(data: Path, n_actions: int, n_utterances: int) -> tuple[list[str], list[str]]:
    demos, episodes = load_demos(data / "demos").all(), load_demos(data / "episodes").all()
    utterances = list(dict.fromkeys(a.text for d in demos + episodes for a in d.acts if a.type == "speech"))
    actions = list(dict.fromkeys(a.text for d in demos + episodes for a in d.acts if a.type == "action"))
    for d in episodes:  # every action an episode lists as valid, to reach the paper's action-space size
        for a in d.acts:
            actions.extend(a.actions or ())
    actions = list(dict.fromkeys(actions))
    return actions[:n_actions], utterances[:n_utterances]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--actions", type=int, default=4710)
    parser.add_argument("--utterances", type=int, default=22672)
    parser.add_argument("--context-length", type=int, default=256)
    args = parser.parse_args(argv)
    if not (args.data / "demos").is_dir():
        print(f"no dataset at {args.data}: run `make data` first (or pass --data)", file=sys.stderr)
        return 1
    stick = Yardstick()  # this machine's speed, measured again at the end (benchmarks/timing.py)
    torch.manual_seed(0)
    actions, utterances = spaces(args.data, args.actions, args.utterances)
    batcher = TextBatcher(load_tokenizer(), args.context_length, 32)
    partner_model = PolyEncoder.from_spec(EncoderSpec()).eval()
    dm_model = PolyEncoder.from_spec(EncoderSpec()).eval()
    start = time.perf_counter()
    partner = PolyEncoderPartner(partner_model, batcher, utterances, actions)
    dm = DungeonMaster(dm_model, batcher, utterances)
    cache_seconds = time.perf_counter() - start
    quests, demos = load_quests(args.data / "quests"), load_demos(args.data / "demos")
    env = QuestEnv(
        instances_from_data(quests.all(), demos.all()), partner, dm, actions, batch_size=args.batch, max_steps=100
    )

    # instrument: engine calls, model calls, tokenisation
    episode.step = timed("engine", episode.step)  # each turn through the engine
    quest_env.valid_actions = timed("engine", quest_env.valid_actions)
    partner.act = timed("partner", partner.act)
    dm.rank = timed("dm", dm.rank)
    batcher.contexts = timed("tokenisation", batcher.contexts)

    rng = random.Random(0)
    obs, infos = env.reset()
    with torch.inference_mode():
        TIMES.clear()
        start = time.perf_counter()
        for _ in range(args.steps):
            commands = [
                ("speech", utterances[rng.randrange(len(utterances))])
                if rng.random() < 0.5 or not info["valid_actions"]
                else ("action", rng.choice(info["valid_actions"]))
                for info in infos
            ]
            obs, rewards, dones, infos = env.step(commands)
        whole = (time.perf_counter() - start) / args.steps
        parts = {k: v / args.steps for k, v in TIMES.items()}

        # the bare model forwards: the same two context encodings and three scorings, pre-tokenised
        partner_ctx = batcher.__class__.contexts(batcher, [env.context(s, "partner") for s in env.slots])
        dm_ctx = batcher.__class__.contexts(batcher, obs)
        start = time.perf_counter()
        for _ in range(args.steps):
            p = partner_model.encode_context(*partner_ctx)
            partner.utterances.score(p).max(dim=1)
            partner.actions.score(p).max(dim=1)
            d = dm_model.encode_context(*dm_ctx)
            dm.utterances.score(d).topk(dm.num_valid, dim=1)
        bare = (time.perf_counter() - start) / args.steps

    tokenisation = parts.get("tokenisation", 0.0)
    print(
        f"batch {args.batch}, {len(actions)} actions, {len(utterances)} utterances, contexts of "
        f"{args.context_length} tokens, {torch.get_num_threads()} threads; candidates cached once in "
        f"{cache_seconds:.1f} s"
    )
    print(f"{'part':<34}{'s / step':>10}{'share':>8}")
    rows = [
        ("engine (actions, valid actions)", parts.get("engine", 0.0)),
        ("partner model (without tokenisation)", parts.get("partner", 0.0) - tokenisation / 2),
        ("DM model (without tokenisation)", parts.get("dm", 0.0) - tokenisation / 2),
        ("tokenisation", tokenisation),
    ]
    rows.append(("context text and bookkeeping", whole - sum(v for _, v in rows)))
    for name, seconds in rows:
        print(f"{name:<34}{seconds:>10.4f}{seconds / whole:>8.1%}")
    print(f"{'whole step':<34}{whole:>10.4f}")
    stick.end()
    print(stick.report())
    rate = args.batch / whole
    print(f"environment steps/s: {rate:.1f} (batch {args.batch}; {stick.per(rate):.3f} per yardstick)")
    print(f"bare model forwards: {bare:.4f} s / step; ratio bare / whole step: {bare / whole:.3f} (target >= 0.7)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
