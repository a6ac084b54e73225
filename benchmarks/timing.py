"""What the benchmarks share: wall-clock seconds per named part, added up by wrapped callables."""

from __future__ import annotations

import time
from collections import defaultdict

TIMES: dict[str, float] = defaultdict(float)
COUNTS: dict[str, int] = defaultdict(int)  # what a benchmark counts beside the times (calls, items)


def timed(name, fn, sync=None):
    """``fn``, adding the seconds of each of its calls to ``TIMES[name]``. ``sync`` (``torch.cuda.synchronize`` on a
    GPU) is called as the clock starts and before it stops: a CUDA call returns before its kernels end, so without it a
    part's kernels would be counted in whichever part waits for them next."""

    def wrapper(*args, **kwargs):
        if sync is not None:
            sync()
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            if sync is not None:
                sync()
            TIMES[name] += time.perf_counter() - start

    return wrapper


def yardstick(seconds: float = 3.0) -> float:
    """This machine's speed now: forward and backward passes per second of a fixed transformer (4 layers, width 256,
    a batch of 16 sequences of 128 tokens, seed 0) on the CPU, at torch's thread count. The machine's speed drifts
    (2x between days here); a benchmark's figure divided by this rate compares across days and machines."""
    import torch

    generator = torch.Generator().manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, dropout=0.0, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.02)
    x = torch.randn(16, 128, 256, generator=generator)

    def step() -> None:
        model.zero_grad(set_to_none=True)
        model(x).square().mean().backward()

    for _ in range(2):  # allocations, thread pool
        step()
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        step()
        done += 1
    return done / (time.perf_counter() - start)


class Yardstick:
    """The yardstick measured at a benchmark's start and end (the machine can change speed within a run); ``per``
    divides a figure by their mean and :meth:`report` prints both."""

    def __init__(self) -> None:
        self.rates = [yardstick()]

    def end(self) -> float:
        if len(self.rates) == 1:
            self.rates.append(yardstick())
        return self.rate

    @property
    def rate(self) -> float:
        return sum(self.rates) / len(self.rates)

    def per(self, figure: float) -> float:
        return figure / self.rate

    def report(self) -> str:
        import torch

        shown = " and ".join(f"{r:.2f}" for r in self.rates)
        return (
            f"yardstick (benchmarks/timing.py: a fixed transformer's forward+backward, {torch.get_num_threads()} "
            f"threads): {shown} passes/s at the start and end, mean {self.rate:.2f}; figures marked 'per yardstick' "
            "are divided by that mean, to compare across days"
        )
