"""The paper's ablation tables end to end, tracked in MLflow (Tables 1, 2, 4, 5, 7; Figures 5, 13 to 17).

An experiment is a set of tables whose cells are metrics of stage runs (``lq rl fit``, ``lq bc fit``,
``lq pretrain fit``). :func:`run_experiment` opens a *parent* MLflow run, trains every configuration the
tables need once per seed as a *child* run (a subprocess of the stage's CLI, tagged
``mlflow.parentRunId``), then calls :func:`build_tables`, which reads the children back from the store
and logs on the parent each table as Markdown and CSV (mean ± std over seeds) and the learning curves
as PNG. ``lq experiment tables`` calls the same :func:`build_tables` on the latest parent run of each
experiment: the tables come from the store alone, with no training.

What the agent stages need and the store lacks is made first, outside the parent run and reused by
every experiment: the dataset, the pretrained encoders (``general`` before ``adaptive``), the
environment's partner and Dungeon Master, and each pretrained encoder's vectors of the agents' action
and utterance spaces. Every agent experiment also has a child per seed holding the
baselines of its abilities and switches (``<name>_baselines`` table).

- :mod:`lq.experiments.specs`: what each experiment trains and tabulates;
- :mod:`lq.experiments.setup`: how an experiment runs (:class:`Setup`: profile, protocol, objective, data, seeds,
  store, launcher);
- :mod:`lq.experiments.running`: preparing, the jobs in waves (runs and plans alike), child runs, single stages;
- :mod:`lq.experiments.parents`: the parent run: its identity, opening and resuming it, dead children, the best agent;
- :mod:`lq.experiments.launchers`: where the jobs run (local processes, or SLURM through submitit);
- :mod:`lq.experiments.reporting`: tables, cell metrics, curves and transcripts from the store.
"""

from lq.experiments.parents import open_parent, unfinished_parents
from lq.experiments.reporting import (
    best_agent,
    build_tables,
    cell_metrics,
    cell_values,
    children,
    experiment_for,
    experiment_id,
    latest_parent,
    log_best_transcripts,
    parent_runs,
    render,
    write_local,
)
from lq.experiments.running import (
    child_waves,
    plan,
    preparation,
    prepare,
    run_experiment,
    run_stage,
    stage_config,
    stage_waves,
)
from lq.experiments.setup import Setup
from lq.experiments.specs import (
    ENCODERS,
    EXPERIMENTS,
    GOALS,
    Cell,
    Config,
    Experiment,
    Table,
    baselines_table,
    table1,
    table2,
    table7,
    table45,
)

__all__ = [
    "ENCODERS",
    "EXPERIMENTS",
    "GOALS",
    "Cell",
    "Config",
    "Experiment",
    "Setup",
    "Table",
    "baselines_table",
    "best_agent",
    "build_tables",
    "cell_metrics",
    "cell_values",
    "child_waves",
    "children",
    "experiment_for",
    "experiment_id",
    "latest_parent",
    "log_best_transcripts",
    "open_parent",
    "parent_runs",
    "plan",
    "prepare",
    "preparation",
    "render",
    "run_experiment",
    "run_stage",
    "stage_config",
    "stage_waves",
    "table1",
    "table2",
    "table7",
    "table45",
    "unfinished_parents",
    "write_local",
]
