"""What each of the paper's ablation experiments trains and tabulates: configurations, cells, tables (Tables 1, 2,
4, 5 and 7, each agent experiment with its baselines)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from lq.conf import read
from lq.data.pools import pool_dir
from lq.envs.protocol import GOAL_RATES
from lq.results import budget_label
from lq.rl.registry import BASELINES, CEILING, REPLAY, REPLAY_WITH_PARTNER
from lq.stages import Resolver
from lq.stages.data import LIGHT_WORLDS

ENCODERS = ("scratch", "general", "light", "general_light", "adaptive")
ENCODER_TITLES = {
    "scratch": "Scratch",
    "general": "General",
    "light": "Light",
    "general_light": "General+Light",
    "adaptive": "Adaptive",
}
ABILITY_TITLES = {
    "act_speech": "Act+Speech",
    "act": "Act Only",
    "speech": "Speech Only",
    "speech_no_speech_goals": "Speech Only, no speech goals",
}
SWITCH_TITLES = {"ratio": "Learned switch", "hardcoded": "Hardcoded switch"}
# the RL agents by their objective (conf/objective/): a table's RL columns say which made them
RL_TITLES = {"paper": "RL (paper objective)", "lq": "RL from BC + imitation (lq objective)"}


def rl_title(objective: str) -> str:
    return RL_TITLES.get(objective, f"RL ({objective} objective)")


GOALS = tuple((title, f"test/{name}") for name, _, title in GOAL_RATES)  # the tables' test columns
TIMELINE_COLUMNS = (
    ("All Hits@1", "all_hits_at_1"),
    ("All Hits@5", "all_hits_at_5"),
    ("All Hits@10", "all_hits_at_10"),
    ("Easiest Hits@1", "easiest_hits_at_1"),
    ("Leave easiest out Hits@1", "leave_easiest_out_hits_at_1"),
)
MOTIVATION_TITLES = {"none": "No motivations", "short": "Short motivations", "long_mid": "Long & mid motivations"}


@dataclass(frozen=True)
class Config:
    """One configuration of a stage: trained once per seed, each a child run."""

    stage: str  # "rl", "bc", "pretrain", "baselines", "llm" (and "partner", "dm": the environment's models)
    # the encoder; a language model's name for "llm" (lq.llm.model.model_file: smollm2, a model folder or GGUF file)
    encoder: str = ""  # none for the baselines: they read no encoder
    ability: str = "act_speech"
    switch: str = "hardcoded"
    variant: str = ""  # RL: one of DEPARTURES (the deviation table); pretraining: one of PRETRAIN_VARIANTS

    @property
    def key(self) -> str:
        if self.stage == "pretrain":
            return f"pretrain-{self.encoder}" + (f"-{self.variant}" if self.variant else "")
        if self.stage == "baselines":
            return f"baselines-{self.ability}-{self.switch}"
        key = f"{self.stage}-{self.encoder}-{self.ability}-{self.switch}"
        return f"{key}-{self.variant}" if self.variant else key

    def args_for(self, seed: int, resolver: Resolver | None = None) -> list[str]:
        """The variant's arguments for ``seed`` (after every config file of the run; ``lq``: none, its objective's file
        instead; a budget run's: its budgets, :func:`budget_args`; a generalisation run's, its pool, worlds, budgets
        and choice on validation, where ``resolver``'s data and profile put them: :func:`generalisation_args`)."""
        if self.stage == "pretrain":
            return pretrain_args(self.encoder, self.variant)
        if self.variant in BUDGET_RUNS:
            return budget_args(self.variant, seed)
        if generalisation_variant(self.variant) or self.variant == WORLDS_VARIANT:
            return generalisation_args(self, resolver or Resolver())
        return list(DEPARTURES[self.variant][1]) if self.variant in DEPARTURES else []

    @property
    def objective(self) -> str | None:
        """The objective the variant trains under where it is not the setup's (``lq``: lq's own file)."""
        if self.variant in BUDGET_RUNS:
            return BUDGET_RUNS[self.variant][0]
        if generalisation_variant(self.variant):
            return "lq"
        return "lq" if self.variant == "lq" else None


