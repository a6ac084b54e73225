"""Tables, curves and the best agent's transcripts from the MLflow store alone: each cell the mean ± std over a
parent run's children, logged on the parent as Markdown, CSV and metrics."""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from lq.data.io import atomic_open
from lq.envs.protocol import RANKED_RATES, protocol_of
from lq.experiments.specs import (
    BUDGET_TITLES,
    BUDGETS,
    EXPERIMENTS,
    GENERALISATION_BUDGETS,
    GENERALISATION_RUNS,
    GOALS,
    LONG_BUDGET,
    VALIDATION_GOALS,
    WORLDS_GOALS,
    Cell,
    Experiment,
    Table,
    generalisation_bc,
    objectives_of,
)
from lq.results import CURVES, budget_label, cell, markdown_table, mean_std_of, plot_budget, plot_curves, run_series
from lq.tracking import (
    DEFAULT_TRACKING_URI,
    EXPERIMENT_VIEW,
    RUN_NOTE,
    VIEWS,
    ensure_experiment,
    init_store,
    mark_model_training,
    save_view,
    stored,
)


def _print(text: str) -> None:
    print(text, flush=True)  # in order with the children's output when stdout is a file


def _client(tracking_uri: str):
    from mlflow.tracking import MlflowClient

    init_store(tracking_uri)
    return MlflowClient(tracking_uri)


def experiment_id(client, name: str) -> str:
    """The MLflow experiment ``lq-<name>`` (created if missing), marked for model training so that the UI opens on
    its runs table."""
    return ensure_experiment(client, f"lq-{name}")


def parent_description(run) -> str:
    """A parent run's description (MLflow's ``mlflow.note.content``): which experiment (its title), under which
    profile, protocol, objective and data, with which seeds, where its children and tables are."""
    tags, params = run.data.tags, run.data.params
    name = tags.get("lq.experiment", "")
    try:
        title = EXPERIMENTS[name](objective=tags.get("lq.objective")).title
    except (KeyError, TypeError, ValueError):  # an experiment lq no longer has, or not under this objective
        title = name
    seeds = params.get("seeds", "?").split()
    return (
        f"lq experiment {name}: {title}. Profile {tags.get('lq.profile', '?')}, protocol "
        f"{tags.get('lq.protocol', '?')}, RL objective {tags.get('lq.objective', '?')}, data "
        f"{tags.get('lq.data', '?')}; {params.get('configurations', '?')} configurations x {len(seeds)} seed"
        f"{'s' * (len(seeds) != 1)} ({' '.join(seeds)}). Its children are the runs nested under it (one per "
        "configuration and seed); its tables and curves are under Artifacts (tables/, curves/), rebuilt from the "
        "store by make tables."
    )


def parent_view(client, parent_id: str) -> str:
    """Save on a parent's experiment the view of its children: the experiment's own (the goal rates as columns, the
    runs best first: :func:`lq.lit.cli.mark_model_training`) narrowed to the parent's children (sorted by a metric,
    MLflow lists runs flat, without their parents), named after the parent; returns its key, ``lq-PARENT_ID``, which
    the UI opens at ``#/experiments/EXPERIMENT_ID/runs?viewStateShareKey=KEY`` (and lists under *Views*). Written
    where missing or changed."""
    run = client.get_run(parent_id)
    exp_id = run.info.experiment_id
    if RUN_NOTE not in run.data.tags:  # its description, at the top of its page
        client.set_tag(parent_id, RUN_NOTE, parent_description(run))
    mark_model_training(client, exp_id)
    experiment = client.get_experiment(exp_id)
    base = json.loads(experiment.tags[VIEWS + EXPERIMENT_VIEW])
    state = json.dumps({**json.loads(base["state"]), "searchFilter": f"tags.mlflow.parentRunId = '{parent_id}'"})
    key = f"lq-{parent_id}"
    save_view(client, experiment, key, f"{run.info.run_name or parent_id}: {base['name'].removeprefix('lq: ')}", state)
    return key


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


