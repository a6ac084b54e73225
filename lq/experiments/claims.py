"""The paper's claims as orderings of table cells, each marked holds / does not hold / within noise, and the results
page generated from the MLflow store alone (``make tables`` -> ``docs/results/current.md``).

An ordering says one cell's mean is above another's ("RL above BC, Scratch, act & speech goals"). It *holds* where the
difference is more than one standard error of the difference (the seeds' sample stds over the square root of their
counts, added in quadrature), *does not hold* where it is more than one standard error the other way, and is *within
noise* otherwise; with fewer than two seeds on a side it is *not tested*.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lq.experiments.records import ORIGIN, parent_record_name, write_record
from lq.experiments.reporting import (
    _client,
    budget_png,
    children_by_status,
    cpu_seconds,
    evaluated_line,
    experiment_for,
    latest_parent,
    render,
    table_values,
)
from lq.experiments.specs import (
    BUDGET_RUNS,
    BUDGET_TITLES,
    ENCODER_TITLES,
    EXPERIMENTS,
    GOALS,
    MOTIVATION_TITLES,
    PRETRAIN_VARIANTS,
    QUEST_COUNTS,
    SPAN,
    TIMELINE_TABLES,
    VALIDATION_GOALS,
    Experiment,
    budget_label,
    budget_row,
    budgets_of,
    objectives_of,
    rl_title,
    row_prefix,
)
from lq.results import cell, markdown_table, mean_std_of

Place = tuple[str, str, str]  # (table, row, column)


@dataclass(frozen=True)
class Ordering:
    claim: str  # what the paper (or lq's issue) says, in words
    better: Place
    worse: Place
    better_from: Place | None = None  # where given, the claim compares gains: better - better_from above
    worse_from: Place | None = None  # worse - worse_from


def verdict(better: Sequence[float], worse: Sequence[float]) -> str:
    """``holds``, ``does not hold`` or ``within noise`` (one standard error of the difference), ``not tested`` with
    fewer than two seeds on a side, ``not run`` where a side has none."""
    if not better or not worse:
        return "not run"
    if len(better) < 2 or len(worse) < 2:
        return "not tested (one seed)"
    return _sign(*difference(better, worse))


def _sign(diff: float, se: float) -> str:
    return "holds" if diff > se else "does not hold" if diff < -se else "within noise"


def marking(o: Ordering, values: dict[str, dict]) -> str:
    """An ordering's two sides (mean ± std over seeds, as the tables print them; a gain: its difference of means ±
    its standard error) and its verdict."""
    better, worse = (values[t].get((r, c), []) for t, r, c in (o.better, o.worse))
    if o.better_from is None or o.worse_from is None:
        return f"{_mean_std(better)} against {_mean_std(worse)}: **{verdict(better, worse)}**"
    sides = [(better, values[o.better_from[0]].get(o.better_from[1:], [])),
             (worse, values[o.worse_from[0]].get(o.worse_from[1:], []))]  # fmt: skip
    if not all(a and b for a, b in sides):
        return "gains n/a: **not run**"
    if any(len(a) < 2 or len(b) < 2 for a, b in sides):
        return "**not tested (one seed)**"
    (gain, gain_se), (other, other_se) = (difference(a, b) for a, b in sides)
    mark = _sign(gain - other, math.hypot(gain_se, other_se))
    return f"gain {gain:+.3f} ± {gain_se:.3f} against {other:+.3f} ± {other_se:.3f} (± its standard error): **{mark}**"


def difference(better: Sequence[float], worse: Sequence[float]) -> tuple[float, float]:
    """The difference of the seeds' means and its standard error: the sample stds over the square root of their
    counts, added in quadrature (two seeds or more on each side)."""
    se = math.sqrt(statistics.variance(better) / len(better) + statistics.variance(worse) / len(worse))
    return statistics.fmean(better) - statistics.fmean(worse), se


def orderings(experiment: Experiment) -> list[Ordering]:
    """The orderings the paper claims of ``experiment``'s tables (section 5), and lq's own bar for its RL agents: above
    BC and the word-overlap rule over the whole spaces, in speech goals and act & speech."""
    name, out = experiment.name, []
    titles = [ENCODER_TITLES[e] for e in experiment.encoders]
    if name == "table1":
        rl = rl_title(experiment.objective)
        both, speech = f"{rl} Act & Speech", f"{rl} Speech goals"
        out += [
            Ordering(f"RL above BC ({e}, act & speech goals)", (name, e, both), (name, e, "BC Act & Speech"))
            for e in titles
        ]
        for e in titles:
            for column, goals in ((speech, "Speech goals"), (both, "Act & Speech")):
                out.append(
                    Ordering(
                        f"RL above the word-overlap rule over the whole spaces ({e}, {goals.lower()}; lq's bar)",
                        (name, e, column),
                        (f"{name}_baselines", "Word overlap (whole spaces)", goals),
                    )
                )
        for column, stage in ((both, "RL"), ("BC Act & Speech", "BC")):
            if "Adaptive" in titles:
                out += [
                    Ordering(
                        f"Adaptive best under {stage} (act & speech goals, over {e})",
                        (name, "Adaptive", column),
                        (name, e, column),
                    )  # fmt: skip
                    for e in titles
                    if e != "Adaptive"
                ]
        out += [
            Ordering(f"Scratch above {e} under RL (act & speech goals)", (name, "Scratch", both), (name, e, both))
            for e in ("General", "Light")
            if "Scratch" in titles and e in titles
        ]
        if {"General", "Light"} <= set(titles):
            out.append(Ordering("General above Light under RL (act & speech goals)",
                                (name, "General", both), (name, "Light", both)))  # fmt: skip
            out.append(Ordering("Light above General under BC (act & speech goals)",
                                (name, "Light", "BC Act & Speech"), (name, "General", "BC Act & Speech")))  # fmt: skip
        out += [
            Ordering(
                f"{e} (pretrained) above Scratch under BC (act & speech goals)",
                (name, e, "BC Act & Speech"),
                (name, "Scratch", "BC Act & Speech"),
            )  # fmt: skip
            for e in titles
            if e != "Scratch" and "Scratch" in titles
        ]
    elif name == "table2":
        for e in titles:
            out += [
                Ordering(f"Act Only above Act+Speech in act goals ({e})",
                         (name, "Act Only", f"{e} Act goals"), (name, "Act+Speech", f"{e} Act goals")),
                Ordering(f"Speech Only above Act+Speech in speech goals ({e})",
                         (name, "Speech Only", f"{e} Speech goals"), (name, "Act+Speech", f"{e} Speech goals")),
                Ordering(f"no speech goals above Speech Only in act goals ({e})",
                         (name, "Speech Only, no speech goals", f"{e} Act goals"),
                         (name, "Speech Only", f"{e} Act goals")),
            ]  # fmt: skip
    elif name == "table45":
        out += table45_trends(titles)
    elif name == "table7":
        out += [
            Ordering(f"the learned switch above the hardcoded one ({e}, act & speech goals)",
                     (name, f"{e}, Learned switch", "Act & Speech"), (name, f"{e}, Hardcoded switch", "Act & Speech"))
            for e in titles
        ]  # fmt: skip
    return out


def table45_trends(titles: Sequence[str]) -> list[Ordering]:
    """The paper's four trends of Tables 4 and 5 (appendix 8.1), per table: motivations help (short and long & mid
    above none, All Hits@1, per encoder) and short ones the most (above long & mid); ATOMIC-LIGHT above ATOMIC without
    domain adaptation (General+Light, All Hits@1, each motivation setting); more training quests help (all above the
    fewest, short motivations, Scratch and General+Light), Scratch the most (its gain above General+Light's); Scratch
    best on the easiest action (Easiest Hits@1, short motivations, above each encoder) but not on the others (Leave
    easiest out Hits@1, below Adaptive), and Adaptive lowest there (below each encoder)."""
    out = []
    fewest = f"{min(QUEST_COUNTS['scratch'])} training quests"
    for table, kind in TIMELINE_TABLES:
        for e in titles:
            for level in ("Short motivations", "Long & mid motivations"):
                above = f"{level.split(' motivations')[0]} motivations above none ({e}, {kind}, All Hits@1)"
                out.append(Ordering(above,
                                    (table, f"{e}, {level}", "All Hits@1"),
                                    (table, f"{e}, No motivations", "All Hits@1")))  # fmt: skip
            out.append(Ordering(f"short motivations the most useful ({e}, {kind}, All Hits@1, over long & mid)",
                                (table, f"{e}, Short motivations", "All Hits@1"),
                                (table, f"{e}, Long & mid motivations", "All Hits@1")))  # fmt: skip
        if "General+Light" in titles:
            atomic = f"General+Light, {PRETRAIN_VARIANTS['atomic']}"
            out += [
                Ordering(f"ATOMIC-LIGHT above ATOMIC without domain adaptation (General+Light, {kind}, All Hits@1, "
                         f"{level.lower()})", (table, f"General+Light, {level}", "All Hits@1"),
                         (table, f"{atomic}, {level}", "All Hits@1"))
                for level in MOTIVATION_TITLES.values()
            ]  # fmt: skip
        column = f"{kind.capitalize()} All Hits@1"
        curves = [ENCODER_TITLES[e] for e in QUEST_COUNTS if ENCODER_TITLES[e] in titles]
        out += [
            Ordering(f"more training quests help ({e}, {kind}, All Hits@1, all over {fewest})",
                     ("quests", f"{e}, all training quests", column), ("quests", f"{e}, {fewest}", column))
            for e in curves
        ]  # fmt: skip
        if len(curves) == 2:  # over the span both have: Scratch to SPAN quests, General+Light to its slice
            out.append(Ordering(f"Scratch gains the most from more quests ({kind}, All Hits@1, {SPAN} over {fewest}, "
                                "above General+Light's gain from as few to its whole slice)",
                                ("quests", f"Scratch, {SPAN} training quests", column),
                                ("quests", "General+Light, all training quests", column),
                                ("quests", f"Scratch, {fewest}", column),
                                ("quests", f"General+Light, {fewest}", column)))  # fmt: skip
        if "Scratch" in titles:
            out += [
                Ordering(f"Scratch best on the easiest action ({kind}, short motivations, Easiest Hits@1, above {e})",
                         (table, "Scratch, Short motivations", "Easiest Hits@1"),
                         (table, f"{e}, Short motivations", "Easiest Hits@1"))
                for e in titles
                if e != "Scratch"
            ]  # fmt: skip
            if "Adaptive" in titles:
                out.append(Ordering(f"Scratch not best on the others ({kind}, short motivations, Leave easiest out "
                                    "Hits@1, below Adaptive)",
                                    (table, "Adaptive, Short motivations", "Leave easiest out Hits@1"),
                                    (table, "Scratch, Short motivations", "Leave easiest out Hits@1")))  # fmt: skip
        if "Adaptive" in titles:
            out += [
                Ordering(f"Adaptive lowest on the easiest action ({kind}, short motivations, Easiest Hits@1, "
                         f"below {e})",
                         (table, f"{e}, Short motivations", "Easiest Hits@1"),
                         (table, "Adaptive, Short motivations", "Easiest Hits@1"))  # fmt: skip
                for e in titles
                if e != "Adaptive"
            ]
    return out


def _mean_std(values: Sequence[float]) -> str:
    """The seeds' figures as the tables print them (:func:`lq.results.cell`: mean ± population std), so that a
    marked line quotes the cells above it."""
    return cell(*mean_std_of(values), len(values)) if values else "n/a"


def environment_models(runs: Sequence) -> str:
    """The partner and DM a parent's finished children played (their ``lq.partner`` and ``lq.dm`` tags:
    :func:`lq.lit.cli.model_tags`), for its identity line: the one pair, or each pair with its children's count where
    they differ (its cells then mix environments); nothing where no child recorded them (made before lq did)."""
    pairs = Counter(
        f"partner `{r.data.tags['lq.partner']}`, DM `{r.data.tags['lq.dm']}`" if "lq.partner" in r.data.tags else None
        for r in runs
    )
    if set(pairs) <= {None}:
        return ""
    if len(pairs) == 1:
        return f", {next(iter(pairs))}"
    counts = (f"{pair or 'not recorded'} ({n} {'child' if n == 1 else 'children'})" for pair, n in pairs.most_common())
    return ", children against different environment models: " + "; ".join(counts)


def section(client, experiment: Experiment, parent_id: str, images: Path | None = None) -> list[str]:
    """One parent's part of the results page: its identity, its tables as ``build_tables`` renders them, its figure
    where it has one (the budget experiment's, written into ``images`` and linked), and each of the paper's orderings
    marked."""
    run = client.get_run(parent_id)
    tags, params = run.data.tags, run.data.params
    runs, unfinished = children_by_status(client, parent_id)
    values = {table.name: table_values(client, runs, table, unfinished) for table in experiment.tables}
    day = time.strftime("%Y-%m-%d", time.gmtime(run.info.start_time / 1000))
    objective = tags.get("lq.objective", "lq")
    # the heading names the objective once (Tables 2 and 7 name it in their titles already; the budget's rows each
    # name their own)
    each_row = experiment.name == "budget"
    if each_row:
        objectives = ", objectives " + " and ".join(f"`{o}`" for o, _ in BUDGET_RUNS.values()) + " (as each row says)"
    else:
        objectives = f", objective `{objective}`" if experiment.objective else ""
    named = not each_row and bool(experiment.objective) and rl_title(objective) not in experiment.title
    lines = [
        f"## {experiment.title}" + (f", {rl_title(objective)}" if named else ""),
        "",
        f"Parent run `{tags.get(ORIGIN, parent_id)}` ({day}): profile `{tags.get('lq.profile', '?')}`, protocol "
        f"`{tags.get('lq.protocol', '?')}`"
        + objectives
        + f", data `{tags.get('lq.data', '?')}`{environment_models(runs)}, seeds {params.get('seeds', '?')}, commit "
        f"`{tags.get('lq.commit', 'unknown')[:12]}`.",
        "",
        cost_line(client, [*runs, *unfinished]),
        "",
    ]
    evaluated = evaluated_line(experiment, tags.get("lq.protocol"))
    if images is not None:
        name = f"{experiment.name}-{tags.get('lq.profile', '?')}-{tags.get('lq.protocol', '?')}.png"
        images.mkdir(parents=True, exist_ok=True)
        if budget_png(experiment, values, images / name):
            lines += [f"![{experiment.title}]({images.name}/{name})", ""]
    for table in experiment.tables:
        md, _ = render(table, values[table.name], evaluated)
        lines += [md.rstrip("\n"), ""]
    if experiment.name in ONE_AT_A_TIME:
        lines += departure_matrix(experiment, values[experiment.name])
    if experiment.name == "candidates":
        lines += [choice(experiment, values["candidates"]), ""]
    if experiment.name == "budget":
        lines += budget_reading(experiment, values)
    marked = orderings(experiment)
    if marked:
        lines += ["The paper's orderings (one standard error of the difference; mean ± std over seeds, as above):", ""]
        lines += [f"- {o.claim}: {marking(o, values)}" for o in marked]
        lines.append("")
    return lines


def cost_line(client, runs: Sequence) -> str:
    """What a parent's child runs (``runs``: all of them, finished or not) cost in CPU time: the sum of their
    ``time/cpu_s`` (each process's own CPU time, so neither a pause nor a second job beside it counts), over every
    child, a killed one to its last epoch's end and the run that resumed it from there. The preparation (data,
    environment models, encoders) is not a child."""
    seconds = [s for s in (cpu_seconds(client, run) for run in runs) if s is not None]
    if not seconds:
        return f"Cost: not measured (its {len(runs)} child runs ran before lq logged their CPU time, `time/cpu_s`)."
    hours = sum(seconds) / 3600
    spent = f"{hours:.1f} CPU hours" if hours >= 1 else f"{hours * 60:.0f} CPU minutes"
    ended = sum(run.info.status != "FINISHED" for run in runs)
    parts = [f"Cost: {spent} in its {len(runs)} child runs"]
    parts += [f" ({ended} of them killed or failed before the end, each configuration run again or resumed from its "
              "last checkpoint)"] * bool(ended)  # fmt: skip
    parts += [", the CPU time of their processes (`time/cpu_s`); preparing data, models and encoders not counted"]
    missing = len(runs) - len(seconds)
    if missing:  # run before lq logged it, or stopped before its first epoch ended
        parts += [f"; {missing} of them logged no CPU time and {'is' if missing == 1 else 'are'} not counted"]
    return "".join(parts) + "."


# the experiments whose rows each add one change to their first: a matrix of which change moves which column
ONE_AT_A_TIME = ("deviations", "candidates")
SIGNS = {"holds": "+", "does not hold": "−", "within noise": "·", "not tested (one seed)": "?", "not run": ""}


def departure_matrix(experiment: Experiment, values: dict[tuple[str, str], list[float]]) -> list[str]:
    """Which departures move which column: for each row after the paper objective's, against it, ``+`` above it by
    more than one standard error of the difference, ``−`` below, ``·`` within noise (``?``: one seed)."""
    table = experiment.tables[0]
    (base, cells), *others = table.rows
    columns = list(cells)
    rows = [
        [row, *(_departure(values.get((row, c), []), values.get((base, c), [])) for c in columns)] for row, _ in others
    ]
    head = (
        f"Against the first row ({base}): + above it, − below it, · within one standard error of the difference; in "
        "brackets, the difference in standard errors. By chance alone, one standard error is passed in about a third "
        "of the cells or more."
    )
    return [head, "", *markdown_table(["", *columns], rows), ""]


def _departure(row: Sequence[float], base: Sequence[float]) -> str:
    """A matrix cell: the verdict's mark and, with two seeds or more on each side, the difference over its standard
    error (as :func:`verdict` computes them)."""
    mark = SIGNS[verdict(row, base)]
    if len(row) < 2 or len(base) < 2:
        return mark
    diff, se = difference(row, base)
    if not se:
        return mark
    z = round(diff / se, 1)
    return f"{mark} ({z:+.1f})".replace("-", "−") if z else f"{mark} (0.0)"  # the marks' minus sign; no signed zero


# the budget experiment's bars (issue 62), each read at every budget on the validation quests: (the bar, the RL row's
# column, the table of the reference row (its suffix), the reference row); BC's row is the encoder's own
BUDGET_BARS = (
    ("Act & speech above BC", "Val act & speech", "", "BC"),
    ("Act & speech above word overlap", "Val act & speech", "_baselines", "Word overlap (whole spaces)"),
    ("Act goals above BC", "Val act goals", "", "BC"),
    ("Act goals above random (valid)", "Val act goals", "_baselines", "Random (valid candidates)"),
)
TEST_COLUMN = {val: test for (val, _), (test, _) in zip(VALIDATION_GOALS, GOALS, strict=True)}


def budget_reading(experiment: Experiment, values: dict[str, dict[tuple[str, str], list[float]]]) -> list[str]:
    """The budget experiment's answers, from its cells alone: which of :data:`BUDGET_BARS` each objective's run passes
    at which budget on the validation quests (a matrix marked as the deviation table's), and for each act & speech
    bar the first budget that passes it, with the test quests' figures there (chosen on validation, reported on
    test)."""
    name, matrix, answers = experiment.name, [], []

    def sides(row: str, bar: tuple[str, str, str, str], column: str, who: str) -> tuple[list[float], list[float]]:
        """The RL row's cell in ``column`` and the bar's reference cell (BC's: the encoder's own row)."""
        _, _, table, reference = bar
        ours = values[name].get((row, column), [])
        return ours, values[name + table].get((("" if table else who) + reference, column), [])

    for e in experiment.encoders:
        who = row_prefix(experiment.encoders, e)
        for variant, title in BUDGET_TITLES.items():
            rows = {b: budget_row(experiment.encoders, e, variant, b) for b in budgets_of(variant)}
            for row in rows.values():
                matrix.append([row, *(_departure(*sides(row, bar, bar[1], who)) for bar in BUDGET_BARS)])
            for bar in (bar for bar in BUDGET_BARS if bar[1] == "Val act & speech"):
                said = f"- {who}{title}, {bar[0][0].lower()}{bar[0][1:]} on validation"
                verdicts = {b: verdict(*sides(row, bar, bar[1], who)) for b, row in rows.items()}
                passed = [b for b, v in verdicts.items() if v == "holds"]
                if passed:
                    val, test = (sides(rows[passed[0]], bar, c, who) for c in (bar[1], TEST_COLUMN[bar[1]]))
                    said += (
                        f": first at {budget_label(passed[0])} interactions ({_mean_std(val[0])} against "
                        f"{_mean_std(val[1])}); on test there {_mean_std(test[0])} against {_mean_std(test[1])}: "
                        f"**{verdict(*test)}**"
                    )
                else:
                    tested = [budget_label(b) for b, v in verdicts.items() if v in ("does not hold", "within noise")]
                    said += f": at none of {', '.join(tested)}" if tested else ": not tested yet"
                    for b in (b for b, v in verdicts.items() if v.startswith("not tested")):  # one seed: no verdict
                        val = sides(rows[b], bar, bar[1], who)
                        said += f"; at {budget_label(b)} one seed: {_mean_std(val[0])} against {_mean_std(val[1])}"
                answers.append(said + ".")
    head = (
        "Which bar each run passes at which budget, on the validation quests: + above it by more than one standard "
        "error of the difference, − below it, · within one; ? one seed; in brackets, the difference in standard "
        "errors."
    )
    columns = ["", *(bar for bar, *_ in BUDGET_BARS)]
    return [head, "", *markdown_table(columns, matrix), "", "The first budget that passes each bar:", "", *answers, ""]


CHOSEN_ON = "Val act & speech"  # the candidates table's rule (docs/experiments.md, fixed before it ran)


def choice(experiment: Experiment, values: dict[tuple[str, str], list[float]]) -> str:
    """The candidates table's choice, by its rule: among the rows that add a candidate, those above the first row in
    validation act & speech goals by more than one standard error of the difference and below it in no validation
    column by more than one; of them, the highest in validation act & speech goals."""
    (base, cells), *others = experiment.tables[0].rows
    validation = [c for c in cells if c.startswith("Val ")]
    rows = [row for row, cells in others if any(c.config.variant in experiment.variants for c in cells.values())]
    verdicts = {
        row: {c: verdict(values.get((row, c), []), values.get((base, c), [])) for c in validation} for row in rows
    }
    undecided = [row for row in rows if verdicts[row][CHOSEN_ON] in ("not run", "not tested (one seed)")]
    if undecided:
        return (
            f"**Chosen on validation:** not yet: {len(undecided)} of {len(rows)} candidates have fewer than two seeds."
        )
    passing = [
        row for row in rows
        if verdicts[row][CHOSEN_ON] == "holds" and "does not hold" not in verdicts[row].values()
    ]  # fmt: skip
    if not passing:
        return f"**Chosen on validation:** none: no candidate is above {base} by the rule; its objective stays."
    best = max(passing, key=lambda row: statistics.fmean(values[(row, CHOSEN_ON)]))
    return (
        f"**Chosen on validation:** {best} ({CHOSEN_ON.lower()} {_mean_std(values[(best, CHOSEN_ON)])} against "
        f"{_mean_std(values[(base, CHOSEN_ON)])}; the rule: [experiments.md](../experiments.md), the candidates table)."
    )


def results_page(
    tracking_uri: str,
    profile: str,
    protocol: str,
    names: Sequence[str] = tuple(EXPERIMENTS),
    images: Path | None = None,
) -> str:
    """The results page of ``profile`` and ``protocol``: for each experiment and RL objective, the newest finished
    parent run in the store (:func:`current_parents`), as :func:`section` writes it. The same store gives the same
    page, byte for byte, and so does a store the parents' records were imported into (:mod:`lq.experiments.records`).
    """
    client = _client(tracking_uri)
    lines = [
        "# Results: the current tables",
        "",
        f"Generated by `make tables` (`lq experiment report --profile {profile} --protocol {protocol}`) from the "
        "MLflow store: do not edit by hand. Each table is the newest finished parent run of its experiment and "
        "identity; its cells are means ± std over the seeds of its children, on the test quests (defaults are chosen "
        "on the validation quests, `val/` metrics of the same runs). The std is the seeds' population std; the "
        "standard errors that mark the orderings and the matrices use their sample variances. Earlier defaults' "
        "figures: "
        "[archive/](archive/README.md); what changed when: [CHANGELOG.md](CHANGELOG.md).",
        "",
    ]
    missing = []
    for name, objective, parent in current_parents(tracking_uri, profile, protocol, names):
        if parent is None:
            missing.append(f"{name} ({objective} objective)" if objective else name)
            continue
        lines += section(client, experiment_for(client, parent), parent, images)
    if missing:
        lines += ["## Not run yet at this profile and protocol", "", *(f"- {m}" for m in missing), ""]
    return "\n".join(lines)


def current_parents(
    tracking_uri: str, profile: str, protocol: str, names: Sequence[str] = tuple(EXPERIMENTS)
) -> list[tuple[str, str | None, str | None]]:
    """The parents the results page shows, in its order: for each experiment and RL objective (None where it trains
    no RL), the newest finished parent of ``profile`` and ``protocol`` (the experiment's own, where it has one:
    :attr:`Experiment.protocol`) in the store, None if there is none."""
    return [
        (name, objective, latest_parent(tracking_uri, name, profile, page_protocol(name, protocol), objective))
        for name in names
        for objective in objectives_of(name)
    ]


def page_protocol(name: str, protocol: str) -> str:
    """The protocol whose parents of experiment ``name`` a results page of ``protocol`` shows: its own, where its spec
    names one (:attr:`Experiment.protocol`), else the page's."""
    return EXPERIMENTS[name]().protocol or protocol


def export_current(tracking_uri: str, profile: str, protocol: str, out_dir: str | Path) -> list[Path]:
    """Write the record of each parent the results page of ``profile`` and ``protocol`` shows, one file per table
    and objective (``PROFILE-PROTOCOL-EXPERIMENT[-OBJECTIVE].json.gz``, replaced when a newer parent finishes). The
    campaign's own record of such a parent in the same folder (``EXPERIMENT-PARENT_ID.json.gz``, written at each
    stop by :func:`lq.experiments.records.export_parent`) is then removed: the page's file holds it, finished."""
    client = _client(tracking_uri)
    written = []
    for name, objective, parent in current_parents(tracking_uri, profile, protocol):
        if parent is not None:
            table = f"{name}-{objective}" if objective else name
            file = f"{profile}-{page_protocol(name, protocol)}-{table}.json.gz"
            written.append(write_record(client, parent, Path(out_dir) / file))
            (Path(out_dir) / parent_record_name(client.get_run(parent))).unlink(missing_ok=True)
    return written


def write_results_page(tracking_uri: str, profile: str, protocol: str, out: str | Path) -> Path:
    from lq.data.io import atomic_open

    out = Path(out)
    with atomic_open(out, "w", encoding="utf-8") as f:
        f.write(results_page(tracking_uri, profile, protocol, images=out.parent / "img"))
    return out
