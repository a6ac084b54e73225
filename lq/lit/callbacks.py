"""Callbacks every stage runs: progress lines that read well in a log file, and where the wall time goes.

Lightning's progress bars redraw one terminal line; written to a file (``make quickstart > log``, CI) they
leave either nothing or thousands of carriage returns. :class:`LogProgress` replaces the bar when stdout is
not a terminal and prints a plain line about every tenth of an epoch. :class:`StageTimer` splits a stage's
wall time into training, validation and test (and whatever the stage adds after fitting, such as the Table
4/5 artifacts), logs it as ``time/<part>_s`` and prints it, with the CPU time the run's process spent (``time/cpu_s``,
also at each training epoch's end, so that a run killed mid-training leaves what it cost: a table's cost is the sum
over its children, :func:`lq.experiments.claims.cost_line`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import lightning as L
from lightning.pytorch.callbacks import Callback
from lightning.pytorch.callbacks.progress.progress_bar import ProgressBar

from lq.tracking import check_finite


def _clock() -> float:
    return time.perf_counter()


def _format_metrics(metrics: dict) -> str:
    shown = []
    for key, value in metrics.items():
        if key == "v_num":
            continue
        shown.append(f"{key} {value:.4g}" if isinstance(value, float) else f"{key} {value}")
    return ", ".join(shown)


class LogProgress(ProgressBar):
    """One line per tenth of an epoch (and one per validation and test pass), flushed at once.

    Used instead of Lightning's bar when stdout is not a terminal (see :func:`wants_log_progress`).
    """

    def __init__(self, every: float = 0.1):
        super().__init__()
        self.every = every
        self._enabled = True
        self._started = 0.0
        self._next = 0

    def disable(self) -> None:
        self._enabled = False

    def enable(self) -> None:
        self._enabled = True

    def _line(self, text: str) -> None:
        if self._enabled and self.trainer.is_global_zero:
            print(text, flush=True)

    def on_train_epoch_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._started, self._next = _clock(), 1

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx) -> None:
        total = self.total_train_batches
        done = batch_idx + 1
        if not isinstance(total, int) or total <= 0:
            return
        step = max(1, round(total * self.every))
        if done >= total or done >= self._next * step:
            self._next = done // step + 1
            elapsed = _clock() - self._started
            epochs = f"/{trainer.max_epochs}" if trainer.max_epochs and trainer.max_epochs > 0 else ""
            metrics = _format_metrics(self.get_metrics(trainer, pl_module))
            self._line(
                f"epoch {trainer.current_epoch + 1}{epochs}: {done}/{total} batches ({100 * done // total}%), "
                f"{elapsed:.0f} s" + (f", {metrics}" if metrics else "")
            )

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._eval_started = _clock()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if not trainer.sanity_checking:
            self._eval_line(trainer, f"validation after epoch {trainer.current_epoch + 1}", "val/")

    def on_test_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._eval_started = _clock()

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._eval_line(trainer, "test", "test/")

    def _eval_line(self, trainer: L.Trainer, what: str, prefix: str) -> None:
        """``what``: its seconds and the pass's summary figures (``<prefix>name``, not the per-task ones)."""
        shown = [(k, v) for k, v in trainer.callback_metrics.items() if k.startswith(prefix) and k.count("/") == 1]
        values = "".join(f", {k} {float(v):.4g}" for k, v in shown)
        self._line(f"{what}: {_clock() - self._eval_started:.0f} s{values}")


class FiniteLosses(Callback):
    """Stops training at the first training step whose logged loss (a metric named ``*loss*``: ``train/loss``,
    ``losses/policy``) is NaN or infinite, with :class:`~lq.tracking.NonFiniteMetric` naming the metric and the
    step. It runs before the checkpoint callbacks (Lightning calls those last), so a diverged model is never saved
    over the last good checkpoint; the stage's run ends FAILED (:meth:`lq.lit.cli.StageCLI.fit`)."""

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs, batch, batch_idx) -> None:
        losses = {k: v for k, v in trainer.callback_metrics.items() if "loss" in k}
        check_finite(losses, trainer.global_step, "loss")


# where a checkpoint names the MLflow run that saved it (a run resumed from it goes on in that run)
RUN_ID = "lq_mlflow_run_id"


class RunInCheckpoint(Callback):
    """Writes the id of the run's MLflow run into each checkpoint it saves (:data:`RUN_ID`), so that a run resumed from
    it goes on in that MLflow run (:meth:`lq.lit.cli.StageCLI.continue_run`) rather than a second one of the same
    name."""

    def on_save_checkpoint(self, trainer: L.Trainer, pl_module: L.LightningModule, checkpoint: dict) -> None:
        from lightning.pytorch.loggers import MLFlowLogger

        run = next((lg.run_id for lg in trainer.loggers if isinstance(lg, MLFlowLogger) and lg._initialized), None)
        if run is not None:
            checkpoint[RUN_ID] = run


def wants_log_progress(stream=None) -> bool:
    """Plain progress lines where the output is not a terminal (a file, a pipe, CI)."""
    stream = sys.stdout if stream is None else stream
    return not (hasattr(stream, "isatty") and stream.isatty())


class StageTimer(Callback):
    """Wall seconds spent training, validating and testing (validation during fit is not counted as training).

    ``with timer.timed(part):`` books what a stage does after fitting (e.g. ``tables``). :meth:`report` logs
    ``time/<part>_s`` to the trainer's loggers, prints a line and returns those metrics. ``time/cpu_s``: the CPU
    seconds of the process (all its threads) since the timer was made, as the run is set up; logged again at each
    training epoch's end (growing: its largest value is the run's cost so far), which a paused or waiting process
    does not inflate as it does wall time.
    """

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {"train": 0.0, "validation": 0.0, "test": 0.0}
        self._fit = self._val = self._test = 0.0
        self._cpu = time.process_time()

    def cpu_seconds(self) -> float:
        return time.process_time() - self._cpu

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        for logger in trainer.loggers:
            logger.log_metrics({"time/cpu_s": self.cpu_seconds()}, step=trainer.global_step)

    def add(self, part: str, seconds: float) -> None:
        self.seconds[part] = self.seconds.get(part, 0.0) + seconds

    @contextmanager
    def timed(self, part: str) -> Iterator[None]:
        started = _clock()
        try:
            yield
        finally:
            self.add(part, _clock() - started)

    def on_fit_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._fit, self._val_in_fit = _clock(), self.seconds["validation"]

    def on_fit_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        fit = _clock() - self._fit
        self.add("train", fit - (self.seconds["validation"] - self._val_in_fit))

    def on_validation_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._val = _clock()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.add("validation", _clock() - self._val)

    def on_test_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self._test = _clock()

    def on_test_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.add("test", _clock() - self._test)

    def report(self, trainer: L.Trainer) -> dict[str, float]:
        metrics = {f"time/{part}_s": s for part, s in self.seconds.items()} | {"time/cpu_s": self.cpu_seconds()}
        for logger in trainer.loggers:
            logger.log_metrics(metrics, step=trainer.global_step)
        parts = ", ".join(f"{part} {s:.1f} s" for part, s in self.seconds.items() if s > 0)  # logged all the same
        if trainer.is_global_zero:
            total, cpu = sum(self.seconds.values()), metrics["time/cpu_s"]
            print(f"wall time: {parts} (total {total:.1f} s); CPU time {cpu:.1f} s", flush=True)
        return metrics
