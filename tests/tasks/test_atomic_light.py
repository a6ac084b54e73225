import re

import pytest
import torch
from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

from lq.cli import main
from lq.conf import read
from lq.data.atomic import RELATIONS, AtomicEvent, write_atomic_csv
from lq.data.atomic_light import load_atomic_light
from lq.data.default_db import load_default_db
from lq.models.mlm_fill import MASK, MaskedLMFiller
from lq.models.pretrained import minilm_dir
from lq.tasks.atomic_light import build_atomic_light, engine_triples, light_characters, light_nouns

DB = load_default_db()


def _event(text, split="trn", **tails):
    relations = {r: ["none"] for r in RELATIONS}
    relations.update(tails)
    return AtomicEvent(text, relations, [], split)


def test_templates_people_and_masks():
    events = [
        _event("PersonX drives PersonY to school", xNeed=["to have a car"], xWant=["to thank PersonY"]),
        _event("PersonX eats ___", "tst", xIntent=["to be full"], xEffect=["none"]),
    ]
    out = build_atomic_light(events, DB, seed=3)
    assert out.counts() == {"train": 2, "valid": 0, "test": 1}
    need, want = sorted(out.train, key=lambda s: s.relation)
    people = set(light_characters(DB))
    x = next(p for p in people if need.context.startswith(f"Before {p} drives"))
    assert need.relation == "xNeed" and need.context.endswith(f"{x} needs") and "car" not in need.tail
    assert want.context.startswith(x[:1].upper() + x[1:]) and "PersonY" not in want.tail
    assert "school" not in need.context and "___" not in out.test[0].context
    # the same ATOMIC event reads the same in every sample built from it
    assert need.context.removeprefix("Before ").split(",")[0].lower() == want.context.split(",")[0].lower()


def test_engine_triples_follow_the_verbs():
    out = engine_triples(DB, per_verb=5)
    needs = [s for s in out.all() if s.relation == "xNeed" and " wields " in s.context]
    assert needs and all(s.tail.startswith("to get the ") for s in needs)


def _tiny_filler(nouns):
    tok = AutoTokenizer.from_pretrained(minilm_dir())
    torch.manual_seed(0)
    model = BertForMaskedLM(
        BertConfig(
            vocab_size=tok.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
        )
    )
    settings = {**read("generate", "mlm_fill.yaml"), "batch_size": 4}
    return MaskedLMFiller.fine_tune(DB, nouns, model=model, tokenizer=tok, steps=3, log=lambda _: None, **settings)


def test_masked_lm_fills_only_light_nouns():
    nouns = light_nouns(DB)
    filler = _tiny_filler(nouns)
    assert set(filler.nouns) <= set(nouns) and len(filler.nouns) > 20
    texts = filler.fill([f"The knight eats the {MASK} by the {MASK}.", "No mask here.", f"A {MASK}"])
    assert texts[1] == "No mask here." and all(MASK not in t for t in texts)
    words = texts[0].removeprefix("The knight eats the ").rstrip(".").split(" by the ")
    assert all(w in filler.nouns for w in words) and texts[2].split()[-1] in filler.nouns
    out = build_atomic_light([_event("PersonX buys ___ at the store", xWant=["to go home"])], DB, filler=filler.fill)
    match = re.search(r"buys the (\w+) at the (\w+), as a result", out.train[0].context)
    assert match and set(match.groups()) <= set(filler.nouns)


def test_cli_builds_from_atomic_csv(tmp_path, capsys):
    write_atomic_csv(
        [
            _event("PersonX hugs PersonY", xIntent=["to comfort PersonY"]),
            _event("PersonX runs", "dev", xEffect=["gets tired"]),
        ],
        tmp_path / "v4_atomic_trn.csv",
    )
    assert (
        main(["data", "atomic-light", str(tmp_path / "v4_atomic_trn.csv"), str(tmp_path / "al"), "--fill", "vocab"])
        == 0
    )
    assert load_atomic_light(tmp_path / "al").counts() == {"train": 1, "valid": 1, "test": 0}
    assert main(["data", "atomic-light", str(tmp_path / "missing.csv"), str(tmp_path / "al2")]) == 1
    assert "file not found" in capsys.readouterr().err and not (tmp_path / "al2").exists()


@pytest.mark.slow
def test_generate_with_the_masked_lm(tmp_path):
    from lq.generate import generate_dataset

    manifest = generate_dataset(tmp_path / "d", scale="tiny", atomic_fill="mlm", mlm_steps=5,
                                mlm_settings=read("generate", "mlm_fill.yaml"), log=lambda _: None)
    assert manifest["atomic_fill"] == "mlm (5 steps)"
    assert load_atomic_light(tmp_path / "d" / "atomic_light").train
