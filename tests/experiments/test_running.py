"""Running an experiment (:mod:`lq.experiments.running`): what it prepares first, its children in waves, resuming a
parent, resuming a child from its own last checkpoint, and plans that print what runs; nothing trained (the launcher
a recorder) but the preparation's vectors."""

import dataclasses
import re
import shlex
import time
from pathlib import Path

import pytest
import torch
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main
from lq.data.outputs import mark_finished, mark_trained
from lq.experiments import launchers
from lq.experiments.launchers import Local
from lq.lit.offline import build_module
from lq.stages.calibrate import Calibrate
from lq.stages.data import light_db
from tests.experiments.helpers import Recorder, _log_children, resolved
from tests.lit.test_agent_cli import TINY_AGENT
from tests.samples import parsed_cli
from tests.stages.test_stages import trained_env_models

ROOT = Path(__file__).resolve().parents[2]


def test_resume_trains_only_the_children_an_interrupted_parent_lacks(tmp_path, monkeypatch):
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    outputs = tmp_path / "outputs"
    for name in ("partner", "dm"):  # prepare() finds the environment's models and the partner's calibration
        (outputs / name / "small" / "candidates").mkdir(parents=True)
        (outputs / name / "small" / "best.ckpt").touch()
        mark_finished(outputs / name / "small" / "best.ckpt")
    calibration = outputs / "partner" / "small" / "candidates" / "partner-calibration-completions-0123.pt"
    calibration.touch()  # the file of its key (found by hashing the models' weights: these are empty files)
    monkeypatch.setattr(Calibrate, "file", lambda self, run: calibration)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    launcher = Recorder()
    setup = X.Setup(
        seeds=(0, 1), data_dir=str(tmp_path / "data"), tracking_uri=uri, outputs=str(outputs), launcher=launcher
    )
    experiment = X.table1(["scratch"])

    # an interrupted run: the parent and one child still RUNNING (their process died), one child finished
    exp_id = X.experiment_id(client, "table1")
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    parent = client.create_run(exp_id, tags=tags)
    pid = parent.info.run_id
    client.log_param(pid, "seeds", "0 1")
    client.log_param(pid, "encoders", "scratch")
    rl = "rl-scratch-act_speech-hardcoded"
    finished = client.create_run(exp_id, tags={"mlflow.parentRunId": pid, "lq.config": rl, "lq.seed": "0"})
    client.set_terminated(finished.info.run_id, "FINISHED")
    dead = client.create_run(exp_id, tags={"mlflow.parentRunId": pid, "lq.config": rl, "lq.seed": "1"})

    with pytest.raises(ValueError, match="ran seeds '0 1', not '0 1 2': resume with the same seeds"):
        X.run_experiment(experiment, X.Setup(**{**setup.__dict__, "seeds": (0, 1, 2)}), log=print, resume=True)
    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] == pid
    # nothing to prepare (the environment's models and the data are there); the BC child that the RL child left
    # starts from, then the RL child, beside the other BC child and the baselines (they need nothing of the others)
    start, children = launcher.waves
    trained = [[(a[0], resolved(a)["seed_everything"]) for a in w if a[0] != "experiment"] for w in launcher.waves]
    assert trained == [[("bc", 1)], [("bc", 0), ("rl", 1)]]
    baselines = [a for a in children if a[:2] == ["experiment", "baselines"]]
    assert [a[a.index("--seeds") + 1] for a in baselines] == ["0", "1"]  # their children had not finished either
    assert all(a[a.index("--parent") + 1] == pid for a in baselines)
    assert client.get_run(dead.info.run_id).info.status == "KILLED"
    assert client.get_run(pid).info.status == "FINISHED"
    # nothing left to resume: a new parent
    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] != pid


