"""LightningCLI entry points of every training stage (``lq pretrain``, ``partner``, ``dm``, ``bc``, ``rl``).

Configs merge in order: ``--config conf/poly_encoder.yaml --config conf/pretrain.yaml --config
conf/encoder/general_light.yaml --config conf/profile/tiny/pretrain.yaml`` (the order :attr:`lq.stages.Run.configs`
gives). Runs log to MLflow (``sqlite:///mlflow.db`` unless the config
says otherwise), named after the encoder; the resolved config is the run's ``config.yaml``, beside its checkpoints and
as its MLflow artifact (:class:`LogConfigToMLflow`: Lightning's own config-saving callback
fails with a sqlite tracking URI: Lightning issues 19441 and 20273).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.callbacks.progress.progress_bar import ProgressBar
from lightning.pytorch.cli import LightningArgumentParser, LightningCLI
from lightning.pytorch.loggers import MLFlowLogger

from lq.conf.lengths import length_problems
from lq.conf.resolver import DEFAULT_THREADS, config_names
from lq.data.dataset import dataset_id
from lq.data.outputs import LAST, RETRAIN, mark_finished, mark_trained, replace_run, unfinished
from lq.lit.callbacks import RUN_ID, FiniteLosses, LogProgress, RunInCheckpoint, StageTimer, wants_log_progress

# StageLogger: also here for the config.yaml of runs made before it moved (their logger's class_path names lq.lit.cli)
from lq.lit.loggers import LogConfigToMLflow, StageLogger, end_runs  # noqa: F401
from lq.lit.quiet import quiet_libraries
from lq.stages import KINDS
from lq.stages.llm import model_name
from lq.tracking import (
    DEFAULT_TRACKING_URI,
    RUN_NAME,
    RUN_NOTE,
    commit_tag,
    log_dataset,
    mark_model_training,
    model_tags,
    run_tags,
)


def config_choice(names: Sequence[str], group: str) -> str | None:
    """The last file a run read from a config group of conf/ (``profile``: the folder, overlay over base;
    ``objective``, ``protocol``: the file's stem), or None."""
    chosen = [n.split("/")[1] for n in names if n.startswith(f"{group}/")]
    return Path(chosen[-1]).stem if chosen else None


def _floats(metrics: dict) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items()}


class Interrupted(KeyboardInterrupt):
    """A stage run stopped (Ctrl-C, SIGTERM): its MLflow run ended KILLED; ``last``: the checkpoint it goes on from
    (``--ckpt_path``), None where it saved none."""

    def __init__(self, last: str | None):
        super().__init__(last or "")
        self.last = last


