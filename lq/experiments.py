"""The paper's ablation tables end to end, tracked in MLflow (Tables 1, 2, 4, 5, 7; Figures 5, 13 to 17).

An experiment is a set of tables whose cells are metrics of stage runs (``lq rl fit``, ``lq bc fit``,
``lq pretrain fit``). :func:`run_experiment` opens a *parent* MLflow run, trains every configuration the
tables need once per seed as a *child* run (a subprocess of the stage's CLI, tagged
``mlflow.parentRunId``), then calls :func:`build_tables`, which reads the children back from the store
and logs on the parent each table as Markdown and CSV (mean ± std over seeds) and the learning curves
as PNG. ``lq experiment tables`` calls the same :func:`build_tables` on the latest parent run of each
experiment: the tables come from the store alone, with no training.

What the agent stages need and the store lacks is made first, outside the parent run and reused by
every experiment: the dataset, the environment's partner and Dungeon Master, and the pretrained
encoders (``general`` before ``adaptive``).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lq.data.io import atomic_open
from lq.eval import cell, markdown_table, mean_std_of, plot_curves, run_series
from lq.lit.cli import DEFAULT_TRACKING_URI

ENCODERS = ("scratch", "general", "light", "general_light", "adaptive")
ENCODER_TITLES = {
    "scratch": "Scratch",
    "general": "General",
    "light": "Light",
    "general_light": "General+Light",
    "adaptive": "Adaptive",
}
ABILITY_TITLES = {
    "act_speech": "Act+Speech",
    "act": "Act Only",
    "speech": "Speech Only",
    "speech_no_speech_goals": "Speech Only, no speech goals",
}
SWITCH_TITLES = {"ratio": "Learned switch", "hardcoded": "Hardcoded switch"}
GOALS = (
    ("Act goals", "test/act_goal_rate"),
    ("Speech goals", "test/speech_goal_rate"),
    ("Act & Speech", "test/act_and_speech_goal_rate"),
)
TIMELINE_COLUMNS = (
    ("All Hits@1", "all_hits_at_1"),
    ("All Hits@5", "all_hits_at_5"),
    ("All Hits@10", "all_hits_at_10"),
    ("Easiest Hits@1", "easiest_hits_at_1"),
    ("Leave easiest out Hits@1", "leave_easiest_out_hits_at_1"),
)
MOTIVATION_TITLES = {"none": "No motivations", "short": "Short motivations", "long_mid": "Long & mid motivations"}
# what each stage's learning curves plot (Figures 5 and 15 to 17 for RL, 13 and 14 for pretraining)
CURVES = {
    "rl": ("rl/act_goal_rate", "rl/speech_goal_rate", "rl/return"),
    "bc": ("val/loss", "val/action_accuracy"),
    "pretrain": ("val/hits_at_1",),
}


@dataclass(frozen=True)
class Config:
    """One configuration of a stage: trained once per seed, each a child run."""

    stage: str  # "rl", "bc" or "pretrain" (and "partner", "dm": the environment's models)
    encoder: str
    ability: str = "act_speech"
    switch: str = "hardcoded"

    @property
    def key(self) -> str:
        if self.stage == "pretrain":
            return f"pretrain-{self.encoder}"
        return f"{self.stage}-{self.encoder}-{self.ability}-{self.switch}"


@dataclass(frozen=True)
class Cell:
    config: Config
    metric: str


@dataclass
class Table:
    name: str  # artifact name: tables/<name>.md and .csv
    title: str
    rows: list[tuple[str, dict[str, Cell]]]  # row title -> column title -> cell

    @property
    def configs(self) -> list[Config]:
        return list(dict.fromkeys(c.config for _, cells in self.rows for c in cells.values()))


@dataclass
class Experiment:
    name: str  # also the MLflow experiment name, lq-<name>
    title: str
    tables: list[Table]
    encoders: Sequence[str] = ()
    configs: list[Config] = field(init=False)

    def __post_init__(self) -> None:
        self.configs = list(dict.fromkeys(c for t in self.tables for c in t.configs))


def _check_encoders(encoders: Sequence[str]) -> None:
    unknown = [e for e in encoders if e not in ENCODERS]
    if unknown:
        raise ValueError(f"unknown encoder {', '.join(unknown)}: choose from {', '.join(ENCODERS)}")


def table1(encoders: Sequence[str] = ENCODERS) -> Experiment:
    """Encoder types: RL act, speech, act & speech goals and BC act & speech goals (paper Table 1)."""
    _check_encoders(encoders)
    rows = []
    for e in encoders:
        cells = {f"RL {title}": Cell(Config("rl", e), metric) for title, metric in GOALS}
        cells["BC Act & Speech"] = Cell(Config("bc", e), "test/act_and_speech_goal_rate")
        rows.append((ENCODER_TITLES[e], cells))
    return Experiment("table1", "Table 1: encoder types", [Table("table1", "Table 1: encoder types", rows)], encoders)


def table2(encoders: Sequence[str] = ("scratch", "adaptive")) -> Experiment:
    """Ability types: act and speak, act only, speak only, speak only without speech goals (paper Table 2)."""
    _check_encoders(encoders)
    rows = [
        (
            title,
            {
                f"{ENCODER_TITLES[e]} {g}": Cell(Config("rl", e, ability=ability), metric)
                for e in encoders
                for g, metric in GOALS
            },
        )
        for ability, title in ABILITY_TITLES.items()
    ]
    return Experiment("table2", "Table 2: ability types", [Table("table2", "Table 2: ability types", rows)], encoders)


def table7(encoders: Sequence[str] = ("scratch", "adaptive")) -> Experiment:
    """Switch types: the learned ratio switch and the hardcoded one (paper Table 7, Figures 16 and 17)."""
    _check_encoders(encoders)
    rows = [
        (
            f"{ENCODER_TITLES[e]}, {title}",
            {g: Cell(Config("rl", e, switch=switch), metric) for g, metric in GOALS},
        )
        for e in encoders
        for switch, title in SWITCH_TITLES.items()
    ]
    return Experiment("table7", "Table 7: switch types", [Table("table7", "Table 7: switch types", rows)], encoders)


def table45(encoders: Sequence[str] = ("general", "light", "general_light", "adaptive")) -> Experiment:
    """Supervised timeline prediction, Hits@k of 100 (paper Tables 4 and 5, Figures 13 and 14)."""
    _check_encoders(encoders)
    if "scratch" in encoders:
        raise ValueError("Tables 4/5 compare pretrained encoders: scratch is not pretrained")
    tables = []
    for name, title in (
        ("table4", "Table 4: sequential timeline prediction"),
        ("table5", "Table 5: bag-of-actions timeline prediction"),
    ):
        rows = [
            (
                f"{ENCODER_TITLES[e]}, {mtitle}",
                {ctitle: Cell(Config("pretrain", e), f"{name}/{m}/{col}") for ctitle, col in TIMELINE_COLUMNS},
            )
            for e in encoders
            for m, mtitle in MOTIVATION_TITLES.items()
        ]
        tables.append(Table(name, title, rows))
    return Experiment("table45", "Tables 4 and 5: supervised timeline prediction", tables, encoders)


EXPERIMENTS: dict[str, Callable[..., Experiment]] = {
    "table1": table1,
    "table2": table2,
    "table7": table7,
    "table45": table45,
}


# -- running ---------------------------------------------------------------------------------------


def outputs_for(data_dir: str | Path) -> str:
    """Where a dataset's checkpoints go: ``outputs/`` for the default data, ``outputs/<folder name>/`` for any other
    (the Makefile's OUT), so that a partner, DM or agent trained on one dataset is never picked up for another."""
    return "outputs" if Path(data_dir) == Path("data/default") else f"outputs/{Path(data_dir).resolve().name}"


@dataclass
class Setup:
    """Where things are and how big they are trained."""

    profile: str = "tiny"
    seeds: Sequence[int] = (0, 1, 2)
    data_dir: str = "data/default"
    tracking_uri: str = DEFAULT_TRACKING_URI
    outputs: str = ""  # default: outputs_for(data_dir)
    eval_seeds: int = 1
    extra_args: dict[str, Sequence[str]] = field(default_factory=dict)  # per stage ("rl", ...; "*": every stage)

    def __post_init__(self) -> None:
        self.outputs = self.outputs or outputs_for(self.data_dir)

    @property
    def env_encoder(self) -> str:
        """The environment's partner and DM: small poly-encoders on the CPU profile, MiniLM-sized otherwise."""
        return "small" if self.profile == "tiny" else "general"

    def profile_config(self, stage: str) -> str:
        if stage in ("rl", "bc"):
            name = f"{stage}-{self.profile}"
        else:
            name = f"env-{self.profile}" if stage in ("partner", "dm") else self.profile
        path = Path("conf/profile") / f"{name}.yaml"
        if not path.exists():
            raise FileNotFoundError(f"{path}: no such profile for the {stage} stage (PROFILE={self.profile})")
        return str(path)


def _print(text: str) -> None:
    print(text, flush=True)  # in order with the children's output when stdout is a file


def _lq(*args: str) -> None:
    """Run ``python -m lq ARGS`` and fail loudly with the command if it fails."""
    cmd = [sys.executable, "-m", "lq", *args]
    _print("$ " + " ".join(cmd))
    done = subprocess.run(cmd, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"exit status {done.returncode}: {' '.join(cmd)}")


def stage_args(config: Config, setup: Setup, seed: int, out_dir: str | None = None) -> list[str]:
    """The command line of one stage run (``lq STAGE fit ...``) of ``config`` with ``seed``."""
    stage = config.stage
    args = [
        stage,
        "fit",
        "--config",
        f"conf/{stage}.yaml",
        "--config",
        f"conf/encoder/{config.encoder}.yaml",
        "--config",
        setup.profile_config(stage),
        "--seed_everything",
        str(seed),
        "--trainer.logger.init_args.tracking_uri",
        setup.tracking_uri,
        "--out_dir",
        out_dir or f"{setup.outputs}/{stage}",
    ]
    if stage in ("pretrain", "partner", "dm"):  # the poly-encoder stages read a DataModule
        args += ["--data.data_dir", setup.data_dir]
    else:
        args += [
            "--model.data_dir",
            setup.data_dir,
            "--model.ability",
            config.ability,
            "--model.switch",
            config.switch,
            "--model.seed",
            str(seed),
            "--eval_seeds",
            str(setup.eval_seeds),
            "--pretrain_dir",
            f"{setup.outputs}/pretrain",
            "--model.partner_checkpoint",
            f"{setup.outputs}/partner/{setup.env_encoder}/best.ckpt",
            "--model.dm_checkpoint",
            f"{setup.outputs}/dm/{setup.env_encoder}/best.ckpt",
        ]
    return args + [*setup.extra_args.get("*", ()), *setup.extra_args.get(stage, ())]


def prepare(configs: Sequence[Config], setup: Setup) -> None:
    """Make what the configurations need and the outputs lack: data, partner, DM, pretrained encoders."""
    if not (Path(setup.data_dir) / "manifest.json").exists():
        _lq("data", "generate", setup.data_dir)
    if any(c.stage != "pretrain" for c in configs):
        for stage in ("partner", "dm"):
            if not Path(f"{setup.outputs}/{stage}/{setup.env_encoder}/best.ckpt").exists():
                _lq(*stage_args(Config(stage, setup.env_encoder), setup, 0))
    needed = {c.encoder for c in configs if c.stage != "pretrain" and c.encoder != "scratch"}
    if "adaptive" in needed:
        needed.add("general")
    for encoder in sorted(needed, key=ENCODERS.index):  # general before adaptive
        if not Path(f"{setup.outputs}/pretrain/{encoder}/best.ckpt").exists():
            _lq(*stage_args(Config("pretrain", encoder), setup, 0), *_init_from(encoder, f"{setup.outputs}/pretrain"))


def _init_from(encoder: str, pretrain_dir: str) -> list[str]:
    return ["--model.encoder.init_from", f"{pretrain_dir}/general/best.ckpt"] if encoder == "adaptive" else []


def _client(tracking_uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri)


def experiment_id(client, name: str) -> str:
    """The MLflow experiment ``lq-<name>`` (created if missing), marked for model training so that the UI opens on
    its runs table."""
    found = client.get_experiment_by_name(f"lq-{name}")
    exp_id = found.experiment_id if found is not None else client.create_experiment(f"lq-{name}")
    client.set_experiment_tag(exp_id, "mlflow.experimentKind", "custom_model_development")
    return exp_id


def parent_runs(client, name: str, where: str = "") -> list:
    """Parent runs of experiment ``name``, newest first; ``where``: more of an MLflow filter ("and ...")."""
    found = client.get_experiment_by_name(f"lq-{name}")
    if found is None:
        return []
    return client.search_runs(
        [found.experiment_id],
        filter_string=f"tags.`lq.role` = 'parent' {where}",
        order_by=["attributes.start_time DESC"],
    )


def resumable_parent(client, experiment: Experiment, setup: Setup) -> str | None:
    """The newest parent run of ``experiment`` with ``setup``'s profile that did not finish (None if none)."""
    runs = parent_runs(client, experiment.name, f"and tags.`lq.profile` = '{setup.profile}'")
    unfinished = [r for r in runs if r.info.status != "FINISHED"]
    return unfinished[0].info.run_id if unfinished else None


def _reopen(client, pid: str, experiment: Experiment, setup: Setup) -> set[tuple[str, str]]:
    """Reopen an unfinished parent: check it ran the same seeds and encoders, mark its children that died
    unfinished as KILLED, and return the (configuration, seed) pairs whose children finished."""
    run = client.get_run(pid)
    params = run.data.params
    for key, wanted in (("seeds", " ".join(map(str, setup.seeds))), ("encoders", " ".join(experiment.encoders))):
        if params.get(key) != wanted:
            raise ValueError(
                f"parent run {pid} ran {key} '{params.get(key)}', not '{wanted}': resume with the same "
                f"{key}, or run without --resume for a new parent"
            )
    for child in client.search_runs([run.info.experiment_id], filter_string=f"tags.mlflow.parentRunId = '{pid}'"):
        if child.info.status == "RUNNING":  # its process is gone: it will be trained again
            client.set_terminated(child.info.run_id, "KILLED")
    client.update_run(pid, status="RUNNING")
    return {(r.data.tags.get("lq.config"), r.data.tags.get("lq.seed")) for r in children(client, pid)}


def run_experiment(
    experiment: Experiment, setup: Setup, log: Callable[[str], None] = _print, resume: bool = False
) -> tuple[str, dict[str, tuple[str, str]]]:
    """Train every configuration of ``experiment`` per seed as children of a parent run, then build its tables;
    returns the parent's run id and the tables (Markdown, CSV). ``resume``: continue the newest unfinished parent
    of this experiment and profile (an interrupted run), training only the children that did not finish."""
    prepare(experiment.configs, setup)
    client = _client(setup.tracking_uri)
    exp_id = experiment_id(client, experiment.name)
    pid = resumable_parent(client, experiment, setup) if resume else None
    done: set[tuple[str, str]] = set()
    if pid is not None:
        done = _reopen(client, pid, experiment, setup)
        log(f"[{experiment.name}] resuming parent run {pid}: {len(done)} children finished before")
    else:
        if resume:
            log(f"[{experiment.name}] no unfinished parent run to resume: starting a new one")
        parent = client.create_run(
            exp_id,
            run_name=f"{experiment.name}-{setup.profile}",
            tags={"lq.experiment": experiment.name, "lq.profile": setup.profile, "lq.role": "parent"},
        )
        pid = parent.info.run_id
        client.log_param(pid, "seeds", " ".join(map(str, setup.seeds)))
        client.log_param(pid, "encoders", " ".join(experiment.encoders))
        client.log_param(pid, "configurations", len(experiment.configs))
    try:
        for config in experiment.configs:
            for seed in setup.seeds:
                if (config.key, str(seed)) in done:
                    continue
                log(f"[{experiment.name}] {config.key} seed {seed}")
                tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
                out_dir = None
                extra: list[str] = []
                if config.stage == "pretrain":  # one encoder per seed, kept apart from the agents' encoders
                    out_dir = f"{setup.outputs}/experiments/{experiment.name}/seed-{seed}"
                    extra = _init_from(config.encoder, out_dir)
                _lq(
                    *stage_args(config, setup, seed, out_dir),
                    *extra,
                    "--trainer.logger.init_args.experiment_name",
                    f"lq-{experiment.name}",
                    "--trainer.logger.init_args.tags",
                    json.dumps(tags),
                )
        tables = build_tables(experiment, pid, setup.tracking_uri, log)
    except BaseException:
        client.set_terminated(pid, "FAILED")
        raise
    client.set_terminated(pid, "FINISHED")
    return pid, tables


# -- tables from the store ---------------------------------------------------------------------------


def children(client, parent_id: str) -> list:
    exp_id = client.get_run(parent_id).info.experiment_id
    return client.search_runs(
        [exp_id], filter_string=f"tags.mlflow.parentRunId = '{parent_id}' and attributes.status = 'FINISHED'"
    )


def cell_values(client, runs: Sequence, cell: Cell) -> list[float]:
    """The cell's metric in each seed's child run (a metric logged several times, e.g. one zero-shot evaluation
    per evaluation seed, counts as its mean)."""
    values = [
        metric_mean(client, run, cell.metric) for run in runs if run.data.tags.get("lq.config") == cell.config.key
    ]
    return [v for v in values if v is not None]


def metric_mean(client, run, metric: str) -> float | None:
    """The mean of every value ``run`` logged for ``metric`` (None if it logged none)."""
    history = [m.value for m in client.get_metric_history(run.info.run_id, metric)]
    return statistics.fmean(history) if history else None


def best_agent(client, runs: Sequence):
    """The agent child run (RL or BC) with the best zero-shot test results: act & speech goals, then act goals, then
    speech goals; None if no agent child was evaluated."""
    scored = []
    for run in runs:
        if run.data.tags.get("lq.config", "").split("-")[0] not in ("rl", "bc"):
            continue
        score = tuple(metric_mean(client, run, metric) for _, metric in (GOALS[2], GOALS[0], GOALS[1]))
        if None not in score:
            scored.append((score, run))
    return max(scored, key=lambda x: x[0])[1] if scored else None


def log_best_transcripts(client, runs: Sequence, parent_id: str, tmp: str) -> str | None:
    """Copy the best agent's zero-shot test transcripts (first evaluation seed) onto the parent as
    ``transcripts/best_agent.txt``, under a line naming the run; returns that line (None without transcripts)."""
    best = best_agent(client, runs)
    if best is None:
        return None
    run_id = best.info.run_id
    name = "transcripts/test_seed0.txt"
    if name not in {a.path for a in client.list_artifacts(run_id, "transcripts")}:
        return None
    text = Path(client.download_artifacts(run_id, name, tmp)).read_text()
    rates = ", ".join(f"{title.lower()} {metric_mean(client, best, metric):.3f}" for title, metric in GOALS)
    line = (
        f"Best agent: {best.data.tags['lq.config']} seed {best.data.tags.get('lq.seed', '?')} (run {run_id}), "
        f"zero-shot test: {rates}"
    )
    client.log_text(parent_id, f"{line}\n\n{text}", "transcripts/best_agent.txt")
    return line


def render(table: Table, values: dict[tuple[str, str], list[float]]) -> tuple[str, str]:
    """Markdown (mean ± std, and the number of seeds) and CSV of a table; a cell without runs reads "n/a"."""
    columns = list(dict.fromkeys(c for _, cells in table.rows for c in cells))
    md_rows, csv = [], ["row," + ",".join(f'"{c} mean","{c} std"' for c in columns) + ",seeds"]
    for row, cells in table.rows:
        shown, numbers, seeds = [], [], []
        for column in columns:
            got = values.get((row, column), []) if column in cells else []
            seeds.append(len(got))
            if got:
                mean, std = mean_std_of(got)
                shown.append(cell(mean, std))
                numbers += [f"{mean:.4f}", f"{std:.4f}"]
            else:
                shown.append("n/a")
                numbers += ["", ""]
        n = min(s for s in seeds) if seeds else 0
        md_rows.append([row, *shown, str(n)])
        csv.append(f'"{row}",' + ",".join(numbers) + f",{n}")
    md = [f"**{table.title}** (mean ± std over seeds)", "", *markdown_table(["", *columns, "seeds"], md_rows)]
    return "\n".join(md) + "\n", "\n".join(csv) + "\n"


def curves_png(client, experiment: Experiment, runs: Sequence, stage: str, path: Path) -> bool:
    """The learning curves of ``stage``'s configurations (mean over seeds, shaded ± std) as one PNG; False if none."""
    configs = [c for c in experiment.configs if c.stage == stage]
    series = {
        config.key: [
            run_series(client, r.info.run_id, CURVES[stage]) for r in runs if r.data.tags.get("lq.config") == config.key
        ]
        for config in configs
    }
    return plot_curves(series, CURVES[stage], path, f"{experiment.title}: {stage} learning curves")


def build_tables(
    experiment: Experiment,
    parent_id: str,
    tracking_uri: str = DEFAULT_TRACKING_URI,
    log: Callable[[str], None] = _print,
) -> dict[str, tuple[str, str]]:
    """Read the parent's children from the store and log on the parent ``tables/<name>.md``/``.csv``,
    ``curves/<stage>.png`` and the best agent's ``transcripts/best_agent.txt``; returns each table's Markdown and
    CSV."""
    client = _client(tracking_uri)
    runs = children(client, parent_id)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for table in experiment.tables:
            values = {
                (row, column): cell_values(client, runs, cell)
                for row, cells in table.rows
                for column, cell in cells.items()
            }
            md, csv = render(table, values)
            client.log_text(parent_id, md, f"tables/{table.name}.md")
            client.log_text(parent_id, csv, f"tables/{table.name}.csv")
            log(md)
            out[table.name] = (md, csv)
        for stage in CURVES:
            path = Path(tmp) / f"{stage}.png"
            if curves_png(client, experiment, runs, stage, path):
                client.log_artifact(parent_id, str(path), "curves")
        line = log_best_transcripts(client, runs, parent_id, tmp)
        if line is not None:
            log(f"{line}; its test episodes: transcripts/best_agent.txt on the parent run")
    return out


def latest_parent(tracking_uri: str, name: str) -> str | None:
    """The newest finished parent run of experiment ``name`` in the store, if any."""
    runs = parent_runs(_client(tracking_uri), name, "and attributes.status = 'FINISHED'")
    return runs[0].info.run_id if runs else None


def experiment_for(client, parent_id: str) -> Experiment:
    """The experiment a parent run ran, with the encoders its children used."""
    run = client.get_run(parent_id)
    name = run.data.tags.get("lq.experiment")
    if name not in EXPERIMENTS:
        raise ValueError(f"run {parent_id} is not an lq experiment's parent run (tag lq.experiment={name!r})")
    encoders = run.data.params.get("encoders")
    return EXPERIMENTS[name](*([encoders.split()] if encoders else []))


def write_local(tables: dict[str, tuple[str, str]], out_dir: str | Path) -> None:
    """Also keep the tables as files (written to a temporary file, then renamed)."""
    for name, (md, csv) in tables.items():
        for suffix, text in ((".md", md), (".csv", csv)):
            with atomic_open(Path(out_dir) / f"{name}{suffix}", "w", encoding="utf-8") as f:
                f.write(text)
