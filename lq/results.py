"""How lq shows figures: a table's cell (mean ± std over seeds), a Markdown table, an MLflow run's metric series, the
stages' learning curves and the budget figure. Plain numbers in, text or a PNG out: the evaluation (:mod:`lq.eval`) and
the experiments' tables (:mod:`lq.experiments`) both read this one module."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def mean_std_of(values: Sequence[float]) -> tuple[float, float]:
    """Mean and (population) standard deviation over seeds; 0 for a single value."""
    return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0


def cell(mean: float, std: float, n: int = 2) -> str:
    """A table's cell: the mean ± the std over ``n`` runs; one run's figure alone (its row says n = 1: a std of one run
    would read as a measured 0); NaN, a column that does not apply: "—"."""
    if mean != mean:
        return "—"
    return f"{mean:.3f}" if n == 1 else f"{mean:.3f} ± {std:.3f}"


def markdown_table(head: Sequence[str], rows: Sequence[Sequence[str]], numeric_from: int = 1) -> list[str]:
    """The lines of a Markdown table: ``head``, then ``rows``; the columns from ``numeric_from`` on align right (every
    results table of lq: agents, the paper's tables, Tables 4/5)."""
    align = ["---"] * numeric_from + ["---:"] * (len(head) - numeric_from)
    return ["| " + " | ".join(head) + " |", "|" + "|".join(align) + "|", *("| " + " | ".join(r) + " |" for r in rows)]


def run_series(client, run_id: str, metrics: Sequence[str]) -> dict[str, dict[int, float]]:
    """Each metric's history ``{step: value}`` in an MLflow run."""
    return {m: {p.step: p.value for p in client.get_metric_history(run_id, m)} for m in metrics}


# what each stage's learning curves plot (Figures 5 and 15 to 17 for RL, 13 and 14 for pretraining): a run's own
# curves (lq rl fit) and a table's (lq experiment) read this one list
CURVES = {
    "rl": ("rl/act_goal_rate", "rl/speech_goal_rate", "rl/return"),
    "bc": ("val/loss", "val/action_accuracy"),
    "pretrain": ("val/hits_at_1",),
}


def plot_curves(
    series: dict[str, Sequence[dict[str, dict[int, float]]]],
    metrics: Sequence[str],
    path,
    title: str,
    columns: int | None = None,
) -> bool:
    """Learning curves as one PNG: per label (a configuration), the mean over its runs (seeds) of each metric at the
    steps they share, shaded ± std. ``series[label]`` holds one :func:`run_series` per run. ``columns``: panels per
    row, in a figure 10 inches (1000 pixels) wide, so that a page as narrow as the MLflow UI's artifact viewer shows
    them readable (default: every panel in one row, 6 by 4 inches each). False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if columns is None:
        fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4), squeeze=False)
    else:
        rows = -(-len(metrics) // columns)
        fig, axes = plt.subplots(rows, columns, figsize=(10, 3.6 * rows), squeeze=False)
        for ax in axes.flat[len(metrics) :]:
            ax.set_axis_off()
    drawn = False
    for ax, metric in zip(axes.flat, metrics, strict=False):  # the grid's last cells unused
        for label, runs in series.items():
            histories = [r[metric] for r in runs if r.get(metric)]
            steps = sorted(set.intersection(*(set(h) for h in histories))) if histories else []
            if not steps:
                continue
            stats = [mean_std_of([h[x] for h in histories]) for x in steps]
            ax.plot(steps, [m for m, _ in stats], label=f"{label} ({len(histories)} seeds)")
            ax.fill_between(steps, [m - s for m, s in stats], [m + s for m, s in stats], alpha=0.2)
            drawn = True
        ax.set_title(metric)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=100)
    plt.close(fig)
    return drawn


def budget_label(budget: int) -> str:
    """32k, 100k, 1M: a budget (environment interactions) as the tables' rows and the figures' ticks name it."""
    return f"{budget // 1_000_000}M" if budget % 1_000_000 == 0 else f"{budget // 1000}k"


LEVEL_STYLES = ("--", ":", "-.", (0, (5, 1)), (0, (3, 1, 1, 1, 1, 1)))  # a level's line: one style each, up to five


def plot_budget(
    curves: dict[str, dict[str, dict[int, list[float]]]],
    levels: dict[str, dict[str, list[float]]],
    panels: Sequence[Sequence[str]],
    path,
    title: str,
    row_names: Sequence[str] = ("validation", "test"),
    level_of: dict[str, str] | None = None,
) -> bool:
    """Goal rates against environment interactions (log axis), one panel per metric title of ``panels`` (rows of
    panels, named ``row_names``: validation, test, ...): per label of ``curves`` (an objective) the seeds' mean at each
    budget, shaded from their lowest to their highest; per label of ``levels`` (BC, a baseline) its seeds' mean as a
    horizontal line, grey, or in the colour of the curve ``level_of`` names for it (BC on a curve's training quests).
    False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, cols = len(panels), max(len(r) for r in panels)
    # constrained layout keeps the legend, outside below the panels, clear of every panel
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False, layout="constrained")
    drawn = False
    colours = {label: f"C{i % 10}" for i, label in enumerate(curves)}  # a curve's, in every panel
    seeds = {  # a curve's most seeds at a point, over every panel: one legend entry per curve
        label: max((len(v) for by_budget in by_metric.values() for v in by_budget.values()), default=0)
        for label, by_metric in curves.items()
    }
    for r, row in enumerate(panels):
        for c, metric in enumerate(row):
            ax = axes[r][c]
            for label, by_metric in curves.items():
                points = sorted((b, v) for b, v in by_metric.get(metric, {}).items() if v)
                if not points:
                    continue
                xs = [b for b, _ in points]
                means = [statistics.fmean(v) for _, v in points]
                ax.plot(xs, means, marker="o", color=colours[label], label=f"{label} (≤{seeds[label]} seeds)")
                lows, highs = [min(v) for _, v in points], [max(v) for _, v in points]
                ax.fill_between(xs, lows, highs, color=colours[label], alpha=0.2)
                drawn = True
            for i, (label, by_metric) in enumerate(levels.items()):
                if by_metric.get(metric):
                    style = LEVEL_STYLES[i % len(LEVEL_STYLES)]
                    colour = colours.get((level_of or {}).get(label), "grey")
                    ax.axhline(statistics.fmean(by_metric[metric]), color=colour, linestyle=style, label=label)
            ax.set_xscale("log")
            budgets = sorted({b for by_metric in curves.values() for b, v in by_metric.get(metric, {}).items() if v})
            if budgets:  # ticks at the budgets, named as the tables' rows name them (32k, 1M), not 3 x 10^4
                ax.set_xticks(budgets, labels=[budget_label(b) for b in budgets])
                ax.minorticks_off()
            ax.set_title(metric, fontsize=10)
            ax.set_xlabel("environment interactions")
            if c == 0:
                ax.set_ylabel(f"{row_names[r]} goal rate" if r < len(row_names) else "goal rate")
            ax.grid(alpha=0.3)
    legend = {}  # label -> handle, every panel's, each label once
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            legend.setdefault(label, handle)
    if legend:
        fig.legend(legend.values(), legend.keys(), loc="outside lower center", ncol=min(3, len(legend)), fontsize=8)
    fig.suptitle(title)
    if drawn:
        fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
    return drawn
