"""An experiment's MLflow parent run (:mod:`lq.experiments.parents`): its identity, opening and resuming it (here or
after its record was imported elsewhere), refusing one of another identity, and the children whose process is gone."""

import dataclasses
import os
import socket
import subprocess
import sys

import pytest
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main
from tests.experiments.helpers import AGENT, _log_children


def test_parents_of_two_objectives_stay_apart_in_tables_and_resume(tmp_path, capsys):
    """One store, Table 1 run under both objectives: two parents, each table built from its own children and naming
    its objective; ``lq experiment tables --objective`` picks each one; ``--resume`` under one objective never reopens
    the other's parent, and reopening it by hand is refused."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    parents = {}
    for objective, rate in (("paper", [0.1, 0.2]), ("lq", [0.7, 0.8])):
        experiment = X.table1(["scratch"], objective=objective)
        setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"), objective=objective)
        pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
        _log_children(client, pid, experiment, {"test/act_goal_rate": rate})
        client.set_terminated(pid, "FINISHED")
        parents[objective] = pid
    assert parents["paper"] != parents["lq"]
    for objective, mean in (("paper", "0.150"), ("lq", "0.750")):
        assert main(["experiment", "tables", "table1", "--objective", objective, "--tracking-uri", uri,
                     "--out", str(tmp_path / objective)]) == 0  # fmt: skip
        out = capsys.readouterr().out
        assert f"from parent run {parents[objective]}, profile tiny, protocol paper, objective {objective}" in out
        md = (tmp_path / objective / ("table1.md" if objective == "lq" else "table1-paper.md")).read_text()
        title = X.specs.rl_title(objective)
        assert f"{title} Act goals" in md and f"| Scratch | {mean} ± " in md
    # without --objective: each objective's newest parent, as the results page shows them, in files side by side
    assert main(["experiment", "tables", "table1", "--tracking-uri", uri, "--out", str(tmp_path / "both")]) == 0
    out = capsys.readouterr().out
    assert all(f"from parent run {parents[o]}, profile tiny, protocol paper, objective {o}" in out for o in parents)
    assert (tmp_path / "both" / "table1.md").read_text() == (tmp_path / "lq" / "table1.md").read_text()
    assert (tmp_path / "both" / "table1-paper.md").read_text() == (tmp_path / "paper" / "table1-paper.md").read_text()
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == sorted(
        f"{t}{o}.{x}" for t in ("table1", "table1_baselines") for o in ("", "-paper") for x in ("csv", "md")
    )
    assert main(["experiment", "tables", "--parent", parents["lq"], "--tracking-uri", uri]) == 2  # which experiment?
    assert "name the one experiment the parent run belongs to" in capsys.readouterr().err
    # an unfinished parent under the paper objective is not what an lq-objective run resumes
    paper_setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"), objective="paper")
    client.update_run(parents["paper"], status="RUNNING")
    lq_setup = dataclasses.replace(paper_setup, objective="lq")
    assert X.parents.unfinished_parents(client, X.table1(["scratch"]), lq_setup) == []
    resumable = X.parents.unfinished_parents(client, X.table1(["scratch"], "paper"), paper_setup)
    assert [r.info.run_id for r in resumable] == [parents["paper"]]
    with pytest.raises(ValueError, match="ran objective 'paper', not 'lq': .*resume it with OBJECTIVE=paper"):
        X.parents._reopen(client, parents["paper"], X.table1(["scratch"]), lq_setup)
    with pytest.raises(ValueError, match="its tables name the paper objective, its runs would train under lq"):
        X.parents.open_parent(client, X.table1(["scratch"], "paper"), lq_setup, False, print)


def test_resume_names_the_other_unfinished_parents_and_resumes_the_one_parent_names(tmp_path, capsys):
    """A parent opened by `plan` and never run is newer than the one a killed driver left: resume takes the newest but
    names the other with its finished children, and --parent resumes that one; a finished or unknown parent is
    refused by name."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"))
    worked, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, worked, experiment, {"test/act_goal_rate": [0.1, 0.2]})
    client.set_terminated(worked, "KILLED")
    planned, _ = X.parents.open_parent(client, experiment, setup, False, print)
    finished, _ = X.parents.open_parent(client, experiment, setup, False, print)
    client.set_terminated(finished, "FINISHED")
    logged = []
    pid, done = X.parents.open_parent(client, experiment, setup, True, logged.append)
    assert pid == planned and not done
    n = 2 * len(experiment.configs)
    assert logged[-1].startswith(f"[table1] other unfinished parents of this identity, newest first: {worked} ({n} ")
    pid, done = X.parents.open_parent(client, experiment, setup, True, logged.append, parent=worked)
    assert pid == worked and len(done) == n
    for other in (finished, "0" * 32):
        with pytest.raises(ValueError, match=f"--parent {other}: not an unfinished table1 parent run .* those there: "):
            X.parents.open_parent(client, experiment, setup, True, print, parent=other)
    argv = ["experiment", "run", "table1", "table2", "--resume", "--parent", worked, "--tracking-uri", uri]
    assert main(argv) == 2 and "name the one experiment the parent run belongs to" in capsys.readouterr().err
    # refused before the preparation (which would generate the missing dataset first)
    argv = ["experiment", "run", "table1", "--resume", "--parent", finished, "--tracking-uri", uri, "--data",
            str(tmp_path / "data")]  # fmt: skip
    assert main(argv) == 1 and f"--parent {finished}: not an unfinished" in capsys.readouterr().err
    assert not (tmp_path / "data").exists()