def test_resuming_a_parent_from_another_machine_makes_again_the_bc_start_its_rl_child_needs(tmp_path, monkeypatch):
    """A parent whose BC child finished on another machine and whose RL child did not, its record exported there and
    imported here (no checkpoint): resumed, the BC agent is trained again as the RL agent's start, not as a child,
    then the RL child."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    outputs = tmp_path / "outputs"
    for name in ("partner", "dm"):
        (outputs / name / "small").mkdir(parents=True)
        (outputs / name / "small" / "best.ckpt").touch()
        mark_finished(outputs / name / "small" / "best.ckpt")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    monkeypatch.setattr(Calibrate, "file", lambda self, run: tmp_path / "data" / "manifest.json")  # it is there
    launcher = Recorder()
    setup = X.Setup(seeds=(0,), data_dir=str(tmp_path / "data"), tracking_uri=uri, outputs=str(outputs),
                    launcher=launcher)  # fmt: skip
    experiment = X.table1(["scratch"])
    there = MlflowClient(f"sqlite:///{tmp_path / 'there.db'}")  # the other machine's store
    exp_id = X.experiment_id(there, "table1")
    tags = {"lq.experiment": "table1", **X.parents.parent_identity(setup), "lq.role": "parent"}
    origin = there.create_run(exp_id, tags=tags).info.run_id  # RUNNING when its machine was given back
    there.log_param(origin, "seeds", "0")
    there.log_param(origin, "encoders", "scratch")
    for config in ("bc-scratch-act_speech-hardcoded", "baselines-act_speech-hardcoded"):
        kid = there.create_run(exp_id, tags={"mlflow.parentRunId": origin, "lq.config": config, "lq.seed": "0"})
        there.set_terminated(kid.info.run_id, "FINISHED")
    there.create_run(exp_id, tags={"mlflow.parentRunId": origin, "lq.config": "rl-scratch-act_speech-hardcoded",
                                   "lq.seed": "0"})  # fmt: skip
    records = tmp_path / "unfinished"
    argv = ["experiment", "export", "--parent", origin, "--tracking-uri", there.tracking_uri, "--records", str(records)]
    assert main(argv) == 0
    assert main(["experiment", "import", "--tracking-uri", uri, "--records", str(records)]) == 0
    [imported] = X.parent_runs(client, "table1")
    pid = imported.info.run_id
    statuses = sorted(r.info.status for r in X.children(client, pid, finished=False))
    assert imported.info.status == "KILLED" and statuses == ["FINISHED", "FINISHED", "KILLED"]  # its processes: gone

    assert X.run_experiment(experiment, setup, log=lambda _: None, resume=True)[0] == pid
    start, child = launcher.waves
    logged = resolved(start[0])["trainer"]["logger"]["init_args"]
    assert [a[:2] for a in start] == [["bc", "fit"]] and "tags" not in logged
    assert [a[:2] for a in child] == [["rl", "fit"]]  # the one child that had not finished, from that start
    assert resolved(child[0])["trainer"]["logger"]["init_args"]["tags"]["mlflow.parentRunId"] == pid
    assert len(X.children(client, pid)) == 2  # the Recorder logs nothing: no second BC child
    lines = X.plan(experiment, setup)  # a new parent: the BC agent is its child, not a start
    assert not [line for line in lines if "the RL agent's start" in line]


def test_the_rl_agents_bc_starts_are_trained_first_unless_they_start_from_their_encoder(tmp_path):
    """Table 2 has no BC row: its RL agents' BC starts (one per ability and seed) are preparation steps, after the
    partner's calibration; one trained unlike its RL agent (here: under another protocol) is trained again. Under the
    paper's objective there are none."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    setup = X.Setup(seeds=(0, 1), data_dir=str(tmp_path / "data"), outputs=str(tmp_path / "o"))
    for seed, protocol in ((0, "paper"), (1, "restricted")):  # the act agents' BC starts, seed 1's another protocol
        bc = X.running.run_of(X.Config("bc", "scratch", "act"), dataclasses.replace(setup, protocol=protocol), seed)
        bc.kind.write(bc)
        Path(bc.checkpoint).touch()
        mark_finished(bc.checkpoint)
    steps, jobs = X.preparation(X.table2(["scratch"]).configs, setup)[-1]
    starts = [(s.run.config["model"]["ability"], s.run.config["model"]["seed"]) for s in steps]
    abilities = ("act_speech", "act", "speech", "speech_no_speech_goals")
    assert starts == [(ability, seed) for ability in abilities for seed in (0, 1)]
    assert all(s.args[:2] == ["bc", "fit"] for s in steps) and jobs == setup.jobs
    assert [s.done for s in steps] == [False, False, True, False, False, False, False, False]
    paper = dataclasses.replace(setup, objective="paper")
    assert X.preparation(X.table2(["scratch"]).configs, paper)[-1][0][0].label == "the partner's calibration"


