"""Multi-task poly-encoder pretraining (paper 4.3, 5.1, appendix 8.1): a LightningModule and its DataModule.

Training mixes the tasks by weight and trains with cross-entropy over the labels of the batch
(in-batch negatives, as Humeau et al. train poly-encoders). Validation and test rank each example's
own 100 candidates and report Hits@1/5/10 per task (``val/<task>/hits_at_1``) and their mean over
tasks (``val/hits_at_1``, which picks the best checkpoint).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, WeightedRandomSampler

from lq.data.context import MOTIVATION_LEVELS
from lq.data.dataset import dataset_id
from lq.lit.metrics import HitsAtK
from lq.models.encoder import EncoderConfig, EncoderSpec
from lq.models.poly_encoder import CandidateMemo, PolyEncoder, TextBatcher, distinct_candidates
from lq.models.pretrained import load_tokenizer
from lq.tasks import ABLATION_TASKS, ENV_TASKS, NUM_CANDIDATES, TASKS, Example, build_task

HITS_AT = (1, 5, 10)


class PretrainDataModule(L.LightningDataModule):
    def __init__(
        self,
        data_dir: str = "data/default",
        tasks: dict[str, float] | None = None,
        tokenizer: str = "minilm",
        batch_size: int = 16,
        eval_batch_size: int = 8,
        context_length: int = 256,
        candidate_length: int = 32,
        num_candidates: int = NUM_CANDIDATES,
        max_train_examples: int | None = None,
        max_eval_examples: int | None = None,
        max_train_quests: int | None = None,
        motivations: Sequence[str] = MOTIVATION_LEVELS,
        num_workers: int = 0,
        seed: int = 0,
    ):
        super().__init__()
        self.tasks = dict(tasks or {})
        unknown = set(self.tasks) - set(TASKS + ENV_TASKS + ABLATION_TASKS)
        if unknown:
            choices = ", ".join(TASKS + ENV_TASKS + ABLATION_TASKS)
            raise ValueError(f"unknown task(s) {', '.join(sorted(unknown))}: choose from {choices}")
        if max_train_quests is not None and max_train_quests < 1:
            raise ValueError(f"data.max_train_quests is {max_train_quests}: give 1 or more, or leave it out (null) to "
                             "train on every training quest")  # fmt: skip
        if not self.tasks:
            raise ValueError(
                "no pretraining tasks: this encoder (e.g. 'scratch') is not pretrained; "
                "it is trained with the policies in the bc and rl stages"
            )
        self.data_dir = data_dir
        self.batcher = TextBatcher(load_tokenizer(tokenizer), context_length, candidate_length)
        self.batch_size, self.eval_batch_size = batch_size, eval_batch_size
        self.num_candidates, self.motivations = num_candidates, tuple(motivations)
        self.max_train, self.max_eval = max_train_examples, max_eval_examples
        self.max_train_quests = max_train_quests  # the quest tasks learn from the first training quests only
        self.num_workers, self.seed = num_workers, seed
        self.examples: dict[str, dict[str, list[Example]]] = {}
        self.epoch_samples: int | None = None  # the samples a training epoch draws (setup("fit") counts them)

    @property
    def task_names(self) -> list[str]:
        return list(self.tasks)

    def _load(self, split: str, limit: int | None, quests: int | None = None) -> dict[str, list[Example]]:
        out = {}
        for task in self.tasks:
            examples = build_task(
                task, self.data_dir, split, seed=self.seed, n=self.num_candidates, motivations=self.motivations,
                quests=quests,
            )  # fmt: skip
            out[task] = examples[:limit] if limit else examples
        return out

    def setup(self, stage: str | None = None) -> None:
        if stage in (None, "fit") and "train" not in self.examples:
            self.examples["train"] = self._load("train", self.max_train, self.max_train_quests)
            # fewer training quests change what an epoch learns from, not how long it is: it draws as many samples as
            # the uncut tasks hold (the same steps at every point of a quest curve)
            uncut = self._load("train", self.max_train) if self.max_train_quests else self.examples["train"]
            self.epoch_samples = sum(len(items) for items in uncut.values())
        if stage in (None, "fit", "validate") and "valid" not in self.examples:
            self.examples["valid"] = self._load("valid", self.max_eval)
        if stage in (None, "test") and "test" not in self.examples:
            self.examples["test"] = self._load("test", self.max_eval)

    def train_dataloader(self) -> DataLoader:
        examples, weights = [], []
        for task, items in self.examples["train"].items():
            examples += items
            weights += [self.tasks[task] / max(len(items), 1)] * len(items)
        generator = torch.Generator().manual_seed(self.seed)
        sampler = WeightedRandomSampler(weights, num_samples=self.epoch_samples, replacement=True, generator=generator)
        return DataLoader(
            examples,
            batch_size=self.batch_size,
            sampler=sampler,
            collate_fn=self.collate_train,
            num_workers=self.num_workers,
        )

    def _eval_loaders(self, split: str) -> list[DataLoader]:
        return [
            DataLoader(
                self.examples[split][t],
                batch_size=self.eval_batch_size,
                collate_fn=self.collate_eval,
                num_workers=self.num_workers,
            )
            for t in self.task_names
        ]

    def val_dataloader(self) -> list[DataLoader]:
        return self._eval_loaders("valid")

    def test_dataloader(self) -> list[DataLoader]:
        return self._eval_loaders("test")

    def collate_train(self, batch: list[Example]) -> dict[str, torch.Tensor]:
        """Contexts and the batch's distinct labels; each example's target is its label's position."""
        labels = list(dict.fromkeys(e.label for e in batch))
        ctx_ids, ctx_mask = self.batcher.contexts([e.context for e in batch])
        lab_ids, lab_mask = self.batcher.candidates(labels)
        target = torch.tensor([labels.index(e.label) for e in batch])
        return {"ctx_ids": ctx_ids, "ctx_mask": ctx_mask, "cand_ids": lab_ids, "cand_mask": lab_mask, "target": target}

    def collate_eval(self, batch: list[Example]) -> dict:
        """Contexts, the batch's distinct candidate texts tokenised (``cand_texts``, ``cand_ids``), and each example's
        candidates as positions among them (``cand_index [batch, n]``).

        A split with fewer distinct labels than ``num_candidates`` gives shorter lists: they are padded,
        and ``cand_valid`` marks the real ones.
        """
        ctx_ids, ctx_mask = self.batcher.contexts([e.context for e in batch])
        texts, index, valid = distinct_candidates([e.candidates for e in batch])
        cand_ids, cand_mask = self.batcher.candidates(texts)
        return {
            "ctx_ids": ctx_ids,
            "ctx_mask": ctx_mask,
            "cand_texts": texts,
            "cand_ids": cand_ids,
            "cand_mask": cand_mask,
            "cand_index": index,
            "cand_valid": valid,
            "target": torch.tensor([e.label_index for e in batch]),
            "easiest": torch.tensor([e.easiest for e in batch]),
        }


