"""What the MLflow UI (3.17) shows of lq's runs: the saved views lq writes on its experiments and parents (the goal
rates as columns, best first), the table artifact's short column titles, the stacked curves, the children's short
run names, and the screenshot script's pages and addresses. Nothing trained, no browser."""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from lq.experiments import parents, records, reporting
from lq.experiments.running import child_run
from lq.experiments.setup import Setup
from lq.experiments.specs import EXPERIMENTS, table1
from lq.tracking import mark_model_training

ROOT = Path(__file__).parents[2]
# the sort column first: beside the names, on screen at 1,366 pixels
GOALS = ["metrics.`test/act_and_speech_goal_rate`", "metrics.`test/act_goal_rate`", "metrics.`test/speech_goal_rate`"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> str:
    return f"sqlite:///{tmp_path_factory.mktemp('store') / 'mlflow.db'}"


@pytest.fixture(scope="module")
def client(store) -> MlflowClient:
    return MlflowClient(store)


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("ui_screenshot", ROOT / "experiments" / "ui_screenshot.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _view(client, exp_id: str, key: str = "lq-goals") -> tuple[dict, dict]:
    """A saved view of the experiment: its envelope (name, times, state) and its state."""
    view = json.loads(client.get_experiment(exp_id).tags[f"mlflow.sharedViewState.{key}"])
    return view, json.loads(view["state"])


def _png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


def test_every_experiment_gets_the_kind_tag_and_the_goal_rates_view_once(client):
    exp_id = client.create_experiment("lq-rl")
    mark_model_training(client, exp_id)
    assert client.get_experiment(exp_id).tags["mlflow.experimentKind"] == "custom_model_development"
    view, state = _view(client, exp_id)
    assert view["name"] == "lq: goal rates" and view["createdAt"] == view["updatedAt"] > 0
    assert state["selectedColumns"] == GOALS and state["columnOrder"] == ["attributes.`Run Name`", *GOALS]
    assert state["orderByKey"] == "metrics.`test/act_and_speech_goal_rate`" and state["orderByAsc"] is False
    assert state["columnWidths"]["attributes.`Run Name`"] >= 300  # a run's whole name
    assert client.search_runs([exp_id], order_by=[f"{state['orderByKey']} DESC"]) == []  # MLflow reads its sort
    mark_model_training(client, exp_id)  # the same view: left as it was
    assert _view(client, exp_id)[0] == view
    client.set_experiment_tag(exp_id, "mlflow.sharedViewState.lq-goals", json.dumps({**view, "state": "{}"}))
    mark_model_training(client, exp_id)  # another: lq's again
    assert _view(client, exp_id)[1] == state


def test_the_poly_encoders_experiments_get_a_hits_at_k_view(client):
    exp_id = client.create_experiment("lq-pretrain")
    mark_model_training(client, exp_id)
    view, state = _view(client, exp_id)
    assert view["name"] == "lq: hits@k" and state["orderByKey"] == "metrics.`test/hits_at_1`"
    assert state["selectedColumns"] == [f"metrics.`test/hits_at_{k}`" for k in (1, 5, 10)]


def test_the_generalisation_experiments_view_shows_what_chose_the_agent_and_the_worlds_beside_test(client):
    exp_id = client.create_experiment("lq-generalisation_long")
    mark_model_training(client, exp_id)
    _, state = _view(client, exp_id)
    assert state["selectedColumns"] == [
        GOALS[0],
        "metrics.`val/act_and_speech_goal_rate`",
        *GOALS[1:],
        "metrics.`test_greedy/act_and_speech_goal_rate`",
        "metrics.`worlds/act_and_speech_goal_rate`",
    ]
    assert state["orderByKey"] == "metrics.`test/act_and_speech_goal_rate`"


def test_a_parent_gets_a_view_of_its_children_alone_when_it_opens(client, store, tmp_path):
    experiment = table1(["scratch"])
    setup = Setup(seeds=(0,), tracking_uri=store, outputs=str(tmp_path / "outputs"))
    pid, done = parents.open_parent(client, experiment, setup, False, lambda _: None)
    exp_id = client.get_run(pid).info.experiment_id
    view, state = _view(client, exp_id, f"lq-{pid}")
    assert done == set() and view["name"] == "table1-tiny-paper-lq: goal rates"
    note = client.get_run(pid).data.tags["mlflow.note.content"]  # its description, at the top of its page
    assert note.startswith("lq experiment table1: ") and "Profile tiny, protocol paper, RL objective lq" in note
    configurations = len(experiment.configs)
    assert f"{configurations} configurations x 1 seed (0)" in note and note.count("Table 1") == 1
    assert state == {**_view(client, exp_id)[1], "searchFilter": f"tags.mlflow.parentRunId = '{pid}'"}
    child = client.create_run(exp_id, tags={"mlflow.parentRunId": pid}).info.run_id
    client.create_run(exp_id)  # not its child
    assert [r.info.run_id for r in client.search_runs([exp_id], state["searchFilter"])] == [child]
    assert reporting.parent_view(client, pid) == f"lq-{pid}" and _view(client, exp_id, f"lq-{pid}")[0] == view


def test_the_table_artifact_has_short_distinct_column_titles_and_the_same_csv():
    table, baselines = table1(["scratch", "adaptive"]).tables
    values = {(row, column): [0.5, 0.7] for row, cells in table.rows for column in cells}
    md, csv = reporting.render(table, values, "Evaluated under x.")
    short, short_csv = reporting.render(table, values, "Evaluated under x.", short=True)
    assert short_csv == csv and "| RL from BC + imitation (lq objective) Act goals |" in md  # the page's, unchanged
    head = "|  | RL Act goals | RL Speech goals | RL Act & Speech | BC Act goals | BC Act & Speech | seeds |"
    assert head in short.splitlines() and "Columns: RL = RL from BC + imitation (lq objective)." in short
    assert short.splitlines()[-2:] == md.splitlines()[-2:]  # the same rows
    assert reporting.render(baselines, {}, short=True) == reporting.render(baselines, {})  # nothing to shorten
    paper = reporting.shortened({"RL (paper objective) Act goals": "RL Act goals"})
    assert paper == "Columns: RL = RL (paper objective)."
    assert reporting.shortened({"Scratch Act goals": "Act goals"}) == ""


def test_the_parent_logs_short_titles_and_curves_a_page_wide_and_keeps_its_views(client, store, tmp_path):
    experiment = table1(["scratch"])
    exp_id = reporting.experiment_id(client, "table1")
    pid = client.create_run(exp_id, run_name="table1-x", tags={"lq.experiment": "table1", "lq.role": "parent"})
    pid = pid.info.run_id
    for config in experiment.configs:
        for seed in range(2):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed), "lq.stage": config.stage}
            child = client.create_run(exp_id, tags=tags).info.run_id
            client.log_metric(child, "test/act_goal_rate", 0.2 + 0.2 * seed)
            for step in range(3):
                client.log_metric(child, "rl/act_goal_rate", 0.1 * step + seed, step=step)
            client.set_terminated(child)
    tables = reporting.build_tables(experiment, pid, store, log=lambda _: None)
    artifact = Path(client.download_artifacts(pid, "tables/table1.md", str(tmp_path))).read_text()
    values = reporting.table_values(client, reporting.children(client, pid), experiment.tables[0])
    evaluated = reporting.evaluated_line(experiment, None)
    assert artifact == reporting.render(experiment.tables[0], values, evaluated, short=True)[0] != tables["table1"][0]
    assert "| RL Act goals |" in artifact and "RL from BC + imitation (lq objective) Act goals" in tables["table1"][0]
    csv = Path(client.download_artifacts(pid, "tables/table1.csv", str(tmp_path))).read_text()
    assert csv == tables["table1"][1]
    png = Path(client.download_artifacts(pid, "curves/rl.png", str(tmp_path))).read_bytes()
    assert _png_size(png) == (1000, 3 * 360)  # rl/act_goal_rate, rl/speech_goal_rate, rl/return one above the other
    assert f"mlflow.sharedViewState.lq-{pid}" in client.get_experiment(exp_id).tags