# lq's departures from the paper objective (conf/objective/paper.yaml), each alone: the deviation table's rows after
# the first (the paper's) and before the last (lq's, conf/objective/lq.yaml). Values at the tiny profile.
DEPARTURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "bc_start": ("+ start from BC", ("--model.init_from", "bc")),
    "imitation": ("+ the imitation term (1, 4 demonstrations)", ("--model.coefficients.imitation", "1.0")),
    "valid_mean": ("+ valid terms averaged over candidates and steps", ("--model.valid_reduction", "mean")),
    "valid_positives": ("+ valid terms per valid target", ("--model.valid_reduction", "positives")),
    "normalized": ("+ normalised advantages", ("--model.normalize_advantages", "true")),
    "lr": ("+ lq's Adam (lr 5e-4, betas 0.9, 0.999)", ("--model.lr", "5e-4", "--model.adam_betas", "[0.9, 0.999]")),
    "value": ("+ lq's value and speech policy weights (0.5, 1)",
              ("--model.coefficients.value", "0.5", "--model.coefficients.speech_policy", "null")),
    "envs16": ("+ 16 environments", ("--model.num_envs", "16")),
    "turns30": ("+ 30-turn training episodes", ("--model.max_steps", "null")),
    "gain_lr": ("+ the exact-match gain at 30 times the learning rate", ("--model.gain_lr_scale", "30")),
    "temperature": ("+ a learned temperature per head, with the gain, at 30 times the learning rate",
                    ("--model.agent.head_temperature", "true", "--model.gain_lr_scale", "30")),
    "no_exact_match": ("- the exact-match features (lq's, in both)", ("--model.agent.exact_match", "false")),
    "no_objects": ("- the context's object lines (lq's, in both)", ("--model.env.objects", "false")),
}  # fmt: skip


@dataclass(frozen=True)
class Cell:
    config: Config
    metric: str
    key: str = ""  # its column in the parent's metric names, where not the column's title (which names the objective)


@dataclass
class Table:
    name: str  # artifact name: tables/<name>.md and .csv
    title: str
    rows: list[tuple[str, dict[str, Cell]]]  # row title -> column title -> cell

    @property
    def configs(self) -> list[Config]:
        return list(dict.fromkeys(c.config for _, cells in self.rows for c in cells.values()))


@dataclass
class Experiment:
    name: str  # also the MLflow experiment name, lq-<name>
    title: str
    tables: list[Table]
    encoders: Sequence[str] = ()
    objective: str = "lq"  # RL's (conf/objective/): the parent's identity, and its tables' RL columns
    variants: Sequence[str] = ()  # its rows' variants, where it has (the deviation and candidates tables)
    validation_baselines: bool = False  # its baselines child plays the validation quests too
    evaluated: str = ""  # the line under its tables where no protocol evaluates it (no agent plays)
    note: str = ""  # said after the protocol line under its tables (how its rows' agents were chosen)
    # the protocol a results page shows its parents of, where not the page's own (the language-model experiment's
    # zero-shot rows run on a CPU under the restricted one: docs/agents.md)
    protocol: str = ""
    configs: list[Config] = field(init=False)

    def __post_init__(self) -> None:
        self.configs = list(dict.fromkeys(c for t in self.tables for c in t.configs))


def baselines_table(
    name: str, configs: Sequence[Config], validation: bool = False, worlds: bool = False
) -> Table:
    """The baselines of the agent configurations' abilities and switches (:mod:`lq.rl.registry`), run through the same
    actor and environment as the agents, the demonstrations replayed, and the ceiling; with ``validation``, on the
    validation quests too (``baselines_val/...``, columns before the test's); with ``worlds``, on the worlds the agents
    never saw too (``baselines_worlds/...``, columns after the test's)."""
    settings = list(dict.fromkeys((c.ability, c.switch) for c in configs if c.stage in ("rl", "bc", "llm")))
    rows = []
    for ability, switch in settings:
        config = Config("baselines", ability=ability, switch=switch, variant=WORLDS_VARIANT if worlds else "")
        where = f", {ABILITY_TITLES[ability]}, {SWITCH_TITLES[switch].lower()}" if len(settings) > 1 else ""
        for key, title, *_ in (*BASELINES, REPLAY, REPLAY_WITH_PARTNER, CEILING):
            goals = GOALS[:1] if key == CEILING[0] else GOALS
            cells = {g: Cell(config, f"baselines/{key}/{m.split('/')[1]}") for g, m in goals}
            if validation:
                val = VALIDATION_GOALS[:1] if key == CEILING[0] else VALIDATION_GOALS
                cells = {**{g: Cell(config, f"baselines_val/{key}/{m.split('/')[1]}") for g, m in val}, **cells}
            if worlds:
                there = WORLDS_GOALS[:1] if key == CEILING[0] else WORLDS_GOALS
                cells |= {g: Cell(config, f"baselines_worlds/{key}/{m.split('/')[1]}") for g, m in there}
            rows.append((f"{title}{where}", cells))
    title = (
        "Baselines (the same actor, switch and environment; the demonstrations replayed through it; the ceiling: goal "
        "in the action space)"
    )
    return Table(name, title, rows)


def _with_baselines(
    name: str,
    title: str,
    rows: list,
    encoders: Sequence[str],
    objective: str,
    variants: Sequence[str] = (),
    validation: bool = False,
    worlds: bool = False,
) -> Experiment:
    """An agent experiment: its table ``name`` and the baselines of its configurations (``<name>_baselines``; with
    ``validation``, on the validation quests too; with ``worlds``, on the worlds the agents never saw too)."""
    table = Table(name, title, rows)
    tables = [table, baselines_table(f"{name}_baselines", table.configs, validation, worlds)]
    return Experiment(name, title, tables, encoders, objective, tuple(variants), validation)


