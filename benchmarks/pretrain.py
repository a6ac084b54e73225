"""Pretraining throughput: the full pipeline against the bare model on pre-tokenised tensors.

    python benchmarks/pretrain.py [--data data/default] [--steps 30] [--encoder minilm|scratch]

Full pipeline: Lightning's Trainer with the PretrainDataModule (task mixing, tokenisation in the
collate function) and PretrainModule.training_step. Bare model: the same poly-encoder, forward,
backward and optimiser step on the same batches tokenised beforehand. Prints samples/s of each and
their ratio (target: at least 0.85).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback

from lq.lit.pretrain import PretrainDataModule, PretrainModule
from lq.models.encoder import EncoderConfig, EncoderSpec

from timing import Yardstick

TASKS = {
    t: 1.0
    for t in ("atomic_light", "general_dialogue", "light_original", "boa_timeline", "seq_timeline", "quest_dialogue")
}


class _Clock(Callback):
    """Wall time of training batches after ``skip`` warm-up steps."""

    def __init__(self, skip: int):
        self.skip, self.start, self.steps, self.samples = skip, 0.0, 0, 0

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx == self.skip:
            self.start = time.perf_counter()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx >= self.skip:
            self.steps += 1
            self.samples += len(batch["target"])
            self.elapsed = time.perf_counter() - self.start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="data/default")
    parser.add_argument("--steps", type=int, default=30, help="timed steps (after 3 warm-up steps)")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--context-length", type=int, default=128)
    parser.add_argument("--encoder", default="minilm", help="minilm, scratch, or a local checkpoint")
    args = parser.parse_args(argv)
    if not Path(args.data).is_dir():
        print(f"no dataset at {args.data}: run `make data` first (or pass --data)", file=sys.stderr)
        return 1
    stick = Yardstick()  # this machine's speed, measured again at the end (benchmarks/timing.py)
    torch.manual_seed(0)
    spec = EncoderSpec(init=args.encoder)
    warmup = 3
    dm = PretrainDataModule(args.data, TASKS, batch_size=args.batch_size, context_length=args.context_length)
    dm.setup("fit")
    module = PretrainModule(EncoderConfig("bench", spec, tasks=TASKS), lr=1e-5)
    clock = _Clock(warmup)
    trainer = L.Trainer(
        max_steps=warmup + args.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        limit_val_batches=0,
        callbacks=[clock],
        accelerator="cpu",
        devices=1,
        gradient_clip_val=1.0,  # as conf/pretrain.yaml; the bare loop clips too
    )
    trainer.fit(module, train_dataloaders=dm.train_dataloader())
    pipeline = clock.samples / clock.elapsed

    # the same model and the same batches, tokenised beforehand
    batches = list(itertools.islice(iter(dm.train_dataloader()), warmup + args.steps))
    bare_module = PretrainModule(EncoderConfig("bench", spec, tasks=TASKS), lr=1e-5)
    optimizer = torch.optim.AdamW(bare_module.parameters(), lr=1e-5)
    bare_module.train()
    samples, start = 0, 0.0
    for i, batch in enumerate(batches):
        if i == warmup:
            start = time.perf_counter()
        ctx = bare_module.model.encode_context(batch["ctx_ids"], batch["ctx_mask"])
        cands = bare_module.model.encode_candidates(batch["cand_ids"], batch["cand_mask"])
        loss = torch.nn.functional.cross_entropy(bare_module.model.score(ctx, cands), batch["target"])
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(bare_module.parameters(), 1.0)
        optimizer.step()
        if i >= warmup:
            samples += len(batch["target"])
    bare = samples / (time.perf_counter() - start)
    print(
        f"encoder {args.encoder}, batch {args.batch_size}, context {args.context_length} tokens, "
        f"{args.steps} timed steps, {torch.get_num_threads()} threads"
    )
    stick.end()
    print(stick.report())
    print(
        f"full pipeline (Trainer + DataModule + tokenisation): {pipeline:8.2f} samples/s "
        f"({stick.per(pipeline):.3f} per yardstick)"
    )
    print(
        f"bare model forward+backward on pre-tokenised tensors: {bare:8.2f} samples/s "
        f"({stick.per(bare):.3f} per yardstick)"
    )
    print(f"ratio: {pipeline / bare:.3f} (target >= 0.85)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
