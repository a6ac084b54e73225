"""The supervised timeline tables of the paper (appendix 8.1, Tables 4 and 5).

Sequential (Table 4) and bag-of-actions (Table 5) timeline prediction, Hits@1/5/10 of 100, with
the motivations in the context switched: none, short only, long and mid. Each is reported over all
actions, over the easiest action only (the "now" step, which the short motivation names) and over
all but the easiest. Here the switch acts on the evaluation context of one trained encoder; the
experiment driver for Tables 4/5 also trains one encoder per setting.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence

import torch

from lq.eval import markdown_table
from lq.lit.metrics import rank_of_gold
from lq.models.poly_encoder import CandidateMemo, PolyEncoder, TextBatcher, distinct_candidates
from lq.tasks import Example, build_task

MOTIVATION_SETTINGS = {"none": (), "short": ("short",), "long_mid": ("long", "mid")}
TABLES = {
    "seq_timeline": "Table 4: sequential timeline prediction",
    "boa_timeline": "Table 5: bag-of-actions timeline prediction",
}
COLUMNS = (
    "motivations",
    "all_hits_at_1",
    "all_hits_at_5",
    "all_hits_at_10",
    "easiest_hits_at_1",
    "leave_easiest_out_hits_at_1",
    "examples",
)


@torch.no_grad()
def gold_ranks(
    model: PolyEncoder,
    batcher: TextBatcher,
    examples: Sequence[Example],
    batch_size: int = 8,
    memo: CandidateMemo | None = None,
) -> torch.Tensor:
    """``[len(examples)]`` the rank of each example's gold candidate among its own candidates (each distinct
    candidate text encoded once; ``memo``: vectors of the same weights kept from an earlier call)."""
    was_training = model.training
    model.eval()
    device = model.codes.device
    memo = memo if memo is not None else CandidateMemo(model)
    ranks = []
    for start in range(0, len(examples), batch_size):
        chunk = examples[start : start + batch_size]
        ctx_ids, ctx_mask = batcher.contexts([e.context for e in chunk])
        texts, index, valid = distinct_candidates([e.candidates for e in chunk])
        cand_ids, cand_mask = batcher.candidates(texts)
        ctx = model.encode_context(ctx_ids.to(device), ctx_mask.to(device))
        vectors = memo.encode(texts, cand_ids.to(device), cand_mask.to(device))
        scores = model.score(ctx, vectors[index.to(device)]).masked_fill(~valid.to(device), float("-inf"))
        target = torch.tensor([e.label_index for e in chunk], device=device)
        ranks.append(rank_of_gold(scores, target).cpu())
    model.train(was_training)
    return torch.cat(ranks) if ranks else torch.empty(0, dtype=torch.long)


def timeline_table(
    model: PolyEncoder,
    batcher: TextBatcher,
    data_dir: str,
    task: str,
    split: str = "test",
    max_quests: int | None = None,
    batch_size: int = 8,
    seed: int = 0,
) -> list[dict[str, float | str]]:
    if task not in TABLES:
        raise ValueError(f"no timeline table for task '{task}': choose {', '.join(TABLES)}")
    rows = []
    memo = CandidateMemo(model)  # the settings share most candidates: each is encoded once for the whole table
    for setting, levels in MOTIVATION_SETTINGS.items():
        examples = build_task(task, data_dir, split, seed=seed, motivations=levels)
        if max_quests:  # seq has 6 examples per quest, boa 7: cut on quest boundaries
            per_quest = 6 if task == "seq_timeline" else 7
            examples = examples[: max_quests * per_quest]
        ranks = gold_ranks(model, batcher, examples, batch_size, memo)
        easiest = torch.tensor([e.easiest for e in examples], dtype=torch.bool)

        every = torch.ones_like(easiest)
        rows.append(
            {
                "motivations": setting,
                "all_hits_at_1": _hits(ranks, every, 1),
                "all_hits_at_5": _hits(ranks, every, 5),
                "all_hits_at_10": _hits(ranks, every, 10),
                "easiest_hits_at_1": _hits(ranks, easiest, 1),
                "leave_easiest_out_hits_at_1": _hits(ranks, ~easiest, 1),
                "examples": len(examples),
            }
        )
    return rows


def _hits(ranks: torch.Tensor, mask: torch.Tensor, k: int) -> float:
    return float((ranks[mask] < k).float().mean()) if mask.any() else float("nan")


def to_markdown(rows: Sequence[dict[str, float | str]], title: str) -> str:
    head = ["Motivations", "All H@1", "All H@5", "All H@10", "Easiest H@1", "Leave easiest out H@1", "n"]
    cells = [[str(r["motivations"]), *(f"{r[c]:.4f}" for c in COLUMNS[1:-1]), str(r["examples"])] for r in rows]
    return "\n".join([f"### {title}", "", *markdown_table(head, cells)]) + "\n"


def to_csv(rows: Sequence[dict[str, float | str]]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()