def test_the_plan_of_table2_under_the_papers_objective_trains_no_bc_start(tmp_path, capsys):
    """``--objective`` reaches the RL runs alone (their last config file), and under the paper's no BC agent is planned;
    every line of the plan, and its header, carries the objective."""
    uri = f"sqlite:///{tmp_path / 'm.db'}"
    common = ["experiment", "plan", "table2", "--encoders", "scratch", "--tracking-uri", uri]
    assert main([*common, "--seeds", "0"]) == 0
    out = capsys.readouterr().out
    assert " bc fit " in out and "objective lq" in out.splitlines()[0]  # lq's objective: each RL agent's BC start
    rl_lines = [shlex.split(line) for line in out.splitlines() if " rl fit " in line]
    assert len(rl_lines) == 4 and all("objective/lq.yaml" in resolved(line)["sources"] for line in rl_lines)
    assert main([*common, "--seeds", "0", "--objective", "paper"]) == 0
    out = capsys.readouterr().out
    lines = [shlex.split(line) for line in out.splitlines() if " rl fit " in line or " bc fit " in line]
    assert len(lines) == 4 and all(line[1] == "rl" and "objective/paper.yaml" in resolved(line)["sources"]
                                   for line in lines)  # fmt: skip
    assert "objective paper" in out.splitlines()[0]
    assert main([*common, "--objective", "bogus"]) == 2
    assert "no such objective (OBJECTIVE=bogus); choose from lq, paper" in capsys.readouterr().err


