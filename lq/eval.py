"""Zero-shot evaluation (paper 5): one episode per test quest under the environment's protocol
(:mod:`lq.envs.protocol`); act goal, speech goal and both, and the share of act goals the partner reached; greedy or
sampled (temperature 1) decoding.

The same code path serves behaviour cloning and RL agents and the baselines (an :class:`lq.rl.acting.Actor` with a
rule of :mod:`lq.rl.baselines` for a policy), all with the same switch in the same environment.
"""

from __future__ import annotations

import html
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from lq.data.progress import Progress
from lq.envs.quest_env import QuestEnv
from lq.envs.replay import by_whom
from lq.rl.acting import Actor


@dataclass
class EvalResult:
    act_goal_rate: float
    speech_goal_rate: float
    act_and_speech_rate: float
    episodes: list[dict] = field(default_factory=list, repr=False)

    @classmethod
    def of(cls, episodes: list[dict]) -> EvalResult:
        """The rates of played episodes (their summaries, :meth:`QuestEnv.episode_summary`)."""
        n = max(len(episodes), 1)
        return cls(
            act_goal_rate=sum(e["act_goal"] for e in episodes) / n,
            speech_goal_rate=sum(e["speech_goal"] for e in episodes) / n,
            act_and_speech_rate=sum(e["act_goal"] and e["speech_goal"] for e in episodes) / n,
            episodes=episodes,
        )

    @property
    def partner_act_goal_rate(self) -> float:
        """The share of episodes whose act goal the partner reached (NaN without episodes, e.g. the ceiling)."""
        return by_whom(self.episodes, "partner") if self.episodes else float("nan")

    def metrics(self, prefix: str = "") -> dict[str, float]:
        """The rates under their MLflow names (``<prefix>act_goal_rate``, ``...speech_goal_rate``,
        ``...act_and_speech_goal_rate``, ``...partner_act_goal_rate``)."""
        return {
            f"{prefix}act_goal_rate": self.act_goal_rate,
            f"{prefix}speech_goal_rate": self.speech_goal_rate,
            f"{prefix}act_and_speech_goal_rate": self.act_and_speech_rate,
            f"{prefix}partner_act_goal_rate": self.partner_act_goal_rate,
            **{f"{prefix}{key}": value for key, value in self.where_lost.items()},
        }

    @property
    def where_lost(self) -> dict[str, float]:
        """Where the act goals that were not reached were lost (:data:`LOST`), each as a share of all episodes: the goal
        action never valid at an agent turn (outside the action space, or out of the engine's reach for the self
        character: only the partner could do it); valid only at turns the agent spoke; valid at turns it acted, and
        another action taken. NaN without episodes (the ceiling)."""
        missed = [e for e in self.episodes if not e["act_goal"]]
        counts = dict.fromkeys(LOST, 0)
        for e in missed:
            if not e["goal_open_turns"]:
                counts["lost_never_valid"] += 1
            elif not e["goal_open_acts"]:
                counts["lost_speaking"] += 1
            else:
                counts["lost_not_taken"] += 1
        n = len(self.episodes)
        return {key: count / n if n else float("nan") for key, count in counts.items()}

    GROUPS = (
        ("Self act completion transcripts", "self"),
        ("Partner act completion transcripts", "partner"),
        ("Act goal not reached", None),
    )

    def grouped(self) -> list[tuple[str, list[dict]]]:
        """The episodes grouped as the paper's appendix groups them: the agent reached the act goal itself, the
        partner reached it, neither did; within a group, episodes that also reached the speech goal first."""
        return [
            (title, sorted((e for e in self.episodes if e["act_goal_by"] == by), key=lambda e: not e["speech_goal"]))
            for title, by in self.GROUPS
        ]

    def transcripts(self) -> str:
        """Every episode as the paper's appendix shows them (the quest, then each turn, the agent's to the right), in
        :meth:`grouped`'s order."""
        parts = []
        for title, chosen in self.grouped():
            both = sum(e["speech_goal"] for e in chosen)
            parts.append(f"=== {title}: {len(chosen)} episodes, {both} of them with the speech goal ===")
            parts += [
                f"{e['transcript']}\n  => act goal: {e['act_goal_by'] or 'no'}, speech score {e['speech_score']:.2f}"
                f" (speech goal: {'yes' if e['speech_goal'] else 'no'}), {e['steps']} turns"
                for e in chosen
            ]
        return "\n\n".join(parts) + "\n"

    def transcripts_html(self, title: str) -> str:
        """:meth:`transcripts` as an HTML page (:func:`transcripts_html`), in the same order."""
        return transcripts_html([e for _, chosen in self.grouped() for e in chosen], title)


