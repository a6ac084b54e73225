"""A callback that stops its own process mid-training, once: what a kill -9 or a Ctrl-C does to a stage run, at a
point a test chooses. Named on a stage's command line (``--trainer.callbacks+=...``), so it runs in the children
of a driver too."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from lightning.pytorch.callbacks import Callback


class StopOnce(Callback):
    """At the first training batch of epoch ``epoch`` (the epochs before it checkpointed), the first run to find no
    ``flag`` file writes it and sends its own process ``signal`` (9: SIGKILL, 2: SIGINT). A run that finds the flag
    trains on untouched."""

    def __init__(self, flag: str, signal: int = 9, epoch: int = 1, seed: int | None = None):
        self.flag, self.signal, self.epoch, self.seed = Path(flag), signal, epoch, seed

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
        if trainer.current_epoch != self.epoch or self.flag.exists():
            return
        if self.seed is not None and pl_module.hparams.get("seed") != self.seed:  # another seed's run: untouched
            return
        self.flag.write_text(f"{os.getpid()}\n")
        os.kill(os.getpid(), signal.Signals(self.signal))


def stop_once(flag: Path, sig: int = 9, epoch: int = 1, seed: int | None = None) -> str:
    """The command-line argument that adds :class:`StopOnce` to a stage run's callbacks (``seed``: only the agent run of
    that seed stops)."""
    only = f', "seed": {seed}' if seed is not None else ""
    return (
        '--trainer.callbacks+={"class_path": "tests.lit.stopping.StopOnce", "init_args": '
        f'{{"flag": "{flag}", "signal": {sig}, "epoch": {epoch}{only}}}}}'
    )
