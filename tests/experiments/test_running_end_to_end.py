"""Tables and stages trained for real at tiny sizes (slow): the same figures whatever the job count, the launcher or the
plan's lines run by a shell, and after a child is stopped and resumed."""

import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.commands.jobs import log_best_model
from lq.data.outputs import finished
from lq.experiments import launchers
from lq.experiments.launchers import Local, Submitit
from tests.experiments.helpers import TINY_TABLE, _tiny_setup
from tests.lit.stopping import stop_once

ROOT = Path(__file__).resolve().parents[2]


def _cells(setup: X.Setup, parent: str, experiment: X.Experiment) -> dict:
    client = MlflowClient(setup.tracking_uri)
    assert client.get_run(parent).info.status == "FINISHED"
    runs = X.children(client, parent)
    return {
        (table.name, row, column): X.cell_values(client, runs, cell)
        for table in experiment.tables
        for row, cells in table.rows
        for column, cell in cells.items()
    }


def _outcomes(setup: X.Setup, parent: str) -> dict:
    """Every figure of a parent's children, by configuration and seed: the agents' zero-shot rates under both
    decodings (``test/``, ``test_greedy/``) and the baselines'."""
    client = MlflowClient(setup.tracking_uri)
    assert client.get_run(parent).info.status == "FINISHED"
    prefixes = ("test/", "test_greedy/", "test_sampled/", "baselines/")
    return {
        (r.data.tags["lq.config"], r.data.tags["lq.seed"]): {
            k: v for k, v in r.data.metrics.items() if k.startswith(prefixes)
        }
        for r in X.children(client, parent)
    }


def _check_tabulated(client, parent: str, tables: dict, setup: X.Setup, tmp_path: Path) -> None:
    """A finished Table 1 parent of the scratch encoder and two seeds: its table and the baselines' (two seeds each),
    its curves, the best agent's transcript, and that agent as a bundle logged on the parent, an MLflow model that
    plays quests."""
    md = Path(client.download_artifacts(parent, "tables/table1.md", str(tmp_path))).read_text()
    # the artifact: the same rows under short, distinct headers (the UI's artifact viewer cuts long ones)
    rows = [line for line in tables["table1"][0].splitlines() if line.startswith("| Scratch |")]
    assert rows and rows == [line for line in md.splitlines() if line.startswith("| Scratch |")] and "n/a" not in md
    header = next(line for line in md.splitlines() if line.startswith("|  |")).split(" | ")
    assert len(set(header)) == len(header) and "RL Act & Speech" in header and "RL from BC" not in md.split("\n\n")[1]
    baselines = tables["table1_baselines"][0]
    assert "n/a" not in baselines and "| Ceiling (goal in the action space) |" in baselines
    assert "| Random (valid candidates) | " in baselines and "| Demonstrations replayed | " in baselines
    assert baselines.count(" | 2 |") == 7  # two seeds each
    assert "Evaluated under protocol paper: choice among the whole spaces" in md
    assert {a.path for a in client.list_artifacts(parent, "curves")} == {"curves/rl.png", "curves/bc.png"}
    best = Path(client.download_artifacts(parent, "transcripts/best_agent.txt", str(tmp_path))).read_text()
    assert best.startswith("Best agent: ") and "=== Self act completion transcripts: " in best
    assert "\nSetting " in best and "\nMotivation " in best
    # the best agent, as a bundle logged on the parent: an MLflow model that plays quests
    import mlflow

    mlflow.set_tracking_uri(setup.tracking_uri)
    exp_id = client.get_run(parent).info.experiment_id
    (model,) = mlflow.search_logged_models(experiment_ids=[exp_id], output_format="list")
    assert model.name == "best_agent" and model.source_run_id == parent
    assert (Path(setup.outputs) / "bundles" / "table1-tiny-best" / "bundle.json").exists()
    played = mlflow.pyfunc.load_model(f"models:/{model.model_id}").predict(pd.DataFrame({"quest_id": ["test_00006"]}))
    assert list(played["quest_id"]) == ["test_00006"] and "Quest test_00006" in played["transcript"][0]