def _check_variants(variants: Sequence[str]) -> None:
    unknown = [v for v in variants if v not in DEPARTURES]
    if unknown:
        raise ValueError(f"unknown variant {', '.join(unknown)}: choose from {', '.join(DEPARTURES)}")


def _check_encoders(encoders: Sequence[str]) -> None:
    unknown = [e for e in encoders if e not in ENCODERS]
    if unknown:
        raise ValueError(f"unknown encoder {', '.join(unknown)}: choose from {', '.join(ENCODERS)}")


def table1(encoders: Sequence[str] = ENCODERS, objective: str = "lq") -> Experiment:
    """Encoder types: RL act, speech, act & speech goals and BC act & speech goals (paper Table 1), with BC's act
    goals."""
    _check_encoders(encoders)
    rows = []
    for e in encoders:
        # the title names the objective; the parent's metrics keep one name (table1/ROW/rl_act_goals/mean), so that
        # parents of the two objectives compare side by side
        cells = {f"{rl_title(objective)} {t}": Cell(Config("rl", e), metric, f"RL {t}") for t, metric in GOALS}
        # the paper's BC column is act & speech goals; BC's act goals beside it (an addition): where speech goals
        # are rare, act goals are what compares RL with BC
        cells["BC Act goals"] = Cell(Config("bc", e), "test/act_goal_rate")
        cells["BC Act & Speech"] = Cell(Config("bc", e), "test/act_and_speech_goal_rate")
        rows.append((ENCODER_TITLES[e], cells))
    return _with_baselines("table1", "Table 1: encoder types", rows, encoders, objective)


def table2(encoders: Sequence[str] = ("scratch", "adaptive"), objective: str = "lq") -> Experiment:
    """Ability types: act and speak, act only, speak only, speak only without speech goals (paper Table 2)."""
    _check_encoders(encoders)
    rows = [
        (
            title,
            {
                f"{ENCODER_TITLES[e]} {g}": Cell(Config("rl", e, ability=ability), metric)
                for e in encoders
                for g, metric in GOALS
            },
        )
        for ability, title in ABILITY_TITLES.items()
    ]
    return _with_baselines("table2", f"Table 2: ability types, {rl_title(objective)}", rows, encoders, objective)


def table7(encoders: Sequence[str] = ("scratch", "adaptive"), objective: str = "lq") -> Experiment:
    """Switch types: the learned ratio switch and the hardcoded one (paper Table 7, Figures 16 and 17)."""
    _check_encoders(encoders)
    rows = [
        (
            f"{ENCODER_TITLES[e]}, {title}",
            {g: Cell(Config("rl", e, switch=switch), metric) for g, metric in GOALS},
        )
        for e in encoders
        for switch, title in SWITCH_TITLES.items()
    ]
    return _with_baselines("table7", f"Table 7: switch types, {rl_title(objective)}", rows, encoders, objective)


# Tables 4 and 5's encoders trained otherwise than their config says, for the paper's trends (appendix 8.1), each in a
# folder of its own beside its seed's encoders: the quest tasks on fewer training quests (Figures 13 and 14: Scratch
# and General+Light; Scratch learns every training quest, General+Light a profile's slice, at tiny about 50, so
# Scratch has a point at 50 and the two gains compare from 12 to about 50), and ATOMIC without domain adaptation in
# place of ATOMIC-LIGHT (General+Light).
QUEST_COUNTS = {"scratch": (12, 25, 50), "general_light": (12, 25)}
SPAN = 50  # the quests of the point whose gain over the fewest compares Scratch's with General+Light's
PRETRAIN_VARIANTS = {**{f"quests{n}": f"{n} training quests" for n in sorted(set(sum(QUEST_COUNTS.values(), ())))},
                     "atomic": "ATOMIC without domain adaptation"}  # fmt: skip
# the supervised tables' Scratch model (paper 8.1): its encoder's 3 layers trained on the two timeline tasks alone
# (make pretrain's scratch is not pretrained: the agents train it)
SCRATCH_TASKS = {"seq_timeline": 1.0, "boa_timeline": 1.0}


