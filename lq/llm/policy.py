"""A causal language model as the policy of both heads (issue 111): each turn it reads the agent's context as chat
messages (:mod:`lq.llm.prompt`) and scores the candidates its head chooses among by their log-likelihood as its answer
(:mod:`lq.llm.scoring`: the prompt encoded once, its cache shared by the batched candidates).

It is a policy of :class:`lq.rl.acting.Actor`, as a trained agent and the baselines' rules are: the same switch
decides whether it acts or speaks, the same candidates (the engine's valid actions, the Dungeon Master's M valid
utterances, or the whole spaces, as the protocol says) are offered, in the same environment, so that its zero-shot
rows stand in the same tables. An answer is the candidate's tokens followed by the tokens the chat template closes an
answer with (ChatML's ``<|im_end|>``): a candidate that begins another (``get sword`` and ``get sword from chest``) is
not preferred for stopping early. ``score``: ``sum`` ranks by the answer's log-likelihood (nats), ``mean`` by nats per
token; which one an experiment reports is chosen on the validation quests.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import torch

from lq.llm.model import LanguageModel, ModelError
from lq.llm.prompt import chat_messages, prompt_ids
from lq.llm.scoring import PromptCache, score_candidates

SCORES = ("sum", "mean")  # how a head ranks its candidates: the answer's log-likelihood, or nats per token
_MARK = "\u2063answer\u2063"  # a placeholder answer no context contains (invisible separators around a word)


def answer_end(tokenizer) -> list[int]:
    """The token ids the tokenizer's chat template closes an assistant's answer with (SmolLM2's ``<|im_end|>``), read
    from the template itself; the end-of-sequence token where the template's answer cannot be found; none without
    one."""
    probe = [{"role": "user", "content": "x"}]
    opened = tokenizer.apply_chat_template(probe, add_generation_prompt=True, tokenize=False)
    closed = tokenizer.apply_chat_template([*probe, {"role": "assistant", "content": _MARK}], tokenize=False)
    if closed.startswith(opened) and _MARK in closed:
        tail = closed[len(opened) :].split(_MARK, 1)[1].rstrip()
        if tail:
            return list(tokenizer(tail, add_special_tokens=False)["input_ids"])
    return [tokenizer.eos_token_id] if tokenizer.eos_token_id is not None else []


class LanguageModelPolicy:
    """Both heads' scores from one causal LM (``lm``, :func:`lq.llm.model.load_language_model`), by ``score``
    (:data:`SCORES`), ``batch_size`` candidates a forward pass, at ``threads`` CPU threads (None: torch's setting; the
    caller's setting is restored after each turn, so that the partner and the Dungeon Master beside it keep theirs and
    play as they do beside every agent). The caches of the last ``kept_prompts`` prompts are kept
    (:class:`lq.llm.scoring.PromptCache`: a turn's prompt runs from where it parts from the turn before's; at least
    the environments played at once, so that each finds its own). ``counted`` adds up what it read: turns, prompt
    tokens, candidates and their tokens (with ``prompts.reused``: what the turns ran, for a benchmark to read)."""

    def __init__(self, lm: LanguageModel, score: str = "sum", batch_size: int = 32, threads: int | None = None,
                 kept_prompts: int = 64):  # fmt: skip
        if score not in SCORES:
            raise ValueError(f"--score {score}: choose {' or '.join(SCORES)}")
        self.lm, self.score, self.batch_size, self.threads = lm, score, batch_size, threads
        self.prompts = PromptCache(kept_prompts)
        self.end = answer_end(lm.tokenizer)
        self._answers: dict[str, list[int]] = {}  # a candidate's answer ids, by its text: the spaces are fixed
        self.counted: Counter[str] = Counter()

    @property
    def name(self) -> str:
        return f"{self.lm.source} ({self.score})"

    def answer_ids(self, text: str) -> list[int]:
        """The candidate ``text`` as the model's answer: its tokens, then the template's end of an answer."""
        if (ids := self._answers.get(text)) is None:
            ids = self._answers[text] = [*self.lm.tokenizer(text, add_special_tokens=False)["input_ids"], *self.end]
        return ids

    def _scored(self, prompt: list[int], answers: list[list[int]]):
        before = torch.get_num_threads()
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            return score_candidates(self.lm.model, prompt, answers, self.batch_size, self.prompts)
        finally:
            torch.set_num_threads(before)

    def prompt(self, context: str, head: str) -> list[int]:
        """The prompt's token ids of a turn of ``head`` (``act``, ``speak``) given the agent's ``context``."""
        return prompt_ids(self.lm.tokenizer, chat_messages(context, head))

    def check_fits(self, prompt: list[int], answers: Sequence[list[int]]) -> None:
        """Raise :class:`lq.llm.model.ModelError` where ``prompt`` and its longest answer pass the model's context."""
        longest = max(map(len, answers), default=0)
        if len(prompt) + longest > self.lm.context_length:
            raise ModelError(
                f"--llm {self.lm.source}: a prompt of {len(prompt)} tokens and an answer of {longest} pass the "
                f"model's context length, {self.lm.context_length} tokens (max_position_embeddings); give a model "
                "with a longer context (the prompt is the whole scene and every turn so far)"
            )

    def candidate_scores(self, contexts: Sequence[str], heads: Sequence[str], candidates: Sequence[Sequence[str]]
                         ) -> list[torch.Tensor]:  # fmt: skip
        """For each row, its candidates' scores ``[len(candidates[i])]`` as its head's answer given its context (one
        prompt per row, its cache shared by that row's candidates). Raises :class:`lq.llm.model.ModelError` where a
        prompt and its longest answer pass the model's context length."""
        out = []
        for context, head, texts in zip(contexts, heads, candidates, strict=True):
            prompt = self.prompt(context, head)
            answers = [self.answer_ids(t) for t in texts]
            self.check_fits(prompt, answers)
            scores = self._scored(prompt, answers)
            out.append(scores.total if self.score == "sum" else scores.mean)
            self.counted.update(turns=1, prompt_tokens=len(prompt), candidates=len(answers),
                                candidate_tokens=int(scores.tokens.sum()))  # fmt: skip
        return out
