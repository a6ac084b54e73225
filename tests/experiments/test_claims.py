"""The paper's claims as orderings of table cells, each marked, and the results page generated from the store alone
(:mod:`lq.experiments.claims`)."""

from mlflow.tracking import MlflowClient

from lq import experiments as X
from lq.cli import main


def test_the_claims_verdicts_by_hand():
    from lq.experiments.claims import verdict

    assert verdict([0.5, 0.6, 0.7], [0.1, 0.2, 0.3]) == "holds"
    assert verdict([0.1, 0.2, 0.3], [0.5, 0.6, 0.7]) == "does not hold"
    # a difference of 0.02 against a standard error of sqrt(2 * 0.01 / 3) = 0.082
    assert verdict([0.42, 0.52, 0.62], [0.40, 0.50, 0.60]) == "within noise"
    assert verdict([0.9], [0.1]) == "not tested (one seed)" and verdict([], [0.1, 0.2]) == "not run"


def test_the_results_page_is_generated_from_the_store_the_same_twice_with_each_ordering_marked(tmp_path, capsys):
    """Table 1 under both objectives in one store: the page holds both parents' tables, each with its identity, and
    marks RL against BC per objective; a second build from the same store writes the same bytes."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    rates = {"paper": {"rl": [0.10, 0.12, 0.14], "bc": [0.30, 0.32, 0.34]},
             "lq": {"rl": [0.50, 0.52, 0.54], "bc": [0.30, 0.32, 0.34]}}  # fmt: skip
    for objective in ("paper", "lq"):
        experiment = X.table1(["scratch"], objective=objective)
        setup = X.Setup(seeds=(0, 1, 2), tracking_uri=uri, outputs=str(tmp_path / "o"), objective=objective)
        pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
        exp_id = client.get_run(pid).info.experiment_id
        for config in experiment.configs:
            for seed in range(3):
                tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
                child = client.create_run(exp_id, tags=tags).info.run_id
                if config.stage in ("rl", "bc"):
                    client.log_metric(child, "test/act_and_speech_goal_rate", rates[objective][config.stage][seed])
                else:
                    client.log_metric(child, "baselines/overlap_all/act_and_speech_goal_rate", 0.3)
                client.set_terminated(child, "FINISHED")
        client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    first = page.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first
    text = first.decode()
    sections = {part.splitlines()[0]: part for part in text.split("\n## ")[1:]}
    paper = sections["Table 1: encoder types, RL (paper objective)"]
    lq = sections["Table 1: encoder types, RL from BC + imitation (lq objective)"]
    assert "profile `tiny`, protocol `paper`, objective `paper`" in paper and "objective `lq`" in lq
    # a marked line quotes its cells as the table above prints them (population std: 0.016 for 0.10, 0.12, 0.14)
    row = next(line for line in paper.splitlines() if line.startswith("| Scratch |"))
    assert "| 0.120 ± 0.016 |" in row and "| 0.320 ± 0.016 |" in row
    assert (
        "- RL above BC (Scratch, act & speech goals): 0.120 ± 0.016 against 0.320 ± 0.016: **does not hold**" in paper
    )
    assert "- RL above BC (Scratch, act & speech goals): 0.520 ± 0.016 against 0.320 ± 0.016: **holds**" in lq
    assert "## Not run yet at this profile and protocol" in text and "- table2 (lq objective)" in text
    # an experiment is listed under the objectives its spec runs (the others it refuses), Tables 4/5 under none
    assert "- generalisation (lq objective)" in text and "- generalisation (paper objective)" not in text
    assert "- table45\n" in text and "- deviations (paper objective)" in text and "deviations (lq" not in text


def test_the_deviation_tables_reading_marks_which_departure_moves_which_column():
    from lq.experiments.claims import departure_matrix

    experiment = X.EXPERIMENTS["deviations"](objective="paper")
    base, bc_start = experiment.tables[0].rows[0][0], experiment.tables[0].rows[1][0]
    values = {(base, "Act goals"): [0.50, 0.52, 0.54], (bc_start, "Act goals"): [0.70, 0.72, 0.74],
              (base, "Speech goals"): [0.20, 0.22, 0.24], (bc_start, "Speech goals"): [0.21, 0.23, 0.25],
              (base, "Act & Speech"): [0.20, 0.22, 0.24], (bc_start, "Act & Speech"): [0.10, 0.12, 0.14]}  # fmt: skip

    def cells() -> list[str]:
        row = next(line for line in departure_matrix(experiment, values) if line.startswith(f"| {bc_start} |"))
        return row.removesuffix(" |").split(" | ")[4:7]

    # act goals up, speech goals within noise, act & speech down; in brackets the difference over its standard error:
    # 0.2 / sqrt(2 * 0.0004 / 3) = 12.2, 0.01 / 0.0163 = 0.6
    assert cells() == ["+ (+12.2)", "· (+0.6)", "− (−6.1)"]
    values[(bc_start, "Speech goals")] = [0.19, 0.22, 0.25]  # the same mean: no difference, and no sign on it
    assert cells()[1] == "· (0.0)"
    values[(bc_start, "Act goals")] = [0.70]
    assert cells()[0] == "?"  # one seed: no verdict and no distance


def test_a_tables_identity_names_the_partner_and_dm_its_children_played_and_says_where_they_differ():
    """The identity line's environment models come from the children's ``lq.partner`` and ``lq.dm`` tags: nothing for
    children from before they were tagged, one pair where all agree, each pair counted where they do not."""
    from types import SimpleNamespace

    from lq.experiments.claims import environment_models

    def child(**tags):
        return SimpleNamespace(data=SimpleNamespace(tags={f"lq.{k}": v for k, v in tags.items()}))

    assert environment_models([child(), child()]) == ""
    same = [child(partner="aa", dm="bb"), child(partner="aa", dm="bb")]
    assert environment_models(same) == ", partner `aa`, DM `bb`"
    assert environment_models([*same, child(partner="cc", dm="bb"), child()]) == (
        ", children against different environment models: partner `aa`, DM `bb` (2 children); "
        "partner `cc`, DM `bb` (1 child); not recorded (1 child)"
    )


def test_the_budget_reading_names_the_first_budget_that_passes_each_bar_on_validation_and_its_test_figures():
    """Chosen on validation, reported on test: the first budget whose validation act & speech goals are above the bar
    by one standard error; at none where every budget with two seeds is not; one seed's figures given without a
    verdict; lq's objective has no 1M row (no seed of it goes there)."""
    from lq.experiments.claims import budget_reading

    experiment = X.EXPERIMENTS["budget"](objective="paper")
    assert "RL (lq objective), 1M interactions" not in [row for row, _ in experiment.tables[0].rows]
    paper = "RL (paper objective), {} interactions".format
    val, test = "Val act & speech", "Act & Speech"
    budget = {("BC", val): [0.12, 0.13, 0.14], ("BC", test): [0.10, 0.10, 0.10],
              (paper("32k"), val): [0.05, 0.06, 0.07], (paper("100k"), val): [0.12, 0.14, 0.13],
              (paper("320k"), val): [0.30, 0.31, 0.32], (paper("320k"), test): [0.20, 0.21, 0.22],
              (paper("1M"), val): [0.50]}  # fmt: skip
    overlap = {("Word overlap (whole spaces)", val): [0.40, 0.41, 0.42]}
    lines = budget_reading(experiment, {"budget": budget, "budget_baselines": overlap})
    said = [line for line in lines if line.startswith("- ")]
    assert said == [
        "- RL (paper objective), act & speech above BC on validation: first at 320k interactions (0.310 ± 0.008 "
        "against 0.130 ± 0.008); on test there 0.210 ± 0.008 against 0.100 ± 0.000: **holds**.",
        "- RL (paper objective), act & speech above word overlap on validation: at none of 32k, 100k, 320k; at 1M one "
        "seed: 0.500 against 0.410 ± 0.008.",
        "- RL (lq objective), act & speech above BC on validation: not tested yet.",
        "- RL (lq objective), act & speech above word overlap on validation: not tested yet.",
    ]
    row = next(line for line in lines if line.startswith(f"| {paper('32k')} |"))
    assert row.split(" | ")[1:3] == ["− (−8.6)", "− (−42.9)"]  # 0.07 / sqrt(2 * 0.0001 / 3); 0.35 / 0.00816
    assert next(line for line in lines if line.startswith(f"| {paper('100k')} |")).split(" | ")[1] == "· (0.0)"


