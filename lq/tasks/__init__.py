"""Text tasks for pretraining and the supervised tables: (context, label, 100 candidates).

``atomic_light`` (complete the tail; ``atomic``: ATOMIC's own triples, without domain adaptation, for the Tables 4/5
ablation), ``general_dialogue`` (next chit-chat turn), ``light_original``
(next action or utterance in goal-free episodes), ``boa_timeline`` (any one action of a quest's
timeline), ``seq_timeline`` (the next timeline action after the first n), ``quest_dialogue`` (next
utterance of a demonstration). Everything is read from the data formats of :mod:`lq.data`; the
candidates are the label and 99 others in a random position (seeded).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lq.data.atomic import load_atomic_csv
from lq.data.atomic_light import AtomicLightSample, load_atomic_light
from lq.data.chitchat import load_chitchat
from lq.data.context import MOTIVATION_LEVELS, demo_context, partner_context, quest_context, timeline_prefix
from lq.data.dataset import load_dataset
from lq.data.demos import PARTNER, SELF, Demonstration, load_demos
from lq.data.errors import DataFormatError
from lq.data.quests import GOAL_INDEX, Quest
from lq.data.splits import SPLITS, Splits
from lq.tasks.atomic_light import build_atomic

TASKS = ("atomic_light", "general_dialogue", "light_original", "boa_timeline", "seq_timeline", "quest_dialogue")
# Tasks no encoder of the paper trains on, for its ablations: ATOMIC without domain adaptation (Tables 4/5's second
# trend, against atomic_light).
ABLATION_TASKS = ("atomic",)
# Tasks of the environment's models: the partner's next act, and the DM's ranking of the self character's speech.
ENV_TASKS = ("partner_turn", "dm_speech")
NUM_CANDIDATES = 100


@dataclass(frozen=True)
class Example:
    context: str
    label: str
    candidates: tuple[str, ...]
    task: str
    easiest: bool = False  # the timeline's "now" action (the goal), for the Table 4/5 breakdowns

    @property
    def label_index(self) -> int:
        return self.candidates.index(self.label)


def candidates(
    label: str,
    pool: Sequence[str],
    rng: random.Random,
    n: int = NUM_CANDIDATES,
    first: Iterable[str] = (),
    exclude: Iterable[str] = (),
) -> tuple[str, ...]:
    """The label, then ``first`` (hard negatives), then random others from ``pool``; shuffled, no repeats."""
    banned = {label, *exclude}
    chosen = [c for c in dict.fromkeys(first) if c not in banned][: n - 1]
    seen = banned | set(chosen)
    tries = 0
    while len(chosen) < n - 1 and tries < 20 * n:
        c = pool[rng.randrange(len(pool))] if pool else label
        tries += 1
        if c not in seen:
            seen.add(c)
            chosen.append(c)
    out = [*chosen]
    out.insert(rng.randrange(len(out) + 1), label)
    return tuple(out)


def atomic_light_examples(
    samples: Sequence[AtomicLightSample], rng: random.Random, n: int = NUM_CANDIDATES, task: str = "atomic_light"
) -> list[Example]:
    tails = [s.tail for s in samples]
    return [Example(s.context, s.tail, candidates(s.tail, tails, rng, n), task) for s in samples]


def general_dialogue_examples(
    dialogues: Sequence[list[str]], rng: random.Random, n: int = NUM_CANDIDATES
) -> list[Example]:
    turns = [t for d in dialogues for t in d]
    return [
        Example("\n".join(d[:i]), d[i], candidates(d[i], turns, rng, n), "general_dialogue")
        for d in dialogues
        for i in range(1, len(d))
    ]


def _demo_examples(
    demos: Sequence[Demonstration],
    task: str,
    kinds: tuple[str, ...],
    rng: random.Random,
    n: int,
    quests: dict[str, Quest] | None = None,
) -> list[Example]:
    speech = [a.text for d in demos for a in d.acts if a.type == "speech"]
    actions = [a.text for d in demos for a in d.acts if a.type == "action"]
    out = []
    for d in demos:
        quest = quests.get(d.conv_extra.get("quest_id", "")) if quests else None
        for turn, act in enumerate(d.acts):
            if d.speaker(turn) != SELF or act.type not in kinds:
                continue
            context = demo_context(d, turn, quest).serialise()
            if act.type == "action":  # the valid actions at that turn are the natural hard negatives
                cands = candidates(act.text, actions, rng, n, first=act.actions or ())
            else:
                cands = candidates(act.text, speech, rng, n)
            out.append(Example(context, act.text, cands, task))
    return out


def light_original_examples(
    episodes: Sequence[Demonstration], rng: random.Random, n: int = NUM_CANDIDATES
) -> list[Example]:
    return _demo_examples(episodes, "light_original", ("speech", "action"), rng, n)


def quest_dialogue_examples(
    demos: Sequence[Demonstration], rng: random.Random, n: int = NUM_CANDIDATES, quests: dict[str, Quest] | None = None
) -> list[Example]:
    return _demo_examples(demos, "quest_dialogue", ("speech",), rng, n, quests)


def partner_turn_examples(
    demos: Sequence[Demonstration], episodes: Sequence[Demonstration], rng: random.Random, n: int = NUM_CANDIDATES
) -> list[Example]:
    """The partner's next utterance or action, seen from the partner's side, with no motivation of its own."""
    every = [*demos, *episodes]
    speech = [a.text for d in every for a in d.acts if a.type == "speech"]
    actions = [a.text for d in every for a in d.acts if a.type == "action"]
    out = []
    for d in every:
        for turn, act in enumerate(d.acts):
            if d.speaker(turn) != PARTNER or act.type not in ("speech", "action"):
                continue
            context = partner_context(d, turn).serialise()
            pool, first = (actions, act.actions or ()) if act.type == "action" else (speech, ())
            out.append(Example(context, act.text, candidates(act.text, pool, rng, n, first=first), "partner_turn"))
    return out


def dm_speech_examples(
    demos: Sequence[Demonstration],
    episodes: Sequence[Demonstration],
    rng: random.Random,
    n: int = NUM_CANDIDATES,
    quests: dict[str, Quest] | None = None,
) -> list[Example]:
    """The self character's next utterance given the quest and its motivations (episodes: no quest)."""
    return _demo_examples([*demos, *episodes], "dm_speech", ("speech",), rng, n, quests)


