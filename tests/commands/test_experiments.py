"""The drivers' command lines (:mod:`lq.commands.experiments`, through :func:`lq.cli.main`): ``lq stage`` and ``lq
experiment`` refusing bad input in one line, the tables of a parent whose children still run, and the one line a
stopped driver ends with."""

from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main
from lq.experiments import launchers


def test_tables_finish_a_planned_parent_but_leave_one_whose_children_still_run(tmp_path, capsys):
    """``lq experiment tables --parent P`` finishes a parent whose children ran elsewhere; while one of them is still
    running (its driver at work), it shows the tables and leaves the parent running, for the driver to resume."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    parent = client.create_run(X.experiment_id(client, "table1"), tags={"lq.experiment": "table1"}).info.run_id
    child = client.create_run(
        X.experiment_id(client, "table1"),
        tags={"mlflow.parentRunId": parent, "lq.config": "rl-scratch-act_speech-hardcoded", "lq.seed": "0"},
    ).info.run_id
    tables = ["experiment", "tables", "table1", "--parent", parent, "--tracking-uri", uri, "--out", str(tmp_path)]
    assert main(tables) == 0
    assert client.get_run(parent).info.status == "RUNNING"
    assert f"parent run {parent} left running (1 of its children still run)" in capsys.readouterr().out
    client.set_terminated(child, "FINISHED")
    assert main(tables) == 0
    assert client.get_run(parent).info.status == "FINISHED"


def test_lq_stage_refuses_bad_input_with_the_fix(tmp_path, capsys):
    assert main(["stage", "bc", "--compare"]) == 2
    assert main(["stage", "rl", "--encoder", "bert"]) == 2
    assert main(["stage", "rl", "--encoder", "scratch", "--data", str(tmp_path / "none")]) == 2
    assert main(["stage", "rl", "--profile", "huge"]) == 2
    assert main(["stage", "rl", "--launcher-args", "partition"]) == 2
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    assert main(["experiment", "run", "table1", "--data", str(tmp_path / "none"), "--tracking-uri", uri]) == 2
    err = capsys.readouterr().err
    assert "--compare compares RL agents with BC's and the baselines: lq stage rl, not bc" in err
    assert "--encoder bert (ENCODER=bert): unknown; choose from scratch, general, light, general_light, adaptive" in err
    assert "no dataset in" in err and "lq data generate" in err
    assert "no such profile (PROFILE=huge); choose from paper, quick, tiny" in err
    assert "the local launcher takes none" in err
    assert not (tmp_path / "none").exists()  # nothing written


def test_lq_stage_refuses_a_mistyped_choice_in_one_line_before_any_child_starts(tmp_path, capsys, monkeypatch):
    """make rl ABILITY=act_speach SWITCH=hardcode, make pretrain ENCODER=general_lihgt: refused at once, each with the
    choice it was likely meant to be and only the valid choices (no environment model among the encoders)."""
    started = []
    monkeypatch.setattr(launchers.Local, "run_graph", lambda self, tasks, width: started.extend(tasks))
    monkeypatch.chdir(tmp_path)
    assert main(["stage", "rl", "--encoder", "scratch", "--ability", "act_speach", "--switch", "hardcode"]) == 2
    assert main(["stage", "pretrain", "--encoder", "general_lihgt"]) == 2
    assert main(["stage", "bc", "--encoder", "small"]) == 2
    rl, pretrain, bc = capsys.readouterr().err.strip().splitlines()
    assert rl == (
        "error: --ability act_speach (ABILITY=act_speach): unknown (did you mean act_speech?); choose from act_speech, "
        "act, speech, speech_no_speech_goals; --switch hardcode (SWITCH=hardcode): unknown (did you mean hardcoded?); "
        "choose from hardcoded, ratio"
    )
    assert "(did you mean general_light?)" in pretrain and "small" not in pretrain
    assert bc.startswith("error: --encoder small (ENCODER=small): unknown;")
    assert started == [] and not (tmp_path / "data").exists()  # nothing ran, nothing written


def test_a_killed_child_ends_the_driver_with_one_line_naming_it_its_log_and_how_to_go_on(monkeypatch, capsys, tmp_path):
    def killed(*args, **kwargs):
        raise launchers.JobFailed([launchers.Failure("rl-scratch s1", ["rl", "fit"], -9, "outputs/logs/rl-s1.log")])

    monkeypatch.setattr(X, "run_experiment", killed)
    argv = ["experiment", "run", "table1", "--encoders", "scratch", "--seeds", "1", "--jobs", "2"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "error: rl-scratch s1 was killed by SIGKILL (its log: outputs/logs/rl-s1.log); go on with: lq experiment run "
        "table1 --encoders scratch --seeds 1 --jobs 2 --resume\n"
    )
    monkeypatch.setattr(X, "run_stage", killed)
    assert main(["stage", "rl", "--encoder", "scratch"]) == 1  # a stage's finished steps are kept: the same command
    assert capsys.readouterr().err.endswith("; go on with: lq stage rl --encoder scratch\n")
    log = tmp_path / "rl-s1.log"
    log.write_text("Seed set to 1\n\nTraceback (most recent call last):\nValueError: boom\n")

    def failed(*args, **kwargs):  # the end of its log shown, and how to go on on a line of its own
        raise launchers.JobFailed([launchers.Failure("rl-scratch s1", ["rl", "fit"], 1, str(log))])

    monkeypatch.setattr(X, "run_stage", failed)
    assert main(["stage", "rl", "--encoder", "scratch"]) == 1
    assert capsys.readouterr().err == (
        f"error: rl-scratch s1 failed (exit status 1) (its log: {log}), which ends:\n    Seed set to 1\n"
        "    Traceback (most recent call last):\n    ValueError: boom\ngo on with: lq stage rl --encoder scratch\n"
    )

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(X, "run_experiment", interrupted)
    assert main([*argv, "--resume"]) == 130
    assert capsys.readouterr().err == (
        "interrupted: the runs stopped are marked KILLED; go on with: lq experiment run table1 --encoders scratch "
        "--seeds 1 --jobs 2 --resume\n"
    )
    # run by make (the Makefile exports the command typed): the make command, RESUME=1 for an experiment, no FORCE
    monkeypatch.setenv("LQ_MAKE", "make quickstart JOBS=1")
    assert main(argv) == 130
    assert capsys.readouterr().err.endswith("; go on with: make quickstart JOBS=1 RESUME=1\n")
    monkeypatch.setattr(X, "run_stage", interrupted)
    monkeypatch.setenv("LQ_MAKE", "make rl FORCE=1 ENCODER=scratch SEEDS=0\\ 1")
    assert main(["stage", "rl", "--encoder", "scratch", "--seeds", "0", "1", "--force"]) == 130
    assert capsys.readouterr().err == (
        "interrupted: the runs stopped are marked KILLED, the finished ones kept as they were; go on with: make rl "
        "ENCODER=scratch 'SEEDS=0 1'\n"
    )