def test_the_curves_keep_one_row_unless_asked(tmp_path):
    from lq.eval import plot_curves

    series = {"a": [{"x": {0: 0.1, 1: 0.2}, "y": {0: 1.0, 1: 2.0}}]}
    assert plot_curves(series, ["x", "y"], tmp_path / "row.png", "t")
    assert plot_curves(series, ["x", "y"], tmp_path / "stacked.png", "t", columns=1)
    assert _png_size((tmp_path / "row.png").read_bytes()) == (1200, 400)
    assert _png_size((tmp_path / "stacked.png").read_bytes()) == (1000, 720)


def test_the_budget_figure_names_its_budgets_and_keeps_its_legend_off_the_panels(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from lq.eval import plot_budget

    figures = []
    monkeypatch.setattr(plt, "close", figures.append)  # the figure, kept open to be measured
    curves = {"RL": {"Act goals": {32_000: [0.5, 0.6], 100_000: [0.6, 0.7], 1_000_000: [0.7]},
                     "Speech goals": {32_000: [0.1]}}}  # fmt: skip
    levels = {"BC": {"Act goals": [0.55]}, "Random": {"Act goals": [0.4], "Speech goals": [0.1]}}
    assert plot_budget(curves, levels, [["Act goals", "Speech goals"]], tmp_path / "budget.png", "t")
    [fig] = figures
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["32k", "100k", "1M"]
    [legend] = fig.legends  # one for the figure, each curve once, whichever panels draw it (with fewer seeds)
    assert [t.get_text() for t in legend.get_texts()] == ["RL (≤2 seeds)", "BC", "Random"]
    renderer = fig.canvas.get_renderer()
    box = legend.get_window_extent(renderer)
    assert not any(box.overlaps(ax.get_tightbbox(renderer)) for ax in fig.axes)


def test_children_are_named_short_and_distinct_within_their_parent(tmp_path):
    setup = Setup(outputs=str(tmp_path / "outputs"))
    for name, make in EXPERIMENTS.items():
        experiment = make(objective="paper" if name in ("budget", "deviations") else "lq")
        names = []
        for config in experiment.configs:
            if config.stage not in ("rl", "bc", "pretrain"):
                continue
            for seed in setup.seeds:
                variant = {"lq.variant": config.variant} if config.variant else {}
                names.append(_name(child_run(config, setup, seed, name), {"lq.seed": str(seed), **variant}))
        assert len(set(names)) == len(names), name
        assert max(len(n) for n in names) <= 45, name
    [config] = [c for c in table1().configs if c.key == "rl-general_light-act_speech-hardcoded"]
    assert _name(child_run(config, setup, 0, "table1"), {"lq.seed": "0"}) == "RL General+Light s0"


def _name(run, tags: dict) -> str:
    """The run name a child's resolved config gives its MLflow run."""
    child = run.kind.child(run, "x", "p", {"mlflow.parentRunId": "p", **tags}, "")
    return child.config["trainer"]["logger"]["init_args"]["run_name"]


def test_the_screenshot_script_opens_runs_tables_as_model_training_in_lq_views(client, script):
    assert script.runs_page("3") == "#/experiments/3/runs?workflowType=machine_learning"
    page = script.runs_page("3", "lq-goals")
    assert page == "#/experiments/3/runs?workflowType=machine_learning&viewStateShareKey=lq-goals"
    exp_id = reporting.experiment_id(client, "table2")
    pid = client.create_run(exp_id, run_name="table2-x", tags={"lq.role": "parent"}).info.run_id
    reporting.parent_view(client, pid)
    text = script.links(client, "http://127.0.0.1:5000")
    assert "'Model training'" in text.splitlines()[0]
    assert f"  lq-table2: http://127.0.0.1:5000/{script.runs_page(exp_id, 'lq-goals')}" in text.splitlines()
    assert f"    its children of table2-x: http://127.0.0.1:5000/{script.runs_page(exp_id, f'lq-{pid}')}" in text


def test_the_compare_view_sets_the_first_seeds_rl_agents_side_by_side(client, script):
    exp_id = client.create_experiment("lq-compare")
    pid = client.create_run(exp_id).info.run_id
    made = {}
    agents = [(stage, enc, seed) for stage in ("rl", "bc") for enc in ("scratch", "adaptive") for seed in (1, 0)]
    for stage, encoder, seed in agents:
        tags = {"mlflow.parentRunId": pid, "lq.stage": stage, "lq.config": f"{stage}-{encoder}", "lq.seed": str(seed)}
        made[stage, encoder, seed] = client.create_run(exp_id, tags=tags).info.run_id
        client.set_terminated(made[stage, encoder, seed])
    chosen = [r.info.run_id for r in script.compared(client, exp_id, pid)]
    assert chosen == [made["rl", "adaptive", 0], made["rl", "scratch", 0]]
    client.delete_run(made["rl", "adaptive", 0])  # one RL agent of the first seed: RL and BC side by side
    chosen = [r.info.run_id for r in script.compared(client, exp_id, pid)]
    assert chosen == [made["bc", "adaptive", 0], made["bc", "scratch", 0], made["rl", "scratch", 0]]


def test_an_imported_parent_gets_its_view_and_a_replaced_one_loses_it(client, tmp_path):
    exp_id = reporting.experiment_id(client, "table7")
    pid = client.create_run(exp_id, run_name="table7-x", tags={"lq.experiment": "table7", "lq.role": "parent"})
    pid = pid.info.run_id
    child = client.create_run(exp_id, tags={"mlflow.parentRunId": pid, "lq.config": "rl-scratch", "lq.seed": "0"})
    client.log_metric(child.info.run_id, "test/act_goal_rate", 0.5)
    for run in (child.info.run_id, pid):
        client.set_terminated(run)
    other = MlflowClient(f"sqlite:///{tmp_path / 'other.db'}")
    path = records.write_record(client, pid, tmp_path / "a.json.gz")
    first = records.import_record(other, path)
    other_exp = other.get_run(first).info.experiment_id
    assert _view(other, other_exp, f"lq-{first}")[0]["name"] == "table7-x: goal rates"
    client.log_metric(child.info.run_id, "test/act_goal_rate", 0.7)  # a later record of the same parent
    second = records.import_record(other, records.write_record(client, pid, tmp_path / "b.json.gz"))
    tags = other.get_experiment(other_exp).tags
    assert second != first and f"mlflow.sharedViewState.lq-{second}" in tags
    assert f"mlflow.sharedViewState.lq-{first}" not in tags
