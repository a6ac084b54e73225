"""Agent checkpoints of either stage and their bundles: reopening them (``lq eval``), evaluating them side by side
with the baselines and the ceiling, exporting them with a model card (``lq export``), and drawing RL learning curves
from their MLflow runs. Above both stages' modules (through :mod:`lq.lit.bundles`), so that :mod:`lq.lit.agent` knows
neither.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from lq.data.dataset import dataset_id
from lq.envs.protocol import GOAL_RATES
from lq.envs.spec import nested, overridden
from lq.eval import CURVES, EvalResult, compare_agents, markdown_table, plot_curves, run_series
from lq.lit.agent import VOCABULARY, AgentModule, read_checkpoint
from lq.lit.bundles import built_module, export_bundle, is_bundle, load_bundle
from lq.lit.places import located, overridden_places
from lq.stages.llm import model_name


def load_agent(checkpoint: str | Path, **overrides) -> AgentModule:
    """A trained BC or RL agent from its checkpoint or its bundle (:mod:`lq.lit.bundles`), built and in eval mode;
    ``overrides`` replace hyperparameters (e.g. ``eval_max_steps``)."""
    if is_bundle(checkpoint):
        return load_bundle(checkpoint, **overrides)
    return agent_of(read_checkpoint(checkpoint), checkpoint, **overrides)


def agent_of(saved: dict, checkpoint: str | Path, **overrides) -> AgentModule:
    """The agent of a loaded checkpoint (``saved``, read from ``checkpoint``), built and in eval mode. Its data and
    models are found where they are now, from whatever folder (:func:`lq.lit.places.located`), but those
    ``overrides`` name."""
    hparams = {k: v for k, v in saved.get("hyper_parameters", {}).items() if not k.startswith("_")}  # LightningCLI's
    # from before EnvSpec (or before protocols: restricted) read as nested
    hparams = located(nested(hparams), saved, checkpoint, overridden_places(overrides))
    hparams = overridden(hparams, overrides)
    if note := unfinished(saved):
        warnings.warn(f"{checkpoint}: {note}", stacklevel=3)
    state = saved.get("state_dict", {})
    module = built_module(saved.get("lq_stage"), hparams, state.get(VOCABULARY), checkpoint)
    module.load_state_dict(state)
    return module.eval()


def unfinished(saved: dict) -> str | None:
    """Why an RL agent's checkpoint is not its run's end (saved after fewer epochs than its run meant to train: the
    run was stopped), or None. RL saves its agent after every epoch; a BC ``best.ckpt`` is the best epoch's, early or
    not, as is an RL agent chosen on the validation quests (``lq_chosen``), and checkpoints from before
    ``lq_max_epochs`` was recorded cannot tell."""
    planned, done = saved.get("lq_max_epochs"), saved.get("epoch", 0) + 1
    if saved.get("lq_stage") != "rl" or "lq_chosen" in saved or planned is None or planned < 0 or done >= planned:
        return None
    return (
        f"saved after epoch {done} of the {planned} its run meant to train: that run was stopped, and this agent is "
        "used as it was then (resume the run with --ckpt_path on its last.ckpt to finish it)"
    )


def agent_name(module: AgentModule) -> str:
    """A row name for tables: stage, encoder, ability and switch (seeds of one configuration share it)."""
    return agent_label(module.stage, module.hparams)


def agent_label(stage: str, h) -> str:
    """``agent_name`` from a stage and its hyperparameters. An RL agent trained otherwise than the paper's says how, in
    brackets: ``from BC`` (started from its BC agent's weights; ``from an agent``: another's), ``imitation W`` (the
    imitation term's weight), ``no policy gradient`` (``coefficients.policy`` 0): lq's objective reads ``RL (from BC +
    imitation 1)``, the paper's ``RL``."""
    name = stage.upper()
    if stage == "rl":
        coef, start = h.get("coefficients") or {}, h.get("init_from")
        how = [{"bc": "from BC"}.get(start, "from an agent")] if start else []
        how += [f"imitation {coef['imitation']:g}"] if coef.get("imitation") else []
        how += ["no policy gradient"] if coef.get("policy", 1.0) == 0 else []
        name += f" ({' + '.join(how)})" if how else ""  # no comma: the row name is a CSV file's first field
    encoder = model_name(str(h["llm"])) if stage == "llm_bc" else h["encoder"]["name"]  # its language model
    return f"{name} {encoder} {h['ability']} {h['switch']}"


PLAYED = "zero_shot.json"  # beside an agent's kept checkpoint: the test episodes its run played (record_played)


def _stamp(checkpoint: Path) -> dict[str, object]:
    """What tells one checkpoint file from another written at the same path (a run trained again)."""
    stat = checkpoint.stat()
    return {"checkpoint": checkpoint.name, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def record_played(checkpoint: str | Path, protocol: str, played: dict[int, dict[str, EvalResult]]) -> Path:
    """Keep beside ``checkpoint`` (:data:`PLAYED`, written whole then renamed) the test episodes its run played after
    fitting, by evaluation seed and decoding (``greedy``, ``sampled``) under ``protocol``, so that ``lq eval`` of that
    checkpoint (``make rl``'s table) reads them instead of playing them again (:func:`recorded_played`)."""
    from lq.data.io import write_json

    checkpoint = Path(checkpoint)
    seeds = {str(seed): {d: r.episodes for d, r in by_decoding.items()} for seed, by_decoding in played.items()}
    path = checkpoint.parent / PLAYED
    write_json(path, {**_stamp(checkpoint), "protocol": protocol, "seeds": seeds}, indent=None)
    return path


def recorded_played(checkpoint: str | Path, seed: int, protocol: str | None = None) -> dict[str, EvalResult] | None:
    """The test episodes the run of ``checkpoint`` played after fitting with evaluation ``seed``
    (:func:`record_played`), by decoding, where they are this very file's (a run trained again since has its own) under
    ``protocol`` (None: the one it was trained with); else None."""
    checkpoint = Path(checkpoint)
    path = checkpoint.parent / PLAYED
    if not checkpoint.is_file() or not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except ValueError:
        return None
    if any(record.get(k) != v for k, v in _stamp(checkpoint).items()) or protocol not in (None, record.get("protocol")):
        return None
    by_decoding = record.get("seeds", {}).get(str(seed))
    return {d: EvalResult.of(episodes) for d, episodes in by_decoding.items()} if by_decoding else None


def evaluate_checkpoints(
    checkpoints: Sequence[str | Path],
    baseline_runs: int = 0,
    split: str = "test",
    log: Callable[[str], None] = print,
    sampled: bool = True,
    temperature: float = 1.0,
    seed: int = 0,
    quests: int | None = None,
    worlds: tuple[str | Path, str | Path, str | Path] | None = None,
    **overrides,
) -> list[tuple[str, list[EvalResult]]]:
    """Trained agents' checkpoints or bundles, one per seed of a configuration, evaluated zero-shot side by side with
    the baselines over ``baseline_runs`` seeds (:func:`lq.eval.agents.compare_agents`, which says what the other
    arguments do), each loaded when its turn comes (:func:`load_agent`: ``overrides`` replace hyperparameters, e.g.
    ``eval_max_steps``); ``worlds``: another dataset, its partner and its DM, whose quests they play instead
    (:meth:`AgentModule.on_worlds`). A checkpoint whose run recorded the very episodes asked for (its own data's test
    quests, evaluation ``seed``, temperature 1, every quest, its own protocol or the one asked for:
    :func:`recorded_played`) is not played again."""

    def loaded(path: str | Path) -> AgentModule:
        module = load_agent(path, **overrides)
        return module.on_worlds(*worlds) if worlds is not None else module

    agents = ((str(path), agent_name(module), module) for path in checkpoints for module in [loaded(path)])
    recorded = None
    if split == "test" and temperature == 1.0 and quests is None and set(overrides) <= {"protocol"} and not worlds:
        # what each agent's run played after fitting, where it played exactly this (make rl: computed once)
        protocol = overrides["protocol"].name if "protocol" in overrides else None
        recorded = lambda where: recorded_played(where, seed, protocol)  # noqa: E731
    return compare_agents(agents, baseline_runs, split, log, sampled, temperature, seed, quests, recorded)


def demonstration_table(
    checkpoints: Sequence[str | Path], split: str = "valid", limit: int | None = None, **overrides
) -> str:
    """Each checkpoint's teacher-forced figures (:meth:`AgentModule.demonstration_figures`) on the training
    demonstrations and on ``split``'s, the first ``limit`` of each, as a Markdown table (one row per checkpoint and
    split: a memorising agent's training loss falls while the held-out one rises)."""
    rows = []
    for path in checkpoints:
        module = load_agent(path, **overrides)
        for which in dict.fromkeys(("train", split)):
            f = module.demonstration_figures(which, limit)
            figures = [f"{f[k]:.3f}" if k in f else "—" for k in ("loss", "action_accuracy", "speech_accuracy")]
            rows.append([str(path), which, str(f["demonstrations"]), *figures])
    head = ["Checkpoint", "demonstrations of", "episodes", "loss per turn", "action accuracy", "speech accuracy"]
    return "\n".join(markdown_table(head, rows, numeric_from=2))


def training_curves(checkpoints: Sequence[str | Path], path: str | Path) -> bool:
    """The RL learning curves of ``checkpoints`` (from the MLflow runs that trained them), mean ± std over the seeds
    of each configuration, as one PNG; False if none of them recorded a run."""
    from mlflow.tracking import MlflowClient

    series: dict[str, list] = {}
    for checkpoint in checkpoints:
        if is_bundle(checkpoint):  # a bundle keeps no training run to read
            continue
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        where, h = saved.get("lq_mlflow"), saved.get("hyper_parameters", {})
        if saved.get("lq_stage") != "rl" or not where:
            continue
        label = agent_label("rl", h)
        client = MlflowClient(where["tracking_uri"])
        series.setdefault(label, []).append(run_series(client, where["run_id"], CURVES["rl"]))
    return bool(series) and plot_curves(series, CURVES["rl"], path, "RL learning curves (training episodes)")


# what each agent stage trains, as a model card says it
STAGE_WORDS = {"bc": "behaviour cloning", "rl": "A2C", "llm_bc": "LoRA behaviour cloning of a language model"}


def training_identity(module: AgentModule, training_run: dict | None) -> dict[str, object]:
    """Who the agent is, as its training run knew it: stage, encoder, ability, switch, seed, protocol, its dataset and
    the dataset's fingerprint, RL's objective, and where the training run is reachable its profile and commit (MLflow
    params and tags)."""
    h = module.hparams
    identity: dict[str, object] = {
        "stage": module.stage,
        "encoder": module.encoder_name,
        "ability": h.ability,
        "switch": h.switch,
        "seed": h.seed,
        "protocol": module.protocol.name,
        "data": Path(module.data_dir).name,
        # its fingerprint, the digest of the dataset every run logs as its MLflow input (lq.lit.cli.log_dataset)
        "dataset": dataset_id(module.data_dir),
    }
    if module.stage == "rl":
        identity["objective"] = (
            "lq" if h.get("init_from") == "bc" else "paper" if h.get("init_from") is None else "other"
        )
    if training_run:
        identity["training_run"] = training_run.get("run_id")
        try:
            from mlflow.tracking import MlflowClient

            run = MlflowClient(training_run["tracking_uri"]).get_run(training_run["run_id"])
        except Exception:  # noqa: BLE001 (the store of another machine, or gone: the card says what the checkpoint does)
            run = None
        if run is not None:
            for key in ("profile", "objective"):
                if key in run.data.params:
                    identity[key] = run.data.params[key]
            if commit := run.data.tags.get("mlflow.source.git.commit"):
                identity["commit"] = commit
    return identity


def front_matter(module: AgentModule, identity: dict, figures: dict[str, float] | None) -> str:
    """The card's YAML metadata, as Hugging Face reads it: licence, library, tags, and a model-index of its zero-shot
    figures."""
    import yaml

    name = f"{agent_name(module)}, seed {module.hparams.seed}"
    meta: dict[str, object] = {
        "license": "mit",
        "library_name": "lq",
        "tags": ["lq", "light", "text-games", "reinforcement-learning", "dialogue", module.stage],
        "lq": identity,
    }
    if figures:
        meta["model-index"] = [
            {
                "name": name,
                "results": [
                    {
                        "task": {"type": "reinforcement-learning", "name": "zero-shot LIGHT-Quests"},
                        "dataset": {"type": "light-quests", "name": str(identity["data"]), "split": "test"},
                        "metrics": [
                            {"type": key, "name": key.replace("_", " "), "value": round(value, 4)}
                            for key, value in figures.items()
                        ],
                    }
                ],
            }
        ]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def model_card(
    module: AgentModule,
    table: str | None,
    source: str | Path,
    training_run: dict | None,
    figures: dict[str, float] | None = None,
    quests: int | None = None,
) -> str:
    """The bundle's README.md: YAML metadata (:func:`front_matter`), what the agent is, its training identity, the
    data and protocol it was trained and evaluated under, how to use it, and its zero-shot figures beside the
    baselines (``table``; None where export was told not to evaluate; ``figures``: the agent's own, under its
    protocol's decoding; ``quests``: played on only the first that many test quests). No path outside the bundle: the
    checkpoint is named, not where it was."""
    h, data = module.hparams, module.data_dir
    protocol = module.protocol
    identity = training_identity(module, training_run)
    lines = [
        front_matter(module, identity, figures),
        f"# {agent_name(module)}, seed {h.seed}",
        "",
        f"An lq agent ({module.stage.upper()}: {STAGE_WORDS.get(module.stage, module.stage)}) that acts "
        "and speaks toward its motivation in LIGHT-Quests, as in Ammanabrolu et al., *How to Motivate Your Dragon: "
        "Teaching Goal-Driven Agents to Speak and Act in Fantasy Worlds* (NAACL 2021, "
        "https://arxiv.org/abs/2010.00685).",
        "",
        "| | |",
        "| --- | --- |",
        f"| encoder | {module.encoder_name} |",
        f"| ability, switch | {h.ability}, {h.switch} (every {h.switch_every} turns where hardcoded) |",
        f"| data | `{Path(data).name}`, fingerprint `{dataset_id(data)}` (a copy is in `data/`) |",
        f"| protocol | {protocol.describe()} |",
        f"| seed | {h.seed} |",
        *(f"| {key} | {identity[key]} |" for key in ("objective", "profile", "commit") if key in identity),
        f"| exported from | `{Path(source).name}` |",
    ]
    if training_run:
        lines.append(f"| training run | MLflow run `{training_run.get('run_id')}` |")
    lines += [
        "",
        "## Use",
        "",
        "```bash",
        "lq eval THIS_FOLDER --baselines 1      # the zero-shot table below, again",
        "lq play --agent THIS_FOLDER            # you are the partner; the agent pursues its motivation",
        "```",
        "",
        "```python",
        "import lq",
        "agent = lq.load_agent('THIS_FOLDER')   # from any working directory",
        "env = lq.api.gym_env('THIS_FOLDER')    # gymnasium lq/Quest-v0 over this agent's data and partner",
        "```",
        "",
        "## Zero-shot evaluation",
        "",
    ]
    if table is None:
        lines.append("Not evaluated at export (`lq export --no-eval`); run `lq eval` on this folder.")
    else:
        lines += [
            f"One episode per test quest{f' (the first {quests} only)' if quests else ''}, under the "
            f"`{protocol.name}` protocol, through the same actor and environment "
            "as the baselines (mean ± std over their runs):",
            "",
            table.rstrip("\n"),
        ]
    return "\n".join(lines) + "\n"


def export_agent(
    checkpoint: str | Path,
    out: str | Path,
    baseline_runs: int = 1,
    evaluate: bool = True,
    overwrite: bool = False,
    quests: int | None = None,
    **places: str,
) -> str | None:
    """``lq export``: the agent of ``checkpoint`` as a bundle at ``out`` (:mod:`lq.lit.bundles`) with its model card;
    evaluated from the bundle itself (with the baselines over ``baseline_runs`` seeds) unless ``evaluate`` is False.
    Written to a temporary folder and moved into place when complete. Returns the evaluation table. ``places``: its
    dataset or models named where the checkpoint's are not found (``data_dir``, ``partner_checkpoint`` ...).
    ``quests``: evaluate on the first that many test quests only (None: all; the card says how many)."""
    from lq.data.io import atomic_dir
    from lq.eval import results_table

    saved = {} if is_bundle(checkpoint) else read_checkpoint(checkpoint)  # read once: the agent and its MLflow run
    module = load_bundle(checkpoint, **places) if is_bundle(checkpoint) else agent_of(saved, checkpoint, **places)
    table, figures = None, None
    with atomic_dir(out, overwrite=overwrite) as tmp:
        export_bundle(module, checkpoint, tmp)
        if evaluate:
            rows = evaluate_checkpoints([tmp], baseline_runs, log=lambda _: None, quests=quests)
            table = results_table(rows)[0]
            decoding = f"({module.protocol.decoding})"
            own = next((results for name, results in rows if name.endswith(decoding)), rows[0][1])
            figures = {
                key: sum(r.metrics()[key] for r in own) / len(own) for key, *_ in GOAL_RATES
            }
        card = model_card(module, table, checkpoint, saved.get("lq_mlflow"), figures, quests)
        (tmp / "README.md").write_text(card)
    return table
