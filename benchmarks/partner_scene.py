"""How often the environment's partner and Dungeon Master name a character or place absent from the scene (issue 63).

    python benchmarks/partner_scene.py --data data/default --partner outputs/partner/small/best.ckpt \\
        --dm outputs/dm/small/best.ckpt [--split test] [--calibration completions] [--context-length N]

Plays each quest of the split once (one episode per demonstration linked to its quest) with the demonstrations' self
turns and the environment's own partner and DM (lq.rl.baseline_policies.REPLAY_WITH_PARTNER: an agent that stays in the
scene), twice: as the environment is by default, and with ``EnvSpec(scene_filter=True)``. For each it prints the share
of the partner's utterances that name a character or a place absent from the scene (lq.envs.scene: the two
characters, the room the partner is in, its name and category), split into characters and places, and the share of
the DM's top-k suggestions (at the agent's speech turns) that do, and of its rankings holding one or more. Beside
them, the same measure of the demonstrations' own partners' lines (what the measure counts in lines written for the
scene) and of the whole utterance space (names anyone or anywhere at all). Then a few of the lines counted.

The checkpoints are copied first (with the encoded candidates and calibrations kept beside them, where there are), so
that nothing is written beside the originals; ``--work`` says where (default: a temporary folder).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import torch

from lq.data.demos import PARTNER
from lq.envs.episode import new_slot, play_turn
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom, replay_demonstrations
from lq.envs.scene import SceneFilter, absent_names, names_of, normal, scene_names
from lq.envs.spec import EnvSpec


class Tally:
    """Lines and how many of them name an absent character, an absent place, either."""

    def __init__(self, characters: set[str]):
        self.characters = characters
        self.lines = self.character = self.place = self.either = 0
        self.examples: list[tuple[str, list[str], list[str]]] = []  # (line, absent names, the scene)

    def add(self, text: str, present: Sequence[str], known) -> list[str]:
        absent = absent_names(text, present, known)
        self.lines += 1
        self.character += any(n in self.characters for n in absent)
        self.place += any(n not in self.characters for n in absent)
        self.either += bool(absent)
        if absent:
            self.examples.append((text, absent, list(present)))
        return absent

    def shares(self) -> tuple[float, float, float]:
        n = max(self.lines, 1)
        return self.either / n, self.character / n, self.place / n


class RecordingPartner:
    """The environment's partner, its utterances measured against the partner's scene as it speaks."""

    def __init__(self, partner, env: QuestEnv, tally: Tally, known):
        self.partner, self.env, self.tally, self.known = partner, env, tally, known
        self.slot_order: list[int] = []  # QuestEnv sets it: which slots are acting

    def act(self, contexts, valid_actions):
        turns = self.partner.act(contexts, valid_actions)
        for i, (kind, text) in zip(self.slot_order, turns, strict=True):
            if kind == "speech":
                self.tally.add(text, scene_names(self.env.slots[i], "partner"), self.known)
        return turns


def record_dm(env: QuestEnv, suggestions: Tally, rankings: Tally, known) -> None:
    """Measure the DM's top-k at each context it ranks (the agent's speech turns): each suggestion, and each ranking
    (one or more suggestions naming an absent character or place)."""
    rank, seen = env.valid_utterances, set()

    def valid_utterances(which):
        out = rank(which)
        for i, ids in zip(which, out, strict=True):
            slot = env.slots[i]
            if (slot.serial, slot.steps) in seen:
                continue
            seen.add((slot.serial, slot.steps))
            present = scene_names(slot, "self")
            top = [env.utterance_space[j] for j in ids[: env.dm.top_k]]
            rankings.add(" | ".join(top), present, known)
            for text in top:
                suggestions.add(text, present, known)
        return out

    env.valid_utterances = valid_utterances


def demonstrations_tally(env: QuestEnv, known, characters: set[str]) -> Tally:
    """The demonstrations' own partners' utterances, each against the partner's scene as it spoke (played through
    the engine as the environment plays them, up to the act goal)."""
    tally = Tally(characters)
    for inst in env.instances:
        slot = new_slot(inst)
        for i, act in enumerate(inst.demo.acts if inst.demo else []):
            who, kind = inst.demo.speaker(i), "action" if act.type == "action" else "speech"
            if who == PARTNER and kind == "speech":
                tally.add(act.text, scene_names(slot, "partner"), known)
            play_turn(slot, who, kind, act.text)
            if slot.act_goal is not None:
                break
    return tally


def copied(checkpoint: Path, into: Path) -> Path:
    """The checkpoint copied into ``into`` with its ``candidates/`` folder (encodings, calibrations), if any."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copy2(checkpoint, into / checkpoint.name)
    if (checkpoint.parent / "candidates").is_dir():
        shutil.copytree(checkpoint.parent / "candidates", into / "candidates", dirs_exist_ok=True)
    return into / checkpoint.name


