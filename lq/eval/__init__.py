"""Evaluation, in one package: playing zero-shot episodes (:mod:`lq.eval.episodes`: :func:`evaluate`, both decodings
in one environment with :func:`decodings`), the baselines' runner (:mod:`lq.eval.baseline_results`), agents evaluated
and compared with the baselines (:mod:`lq.eval.agents`) and reports (:mod:`lq.eval.reports`: tables, transcripts as
HTML, learning curves).

Below the Lightning stages (:mod:`lq.lit` calls it with an agent's environment and actor), above the environment and
the actor it plays.
"""

from lq.eval.agents import (
    Playable,
    agent_baselines,
    compare_agents,
    evaluate_agent,
    first_quests,
    other_decoding,
    zero_shot,
    zero_shot_lines,
)
from lq.eval.baseline_results import baseline_results
from lq.eval.episodes import LOST, EvalResult, decodings, evaluate
from lq.eval.reports import COLUMNS, lost_table, mean_std, results_table, transcripts_html
from lq.results import CURVES, cell, markdown_table, mean_std_of, plot_budget, plot_curves, run_series
from lq.rl.registry import TITLES

__all__ = [
    "COLUMNS",
    "CURVES",
    "LOST",
    "TITLES",
    "EvalResult",
    "Playable",
    "agent_baselines",
    "baseline_results",
    "cell",
    "compare_agents",
    "decodings",
    "evaluate",
    "evaluate_agent",
    "first_quests",
    "lost_table",
    "markdown_table",
    "mean_std",
    "mean_std_of",
    "other_decoding",
    "plot_budget",
    "plot_curves",
    "results_table",
    "run_series",
    "transcripts_html",
    "zero_shot",
    "zero_shot_lines",
]
