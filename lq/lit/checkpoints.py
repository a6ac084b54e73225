"""Agent checkpoints of either stage: reopening them (``lq eval``), evaluating them side by side with the baselines
and the ceiling, and drawing RL learning curves from their MLflow runs. Above both stages' modules (it knows
:class:`lq.lit.bc.BCModule` and :class:`lq.lit.rl.RLModule`), so that :mod:`lq.lit.agent` knows neither.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from lq.eval import EvalResult, plot_curves, run_series
from lq.lit.agent import AgentModule
from lq.lit.bc import BCModule
from lq.lit.rl import RLModule
from lq.rl.baselines import BASELINES, CEILING, REPLAY, REPLAY_WITH_PARTNER, ceiling, replay_demonstrations


def load_agent(checkpoint: str | Path, **overrides) -> AgentModule:
    """A trained BC or RL agent from its checkpoint, built and in eval mode; ``overrides`` replace hyperparameters
    (e.g. ``eval_max_steps``)."""
    try:
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
    except FileNotFoundError:
        raise FileNotFoundError(f"{checkpoint}: no such checkpoint; train one first (make bc, make rl)") from None
    classes = {"bc": BCModule, "rl": RLModule}
    stage = saved.get("lq_stage")
    if stage not in classes:
        raise ValueError(f"{checkpoint}: not an lq agent checkpoint (from lq bc or lq rl); lq_stage={stage!r}")
    hparams = {k: v for k, v in saved["hyper_parameters"].items() if not k.startswith("_")}  # LightningCLI's own
    if "protocol" not in hparams:  # from before protocols: it chose among the valid candidates (``restrict``)
        hparams.pop("restrict", None)
        hparams["protocol"] = "restricted"
    hparams.update(overrides)
    module = classes[stage](**hparams)
    state = saved["state_dict"]
    vocabulary = state.get("agent.encoder.vocabulary.ids")
    module.build_agent(vocabulary, whole_vocabulary=vocabulary is None)
    module.load_state_dict(state)
    return module.eval()


def agent_name(module: AgentModule) -> str:
    """A row name for tables: stage, encoder, ability and switch (seeds of one configuration share it)."""
    h = module.hparams
    return f"{module.stage.upper()} {h.encoder['name']} {h.ability} {h.switch}"


def baseline_results(module: AgentModule, split: str = "test", seeds: Sequence[int] = (0,)) -> dict[str, list]:
    """The baselines of :mod:`lq.rl.baselines` through ``module``'s actor and environment (its protocol, switch,
    ability and spaces), one evaluation per seed; the ceiling and the demonstrations replayed (with their own
    partner, and with the environment's), once: neither samples. Keyed as :data:`BASELINES`, :data:`CEILING`,
    :data:`REPLAY` and :data:`REPLAY_WITH_PARTNER`."""
    env = module.eval_env(split)  # one environment for every rule and seed
    out = {
        key: [module.evaluate(split, seed=seed, policy=policy, restrict=restrict, env=env) for seed in seeds]
        for key, _, policy, restrict in BASELINES
    }
    out[CEILING[0]] = [EvalResult(ceiling(env), float("nan"), float("nan"))]
    out[REPLAY[0]] = [EvalResult.of(replay_demonstrations(env, "scripted"))]
    out[REPLAY_WITH_PARTNER[0]] = [EvalResult.of(replay_demonstrations(env, "model"))]
    return out


def evaluate_checkpoints(
    checkpoints: Sequence[str | Path],
    baseline_runs: int = 0,
    split: str = "test",
    log: Callable[[str], None] = print,
    sampled: bool = True,
    **overrides,
) -> list[tuple[str, list[EvalResult]]]:
    """Zero-shot results of trained agents, grouped by configuration (one checkpoint per seed), greedy and (with
    ``sampled``) sampled at temperature 1; then the baselines through the same actor and environment over
    ``baseline_runs`` seeds (the first agent's switch, ability and spaces), and the ceiling."""
    rows: dict[str, list[EvalResult]] = {}
    first = None
    for path in checkpoints:
        module = load_agent(path, **overrides)
        first = first or module
        env = module.eval_env(split, module.hparams.seed)  # both decodings in one environment
        for greedy in (True, False) if sampled else (True,):
            result = module.evaluate(split, seed=module.hparams.seed, greedy=greedy, env=env)
            decoding = "greedy" if greedy else "sampled"
            log(
                f"{path} ({decoding}): act goals {result.act_goal_rate:.3f}, speech goals {result.speech_goal_rate:.3f}"
            )
            rows.setdefault(f"{agent_name(module)} ({decoding})", []).append(result)
    if baseline_runs and first is not None:
        titles = {key: title for key, title, *_ in (*BASELINES, CEILING, REPLAY, REPLAY_WITH_PARTNER)}
        for key, results in baseline_results(first, split, range(baseline_runs)).items():
            rows[titles[key]] = results
    return list(rows.items())


RL_CURVES = ("rl/act_goal_rate", "rl/speech_goal_rate", "rl/return")


def training_curves(checkpoints: Sequence[str | Path], path: str | Path) -> bool:
    """The RL learning curves of ``checkpoints`` (from the MLflow runs that trained them), mean ± std over the seeds
    of each configuration, as one PNG; False if none of them recorded a run."""
    from mlflow.tracking import MlflowClient

    series: dict[str, list] = {}
    for checkpoint in checkpoints:
        saved = torch.load(checkpoint, map_location="cpu", weights_only=False)
        where, h = saved.get("lq_mlflow"), saved.get("hyper_parameters", {})
        if saved.get("lq_stage") != "rl" or not where:
            continue
        label = f"RL {h['encoder']['name']} {h['ability']} {h['switch']}"
        client = MlflowClient(where["tracking_uri"])
        series.setdefault(label, []).append(run_series(client, where["run_id"], RL_CURVES))
    return bool(series) and plot_curves(series, RL_CURVES, path, "RL learning curves (training episodes)")