GENERAL_LIGHT = EncoderConfig()  # the pretraining stage's default encoder type


class PretrainModule(L.LightningModule):
    def __init__(
        self,
        encoder: EncoderConfig = GENERAL_LIGHT,
        n_codes: int = 64,
        *,
        lr: float,
        weight_decay: float = 0.01,
        warmup_steps: int = 100,
    ):
        """A poly-encoder of ``encoder``'s type with ``n_codes`` codes, trained by AdamW at ``lr`` (no default here:
        conf/poly_encoder.yaml and the profiles set it) with ``weight_decay``, after ``warmup_steps`` linear steps."""
        super().__init__()
        if isinstance(encoder, dict):  # as stored in a checkpoint's hyperparameters
            encoder = EncoderConfig(**{**encoder, "spec": EncoderSpec(**encoder.get("spec", {}))})
        self.encoder_config = encoder
        # plain data in the checkpoint, so that torch.load(weights_only=True) can read it back
        self.save_hyperparameters(ignore=["encoder"])
        self.hparams["encoder"] = asdict(encoder)
        self.model = PolyEncoder.from_spec(self.encoder_config.spec, n_codes)
        if self.encoder_config.init_from:
            self.load_encoder_from(self.encoder_config.init_from)
        elif self.encoder_config.name == "adaptive":
            raise ValueError(
                "the adaptive encoder starts from the general one: pass --model.encoder.init_from PATH (its "
                "best.ckpt), or run make pretrain ENCODER=adaptive, which pretrains general first and names it"
            )
        self.lr, self.weight_decay, self.warmup_steps = lr, weight_decay, warmup_steps
        self.task_names: list[str] = []
        self.metrics = nn.ModuleDict()
        self.memo = CandidateMemo(self.model)  # evaluation passes encode each distinct candidate once

    def load_encoder_from(self, checkpoint: str) -> None:
        """Start from another pretraining run (e.g. the adaptive encoder from general's best checkpoint)."""
        try:
            state = torch.load(checkpoint, map_location="cpu", weights_only=True)["state_dict"]
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{checkpoint}: checkpoint to start from not found; pretrain that encoder "
                "first (the adaptive encoder needs: make pretrain ENCODER=general)"
            ) from None
        self.model.load_state_dict({k.removeprefix("model."): v for k, v in state.items() if k.startswith("model.")})

    def setup(self, stage: str) -> None:
        datamodule = getattr(self.trainer, "datamodule", None)
        self.task_names = list(getattr(datamodule, "task_names", []))
        for split in ("val", "test"):
            for task in self.task_names:
                key = f"{split}__{task}"
                if key not in self.metrics:
                    self.metrics[key] = nn.ModuleDict({f"hits_at_{k}": HitsAtK(k) for k in HITS_AT})

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        datamodule = getattr(self.trainer, "datamodule", None)
        if datamodule is not None:  # what it was trained on: no later stage reuses it on other data
            checkpoint["lq_dataset"] = dataset_id(datamodule.data_dir)
            # the word pieces it read: an environment built on it (lq/Quest-v0) reads as many by default
            checkpoint["lq_context_length"] = datamodule.batcher.context_length

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        ctx = self.model.encode_context(batch["ctx_ids"], batch["ctx_mask"])
        cands = self.model.encode_candidates(batch["cand_ids"], batch["cand_mask"])
        scores = self.model.score(ctx, cands)
        loss = nn.functional.cross_entropy(scores, batch["target"])
        accuracy = (scores.argmax(dim=1) == batch["target"]).float().mean()
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch["target"]))
        self.log("train/batch_accuracy", accuracy, batch_size=len(batch["target"]))
        return loss

    def rank_scores(self, batch: dict, memo: CandidateMemo | None = None) -> torch.Tensor:
        """Scores ``[batch, n]`` of each example's own candidates. ``memo``: the pass's candidate vectors, so that a
        text already encoded in this pass is not encoded again (evaluation only: no gradient flows through it)."""
        ctx = self.model.encode_context(batch["ctx_ids"], batch["ctx_mask"])
        if memo is None:
            vectors = self.model.encode_candidates(batch["cand_ids"], batch["cand_mask"])
        else:
            vectors = memo.encode(batch["cand_texts"], batch["cand_ids"], batch["cand_mask"])
        scores = self.model.score(ctx, vectors[batch["cand_index"]])
        return scores.masked_fill(~batch["cand_valid"], float("-inf"))

    def on_validation_epoch_start(self) -> None:
        self.memo.clear()  # the weights changed since the last pass

    def on_test_epoch_start(self) -> None:
        self.memo.clear()

    def _eval_step(self, split: str, batch: dict, dataloader_idx: int) -> None:
        scores = self.rank_scores(batch, self.memo)
        for metric in self.metrics[f"{split}__{self.task_names[dataloader_idx]}"].values():
            metric.update(scores, batch["target"])

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("val", batch, dataloader_idx)

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int, dataloader_idx: int = 0) -> None:
        self._eval_step("test", batch, dataloader_idx)

    def _log_epoch(self, split: str) -> None:
        means: dict[int, list[torch.Tensor]] = {k: [] for k in HITS_AT}
        for task in self.task_names:
            for k in HITS_AT:
                metric = self.metrics[f"{split}__{task}"][f"hits_at_{k}"]
                value = metric.compute()
                metric.reset()
                means[k].append(value)
                self.log(f"{split}/{task}/hits_at_{k}", value, sync_dist=False)
        for k, values in means.items():
            if values:
                self.log(f"{split}/hits_at_{k}", torch.stack(values).mean(), prog_bar=k == 1)

    def on_validation_epoch_end(self) -> None:
        self._log_epoch("val")

    def on_test_epoch_end(self) -> None:
        self._log_epoch("test")

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.lr, weight_decay=self.weight_decay)
        warmup = max(1, self.warmup_steps)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
