import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from lq.models.encoder import EncoderSpec, build_encoder
from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher, keyed, weights_digest
from lq.models.pretrained import load_tokenizer, resolve
from tests.samples import tiny_encoder_spec

TINY = tiny_encoder_spec()
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer()


@pytest.fixture
def model(tokenizer):
    torch.manual_seed(0)
    return PolyEncoder.from_spec(TINY, n_codes=4, tokenizer=tokenizer).eval()


def test_shapes_and_shared_candidates_match_per_example(model, tokenizer):
    batcher = TextBatcher(tokenizer, 64, 16)
    ctx = model.encode_context(*batcher.contexts(["You are in the lair.", "A knight is here. Hello!"]))
    assert ctx.shape == (2, 4, 32)
    cands = model.encode_candidates(*batcher.candidates(["get sword", "hug knight", "hello there"]))
    assert cands.shape == (3, 32)
    shared = PolyEncoder.score(ctx, cands)
    per_example = PolyEncoder.score(ctx, cands.unsqueeze(0).expand(2, -1, -1))
    assert shared.shape == (2, 3) and torch.allclose(shared, per_example, atol=1e-5)


def test_padding_does_not_change_the_context_codes(model, tokenizer):
    batcher = TextBatcher(tokenizer, 64, 16)
    alone = model.encode_context(*batcher.contexts(["short context"]))
    padded = model.encode_context(*batcher.contexts(["short context", "a much longer context " * 5]))[:1]
    assert torch.allclose(alone, padded, atol=1e-5)


def test_contexts_keep_their_latest_turns(tokenizer):
    batcher = TextBatcher(tokenizer, 8, 8)
    ids, _ = batcher.contexts(["one two three four five six seven eight nine ten"])
    assert tokenizer.decode(ids[0], skip_special_tokens=True).endswith("ten")
    ids, _ = batcher.candidates(["one two three four five six seven eight nine ten"])
    assert tokenizer.decode(ids[0], skip_special_tokens=True).startswith("one")


def test_long_dialogues_keep_the_motivations_and_the_latest_turns(tokenizer):
    header = "_setting_name cave\n_self_name dragon\n_short_motivation I need the golden egg"
    turns = "\n".join(f"_partner_say line {i}\n_self_act hug knight" for i in range(40))
    batcher = TextBatcher(tokenizer, 48, 8)
    ids, mask = batcher.contexts([f"{header}\n{turns}", header])
    assert ids.shape == (2, 48) and mask[0].sum() == 48
    text = tokenizer.decode(ids[0], skip_special_tokens=True)
    assert "i need the golden egg" in text and text.endswith("line 39 _ self _ act hug knight")
    assert "line 0 " not in text  # the oldest turns went first
    short = tokenizer(header)["input_ids"]
    assert ids[1, : len(short)].tolist() == short and mask[1].sum() == len(short)  # short contexts: as tokenised
    long_header = " ".join(f"w{i}" for i in range(100)) + "\n_short_motivation the egg"
    ids, _ = batcher.contexts([long_header + "\n_partner_say hi"])
    kept = tokenizer.decode(ids[0], skip_special_tokens=True)
    assert kept.endswith("the egg _ partner _ say hi") and "w0 " not in kept  # a long header loses its start


def test_a_short_context_keeps_the_short_motivation_and_drops_the_setting_first(tokenizer):
    header = "\n".join(
        [
            "_setting_name church",
            "_setting_desc Light pours through stained glass windows onto the wooden pews.",
            "_self_name squire",
            "_self_persona I am a squire. I serve my knight and dream of being knighted myself.",
            "_partner_name old king",
            "_self_carrying fine wine, silver cape",
            "_short_motivation The silver cape belongs in the fine crate.",
            "_mid_motivation Then I plan to get the fine crate and put the ornate jar in the fine crate.",
            "_long_motivation I want to become the most honoured knight of the realm.",
        ]
    )
    batcher = TextBatcher(tokenizer, 64, 8)
    ids, _ = batcher.contexts([header + "\n_partner_say Good day to you."])
    text = tokenizer.decode(ids[0], skip_special_tokens=True)
    assert "_ short _ motivation the silver cape belongs in the fine crate." in text
    assert "squire" in text and "old king" in text and "fine wine" in text  # who is who and what it carries
    assert "stained glass" not in text and "dream of being knighted" not in text  # setting and personas went first
    assert text.index("squire") < text.index("silver cape belongs")  # kept lines stay in their order
    assert text.endswith("_ partner _ say good day to you.")


def test_contexts_tokenise_each_line_once_and_as_the_whole_text(tokenizer, monkeypatch):
    text = "\n".join(
        [
            "_self_name Sir Élan, the knight-errant",
            "_short_motivation Get the egg!",
            "_partner_say Hello...",
            "_self_act get egg",
        ]
    )
    batcher = TextBatcher(tokenizer, 64, 8)
    ids, mask = batcher.contexts([text, text.replace("Hello...", "Go away")])
    assert ids[0, : int(mask[0].sum())].tolist() == tokenizer(text)["input_ids"]  # as the whole text tokenises
    calls, tokenize = [], batcher._tokenize
    monkeypatch.setattr(batcher, "_tokenize", lambda texts: calls.append(texts) or tokenize(texts))
    batcher.candidates(["a candidate cut at eight pieces: one two three four five six seven"])  # truncation left on
    longer = text + "\n_partner_say Farewell, and may the road rise to meet you, old friend."
    again, again_mask = batcher.contexts([longer])
    assert calls == [
        ["Farewell, and may the road rise to meet you, old friend."]
    ]  # only the new text (the tag is known)
    assert again[0, : int(again_mask[0].sum())].tolist() == tokenizer(longer)["input_ids"]  # not cut at 8 pieces
    assert batcher.contexts([text])[0].tolist() == ids[:1].tolist()


