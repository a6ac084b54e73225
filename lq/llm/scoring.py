"""Candidates ranked by a causal language model's likelihood given a prompt: the scores of an LLM head that chooses
among the environment's actions or the Dungeon Master's utterances.

The prompt is encoded once; its keys and values (the model's cache) are shared by every candidate, which are scored
in batches after it, each padded on the right (so that no candidate token attends to another's padding) at the
positions that follow the prompt. A candidate's score is the sum of its tokens' log-probabilities (nats), each token
given the prompt and the candidate's tokens before it; its length-normalised score divides by its token count. The
two give the same log-likelihoods as scoring ``prompt + candidate`` whole, one at a time
(``tests/llm/test_scoring.py``).
"""

from __future__ import annotations

import copy
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


@torch.no_grad()
def score_candidates(
    model: torch.nn.Module, prompt_ids: Sequence[int], candidate_ids: Sequence[Sequence[int]], batch_size: int = 32
) -> CandidateScores:
    """Each candidate's log-likelihood under ``model`` (a Hugging Face causal LM, in eval mode) given the prompt
    (``prompt_ids``: its token ids, at least one) and its token count, in ``batch_size`` candidates a forward pass
    over the prompt's shared cache. Raises ``ValueError`` for an empty prompt or candidate (nothing to condition on,
    nothing to score)."""
    if not prompt_ids:
        raise ValueError("score_candidates: the prompt has no token; give at least one (a chat template's start)")
    if empty := [i for i, c in enumerate(candidate_ids) if not c]:
        raise ValueError(f"score_candidates: candidates {empty[:5]} have no token; each needs at least one to score")
    device = next(model.parameters()).device
    prompt = torch.tensor([list(prompt_ids)], device=device)
    out = model(input_ids=prompt, use_cache=True)
    cache, first = out.cache, out.logits[0, -1].float().log_softmax(-1)  # the first candidate token's
    n_prompt, totals, counts = prompt.shape[1], [], []
    for start in range(0, len(candidate_ids), batch_size):
        chunk = candidate_ids[start : start + batch_size]
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
        log_p = logits[:, :-1].float().log_softmax(-1)  # token j + 1 given the prompt and tokens 0..j
        later = log_p.gather(-1, ids[:, 1:, None]).squeeze(-1)
        per_token = torch.cat([first[ids[:, 0]][:, None], later], dim=1) * mask
        totals.append(per_token.sum(1))
        counts.append(mask.sum(1))
    return CandidateScores(torch.cat(totals).cpu(), torch.cat(counts).cpu())
