"""Reports of evaluations: Markdown and CSV tables (mean ± std over seeds), where act goals were lost, transcripts as
HTML pages laid out as the paper's appendix, and learning curves as PNG from MLflow runs."""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence

from lq.envs.episode import PLAYERS, goal_line, outcome_line
from lq.envs.protocol import GOAL_RATES
from lq.eval.episodes import LOST, EvalResult

HTML_STYLE = """
body { font-family: Georgia, serif; max-width: 52em; margin: 2em auto; color: #222; background: #fdfbf6; }
.episode { border: 1px solid #d8d0bd; border-radius: 8px; padding: 1em 1.4em; margin-bottom: 2em; background: #fff; }
.card td { vertical-align: top; padding: 0.15em 0.8em 0.15em 0; } .card td:first-child { font-weight: bold; }
.turn { display: flex; margin: 0.45em 0; } .turn.self { justify-content: flex-end; }
.bubble { max-width: 70%; padding: 0.45em 0.8em; border-radius: 12px; background: #eee7d6; }
.self .bubble { background: #d7e6f5; } .who { font-size: 0.75em; color: #666; display: block; }
.action .bubble { font-style: italic; border: 1px dashed #8a7a55; } .result { font-size: 0.8em; color: #555; }
.goal .bubble { outline: 3px solid #3a8d3a; } .outcome { font-weight: bold; margin-top: 1em; }
.reached { text-align: center; color: #3a8d3a; font-weight: bold; margin: 0.3em 0; }
"""