HTML_STYLE = """
body { font-family: Georgia, serif; max-width: 52em; margin: 2em auto; color: #222; background: #fdfbf6; }
.episode { border: 1px solid #d8d0bd; border-radius: 8px; padding: 1em 1.4em; margin-bottom: 2em; background: #fff; }
.card td { vertical-align: top; padding: 0.15em 0.8em 0.15em 0; } .card td:first-child { font-weight: bold; }
.turn { display: flex; margin: 0.45em 0; } .turn.self { justify-content: flex-end; }
.bubble { max-width: 70%; padding: 0.45em 0.8em; border-radius: 12px; background: #eee7d6; }
.self .bubble { background: #d7e6f5; } .who { font-size: 0.75em; color: #666; display: block; }
.action .bubble { font-style: italic; border: 1px dashed #8a7a55; } .result { font-size: 0.8em; color: #555; }
.goal .bubble { outline: 3px solid #3a8d3a; } .outcome { font-weight: bold; margin-top: 1em; }
"""


def transcripts_html(episodes: Sequence[dict], title: str = "lq transcripts") -> str:
    """Episodes (their summaries) as one HTML page laid out as the paper's appendix: the quest card (setting,
    partner and self with persona and what they carry, motivation), then the turns as a chat, the partner's on the
    left and the agent's on the right, actions marked (with the engine's answer) and the turn that reached the act
    goal outlined, then the outcome."""
    esc = html.escape
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"]
    parts.append(f"<style>{HTML_STYLE}</style></head><body><h1>{esc(title)}</h1>")
    for e in episodes:
        card = e.get("card", {})
        rows = [
            ("Quest", f"{card.get('quest_id', e.get('quest_id', ''))} (goal: {card.get('goal', '')})"),
            ("Setting", card.get("setting", "")),
        ]
        for side, label in (("partner", "Partner"), ("self", "Self (the agent)")):
            who = card.get(side, {})
            rows.append((label, f"{who.get('name', '')}. {who.get('persona', '')} Carrying: {who.get('carrying', '')}"))
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
        by = e.get("act_goal_by")
        outcome = f"act goal reached by the {'agent' if by == 'self' else 'partner'}" if by else "act goal not reached"
        speech = "speech goal reached" if e.get("speech_goal") else "speech goal not reached"
        parts.append(f"<div class='outcome'>{outcome}; {speech}; {e.get('steps', 0)} agent turns</div></div>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


@torch.no_grad()
def evaluate(env: QuestEnv, actor: Actor, seed: int = 0, progress: bool = True, greedy: bool = True) -> EvalResult:
    """Play every instance of ``env`` once (the env must not auto-reset), greedily or sampling at the actor's
    temperature (a random rule always samples). ``progress``: a bar over the quests where stderr is a terminal, else
    a line per tenth, then the wall time (:class:`lq.data.progress.Progress`)."""
    if env.auto_reset:
        raise ValueError("evaluation plays each quest once: build the environment with auto_reset=False")
    torch.manual_seed(seed)
    agent = actor.agent
    was_training = agent.training if agent is not None else False
    if agent is not None:
        agent.eval()
    actor.cache_candidates()
    episodes: list[dict] = []
    order = list(range(len(env.instances)))
    bar = Progress(len(order), f"zero-shot episodes ({'greedy' if greedy else 'sampled'})", "quest", not progress)
    for start in range(0, len(order), env.batch_size):
        chunk = order[start : start + env.batch_size]
        obs, infos = env.reset(chunk)
        state = actor.start(len(chunk))  # k = 0: the ratio switch uses the training average (paper 4.2)
        finished: dict[int, dict] = {}
        while len(finished) < len(chunk):
            commands, _ = actor.step(env, obs, infos, state, greedy=greedy)
            obs, _, dones, infos = env.step(commands)
            for i, (done, info) in enumerate(zip(dones, infos, strict=True)):
                if done and i not in finished:
                    finished[i] = info["episode"]
                    bar.update()
        episodes += [finished[i] for i in range(len(chunk))]
    bar.close()
    actor.cache_candidates(False)
    if agent is not None:
        agent.train(was_training)
    return EvalResult.of(episodes)


def mean_std_of(values: Sequence[float]) -> tuple[float, float]:
    """Mean and (population) standard deviation over seeds; 0 for a single value."""
    return statistics.fmean(values), statistics.pstdev(values) if len(values) > 1 else 0.0


def mean_std(results: Sequence[EvalResult]) -> dict[str, tuple[float, float]]:
    return {
        key: mean_std_of([getattr(r, key) for r in results])
        for key in ("act_goal_rate", "speech_goal_rate", "act_and_speech_rate")
    }


COLUMNS = (
    ("act_goal_rate", "Act goals"),
    ("speech_goal_rate", "Speech goals"),
    ("act_and_speech_rate", "Act & Speech"),
)


LOST = {
    "lost_never_valid": "goal never valid",
    "lost_speaking": "valid only when speaking",
    "lost_not_taken": "valid when acting, not taken",
}  # where an act goal is lost (EvalResult.where_lost), as the columns of lost_table


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


def plot_curves(
    series: dict[str, Sequence[dict[str, dict[int, float]]]], metrics: Sequence[str], path, title: str
) -> bool:
    """Learning curves as one PNG: per label (a configuration), the mean over its runs (seeds) of each metric at the
    steps they share, shaded ± std. ``series[label]`` holds one :func:`run_series` per run. False if nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(metrics), figsize=(6 * len(metrics), 4), squeeze=False)
    drawn = False
    for ax, metric in zip(axes[0], metrics, strict=True):
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