def pretrain_args(encoder: str, variant: str = "") -> list[str]:
    """A Tables 4/5 encoder's arguments after its config files: Scratch's timeline tasks; a variant's fewer training
    quests, or ATOMIC in place of ATOMIC-LIGHT among its encoder's tasks (conf/encoder/)."""
    if variant and variant not in PRETRAIN_VARIANTS:
        raise ValueError(f"unknown pretraining variant {variant}: choose from {', '.join(PRETRAIN_VARIANTS)}")
    args = []
    if encoder == "scratch" or variant == "atomic":
        tasks = SCRATCH_TASKS if encoder == "scratch" else encoder_tasks(encoder)
        if variant == "atomic":
            if "atomic_light" not in tasks:
                raise ValueError(f"the {encoder} encoder does not pretrain on ATOMIC-LIGHT: nothing to replace")
            tasks = {("atomic" if t == "atomic_light" else t): w for t, w in tasks.items()}
        args += ["--model.encoder.tasks", json.dumps(tasks)]
    if variant.startswith("quests"):
        args += ["--data.max_train_quests", variant.removeprefix("quests")]
    return args


def encoder_section(encoder: str) -> dict:
    """The ``model.encoder`` section of ``encoder``'s config file (conf/encoder/ENCODER.yaml): its spec and tasks."""
    return read("encoder", f"{encoder}.yaml")["model"]["encoder"]


def encoder_tasks(encoder: str) -> dict[str, float]:
    """The pretraining tasks and weights of ``encoder``'s config file."""
    return dict(encoder_section(encoder)["tasks"])


TIMELINE_TABLES = (("table4", "sequential"), ("table5", "bag of actions"))


def table45(encoders: Sequence[str] = ENCODERS, objective: str = "") -> Experiment:
    """Supervised timeline prediction, Hits@k of 100 (paper Tables 4 and 5), Scratch's model trained on the timeline
    tasks alone; General+Light pretrained on ATOMIC without domain adaptation beside (the second trend); Scratch
    and General+Light on fewer training quests (Figures 13 and 14). No RL, so no objective (taken and ignored, as
    every experiment's is)."""
    _check_encoders(encoders)
    atomic = ["general_light"] if "general_light" in encoders else []
    tables = []
    titles = ("Table 4: sequential timeline prediction", "Table 5: bag-of-actions timeline prediction")
    for (name, _), title in zip(TIMELINE_TABLES, titles, strict=True):
        rows = [
            (
                f"{timeline_row(e, variant)}, {mtitle}",
                {ctitle: Cell(Config("pretrain", e, variant=variant), f"{name}/{m}/{col}")
                 for ctitle, col in TIMELINE_COLUMNS},
            )  # fmt: skip
            for e, variant in [*((e, "") for e in encoders), *((e, "atomic") for e in atomic)]
            for m, mtitle in MOTIVATION_TITLES.items()
        ]
        tables.append(Table(name, title, rows))
    curves = [e for e in QUEST_COUNTS if e in encoders]
    if curves:
        columns = {f"{kind.capitalize()} All Hits@1": f"{name}/short/all_hits_at_1" for name, kind in TIMELINE_TABLES}
        rows = [
            (timeline_row(e, variant) if variant else f"{ENCODER_TITLES[e]}, all training quests",
             {c: Cell(Config("pretrain", e, variant=variant), m) for c, m in columns.items()})
            for e in curves
            for variant in (*(f"quests{n}" for n in QUEST_COUNTS[e]), "")
        ]  # fmt: skip
        tables.append(Table("quests", "Figures 13 and 14: timeline prediction by training quests (short motivations)",
                            rows))  # fmt: skip
    evaluated = (
        "Evaluated as Hits@k of 100: the gold action's rank among 100 candidates, on the test quests' timelines; one "
        "encoder trained per seed, the motivations switched in its context. A pretrained encoder learns from its "
        "profile's slice of each task (`data.max_train_examples`; tiny: 320 examples, about 50 quests of a timeline "
        "task), Scratch at tiny from every training timeline (`conf/profile/tiny/timeline_scratch.yaml`); a row of N "
        "training quests, from the first N quests only, for as many steps."
    )
    return Experiment(
        "table45", "Tables 4 and 5: supervised timeline prediction", tables, encoders, "", evaluated=evaluated
    )


def timeline_row(encoder: str, variant: str = "") -> str:
    """How Tables 4/5 and their quest curves name an encoder trained as ``variant`` says."""
    return f"{ENCODER_TITLES[encoder]}, {PRETRAIN_VARIANTS[variant]}" if variant else ENCODER_TITLES[encoder]


VALIDATION_GOALS = tuple((f"Val {title.lower()}", metric.replace("test/", "val/")) for title, metric in GOALS)


def row_prefix(encoders: Sequence[str], encoder: str) -> str:
    """How a row of a table over ``encoders`` names ``encoder``: ``"Adaptive, "``, or nothing with one encoder."""
    return f"{ENCODER_TITLES[encoder]}, " if len(encoders) > 1 else ""


