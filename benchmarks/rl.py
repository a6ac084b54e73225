"""RL training throughput: transitions per second of the whole switch A2C loop (rollout and update), and where the
time goes, for the scratch encoder and a pretrained one at the CPU profile, under each evaluation protocol
(``paper``: choice over the whole spaces, 30-turn episodes; ``restricted``: choice among the valid candidates) in
one run, since this machine's speed drifts between days: compare only figures of one run.

    python benchmarks/rl.py [--data data/default] [--warmup 20] [--updates 20] [--encoders scratch general_light]
                            [--profile conf/profile/tiny/rl.yaml] [--protocols restricted paper] [--objective lq]

Each encoder runs the same loop as ``lq rl fit`` (``lq.rl.a2c.collect``, ``RLModule.objective``: the A2C terms and
the objective's imitation term, backward, clipping and an Adam step) with the profile's sizes, then the objective's
(``conf/objective/``: the paper's has 32 environments and 100-turn training episodes). The first ``--warmup``
updates fill the caches that a run keeps (each context line's word pieces; for a pretrained encoder each line's
frozen states), as the first minutes of a 300-update run do; their rate is printed as the cold start, and the
timed updates after them give the figure. The partner, the DM and the pretrained encoder are the trained
checkpoints when they exist (``make partner dm PROFILE=tiny``, ``make pretrain``); otherwise untrained models of the
same shapes stand in (the cost is the same; it says so). For a pretrained encoder, "of which the frozen base" is the
part of the agent forward and the imitation term spent encoding the context lines its cache had not kept
(``StateEncoder.frozen_states``); the lines and word pieces it encoded per timed update, and the cache's size and
clears, are printed. The last lines print one figure per encoder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from unittest import mock

import torch
from timing import COUNTS, TIMES, Yardstick, timed

import lq.envs.episode as episode
import lq.envs.quest_env as quest_env
import lq.models.agent as agent_model
from lq.conf.resolver import Resolver, merged_config
from lq.envs.protocol import protocol_of
from lq.envs.spec import EnvSpec
from lq.lit.rl import RLModule
from lq.models.agent import AgentConfig
from lq.models.encoder import EncoderConfig, EncoderSpec
from lq.models.poly_encoder import PolyEncoder
from lq.rl.a2c import collect

ROOT = Path(__file__).resolve().parents[1]
FROZEN = "of which the frozen base"  # a part of the agent forward and the imitation term, not beside them


def merged_model_config(*files: Path) -> dict:
    """The ``model:`` sections of LightningCLI configs merged in order (:func:`lq.conf.resolver.merged_config`)."""
    return merged_config([a for f in files for a in ("--config", str(f))]).get("model", {})


def stand_in(path: str, spec: EncoderSpec, n_codes: int, folder: Path, note: list[str]) -> str:
    """``path`` if it exists, else an untrained poly-encoder checkpoint of ``spec``'s shape."""
    if Path(path).exists():
        return path
    model = PolyEncoder.from_spec(spec, n_codes)
    out = folder / (Path(path).parent.name + "-" + Path(path).name)
    hparams = {"encoder": asdict(EncoderConfig(Path(path).parent.name, spec)), "n_codes": n_codes}
    torch.save(
        {"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()}, "hyper_parameters": hparams}, out
    )
    note.append(f"{path} missing: an untrained model of its shape stands in")
    return str(out)


def run(encoder: str, protocol: str, args: argparse.Namespace, folder: Path) -> tuple[float, dict[str, float]]:
    files = ("conf/agent.yaml", "conf/rl.yaml", f"conf/encoder/{encoder}.yaml", args.profile)
    config = merged_model_config(*(ROOT / f for f in files), ROOT / f"conf/objective/{args.objective}.yaml")
    env = {**config.pop("env"), "protocol": protocol_of(protocol), "data_dir": str(args.data)}
    enc = config.pop("encoder")
    enc["spec"] = EncoderSpec(**enc.get("spec", {}))
    note: list[str] = []
    small = EncoderSpec(init="scratch", hidden_size=128, num_layers=2, num_heads=4, intermediate_size=512)
    where = Resolver()  # the default profile's checkpoints, as make partner / dm / pretrain leave them
    for stage in ("partner", "dm"):
        env[f"{stage}_checkpoint"] = stand_in(where.checkpoint(stage), small, 16, folder, note)
    pretrained = None
    if encoder != "scratch":
        pretrained = stand_in(where.checkpoint("pretrain", encoder), EncoderSpec(), 64, folder, note)
    agent = config.pop("agent")
    agent["scratch"] = EncoderSpec(**agent["scratch"])
    config.pop("init_from", None)  # the loop's cost does not depend on the weights it starts from (no BC agent here)
    module = RLModule(
        env=EnvSpec(**env),
        encoder=EncoderConfig(**enc),
        pretrained_checkpoint=pretrained,
        agent=AgentConfig(**agent),
        **config,
    )
    module.setup("fit")
    env, actor = module.env, module.rollout_actor
    env.partner.act = timed("partner", env.partner.act)
    env.dm.rank = timed("DM", env.dm.rank)
    actor._scores = timed("agent forward", actor._scores)
    module.imitation_loss = timed("imitation term", module.imitation_loss)  # lq's objective (conf/objective/lq.yaml)
    state_encoder = module.agent.encoder
    with ExitStack() as patches:  # module functions, timed for this run only (a second run would time them twice)
        for owner, name in ((episode, "step"), (quest_env, "valid_actions")):  # each turn through the engine
            patches.enter_context(mock.patch.object(owner, name, timed("engine", getattr(owner, name))))
        if pretrained:  # within the agent forward and the imitation term: the lines a frozen base has not kept yet
            encode = timed(FROZEN, counted(agent_model.token_states))
            patches.enter_context(mock.patch.object(agent_model, "token_states", encode))
        rate, shares, cold = timed_updates(module, args)
    for line in note:
        print(f"  note: {line}")
    if args.warmup:
        print(f"  the {args.warmup} warm-up updates (cold caches): {cold:.1f} transitions/s")
    if pretrained:
        per = max(args.updates, 1)
        print(
            f"  the frozen base encoded {COUNTS['lines'] / per:.1f} lines ({COUNTS['word pieces'] / per:.0f} word "
            f"pieces) per timed update; its cache held {len(state_encoder._line_states)} lines "
            f"({state_encoder._cached_tokens} of at most {state_encoder.max_cached_tokens} word pieces) at the end"
        )
    return rate, shares


def counted(encode):
    """``encode`` (``token_states``), adding the lines and word pieces it encodes to ``COUNTS``."""

    def wrapper(encoder, ids, mask):
        COUNTS["lines"] += len(ids)
        COUNTS["word pieces"] += int(mask.sum())
        return encode(encoder, ids, mask)

    return wrapper


def timed_updates(module: RLModule, args: argparse.Namespace) -> tuple[float, dict[str, float], float]:
    """``args.warmup`` A2C updates, then ``args.updates`` timed: transitions per second, each part's share of the
    timed updates, and the warm-up's transitions per second."""
    env, actor, h = module.env, module.rollout_actor, module.hparams
    optimizer = module.configure_optimizers()

    def update() -> None:
        rollout = collect(env, actor, module.rollout_state, h.rollout_steps)
        losses, _ = module.objective(rollout)
        start = time.perf_counter()
        optimizer.zero_grad()
        losses.total.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        TIMES["agent backward and step"] += time.perf_counter() - start

    start = time.perf_counter()
    for _ in range(args.warmup):
        update()
    cold = args.warmup * h.rollout_steps * h.num_envs / max(time.perf_counter() - start, 1e-9)
    TIMES.clear()
    COUNTS.clear()
    start = time.perf_counter()
    for _ in range(args.updates):
        update()
    whole = time.perf_counter() - start
    transitions = args.updates * h.rollout_steps * h.num_envs
    return transitions / whole, {k: v / whole for k, v in TIMES.items()}, cold


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--updates", type=int, default=20, help="timed A2C updates per encoder")
    parser.add_argument("--warmup", type=int, default=20, help="updates first, timed apart (the caches fill)")
    parser.add_argument("--encoders", nargs="+", default=["scratch", "general_light"])
    parser.add_argument("--profile", type=Path, default=ROOT / "conf/profile/tiny/rl.yaml")
    parser.add_argument("--protocols", nargs="+", default=["restricted", "paper"], help="conf/protocol/ names")
    parser.add_argument("--objective", default="lq", help="a conf/objective/ name (its sizes and terms)")
    args = parser.parse_args(argv)
    if not (args.data / "demos").is_dir():
        print(f"no dataset at {args.data}: run `make data` first (or pass --data)", file=sys.stderr)
        return 1
    results = {}
    stick = Yardstick()
    with tempfile.TemporaryDirectory() as folder:
        for encoder in args.encoders:
            for protocol in args.protocols:
                print(
                    f"{encoder}, {protocol} protocol, {args.objective} objective ({args.profile.name}, "
                    f"{torch.get_num_threads()} threads):"
                )
                torch.manual_seed(0)
                rate, shares = run(encoder, protocol, args, Path(folder))
                rest = 1.0 - sum(share for name, share in shares.items() if name != FROZEN)
                for name, share in sorted(shares.items(), key=lambda kv: (kv[0] == FROZEN, -kv[1])):
                    print(f"  {name:<28}{share:>7.1%}")
                print(f"  {'other (env text, masks, sampling)':<28}{rest:>7.1%}")
                results[encoder, protocol] = rate
    stick.end()
    print(stick.report())
    first = args.encoders[0]
    for (encoder, protocol), rate in results.items():
        base = results.get((encoder, args.protocols[0]))
        ratio = f", {rate / base:.2f} of {args.protocols[0]}'s" if base and protocol != args.protocols[0] else ""
        if encoder != first and (first, protocol) in results:
            ratio += f", {rate / results[first, protocol]:.2f} of {first}'s"
        print(
            f"{encoder}, {protocol}: {rate:.1f} transitions/s (rollout and update; {stick.per(rate):.2f} per "
            f"yardstick{ratio})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