def transcripts_html(episodes: Sequence[dict], title: str = "lq transcripts") -> str:
    """Episodes (their summaries) as one HTML page laid out as the paper's appendix: the quest card (setting,
    partner and self with persona and what they carry, motivation), then the turns as a chat, the partner's on the
    left and the agent's on the right, actions marked (with the engine's answer) and the turn that reached the act
    goal outlined, then the outcome; each side credited to who played it (an episode's ``players``: the agent and the
    environment's partner unless a person played one, as in ``lq play``)."""
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"]
    parts.append(f"<style>{HTML_STYLE}</style></head><body><h1>{esc(title)}</h1>")
    for e in episodes:
        card = e.get("card", {})
        rows = [
            ("Quest", f"{card.get('quest_id', e.get('quest_id', ''))} (goal: {card.get('goal', '')})"),
            ("Setting", card.get("setting", "")),
        ]
        players = e.get("players") or PLAYERS  # who played each side: the agent and its partner, or a person
        for side, label in (("partner", "Partner"), ("self", "Self")):
            who = card.get(side, {})
            rows.append(
                (f"{label} (played by {players[side]})",
                 f"{who.get('name', '')}. {who.get('persona', '')} Carrying: {who.get('carrying', '')}")
            )  # fmt: skip
        rows.append(("Motivation", card.get("motivation", "")))
        parts.append("<div class='episode'><table class='card'>")
        parts += [f"<tr><td>{esc(k)}</td><td>{esc(v)}</td></tr>" for k, v in rows]
        parts.append("</table>")
        for turn in e.get("turns", []):
            classes = " ".join(
                [turn["side"], "action" if turn["kind"] == "action" else "speech"]
                + (["goal"] if turn.get("reached_goal") else [])
            )
            text = esc(turn["text"])
            if turn["kind"] == "action":
                text = f"&#9655; {text} <span class='result'>[{esc(turn.get('result', ''))}]</span>"
            parts.append(
                f"<div class='turn {classes}'><div class='bubble'><span class='who'>{esc(turn['name'])}</span>"
                f"{text}</div></div>"
            )
            if turn.get("reached_goal"):  # the text transcript's line, under the turn that reached it
                line = goal_line(card.get("goal", ""), turn["name"], turn["side"], players)
                parts.append(f"<div class='reached'>{esc(line)}</div>")
        parts.append(f"<div class='outcome'>{esc(outcome_line(e))}</div></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def mean_std_of(values: Sequence[float]) -> tuple[float, float]:
    """Mean and (population) standard deviation over seeds; 0 for a single value."""
    return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0


COLUMNS = tuple((attribute, title) for _, attribute, title in GOAL_RATES)  # EvalResult's rates, titled as in tables


def mean_std(results: Sequence[EvalResult]) -> dict[str, tuple[float, float]]:
    return {key: mean_std_of([getattr(r, key) for r in results]) for key, _ in COLUMNS}


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


def results_table(rows: Sequence[tuple[str, Sequence[EvalResult]]]) -> tuple[str, str]:
    """Markdown and CSV of named rows, each the mean and standard deviation over its runs (seeds)."""
    md_rows, csv = [], ["agent,runs," + ",".join(f"{key}_mean,{key}_std" for key, _ in COLUMNS)]
    for name, results in rows:
        stats = mean_std(results)
        md_rows.append([name, str(len(results)), *(cell(*stats[k], len(results)) for k, _ in COLUMNS)])
        csv.append(f"{name},{len(results)}," + ",".join(f"{stats[k][0]:.4f},{stats[k][1]:.4f}" for k, _ in COLUMNS))
    md = markdown_table(["Agent", "runs", *(title for _, title in COLUMNS)], md_rows)
    return "\n".join(md) + "\n", "\n".join(csv) + "\n"


def lost_table(rows: Sequence[tuple[str, Sequence[EvalResult]]]) -> str:
    """Markdown of where each row's act goals were lost (:attr:`EvalResult.where_lost`), beside the act goals
    reached, each a share of the episodes, mean ± std over the row's runs; rows without episodes are left out."""
    md_rows = []
    for name, results in rows:
        if not all(r.episodes for r in results):
            continue
        n = len(results)
        cells = [cell(*mean_std_of([r.act_goal_rate for r in results]), n)]
        cells += [cell(*mean_std_of([r.where_lost[key] for r in results]), n) for key in LOST]
        md_rows.append([name, str(len(results)), *cells])
    head = ["Agent", "runs", "Act goals", *(f"lost: {title}" for title in LOST.values())]
    return "\n".join(markdown_table(head, md_rows)) + "\n"


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
    for ax, metric in zip(axes.flat, metrics):
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


def plot_budget(
    curves: dict[str, dict[str, dict[int, list[float]]]],
    levels: dict[str, dict[str, list[float]]],
    panels: Sequence[Sequence[str]],
    path,
    title: str,
    row_names: Sequence[str] = ("validation", "test"),
) -> bool:
    """Goal rates against environment interactions (log axis), one panel per metric title of ``panels`` (rows of
    panels, named ``row_names``: validation, test, ...): per label of ``curves`` (an objective) the seeds' mean at each
    budget, shaded from their lowest to their highest; per label of ``levels`` (BC, a baseline) its seeds' mean as a
    horizontal line. False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows, cols = len(panels), max(len(r) for r in panels)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    drawn = False
    for r, row in enumerate(panels):
        for c, metric in enumerate(row):
            ax = axes[r][c]
            for label, by_metric in curves.items():
                points = sorted((b, v) for b, v in by_metric.get(metric, {}).items() if v)
                if not points:
                    continue
                xs = [b for b, _ in points]
                seeds = max(len(v) for _, v in points)
                ax.plot(xs, [statistics.fmean(v) for _, v in points], marker="o", label=f"{label} (≤{seeds} seeds)")
                ax.fill_between(xs, [min(v) for _, v in points], [max(v) for _, v in points], alpha=0.2)
                drawn = True
            for i, (label, by_metric) in enumerate(levels.items()):
                if by_metric.get(metric):
                    style = ("--", ":", "-.")[i % 3]
                    ax.axhline(statistics.fmean(by_metric[metric]), color="grey", linestyle=style, label=label)
            ax.set_xscale("log")
            ax.set_title(metric, fontsize=10)
            ax.set_xlabel("environment interactions")
            if c == 0:
                ax.set_ylabel(f"{row_names[r]} goal rate" if r < len(row_names) else "goal rate")
            ax.grid(alpha=0.3)
            if r == 0 and c == 0 and ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    if drawn:
        fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)
    return drawn