def test_a_campaign_imported_on_a_new_machine_resumes_by_the_id_its_parent_had_where_it_ran(tmp_path, capsys):
    """An unfinished parent's record imported into a new store (a machine given back): --resume --parent takes the id
    it had where it ran as well as its id here, reopens the imported parent and trains none of its finished children
    again; an id of neither kind is refused."""
    uri, other = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "new.db"))
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1), tracking_uri=uri, outputs=str(tmp_path / "o"))
    ran, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, ran, experiment, {"test/act_goal_rate": [0.1, 0.2]})
    client.set_terminated(ran, "KILLED")
    records = tmp_path / "records"
    assert main(["experiment", "export", "--tracking-uri", uri, "--parent", ran, "--records", str(records)]) == 0
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    moved = dataclasses.replace(setup, tracking_uri=other)
    store = MlflowClient(other)
    [here] = [r.info.run_id for r in X.parent_runs(store, "table1")]
    assert here != ran
    for named in (ran, here):
        pid, done = X.parents.open_parent(store, experiment, moved, True, print, parent=named)
        assert pid == here and len(done) == 2 * len(experiment.configs)
        assert X.parents.peek_parent(store, experiment, moved, True, named) == (here, done)
    with pytest.raises(ValueError, match=f"--parent {'1' * 32}: not an unfinished table1 parent run .* those there: "
                                         f"{here} \\(ran as {ran}\\)"):  # fmt: skip
        X.parents.open_parent(store, experiment, moved, True, print, parent="1" * 32)