def trained_length(checkpoint: Path) -> int | None:
    """The context length a partner or DM checkpoint was trained at (``lq_context_length``), where it says."""
    length = torch.load(checkpoint, map_location="cpu", weights_only=True).get("lq_context_length")
    return length if isinstance(length, int) else None


def percent(x: float) -> str:
    return f"{100 * x:5.1f} %"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--partner", type=Path, default=Path("outputs/partner/small/best.ckpt"))
    parser.add_argument("--dm", type=Path, default=Path("outputs/dm/small/best.ckpt"))
    parser.add_argument("--split", default="test")
    parser.add_argument("--calibration", default="completions", help="the partner's (EnvSpec.partner_calibration)")
    parser.add_argument("--context-length", type=int, help="default: the partner checkpoint's, else 256")
    parser.add_argument("--objects", action=argparse.BooleanOptionalAction, default=True, help="as conf/agent.yaml")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--work", type=Path, help="where the checkpoints are copied (default: a temporary folder)")
    args = parser.parse_args(argv)
    for path in (args.partner, args.dm):
        if not path.is_file():
            print(f"no checkpoint {path}: train it (make partner, make dm) or pass --partner, --dm", file=sys.stderr)
            return 1
    torch.set_num_threads(1)
    start = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="partner-scene-"))
    length = args.context_length or trained_length(args.partner) or 256
    spec = EnvSpec(
        str(args.data),
        str(copied(args.partner, work / "partner")),
        str(copied(args.dm, work / "dm")),
        context_length=length,
        partner_calibration=args.calibration,
        objects=args.objects,
        scene_filter=True,
    )
    env = spec.build(args.split, batch_size=args.batch, auto_reset=False)
    scene_filter: SceneFilter = env.partner.scene_filter
    quests = [inst.quest for inst in env.instances]
    from lq.data.dataset import load_dataset

    every_quest = load_dataset(args.data).quests.all()
    known = names_of(every_quest)
    characters = {normal(n.name) for q in every_quest if q.graph for n in q.graph.nodes.values() if n.kind == "agent"}
    pattern = scene_filter.pattern
    print(
        f"{args.split}: {len(env.instances)} episodes ({len({q.quest_id for q in quests})} quests), partner and DM "
        f"from {args.partner} and {args.dm} (context length {length}, calibration {args.calibration}); "
        f"{len(known)} names ({len(characters & set(known))} characters), "
        f"{len(scene_filter.named)} of the {scene_filter.size} utterances name one "
        f"({percent(len(scene_filter.named) / scene_filter.size).strip()}); "
        f"built in {time.perf_counter() - start:.0f} s"
    )
    rows, examples, outcomes = {}, [], {}
    rows["demonstrations' own partners"] = (demonstrations_tally(env, pattern, characters), None, None)
    partner, dm = env.partner, env.dm
    for label, on in (("unfiltered (default)", False), ("scene filter", True)):
        partner.scene_filter = dm.scene_filter = scene_filter if on else None
        said, suggestions, rankings = Tally(characters), Tally(characters), Tally(characters)
        env.partner = RecordingPartner(partner, env, said, pattern)
        if "valid_utterances" in vars(env):
            del env.valid_utterances
        record_dm(env, suggestions, rankings, pattern)
        t0 = time.perf_counter()
        episodes = replay_demonstrations(env, "model")
        env.partner = partner
        rows[f"environment's partner, {label}"] = (said, suggestions, rankings)
        outcomes[label] = (by_whom(episodes, "partner"), time.perf_counter() - t0)
        if not on:
            examples = said.examples
    k = env.dm.top_k
    print()
    print(f"| who | partner lines | naming an absent character or place | a character | a place | "
          f"DM top-{k} suggestions naming one | DM rankings with one |")  # fmt: skip
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for label, (said, suggestions, rankings) in rows.items():
        either, character, place = said.shares()
        dm_cells = (
            [f"{percent(suggestions.shares()[0])} of {suggestions.lines}", f"{percent(rankings.shares()[0])} of "
             f"{rankings.lines}"] if suggestions is not None else ["", ""]
        )  # fmt: skip
        print(f"| {label} | {said.lines} | {percent(either)} | {percent(character)} | {percent(place)} | "
              f"{' | '.join(dm_cells)} |")  # fmt: skip
    for label, (completions, seconds) in outcomes.items():
        print(f"{label}: partner act completions {completions:.3f} of the episodes; played in {seconds:.0f} s")
    for title, counted in (
        ("the environment's partner, unfiltered", examples),
        ("the demonstrations' own partners", rows["demonstrations' own partners"][0].examples),
    ):
        distinct = list({text: (text, absent, present) for text, absent, present in counted}.values())
        print(f"\nlines counted, {title} ({len(distinct)} distinct; the first {args.examples}, the scene in brackets):")
        for text, absent, present in distinct[: args.examples]:
            print(f"  {text!r}: {', '.join(absent)}  [{', '.join(present)}]")
    print(f"\nwall time {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
