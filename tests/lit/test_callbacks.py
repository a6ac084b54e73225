"""Progress lines for log files and the wall-time split of a stage."""

import io
import math

import lightning as L
import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from lq.lit.callbacks import LogProgress, StageTimer, wants_log_progress


class _Tiny(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).pow(2).mean()
        self.log("train/loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        self.log("val/loss", self.layer(batch[0]).pow(2).mean())

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def _loader(n):
    return DataLoader(TensorDataset(torch.randn(n, 2)), batch_size=1)


def test_log_progress_prints_a_line_per_tenth_of_an_epoch_and_per_validation(capsys):
    timer = StageTimer()
    trainer = L.Trainer(
        max_epochs=2,
        callbacks=[LogProgress(), timer],
        logger=False,
        enable_checkpointing=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    assert isinstance(trainer.progress_bar_callback, LogProgress)  # it is the trainer's bar, not a second one
    trainer.fit(_Tiny(), _loader(20), _loader(3))
    lines = [line for line in capsys.readouterr().out.splitlines() if line]
    epoch1 = [line for line in lines if line.startswith("epoch 1/2:")]
    assert [line.split(":")[1].split()[0] for line in epoch1] == [f"{2 * i}/20" for i in range(1, 11)]
    assert "train/loss" in epoch1[-1] and "\r" not in "".join(lines)
    assert [line.split(":")[0] for line in lines if line.startswith("validation")] == [
        "validation after epoch 1",
        "validation after epoch 2",
    ]
    metrics = timer.report(trainer)
    assert timer.seconds["train"] > 0 and timer.seconds["validation"] > 0 and timer.seconds["test"] == 0
    assert metrics.pop("time/cpu_s") > 0 and metrics == {f"time/{part}_s": s for part, s in timer.seconds.items()}
    [line] = capsys.readouterr().out.splitlines()
    assert line.startswith("wall time: train ") and "test" not in line  # a part that did not run is not printed
    assert "; CPU time " in line


class _Logged(L.pytorch.loggers.Logger):
    """Every metric logged, with its step."""

    def __init__(self):
        super().__init__()
        self.logged: list[tuple[dict, int | None]] = []

    name, version = "logged", 0

    def log_metrics(self, metrics, step=None):
        self.logged.append((dict(metrics), step))

    def log_hyperparams(self, params, *args, **kwargs):
        pass


def test_the_cpu_time_is_logged_at_each_epochs_end_growing_and_last_with_the_wall_times():
    """A run killed after its first epoch has logged what that epoch cost; the report logs it once more, at the
    last step, so that its largest value is the whole run's."""
    timer, logger = StageTimer(), _Logged()
    trainer = L.Trainer(
        max_epochs=3, callbacks=[timer], logger=logger, enable_checkpointing=False, enable_progress_bar=False,
        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
    )  # fmt: skip
    trainer.fit(_Tiny(), _loader(20))
    cpu = [(m["time/cpu_s"], step) for m, step in logger.logged if "time/cpu_s" in m and len(m) == 1]
    assert [step for _, step in cpu] == [20, 40, 60]  # each epoch's end, at its global step
    assert cpu[0][0] > 0 and [v for v, _ in cpu] == sorted(v for v, _ in cpu)
    metrics = timer.report(trainer)
    assert logger.logged[-1] == (metrics, 60) and metrics["time/cpu_s"] >= cpu[-1][0]


def test_log_progress_only_where_stdout_is_not_a_terminal():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    assert wants_log_progress(io.StringIO()) and not wants_log_progress(Terminal())


class _Diverging(_Tiny):
    """A loss that turns NaN at optimizer step ``at`` (``at`` counted from 0)."""

    def __init__(self, at: int):
        super().__init__()
        self.at = at

    def training_step(self, batch, batch_idx):
        loss = self.layer(batch[0]).pow(2).mean()
        if self.global_step >= self.at:
            loss = loss * float("nan")
        self.log("train/loss", loss)
        return loss


def test_a_nan_loss_stops_training_names_metric_and_step_fails_the_run_and_keeps_the_last_good_checkpoint(tmp_path):
    from lightning.pytorch.callbacks import ModelCheckpoint
    from mlflow.tracking import MlflowClient

    from lq.lit.callbacks import FiniteLosses
    from lq.lit.loggers import StageLogger
    from lq.tracking import NonFiniteMetric

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logger = StageLogger(experiment_name="nan", tracking_uri=uri)
    checkpoints = ModelCheckpoint(dirpath=tmp_path / "ckpt", save_last=True)
    trainer = L.Trainer(
        max_epochs=4,
        callbacks=[checkpoints, FiniteLosses()],  # the checkpoint first: Lightning still calls it last
        logger=logger,
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    with pytest.raises(NonFiniteMetric, match=r"loss train/loss = nan at step 8: not a finite number; training st"):
        trainer.fit(_Diverging(at=7), _loader(5), _loader(2))  # epochs of 5 steps: NaN from the 8th, in epoch 2
    saved = torch.load(tmp_path / "ckpt" / "last.ckpt", weights_only=False)
    assert saved["global_step"] == 5  # the end of the first epoch, before the loss diverged
    assert all(torch.isfinite(w).all() for w in saved["state_dict"].values())
    client = MlflowClient(uri)
    assert client.get_run(logger.run_id).info.status == "FAILED"
    history = client.get_metric_history(logger.run_id, "train/loss")
    assert history and all(math.isfinite(m.value) for m in history)  # the NaN was never stored


def test_a_non_finite_evaluation_figure_is_refused_not_stored(tmp_path):
    from mlflow.tracking import MlflowClient

    from lq.lit.loggers import StageLogger
    from lq.tracking import NonFiniteMetric

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    logger = StageLogger(experiment_name="inf", tracking_uri=uri)
    logger.log_metrics({"test/act_goal_rate": 0.5}, step=0)
    for bad in (float("inf"), float("-inf"), float("nan"), torch.tensor(float("nan"))):
        with pytest.raises(NonFiniteMetric, match=r"metric test/speech_goal_rate = .* at step 1: .* it is not stored"):
            logger.log_metrics({"test/act_goal_rate": 0.75, "test/speech_goal_rate": bad}, step=1)
    run = MlflowClient(uri).get_run(logger.run_id)
    assert run.data.metrics == {"test/act_goal_rate": 0.5}  # nothing of a refused batch was stored
