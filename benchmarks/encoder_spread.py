"""How far apart an encoder puts different texts before any training: random against pretrained (Tables 4 and 5's
reading in docs/results/readings.md).

    python benchmarks/encoder_spread.py --data data/default [--task seq_timeline] [--n 16] [--seed 0]

Encodes the first ``n`` training examples of a task (contexts and their gold candidates) with a poly-encoder of each
agent encoder's initialisation (conf/encoder/: Scratch's random 3 layers, Light's random 6, and MiniLM's weights) and
prints the mean pairwise cosine of the contexts' first-token states, of their codes (what the poly-encoder scores
against), of the candidates' first-token vectors (what it scores) and of their mean-pooled token states; then the
spread of each context's scores over the ``n`` candidates beside their mean. Near 1: the encoder puts every text at
almost one point, and what tells two apart is a small part of each vector.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch

from lq.experiments.specs import encoder_section
from lq.models.encoder import EncoderSpec
from lq.models.poly_encoder import PolyEncoder, TextBatcher, token_states
from lq.models.pretrained import load_tokenizer
from lq.tasks import build_task


def mean_cosine(vectors: torch.Tensor) -> float:
    """The mean cosine of each pair of distinct rows (each row flattened)."""
    unit = torch.nn.functional.normalize(vectors.flatten(1), dim=-1)
    similar = unit @ unit.T
    return similar[~torch.eye(len(unit), dtype=torch.bool)].mean().item()


def mean_pooled(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    return (states * mask.unsqueeze(-1)).sum(1) / mask.sum(1, keepdim=True)


@torch.no_grad()
def spread(encoder: str, contexts: Sequence[str], labels: Sequence[str], seed: int) -> dict[str, float]:
    """The cosines and score spread of ``encoder``'s initialisation (its config's spec, random weights seeded)."""
    spec = encoder_section(encoder)["spec"]
    torch.manual_seed(seed)
    tokenizer = load_tokenizer("minilm")
    model = PolyEncoder.from_spec(EncoderSpec(**spec), 64, tokenizer).eval()
    batcher = TextBatcher(tokenizer, 128, 32)
    ctx_ids, ctx_mask = batcher.contexts(list(contexts))
    cand_ids, cand_mask = batcher.candidates(list(labels))
    ctx_states = token_states(model.context_encoder, ctx_ids, ctx_mask)
    cand_states = token_states(model.candidate_encoder, cand_ids, cand_mask)
    codes = model.encode_context(ctx_ids, ctx_mask)
    scores = model.score(codes, cand_states[:, 0])
    return {
        "contexts, first token": mean_cosine(ctx_states[:, 0]),
        "contexts, codes": mean_cosine(codes),
        "candidates, first token": mean_cosine(cand_states[:, 0]),
        "candidates, mean-pooled": mean_cosine(mean_pooled(cand_states, cand_mask)),
        "score spread (std)": scores.std(dim=1).mean().item(),
        "score mean": scores.mean().item(),
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/default")
    parser.add_argument("--task", default="seq_timeline")
    parser.add_argument("--n", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    examples = build_task(args.task, args.data, "train")[: args.n]
    contexts, labels = [e.context for e in examples], [e.label for e in examples]
    rows = {e: spread(e, contexts, labels, args.seed) for e in ("scratch", "light", "general")}
    print(f"{args.n} training examples of {args.task} ({args.data}), seed {args.seed}: mean pairwise cosine, then the "
          "scores' spread over the candidates and their mean")  # fmt: skip
    names = list(next(iter(rows.values())))
    print(f"{'':26}" + "".join(f"{e:>10}" for e in rows))
    for name in names:
        print(f"{name:26}" + "".join(f"{rows[e][name]:10.3f}" for e in rows))


if __name__ == "__main__":
    main()