def test_the_candidates_table_names_its_choice_by_the_rule_fixed_before_it_ran():
    """The candidate above lq's objective in validation act & speech goals by one standard error, and below it in no
    validation column, is chosen; of two, the higher; none while a candidate has one seed; none if none passes."""
    from lq.experiments.claims import choice

    experiment = X.EXPERIMENTS["candidates"](variants=["gain_lr", "temperature", "valid_positives"])
    base, gain, temperature, positives, bc = (row for row, _ in experiment.tables[0].rows)
    flat = [0.20, 0.22, 0.24]
    values = {(row, c): flat for row in (base, gain, temperature, positives, bc) for c in
              ("Val act goals", "Val speech goals", "Val act & speech")}  # fmt: skip
    values[(bc, "Val act & speech")] = [0.9, 0.91, 0.92]  # BC is no candidate
    assert choice(experiment, values).endswith("none: no candidate is above RL from BC + imitation (lq objective) "
                                               "by the rule; its objective stays.")  # fmt: skip
    values[(gain, "Val act & speech")] = [0.30, 0.32, 0.34]
    values[(temperature, "Val act & speech")] = [0.40, 0.42, 0.44]
    values[(temperature, "Val act goals")] = [0.10, 0.11, 0.12]  # above in act & speech, below in act goals
    assert f"** {gain} (val act & speech 0.320 ± 0.016 against 0.220 ± 0.016;" in choice(experiment, values)
    values[(temperature, "Val act goals")] = flat
    assert f"** {temperature} (val act & speech 0.420" in choice(experiment, values)
    values[(positives, "Val act & speech")] = [0.5]
    assert choice(experiment, values).endswith("not yet: 1 of 3 candidates have fewer than two seeds.")


