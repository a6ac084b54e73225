"""A TF-IDF nearest-neighbour baseline for next-utterance retrieval among 100 candidates.

It trains nothing: it ranks candidates by the cosine of their TF-IDF vectors with the dialogue
context. If it scores near Hits@1 = 1, the dialogue is a lookup of names, not a task.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter

from lq.data.demos import SELF, Demonstration

_TOKEN = re.compile(r"[a-z']+")


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class TfIdf:
    def __init__(self, documents: list[str]):
        df: Counter[str] = Counter()
        for doc in documents:
            df.update(set(tokens(doc)))
        n = len(documents)
        self.idf = {w: math.log((1 + n) / (1 + c)) + 1.0 for w, c in df.items()}

    def vector(self, text: str) -> dict[str, float]:
        tf = Counter(tokens(text))
        vec = {w: c * self.idf.get(w, 1.0) for w, c in tf.items()}
        norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
        return {w: v / norm for w, v in vec.items()}

    @staticmethod
    def cosine(a: dict[str, float], b: dict[str, float]) -> float:
        if len(a) > len(b):
            a, b = b, a
        return sum(v * b.get(w, 0.0) for w, v in a.items())


def next_utterance_hits_at_1(demos: list[Demonstration], *, candidates: int = 100, seed: int = 0) -> float:
    """Hits@1 of TF-IDF retrieval of each self utterance given everything before it (setting, personas,
    motivation, dialogue), among the gold and ``candidates - 1`` utterances drawn from the other demos."""
    rng = random.Random(seed)
    pool = [(i, a.text) for i, d in enumerate(demos) for a in d.acts if a.type == "speech"]
    model = TfIdf([text for _, text in pool])
    hits = total = 0
    for i, d in enumerate(demos):
        history = [d.room_description, d.self_character.persona, d.partner.persona, d.self_character.motivation]
        for turn, act in enumerate(d.acts):
            if d.speaker(turn) == SELF and act.type == "speech":
                negatives: list[str] = []
                while len(negatives) < candidates - 1:
                    j, text = pool[rng.randrange(len(pool))]
                    if j != i:
                        negatives.append(text)
                context = model.vector(" ".join(history))
                gold = model.cosine(context, model.vector(act.text))
                hits += all(model.cosine(context, model.vector(n)) < gold for n in negatives)
                total += 1
            history.append(act.text)
    return hits / max(total, 1)