def children(client, parent_id: str, finished: bool = True) -> list:
    """The child runs of parent ``parent_id`` that finished (``finished=False``: all, whatever their status)."""
    exp_id = client.get_run(parent_id).info.experiment_id
    where = f"tags.mlflow.parentRunId = '{parent_id}'" + (" and attributes.status = 'FINISHED'" if finished else "")
    return client.search_runs([exp_id], filter_string=where)


def children_by_status(client, parent_id: str) -> tuple[list, list]:
    """The child runs of parent ``parent_id``, in one search: those that finished, and the rest (killed, failed,
    running)."""
    every = children(client, parent_id, finished=False)
    return [r for r in every if r.info.status == "FINISHED"], [r for r in every if r.info.status != "FINISHED"]


def cpu_seconds(client, run) -> float | None:
    """The CPU time a run's process spent (``time/cpu_s``, growing over its epochs: the largest logged), None where
    the run logged none (it ran before lq logged it, or died before its first epoch ended)."""
    if "time/cpu_s" not in run.data.metrics:
        return None
    return max(m.value for m in client.get_metric_history(run.info.run_id, "time/cpu_s"))


def cell_values(client, runs: Sequence, cell: Cell, earlier: Sequence = ()) -> list[float]:
    """The cell's metric in each seed's child run (a metric logged several times, e.g. one zero-shot evaluation
    per evaluation seed, counts as its mean). A budget's evaluation (``budget/N/...``) that a finished run lacks is
    read from the ``earlier`` runs of its configuration and seed, newest first: a run killed on its way (a session's
    end) and resumed from its last checkpoint is a new MLflow run, and the budgets it passed before are in the old."""
    values = []
    for run in runs:
        if run.data.tags.get("lq.config") != cell.config.key:
            continue
        value = metric_mean(client, run, cell.metric)
        if value is None and cell.metric.startswith("budget/"):
            same = (cell.config.key, run.data.tags.get("lq.seed"))
            before = [r for r in earlier if (r.data.tags.get("lq.config"), r.data.tags.get("lq.seed")) == same]
            for other in sorted(before, key=lambda r: r.info.start_time, reverse=True):
                value = metric_mean(client, other, cell.metric)
                if value is not None:
                    break
        if value is not None:
            values.append(value)
    return values


def table_values(client, runs: Sequence, table: Table, earlier: Sequence = ()) -> dict[tuple[str, str], list[float]]:
    """Each cell of ``table`` (by row and column title): its metric in each seed's child among ``runs`` (the
    finished ones), a budget's from the ``earlier`` runs of its seed where it is not there (:func:`cell_values`)."""
    return {
        (row, column): cell_values(client, runs, cell, earlier)
        for row, cells in table.rows
        for column, cell in cells.items()
    }


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
        score = tuple(metric_mean(client, run, f"test/{rate}") for rate in RANKED_RATES)
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


def _slug(title: str) -> str:
    return "_".join("".join(ch if ch.isalnum() else " " for ch in title.lower()).split())


def cell_metrics(table: Table, values: dict[tuple[str, str], list[float]]) -> dict[str, float]:
    """Each cell with runs as metrics for its parent run: ``<table>/<row>/<column>/mean`` and ``.../std`` (titles in
    lower case, words joined by ``_``, e.g. ``table1/scratch/rl_act_goals/mean``; a cell's own ``key`` in place of its
    column's title where it has one), so that parents compare in the MLflow UI."""
    out = {}
    for row, cells in table.rows:
        for column, spec in cells.items():
            got = values.get((row, column), [])
            if got:
                mean, std = mean_std_of(got)
                key = f"{table.name}/{_slug(row)}/{_slug(spec.key or column)}"
                out[f"{key}/mean"], out[f"{key}/std"] = mean, std
    return out