def _one_at_a_time(
    name: str,
    title: str,
    encoders: Sequence[str],
    objective: str,
    base: str,
    variants: Sequence[str],
    last: tuple[str, str] | None = None,
) -> Experiment:
    """A table whose rows each add one of ``variants`` (:data:`DEPARTURES`) to its first, ``base`` (RL under the
    objective), then ``last`` (title, variant) where given, then BC; validation and test columns, the baselines
    beside."""
    _check_encoders(encoders)
    _check_variants(variants)
    columns = (*VALIDATION_GOALS, *GOALS)
    rows = []
    for e in encoders:
        who = row_prefix(encoders, e)
        for row, variant in [(base, ""), *((DEPARTURES[v][0], v) for v in variants), *([last] if last else [])]:
            rows.append((f"{who}{row}", {t: Cell(Config("rl", e, variant=variant), m) for t, m in columns}))
        rows.append((f"{who}BC", {t: Cell(Config("bc", e), m) for t, m in columns}))
    return _with_baselines(name, title, rows, encoders, objective, variants)


def deviations(
    encoders: Sequence[str] = ("scratch",), objective: str = "paper", variants: Sequence[str] = tuple(DEPARTURES)
) -> Experiment:
    """lq's departures from the paper objective measured one at a time (issue 41): the paper objective, then each
    departure added to it alone (:data:`DEPARTURES`; two are removals of lq's own features), then lq's objective;
    validation and test columns, BC and the baselines beside. Run under ``--objective paper`` (its base)."""
    if objective != "paper":
        raise ValueError(f"the deviation table departs from the paper objective: run it with --objective paper, "
                         f"not {objective}")  # fmt: skip
    title = "The deviation table: lq's departures from the paper objective, one at a time"
    lq = (RL_TITLES["lq"], "lq")
    return _one_at_a_time("deviations", title, encoders, objective, "RL (paper objective)", variants, lq)


# the sharper-agent changes of the deviation table that are candidates for lq's objective (issue 41): each added to
# it alone, chosen on the validation quests. On 2026-11-26 the table chose `temperature` (with the gain's learning
# rate, so `gain_lr` too) of gain_lr, temperature and valid_positives: conf/objective/lq.yaml has them since
CANDIDATES = ("valid_positives",)


def candidates(
    encoders: Sequence[str] = ("scratch",), objective: str = "lq", variants: Sequence[str] = CANDIDATES
) -> Experiment:
    """lq's candidate defaults: its objective, then each of :data:`CANDIDATES` added to it alone (a row of
    :data:`DEPARTURES`, its own folder), validation and test columns, BC and the baselines beside. The validation
    columns choose lq's default; the test columns are reported beside, never used to choose. Run under
    ``--objective lq`` (its base)."""
    if objective != "lq":
        raise ValueError(f"the candidates table adds to lq's objective: run it with --objective lq, not {objective}")
    title = "lq's candidate defaults: its objective and each sharper-agent change to it, chosen on validation"
    return _one_at_a_time("candidates", title, encoders, objective, RL_TITLES["lq"], variants)


# The budget experiment (issue 62): RL trained far past the tables' 400 updates, one run per objective and seed that
# is evaluated zero-shot on its way at each budget of environment interactions (one agent turn in one environment;
# the paper's "1 million environment interactions", appendix 8.2). Each run's variant: its objective and the seeds
# trained to the last budget; the other seeds stop at FEW_SEEDS_BUDGET.
BUDGETS = (32_000, 100_000, 320_000, 1_000_000)
FEW_SEEDS_BUDGET = 320_000
BUDGET_RUNS = {"budget_paper": ("paper", (0,)), "budget_lq": ("lq", ())}
BUDGET_TITLES = {"budget_paper": "RL (paper objective)", "budget_lq": "RL (lq objective)"}


def budget_args(variant: str, seed: int) -> list[str]:
    """A budget run's arguments: its budgets (to the last for the seeds its variant names, else to
    :data:`FEW_SEEDS_BUDGET`), and no epoch limit (the run stops at its last budget: :class:`lq.lit.rl.RLModule`)."""
    last = BUDGETS[-1] if seed in BUDGET_RUNS[variant][1] else FEW_SEEDS_BUDGET
    budgets = [b for b in BUDGETS if b <= last]
    return ["--model.budgets", json.dumps(budgets), "--trainer.max_epochs", "-1"]


def budgets_of(variant: str) -> tuple[int, ...]:
    """The budgets some seed of run ``variant`` reaches: the table's rows of it."""
    return BUDGETS if BUDGET_RUNS[variant][1] else tuple(b for b in BUDGETS if b <= FEW_SEEDS_BUDGET)


def budget_row(encoders: Sequence[str], encoder: str, variant: str, budget: int) -> str:
    """The budget table's row of ``encoder``'s run ``variant`` (:data:`BUDGET_RUNS`) at ``budget``; with one encoder
    the row does not name it (neither does its BC row)."""
    return f"{row_prefix(encoders, encoder)}{BUDGET_TITLES[variant]}, {budget_label(budget)} interactions"


