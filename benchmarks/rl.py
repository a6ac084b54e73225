"""RL training throughput: transitions per second of the whole switch A2C loop (rollout and update), and where the
time goes, for the scratch encoder and a pretrained one at the CPU profile, under each evaluation protocol
(``paper``: choice over the whole spaces, 30-turn episodes; ``restricted``: choice among the valid candidates) in
one run, since this machine's speed drifts between days: compare only figures of one run.

    python benchmarks/rl.py [--data data/default] [--warmup 20] [--updates 20] [--encoders scratch general_light]
                            [--profile conf/profile/tiny/rl.yaml] [--protocols restricted paper]

Each encoder runs the same loop as ``lq rl fit`` (``lq.rl.a2c.collect``, ``RLModule.objective``: the A2C terms and
conf/rl.yaml's imitation term, backward, clipping and an Adam step) with the profile's sizes. The first ``--warmup``
updates fill the caches that a run keeps (each context line's word pieces; for a pretrained encoder each line's
frozen states), as the first minutes of a 300-update run do; their rate is printed as the cold start, and the
timed updates after them give the figure. The partner, the DM and the pretrained encoder are the trained
checkpoints when they exist (``make partner dm PROFILE=tiny``, ``make pretrain``); otherwise untrained models of the
same shapes stand in (the cost is the same; it says so). The last lines print one figure per encoder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

import torch
from timing import TIMES, Yardstick, timed

import lq.envs.episode as episode
import lq.envs.quest_env as quest_env
from lq.conf.resolver import Resolver, merged_config
from lq.envs.protocol import protocol_of
from lq.envs.spec import EnvSpec
from lq.lit.rl import RLModule
from lq.models.agent import AgentConfig
from lq.models.encoder import EncoderConfig, EncoderSpec
from lq.models.poly_encoder import PolyEncoder
from lq.rl.a2c import collect

ROOT = Path(__file__).resolve().parents[1]


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
    config = merged_model_config(
        ROOT / "conf/agent.yaml", ROOT / "conf/rl.yaml", ROOT / f"conf/encoder/{encoder}.yaml", args.profile
    )
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
    env, actor, h = module.env, module.rollout_actor, module.hparams
    optimizer = module.configure_optimizers()
    env.partner.act = timed("partner", env.partner.act)
    env.dm.rank = timed("DM", env.dm.rank)
    actor._scores = timed("agent forward", actor._scores)
    module.imitation_loss = timed("imitation term", module.imitation_loss)  # lq's objective (conf/rl.yaml)
    episode.step = timed("engine", episode.step)  # each turn through the engine
    quest_env.valid_actions = timed("engine", quest_env.valid_actions)

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
    start = time.perf_counter()
    for _ in range(args.updates):
        update()
    whole = time.perf_counter() - start
    transitions = args.updates * h.rollout_steps * h.num_envs
    for line in note:
        print(f"  note: {line}")
    if args.warmup:
        print(f"  the {args.warmup} warm-up updates (cold caches): {cold:.1f} transitions/s")
    return transitions / whole, {k: v / whole for k, v in TIMES.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--updates", type=int, default=20, help="timed A2C updates per encoder")
    parser.add_argument("--warmup", type=int, default=20, help="updates first, timed apart (the caches fill)")
    parser.add_argument("--encoders", nargs="+", default=["scratch", "general_light"])
    parser.add_argument("--profile", type=Path, default=ROOT / "conf/profile/tiny/rl.yaml")
    parser.add_argument("--protocols", nargs="+", default=["restricted", "paper"], help="conf/protocol/ names")
    args = parser.parse_args(argv)
    if not (args.data / "demos").is_dir():
        print(f"no dataset at {args.data}: run `make data` first (or pass --data)", file=sys.stderr)
        return 1
    results = {}
    stick = Yardstick()
    with tempfile.TemporaryDirectory() as folder:
        for encoder in args.encoders:
            for protocol in args.protocols:
                print(f"{encoder}, {protocol} protocol ({args.profile.name}, {torch.get_num_threads()} threads):")
                torch.manual_seed(0)
                rate, shares = run(encoder, protocol, args, Path(folder))
                rest = 1.0 - sum(shares.values())
                for name, share in sorted(shares.items(), key=lambda kv: -kv[1]):
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