def render(
    table: Table, values: dict[tuple[str, str], list[float]], evaluated: str = "", short: bool = False
) -> tuple[str, str]:
    """Markdown (mean ± std, and the number of seeds; one seed's figure alone) and CSV of a table; a cell without runs
    reads "n/a", a column that does not apply to a row (the ceiling's speech goals) "—". ``evaluated``: the line under
    the title that says how the table's runs were evaluated (:func:`evaluated_line`). ``short``: the Markdown for the
    MLflow UI's artifact viewer, whose columns cut long headers: a column whose cells have a short title of their own
    (:attr:`Cell.key`: Table 1's "RL Act goals" for "RL from BC + imitation (lq objective) Act goals") headed by it,
    and a line under the title saying what it stands for (:func:`shortened`); the CSV is the same."""
    columns = list(dict.fromkeys(c for _, cells in table.rows for c in cells))
    md_rows, csv = [], ["row," + ",".join(f'"{c} mean","{c} std"' for c in columns) + ",seeds"]
    for row, cells in table.rows:
        shown, numbers, seeds = [], [], []
        for column in columns:
            if column not in cells:
                shown.append("—")
                numbers += ["", ""]
                continue
            got = values.get((row, column), [])
            seeds.append(len(got))
            if got:
                mean, std = mean_std_of(got)
                shown.append(cell(mean, std, len(got)))
                numbers += [f"{mean:.4f}", f"{std:.4f}"]
            else:
                shown.append("n/a")
                numbers += ["", ""]
        n = min(s for s in seeds) if seeds else 0
        md_rows.append([row, *shown, str(n)])
        csv.append(f'"{row}",' + ",".join(numbers) + f",{n}")
    head = [f"**{table.title}** (mean ± std over seeds)", *([evaluated] if evaluated else [])]
    if short:
        keys = {c: spec.key for _, cells in table.rows for c, spec in cells.items() if spec.key}
        head += [note] if (note := shortened(keys)) else []
        columns = [keys.get(c, c) for c in columns]
    md = [*head, "", *markdown_table(["", *columns, "seeds"], md_rows)]
    return "\n".join(md) + "\n", "\n".join(csv) + "\n"


def shortened(keys: dict[str, str]) -> str:
    """The line that says what short column titles stand for (``keys``: each long title's short one): the words each
    short title puts in place of the long title's, before the words they end with alike ("Columns: RL = RL from BC +
    imitation (lq objective)."); empty without any."""
    meanings = {}
    for full, short in keys.items():
        long_words, short_words = full.split(), short.split()
        while long_words and short_words and long_words[-1] == short_words[-1]:
            long_words.pop()
            short_words.pop()
        if short_words and long_words != short_words:
            meanings.setdefault(" ".join(short_words), " ".join(long_words))
    return f"Columns: {'; '.join(f'{k} = {v}' for k, v in meanings.items())}." if meanings else ""


def curves_png(client, experiment: Experiment, runs: Sequence, stage: str, path: Path) -> bool:
    """The learning curves of ``stage``'s configurations (mean over seeds, shaded ± std) as one PNG, its panels one
    above the other, 1000 pixels wide (the MLflow UI's artifact viewer shows it at about that width); False if
    none."""
    configs = [c for c in experiment.configs if c.stage == stage]
    series = {
        config.key: [
            run_series(client, r.info.run_id, CURVES[stage]) for r in runs if r.data.tags.get("lq.config") == config.key
        ]
        for config in configs
    }
    return plot_curves(series, CURVES[stage], path, f"{experiment.title}: {stage} learning curves", columns=1)