def budget(encoders: Sequence[str] = ("scratch",), objective: str = "paper") -> Experiment:
    """The paper's budget (issue 62): the Scratch agent, act and speech, hardcoded switch, under the paper objective and
    under lq's, evaluated at each of :data:`BUDGETS` on its way (rows: objective x budget; validation and test
    columns), BC and the baselines beside. Run under ``--objective paper`` (the runs name their own objective)."""
    if objective != "paper":
        raise ValueError(f"the budget experiment runs under --objective paper (its lq rows name their own), "
                         f"not {objective}")  # fmt: skip
    _check_encoders(encoders)
    columns = (*VALIDATION_GOALS, *GOALS)
    rows = []
    for e in encoders:
        who = row_prefix(encoders, e)
        for variant in BUDGET_TITLES:
            config = Config("rl", e, variant=variant)
            for b in budgets_of(variant):
                cells = {t: Cell(config, f"budget/{b}/{m}") for t, m in columns}
                rows.append((budget_row(encoders, e, variant, b), cells))
        rows.append((f"{who}BC", {t: Cell(Config("bc", e), m) for t, m in columns}))
    title = "The paper's budget: RL against environment interactions, BC and the baselines beside"
    return _with_baselines("budget", title, rows, encoders, objective, validation=True)


# The generalisation experiment (issue 81): the agent learns the task, not its training quests? Scratch, act and speech,
# hardcoded switch, lq's objective, trained on the dataset's quests or on those and a training pool's (lq.data.pools),
# with the rarity curriculum (lq.rl.curriculum) or the imitation term stopped by a held-out signal; each evaluated at
# GENERALISATION_BUDGETS on its way (validation, test and the LIGHT worlds it never saw) and its agent chosen on the
# validation quests every SELECT_EVERY interactions (best.ckpt: the row "chosen on validation"). Each variant: the
# quests its pool adds (0: none), its curriculum, its further RL arguments, its row's title.
GENERALISATION_BUDGETS = (32_000, 100_000, 320_000)
SELECT_EVERY = 16_000
CURRICULUM_INTERACTIONS = 100_000  # the rarity curriculum's whole pool open by then, in 4 stages
GENERALISATION_RUNS: dict[str, tuple[int, str | None, tuple[str, ...], str]] = {
    "own": (0, None, (), "its own training quests"),
    "pool1400": (1_400, None, (), "+ 1,400 generated quests"),
    "pool19600": (19_600, None, (), "+ 19,600 generated quests"),
    "pool19600_rarity": (19_600, "rarity", (), "+ 19,600 generated quests, rarity curriculum"),
    "held_out": (0, None, ("--model.imitation_patience", "3", "--model.imitation_decay", "0"),
                 "its own training quests, imitation stopped by held-out accuracy"),
}  # fmt: skip
LONG_BUDGET, LONG_SUFFIX = 1_000_000, "_1m"  # the chosen variant's seed 0 goes on to the paper's budget
WORLDS_VARIANT = "worlds"  # the baselines child's: the same rules on the worlds too
WORLDS_GOALS = tuple((f"Worlds {title.lower()}", metric.replace("test/", "worlds/")) for title, metric in GOALS)
GENERALISATION_COLUMNS = (
    "Greedy: the test quests again, each choice the agent's likeliest. Worlds: the test quests of quests generated "
    "from the LIGHT environment DB, against their own spaces, partner and DM."
)
GREEDY_GOALS = tuple((f"Greedy {title.lower()}", metric.replace("test/", "test_greedy/")) for title, metric in GOALS)


def worlds_of(resolver: Resolver) -> dict[str, str]:
    """The worlds the agents never saw (:data:`lq.stages.data.LIGHT_WORLDS`) and their partner and DM at the
    resolver's profile (``model.worlds``: :meth:`lq.lit.agent.AgentModule.on_worlds`)."""
    there = Resolver(resolver.profile, resolver.protocol, data_dir=LIGHT_WORLDS)
    return {"data_dir": LIGHT_WORLDS, "partner_checkpoint": there.checkpoint("partner"),
            "dm_checkpoint": there.checkpoint("dm")}  # fmt: skip


def generalisation_args(config: Config, resolver: Resolver) -> list[str]:
    """A generalisation run's arguments: the worlds it plays at every evaluation (every stage); its training pool
    (``DATA-pool-N`` beside the resolver's data) and its BC agents' folder of its own (the agents, BC and RL); RL's
    budgets, no epoch limit, its choice on validation, its curriculum and its further arguments."""
    args = ["--model.worlds", json.dumps(worlds_of(resolver))]
    if config.stage == "baselines":
        return args
    variant = generalisation_variant(config.variant)
    count, curriculum, more, _ = GENERALISATION_RUNS[variant]
    args += ["--model.env.pool", pool_dir(resolver.data_dir, count)] if count else []
    if config.stage != "rl":
        return args
    budgets = [*GENERALISATION_BUDGETS, *([LONG_BUDGET] if config.variant != variant else [])]
    bc = f"{resolver.stage_dir('bc')}/{generalisation_bc(variant)}"
    args += ["--bc_dir", bc, "--model.budgets", json.dumps(budgets), "--trainer.max_epochs", "-1"]
    args += ["--model.select_every", str(SELECT_EVERY)]
    if curriculum:
        args += ["--model.curriculum", curriculum, "--model.curriculum_interactions", str(CURRICULUM_INTERACTIONS)]
    return [*args, *more]