def test_the_generalisation_page_draws_each_variant_against_interactions_on_three_panels(tmp_path):
    """From its records alone: each variant's row at each budget, its agent chosen on validation, BC per training
    quests and the baselines, with validation, test and worlds columns; its figure (one panel per column, written once,
    the same bytes again)."""
    experiment = X.EXPERIMENTS["generalisation"]()
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    setup = X.Setup(seeds=(0, 1), outputs=str(tmp_path / "o"), tracking_uri=uri)
    pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
    exp_id = client.get_run(pid).info.experiment_id
    for config in experiment.configs:
        for seed in (0, 1):
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": str(seed)}
            child = client.create_run(exp_id, tags=tags).info.run_id
            for split in ("val", "test", "worlds"):
                if config.stage == "baselines":
                    prefix = {"val": "baselines_val", "test": "baselines", "worlds": "baselines_worlds"}[split]
                    client.log_metric(child, f"{prefix}/random_valid/act_goal_rate", 0.7)
                    continue
                client.log_metric(child, f"{split}/act_and_speech_goal_rate", 0.2 + seed / 100)
                for b in X.specs.GENERALISATION_BUDGETS if config.stage == "rl" else ():
                    client.log_metric(child, f"budget/{b}/{split}/act_and_speech_goal_rate", b / 1e6 + seed / 100)
            client.set_terminated(child, "FINISHED")
    client.set_terminated(pid, "FINISHED")
    page = tmp_path / "docs" / "current.md"
    argv = ["experiment", "report", "--tracking-uri", uri, "--page", str(page)]
    assert main(argv) == 0
    figure = page.parent / "img" / "generalisation-tiny-paper.png"
    first, drawn = page.read_bytes(), figure.read_bytes()
    assert main(argv) == 0 and page.read_bytes() == first and figure.read_bytes() == drawn
    text = first.decode()
    row = next(line for line in text.splitlines() if line.startswith("| RL, + 19,600 generated quests, 320k inter"))
    assert row.count("0.325 ± 0.005") == 3  # validation, test and worlds act & speech: 0.32 and 0.33
    row = next(line for line in text.splitlines() if line.startswith("| RL, its own training quests, chosen on val"))
    assert row.count("0.205 ± 0.005") == 3
    assert "| BC, + 1,400 generated quests |" in text and "Worlds act & speech" in text
    assert 'a row "chosen on validation" is the agent of the best validation act & speech goals' in text


