"""The figure of an experiment evaluated at budgets (``lq.experiments.reporting.budget_png``): a curve per variant over
its budgets, and levels for BC and the baselines, read from the tables' cells."""

from lq.experiments import reporting
from lq.experiments.specs import EXPERIMENTS
from lq.results import plot_budget


def _values(experiment):
    """Every cell of every table, a value of its own (its row's place among the table's rows, in hundredths)."""
    return {
        table.name: {(row, column): [i / 100] for i, (row, cells) in enumerate(table.rows) for column in cells}
        for table in experiment.tables
    }


def test_the_generalisation_figure_has_a_curve_per_variant_and_bc_on_each_pool_as_a_level(tmp_path, monkeypatch):
    experiment = EXPERIMENTS["generalisation"]()
    values = _values(experiment)
    assert reporting.budget_png(experiment, values, tmp_path / "generalisation.png")
    assert (tmp_path / "generalisation.png").read_bytes()[:4] == b"\x89PNG"

    drawn = {}
    monkeypatch.setattr(reporting, "plot_budget", lambda curves, levels, *_: drawn.update(curves=curves, levels=levels))
    reporting.budget_png(experiment, values, tmp_path / "again.png")
    table = dict(experiment.tables[0].rows)
    bcs = [row for row in table if row.startswith("BC, ")]
    assert bcs == ["BC, its own training quests", "BC, + 1,400 generated quests", "BC, + 19,600 generated quests"]
    assert list(drawn["levels"]) == [*bcs, "Word overlap (whole spaces)", "Random (valid candidates)"]
    rows = [row for row, _ in experiment.tables[0].rows]
    for bc in bcs:  # each pool's BC is its own row's cells, in every panel
        assert drawn["levels"][bc]["Worlds act & speech"] == [rows.index(bc) / 100]
    curve = drawn["curves"]["+ 19,600 generated quests, rarity curriculum"]["Act & Speech"]
    titled = "RL, + 19,600 generated quests, rarity curriculum, {} interactions"
    assert curve == {b: [rows.index(titled.format(label)) / 100] for b, label in
                     ((32_000, "32k"), (100_000, "100k"), (320_000, "320k"))}  # fmt: skip


def test_a_figure_with_nothing_to_draw_is_not_written(tmp_path):
    panels = [["Act goals"]]
    assert not plot_budget({"RL": {"Act goals": {32_000: []}}}, {}, panels, tmp_path / "none.png", "nothing")
    assert not (tmp_path / "none.png").exists()
    assert not reporting.budget_png(EXPERIMENTS["table1"](), {}, tmp_path / "t1.png")  # no budgets: no figure
