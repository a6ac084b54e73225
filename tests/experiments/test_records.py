"""A parent run and its children as a record file (:mod:`lq.experiments.records`): exported, imported into a new store
once, the same results page rebuilt from it."""

import gzip
import json

from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main


def test_a_tables_records_rebuild_the_same_page_in_a_new_store_once(tmp_path, capsys):
    """Export the parents the page shows, import them into an empty store: the same page, byte for byte, and the same
    records again; a second import makes nothing; a broken record names its file and field and makes nothing; the
    page's export removes the campaign's own record of a parent it shows (one parent, one record)."""
    uri, other = (f"sqlite:///{tmp_path / name}" for name in ("ran.db", "new.db"))
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"))
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in range(3):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags, run_name=f"{config.key}-s{seed}").info.run_id
            client.log_param(child, "seed", seed)
            for step in range(3):  # a curve, and the CPU time growing over epochs
                client.log_metric(child, "rl/act_goal_rate", 0.1 * step + seed, step=step)
                client.log_metric(child, "time/cpu_s", 100.0 * (step + 1) + seed, step=step)
            for metric in ("test/act_and_speech_goal_rate", "baselines/overlap_all/act_and_speech_goal_rate"):
                client.log_metric(child, metric, 0.2 + 0.1 * seed + (config.stage == "rl") * 0.3)
            client.set_terminated(child, "KILLED" if (config.stage, seed) == ("rl", 2) else "FINISHED")
    client.set_terminated(pid, "FINISHED")

    records, again = tmp_path / "records", tmp_path / "again"
    assert main(["experiment", "export", "--tracking-uri", uri, "--records", str(records)]) == 0
    [written] = sorted(records.iterdir())
    assert written.name == "tiny-paper-table1-lq.json.gz"
    # the parent's description, as lq writes it where it has none, is the store's view, not part of the record
    assert client.get_run(pid).data.tags["mlflow.note.content"].startswith("lq experiment table1: Table 1")
    assert "mlflow.note.content" not in json.loads(gzip.decompress(written.read_bytes()))["parent"]["tags"]
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert f"{written}: imported as parent run " in capsys.readouterr().out
    [imported] = X.parent_runs(MlflowClient(other), "table1")
    assert imported.info.run_id != pid and imported.data.tags["lq.origin_run_id"] == pid
    page, rebuilt = (tmp_path / f"{name}.md" for name in ("page", "rebuilt"))
    assert main(["experiment", "report", "--tracking-uri", uri, "--page", str(page)]) == 0
    assert main(["experiment", "report", "--tracking-uri", other, "--page", str(rebuilt)]) == 0
    assert rebuilt.read_bytes() == page.read_bytes()
    assert f"Parent run `{pid}`" in page.read_text() and "Cost: " in page.read_text()
    assert "2 of them killed or failed" not in page.read_text()  # one RL seed killed: said once, as in the store
    assert "1 of them killed or failed" in page.read_text()
    assert main(["experiment", "export", "--tracking-uri", other, "--records", str(again)]) == 0
    assert (again / written.name).read_bytes() == written.read_bytes()  # wherever it is written from
    moved = imported.info.run_id  # one parent's record, by its id where it ran or where it was imported (resumed)
    for store, parent_id in ((uri, pid), (other, moved)):
        exported = ["experiment", "export", "--tracking-uri", store, "--parent", parent_id, "--records", str(again)]
        assert main(exported) == 0
    assert sorted(p.name for p in again.iterdir()) == sorted([written.name, f"table1-{pid}.json.gz"])
    assert main(["experiment", "export", "--tracking-uri", other, "--records", str(again)]) == 0  # the page's again:
    assert [p.name for p in again.iterdir()] == [written.name]  # the campaign's record of its parent is superseded

    runs = len(MlflowClient(other).search_runs([imported.info.experiment_id]))
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert "0 of 1 records" in capsys.readouterr().out
    assert main(["experiment", "import", "--tracking-uri", uri, "--records", str(records)]) == 0  # where it ran
    assert len(MlflowClient(other).search_runs([imported.info.experiment_id])) == runs

    killed = next(r for r in X.children(client, pid, finished=False) if r.info.status == "KILLED")
    client.log_metric(killed.info.run_id, "test/act_and_speech_goal_rate", 0.9)  # the parent's record, later
    client.set_terminated(killed.info.run_id, "FINISHED")
    assert main(["experiment", "export", "--tracking-uri", uri, "--records", str(records)]) == 0
    assert main(["experiment", "import", "--tracking-uri", other, "--records", str(records)]) == 0
    assert "1 of 1 records" in capsys.readouterr().out  # it replaces the runs the earlier record made
    assert len(MlflowClient(other).search_runs([imported.info.experiment_id])) == runs
    assert main(["experiment", "report", "--tracking-uri", uri, "--page", str(page)]) == 0
    assert main(["experiment", "report", "--tracking-uri", other, "--page", str(rebuilt)]) == 0
    assert rebuilt.read_bytes() == page.read_bytes() and "killed or failed" not in page.read_text()

    data = json.loads(gzip.decompress(written.read_bytes()))
    del data["children"][3]["status"]
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "x.json.gz").write_bytes(gzip.compress(json.dumps(data).encode()))
    empty = f"sqlite:///{tmp_path / 'empty.db'}"
    assert main(["experiment", "import", "--tracking-uri", empty, "--records", str(broken)]) == 1
    err = capsys.readouterr().err
    assert str(broken / "x.json.gz") in err and "children[3]" in err and "'status'" in err

    # a parent's id where it ran names it where it was imported too (tables, export); an id neither holds is refused
    tables = ["experiment", "tables", "table1", "--tracking-uri", other, "--out", str(tmp_path / "tables")]
    [here] = X.parent_runs(MlflowClient(other), "table1")  # the runs the second import made
    assert main([*tables, "--parent", pid]) == 0
    assert f"from parent run {here.info.run_id}" in capsys.readouterr().out
    assert main(["experiment", "export", "--tracking-uri", other, "--parent", pid, "--records", str(again)]) == 0
    assert f"{again / f'table1-{pid}.json.gz'}" in capsys.readouterr().out
    assert main([*tables, "--parent", "0" * 32]) == 1
    assert f"--parent {'0' * 32}: no run of that id in {other}, nor one imported from it" in capsys.readouterr().err
    assert X.parent_runs(MlflowClient(empty), "table1") == []


def test_a_description_a_person_wrote_on_a_parent_is_kept_in_its_record(tmp_path):
    uri = f"sqlite:///{tmp_path / 'ran.db'}"
    client = MlflowClient(uri)
    setup = X.Setup(seeds=(0,), tracking_uri=uri, outputs=str(tmp_path / "o"))
    pid, _ = X.parents.open_parent(client, X.table1(["scratch"]), setup, False, print)
    client.set_tag(pid, "mlflow.note.content", "rerun after the partner fix")
    client.set_terminated(pid, "FINISHED")
    assert main(["experiment", "export", "--tracking-uri", uri, "--records", str(tmp_path / "records")]) == 0
    [written] = sorted((tmp_path / "records").iterdir())
    tags = json.loads(gzip.decompress(written.read_bytes()))["parent"]["tags"]
    assert tags["mlflow.note.content"] == "rerun after the partner fix"