def test_a_dry_run_plan_opens_no_parent_and_shows_the_one_resume_would_take(tmp_path, capsys):
    """``plan --dry-run`` beside a campaign leaves the store as it was (no new parent for ``--resume`` to pick); with
    ``--resume`` it shows the unfinished parent and only the children still to train; a parent of other seeds is
    refused as a resume would refuse it."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.table1(["scratch"])
    setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"))
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    _log_children(client, pid, experiment, {"test/act_goal_rate": [0.1, 0.2]})  # seeds 0 and 1 finished
    client.set_terminated(pid, "KILLED")

    def store() -> list[tuple[str, str]]:
        exp_id = client.get_experiment_by_name("lq-table1").experiment_id
        return sorted((r.info.run_id, r.info.status) for r in client.search_runs([exp_id], max_results=1000))

    before = store()
    common = ["experiment", "plan", "table1", "--encoders", "scratch", "--tracking-uri", uri, "--dry-run"]
    assert main([*common, "--seeds", "0", "1", "2", "--outputs", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert "parent run PARENT in MLflow experiment lq-table1" in out.splitlines()[0] and "--parent PARENT" in out
    assert main([*common, "--seeds", "0", "1", "2", "--outputs", str(tmp_path / "o"), "--resume"]) == 0
    out = capsys.readouterr().out
    assert f"parent run {pid} in MLflow experiment lq-table1" in out.splitlines()[0]
    commands = [line for line in out.splitlines()[1:] if line.startswith("lq ") and " experiment tables " not in line]
    kids = [line for line in commands if "/seed-" in line or f"--parent {pid}" in line]  # the agents' folders
    assert len(kids) == len(experiment.configs)  # seed 2's BC, RL and baselines children; seeds 0 and 1 finished
    assert all("/seed-2/config.yaml" in line or "--seeds 2" in line for line in kids), kids
    assert not list((tmp_path / "o").rglob("config.yaml"))  # a dry run writes no child's config either
    assert store() == before  # nothing opened, reopened or marked KILLED
    assert main([*common, "--seeds", "0", "1", "--resume"]) == 1
    assert f"parent run {pid} ran seeds '0 1 2', not '0 1'" in capsys.readouterr().err
    assert store() == before


def test_the_quick_profiles_test_only_evaluation_is_kept_where_a_table_reads_test_figures_alone(tmp_path):
    """The quick profile evaluates its agents on the test quests alone (``zero_shot: reported``): Table 1's children
    so, an experiment whose tables read the validation quests or the worlds never seen evaluates all of it."""
    setup = X.Setup(seeds=(0,), profile="quick", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"))  # fmt: skip

    def evaluations(experiment: X.Experiment) -> dict[str, str]:
        steps = [s for wave, _ in X.running.child_waves(experiment, setup, "pid") for s in wave if s.run.kind.agent]
        return {s.label: "all" if s.args[-2:] == ["--zero_shot", "all"] else s.run.config["zero_shot"] for s in steps}

    assert set(evaluations(X.table1(["scratch"])).values()) == {"reported"}
    generalisation = evaluations(X.EXPERIMENTS["generalisation"]())
    assert len(generalisation) > 2 and set(generalisation.values()) == {"all"}


def test_an_rl_child_waits_for_its_bc_childs_final_weights_not_its_evaluation(tmp_path):
    """The children's graph: each RL child after the BC child it starts from, the baselines after none; a BC child
    releases its slot once trained.json beside its checkpoint is newer than its start (the run removed an older one
    as it began, :func:`lq.data.outputs.unfinished`)."""
    setup = X.Setup(seeds=(0,), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    steps = {s.label: s for wave, _ in X.running.child_waves(X.table1(["scratch"]), setup, "pid") for s in wave}
    bc, rl = steps["bc-scratch-act_speech-hardcoded s0"], steps["rl-scratch-act_speech-hardcoded s0"]
    assert rl.after == [bc.label] and bc.after == []
    # only a child others wait for frees its slot early: the RL child and the baselines keep theirs to their end
    assert [label for label, s in steps.items() if s.released is not None] == [bc.label]
    checkpoint = Path(bc.run.checkpoint)
    checkpoint.parent.mkdir(parents=True)
    checkpoint.touch()
    started = time.time() - 1  # (a file's time may trail the clock by a tick)
    assert not bc.released(started)
    mark_trained(checkpoint)
    assert bc.released(started) and not bc.released(time.time() + 60)
    tasks = X.running._tasks(X.running.child_waves(X.table1(["scratch"]), setup, "pid"), setup)
    assert {t.label: list(t.after) for t in tasks}["rl-scratch-act_speech-hardcoded s0"] == [bc.label]
    # the preparation's steps wait for what they need, not for the whole wave before: the partner's calibration for
    # the environment's models (not the pretraining), the encoder's vectors for the pretraining (not the partner)
    two = dataclasses.replace(setup, jobs=2)
    prep = {t.label: t for t in X.running._tasks(X.running.preparation(X.table1(["general_light"]).configs, two), two)}
    assert set(prep["the partner's calibration"].after) == {"data", "partner small", "dm small"}
    assert set(prep["general_light vectors of the agents' spaces"].after) == {"data", "pretrain general_light"}
    assert prep["pretrain general_light"].slots == 2 and prep["partner small"].slots == 1  # on every core; one
    for jobs, width, pretraining in ((1, 2, 2), (3, 3, 3)):  # the partner and the DM two at once whatever the jobs
        at = dataclasses.replace(setup, jobs=jobs)
        waves = X.running.preparation(X.table1(["general_light"]).configs, at)
        slots = {t.label: t.slots for t in X.running._tasks(waves, at)}
        assert X.running._width(waves, at) == width and (slots["pretrain general_light"], slots["dm small"]) == (
            pretraining, 1
        )  # fmt: skip
    # two steps of one label (a table's worlds have their own data and partner) are two tasks, each waited for
    step = X.running.Step("data", ["data", "generate"])
    tasks = X.running._tasks([([step], 1), ([dataclasses.replace(step, args=["w"])], 1),
                              ([dataclasses.replace(step, label="p", after=["data"])], 1)], setup)  # fmt: skip
    assert [(t.label, list(t.after)) for t in tasks] == [
        ("data", []), ("data (2)", ["data"]), ("p", ["data", "data (2)"])
    ]  # fmt: skip


def test_prepare_encodes_the_agents_spaces_once_for_every_agent_of_a_pretrained_encoder(
    setup_dir, tmp_path, monkeypatch, capsys
):
    """With the partner, the DM and a pretrained encoder there, preparing trains nothing and leaves the encoder's
    vectors of the action and utterance spaces beside its checkpoint, where the agents' build reads them."""
    monkeypatch.chdir(ROOT)
    outputs = tmp_path / "outputs"
    trained_env_models(setup_dir, outputs)
    setup = X.Setup(seeds=(0,), data_dir=str(setup_dir / "data"), outputs=str(outputs), extra_args={"*": TINY_AGENT})
    X.prepare(X.table1(["general_light"]).configs, setup)
    out = capsys.readouterr().out
    assert " experiment spaces --profile tiny " in out and " --encoders general_light " in out and " fit " not in out
    stores = outputs / "pretrain" / "general_light" / "candidates"
    assert sorted(p.name.rsplit("-", 1)[0] for p in stores.iterdir()) == ["agent-actions", "agent-utterances"]
    assert X.preparation(X.table1(["general_light"]).configs, setup)[3][0][-1].done  # found by its key
    written = {p.name: p.stat().st_mtime_ns for p in stores.iterdir()}
    module = build_module(X.running.rl_run(X.Config("bc", "general_light"), setup, 0))
    module.build_agent()  # an agent of that encoder: its key matches, so it reads the stores and writes none
    assert {p.name: p.stat().st_mtime_ns for p in stores.iterdir()} == written
    saved = torch.load(next(stores.glob("agent-actions-*.pt")), weights_only=True)["embeddings"]
    assert torch.equal(module.agent.actions.frozen, saved) and len(saved) == len(module.action_space)