def boa_timeline_examples(
    quests: Sequence[Quest], rng: random.Random, n: int = NUM_CANDIDATES, motivations: Sequence[str] = MOTIVATION_LEVELS
) -> list[Example]:
    """One example per timeline action; the quest's other actions are never negatives (all are right)."""
    pool = [a for q in quests for a in q.timeline_actions]
    out = []
    for q in quests:
        context = quest_context(q).serialise(motivations)
        actions = q.timeline_actions
        for i, action in enumerate(actions):
            out.append(
                Example(
                    context,
                    action,
                    candidates(action, pool, rng, n, exclude=actions),
                    "boa_timeline",
                    easiest=i == GOAL_INDEX,
                )
            )
    return out


def seq_timeline_examples(
    quests: Sequence[Quest], rng: random.Random, n: int = NUM_CANDIDATES, motivations: Sequence[str] = MOTIVATION_LEVELS
) -> list[Example]:
    """Given the first k timeline actions, the (k+1)-th; the quest's own actions are the hard negatives."""
    pool = [a for q in quests for a in q.timeline_actions]
    out = []
    for q in quests:
        base = quest_context(q).serialise(motivations)
        actions = q.timeline_actions
        for k in range(1, len(actions)):
            context = f"{base}\n{timeline_prefix(actions[:k])}"
            out.append(
                Example(
                    context,
                    actions[k],
                    candidates(actions[k], pool, rng, n, first=actions),
                    "seq_timeline",
                    easiest=k == GOAL_INDEX,
                )
            )
    return out


