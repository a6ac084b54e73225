"""ATOMIC-LIGHT (paper 3.2, 7.4): ATOMIC's xIntent / xEffect / xWant / xNeed triples told of LIGHT characters.

Each triple becomes a sentence from a template ("Before the merchant puts the merchant's trust in
the guard, the merchant needs to ..."); PersonX and PersonY become LIGHT characters, and blanks
(``___``) and everyday nouns that have no place in LIGHT are masked and filled with LIGHT nouns.
The task is to complete the tail among candidates, so a sample is (context, tail).

Filling: as in the paper, a masked language model fine-tuned on LIGHT text chooses the LIGHT noun
for each mask (:class:`lq.models.mlm_fill.MaskedLMFiller`, pass ``filler=``); without one, nouns
are drawn at random from LIGHT's noun vocabulary (seeded), which is what the fast default uses.

Beside ATOMIC proper, :func:`engine_triples` derives triples from the engine's verb semantics:
what a character needs before an action (its preconditions), what follows from it (its effects)
and what it then wants (the actions it makes possible).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable

from lq.data.affordances import infer
from lq.data.atomic import LIGHT_RELATIONS, AtomicEvent
from lq.data.atomic_light import AtomicLightSample
from lq.data.light_db import LightDB
from lq.data.names import looks_singular, strip_article
from lq.data.splits import SPLITS, Splits

TEMPLATES = {
    "xIntent": ("{event}, because {x} wanted", "{event}, because {x} wanted {tail}"),
    "xNeed": ("Before {event}, {x} needs", "Before {event}, {x} needs {tail}"),
    "xWant": ("{event}, as a result {x} wants", "{event}, as a result {x} wants {tail}"),
    "xEffect": ("{event}, as a result {x}", "{event}, as a result {x} {tail}"),
}
SPLIT_OF = {"trn": "train", "dev": "valid", "tst": "test"}
# Everyday nouns with no place in a fantasy world: masked and refilled with LIGHT nouns.
MODERN = {
    "car",
    "cars",
    "phone",
    "computer",
    "office",
    "school",
    "job",
    "email",
    "internet",
    "tv",
    "television",
    "movie",
    "movies",
    "bus",
    "train",
    "airport",
    "store",
    "mall",
    "money",
    "dollars",
    "game",
    "games",
    "restaurant",
    "class",
    "homework",
    "boss",
    "doctor",
    "police",
    "test",
    "exam",
    "bank",
    "party",
    "work",
    "apartment",
    "car's",
    "laptop",
    "video",
    "radio",
    "coffee",
    "pizza",
    "hospital",
    "college",
}


def light_characters(db: LightDB) -> list[str]:
    """Singular person names from the DB, as "the merchant"."""
    return sorted(
        {
            f"the {strip_article(c.name).lower()}"
            for c in db.characters
            if c.char_type == "person" and looks_singular(c.name, max_words=3)
        }
    )


def light_nouns(db: LightDB) -> list[str]:
    """Single-word base forms of DB objects: LIGHT's noun vocabulary for filling masks."""
    nouns = {b.lower() for o in db.objects for b in o.base_form if b.isalpha() and len(b) > 2}
    return sorted(nouns)


def _person(text: str, x: str, y: str) -> str:
    text = re.sub(r"\bPersonX's\b", f"{x}'s", text)
    text = re.sub(r"\bPersonY's\b", f"{y}'s", text)
    text = re.sub(r"\b(PersonX|Person X)\b", x, text)
    text = re.sub(r"\b(PersonY|Person Y)\b", y, text)
    return re.sub(r"(?<![\w'])([XY])(?![\w'])", lambda m: x if m.group(1) == "X" else y, text)


def mask(text: str) -> str:
    """Blanks (``___``) and nouns with no place in LIGHT become ``[MASK]``."""
    text = re.sub(r"_{2,}", "the [MASK]", text)
    return " ".join("[MASK]" if w.lower().strip(".,!?") in MODERN else w for w in text.split(" "))


def build_atomic_light(
    events: Iterable[AtomicEvent], db: LightDB, *, seed: int = 0, filler: Callable[[list[str]], list[str]] | None = None
) -> Splits[AtomicLightSample]:
    """ATOMIC events → ATOMIC-LIGHT samples, split as ATOMIC splits them (trn / dev / tst).

    ``filler`` fills the ``[MASK]`` slots of a list of texts (e.g. ``MaskedLMFiller(...).fill``);
    without it each slot gets a random LIGHT noun.
    """
    rng = random.Random(seed)
    people, nouns = light_characters(db), light_nouns(db)
    if len(people) < 2 or not nouns:
        raise ValueError("the environment DB needs at least two singular person characters and some object nouns")
    events_masked: list[tuple[str, str]] = []  # (masked event text, X) per ATOMIC event
    rows: list[tuple[int, str, str, str, str]] = []  # event index, split, relation, masked tail, ATOMIC event
    for ev in events:
        x, y = rng.sample(people, 2)
        events_masked.append((mask(_person(ev.event, x, y)), x))
        for relation in LIGHT_RELATIONS:
            for tail in ev.relations.get(relation, []):
                if tail.strip().lower() not in ("none", ""):
                    rows.append(
                        (
                            len(events_masked) - 1,
                            SPLIT_OF[ev.split],
                            relation,
                            mask(_person(tail.strip(), x, y)),
                            ev.event,
                        )
                    )
    texts = [e for e, _ in events_masked] + [r[3] for r in rows]
    if filler is not None:
        texts = filler(texts)
    else:
        texts = [re.sub(r"\[MASK\]", lambda _: rng.choice(nouns), t) for t in texts]
    filled_events, tails = texts[: len(events_masked)], texts[len(events_masked) :]
    out: Splits[AtomicLightSample] = Splits()
    for (e, split, relation, _, atomic_event), tail in zip(rows, tails, strict=True):
        out[split].append(_sample(filled_events[e], events_masked[e][1], relation, tail, atomic_event))
    return out


