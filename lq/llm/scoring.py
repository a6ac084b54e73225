"""Candidates ranked by a causal language model's likelihood given a prompt: the scores of an LLM head that chooses
among the environment's actions or the Dungeon Master's utterances.

The prompt is encoded once; its keys and values (the model's cache) are shared by every candidate, which are scored
in batches after it (candidates of similar lengths together, so that little is padding), each padded on the right (so
that no candidate token attends to another's padding) at the positions that follow the prompt. A candidate's score is
the sum of its tokens' log-probabilities (nats), each token given the prompt and the candidate's tokens before it; its
length-normalised score divides by its token count. The two give the same log-likelihoods as scoring ``prompt +
candidate`` whole, one at a time (``tests/llm/test_scoring.py``).

A :class:`PromptCache` keeps the caches of recent prompts: an agent's prompt at one turn begins as its prompt at the
turn before (the scene, then every turn so far), so a new prompt is run only from where it parts from the closest
kept one.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class CandidateScores:
    """``total[i]``: the sum of candidate ``i``'s token log-probabilities given the prompt (nats, ``[N]``);
    ``tokens[i]``: its token count (``[N]``)."""

    total: torch.Tensor
    tokens: torch.Tensor

    @property
    def mean(self) -> torch.Tensor:
        """The length-normalised scores, ``[N]``: nats per token."""
        return self.total / self.tokens.to(self.total.dtype)


class PromptCache:
    """The model's caches (keys and values) of the last ``size`` prompts, by their token ids, each with the
    log-probabilities of the token after it. :meth:`encode` runs a prompt only from where it parts from the kept
    prompt it shares the longest start with (that one's cache cropped there); ``reused`` counts the prompt tokens not
    run again."""

    def __init__(self, size: int = 16):
        self.size, self.reused = size, 0
        self._kept: OrderedDict[tuple[int, ...], tuple[object, torch.Tensor]] = OrderedDict()

    @torch.no_grad()
    def encode(self, model: torch.nn.Module, prompt_ids: Sequence[int]) -> tuple[object, torch.Tensor]:
        """The prompt's cache and the log-probabilities ``[vocab]`` of the token after it. The cache is the one kept:
        copy it before a forward over it (a forward appends to the cache it is given)."""
        key = tuple(prompt_ids)
        if key in self._kept:
            self._kept.move_to_end(key)
            self.reused += len(key)
            return self._kept[key]
        shared, start = 0, None
        for kept in self._kept:
            n = _common_start(kept, key)
            if n > shared:
                shared, start = n, kept
        shared = min(shared, len(key) - 1)  # at least the last token is run: its logits are the next token's
        if shared and not getattr(self._kept[start][0], "is_croppable", True):  # a sliding window's: from the start
            shared = 0
        device = next(model.parameters()).device
        rest = torch.tensor([key[shared:]], device=device)
        if shared > 0:
            cache = copy.deepcopy(self._kept[start][0])
            if extra := len(start) - shared:
                cache.crop(-extra)  # transformers 5: the count of tokens to remove from the end
            positions = torch.arange(shared, len(key), device=device)[None]
            out = model(input_ids=rest, cache=cache, position_ids=positions, use_cache=True, logits_to_keep=1)
        else:
            out = model(input_ids=rest, use_cache=True, logits_to_keep=1)  # the last position's logits alone
        self.reused += shared
        next_log_p = out.logits[0, -1].float().log_softmax(-1)
        if self.size:
            self._kept[key] = (out.cache, next_log_p)
            if len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return out.cache, next_log_p


def _common_start(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


@torch.no_grad()
def score_candidates(
    model: torch.nn.Module,
    prompt_ids: Sequence[int],
    candidate_ids: Sequence[Sequence[int]],
    batch_size: int = 32,
    prompts: PromptCache | None = None,
) -> CandidateScores:
    """Each candidate's log-likelihood under ``model`` (a Hugging Face causal LM, in eval mode) given the prompt
    (``prompt_ids``: its token ids, at least one) and its token count, in ``batch_size`` candidates a forward pass
    over the prompt's shared cache (``prompts``: the recent prompts' caches to start it from). Raises ``ValueError``
    for an empty prompt or candidate (nothing to condition on, nothing to score)."""
    if not prompt_ids:
        raise ValueError("score_candidates: the prompt has no token; give at least one (a chat template's start)")
    if empty := [i for i, c in enumerate(candidate_ids) if not c]:
        raise ValueError(f"score_candidates: candidates {empty[:5]} have no token; each needs at least one to score")
    device = next(model.parameters()).device
    cache, first = (prompts or PromptCache(0)).encode(model, prompt_ids)  # first: the first candidate token's
    n_prompt, totals, counts = len(prompt_ids), [], []
    order = sorted(range(len(candidate_ids)), key=lambda i: len(candidate_ids[i]))  # batched by length: little padding
    for start in range(0, len(order), batch_size):
        chunk = [candidate_ids[i] for i in order[start : start + batch_size]]
        b, longest = len(chunk), max(len(c) for c in chunk)
        ids = torch.zeros(b, longest, dtype=torch.long, device=device)
        mask = torch.zeros(b, longest, dtype=torch.long, device=device)
        for i, c in enumerate(chunk):
            ids[i, : len(c)], mask[i, : len(c)] = torch.tensor(list(c), device=device), 1
        shared = copy.deepcopy(cache)  # the forward appends to a cache: each batch its own copy of the prompt's
        shared.batch_repeat_interleave(b)
        attention = torch.cat([torch.ones(b, n_prompt, dtype=torch.long, device=device), mask], dim=1)
        positions = torch.arange(n_prompt, n_prompt + longest, device=device).expand(b, -1)
        logits = model(input_ids=ids, cache=shared, attention_mask=attention, position_ids=positions).logits
        logits = logits[:, :-1].float()  # token j + 1 given the prompt and tokens 0..j
        # its log-probability: its logit less the log of the normaliser (no second [b, n, vocab] tensor)
        later = logits.gather(-1, ids[:, 1:, None]).squeeze(-1) - logits.logsumexp(-1)
        per_token = torch.cat([first[ids[:, 0]][:, None], later], dim=1) * mask
        totals.append(per_token.sum(1))
        counts.append(mask.sum(1))
    back = torch.tensor(order).argsort()  # each candidate's place in the sorted order
    return CandidateScores(torch.cat(totals).cpu()[back], torch.cat(counts).cpu()[back])
