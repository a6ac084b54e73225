"""The switch agent's networks (paper 4.2, Figure 4, Table 6).

* Encoder: a pretrained poly-encoder's context encoder, frozen, with three trainable transformer
  layers appended (Table 6: 3 layers, 3 heads, feed-forward 768); or, for *scratch*, a 3-layer
  transformer trained with the policies. Its output is the last layer's token states (the paper:
  "the hidden states at the final layer ... are used as input by all following components").
* Candidates: the action space and the utterance space, embedded once. With a pretrained encoder
  they are the frozen candidate vectors of the poly-encoder, projected by a trainable layer; from
  scratch, the mean of their word pieces' embeddings, shared with the scratch encoder's input
  embeddings (as DRRN shares them between observations and actions), projected by a trainable layer.
* Action and dialogue policies: a GRU over the episode's states (the mean of the token states) and an
  n-layer feed-forward network give a query vector; a :class:`CandidateScorer` lets each candidate
  attend over the context's token states (or over ``codes`` learned summaries of them, poly-encoder
  style, for large spaces) and adds the query's dot product; an utterance also scores the context's words it shares,
  each weighted by what the agent learned a word is worth (:class:`MatchCounts`; both exact-match features are lq's
  addition to the paper's agent, docs/deviations.md). A candidate is matched against
  the words of the motivation and the history, not against one pooled vector: with a pooled state, an act-only
  probe went from 0.525 to 0.562 act goals in 9,600 transitions; with candidate attention, from 0.450
  to 0.688.
* Critic: a 2-layer feed-forward network on the state, shared by both policies.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from lq.models.encoder import EncoderSpec, Vocabulary, build_encoder, lookup, token_states
from lq.models.poly_encoder import CandidateCache, PolyEncoder, TextBatcher
from lq.world.text import FUNCTION_WORDS


@dataclass
class AgentConfig:
    """Table 6 sizes (policy and critic widths 768); ``scratch`` sizes the 3-layer scratch encoder."""

    appended_layers: int = 3
    appended_heads: int = 3
    appended_feedforward: int = 768
    appended_dropout: float = 0.1
    # the appended layers' width: None, the pretrained encoder's (the paper's: they read its states as they are); a
    # width projects its states down first (the tiny profile's 128, its other widths': MiniLM's 384 cost the RL loop
    # four times the scratch encoder's work per token)
    appended_width: int | None = None
    gru_hidden: int = 768
    policy_layers: int = 3
    policy_hidden: int = 768
    critic_layers: int = 2
    critic_hidden: int = 768
    action_codes: int = 0  # 0: each action attends over every context token
    speech_codes: int = 16  # utterances attend over 16 learned summaries of the tokens (the space is large)
    exact_match: bool = True  # actions attend to the context tokens that are their own words (CandidateScorer)
    speech_match: bool = True  # utterances score the context's weighted words they share (MatchCounts)
    # a learned temperature per head (the action and dialogue policies' logits divided by exp(t), t from 0): where the
    # valid terms spread each head's mass over its ~15-20 targets, a lower temperature can sharpen its choice
    head_temperature: bool = False
    scratch: EncoderSpec = field(
        default_factory=lambda: EncoderSpec(
            init="scratch", hidden_size=384, num_layers=3, num_heads=6, intermediate_size=1536
        )
    )


def mlp(sizes: Sequence[int]) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


Lines = list[list[list[int]]]  # per context, its kept lines as word-piece ids (TextBatcher.context_lines)


class StateEncoder(nn.Module):
    """The agent's encoder: token states ``[b, tokens, hidden]`` of its contexts.

    A scratch base is trained with the agent; ``vocabulary`` (:class:`lq.models.encoder.Vocabulary`) gives its
    embedding rows (None: the tokenizer's ids are its rows).

    A frozen pretrained base reads each line of a context on its own ([CLS] line [SEP], its states without the two
    marks; every row's [CLS] and [SEP] get those of an empty line) and the three trainable appended layers read the
    lines together. A quest's header lines come back at every step of its episodes and the history's lines come from
    fixed spaces, so the frozen states of a line are computed once and kept: up to ``max_cached_tokens`` tokens, the
    least recently read lines let go first (lines read again and again, as a quest's header lines and the
    demonstrations', stay), and all of them when the weights are loaded or moved. Lines the cache lacks (new ones,
    and a context's oldest line cut where the word-piece budget falls) run through the base. Without ``lines`` a
    context is one line."""

    def __init__(
        self,
        base: nn.Module,
        trainable_base: bool,
        config: AgentConfig,
        vocabulary: Vocabulary | None = None,
        max_cached_tokens: int = 200_000,
    ):
        super().__init__()
        self.base = base
        self.vocabulary = vocabulary
        for p in self.base.parameters():
            p.requires_grad = trainable_base
        hidden = base.config.hidden_size
        self.appended, self.project = None, None
        if not trainable_base:  # frozen pretrained: three trainable layers on top (a projection first, if narrower)
            width = config.appended_width or hidden
            if width != hidden:
                self.project = nn.Linear(hidden, width)
            layer = nn.TransformerEncoderLayer(
                width, config.appended_heads, config.appended_feedforward, config.appended_dropout, batch_first=True
            )
            self.appended = nn.TransformerEncoder(layer, config.appended_layers, enable_nested_tensor=False)
            hidden = width
        self.hidden_size = hidden
        self.max_cached_tokens = max_cached_tokens
        self._line_states: OrderedDict[tuple[int, ...], torch.Tensor] = OrderedDict()  # least recently read first
        self._cached_tokens = 0
        self.register_load_state_dict_post_hook(lambda module, keys: module.forget_lines())
        self.train()

    def train(self, mode: bool = True) -> StateEncoder:
        """A frozen base stays in eval mode (no dropout: its features are fixed, as the paper freezes them)."""
        super().train(mode)
        if self.appended is not None:
            self.base.eval()
        return self

    def _apply(self, fn, recurse=True):
        self.forget_lines()
        return super()._apply(fn, recurse)

    def forget_lines(self) -> None:
        self._line_states.clear()
        self._cached_tokens = 0

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, lines: Lines | None = None) -> torch.Tensor:
        """The final layer's token states ``[b, tokens, hidden]``; ``lines``: what each row holds between its [CLS]
        and [SEP], line by line (a frozen base encodes line by line)."""
        if self.appended is not None:
            with torch.no_grad():
                states = self.frozen_states(ids, mask, lines)
            if self.project is not None:
                states = self.project(states)
            return self.appended(states, src_key_padding_mask=~mask.bool())
        return token_states(self.base, self.rows(ids), mask)

    def rows(self, ids: torch.Tensor) -> torch.Tensor:
        """Tokenizer ids as the base's embedding rows."""
        return self.vocabulary(ids) if self.vocabulary is not None else ids

    def frozen_states(self, ids: torch.Tensor, mask: torch.Tensor, lines: Lines | None) -> torch.Tensor:
        lengths = mask.sum(1).tolist()
        if lines is None:
            lines = [[ids[i, 1 : n - 1].tolist()] for i, n in enumerate(lengths)]
        cls, sep = int(ids[0, 0]), int(ids[0, lengths[0] - 1])
        keys = [[tuple(line) for line in row if line] for row in lines]
        wanted = list(dict.fromkeys(k for row in keys for k in [(), *row]))
        missing = [k for k in wanted if k not in self._line_states]
        for start in range(0, len(missing), 256):
            chunk = missing[start : start + 256]
            width = max(map(len, chunk)) + 2
            batch = torch.zeros(len(chunk), width, dtype=torch.long, device=ids.device)
            batch_mask = torch.zeros_like(batch)
            for i, key in enumerate(chunk):
                batch[i, : len(key) + 2] = torch.tensor([cls, *key, sep])
                batch_mask[i, : len(key) + 2] = 1
            states = token_states(self.base, batch, batch_mask)
            for i, key in enumerate(chunk):  # the empty line keeps its [CLS] and [SEP]: the row's own two marks
                self._line_states[key] = states[i, :2] if not key else states[i, 1 : len(key) + 1]
                self._cached_tokens += len(self._line_states[key])  # its rows of states
        marks = self._line_states[()]
        out = torch.zeros(*ids.shape, marks.shape[-1], device=ids.device, dtype=marks.dtype)
        for i, row in enumerate(keys):
            out[i, : lengths[i]] = torch.cat([marks[:1], *(self._line_states[k] for k in row), marks[1:]])
        for key in wanted:  # read now: the last to let go
            self._line_states.move_to_end(key)
        while self._cached_tokens > self.max_cached_tokens and len(self._line_states) > len(wanted):
            _, dropped = self._line_states.popitem(last=False)
            self._cached_tokens -= len(dropped)
        return out


def mean_state(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    m = mask.unsqueeze(-1).to(states.dtype)
    return (states * m).sum(1) / m.sum(1).clamp(min=1.0)


class CandidateScorer(nn.Module):
    """Scores ``[b, n]`` of candidates ``[n, d]`` against a context's token states ``[b, t, h]`` and a query ``[b, d]``.

    Each candidate attends over the tokens (keys and values projected to ``d``) and scores what it gathers, plus its
    dot product with the query: score = sum_t a_nt (c_n.v_t + g(s_t)) + c_n.q, where g(s_t) says how much a token is
    worth matching (the motivation's words more than the setting's). The ``[b, n, d]`` gathered values are never
    formed, only ``[b, n, t]`` attention and dot products. With ``codes`` > 0 the tokens are first summarised by that
    many learned codes (as a poly-encoder's), so a large candidate space costs ``codes`` rather than ``t`` per
    candidate.

    ``match`` (``[n, b, t]``, 1 where context token t is one of candidate n's content word pieces) adds an exact-match
    feature to the attention logits, a_nt = softmax_t(c_n.k_t / sqrt(d) + w m_nt), as DrQA's exact-match feature: a
    candidate finds its own words in the context even when they are words training never saw (an unseen quest's
    objects), which learned embeddings alone cannot do zero-shot."""

    def __init__(self, hidden: int, dim: int, codes: int = 0):
        super().__init__()
        self.keys = nn.Linear(hidden, dim)
        self.values = nn.Linear(hidden, dim)
        self.worth = nn.Linear(hidden, 1)
        self.match_weight = nn.Parameter(torch.tensor(2.0))
        self.codes = nn.Parameter(torch.randn(codes, hidden) * hidden**-0.5) if codes else None
        self.scale = dim**-0.5

    def forward(
        self,
        states: torch.Tensor,
        mask: torch.Tensor,
        query: torch.Tensor,
        candidates: torch.Tensor,
        match: torch.Tensor | None = None,
    ) -> torch.Tensor:
        pad = ~mask.bool()
        if self.codes is not None:
            attn = torch.einsum("mh,bth->bmt", self.codes, states).masked_fill(pad.unsqueeze(1), NEG_INF)
            states = torch.einsum("bmt,bth->bmh", attn.softmax(-1), states)
            pad, match = None, None  # codes are not tokens
        b, t, _ = states.shape
        # candidates against keys and values in one product, laid out [n, b, 2, t]: the softmax runs over the
        # contiguous last axis and nothing [b, n, t]-sized is ever permuted
        kv = torch.cat([self.keys(states), self.values(states)], dim=1).reshape(b * 2 * t, -1)
        dots = (candidates @ kv.T).view(-1, b, 2, t)
        logits, values = dots.unbind(2)  # (slicing would fill whole zero gradients in the backward)
        attn = logits * self.scale
        if match is not None:
            attn = attn + self.match_weight * match.to(attn.dtype)
        if pad is not None:
            attn = attn.masked_fill(pad, NEG_INF)
        worth = self.worth(states).squeeze(-1)  # [b, t]
        gathered = (attn.softmax(-1) * (values + worth)).sum(-1)  # [n, b]
        return gathered.T + query @ candidates.T


def content_piece_ids(texts: Sequence[str], tokenizer) -> torch.Tensor:
    """``[n, l]`` the distinct word-piece ids of each text's content words (-1 pads; no function words, no
    punctuation), for the exact-match features."""
    special = set(tokenizer.all_special_ids)
    rows = []
    for ids in tokenizer(list(texts), add_special_tokens=False)["input_ids"]:
        pieces = tokenizer.convert_ids_to_tokens(ids)
        kept = [
            t
            for t, piece in zip(ids, pieces, strict=True)
            if t not in special and piece not in FUNCTION_WORDS and any(ch.isalnum() for ch in piece)  # no punctuation
        ]
        rows.append(list(dict.fromkeys(kept)))
    out = torch.full((len(rows), max([1, *map(len, rows)])), -1, dtype=torch.long)
    for i, row in enumerate(rows):
        out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
    return out


def piece_rows(candidate_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The word pieces some candidate contains (``[p]``, sorted) and a table from tokenizer id to 1 + its place
    among them (0 for every other id): the columns of the exact-match features."""
    pieces = candidate_ids[candidate_ids >= 0].unique()
    row_of = torch.zeros(int(pieces.max()) + 1 if len(pieces) else 1, dtype=torch.long)
    row_of[pieces] = torch.arange(1, len(pieces) + 1)
    return pieces, row_of


class ExactMatch(nn.Module):
    """The exact-match feature ``[n, b, t]`` of a fixed candidate set: 1.0 where context token ``ids[b, t]`` is one of
    candidate n's content word pieces (:func:`content_piece_ids`, ``[n, l]``, -1 pads).

    A lookup rather than a comparison: each word piece that some candidate contains has a column of ``incidence``
    (``[n, pieces + 1]``, column 0 for every other id), so a context costs one gather of ``[n, b, t]``."""

    def __init__(self, candidate_ids: torch.Tensor):
        super().__init__()
        pieces, row_of = piece_rows(candidate_ids)
        incidence = torch.zeros(candidate_ids.shape[0], len(pieces) + 1)
        candidate, slot = (candidate_ids >= 0).nonzero(as_tuple=True)
        incidence[candidate, row_of[candidate_ids[candidate, slot]]] = 1.0
        self.register_buffer("row_of", row_of, persistent=False)  # derived from the spaces: rebuilt, not saved
        self.register_buffer("incidence", incidence, persistent=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.incidence[:, lookup(self.row_of, ids, 0)]


class MatchCounts(nn.Module):
    """The pooled exact-match feature ``[b, n]`` of a large fixed candidate set: how much of candidate n's content word
    pieces (:func:`content_piece_ids`, ``[n, l]``, -1 pads) the context holds, each context token counted with a
    weight in [0, 1] (learned from its state: the motivation's words can count, the setting's not), divided by the
    square root of the candidate's piece count.

    The utterance space is too large for :class:`ExactMatch`'s ``[n, b, t]`` attention feature; this one costs a
    ``[b, pieces]`` bag of the context and one gather of ``[b, n, l]``. It is the word-overlap rule made learnable: an
    utterance that says the quest's own words (an unseen quest's objects and characters) scores higher zero-shot."""

    def __init__(self, candidate_ids: torch.Tensor):
        super().__init__()
        pieces, row_of = piece_rows(candidate_ids)
        rows = torch.where(candidate_ids >= 0, row_of[candidate_ids.clamp(min=0)], 0)  # 0: a pad, never counted
        self.pieces = len(pieces)
        self.register_buffer("row_of", row_of, persistent=False)  # derived from the spaces: rebuilt, not saved
        self.register_buffer("rows", rows, persistent=False)
        self.register_buffer("norm", (candidate_ids >= 0).sum(1).clamp(min=1).float().sqrt(), persistent=False)

    def forward(self, ids: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        bag = weights.new_zeros(ids.shape[0], self.pieces + 1)
        bag = bag.scatter_add(1, lookup(self.row_of, ids, 0), weights)
        bag = torch.cat([bag.new_zeros(ids.shape[0], 1), bag[:, 1:]], dim=1)  # column 0: other ids and pads
        # a gather along one axis: its backward adds the [b, n * l] gradient in by index (index_add), where a 2-d index
        # (bag[:, rows]) puts it element by element, serially; the same sums in the same order (the losses' bits hold)
        gathered = bag.index_select(1, self.rows.flatten()).view(*bag.shape[:1], *self.rows.shape)
        return gathered.sum(-1) / self.norm


SPACES = ("actions", "utterances")  # the agent's two candidate spaces, in SwitchAgent.build's order


def space_store(store_dir: str | Path, space: str) -> Path:
    """The file (unkeyed: :func:`lq.models.poly_encoder.keyed` adds the key) a pretrained encoder's vectors of one of
    :data:`SPACES` are kept in under ``store_dir``: what an agent's build reads and writes, and
    :func:`lq.envs.build.encode_spaces` writes."""
    return Path(store_dir) / f"agent-{space}.pt"


NEG_INF = -1e4  # a masked token's attention logit (finite: safe in bf16)


@dataclass
class AgentStep:
    """One forward of the agent for a batch: scores for the rows each head acts on (zeros elsewhere)."""

    action_logits: torch.Tensor  # [b, actions]
    speech_logits: torch.Tensor  # [b, utterances]
    value: torch.Tensor  # [b]
    hidden: tuple[torch.Tensor, torch.Tensor]  # the action and dialogue GRUs' new states


class CandidateEmbeddings(nn.Module):
    """A fixed candidate set as vectors ``[n, dim]``, through a trainable projection: of the frozen poly-encoder
    vectors, or of the mean of the word-piece embeddings ``words`` (the scratch encoder's own, trained with it)."""

    def __init__(
        self,
        texts: Sequence[str],
        batcher: TextBatcher,
        dim: int,
        poly: PolyEncoder | None = None,
        words: nn.Embedding | None = None,
        rows: Callable[[torch.Tensor], torch.Tensor] | None = None,
        store: str | Path | None = None,
    ):
        """``rows``: tokenizer ids as rows of ``words`` (the scratch encoder's :meth:`StateEncoder.rows`).
        ``store``: a file keeping the frozen poly-encoder vectors between runs (:class:`CandidateCache`); word-piece
        candidates train with the agent and keep none."""
        super().__init__()
        if (poly is None) == (words is None):
            raise ValueError("candidates are embedded by a poly-encoder or by word-piece embeddings: give one")
        self.words = words
        if poly is not None:
            cache = CandidateCache(poly, batcher, texts, store=store)
            self.register_buffer("frozen", cache.embeddings.detach().clone())
            self.project = nn.Linear(self.frozen.shape[1], dim)
        else:
            ids, mask = batcher.candidates(list(texts))
            lengths = mask.sum(1)
            flat = ids[mask.bool()]
            self.register_buffer("flat_ids", rows(flat) if rows is not None else flat)
            self.register_buffer("offsets", torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]]))
            self.project = nn.Linear(words.embedding_dim, dim)

    def forward(self) -> torch.Tensor:
        if self.words is not None:
            return self.project(F.embedding_bag(self.flat_ids, self.words.weight, self.offsets, mode="mean"))
        return self.project(self.frozen)


class SwitchAgent(nn.Module):
    def __init__(
        self,
        encoder: StateEncoder,
        actions: CandidateEmbeddings,
        utterances: CandidateEmbeddings,
        config: AgentConfig,
        dim: int,
        action_pieces: torch.Tensor | None = None,
        utterance_pieces: torch.Tensor | None = None,
    ):
        """``action_pieces``: :func:`content_piece_ids` of the action space, for the action scorer's exact-match
        feature; ``utterance_pieces``: the utterance space's, for the utterance scores' pooled one (``None``: without
        it)."""
        super().__init__()
        h = encoder.hidden_size
        self.encoder, self.actions, self.utterances = encoder, actions, utterances
        self.action_gru = nn.GRUCell(h, config.gru_hidden)
        self.speech_gru = nn.GRUCell(h, config.gru_hidden)
        hidden = [config.policy_hidden] * (config.policy_layers - 1)
        self.action_head = mlp([config.gru_hidden, *hidden, dim])
        self.speech_head = mlp([config.gru_hidden, *hidden, dim])
        self.action_scorer = CandidateScorer(h, dim, config.action_codes)
        self.speech_scorer = CandidateScorer(h, dim, config.speech_codes)
        self.critic = mlp([h, *[config.critic_hidden] * (config.critic_layers - 1), 1])
        self.gru_hidden = config.gru_hidden
        self.exact_match = ExactMatch(action_pieces) if action_pieces is not None else None
        self.speech_match = MatchCounts(utterance_pieces) if utterance_pieces is not None else None
        if self.speech_match is not None:
            self.speech_match_worth = nn.Linear(h, 1)
            self.speech_match_weight = nn.Parameter(torch.tensor(1.0))
        if config.head_temperature:  # log-temperatures of the action and the dialogue head, at 1 to start
            self.head_log_temperature = nn.Parameter(torch.zeros(2))

    @classmethod
    def build(
        cls,
        action_space: Sequence[str],
        utterance_space: Sequence[str],
        batcher: TextBatcher,
        pretrained: PolyEncoder | None = None,
        config: AgentConfig | None = None,
        dim: int = 256,
        vocabulary: Vocabulary | None = None,
        store_dir: str | Path | None = None,
    ) -> SwitchAgent:
        """``vocabulary``: the scratch encoder's word pieces (:meth:`Vocabulary.of_texts` of every text the agent can
        read); None: the whole tokenizer's. A pretrained encoder has its own. ``store_dir``: where a pretrained
        encoder's vectors of the two spaces are kept between runs (``agent-actions-<key>.pt``,
        ``agent-utterances-<key>.pt``): every agent of that encoder, and every evaluation of one, encodes the spaces
        once in all, not at each start."""
        config = config or AgentConfig()
        if pretrained is not None:
            encoder = StateEncoder(pretrained.context_encoder, trainable_base=False, config=config)
            words = None
        else:
            base = build_encoder(config.scratch, batcher.tokenizer, vocabulary)
            encoder = StateEncoder(base, trainable_base=True, config=config, vocabulary=vocabulary)
            words = encoder.base.get_input_embeddings()

        def store(space: str) -> Path | None:
            return space_store(store_dir, space) if store_dir is not None else None

        return cls(
            encoder,
            CandidateEmbeddings(action_space, batcher, dim, pretrained, words, encoder.rows, store("actions")),
            CandidateEmbeddings(utterance_space, batcher, dim, pretrained, words, encoder.rows, store("utterances")),
            config,
            dim,
            content_piece_ids(action_space, batcher.tokenizer) if config.exact_match else None,
            content_piece_ids(utterance_space, batcher.tokenizer) if config.speech_match else None,
        )

    def initial_state(self, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Zero GRU states of ``batch`` episodes, on the device and in the dtype of the GRU weights they meet."""
        weight = self.action_gru.weight_hh
        return weight.new_zeros(batch, self.gru_hidden), weight.new_zeros(batch, self.gru_hidden)

    def space_state(self) -> dict[str, torch.Tensor]:
        """The state-dict entries (under this module) that are the spaces' texts rather than learned: the word-piece
        rows of each candidate, or a frozen poly-encoder's vectors of them. Another dataset's spaces have their own."""
        return {f"{name}.{key}": value for name in ("actions", "utterances")
                for key, value in getattr(self, name).named_buffers(recurse=False)}  # fmt: skip

    def candidate_vectors(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The action and utterance spaces as vectors ``[n, dim]`` (with their graph: computed once per rollout)."""
        return self.actions(), self.utterances()

    def forward(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        hidden: tuple[torch.Tensor, torch.Tensor],
        acted: torch.Tensor | None = None,
        candidates: tuple[torch.Tensor, torch.Tensor] | None = None,
        lines: Lines | None = None,
    ) -> AgentStep:
        """``acted`` (``[b]`` bool): the rows the action head scores; the dialogue head scores the others. Without it
        both heads score every row. ``candidates``: :meth:`candidate_vectors`, if already computed. ``lines``: the
        contexts line by line (:meth:`lq.models.poly_encoder.TextBatcher.context_lines`), for a frozen encoder."""
        actions, utterances = candidates if candidates is not None else self.candidate_vectors()
        states = self.encoder(ids, mask, lines)
        state = mean_state(states, mask)
        ha, hu = self.action_gru(state, hidden[0]), self.speech_gru(state, hidden[1])
        b = ids.shape[0]
        rows_a = torch.ones(b, dtype=torch.bool, device=ids.device) if acted is None else acted.to(ids.device)
        rows_u = torch.ones_like(rows_a) if acted is None else ~rows_a
        # the exact-match feature only of the rows the action head scores (two steps in three only speak)
        match = None
        if self.exact_match is not None and rows_a.any():
            match = self.exact_match(ids if rows_a.all() else ids[rows_a])
        action_logits = self._score(self.action_scorer, states, mask, self.action_head(ha), actions, rows_a, match)
        speech_logits = self._score(self.speech_scorer, states, mask, self.speech_head(hu), utterances, rows_u)
        if self.speech_match is not None and rows_u.any():  # the utterances' pooled exact match, where it speaks
            worth = torch.sigmoid(self.speech_match_worth(states[rows_u]).squeeze(-1)) * mask[rows_u].to(states.dtype)
            counts = torch.zeros_like(speech_logits)
            # under autocast the two sides differ (bf16 logits, float32 counts): an index put takes its destination's
            counts[rows_u] = self.speech_match(ids[rows_u], worth).to(counts.dtype)
            speech_logits = speech_logits + self.speech_match_weight * counts
        if hasattr(self, "head_log_temperature"):
            inverse = torch.exp(-self.head_log_temperature)
            action_logits, speech_logits = action_logits * inverse[0], speech_logits * inverse[1]
        return AgentStep(action_logits, speech_logits, self.critic(state).squeeze(-1), (ha, hu))

    def value(self, ids: torch.Tensor, mask: torch.Tensor, lines: Lines | None = None) -> torch.Tensor:
        """The critic alone: V(s) ``[b]``."""
        return self.critic(mean_state(self.encoder(ids, mask, lines), mask)).squeeze(-1)

    @staticmethod
    def _score(
        scorer: CandidateScorer,
        states: torch.Tensor,
        mask: torch.Tensor,
        query: torch.Tensor,
        candidates: torch.Tensor,
        rows: torch.Tensor,
        match: torch.Tensor | None = None,
    ) -> torch.Tensor:
        out = states.new_zeros(states.shape[0], candidates.shape[0])
        if rows.all():
            return scorer(states, mask, query, candidates, match)
        if rows.any():  # ``match``: of these rows alone
            scores = scorer(states[rows], mask[rows], query[rows], candidates, match)
            out[rows] = scores.to(out.dtype)  # under autocast the scores can be bf16 and the states float32
        return out