@pytest.mark.slow
def test_a_table_gives_the_same_cells_whatever_the_job_count_or_launcher(setup_dir, tmp_path, monkeypatch):
    """Table 1 for the scratch encoder two ways: the local launcher, two seeds, two children side by side (then the
    table, the curves, the best agent's transcript and its bundle as the parent's MLflow logged model); and seed 0
    alone, each job a job of submitit's local executor (real jobs, local processes). Every figure of every child (BC
    and RL, sampled and greedy, the baselines) is the same, to the last digit: each run sets its own threads
    (``threads`` param), whatever runs beside it. (The plan's lines and make rl's way: the next test.)"""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])
    two = _tiny_setup(setup_dir, tmp_path / "two", seeds=(0, 1), jobs=2)
    parent, tables = X.run_experiment(experiment, two, log=lambda _: None)
    log_best_model(MlflowClient(two.tracking_uri), experiment, parent, two, lambda _: None)  # --log-model
    both_seeds, cells = _outcomes(two, parent), _cells(two, parent, experiment)
    assert len(cells) == 5 + 7 * 3 - 2 and all(len(v) == 2 for v in cells.values())  # every cell filled, both seeds
    expected = {k: v for k, v in both_seeds.items() if k[1] == "0"}
    assert sorted(both_seeds) == sorted([*expected, *((c, "1") for c, _ in expected)])
    agents = [k for k in expected if k[0].startswith(("rl-", "bc-"))]
    both = {"test/act_goal_rate", "test_greedy/act_goal_rate"}
    assert len(agents) == 2 and all(both <= set(expected[k]) for k in agents)
    client = MlflowClient(two.tracking_uri)
    kids = X.children(client, parent)
    assert {r.data.params.get("threads") for r in kids if r.data.tags["lq.stage"] != "baselines"} == {"1"}
    assert all(r.data.metrics["time/cpu_s"] > 0 for r in kids)  # what the table cost: every child, the baselines too
    _check_tabulated(client, parent, tables, two, tmp_path)

    jobs = Submitit(str(tmp_path / "jobs"), {"cluster": "local", "timeout_min": 30})
    submitted = _tiny_setup(setup_dir, tmp_path / "submitit", two, seeds=(0,), launcher=jobs)
    assert _outcomes(submitted, X.run_experiment(experiment, submitted, log=lambda _: None)[0]) == expected
    assert len(list((tmp_path / "jobs").glob("*_log.out"))) == 3  # RL, BC, baselines (the calibration: two's copied)


@pytest.mark.slow
def test_the_plans_lines_run_by_a_shell_and_make_rl_give_the_same_figures(setup_dir, tmp_path, monkeypatch):
    """Table 1 for the scratch encoder, seed 0, as every line ``lq experiment plan`` prints, run by a shell as printed,
    one after another (what runs is what the plan prints: ``test_what_a_plan_prints_is_what_runs``); then ``lq stage
    rl`` (make rl) on the same calibration: its BC and RL runs' figures, sampled and greedy, are the plan's children's
    to the last digit."""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])
    planned = _tiny_setup(setup_dir, tmp_path / "plan", seeds=(0,))
    lines = X.plan(experiment, planned)
    parent = re.search(r"parent run (\w+)", lines[0]).group(1)
    commands = [line for line in lines if not line.startswith("#") and "# done:" not in line]
    assert [c.split()[1:3] for c in commands] == [
        ["experiment", "calibrate"],  # a calibration is kept beside the partner it was fit for, not copied with it
        ["bc", "fit"],
        ["rl", "fit"],  # after the BC agent it starts from
        ["experiment", "baselines"],  # beside the RL agent: they need nothing of each other
        ["experiment", "tables"],
    ]  # the data, partner and DM are there: their lines say "done"
    assert sum("# done: " in line for line in lines) == 3
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "OMP_NUM_THREADS": "2"}
    for command in commands:
        assert subprocess.run(["bash", "-c", command], env=env, cwd=ROOT, check=False).returncode == 0, command
    expected = _outcomes(planned, parent)
    cells = _cells(planned, parent, experiment)
    assert len(cells) == 5 + 7 * 3 - 2 and all(len(v) == 1 for v in cells.values())  # every cell filled
    kinds = ("baselines", "bc-scratch", "rl-scratch")
    assert sorted(c for c, _ in expected) == [f"{k}-act_speech-hardcoded" for k in kinds]
    assert (tmp_path / "plan" / "outputs" / "tables" / "table1.md").is_file()

    # make rl's way (lq stage rl): the BC agent it starts from, then the RL agent, as runs of lq-bc and lq-rl
    staged = _tiny_setup(setup_dir, tmp_path / "stage", planned, seeds=(0,))
    X.run_stage("rl", staged, "scratch")
    client = MlflowClient(staged.tracking_uri)
    for stage in ("bc", "rl"):
        [run] = client.search_runs([client.get_experiment_by_name(f"lq-{stage}").experiment_id])
        figures = {k: v for k, v in run.data.metrics.items() if k.startswith(("test/", "test_greedy/"))}
        assert figures == expected[(f"{stage}-scratch-act_speech-hardcoded", "0")], stage