def test_every_ordering_names_cells_its_tables_have_and_table45_marks_the_papers_trends():
    """Each marked ordering compares two cells of its experiment's tables (a typo would mark it "not run" for ever);
    Tables 4/5 mark each of the paper's four trends in both tables, the quest curve's "Scratch the most" as gains."""
    from lq.experiments.claims import orderings

    for name, build in X.EXPERIMENTS.items():
        experiment = build(objective="paper" if name in ("deviations", "budget") else "lq")
        cells = {(t.name, row, column) for t in experiment.tables for row, cols in t.rows for column in cols}
        for o in orderings(experiment):
            assert {o.better, o.worse, *filter(None, (o.better_from, o.worse_from))} <= cells, (name, o.claim)
    claims = [o.claim for o in orderings(X.table45())]
    assert "Short motivations above none (Adaptive, bag of actions, All Hits@1)" in claims
    # the paper's four trends, each in both tables: motivations (5 encoders x 3), ATOMIC-LIGHT (each motivation
    # setting), more quests (Scratch, General+Light) and Scratch the most, Scratch's easiest action (above 4 others,
    # and not on the others) and Adaptive's
    for start, count in (("Short motivations above none", 5), ("short motivations the most", 5),
                         ("ATOMIC-LIGHT above ATOMIC", 3), ("more training quests help", 2),
                         ("Scratch gains the most", 1), ("Scratch best on the easiest", 4),
                         ("Scratch not best on the others", 1), ("Adaptive lowest on the easiest", 4)):  # fmt: skip
        assert sum(c.startswith(start) for c in claims) == 2 * count, start
    gains = [o for o in orderings(X.table45()) if o.better_from]
    assert all(o.better_from[0] == o.worse_from[0] == "quests" for o in gains) and len(gains) == 2
    # over the span both have: Scratch from 12 to 50 quests, General+Light from 12 to its slice (about 50 at tiny)
    assert {(o.better[1], o.better_from[1], o.worse[1], o.worse_from[1]) for o in gains} == {
        ("Scratch, 50 training quests", "Scratch, 12 training quests",
         "General+Light, all training quests", "General+Light, 12 training quests")}  # fmt: skip


def test_a_gain_ordering_compares_differences_of_means_with_their_standard_errors():
    """"Scratch gains the most from more quests": Scratch's gain (all quests over 12) against General+Light's, each a
    difference of seed means with its standard error; the verdict at one standard error of the two gains' difference."""
    from lq.experiments.claims import Ordering, marking

    places = [("quests", f"{e}, {n}", "c") for e in ("S", "G") for n in ("all", "12")]
    gain = Ordering("Scratch gains the most", places[0], places[2], places[1], places[3])

    def marked(s_all, s_12, g_all, g_12):
        return marking(gain, {"quests": dict(zip([p[1:] for p in places], (s_all, s_12, g_all, g_12), strict=True))})

    # Scratch +0.30 ± 0.01, General+Light +0.10 ± 0.01: holds (the se: each side's sample std over sqrt(2), squared
    # and added)
    assert marked([0.4, 0.42], [0.1, 0.12], [0.5, 0.52], [0.4, 0.42]) == (
        "gain +0.300 ± 0.014 against +0.100 ± 0.014 (± its standard error): **holds**"
    )
    assert marked([0.4, 0.42], [0.1, 0.12], [0.9, 0.92], [0.4, 0.42]).endswith("**does not hold**")
    assert marked([0.4, 0.5], [0.1, 0.2], [0.5, 0.6], [0.2, 0.3]).endswith("**within noise**")  # 0.3 vs 0.3
    assert marked([0.4, 0.5], [], [0.5, 0.6], [0.2, 0.3]) == "gains n/a: **not run**"
    assert marked([0.4], [0.1], [0.5], [0.2]) == "**not tested (one seed)**"


def test_the_language_model_experiment_is_on_the_page_under_its_own_protocol(tmp_path):
    """The LLM experiment's zero-shot rows run on a CPU under the restricted protocol: the results page of the paper
    protocol shows its newest restricted parent (its LLM row beside the agents'), and its record is exported under
    that protocol's name; a parent of the page's own protocol is not what it shows."""
    from lq.experiments.claims import export_current, results_page

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(uri)
    experiment = X.EXPERIMENTS["llm"]()
    for protocol, rate in (("restricted", 0.375), ("paper", 0.9)):
        setup = X.Setup(seeds=(0,), tracking_uri=uri, outputs=str(tmp_path / "o"), protocol=protocol)
        pid, _ = X.parents.open_parent(client, experiment, setup, False, print)
        exp_id = client.get_run(pid).info.experiment_id
        for config in experiment.configs:
            tags = {"mlflow.parentRunId": pid, "lq.config": config.key, "lq.seed": "0", "lq.stage": config.stage}
            child = client.create_run(exp_id, tags=tags).info.run_id
            client.log_metric(child, "test/act_goal_rate", rate if config.stage == "llm" else 0.5)
            client.set_terminated(child, "FINISHED")
        client.set_terminated(pid, "FINISHED")
    text = results_page(uri, "tiny", "paper", ["llm"])
    section = text.split("\n## ")[1]
    assert section.startswith(experiment.title) and "protocol `restricted`" in section
    row = next(line for line in section.splitlines() if line.startswith("| SmolLM2-135M-Instruct zero-shot, score"))
    assert "| 0.375 |" in row and "0.900" not in section
    written = export_current(uri, "tiny", "paper", tmp_path / "records")
    assert "tiny-restricted-llm-lq.json.gz" in [p.name for p in written]