class StageCLI(LightningCLI):
    """A LightningCLI with lq's conventions: MLflow by default, the checkpoint its stage kind keeps, after fitting the
    stage's own work (:meth:`finish`: test, tables, zero-shot evaluation) and where the wall time went. It derives no
    path: the checkpoints' folder, the pretrained encoder, the BC start and the environment's models are settings of
    the run's config (:meth:`lq.stages.Stage.resolve` writes them all into ``RUN_DIR/config.yaml``).

    ``run=False`` builds the model, data and trainer without running: :meth:`fit` then trains (what
    :func:`lq.lit.entry.fit_stage` and ``lq STAGE fit`` do). lq itself never parses a stage's command line to read a
    setting back: a run's configuration is :attr:`lq.stages.Run.config`.
    """

    stage = "pretrain"
    replaces: str | None = None  # the finished run's folder a run trained again beside it replaces (--retrain)

    def __init__(self, *args, **kwargs):
        self.subcommands_run = kwargs.get("run", True)  # LightningCLI's fit/validate/... commands
        kwargs.setdefault("save_config_callback", LogConfigToMLflow)
        kwargs.setdefault("save_config_kwargs", {"overwrite": True})
        kwargs.setdefault(
            "trainer_defaults",
            {
                "logger": {
                    "class_path": "lq.lit.loggers.StageLogger",
                    "init_args": {"experiment_name": f"lq-{self.stage}", "tracking_uri": DEFAULT_TRACKING_URI},
                },
            },
        )
        quiet_libraries()
        kwargs["trainer_defaults"] = {"enable_model_summary": False, **(kwargs.get("trainer_defaults") or {})}
        with warnings.catch_warnings():
            # lq passes ``args`` from its own command line (``lq STAGE fit ...``, the drivers): LightningCLI's warning
            # that ``sys.argv`` holds arguments too is moot here
            warnings.filterwarnings("ignore", message="LightningCLI's args parameter is intended")
            super().__init__(*args, **kwargs)

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        parser.add_argument(
            "--sources",
            type=list[str],
            default=[],
            help="the config files a resolved config (lq.stages.Stage.resolve: RUN_DIR/config.yaml) was merged from, "
            "as conf/ names them: the run's lq.configs tag and profile param",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=DEFAULT_THREADS,
            help="torch's CPU threads for this run (torch.set_num_threads), fixed by the run and logged as a param: "
            "float results depend on it, so a run gives the same figures whatever else shares the machine",
        )
        # read by the pretraining stage; accepted by all so that one profile serves every stage
        parser.add_argument(
            "--tables.max_quests", type=int | None, default=None, help="test quests per Table 4/5 row (all if unset)"
        )
        parser.add_argument("--tables.enabled", type=bool, default=True, help="write the Table 4/5 artifacts")
        if not self.subcommands_run:  # LightningCLI's own fit command has it
            parser.add_argument("--ckpt_path", type=str | None, default=None, help="resume from this checkpoint")
        parser.add_argument(
            "--retrain",
            type=bool,
            default=False,
            help="the checkpoint folder holds a finished run: train in its .retrain/ and put this run in its place "
            "only once it finishes (FORCE=1 on a finished run: lq.stages.families.Trained.retrain_args)",
        )
        parser.add_lightning_class_args(ModelCheckpoint, "checkpoint")
        parser.set_defaults(
            {
                "checkpoint.monitor": "val/hits_at_1",
                "checkpoint.mode": "max",
                "checkpoint.save_last": True,
                # the name of the checkpoint the stage kind keeps (lq.stages: best.ckpt, RL's agent.ckpt); its folder
                # is the run's config's (checkpoint.dirpath: lq stage and lq experiment resolve it)
                "checkpoint.filename": KINDS[self.stage].checkpoint_filename,
                "checkpoint.enable_version_counter": False,  # a run trained again overwrites, never best-v1.ckpt
            }
        )

    def before_instantiate_classes(self) -> None:
        import torch

        self.check_lengths()
        threads = self.stage_config.threads
        if threads < 1:
            raise ValueError(f"--threads {threads}: a run needs at least one CPU thread")
        torch.set_num_threads(threads)

    def check_lengths(self) -> None:
        """Refuse a config whose context lengths an encoder has too few positions for, before anything is built (at
        the first long context a run would fail deep inside, on a GPU without a word): one line per length, naming
        the config file that set it, the field and the fix (:func:`lq.conf.lengths.length_problems`)."""
        config = self.stage_config
        problems = length_problems(self.stage, config.as_dict(), [str(f) for f in config.get("config") or []])
        if problems:
            raise ValueError("\n".join(problems))

    def instantiate_classes(self) -> None:
        super().instantiate_classes()
        callbacks = self.trainer.callbacks
        self.timer = StageTimer()
        callbacks += [self.timer, FiniteLosses(), RunInCheckpoint()]
        if wants_log_progress():  # a file or a pipe: plain lines instead of a bar redrawn in place
            bars = [i for i, c in enumerate(callbacks) if isinstance(c, ProgressBar)]
            for i in bars:
                callbacks[i] = LogProgress()

    @property
    def stage_config(self):
        """The parsed config of this run (of its subcommand where LightningCLI runs one)."""
        return self.config[self.subcommand] if self.subcommand else self.config

    def fit(self) -> dict[str, float]:
        """Train, then the stage's own work after fitting; returns the run's metrics (the last logged, the test and
        evaluation figures, ``time/*_s``). The MLflow run ends FINISHED once all is logged, then :data:`DONE
        <lq.data.outputs.DONE>` is written beside the checkpoint, last; Ctrl-C ends the run KILLED and raises
        KeyboardInterrupt, an error FAILED; neither leaves the marker."""
        try:
            self.before_fit()
            self.describe_run()
            for logger in self.trainer.loggers:  # once every tag is set: this creates the run
                logger.log_hyperparams(self.run_params())
                if isinstance(logger, MLFlowLogger) and logger._initialized:
                    log_dataset(logger.experiment, logger.run_id, self.data_dir)
            self.trainer.fit(self.model, datamodule=self.datamodule, ckpt_path=self.stage_config.ckpt_path)
            if self.trainer.interrupted:
                raise KeyboardInterrupt
            metrics = self.after_fit()
        except (KeyboardInterrupt, SystemExit) as stop:  # Lightning exits on Ctrl-C once it has stopped cleanly
            end_runs(self.trainer.loggers, "KILLED")
            raise Interrupted(self.last_checkpoint()) from stop
        except BaseException:
            end_runs(self.trainer.loggers, "FAILED")
            raise
        end_runs(self.trainer.loggers, "FINISHED")
        self.mark_done()
        return metrics

    def last_checkpoint(self) -> str | None:
        """The last checkpoint this run saved (its folder's ``last.ckpt``), what it goes on from; None before any."""
        callback = self.trainer.checkpoint_callback
        last = Path(callback.dirpath) / LAST if callback is not None and callback.dirpath else None
        return str(last) if last is not None and last.is_file() else None

    def mark_done(self) -> None:
        """The marker that the kept checkpoint's run finished (:func:`lq.data.outputs.mark_finished`); a run trained
        again beside a finished one (``--retrain``) is first put in its place (:func:`lq.data.outputs.replace_run`)."""
        callback = self.trainer.checkpoint_callback
        if callback is None or not callback.best_model_path or not self.trainer.is_global_zero:
            return
        run = next((lg.run_id for lg in self.trainer.loggers if isinstance(lg, MLFlowLogger) and lg._initialized), None)
        kept = Path(callback.best_model_path)
        if self.replaces is not None:
            replace_run(kept.parent, self.replaces)
            kept = Path(self.replaces) / kept.name
        mark_finished(kept, stage=self.stage, run_id=run)

    def mark_trained(self) -> None:
        """The marker that the kept checkpoint holds the run's final weights (:func:`lq.data.outputs.mark_trained`),
        written as its training has ended and before its evaluation, so that a run starting from it need not wait."""
        callback = self.trainer.checkpoint_callback
        if callback is not None and callback.best_model_path and self.trainer.is_global_zero:
            mark_trained(callback.best_model_path, stage=self.stage)

    @property
    def data_dir(self) -> str:
        return self.stage_config.data.data_dir

    @property
    def configs(self) -> list[str]:
        """The config files this run read, in order, as conf/ names them: those its resolved config was merged from
        (``sources``), else those it was given."""
        return list(self.stage_config.get("sources") or []) or config_names(self.stage_config.get("config") or [])

    def run_params(self) -> dict[str, object]:
        """The run's identity as MLflow params, beside its module's hyperparameters (Lightning logs those), so that
        MLflow's compare view shows them: the stage, the encoder, the seed (LightningCLI's ``seed_everything``; the
        agents', their own), the profile, the threads."""
        params: dict[str, object] = {
            "stage": self.stage,
            "encoder": self.stage_config.model.encoder.name,
            "seed": self.stage_config.seed_everything,
            "threads": self.stage_config.threads,
        }
        if profile := config_choice(self.configs, "profile"):
            params["profile"] = profile
        return params

    def description(self) -> str:
        """The run's description (MLflow's ``mlflow.note.content``): what it trains, under which configs."""
        params = self.run_params()
        where = f"; profile {params['profile']}" if "profile" in params else ""
        return f"lq {self.stage}: the {params['encoder']} poly-encoder{where}; {self.described_setup(params)}"

    def described_setup(self, params: dict[str, object]) -> str:
        """The end of every stage's description: its threads, config files and data."""
        threads = params["threads"]
        return (
            f"{threads} CPU thread{'s' * (threads != 1)}. Configs: {', '.join(self.configs) or 'none'}; "
            f"data: {self.data_dir}."
        )

    def before_fit(self) -> None:
        callback = self.trainer.checkpoint_callback
        if callback is not None and callback.dirpath and self.stage_config.retrain:  # beside the finished run
            self.replaces = callback.dirpath
            callback.dirpath = str(Path(callback.dirpath) / RETRAIN)
        if callback is not None and callback.dirpath:  # the folder's checkpoints are this run's from now on
            unfinished(callback.dirpath, fresh=self.stage_config.ckpt_path is None)
        self.continue_run()
        for logger in self.trainer.loggers:
            if isinstance(logger, MLFlowLogger):  # the run is created lazily: tagging it now is in time
                identity = self.identity_tags()
                if logger._run_name is not None:  # a name given (a table's child's short one) is the run's name
                    identity.pop(RUN_NAME, None)
                logger.tags = {**(logger.tags or {}), **run_tags(), **identity}

    def continue_run(self) -> None:
        """A run resumed from a checkpoint (``--ckpt_path``) goes on in the MLflow run that saved it (its id in the
        checkpoint: :class:`lq.lit.callbacks.RunInCheckpoint`), RUNNING again, so that its history is one run's: the
        metrics it logs again for steps that run had logged already are left out (:meth:`StageLogger.continue_run`).
        A checkpoint that names no run of this store starts a new one, and says so."""
        path = self.stage_config.ckpt_path
        loggers = [lg for lg in self.trainer.loggers if isinstance(lg, StageLogger)]
        if path is None or not loggers or not self.trainer.is_global_zero:
            return
        import torch

        run_id = torch.load(path, map_location="cpu", weights_only=False, mmap=True).get(RUN_ID)
        if not (run_id and loggers[0].continue_run(run_id)):
            print(f"{path} names no MLflow run of this store: its run goes on as a new MLflow run", flush=True)

    def identity_tags(self) -> dict[str, str]:
        """Who the run is, as tags (searchable, beside the same values as params): ``lq.stage``, ``lq.encoder``, the
        agents' ``lq.ability``, ``lq.switch``, ``lq.seed``, ``lq.protocol``, RL's ``lq.objective``, and every run's
        ``lq.profile``, ``lq.data``, ``lq.dataset`` (its fingerprint: :func:`dataset_digest`, whole), ``lq.commit`` and
        ``lq.configs`` (its config files, in order)."""
        params = self.run_params()
        tags = {
            f"lq.{key}": str(params[key])
            for key in ("stage", "encoder", "ability", "switch", "seed", "profile", "protocol", "objective")
            if key in params
        }
        return {
            RUN_NAME: self.run_name(),
            **tags,
            "lq.data": str(self.data_dir),
            "lq.dataset": dataset_id(self.data_dir),
            "lq.configs": ",".join(self.configs),
            **commit_tag(),
        }

    def run_name(self) -> str:
        """The MLflow run's name: what it trains and, where a config file chose one, its profile
        ("pretrain-general_light-tiny")."""
        return self.named(f"{self.stage}-{self.stage_config.model.encoder.name}")

    def named(self, name: str) -> str:
        profile = config_choice(self.configs, "profile")
        return f"{name}-{profile}" if profile else name

    def describe_run(self) -> None:
        """Its description (in :meth:`fit`, after :meth:`before_fit`)."""
        for logger in self.trainer.loggers:
            if isinstance(logger, MLFlowLogger) and self.trainer.is_global_zero:
                logger.experiment.set_tag(logger.run_id, RUN_NOTE, self.description())

    def after_fit(self) -> dict[str, float]:
        """What a stage does after fitting (:meth:`finish`), then where the wall time went; returns the metrics."""
        for logger in self.trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                mark_model_training(logger.experiment, logger.experiment_id)
        metrics = _floats(self.trainer.callback_metrics)
        metrics.update(self.finish())
        return metrics | self.timer.report(self.trainer)

    def finish(self) -> dict[str, float]:
        """Test the best checkpoint in the same run, so the MLflow run holds val and test figures."""
        self.mark_trained()
        callback = self.trainer.checkpoint_callback
        ckpt = "best" if callback is not None and callback.best_model_path else None
        # one line of figures, not Lightning's table per test set (their names cut to its column's width)
        results = self.trainer.test(self.model, datamodule=self.datamodule, ckpt_path=ckpt, verbose=False)
        metrics = {k: v for per_loader in results for k, v in _floats(per_loader).items()}
        shown = ", ".join(f"{k} {v:.4f}" for k, v in sorted(metrics.items()))
        print(f"test figures of the {ckpt or 'last'} checkpoint: {shown}")
        return metrics