def test_the_plan_of_table1_names_every_preparation_step_and_child_as_a_command(tmp_path, monkeypatch):
    """30 agents (RL and BC, five encoders, three seeds), the baselines per seed, the preparation in order (general
    before adaptive, the environment's models and the spaces' vectors after them) and the tables; every agent line
    parses as its stage's command line."""
    monkeypatch.chdir(ROOT)
    setup = X.Setup(data_dir="data/default", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}", outputs=str(tmp_path / "o"))
    lines = X.plan(X.table1(), setup)
    steps = [line for line in lines[1:] if line.startswith("# step")]
    assert steps == [
        "# step 1 of 8: data",
        "# step 2 of 8: pretrain general",  # adaptive starts from it
        "# step 3 of 8: pretrain light, pretrain general_light, pretrain adaptive",
        "# step 4 of 8: partner small, dm small",
        "# step 5 of 8: the partner's calibration, general vectors of the agents' spaces, light vectors of the agents' "
        "spaces, general_light vectors of the agents' spaces, adaptive vectors of the agents' spaces",
        "# step 6 of 8: bc-general-act_speech-hardcoded, bc-light-act_speech-hardcoded, "
        "bc-general_light-act_speech-hardcoded, bc-adaptive-act_speech-hardcoded, bc-scratch-act_speech-hardcoded",
        "# step 7 of 8: rl-general-act_speech-hardcoded, rl-light-act_speech-hardcoded, "
        "rl-general_light-act_speech-hardcoded, rl-adaptive-act_speech-hardcoded, rl-scratch-act_speech-hardcoded, "
        "baselines-act_speech-hardcoded",  # beside the RL agents: they need no BC agent
        "# step 8 of 8: tables",
    ]
    commands = [shlex.split(line.split("  # done")[0]) for line in lines if not line.startswith("#")]
    assert all(c[0] == "lq" for c in commands) and len(commands) == 1 + 4 + 6 + 1 + 33 + 1
    agents = [c[1:] for c in commands if c[1] in ("rl", "bc")]
    assert (
        len(agents) == 30
        and len({(a[0], resolved(a)["model"]["encoder"]["name"], resolved(a)["model"]["seed"]) for a in agents}) == 30
    )
    parent = re.search(r"parent run (\w+)", lines[0]).group(1)
    for args in agents[:2]:  # two parse fully (every one is built by the same function)
        config = parsed_cli(args[0], args[2:]).config
        assert config.trainer.logger.init_args.tags["mlflow.parentRunId"] == parent
    assert [c[1:3] for c in commands].count(["experiment", "baselines"]) == 3
    assert commands[-1][1:5] == ["experiment", "tables", "table1", "--parent"] and commands[-1][5] == parent
    assert MlflowClient(setup.tracking_uri).get_run(parent).info.status == "RUNNING"  # the tables line finishes it


