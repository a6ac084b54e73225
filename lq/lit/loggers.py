"""lq's Lightning loggers and config callback for MLflow: :class:`StageLogger` (the run stays RUNNING until the stage
has done its work after fitting, params kept whole), :func:`end_runs` and :class:`LogConfigToMLflow` (the resolved
config beside the checkpoints and as the run's artifact: Lightning's own config-saving callback fails with a sqlite
tracking URI, Lightning issues 19441 and 20273)."""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Mapping
from pathlib import Path

from lightning.fabric.utilities.logger import _convert_params, _flatten_dict
from lightning.fabric.utilities.rank_zero import rank_zero_only
from lightning.pytorch.cli import SaveConfigCallback
from lightning.pytorch.loggers import MLFlowLogger

from lq.stages import CONFIG
from lq.tracking import check_finite, end_run, ensure_experiment, init_store, name_end, reopen_run, stored


class StageLogger(MLFlowLogger):
    """MLflow's logger, whose run stays RUNNING until the stage has done all its work. Lightning finalizes its loggers
    with "success" at the end of every ``fit`` and ``test``, but a stage evaluates after those: a run killed then would
    read FINISHED without its evaluation. :meth:`StageCLI.fit` ends the run (:meth:`end`): FINISHED once everything is
    logged, KILLED on Ctrl-C, FAILED on an error (Lightning's own "failed" still ends it at once)."""

    def __init__(self, *args, **kwargs):
        # the store's tables first, under the lock: MLflow's client may make them as it starts, unlocked
        init_store(inspect.signature(MLFlowLogger).bind_partial(*args, **kwargs).arguments.get("tracking_uri"))
        super().__init__(*args, **kwargs)
        if self._run_id is None and self._experiment_name:  # made now, race-free: Lightning's own lookup finds it
            self._experiment_id = ensure_experiment(self._mlflow_client, self._experiment_name, self._artifact_location)

    def continue_run(self, run_id: str) -> bool:
        """Go on in the MLflow run ``run_id`` (a run resumed from its checkpoint), RUNNING again, if this store holds
        it: its params are not logged again, and a metric it holds already at a step is not logged again there (a
        resumed run replays the steps after its last checkpoint: RL to the same figures). Returns whether it did."""
        from mlflow.exceptions import MlflowException

        try:
            run = self._mlflow_client.get_run(run_id)
        except MlflowException:
            return False
        self._run_id = run_id
        self._logged_params = set(run.data.params)
        self._logged_steps = {
            key: max(m.step for m in self._mlflow_client.get_metric_history(run_id, key)) for key in run.data.metrics
        }
        reopen_run(self._mlflow_client, run_id)
        return True

    @rank_zero_only
    def log_hyperparams(self, params) -> None:
        """The params, less jsonargparse's internal ones (``_instantiator``, ``_class_path``), flattened
        (``env/data_dir``) and kept whole up to MLflow's limit on a value (6,000 characters in MLflow 3; Lightning's
        logger cuts every value at 250 without a word); a longer one is cut there with a warning naming its key."""
        from mlflow.entities import Param
        from mlflow.utils.validation import MAX_PARAM_VAL_LENGTH

        params = _flatten_dict({k: v for k, v in _convert_params(params).items() if not str(k).startswith("_")})
        params = {k: v for k, v in params.items() if k not in getattr(self, "_logged_params", ())}  # a continued run
        kept = []
        for key, value in params.items():
            text = str(value)
            if len(text) > MAX_PARAM_VAL_LENGTH:
                warnings.warn(
                    f"MLflow param {key}: {len(text)} characters, cut to MLflow's {MAX_PARAM_VAL_LENGTH} (the run's "
                    "config.yaml artifact keeps it whole)",
                    stacklevel=2,
                )
            kept.append(Param(key=key, value=text[:MAX_PARAM_VAL_LENGTH]))
        for start in range(0, len(kept), 100):  # MLflow takes at most 100 params a call
            self.experiment.log_batch(run_id=self.run_id, params=kept[start : start + 100], **self._log_batch_kwargs)

    @rank_zero_only
    def log_metrics(self, metrics: Mapping[str, float], step: int | None = None) -> None:
        """MLflow's, each figure at 4 significant digits (:func:`lq.tracking.stored`), refusing a NaN or infinite one
        (:class:`NonFiniteMetric`) instead of storing it; in a continued run (:meth:`continue_run`), without the
        figures of steps it holds already."""
        check_finite(metrics, step)
        logged = getattr(self, "_logged_steps", None)
        if logged and step is not None:
            metrics = {k: v for k, v in metrics.items() if step > logged.get(k, -1)}
        if metrics:
            super().log_metrics({k: stored(v) for k, v in metrics.items()}, step)

    def finalize(self, status: str = "success") -> None:
        if status not in ("success", "finished"):
            super().finalize(status)

    def end(self, status: str) -> None:
        if self._initialized:
            super().finalize(status)
            name_end(self.experiment, self.run_id, status)