class PretrainCLI(StageCLI):
    stage = "pretrain"

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.link_arguments("model.encoder.tasks", "data.tasks")
        parser.link_arguments("model.encoder.spec.tokenizer", "data.tokenizer")

    def finish(self) -> dict[str, float]:
        metrics = super().finish()
        if self.stage_config.tables.enabled:
            with self.timer.timed("tables"):
                metrics.update(self.log_tables())
        return metrics

    def log_tables(self) -> dict[str, float]:
        """Tables 4 and 5 of the best checkpoint, as Markdown and CSV artifacts and as metrics (returned)."""
        config = self.stage_config
        metrics = {}
        from lq.lit.timeline_tables import TABLES, timeline_table, to_csv, to_markdown

        for task, title in TABLES.items():
            rows = timeline_table(
                self.model.model,
                self.datamodule.batcher,
                self.datamodule.data_dir,
                task,
                max_quests=config.tables.max_quests,
                batch_size=self.datamodule.eval_batch_size,
            )
            name = {"seq_timeline": "table4_seq_timeline", "boa_timeline": "table5_boa_timeline"}[task]
            markdown = to_markdown(rows, f"{title} ({config.model.encoder.name})")
            print(markdown)
            # the cells as metrics too, so that experiment tables are rebuilt from the store alone
            cells = {
                f"{name.split('_')[0]}/{row['motivations']}/{key}": value
                for row in rows
                for key, value in row.items()
                if key not in ("motivations", "examples") and value == value  # not NaN
            }
            metrics.update(cells)
            for logger in self.trainer.loggers:
                if isinstance(logger, MLFlowLogger):
                    logger.experiment.log_text(logger.run_id, markdown, f"tables/{name}.md")
                    logger.experiment.log_text(logger.run_id, to_csv(rows), f"tables/{name}.csv")
                    logger.log_metrics(cells)
        return metrics