def build_atomic(events: Iterable[AtomicEvent]) -> Splits[AtomicLightSample]:
    """ATOMIC without domain adaptation, what ATOMIC-LIGHT is measured against (the paper's second trend of Tables 4
    and 5): the same templates told of PersonX and PersonY, every noun as ATOMIC has it, no engine triples."""
    out: Splits[AtomicLightSample] = Splits()
    for ev in events:
        for relation in LIGHT_RELATIONS:
            for tail in ev.relations.get(relation, []):
                if tail.strip().lower() not in ("none", ""):
                    out[SPLIT_OF[ev.split]].append(_sample(ev.event, "PersonX", relation, tail.strip(), ev.event))
    return out


def _sample(event: str, x: str, relation: str, tail: str, atomic_event: str) -> AtomicLightSample:
    """One triple as a template sentence to complete (the event capitalised first, lower-cased after "Before" unless
    ATOMIC's PersonX begins it)."""
    first = event[:1].lower() if relation == "xNeed" and not event.startswith("PersonX") else event[:1].upper()
    shown = first + event[1:]
    return AtomicLightSample(TEMPLATES[relation][0].format(event=shown, x=x), tail, relation, atomic_event)


VERB_TRIPLES = {
    # verb: (what X needs before, what follows, what X may want next)
    "get": ("to find the {o}", "carries the {o}", ["to {use} the {o}", "to keep the {o} safe"]),
    "wear": ("to get the {o}", "wears the {o}", ["to show off the {o}"]),
    "wield": ("to get the {o}", "wields the {o}", ["to fight with the {o}"]),
    "eat": ("to get the {o}", "is no longer hungry", ["to rest"]),
    "drink": ("to get the {o}", "is no longer thirsty", ["to rest"]),
    "give": ("to get the {o}", "no longer has the {o}", ["to be thanked"]),
    "put": ("to get the {o}", "no longer carries the {o}", ["to remember where the {o} is"]),
}


def engine_triples(db: LightDB, *, seed: int = 0, per_verb: int = 40) -> Splits[AtomicLightSample]:
    """Triples from the engine's verb semantics: preconditions (xNeed), effects (xEffect), next wants (xWant)."""
    rng = random.Random(seed)
    people = light_characters(db)
    out: Splits[AtomicLightSample] = Splits()
    by_affordance: dict[str, list[str]] = {v: [] for v in VERB_TRIPLES}
    for o in db.objects:
        a = infer(o.name, o.base_form)
        name = o.name.lower()
        if not a.gettable:
            continue
        by_affordance["get"].append(name)
        by_affordance["give"].append(name)
        by_affordance["put"].append(name)
        for verb, ok in (("wear", a.wearable), ("wield", a.wieldable), ("eat", a.food), ("drink", a.drink)):
            if ok:
                by_affordance[verb].append(name)
    wieldable = set(by_affordance["wield"])
    for verb, (need, effect, wants) in VERB_TRIPLES.items():
        objects = by_affordance[verb]
        for i, o in enumerate(rng.sample(objects, min(per_verb, len(objects)))):
            x, y = rng.sample(people, 2)
            verb_s = {
                "get": "gets",
                "wear": "wears",
                "wield": "wields",
                "eat": "eats",
                "drink": "drinks",
                "give": "gives",
                "put": "puts",
            }[verb]
            what = f"the {o} to {y}" if verb == "give" else f"the {o} away" if verb == "put" else f"the {o}"
            event = f"{x} {verb_s} {what}"
            use = "wield" if o in wieldable else "use"
            split = SPLITS[0] if i % 10 < 8 else SPLITS[1] if i % 10 == 8 else SPLITS[2]
            rows = [("xNeed", need), ("xEffect", effect), ("xWant", rng.choice(wants))]
            for relation, tail in rows:
                context, _ = TEMPLATES[relation]
                shown = event if relation == "xNeed" else event[:1].upper() + event[1:]
                out[split].append(
                    AtomicLightSample(
                        context=context.format(event=shown, x=x),
                        tail=tail.format(o=o, use=use),
                        relation=relation,
                        event=event,
                    )
                )
    return out