def end_runs(loggers, status: str) -> None:
    """End the MLflow runs of ``loggers`` with ``status`` (FINISHED, FAILED, KILLED)."""
    for logger in loggers:
        if isinstance(logger, StageLogger):
            logger.end(status)
        elif isinstance(logger, MLFlowLogger) and logger._initialized:  # a plain MLFlowLogger a config chose
            end_run(logger.experiment, logger.run_id, status)


class LogConfigToMLflow(SaveConfigCallback):
    """The run's configuration as one file, its ``config.yaml`` beside its checkpoints, and the same bytes as its
    MLflow artifact ``config.yaml``. A run given its resolved config alone (``lq STAGE fit --config
    RUN_DIR/config.yaml``, what ``lq stage`` and ``lq experiment`` launch: :meth:`lq.stages.Stage.resolve`) logs that
    file's bytes and leaves it be; a run given other files or arguments logs what it parsed (its config files, its
    arguments, the defaults), written whole into its folder, then renamed into place. Either runs again as it ran with
    ``lq STAGE fit --config RUN_DIR/config.yaml``."""

    def __init__(self, *args, **kwargs):
        kwargs["save_to_log_dir"] = False  # Lightning's log dir is not the run's folder; the file goes there below
        super().__init__(*args, **kwargs)
        self.text = ""  # the resolved config, once save_config has dumped it
        self.read_alone = False  # the run read its folder's config.yaml alone

    def save_config(self, trainer, pl_module, stage) -> None:
        resolved = self.resolved_text(trainer)
        self.read_alone = resolved is not None
        self.text = resolved if resolved is not None else self.parser.dump(self.config, skip_none=False)
        for logger in trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                logger.experiment.log_text(logger.run_id, self.text, CONFIG)

    def resolved_text(self, trainer) -> str | None:
        """The text of the run's resolved config where the run read it alone (its one config file, its folder's
        ``config.yaml``, parses to the whole configuration the run has: nothing else was given), else None."""
        files = self.config.get("config") or []
        callback = trainer.checkpoint_callback
        if len(files) != 1 or callback is None or not callback.dirpath:
            return None
        file = Path(str(files[0]))
        if file.resolve() != (Path(callback.dirpath) / CONFIG).resolve():
            return None
        alone = self.parser.parse_path(str(file), defaults=True)

        def setting(namespace):  # what the run does: not the file it read, nor where it resumes from
            return {k: v for k, v in namespace.clone().as_dict().items() if k not in ("config", "ckpt_path")}

        return file.read_text(encoding="utf-8") if setting(alone) == setting(self.config) else None

    def on_fit_start(self, trainer, pl_module) -> None:
        """The file, once every callback is set up (the checkpoint callback would see it as an earlier run's)."""
        from lq.data.io import atomic_open

        callback = trainer.checkpoint_callback
        if self.text and callback is not None and callback.dirpath and trainer.is_global_zero:
            if self.read_alone:  # its resolved config, written before it started
                return
            with atomic_open(Path(callback.dirpath) / CONFIG) as f:
                f.write(self.text)