def build_task(
    task: str,
    data_dir: str | Path,
    split: str,
    *,
    seed: int = 0,
    n: int = NUM_CANDIDATES,
    motivations: Sequence[str] = MOTIVATION_LEVELS,
    quests: int | None = None,
) -> list[Example]:
    """The examples of one task on one split of a dataset folder (as ``lq data generate`` writes it); ``quests``:
    those of the split's first quests only (a quest task's: its timelines, its demonstrations), as many."""
    known = TASKS + ENV_TASKS + ABLATION_TASKS
    if task not in known:
        raise ValueError(f"unknown task '{task}': choose from {', '.join(known)}")
    if split not in SPLITS:
        raise ValueError(f"unknown split '{split}': choose from {', '.join(SPLITS)}")
    root = Path(data_dir)
    rng = random.Random(f"{seed}/{task}/{split}")

    def split_quests() -> list[Quest]:
        return load_dataset(root).quests[split][:quests]

    def demos() -> list[Demonstration]:
        demos = load_dataset(root).demos[split]
        if quests is None:
            return demos
        kept = {q.quest_id for q in split_quests()}
        return [d for d in demos if d.conv_extra.get("quest_id") in kept]

    def episodes(required: bool) -> list[Demonstration]:
        """LIGHT's original goal-free episodes; the partner's and DM's tasks do without them where a dataset (the
        public release) has none."""
        if not (root / "episodes").exists() and not required:
            return []
        if not (root / "episodes").exists():
            raise DataFormatError(
                root / "episodes",
                f"task '{task}' needs LIGHT's original dialogues, and this dataset has none",
                fix="pretrain on a dataset that has them (`make data` writes episodes/), or use an encoder "
                "whose tasks this dataset has",
            )
        return load_demos(root / "episodes")[split]

    def source(folder: str) -> Path:
        if not (root / folder).exists():
            raise DataFormatError(
                root / folder,
                f"task '{task}' reads {folder}/, and this dataset has none",
                fix="pretrain on a dataset that has it (`make data` writes it; `lq data atomic-light` builds "
                "ATOMIC-LIGHT), or use an encoder whose tasks this dataset has",
            )
        return root / folder

    builders: dict[str, Callable[[], list[Example]]] = {
        "atomic_light": lambda: atomic_light_examples(load_atomic_light(source("atomic_light"))[split], rng, n),
        "atomic": lambda: atomic_light_examples(
            build_atomic([e for p in sorted(source("atomic").glob("*.csv")) for e in load_atomic_csv(p)])[split],
            rng,
            n,
            "atomic",
        ),
        "general_dialogue": lambda: general_dialogue_examples(
            load_chitchat(source("chitchat") / f"{split}.jsonl"), rng, n
        ),
        "light_original": lambda: light_original_examples(episodes(required=True), rng, n),
        "boa_timeline": lambda: boa_timeline_examples(split_quests(), rng, n, motivations),
        "seq_timeline": lambda: seq_timeline_examples(split_quests(), rng, n, motivations),
        "quest_dialogue": lambda: quest_dialogue_examples(demos(), rng, n, load_dataset(root).quests_by_id()),
        "partner_turn": lambda: partner_turn_examples(demos(), episodes(required=False), rng, n),
        "dm_speech": lambda: dm_speech_examples(
            demos(), episodes(required=False), rng, n, load_dataset(root).quests_by_id()
        ),
    }
    return builders[task]()


def build_tasks(
    tasks: Iterable[str],
    data_dir: str | Path,
    *,
    seed: int = 0,
    n: int = NUM_CANDIDATES,
    motivations: Sequence[str] = MOTIVATION_LEVELS,
) -> dict[str, Splits[Example]]:
    return {
        t: Splits(*(build_task(t, data_dir, s, seed=seed, n=n, motivations=motivations) for s in SPLITS)) for t in tasks
    }
