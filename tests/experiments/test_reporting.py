"""Tables, cell metrics and the best agent's transcripts from the MLflow store alone (:mod:`lq.experiments.reporting`):
mean ± std over a parent's children, logged on the parent and rebuilt from the store."""

from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main
from tests.experiments.helpers import _fake_children


def test_tables_are_means_and_stds_over_the_children_and_rebuild_from_the_store(tmp_path):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch", "general_light"])
    parent = _fake_children(
        client,
        experiment,
        {
            "test/act_goal_rate": [0.2, 0.4],
            "test/speech_goal_rate": [0.0, 0.1],
            "test/act_and_speech_goal_rate": [0.0, 0.0],
        },
    )
    tables = X.build_tables(experiment, parent, uri, log=lambda _: None)
    md, csv = tables["table1"]
    assert "| Scratch | 0.300 ± 0.100 | 0.050 ± 0.050 | 0.000 ± 0.000 | 0.300 ± 0.100 | 0.000 ± 0.000 | 2 |" in md
    assert "| General+Light |" in md
    assert csv.splitlines()[1] == '"Scratch",0.3000,0.1000,0.0500,0.0500,0.0000,0.0000,0.3000,0.1000,0.0000,0.0000,2'
    artifacts = {a.path for a in client.list_artifacts(parent, "tables")} | {
        a.path for a in client.list_artifacts(parent, "curves")
    }
    assert artifacts == {
        *(f"tables/{t}.{x}" for t in ("table1", "table1_baselines") for x in ("md", "csv")),
        "curves/rl.png",
    }
    # the cells on the parent as metrics, so that two parents compare in the UI
    metrics = client.get_run(parent).data.metrics
    assert metrics["table1/scratch/rl_act_goals/mean"] == pytest.approx(0.3)
    assert metrics["table1/scratch/rl_act_goals/std"] == pytest.approx(0.1)
    assert metrics["table1/general_light/rl_speech_goals/mean"] == pytest.approx(0.05)
    assert metrics["table1/general_light/bc_act_goals/mean"] == pytest.approx(0.3)
    assert len(metrics) == 2 * 2 * 5  # rows x columns x (mean, std); the baselines' children logged no baselines/*
    assert client.get_experiment(client.get_run(parent).info.experiment_id).tags["mlflow.experimentKind"] == (
        "custom_model_development"
    )

    # `lq experiment tables`: the latest parent, its experiment read back from the run, the same table
    assert X.latest_parent(uri, "table1") == parent
    assert X.latest_parent(uri, "table1", profile="quick") is None  # the parent has no profile tag
    again = X.build_tables(X.experiment_for(client, parent), parent, uri, log=lambda _: None)
    assert again == tables
    out = tmp_path / "tables"
    assert main(["experiment", "tables", "table1", "--tracking-uri", uri, "--out", str(out)]) == 0
    assert (out / "table1.md").read_text() == md and (out / "table1.csv").read_text() == csv


def test_the_best_agents_transcripts_go_on_the_parent(tmp_path):
    """The agent child with the best act & speech rate (ties broken by act goals) has its test transcripts copied."""
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    exp_id = X.experiment_id(client, "table1")
    parent = client.create_run(exp_id).info.run_id
    rates = {  # config, seed: act goals, speech goals, act & speech
        ("rl-scratch-act_speech-hardcoded", 0): (0.9, 0.0, 0.0),
        ("rl-general-act_speech-hardcoded", 1): (0.3, 0.5, 0.2),
        ("bc-general-act_speech-hardcoded", 0): (0.4, 0.5, 0.2),  # same act & speech, more act goals: the best
        ("pretrain-general", 0): (1.0, 1.0, 1.0),  # not an agent
    }
    for (config, seed), values in rates.items():
        child = client.create_run(
            exp_id, tags={"mlflow.parentRunId": parent, "lq.config": config, "lq.seed": str(seed)}
        )
        for (_, metric), value in zip(X.GOALS, values, strict=True):
            client.log_metric(child.info.run_id, metric, value)
        client.log_text(child.info.run_id, f"episodes of {config}", "transcripts/test_seed0.txt")
        client.set_terminated(child.info.run_id, "FINISHED")
    line = X.log_best_transcripts(client, X.children(client, parent), parent, str(tmp_path))
    assert line.startswith("Best agent: bc-general-act_speech-hardcoded seed 0 (run ")
    assert line.endswith("act goals 0.400, speech goals 0.500, act & speech 0.200")
    text = Path(client.download_artifacts(parent, "transcripts/best_agent.txt", str(tmp_path / "dl"))).read_text()
    assert text == f"{line}\n\nepisodes of bc-general-act_speech-hardcoded"
    assert X.log_best_transcripts(client, [], parent, str(tmp_path)) is None


def test_a_missing_cell_reads_n_a_and_bad_names_are_refused(tmp_path):
    table = X.table7(["scratch"]).tables[0]
    md, csv = X.render(table, {("Scratch, Learned switch", "Act goals"): [0.5]})
    assert "| Scratch, Learned switch | 0.500 | n/a | n/a | 0 |" in md  # one seed's figure: no "± 0.000"
    md, _ = X.render(table, {("Scratch, Learned switch", "Act goals"): [0.5, 0.5]})
    assert "| Scratch, Learned switch | 0.500 ± 0.000 | n/a | n/a | 0 |" in md  # two seeds that agree
    assert csv.splitlines()[2].startswith('"Scratch, Hardcoded switch",,,')
    with pytest.raises(ValueError, match="unknown encoder bogus"):
        X.table1(["bogus"])
    with pytest.raises(ValueError, match="the light encoder does not pretrain on ATOMIC-LIGHT: nothing to replace"):
        X.specs.pretrain_args("light", "atomic")
    known = "quests12, quests25, quests50, atomic"
    with pytest.raises(ValueError, match=f"unknown pretraining variant quests7: choose from {known}"):
        X.specs.pretrain_args("scratch", "quests7")
    assert main(["experiment", "tables", "table9", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"]) == 2
    with pytest.raises(FileNotFoundError, match="no such profile .PROFILE=huge.; choose from paper, quick, tiny"):
        X.Setup(profile="huge")