def test_a_tables_rl_children_run_seed_by_seed_so_a_table_cut_short_has_every_row(tmp_path):
    """Every configuration's first seed is trained before any configuration's second: a table stopped half-way (a
    session's end) has every row at one seed rather than some rows at three and others at none."""
    setup = X.Setup(seeds=(0, 1, 2), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    waves = X.running.child_waves(experiment, setup, "pid", done={("rl-scratch-act_speech-hardcoded", "0")})
    rl = [step.label for steps, _ in waves for step in steps if step.config.stage == "rl"]
    seeds = [int(label.rsplit(" s", 1)[1]) for label in rl]
    rows = len({step.config.key for steps, _ in waves for step in steps if step.config.stage == "rl"})
    assert seeds == sorted(seeds) and seeds.count(0) == rows - 1 and seeds.count(2) == rows
    assert rl[0] != "rl-scratch-act_speech-hardcoded s0"  # the finished child is not trained again


def test_a_child_that_another_needs_keeps_its_own_arguments(tmp_path):
    """An RL child needs the BC child it starts from (one run, whoever names it): the BC child's command line is its
    own, with the setup's extra arguments, whichever of the two the layers meet first."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), extra_args={"*": ["--model.candidate_dim=16"]})
    experiment = X.table1(["scratch"])
    experiment.configs = [c for c in experiment.configs if c.stage == "rl"] + [
        c for c in experiment.configs if c.stage != "rl"
    ]
    waves = X.running.child_waves(experiment, setup, "pid")
    [bc] = [s for steps, _ in waves for s in steps if s.config.stage == "bc"]
    assert bc.run.config["model"]["candidate_dim"] == 16 and bc.run.config["eval_seeds"] == setup.eval_seeds
    assert [s.config.stage for s in waves[0][0]] == ["bc"]  # before the RL agent that starts from it


def test_table45_of_adaptive_alone_pretrains_the_general_encoder_of_each_seeds_folder(tmp_path):
    """The adaptive encoder starts from the general one of its seed's folder: where the table has no general row,
    preparing it trains that one per seed (its seed, its folder), not the agents' general encoder."""
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["table45"](["adaptive"])
    waves = X.preparation(experiment.configs, setup, experiment.name)
    pretrained = [s.run.config for steps, _ in waves for s in steps if s.label == "pretrain general"]
    assert [(c["checkpoint"]["dirpath"], c["seed_everything"]) for c in pretrained] == [
        (f"{tmp_path}/o/experiments/table45/seed-{seed}/general", seed) for seed in (0, 1)
    ]
    children = X.running.child_waves(experiment, setup, "pid")
    assert [s.label for steps, _ in children for s in steps] == ["pretrain-adaptive s0", "pretrain-adaptive s1"]


def test_an_rl_child_stopped_mid_training_resumes_from_its_own_last_checkpoint_only(tmp_path):
    """A killed RL child's last.ckpt is resumed from (``--ckpt_path``) where it holds the rollout and the very
    hyperparameters the child would be built with; another run's, one without its rollout or a finished run's is not."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table1(["scratch"])
    run = X.running.run_of(X.Config("rl", "scratch"), setup, 0)
    last = Path(run.outputs["last"])

    def rl_step() -> list[str]:
        waves = X.running.child_waves(experiment, setup, "pid")
        [step] = [s for steps, _ in waves for s in steps if s.config.stage == "rl"]
        return list(step.args)

    # the child as it was launched: its resolved config, under its parent's tags (what only reports does not count)
    child = run.kind.child(run, experiment.name, "pid", {"mlflow.parentRunId": "pid"}, setup.tracking_uri)
    child.kind.write(child)
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    assert X.running.resumable(run) == str(last) and rl_step()[-2:] == ["--ckpt_path", str(last)]
    other = dataclasses.replace(run, extra=(*run.extra, "--model.lr", "1.0"))
    other.kind.write(other)
    assert X.running.resumable(run) is None and "--ckpt_path" not in rl_step()  # another run's: trained anew
    run.kind.write(run)
    torch.save({}, last)
    assert X.running.resumable(run) is None  # no rollout to go on from: it would not give the same figures
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    (last.parent / "agent.ckpt").touch()
    mark_finished(last.parent / "agent.ckpt")
    assert X.running.resumable(run) is None  # finished: nothing to resume


def test_a_child_launched_anew_and_stopped_at_once_is_not_resumed_from_an_earlier_runs_last_checkpoint(tmp_path):
    """Two parents share a configuration's folder (a deviation table's first row is Table 1's Scratch): the second
    parent's child, launched anew where the first's finished, and killed before its first checkpoint, is trained
    anew on resume, not resumed from the first run's last.ckpt (it would report that run's weights as its own)."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table1(["scratch"])
    run = X.running.run_of(X.Config("rl", "scratch"), setup, 0)
    last = Path(run.outputs["last"])

    def rl_step() -> X.running.Step:
        waves = X.running.child_waves(experiment, setup, "second")
        [step] = [s for steps, _ in waves for s in steps if s.config.stage == "rl"]
        return step

    run.kind.write(run)  # the first parent's child: trained to its end, its last.ckpt (with its rollout) kept
    torch.save({"lq_rollout": torch.zeros(1)}, last)
    Path(run.checkpoint).touch()
    mark_finished(run.checkpoint)
    step = rl_step()
    assert "--ckpt_path" not in step.args  # finished: the second parent's child starts anew
    step.write()  # launched, then killed before it saved a checkpoint
    assert not last.exists() and X.running.resumable(run) is None and "--ckpt_path" not in rl_step().args
    torch.save({"lq_rollout": torch.zeros(1)}, last)  # its own last.ckpt, once saved: resumed from, and kept so
    step = rl_step()
    assert step.args[-2:] == ["--ckpt_path", str(last)]
    step.write()
    assert last.exists()


RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")


def _printed_jobs(out: str) -> list[str]:
    """The command lines a plan printed that a run would launch: not those whose output exists (``# done``), not the
    tables line (the driver builds the tables itself); run ids as RUN."""
    lines = [line for line in out.splitlines() if line.startswith("lq ") and "  # done: " not in line]
    return [RUN_ID.sub("RUN", line) for line in lines if not line.startswith("lq experiment tables ")]


@pytest.mark.parametrize(
    "command",
    [
        *(
            ["stage", stage, "--encoder", encoder]
            for stage, encoder in (
                ("pretrain", "adaptive"),
                ("partner", "small"),
                ("dm", "small"),
                ("bc", "light"),
                ("rl", "scratch"),
            )
        ),
        ["stage", "rl", "--encoder", "general", "--compare"],
        ["stage", "rl", "--encoder", "scratch", "--compare", "--objective", "paper"],
        *(["experiment", name] for name in X.EXPERIMENTS
          if name not in ("deviations", "budget", "generalisation", "generalisation_long")),  # the last: see its test
        pytest.param(["experiment", "generalisation"], marks=pytest.mark.skipif(
            not (light_db() / "rooms.json").is_file(), reason=f"no LIGHT environment DB at {light_db()}")),
        ["experiment", "deviations", "--objective", "paper"],  # its tables name the paper objective
        ["experiment", "budget", "--objective", "paper"],
    ],
    ids=" ".join,
)
def test_what_a_plan_prints_is_what_runs(command, tmp_path, monkeypatch, capsys):
    """``lq stage --print`` and ``lq experiment plan`` print the jobs that ``lq stage`` and ``lq experiment run``
    launch, in the same waves: the three share one code path (the waves of :func:`stage_waves`, :func:`preparation`
    and :func:`child_waves`). Every stage and table, on empty outputs, the launcher a recorder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data" / "default").mkdir(parents=True)
    (tmp_path / "data" / "default" / "manifest.json").touch()
    recorder = Recorder()
    monkeypatch.setattr(launchers, "launcher", lambda *a, **k: recorder)
    common = ["--seeds", "0", "1", "--tracking-uri", f"sqlite:///{tmp_path / 'm.db'}"]
    kind, rest = command[0], command[1:]
    printing = [kind, *(["plan"] if kind == "experiment" else []), *rest, *common, *(["--print"] * (kind == "stage"))]
    assert main(printing) == 0
    printed = _printed_jobs(capsys.readouterr().out)
    assert main([kind, *(["run"] if kind == "experiment" else []), *rest, *common]) == 0
    capsys.readouterr()
    launched = [RUN_ID.sub("RUN", launchers.shown(args)) for wave in recorder.waves for args in wave]
    assert printed == launched and launched


def test_a_resumed_parent_starts_each_rl_child_once_its_own_bc_start_is_trained_not_every_start(tmp_path):
    """A parent resumed on a new machine whose BC children finished there: the local launcher runs the BC starts and
    the RL children as one graph, each start just before the first RL child that waits for it, each RL child after
    its own start alone (the starts of one seed and two pools are two jobs), so that an RL child runs beside the next
    start rather than after every one (the 19,600 pool's take an hour each); another launcher runs the starts first."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"), tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    launcher=Local())  # fmt: skip
    experiment = X.EXPERIMENTS["generalisation"]()
    done = {(c.key, "0") for c in experiment.configs if c.stage == "bc"}
    prep = X.running.preparation(experiment.configs, setup, experiment.name, done)
    children = X.running.child_waves(experiment, setup, "pid", done)
    tasks = X.running._tasks(X.running.resumed_waves(prep, children, setup), setup)
    order = [t.label for t in tasks]
    starts = [t for t in tasks if t.args[:2] == ["bc", "fit"]]
    assert len(starts) == 3 and len({t.label for t in starts}) == 3 and all(t.released for t in starts)
    assert {t.label.split(" in ")[1].split(" ")[0] for t in starts} == {"bc/own", "bc/pool1400", "bc/pool19600"}
    assert not [s for steps, _ in prep for s in steps if s.released]  # a start frees its slot early in this graph only
    rl = [t for t in tasks if t.label.startswith("rl-")]
    assert len(rl) == 5 and all({"the partner's calibration", "data", "data (2)"} <= set(t.after) for t in rl)
    start_of = {}
    for task in rl:
        [start_of[task.label]] = [a for a in task.after if a in {s.label for s in starts}]
        variant = task.label.split("-hardcoded-")[1].split(" ")[0]
        own = {"held_out": "own", "pool19600_rarity": "pool19600"}.get(variant, variant)
        assert start_of[task.label].endswith(f" in bc/{own} (the RL agent's start)")
        assert order.index(start_of[task.label]) < order.index(task.label)
    first = rl[0].label  # in the children's order: right after its start, before the last start
    assert order.index(first) == order.index(start_of[first]) + 1 < max(order.index(s.label) for s in starts)
    # another launcher: the preparation's waves, then the children's
    other = dataclasses.replace(setup, launcher=Recorder())
    assert X.running.resumed_waves(prep, children, other) == [*prep, *children]