def test_a_run_whose_process_is_gone_is_marked_killed_and_one_still_running_blocks_a_resume(tmp_path):
    client = MlflowClient(f"sqlite:///{tmp_path / 'm.db'}")
    exp_id = X.experiment_id(client, "table1")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    here = {"lq.host": socket.gethostname()}
    dead = client.create_run(exp_id, tags={**here, "lq.pid": gone.stdout.strip()})
    living = client.create_run(exp_id, tags={**here, "lq.pid": str(os.getpid())})
    elsewhere = client.create_run(exp_id, tags={"lq.host": "another-host", "lq.pid": "1"})
    done = client.create_run(exp_id, tags=here)
    client.set_terminated(done.info.run_id, "FINISHED")
    runs = client.search_runs([exp_id])
    assert [r.info.run_id for r in X.parents.end_dead_runs(client, runs)] == [dead.info.run_id]
    status = {r.info.run_id: r.info.status for r in client.search_runs([exp_id])}
    assert status == {
        dead.info.run_id: "KILLED",
        living.info.run_id: "RUNNING",  # its process is there
        elsewhere.info.run_id: "RUNNING",  # cannot be told from here
        done.info.run_id: "FINISHED",
    }
    # a parent whose child still runs here (its driver alone was killed) is not resumed beside it
    setup = X.Setup(seeds=(0,), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    pid = client.create_run(exp_id, tags=tags).info.run_id
    client.log_param(pid, "seeds", "0")
    client.log_param(pid, "encoders", "scratch")
    child = {**here, "lq.pid": str(os.getpid()), "mlflow.parentRunId": pid, "lq.config": "rl-scratch", "lq.seed": "0"}
    client.create_run(exp_id, tags=child)
    with pytest.raises(ValueError, match=rf"its child rl-scratch s0 is still running \(process {os.getpid()}\)"):
        X.parents.open_parent(client, X.table1(["scratch"]), setup, True, print)


def test_a_parent_keeps_its_rows_variants_so_its_table_reads_back_as_it_ran(tmp_path):
    """The candidates and deviation tables' rows change as defaults are chosen: a parent records the variants it ran
    (param ``variants``), its tables are read back with those rows whatever today's list, and it resumes only with
    the same ones."""
    from mlflow import MlflowClient

    uri = f"sqlite:///{tmp_path / 'm.db'}"
    client = MlflowClient(uri)
    setup = X.Setup(seeds=(0,), objective="lq", tracking_uri=uri, outputs=str(tmp_path / "o"))
    ran = X.EXPERIMENTS["candidates"](variants=["temperature"])
    pid, _ = X.parents.open_parent(client, ran, setup, False, print)
    assert client.get_run(pid).data.params["variants"] == "temperature"
    rows = [row for row, _ in X.experiment_for(client, pid).tables[0].rows]
    assert rows == [
        "RL from BC + imitation (lq objective)",
        "+ a learned temperature per head, with the gain, at 30 times the learning rate",
        "BC",
    ]
    with pytest.raises(ValueError, match="ran variants 'temperature', not 'valid_positives'"):
        X.parents.open_parent(client, X.EXPERIMENTS["candidates"](), setup, True, print)
    with pytest.raises(ValueError, match="unknown variant sharper: choose from bc_start"):
        X.EXPERIMENTS["candidates"](variants=["sharper"])


def test_a_1m_parent_imported_on_another_machine_resumes_there_by_the_id_it_ran_as(tmp_path, capsys):
    """``generalisation_long --resume --parent ID`` on a machine its record was imported into: ID is the parent's id
    where it ran (the record's file name, the campaign's log), and the variant it recorded there is the one resumed."""
    ran, here = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "here.db"))
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), tracking_uri=ran)
    experiment = X.EXPERIMENTS["generalisation_long"](variants=["pool19600_rarity"])
    pid, _ = X.parents.open_parent(MlflowClient(ran), experiment, setup, False, print)
    X.records.import_records(here, X.records.export_parent(ran, pid, tmp_path / "records").parent)
    assert X.records.parent_here(MlflowClient(here), pid, here) != pid
    capsys.readouterr()
    assert main(["experiment", "plan", "generalisation_long", "--tracking-uri", here, "--seeds", "0", "--resume",
                 "--parent", pid, "--dry-run", "--outputs", str(tmp_path / "o")]) == 0  # fmt: skip
    [rl] = [line for line in capsys.readouterr().out.splitlines() if line.startswith("lq rl fit")]
    assert f"{tmp_path}/o/rl/pool19600_rarity_1m{AGENT}/config.yaml" in rl