def generalisation_variant(variant: str) -> str | None:
    """The generalisation variant (:data:`GENERALISATION_RUNS`) a run of ``variant`` trains: itself, or the one its
    longer run (``VARIANT_1m``: :func:`generalisation_long`) takes to :data:`LONG_BUDGET`; None for any other."""
    base = variant.removesuffix(LONG_SUFFIX)
    return base if base in GENERALISATION_RUNS else None


def generalisation_bc(variant: str) -> str:
    """The variant whose BC agents an RL variant starts from: the first with its training quests."""
    count = GENERALISATION_RUNS[variant][0]
    return next(v for v, (c, *_) in GENERALISATION_RUNS.items() if c == count)


def _check_generalisation(encoders: Sequence[str], objective: str) -> None:
    """The generalisation experiment and its longer run train under lq's objective, with known encoders."""
    if objective != "lq":
        raise ValueError(f"the generalisation experiment trains under lq's objective (--objective lq), not {objective}")
    _check_encoders(encoders)


def generalisation_rows(
    encoders: Sequence[str], variants: Sequence[str], budgets: Sequence[int], suffix: str = ""
) -> list:
    """The generalisation tables' rows, per encoder: each of ``variants`` trained as run ``VARIANT + suffix`` at each
    of ``budgets`` and as chosen on validation, then BC per training quests; validation, test (sampled, then greedy)
    and worlds columns."""
    columns = (*VALIDATION_GOALS, *GOALS, *GREEDY_GOALS, *WORLDS_GOALS)
    rows = []
    for e in encoders:
        who = row_prefix(encoders, e)
        for variant in variants:
            title, config = GENERALISATION_RUNS[variant][3], Config("rl", e, variant=variant + suffix)
            for b in budgets:
                rows.append((f"{who}RL, {title}, {budget_label(b)} interactions",
                             {t: Cell(config, f"budget/{b}/{m}") for t, m in columns}))  # fmt: skip
            rows.append((f"{who}RL, {title}, chosen on validation", {t: Cell(config, m) for t, m in columns}))
        for variant in dict.fromkeys(map(generalisation_bc, variants)):
            title = GENERALISATION_RUNS[variant][3]
            rows.append((f"{who}BC, {title}", {t: Cell(Config("bc", e, variant=variant), m) for t, m in columns}))
    return rows


def generalisation(encoders: Sequence[str] = ("scratch",), objective: str = "lq") -> Experiment:
    """Larger training pools, the rarity curriculum and the imitation term stopped on a held-out signal (issue 81):
    the Scratch agent under lq's objective, each variant of :data:`GENERALISATION_RUNS` at each of
    :data:`GENERALISATION_BUDGETS` and as chosen on the validation quests, BC on each variant's training quests, the
    baselines beside; validation, test and unseen-worlds columns."""
    _check_generalisation(encoders, objective)
    rows = generalisation_rows(encoders, tuple(GENERALISATION_RUNS), GENERALISATION_BUDGETS)
    title = "Generalisation: training pools, the rarity curriculum, the agent chosen on validation, worlds never seen"
    experiment = _with_baselines("generalisation", title, rows, encoders, objective, validation=True, worlds=True)
    experiment.note = (
        f"A row at N interactions is the agent as it stood then; a row \"chosen on validation\" is the agent of the "
        f"best validation act & speech goals among its evaluations every {SELECT_EVERY:,} interactions (its "
        f"best.ckpt), and its test and worlds figures are that agent's. {GENERALISATION_COLUMNS}"
    )
    return experiment


def generalisation_long(
    encoders: Sequence[str] = ("scratch",), objective: str = "lq", variants: Sequence[str] = tuple(GENERALISATION_RUNS)
) -> Experiment:
    """The generalisation experiment's best configuration to the paper's 1M interactions (issue 81): each of
    ``variants`` (run with the one chosen on the validation quests, seed 0:
    :func:`lq.experiments.reporting.chosen_generalisation_variant`) trained as in :func:`generalisation` but on to
    :data:`LONG_BUDGET`, evaluated at each budget on its way and chosen on validation, its BC start and the baselines
    beside; the same columns. Raises ValueError for an unknown variant or another objective."""
    _check_generalisation(encoders, objective)
    if unknown := [v for v in variants if v not in GENERALISATION_RUNS]:
        raise ValueError(f"unknown generalisation variants {unknown}; known: {', '.join(GENERALISATION_RUNS)}")
    rows = generalisation_rows(encoders, variants, (*GENERALISATION_BUDGETS, LONG_BUDGET), LONG_SUFFIX)
    title = "Generalisation to 1M: the variant chosen on validation trained to the paper's budget"
    experiment = _with_baselines("generalisation_long", title, rows, encoders, objective, variants, worlds=True,
                                 validation=True)  # fmt: skip
    experiment.note = (
        f"The generalisation experiment's variant of the best validation act & speech goals (its rows \"chosen on "
        f"validation\", mean over seeds) trained on to {budget_label(LONG_BUDGET)} interactions; a row \"chosen on "
        f"validation\" is its agent of the best validation act & speech goals among its evaluations every "
        f"{SELECT_EVERY:,} interactions. {GENERALISATION_COLUMNS}"
    )
    return experiment


