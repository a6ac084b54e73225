"""Train / valid / test splits shared by every dataset in lq."""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
SPLITS = ("train", "valid", "test")


@dataclass
class Splits(Generic[T]):
    train: list[T] = field(default_factory=list)
    valid: list[T] = field(default_factory=list)
    test: list[T] = field(default_factory=list)

    def __getitem__(self, split: str) -> list[T]:
        if split not in SPLITS:
            raise KeyError(f"unknown split '{split}': use one of {', '.join(SPLITS)}")
        return getattr(self, split)

    def items(self) -> Iterator[tuple[str, list[T]]]:
        for s in SPLITS:
            yield s, self[s]

    def all(self) -> list[T]:
        return self.train + self.valid + self.test

    def counts(self) -> dict[str, int]:
        return {s: len(v) for s, v in self.items()}


def split_by_tenths(items: Sequence[T]) -> Splits[T]:
    """80 / 10 / 10 in the given order, as the original LIGHT-Quests builder does (``x = int(0.1 n)``)."""
    x = int(0.1 * len(items))
    return Splits(list(items[: 8 * x]), list(items[8 * x : 9 * x]), list(items[9 * x :]))


def split_by_percent(items: Sequence[T]) -> Splits[T]:
    """80 / 10 / 10 in the given order, as the original wild-completions builder does (``int(80 * n / 100)``)."""
    p = 0.01 * len(items)
    a, b = int(80 * p), int(90 * p)
    return Splits(list(items[:a]), list(items[a:b]), list(items[b:]))


def shuffled(items: Sequence[T], seed: int = 42) -> list[T]:
    out = list(items)
    random.Random(seed).shuffle(out)
    return out