def budget_png(experiment: Experiment, values: dict[str, dict[tuple[str, str], list[float]]], path: Path) -> bool:
    """The figure of an experiment evaluated at budgets (:func:`lq.results.plot_budget`): the budget experiment's (each
    objective's goal rates against interactions, validation above and test below) or the generalisation experiment's
    and its longer run's (each variant's, validation, test and the LIGHT worlds), BC (the generalisation experiment's
    on each pool of training quests), the word-overlap rule and a random choice among the valid candidates as levels;
    ``values``: each table's cells by (row, column). False where the experiment has no budgets or nothing to draw."""
    if experiment.name == "budget":
        panels = [[t for t, _ in VALIDATION_GOALS], [t for t, _ in GOALS]]
        rows = {title: title for title in BUDGET_TITLES.values()}
        budgets, bcs, level_of = BUDGETS, ["BC"], {}
    elif experiment.name in ("generalisation", "generalisation_long"):
        panels = [[t for t, _ in VALIDATION_GOALS], [t for t, _ in GOALS], [t for t, _ in WORLDS_GOALS]]
        variants = experiment.variants or tuple(GENERALISATION_RUNS)
        rows = {GENERALISATION_RUNS[v][3]: f"RL, {GENERALISATION_RUNS[v][3]}" for v in variants}
        pools = dict.fromkeys(map(generalisation_bc, variants))
        titles = [GENERALISATION_RUNS[variant][3] for variant in pools]
        budgets = (*GENERALISATION_BUDGETS, *([LONG_BUDGET] if experiment.name == "generalisation_long" else []))
        bcs, level_of = [f"BC, {t}" for t in titles], {f"BC, {t}": t for t in titles}
    else:
        return False
    table, base = values[experiment.name], values[f"{experiment.name}_baselines"]
    columns = [t for row in panels for t in row]
    curves = {
        label: {t: {b: table.get((f"{row}, {budget_label(b)} interactions", t), []) for b in budgets} for t in columns}
        for label, row in rows.items()
    }
    levels = {bc: {t: table.get((bc, t), []) for t in columns} for bc in bcs}
    for row in ("Word overlap (whole spaces)", "Random (valid candidates)"):
        levels[row] = {t: base.get((row, t), []) for t in columns}
    names = ("validation", "test", "unseen worlds")[: len(panels)]
    return plot_budget(curves, levels, panels, path, experiment.title, names, level_of)


def build_tables(
    experiment: Experiment,
    parent_id: str,
    tracking_uri: str = DEFAULT_TRACKING_URI,
    log: Callable[[str], None] = _print,
) -> dict[str, tuple[str, str]]:
    """Read the parent's children from the store and log on the parent ``tables/<name>.md``/``.csv`` (the Markdown
    with the short column titles of :func:`render`'s ``short``, for the UI), ``curves/<stage>.png`` and the best
    agent's ``transcripts/best_agent.txt``, and save the UI's view of its children (:func:`parent_view`); returns each
    table's Markdown and CSV (the Markdown with the tables' own column titles, as the results page shows them)."""
    from mlflow.entities import Metric

    client = _client(tracking_uri)
    runs, unfinished = children_by_status(client, parent_id)
    evaluated = evaluated_line(experiment, client.get_run(parent_id).data.tags.get("lq.protocol"))
    timestamp = int(time.time() * 1000)
    out, by_table = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for table in experiment.tables:
            values = by_table[table.name] = table_values(client, runs, table, unfinished)
            md, csv = render(table, values, evaluated)
            metrics = cell_metrics(table, values)
            if metrics:
                client.log_batch(parent_id, metrics=[Metric(k, stored(v), timestamp, 0) for k, v in metrics.items()])
            client.log_text(parent_id, render(table, values, evaluated, short=True)[0], f"tables/{table.name}.md")
            client.log_text(parent_id, csv, f"tables/{table.name}.csv")
            log(md)
            out[table.name] = (md, csv)
        for stage in CURVES:
            path = Path(tmp) / f"{stage}.png"
            if curves_png(client, experiment, runs, stage, path):
                client.log_artifact(parent_id, str(path), "curves")
        path = Path(tmp) / "budget.png"
        if budget_png(experiment, by_table, path):
            client.log_artifact(parent_id, str(path), "curves")
        line = log_best_transcripts(client, runs, parent_id, tmp)
        if line is not None:
            log(f"{line}; its test episodes: transcripts/best_agent.txt on the parent run")
    parent_view(client, parent_id)
    return out


def evaluated_line(experiment: Experiment, protocol: str | None) -> str:
    """The line under a parent's tables' titles: how its runs were evaluated, the experiment's own where it says (Tables
    4/5: no episodes), else what the parent's protocol fixes (a parent from before protocols: ``restricted``)."""
    line = experiment.evaluated or f"Evaluated under {protocol_of(protocol or 'restricted').describe()}."
    return f"{line} {experiment.note}" if experiment.note else line


IDENTITY = ("profile", "protocol", "objective")  # what tells parents of one experiment apart (besides seeds, encoders)