# The language-model experiment (issue 111): a local causal LM played zero-shot through the agents' actor, switch and
# environment (lq experiment llm), its way of scoring a candidate chosen on the validation quests, beside the agents
# and the baselines. Each model by its name (lq.llm.model.model_file) and its row's title; each score's title.
LANGUAGE_MODELS = {"smollm2": "SmolLM2-135M-Instruct"}
LLM_SCORES = {"sum": "the answer's log-likelihood", "mean": "nats per token"}  # lq.llm.policy.SCORES
LLM_PROTOCOL = "restricted"  # the results page's: a paper-protocol speaking turn is minutes of a CPU (docs/agents.md)
SAMPLED_GOALS = tuple((f"Sampled {title.lower()}", metric.replace("test/", "test_sampled/")) for title, metric in GOALS)


def llm(encoders: Sequence[str] = ("scratch",), objective: str = "lq", models: Sequence[str] = ("smollm2",)
        ) -> Experiment:  # fmt: skip
    """Language models as zero-shot agents beside the switch agent (issue 111): each of ``models`` played zero-shot
    (its score chosen on the validation quests; each score's validation figures beside), then per encoder RL under lq's
    objective and BC; validation, test and sampled-test columns; the baselines beside, on the validation quests too.
    Raises ValueError for another objective or an unknown encoder."""
    if objective != "lq":
        raise ValueError(f"the language-model experiment's RL trains under lq's objective (--objective lq), not "
                         f"{objective}")  # fmt: skip
    _check_encoders(encoders)
    columns = (*VALIDATION_GOALS, *GOALS, *SAMPLED_GOALS)
    rows = []
    for model in models:
        config, name = Config("llm", model), LANGUAGE_MODELS.get(model, model)
        rows.append((f"{name} zero-shot, score chosen on validation", {t: Cell(config, m) for t, m in columns}))
        for score, title in LLM_SCORES.items():
            cells = {t: Cell(config, m.replace("val/", f"llm_val/{score}/")) for t, m in VALIDATION_GOALS}
            rows.append((f"{name} zero-shot, {title}", cells))
    for e in encoders:
        rows.append((f"{ENCODER_TITLES[e]}, {rl_title(objective)}", {t: Cell(Config("rl", e), m) for t, m in columns}))
        rows.append((f"{ENCODER_TITLES[e]}, BC", {t: Cell(Config("bc", e), m) for t, m in columns}))
    title = "Language models as zero-shot agents, beside the switch agent"
    experiment = _with_baselines("llm", title, rows, encoders, objective, validation=True)
    experiment.protocol = LLM_PROTOCOL
    experiment.note = (
        "A language model's row is its zero-shot play with the score chosen on the validation quests (the better act & "
        "speech goals, then act goals), that score's validation figures in its first columns; the rows below it give "
        "each score's. Sampled: the test quests again, each choice drawn from the softmax of the agent's scores at "
        "temperature 1. A greedy play draws nothing: a language model's greedy figures are the same for every seed "
        "(its std 0 by construction), its sampled ones are not."
    )
    return experiment


EXPERIMENTS: dict[str, Callable[..., Experiment]] = {
    "generalisation": generalisation,
    "generalisation_long": generalisation_long,
    "budget": budget,
    "table1": table1,
    "table2": table2,
    "table7": table7,
    "table45": table45,
    "deviations": deviations,
    "candidates": candidates,
    "llm": llm,
}


def objectives_of(name: str) -> list[str | None]:
    """The RL objectives experiment ``name`` runs under, as its spec says (one refuses the others: the deviation table
    departs from the paper objective, the candidates and the generalisation experiment from lq's); ``[None]`` for one
    that trains no RL (Tables 4/5)."""
    from lq.conf.resolver import objectives

    taken = []
    for objective in objectives():
        try:
            experiment = EXPERIMENTS[name](objective=objective)
        except ValueError:  # "run it with --objective ...": not under this one
            continue
        if not any(c.stage == "rl" for c in experiment.configs):
            return [None]
        taken.append(objective)
    return taken