class EnvModelCLI(StageCLI):
    """The environment's poly-encoders (the partner, the Dungeon Master): the stage config fixes the task;
    the encoder config gives only the starting point."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.link_arguments("model.encoder.spec.tokenizer", "data.tokenizer")


class PartnerCLI(EnvModelCLI):
    stage = "partner"


class DungeonMasterCLI(EnvModelCLI):
    stage = "dm"


class AgentCLI(StageCLI):
    """The agent stages (``lq bc``, ``lq rl``): the frozen encoder comes from the pretraining run named by the encoder
    config, checkpoints go per configuration and seed, and fitting ends with the zero-shot evaluation."""

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.add_argument("--eval_seeds", type=int, default=1, help="zero-shot evaluations after fitting")
        parser.add_argument(
            "--zero_shot",
            choices=["all", "reported", "none"],
            default="all",
            help="all: the validation quests, the test quests under both decodings and the demonstrations read "
            "teacher-forced; reported: the test quests under the protocol's decoding alone, what Table 1 reads (the "
            "quick profile's; an experiment whose tables read more passes all; an RL run's budgets evaluate all); "
            "none: no episode after fitting (a language model's quests cost CPU minutes each: lq eval --quests N "
            "plays the kept checkpoint later)",
        )

    @property
    def data_dir(self) -> str:
        return self.stage_config.model.env.data_dir

    def identity_tags(self) -> dict[str, str]:
        """A stage run's identity and the environment models the agent played: ``lq.partner`` and ``lq.dm``
        (:func:`model_tags`)."""
        return {**super().identity_tags(), **model_tags(self.model.env_spec)}

    def run_params(self) -> dict[str, object]:
        """The stage's params, with the agent's identity (ability, switch, seed, protocol; RL's objective: the
        conf/objective/ file it read, else "none": the module's defaults), its environment (``env/...``), its sizes
        (``agent/...``) and RL's loss coefficients (``coefficients/...``)."""
        model = self.stage_config.model
        params = {
            **super().run_params(),
            "ability": model.ability,
            "switch": model.switch,
            "seed": model.seed,
            "protocol": self.model.protocol.name,
            "env": self.model.env_spec.as_dict(),  # env/data_dir, env/protocol/choice, env/objects, ...
            "agent": model.agent.as_dict() if model.agent is not None else {},
        }
        if self.stage == "rl":
            params["objective"] = config_choice(self.configs, "objective") or "none"  # the module's defaults
            params["coefficients"] = model.coefficients.as_dict()
        return params

    def description(self) -> str:
        p = self.run_params()
        objective = f"; the {p['objective']} objective" if "objective" in p else ""
        profile = f"; profile {p['profile']}" if "profile" in p else ""
        return (
            f"lq {self.stage}: {self.trains(p)}, ability {p['ability']}, {p['switch']} switch, seed {p['seed']}; the "
            f"{p['protocol']} protocol{objective}{profile}; {self.described_setup(p)}"
        )

    def trains(self, params: dict[str, object]) -> str:
        """What the run trains, as its description opens (``params``: :meth:`run_params`)."""
        return f"a {self.stage.upper()} agent on the {params['encoder']} encoder"

    def reads(self) -> str:
        """What the agent reads with, as its run's name says it: its encoder's name."""
        return self.stage_config.model.encoder.name

    def run_name(self) -> str:
        model = self.stage_config.model
        return self.named(f"{self.stage}-{self.reads()}-{model.ability}-{model.switch}-s{model.seed}")

    def finish(self) -> dict[str, float]:
        self.mark_trained()  # RL's after it kept the weights chosen on validation (RLCLI.finish)
        with self.timer.timed("evaluation"):
            metrics = self.evaluate()
        if self.stage == "rl":
            self.log_curves()
        return metrics

    def evaluate(self) -> dict[str, float]:
        """Zero-shot episodes of the kept checkpoint under its protocol, once per evaluation seed: on the validation
        quests (``val/...``: the protocol's decoding; what defaults are chosen by) and on the test quests (``test/...``,
        and ``test_greedy/...`` or ``test_sampled/...``: the other decoding beside it: what is reported), and the test
        transcripts; then the demonstrations read teacher-forced (``demos/...``); with ``--zero_shot reported``, the
        test quests under the protocol's decoding alone (:func:`lq.eval.zero_shot`), with ``none`` no episode (the
        kept checkpoint only tagged); returns the rates' means over the evaluation seeds."""
        from lq.eval import other_decoding, transcripts_html, zero_shot, zero_shot_lines

        config = self.stage_config
        callback = self.trainer.checkpoint_callback
        module = self.model
        kept = callback.best_model_path if callback is not None else ""  # evaluate the checkpoint that was kept
        if kept:
            for logger in self.trainer.loggers:  # where it is: lq export, and the driver's --log-model, find it
                if isinstance(logger, MLFlowLogger):
                    logger.experiment.set_tag(logger.run_id, "lq.checkpoint", str(Path(kept).resolve()))
        if config.zero_shot == "none":
            return {}
        if kept:
            from lq.lit.checkpoints import load_agent

            # read onto the CPU, played where the run trained (its partner and DM built there too: eval_env)
            module = load_agent(kept).to(self.trainer.strategy.root_device)
        rates: list[dict[str, float]] = []
        test_played = {}  # by evaluation seed and decoding: kept beside the checkpoint for lq eval (make rl's table)
        reported = config.zero_shot == "reported"
        for seed in range(config.eval_seeds):
            played = zero_shot(module, seed, reported)
            result = played["test"]
            other = other_decoding(module.protocol)
            test_played[seed] = {module.protocol.decoding: result}
            if f"test_{other}" in played:
                test_played[seed][other] = played[f"test_{other}"]
            print("\n".join(zero_shot_lines(played, module.protocol, seed)))
            rates.append(result.metrics("test/"))
            for logger in self.trainer.loggers:
                if isinstance(logger, MLFlowLogger):
                    logger.log_metrics({k: v for name, r in played.items() for k, v in r.metrics(f"{name}/").items()},
                                       step=seed)  # fmt: skip
                    logger.experiment.log_text(logger.run_id, result.transcripts(), f"transcripts/test_seed{seed}.txt")
                    page = transcripts_html(
                        result.ordered(), f"{module.stage.upper()} {module.encoder_name}, test, seed {seed}"
                    )
                    logger.experiment.log_text(logger.run_id, page, f"transcripts/test_seed{seed}.html")
        if test_played and kept and self.trainer.is_global_zero:
            from lq.lit.checkpoints import record_played

            record_played(kept, module.protocol.name, test_played)
        read = {} if reported else module.demonstration_metrics()  # teacher-forced: the same whatever the seed
        for logger in self.trainer.loggers:
            logger.log_metrics(read, step=0)
        return {k: sum(r[k] for r in rates) / len(rates) for k in rates[0]} if rates else {}

    def log_curves(self) -> None:
        """The run's own learning curves as ``curves/rl.png`` in MLflow."""
        import tempfile

        from lq.eval import CURVES, plot_curves, run_series

        for logger in self.trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                series = {"this run": [run_series(logger.experiment, logger.run_id, CURVES["rl"])]}
                with tempfile.TemporaryDirectory() as tmp:
                    path = f"{tmp}/rl.png"
                    if plot_curves(series, CURVES["rl"], path, f"RL learning curves ({logger.run_id[:8]})"):
                        logger.experiment.log_artifact(logger.run_id, path, "curves")


class BCCLI(AgentCLI):
    """``lq bc fit``: behaviour cloning on the training demonstrations; the best checkpoint by ``val/loss``."""

    stage = "bc"

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.set_defaults({"checkpoint.monitor": "val/loss", "checkpoint.mode": "min"})


class LanguageModelBCCLI(BCCLI):
    """``lq llm_bc fit``: a language model's LoRA adapters trained on the training demonstrations
    (:class:`lq.lit.llm_bc.LanguageModelBCModule`); the best checkpoint by ``val/loss``. Its runs name the model as
    their encoder (param ``encoder``, beside the module's ``llm``: the ``model.llm`` it was given)."""

    stage = "llm_bc"

    def run_params(self) -> dict[str, object]:
        """An agent stage's, its encoder the model (``llm``, ``lora_rank`` ...: the module's hyperparameters)."""
        return {**super().run_params(), "encoder": self.stage_config.model.llm}

    def trains(self, params: dict[str, object]) -> str:
        model = self.stage_config.model
        return f"LoRA behaviour cloning of the language model {model.llm} (rank {model.lora_rank})"

    def reads(self) -> str:
        return model_name(str(self.stage_config.model.llm))


class RLCLI(AgentCLI):
    """``lq rl fit``: the switch A2C agent; its last weights are the agent, or with ``model.select_every`` the weights
    chosen on the validation quests (:meth:`keep_chosen`). ``model.bc_checkpoint``, the BC agent of the same
    configuration and seed (its run's resolved config names it: :meth:`lq.stages.Stage.resolve`), is what
    ``--model.init_from bc`` (conf/objective/lq.yaml's) starts from."""

    stage = "rl"

    def finish(self) -> dict[str, float]:
        self.keep_chosen()
        return super().finish()

    def keep_chosen(self) -> None:
        """Where the run chose its agent on the validation quests (:class:`lq.lit.selection.ValidationSelection`):
        ``best.ckpt`` becomes the run's agent (``agent.ckpt``, copied whole then renamed), so that its evaluation, its
        table and a run that starts from it read the chosen weights; ``last.ckpt`` stays the last, to resume from. A
        ``best.ckpt`` missing, or saved at other interactions than the choice (a resume that did not retrace the run),
        is not copied: the last weights stay the agent, with a warning."""
        import torch

        from lq.data.io import atomic_open
        from lq.lit.selection import BEST

        callback = self.trainer.checkpoint_callback
        chosen = self.model.chosen()
        if chosen is None or callback is None or not callback.best_model_path or not self.trainer.is_global_zero:
            return
        best = Path(callback.best_model_path).parent / BEST
        saved = torch.load(best, map_location="cpu", weights_only=False) if best.is_file() else {}
        if (saved.get("lq_chosen") or {}).get("interactions") != chosen[0]:
            warnings.warn(f"{best}: not the weights chosen at {chosen[0]} interactions; the agent is the last weights",
                          stacklevel=2)  # fmt: skip
            return
        with atomic_open(callback.best_model_path, "wb") as f:
            f.write(best.read_bytes())
        for logger in self.trainer.loggers:
            if isinstance(logger, MLFlowLogger):
                logger.experiment.set_tag(logger.run_id, "lq.chosen_interactions", str(chosen[0]))
        print(f"the agent: the weights at {chosen[0]} interactions, chosen on the validation quests ({best})")

    def add_arguments_to_parser(self, parser: LightningArgumentParser) -> None:
        super().add_arguments_to_parser(parser)
        parser.set_defaults({"checkpoint.monitor": None})