class RecordingLocal(Local):
    """The local launcher, keeping the labels and arguments of every job it ran."""

    def __init__(self, logs: str | None = None):
        super().__init__(logs)
        self.ran: list[tuple[str, list[str]]] = []

    def run_graph(self, tasks, width):
        def recorded(task):
            def due():
                if task.due is None or task.due():
                    self.ran.append((task.label, list(task.args)))
                    return True
                return False

            return dataclasses.replace(task, due=due)

        super().run_graph([recorded(task) for task in tasks], width)


@pytest.mark.slow
def test_make_rl_stopped_in_one_seeds_rl_goes_on_from_its_last_checkpoint_and_keeps_the_finished_seed(
    setup_dir, tmp_path, monkeypatch
):
    """make rl SEEDS="0 1" JOBS=2 on a new store (its BC, then RL children create lq-bc and lq-rl side by side);
    Ctrl-C reaches seed 0's RL after its first epoch and the run fails there, while seed 1 finishes. Run again
    (make rl, or make rl RESUME=1: the same), only seed 0's RL runs, from its last checkpoint, to the uninterrupted
    run's curve and figures; nothing finished is trained again, and the table reads the episodes each agent's run
    played after fitting and logged (val and test goal rates, transcripts) instead of playing them again."""
    monkeypatch.chdir(ROOT)

    def setup(name: str, flag: Path, seeds: tuple[int, ...], calibrated: X.Setup | None = None) -> X.Setup:
        rl = [*TINY_TABLE["rl"], "--trainer.max_epochs=2", stop_once(flag, 2, seed=0)]  # SIGINT: Ctrl-C
        kwargs = {"seeds": seeds, "jobs": 2, "extra_args": {**TINY_TABLE, "rl": rl}, "launcher": RecordingLocal()}
        return _tiny_setup(setup_dir, tmp_path / name, calibrated, **kwargs)

    never = tmp_path / "never"
    never.write_text("")
    whole = setup("whole", never, (0,))
    X.run_stage("rl", whole, "scratch")

    stopped = setup("stopped", tmp_path / "ctrl-c", (0, 1), calibrated=whole)
    with pytest.raises(launchers.JobFailed) as failed:
        X.run_stage("rl", stopped, "scratch", compare=True)
    assert [f.label for f in failed.value.failures] == ["rl scratch-act_speech-hardcoded s0"]
    rl = {seed: Path(stopped.agent_checkpoint("rl", "scratch", "act_speech", "hardcoded", seed)) for seed in (0, 1)}
    assert finished(rl[1]) and not finished(rl[0])
    kept = rl[1].stat().st_mtime_ns
    first = len(stopped.launcher.ran)

    lines = []
    X.run_stage("rl", stopped, "scratch", compare=True, log=lines.append)
    again = stopped.launcher.ran[first:]
    assert [label for label, _ in again] == ["rl scratch-act_speech-hardcoded s0", "eval scratch-act_speech-hardcoded"]
    assert again[0][1][-2:] == ["--ckpt_path", str(rl[0].parent / "last.ckpt")]
    assert f"[rl scratch-act_speech-hardcoded s0] goes on from {rl[0].parent / 'last.ckpt'}" in lines
    assert rl[1].stat().st_mtime_ns == kept and finished(rl[0])

    client = MlflowClient(stopped.tracking_uri)
    logs = Path(stopped.outputs, "logs", "tiny")
    resumed_log = (logs / "rl_scratch-act_speech-hardcoded_s0.log").read_text()
    assert "Restoring states from the checkpoint path at " in resumed_log
    evaluation = (logs / "eval_scratch-act_speech-hardcoded.log").read_text()
    assert evaluation.count("read, not played again") == 4  # two RL and two BC agents: computed once, by their runs

    def runs(store: MlflowClient, stage: str) -> dict[str, object]:
        found = store.search_runs([store.get_experiment_by_name(f"lq-{stage}").experiment_id], "status = 'FINISHED'")
        return {r.data.tags["lq.seed"]: r for r in found}

    reference = MlflowClient(whole.tracking_uri)
    [expected], done = runs(reference, "rl").values(), runs(client, "rl")
    assert sorted(done) == ["0", "1"] and sorted(runs(client, "bc")) == ["0", "1"]
    resumed = done["0"]
    for metric in ("rl/return", "rl/act_goal_rate"):
        history = {p.step: p.value for p in client.get_metric_history(resumed.info.run_id, metric)}
        whole_history = {p.step: p.value for p in reference.get_metric_history(expected.info.run_id, metric)}
        assert history and history == {step: whole_history[step] for step in history}, metric
    for run in [*done.values(), *runs(client, "bc").values()]:  # what a table needs, on each child run
        assert {"val/act_and_speech_goal_rate", "test/act_goal_rate", "test/speech_goal_rate",
                "test/act_and_speech_goal_rate", "test_greedy/act_goal_rate"} <= set(run.data.metrics)  # fmt: skip
        assert "transcripts/test_seed0.html" in [a.path for a in client.list_artifacts(run.info.run_id, "transcripts")]
    figures = {k: v for k, v in resumed.data.metrics.items() if k.startswith(("test/", "test_greedy/", "val/"))}
    assert figures == {k: v for k, v in expected.data.metrics.items() if k in figures}