def latest_parent(
    tracking_uri: str, name: str, profile: str | None = None, protocol: str | None = None, objective: str | None = None
) -> str | None:
    """The newest finished parent run of experiment ``name`` in the store (of ``profile``, ``protocol`` and RL's
    ``objective``, each where given), if any."""
    where = "and attributes.status = 'FINISHED'"
    for key, value in zip(IDENTITY, (profile, protocol, objective), strict=True):
        where += f" and tags.`lq.{key}` = '{value}'" if value else ""
    runs = parent_runs(_client(tracking_uri), name, where)
    return runs[0].info.run_id if runs else None


def experiment_for(client, parent_id: str) -> Experiment:
    """The experiment a parent run ran, with the encoders its children used, its RL objective (a parent from
    before objectives were tagged: lq's, the default then) and its rows' variants as they were when it ran (a parent
    from before they were recorded: today's)."""
    run = client.get_run(parent_id)
    name = run.data.tags.get("lq.experiment")
    if name not in EXPERIMENTS:
        raise ValueError(f"run {parent_id} is not an lq experiment's parent run (tag lq.experiment={name!r})")
    params = run.data.params
    encoders = params.get("encoders")
    recorded = {"variants": params["variants"].split()} if "variants" in params else {}
    objective = run.data.tags.get("lq.objective", "lq")
    return EXPERIMENTS[name](*([encoders.split()] if encoders else []), objective=objective, **recorded)


def chosen_generalisation_variant(
    tracking_uri: str, profile: str | None = None, protocol: str | None = None
) -> tuple[str, str]:
    """The generalisation variant (:data:`GENERALISATION_RUNS`) that :func:`lq.experiments.specs.generalisation_long`
    takes on to 1M: of the newest finished generalisation parent (of ``profile`` and ``protocol``, where given), the
    variant whose row "chosen on validation" has the best validation act & speech goals, mean over its seeds (the
    first of the table's order on a tie), and a line saying so with every variant's figure and the parent. Raises
    LookupError where no such parent is in the store or none of its variants has that figure."""
    parent = latest_parent(tracking_uri, "generalisation", profile, protocol, "lq")
    if parent is None:
        raise LookupError(
            f"generalisation_long trains the generalisation experiment's variant chosen on the validation quests: no "
            f"finished generalisation parent run in {tracking_uri} (run first: lq experiment run generalisation)"
        )
    client = _client(tracking_uri)
    table = experiment_for(client, parent).tables[0]
    runs, unfinished = children_by_status(client, parent)
    column = next(t for t, metric in VALIDATION_GOALS if metric == "val/act_and_speech_goal_rate")
    means = {}
    for variant, (*_, title) in GENERALISATION_RUNS.items():
        cells = dict(table.rows).get(f"RL, {title}, chosen on validation")
        values = cell_values(client, runs, cells[column], unfinished) if cells else []
        if values:
            means[variant] = (statistics.fmean(values), len(values))
    if not means:
        raise LookupError(f"generalisation parent {parent}: no variant's agent chosen on validation has {column}")
    best = max(means, key=lambda v: means[v][0])
    shown = "; ".join(f"{v} {m:.3f} ({n} seeds)" for v, (m, n) in means.items())
    return best, f"{best}, the best {column} chosen on validation in generalisation parent {parent}: {shown}"


def write_local(tables: dict[str, tuple[str, str]], out_dir: str | Path, experiment: Experiment) -> None:
    """Also keep ``experiment``'s tables as files, ``<table>.{md,csv}`` in ``out_dir`` (written to a temporary file,
    then renamed): ``<table>-paper.{md,csv}`` for the paper objective's of an experiment that runs under both, beside
    the default objective's, not over them."""
    objective = experiment.objective
    ran = f"-{objective}" if objective != "lq" and len(objectives_of(experiment.name)) > 1 else ""
    for name, (md, csv) in tables.items():
        for suffix, text in ((".md", md), (".csv", csv)):
            with atomic_open(Path(out_dir) / f"{name}{ran}{suffix}", "w", encoding="utf-8") as f:
                f.write(text)
