"""Reports of evaluations: Markdown and CSV tables of agents' results (mean ± std over seeds), where act goals were
lost, transcripts as HTML pages laid out as the paper's appendix; their cells and tables as :mod:`lq.results` draws
them."""

from __future__ import annotations

import html
from collections.abc import Sequence

from lq.envs.episode import PLAYERS, goal_line, outcome_line
from lq.envs.protocol import GOAL_RATES
from lq.eval.episodes import LOST, EvalResult
from lq.results import cell, markdown_table, mean_std_of

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


COLUMNS = tuple((attribute, title) for _, attribute, title in GOAL_RATES)  # EvalResult's rates, titled as in tables


def mean_std(results: Sequence[EvalResult]) -> dict[str, tuple[float, float]]:
    return {key: mean_std_of([getattr(r, key) for r in results]) for key, _ in COLUMNS}


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