@pytest.mark.slow
def test_a_child_killed_mid_training_is_marked_killed_and_resuming_gives_the_uninterrupted_figures(
    setup_dir, tmp_path, monkeypatch
):
    """kill -9 of the BC child after its first epoch (its best.ckpt written): the driver says which child, with its
    log; MLflow holds it KILLED, not RUNNING; its checkpoint does not count as done and no RL run starts; --resume
    trains it again, then RL, killed in turn after its first epoch; a second --resume goes on from RL's last
    checkpoint, and every figure equals the uninterrupted run's."""
    monkeypatch.chdir(ROOT)
    experiment = X.table1(["scratch"])

    def setup(name: str, flag: Path, rl_flag: Path, calibrated: X.Setup | None = None) -> X.Setup:
        bc = [*TINY_TABLE["bc"], "--trainer.max_epochs=2", stop_once(flag, 9)]  # the flag there: nothing stops
        rl = [*TINY_TABLE["rl"], "--trainer.max_epochs=2", stop_once(rl_flag, 9)]
        extra = {**TINY_TABLE, "bc": bc, "rl": rl}
        return _tiny_setup(setup_dir, tmp_path / name, calibrated, seeds=(0,), extra_args=extra)

    never = tmp_path / "never"
    never.write_text("")
    whole = setup("whole", never, never)
    expected = _outcomes(whole, X.run_experiment(experiment, whole, log=lambda _: None)[0])

    killed = setup("killed", tmp_path / "kill-bc", tmp_path / "kill-rl", calibrated=whole)  # the same calibration
    with pytest.raises(launchers.JobFailed) as failed:
        X.run_experiment(experiment, killed, log=lambda _: None)
    [failure] = failed.value.failures
    log = tmp_path / "killed" / "outputs" / "logs" / "tiny" / "bc-scratch-act_speech-hardcoded_s0.log"
    assert str(failure).startswith(f"bc-scratch-act_speech-hardcoded s0 was killed by SIGKILL (its log: {log})")
    assert log.read_text().startswith("Seed set to 0\n")  # the child's own output
    client = MlflowClient(killed.tracking_uri)
    [parent] = X.parent_runs(client, "table1")
    runs = client.search_runs([parent.info.experiment_id])
    status = {r.data.tags.get("lq.config", "parent"): r.info.status for r in runs}
    assert status == {"parent": "FAILED", "bc-scratch-act_speech-hardcoded": "KILLED"}  # the RL child never started
    bc = Path(killed.agent_checkpoint("bc", "scratch", "act_speech", "hardcoded", 0))
    assert bc.is_file() and not finished(bc)  # its first epoch's checkpoint, not a finished agent

    # resumed: BC trained again to the end, then the RL child, killed after its first epoch
    with pytest.raises(launchers.JobFailed, match="rl-scratch-act_speech-hardcoded s0 was killed by SIGKILL"):
        X.run_experiment(experiment, killed, log=lambda _: None, resume=True)
    assert finished(bc)
    pid = X.run_experiment(experiment, killed, log=lambda _: None, resume=True)[0]
    assert pid == parent.info.run_id
    log = (tmp_path / "killed" / "outputs" / "logs" / "tiny" / "rl-scratch-act_speech-hardcoded_s0.log").read_text()
    assert "Restoring states from the checkpoint path at " in log  # Lightning's: it went on, not from the start
    assert _outcomes(killed, pid) == expected
    # the RL child killed and resumed is one MLflow run (not a KILLED and a FINISHED one), whose history is whole:
    # every training metric at every step as the uninterrupted run logged it
    histories = []
    for store in (whole, killed):
        client = MlflowClient(store.tracking_uri)
        runs = client.search_runs([client.get_experiment_by_name("lq-table1").experiment_id], "tags.lq.stage = 'rl'")
        assert [r.info.status for r in runs] == ["FINISHED"]
        keys = [k for k in runs[0].data.metrics if not k.startswith("time/")]  # the wall and CPU times differ
        history = client.get_metric_history
        histories.append({k: [(m.step, m.value) for m in history(runs[0].info.run_id, k)] for k in keys})
    assert histories[1] == histories[0] and any(len(h) > 1 for h in histories[0].values())