def test_candidate_cache_scores_like_direct_encoding(model, tokenizer):
    batcher = TextBatcher(tokenizer, 64, 16)
    texts = ["get sword", "hug knight", "hello there", "give egg to dragon"]
    cache = CandidateCache(model, batcher, texts, batch_size=3)
    ctx = model.encode_context(*batcher.contexts(["You see a sword."]))
    direct = PolyEncoder.score(ctx, model.encode_candidates(*batcher.candidates(texts)))
    assert torch.allclose(cache.score(ctx), direct, atol=1e-5)
    assert torch.allclose(cache.score(ctx, [cache.index["hello there"]]), direct[:, 2:3], atol=1e-5)


def test_minilm_loads_offline():
    encoder = build_encoder(EncoderSpec())
    assert encoder.config.hidden_size == 384 and encoder.config.num_hidden_layers == 6
    with pytest.raises(FileNotFoundError, match="never downloads"):
        resolve("sentence-transformers/all-MiniLM-L6-v2")


def test_candidate_store_is_reused_only_for_the_same_weights_and_texts(model, tokenizer, tmp_path):
    batcher = TextBatcher(tokenizer, 32, 8)
    store = tmp_path / "cands.pt"
    first = CandidateCache(model, batcher, ["a sword", "a shield"], store=store)
    assert first.store == keyed(store, first.key()) and first.store.exists() and not store.exists()
    zeros = torch.zeros_like(first.embeddings)
    torch.save({"key": first.key(), "embeddings": zeros}, first.store)
    assert torch.equal(CandidateCache(model, batcher, ["a sword", "a shield"], store=store).embeddings, zeros)
    other = CandidateCache(model, batcher, ["a sword", "an axe"], store=store)
    assert torch.equal(other.embeddings[0], first.embeddings[0])  # other texts: encoded again, in a file of their own
    assert sorted(tmp_path.iterdir()) == sorted([first.store, other.store]) and other.store != first.store
    torch.save({"key": other.key(), "embeddings": zeros}, other.store)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    changed = CandidateCache(model, batcher, ["a sword", "an axe"], store=store)
    assert not torch.equal(changed.embeddings, zeros)  # other weights: encoded again
    assert len(list(tmp_path.iterdir())) == 3


KEY_SCRIPT = """
import sys, torch
torch.set_num_threads(int(sys.argv[1]))
from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher, keyed, weights_digest
from lq.models.pretrained import load_tokenizer
from tests.samples import tiny_encoder_spec
tokenizer = load_tokenizer()
model = PolyEncoder.from_spec(tiny_encoder_spec(), n_codes=4, tokenizer=tokenizer).eval()
try:  # the weights of a checkpoint: the same bytes in both processes
    model.load_state_dict(torch.load(sys.argv[3]))
except FileNotFoundError:
    with torch.no_grad():  # weights summing to about 0, as trained ones can: the sum's rounding follows the threads
        for p in model.parameters():
            p.sub_(p.mean())
    torch.save(model.state_dict(), sys.argv[3])
CandidateCache.refresh_calls = 0
refresh = CandidateCache.refresh
def counted(self):
    CandidateCache.refresh_calls += 1
    refresh(self)
CandidateCache.refresh = counted
texts = [f"a sword number {i}" for i in range(50)]
cache = CandidateCache(model, TextBatcher(tokenizer, 32, 8), texts, store=sys.argv[2])
print(cache.key(), CandidateCache.refresh_calls)
"""


def test_a_store_written_with_one_thread_is_read_by_a_process_with_two(tmp_path):
    """The key is a hash of the weights' bytes: a process of another thread count finds the store and encodes
    nothing (a key of a float sum missed it, and every child of another job count encoded and calibrated again)."""
    store = str(tmp_path / "cands.pt")

    def run(threads: int) -> tuple[str, int]:
        env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
        done = subprocess.run(
            [sys.executable, "-c", KEY_SCRIPT, str(threads), store, str(tmp_path / "weights.pt")],
            env=env,
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        key, calls = done.stdout.split()[-2:]
        return key, int(calls)

    key, calls = run(1)
    assert calls == 1
    written = {p: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name != "weights.pt"}
    assert run(2) == (key, 0)  # read, not encoded
    assert {p: p.stat().st_mtime_ns for p in tmp_path.iterdir() if p.name != "weights.pt"} == written  # nor written


def test_the_weights_digest_is_of_bytes_not_values(model):
    before = weights_digest(model)
    assert weights_digest(model) == before
    with torch.no_grad():
        p = next(model.parameters())
        p.view(-1)[0] = torch.nextafter(p.view(-1)[0], torch.tensor(float("inf")))  # one ulp of one weight
    assert weights_digest(model) != before
