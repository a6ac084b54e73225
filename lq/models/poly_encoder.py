"""The poly-encoder (Humeau et al. 2020) with separate context and candidate encoding.

``encode_context`` turns a context into ``m`` code vectors (learned codes attending over the
context's token states); ``encode_candidates`` turns each candidate into one vector (its first
token's state); ``score`` lets each candidate attend over a context's codes and takes the dot
product. Candidate vectors do not depend on the context, so a fixed candidate set is encoded once
(:class:`CandidateCache`) and scoring it is one matrix product per batch.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import torch
from torch import nn
from transformers import PreTrainedTokenizerBase

from lq.data.context import HEADER_TAGS, HISTORY_TAGS
from lq.data.io import atomic_open
from lq.data.progress import Progress
from lq.models.encoder import EncoderSpec, build_encoder, token_states


class PolyEncoder(nn.Module):
    def __init__(self, context_encoder: nn.Module, candidate_encoder: nn.Module, n_codes: int = 64):
        super().__init__()
        self.context_encoder = context_encoder
        self.candidate_encoder = candidate_encoder
        hidden = context_encoder.config.hidden_size
        self.codes = nn.Parameter(torch.randn(n_codes, hidden) * hidden**-0.5)

    @classmethod
    def from_spec(
        cls, spec: EncoderSpec, n_codes: int = 64, tokenizer: PreTrainedTokenizerBase | None = None
    ) -> PolyEncoder:
        return cls(build_encoder(spec, tokenizer), build_encoder(spec, tokenizer), n_codes)

    @property
    def hidden_size(self) -> int:
        return self.codes.shape[1]

    def encode_context(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[batch, tokens]`` → ``[batch, codes, hidden]``."""
        states = token_states(self.context_encoder, ids, mask)
        attn = torch.einsum("mh,bth->bmt", self.codes, states)
        attn = attn.masked_fill(~mask.bool().unsqueeze(1), torch.finfo(attn.dtype).min).softmax(dim=-1)
        return torch.einsum("bmt,bth->bmh", attn, states)

    def encode_candidates(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[n, tokens]`` → ``[n, hidden]``."""
        return token_states(self.candidate_encoder, ids, mask)[:, 0]

    @staticmethod
    def score(context: torch.Tensor, candidates: torch.Tensor) -> torch.Tensor:
        """Context codes ``[b, m, h]`` with candidates ``[n, h]`` (shared) or ``[b, n, h]`` → scores ``[b, n]``."""
        # The candidate's attention logits over the codes are also its dot products with them, so
        # score = sum_m softmax_m(c.ctx_m) (c.ctx_m): one [b, n, m] product, never the [b, n, h] pooled vectors.
        if candidates.dim() == 3:
            dots = torch.einsum("bnh,bmh->bnm", candidates, context)
            return (dots.softmax(dim=-1) * dots).sum(-1)
        # shared candidates: one product laid out [n, b, m], so that nothing [b, n, m]-sized is permuted
        b, m, h = context.shape
        dots = (candidates @ context.reshape(b * m, h).T).view(-1, b, m)
        return (dots.softmax(dim=-1) * dots).sum(-1).T


HISTORY_PREFIXES = tuple(f"{tag} " for tag in HISTORY_TAGS)

# What a header keeps first when it must lose lines (lq.data.context's tags): the motivation nearest to the goal (and a
# timeline task's actions) and who is who before what is carried and lies about, the larger aims, the personas and the
# setting. Untagged lines (chit-chat turns) come last; among lines of one rank the latest are kept first.
HEADER_PRIORITY = (
    "_short_motivation",
    "_self_motivation",
    "_timeline_act",
    "_self_name",
    "_partner_name",
    "_self_carrying",
    "_setting_objects",
    "_partner_carrying",
    "_mid_motivation",
    "_long_motivation",
    "_self_persona",
    "_partner_persona",
    "_setting_name",
    "_setting_desc",
)
if sorted(HEADER_PRIORITY) != sorted(HEADER_TAGS):  # a tag renamed or added in lq.data.context must be ranked here
    raise ImportError(f"HEADER_PRIORITY ranks {sorted(HEADER_PRIORITY)}, but contexts have {sorted(HEADER_TAGS)}")


def header_rank(line: str) -> int:
    tag = line.split(" ", 1)[0]
    return HEADER_PRIORITY.index(tag) if tag in HEADER_PRIORITY else len(HEADER_PRIORITY)


def split_history(text: str) -> tuple[str, str]:
    """A serialised context (:mod:`lq.data.context`) as its header (setting, personas, carrying, motivations) and its
    dialogue history (from the first ``_self_say`` / ``_partner_act`` ... line on)."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith(HISTORY_PREFIXES):
            return "\n".join(lines[:i]), "\n".join(lines[i:])
    return text, ""


def keep_header(lines: list[str], tokens: list[list[int]], budget: int) -> list[list[int]]:
    """The header's lines (as tokens) within ``budget``: whole lines in :data:`HEADER_PRIORITY` order while they fit, in
    their original order; a line that does not fit is left out (if none fits, the most wanted one keeps its end)."""
    order = sorted(range(len(lines)), key=lambda i: (header_rank(lines[i]), -i))
    chosen: set[int] = set()
    used = 0
    for i in order:
        if used + len(tokens[i]) <= budget:
            chosen.add(i)
            used += len(tokens[i])
    if not chosen and lines:
        first = tokens[order[0]]
        return [first[len(first) - budget :]] if budget else []
    return [tokens[i] for i in sorted(chosen)]


class TextBatcher:
    """Tokenises texts for the poly-encoder. Candidates keep their start. A context that is too long loses its oldest
    turns first, then whole header lines, least useful first (:data:`HEADER_PRIORITY`: the setting, then the personas,
    then the long and mid motivations): the header keeps up to three quarters of the length, so a long dialogue never
    pushes the short motivation out, and a short context length keeps the words closest to the goal."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase, context_length: int = 256, candidate_length: int = 32):
        self.tokenizer = tokenizer
        self.context_length = context_length
        self.candidate_length = candidate_length
        self._piece_cache: dict[str, list[int]] = {}
        self.max_cached_texts = 200_000

    def _encode(self, texts: Sequence[str], length: int, side: str) -> tuple[torch.Tensor, torch.Tensor]:
        self.tokenizer.truncation_side = side
        out = self.tokenizer(list(texts), padding=True, truncation=True, max_length=length, return_tensors="pt")
        return out["input_ids"], out["attention_mask"]

    def line_tokens(self, lines: Sequence[str]) -> list[list[int]]:
        """The word pieces of each line. Word pieces never cross whitespace, so a text's pieces are its parts' pieces
        one after another: a tagged line ("_self_say hello") is its tag's and its text's, and each part is tokenised
        once and remembered. A quest's header lines come back at every step of its episodes and history lines are
        the fixed spaces' texts under a few tags, so an RL step tokenises almost nothing."""
        parts = [line.split(" ", 1) if line.startswith("_") else [line] for line in lines]
        cache = self._piece_cache
        new = list(dict.fromkeys(p for split in parts for p in split if p not in cache))
        if new:
            if len(cache) + len(new) > self.max_cached_texts:
                cache.clear()
            cache.update(zip(new, self._tokenize(new), strict=True))
        return [[t for p in split for t in cache[p]] for split in parts]

    def _tokenize(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids without special tokens; a fast tokenizer's Rust backend directly (Hugging Face's wrapper
        costs ten times the tokenising), with the truncation and padding that the wrapper left on it taken off (the
        wrapper sets both again at its every call)."""
        backend = getattr(self.tokenizer, "backend_tokenizer", None)
        if backend is None:
            return self.tokenizer(texts, add_special_tokens=False)["input_ids"]
        backend.no_truncation()
        backend.no_padding()
        # one text at a time: a batch call wakes the backend's thread pool, which waits for torch's spinning threads
        return [backend.encode(text, add_special_tokens=False).ids for text in texts]

    def contexts(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """``[batch, tokens]`` ids and attention mask: [CLS], the kept header lines, the latest history, [SEP]."""
        return self.join_lines(self.context_lines(texts))

    def contexts_with_lines(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor, list[list[list[int]]]]:
        """:meth:`contexts` and the :meth:`context_lines` they are made of (what a frozen encoder reads line by
        line)."""
        lines = self.context_lines(texts)
        return (*self.join_lines(lines), lines)

    def join_lines(self, lines: list[list[list[int]]]) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`context_lines` as ids and attention mask (what :meth:`contexts` gives)."""
        cls, sep = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id
        return self._pad([[cls, *(t for line in row for t in line), sep] for row in lines])

    def context_lines(self, texts: Sequence[str]) -> list[list[list[int]]]:
        """What :meth:`contexts` keeps of each text, line by line (the oldest kept history line may be its end only):
        a frozen encoder can encode each line once (:class:`lq.models.agent.StateEncoder`)."""
        parts = [split_history(t) for t in texts]
        header_lines = [h.split("\n") if h else [] for h, _ in parts]
        history_lines = [y.split("\n") if y else [] for _, y in parts]
        line_tokens = self.line_tokens([line for lines in header_lines + history_lines for line in lines])
        budget = self.context_length - 2  # [CLS] ... [SEP]
        out, at, history_at = [], 0, sum(map(len, header_lines))
        for lines, history in zip(header_lines, history_lines, strict=True):
            tokens, at = line_tokens[at : at + len(lines)], at + len(lines)
            turns, history_at = line_tokens[history_at : history_at + len(history)], history_at + len(history)
            history_length = sum(map(len, turns))
            header_length = sum(map(len, tokens))
            header = keep_header(lines, tokens, min(header_length, max(budget - history_length, budget * 3 // 4)))
            room = budget - sum(map(len, header))
            kept: list[list[int]] = []
            for turn in reversed(turns):  # the latest turns while they fit, then the end of the one before
                if room <= 0:
                    break
                kept.append(turn[max(0, len(turn) - room) :])
                room -= len(kept[-1])
            out.append(header + [turn for turn in reversed(kept) if turn])
        return out

    def _pad(self, rows: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(map(len, rows)) if rows else 0
        ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, row in enumerate(rows):
            ids[i, : len(row)] = torch.tensor(row)
            mask[i, : len(row)] = 1
        return ids, mask

    def candidates(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        return self._encode(texts, self.candidate_length, "right")


def weights_digest(model: nn.Module) -> str:
    """A sha256 of a model's weights: every tensor's name, dtype, shape and bytes. Unlike a sum of its values it does
    not depend on the thread count, the float rounding or the process; a checkpoint and a bundle's safetensors of the
    same weights give the same digest."""
    return state_digest(model.state_dict().items())


def state_digest(state: Iterable[tuple[str, torch.Tensor]]) -> str:
    """:func:`weights_digest` of a model's ``state_dict`` items, in their order (a checkpoint keeps that order)."""
    digest = hashlib.sha256()
    for name, tensor in state:
        flat = tensor.detach().reshape(-1).contiguous().cpu()
        digest.update(f"{name} {flat.dtype} {tuple(tensor.shape)}\n".encode())
        digest.update(flat.view(torch.uint8).numpy().tobytes() if flat.numel() else b"")
    return digest.hexdigest()


def candidates_key(weights: str, candidate_length: int, texts: Sequence[str]) -> str:
    """The key of a :class:`CandidateCache` of ``texts`` encoded by the model of :func:`weights_digest` ``weights``
    (computed without encoding them; one digest serves every candidate set of a model)."""
    digest = hashlib.sha256(f"{candidate_length}\n".encode())
    digest.update("\n".join(texts).encode())
    digest.update(weights.encode())
    return digest.hexdigest()


def keyed(store: str | Path, key: str) -> Path:
    """The file of ``store`` for ``key``, one file per key (``x.pt`` becomes ``x-<the key's first 16 hex digits>.pt``):
    stores of other weights, texts or settings sit beside each other."""
    store = Path(store)
    return store.with_name(f"{store.stem}-{key[:16]}{store.suffix}")


def writable(store: str | Path) -> bool:
    """Whether a missing store may be written: not inside an agent bundle (loading a bundle never writes into it;
    what it lacks is computed in memory) nor in a folder this process cannot write."""
    folder = Path(store).parent
    if (folder.parent / "bundle.json").is_file():
        return False
    for parent in (folder, *folder.parents):
        if parent.exists():
            return os.access(parent, os.W_OK)
    return False


def stores_beside(checkpoint: str | Path) -> Path:
    """Where the candidate vectors of a model loaded from ``checkpoint`` are kept between runs (the ``store`` files
    of :class:`CandidateCache`): ``candidates/`` beside it."""
    return Path(checkpoint).parent / "candidates"


class CandidateCache:
    """A fixed candidate set encoded once (for the partner, the Dungeon Master, the action and utterance spaces).

    Re-encode with :meth:`refresh` after the candidate encoder's weights change.
    """

    def __init__(
        self,
        model: PolyEncoder,
        batcher: TextBatcher,
        texts: Sequence[str],
        batch_size: int = 256,
        store: str | Path | None = None,
    ):
        """``store``: a file to keep the embeddings in between runs, one per key (:func:`keyed`: reused while the
        weights, the texts and the candidate length are the same; a frozen model's candidates are encoded once, not at
        every start). The key is of the weights at construction: :meth:`refresh` re-encodes, it does not re-key."""
        self.model, self.batcher, self.batch_size = model, batcher, batch_size
        self.texts = list(texts)
        self.index = {t: i for i, t in enumerate(self.texts)}
        self.embeddings = torch.empty(0)
        self._key: str | None = None
        if store is None:
            self.refresh()
            return
        self.store = keyed(store, self.key())
        if self.store.exists():
            saved = torch.load(self.store, map_location="cpu", weights_only=True)
            if saved.get("key") == self.key():
                self.embeddings = saved["embeddings"].to(model.codes.device)
                return
        self.refresh()
        if writable(self.store):
            with atomic_open(self.store, "wb") as f:
                torch.save({"key": self.key(), "embeddings": self.embeddings.cpu()}, f)

    def key(self) -> str:
        """A fingerprint of the candidate length, the texts and the model's weights (what the store is kept for): a
        hash of bytes, the same in every process whatever its thread count (:func:`weights_digest`)."""
        if self._key is None:
            self._key = candidates_key(weights_digest(self.model), self.batcher.candidate_length, self.texts)
        return self._key

    @torch.no_grad()
    def refresh(self) -> None:
        was_training = self.model.training
        self.model.eval()
        parts = []
        starts = range(0, len(self.texts), self.batch_size)
        # a few thousand candidates take seconds; the paper's 22,672 utterances minutes on a CPU: those say so
        with Progress(len(starts), f"encoding {len(self.texts)} candidates", "batch", len(self.texts) < 4096) as bar:
            for start in starts:
                ids, mask = self.batcher.candidates(self.texts[start : start + self.batch_size])
                device = self.model.codes.device
                parts.append(self.model.encode_candidates(ids.to(device), mask.to(device)))
                bar.update()
        self.embeddings = torch.cat(parts) if parts else torch.empty(0, self.model.hidden_size)
        self.model.train(was_training)

    def score(self, context: torch.Tensor, subset: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
        """Scores ``[batch, n]`` of the cached candidates (or of ``subset`` of them) for context codes."""
        emb = self.embeddings if subset is None else self.embeddings[torch.as_tensor(subset)]
        return PolyEncoder.score(context, emb.to(context.device))


class CandidateMemo:
    """Candidate vectors of one evaluation pass, each distinct text encoded once.

    Evaluation ranks every example's own candidates (100 at the paper's setting) and most of them are the
    same texts again from one example to the next; while the weights do not change (a validation or test
    pass, a table) a text's vector does not either. :meth:`clear` when the weights change.
    """

    def __init__(self, model: PolyEncoder):
        self.model = model
        self.vectors: dict[str, torch.Tensor] = {}
        self.encoded = 0  # texts encoded since the last clear()

    def clear(self) -> None:
        self.vectors.clear()
        self.encoded = 0

    def encode(self, texts: Sequence[str], ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``[len(texts), hidden]``: the vectors of ``texts`` (distinct), tokenised as ``ids``/``mask``; only the rows
        of texts not seen before are encoded."""
        missing = [i for i, t in enumerate(texts) if t not in self.vectors]
        if missing:
            rows = torch.tensor(missing, device=ids.device)
            new = self.model.encode_candidates(ids[rows], mask[rows]).detach()
            self.vectors.update(zip((texts[i] for i in missing), new, strict=True))
            self.encoded += len(missing)
        return torch.stack([self.vectors[t] for t in texts])


def distinct_candidates(lists: Sequence[Sequence[str]]) -> tuple[list[str], torch.Tensor, torch.Tensor]:
    """Each list's candidates as positions among their distinct texts: ``(texts, index [b, n], valid [b, n])``,
    lists shorter than the longest padded with position 0 and marked invalid."""
    texts = list(dict.fromkeys(c for candidates in lists for c in candidates))
    position = {t: i for i, t in enumerate(texts)}
    n = max((len(c) for c in lists), default=0)
    index = torch.tensor([[position[c] for c in candidates] + [0] * (n - len(candidates)) for candidates in lists])
    valid = torch.tensor([[i < len(candidates) for i in range(n)] for candidates in lists])
    return texts, index.view(len(lists), n), valid.view(len(lists), n)
