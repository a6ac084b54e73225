"""A language model as the agent (:mod:`lq.llm`): what one of its turns costs under each protocol, and how near that
is to the rate this machine does the turn's matrix products at.

    python benchmarks/llm.py [--llm smollm2|PATH] [--dtype float32] [--score sum] [--batch-size 32] [--turns 6]
                             [--protocols restricted paper] [--paper-candidates 400] [--data data/default]
                             [--profile tiny] [--device cpu|cuda] [--stand-ins DIR] [--json PATH]

Each protocol plays ``--turns`` turns of the test quests, one environment, through the actor ``lq llm`` plays with
(:meth:`lq.lit.agent.AgentModule.make_actor` with a :class:`lq.llm.policy.LanguageModelPolicy`): the hardcoded
switch, the engine's valid actions and the Dungeon Master's valid utterances (``restricted``) or the whole action and
utterance spaces (``paper``). The partner and the DM are the profile's trained checkpoints where they exist (``make
partner dm``), else untrained models of their shapes stand in, as in ``benchmarks/rl.py`` (the DM then offers other
utterances, of the same space). A turn's time is split into its prompt's pass (the tokens its prompt cache did not
hold) and its candidates' passes; the figures are prompt tokens per second, candidates (and their tokens) per second,
and each head's mean turn. Under ``paper`` a speaking turn has thousands of candidates (some minutes each on a
2-core CPU): where a turn has more than ``--paper-candidates`` (0: no cap; the default on cuda), only that many are
scored (the rest get no score) and its whole turn is given as the scored part's time scaled by candidates, marked
"scaled".

The arithmetic limit of a turn: the last turn of each head replayed with an empty prompt cache (the whole prompt run)
and timed, then once more under torch's FLOP counter, its matrix products recorded and replayed alone on random
operands of their shapes (``benchmarks/rl.py``'s :func:`matmul_rate`); the limit is the turn's FLOPs at that rate, and
the share the turn's time reaches of it. The 2048-square product's rate is printed beside it as the machine's
roofline. The yardstick (:mod:`timing`) is measured at the start and the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from lq.llm.model import DEFAULT_MODEL, DTYPES, ModelError, load_language_model
from lq.llm.policy import SCORES, LanguageModelPolicy
from lq.llm.scoring import PromptCache

from rl import (
    CPU_ATTENTION,
    MatmulShapes,
    build_module,
    large_matmul_rate,
    matmul_rate,
    profile_file,
    synchronizer,
    unusable,
)
from timing import Yardstick

HEADS = ("act", "speak")


class TimedCache(PromptCache):
    """A prompt cache adding the seconds of its prompts' passes to ``seconds``."""

    def __init__(self, size: int, sync=None):
        super().__init__(size)
        self.sync, self.seconds = sync, 0.0

    def encode(self, model, prompt_ids):
        start = clock(self.sync)
        try:
            return super().encode(model, prompt_ids)
        finally:
            self.seconds += clock(self.sync) - start


def clock(sync) -> float:
    """``time.perf_counter``, after the GPU's kernels (``sync``) where there is one."""
    if sync is not None:
        sync()
    return time.perf_counter()


class TimedPolicy(LanguageModelPolicy):
    """The policy, timing each turn (one environment: one row a call) and its prompt's pass apart, and scoring at most
    ``cap`` candidates of a turn (0: all; the rest get no score, -inf)."""

    def __init__(self, *args, cap: int = 0, sync=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.cap, self.sync, self.turns = cap, sync, []
        self.prompts = TimedCache(self.prompts.size, sync)

    def candidate_scores(self, contexts, heads, candidates):
        if len(contexts) != 1:
            raise ValueError("benchmarks/llm.py times one environment: one row a turn")
        texts = list(candidates[0])
        scored = texts[: self.cap] if self.cap else texts
        before, reused, prompt_s = dict(self.counted), self.prompts.reused, self.prompts.seconds
        start = clock(self.sync)
        [scores] = super().candidate_scores(contexts, heads, [scored])
        seconds = clock(self.sync) - start
        prompt = self.counted["prompt_tokens"] - before.get("prompt_tokens", 0)
        self.turns.append({
            "head": heads[0], "context": contexts[0], "texts": scored, "candidates": len(texts),
            "scored": len(scored), "prompt_tokens": prompt,
            "prompt_tokens_run": prompt - (self.prompts.reused - reused),
            "candidate_tokens": self.counted["candidate_tokens"] - before.get("candidate_tokens", 0),
            "seconds": seconds, "prompt_seconds": self.prompts.seconds - prompt_s,
            "turn_seconds": seconds * len(texts) / len(scored),  # the whole turn's (scaled where capped)
        })  # fmt: skip
        full = torch.full((len(texts),), float("-inf"))
        full[: len(scored)] = scores
        return [full]


def play(module, policy: TimedPolicy, turns: int) -> None:
    """``turns`` turns of one environment over the test quests' episodes in order, through the agent module's
    actor."""
    env, actor = module.eval_env("test", seed=0), module.make_actor(policy=policy)
    played = 0
    for index in range(len(env.instances)):
        obs, infos = env.reset([index])
        state, done = actor.start(1), False
        while not done and played < turns:
            commands, _ = actor.step(env, obs, infos, state, greedy=True)
            obs, _, dones, infos = env.step(commands)
            done, played = bool(dones[0]), played + 1
        if played >= turns:
            return


def turn_limit(policy: TimedPolicy, turn: dict, device: str) -> dict:
    """``turn`` replayed with an empty prompt cache, timed; then under the FLOP counter, its products replayed alone:
    its FLOPs, their rate alone, the limit (seconds) and the share the timed turn reaches of it."""
    sync = synchronizer(device)
    kept = policy.cap, policy.prompts

    def replay() -> float:
        policy.prompts = TimedCache(0, sync)  # the whole prompt run
        policy.candidate_scores([turn["context"]], [turn["head"]], [turn["texts"]])
        return policy.turns.pop()["seconds"]

    try:
        policy.cap = 0
        seconds = replay()
        counter, shapes = FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION), MatmulShapes()
        with counter, shapes:
            replay()
    finally:
        policy.cap, policy.prompts = kept
    flops = counter.get_total_flops()
    rate = matmul_rate(shapes.calls, device, sync)
    return {"seconds": seconds, "flops": flops, "matmul_flops_per_s": rate, "limit_seconds": flops / rate,
            "share_of_limit": flops / rate / seconds}  # fmt: skip


def summary(turns: list[dict]) -> dict:
    """The turns' rates and each head's mean turn."""
    prompt_s = sum(t["prompt_seconds"] for t in turns)
    candidate_s = sum(t["seconds"] - t["prompt_seconds"] for t in turns)
    out = {
        "turns": len(turns),
        "prompt_tokens_per_s": sum(t["prompt_tokens_run"] for t in turns) / max(prompt_s, 1e-9),
        "candidates_per_s": sum(t["scored"] for t in turns) / max(candidate_s, 1e-9),
        "candidate_tokens_per_s": sum(t["candidate_tokens"] for t in turns) / max(candidate_s, 1e-9),
        "heads": {},
    }
    for head in HEADS:
        mine = [t for t in turns if t["head"] == head]
        if mine:
            n = len(mine)
            out["heads"][head] = {
                "turns": n,
                "turn_seconds": sum(t["turn_seconds"] for t in mine) / n,
                "candidates": sum(t["candidates"] for t in mine) / n,
                "scored": sum(t["scored"] for t in mine) / n,
                "prompt_tokens": sum(t["prompt_tokens"] for t in mine) / n,
                "scaled": any(t["scored"] < t["candidates"] for t in mine),
            }
    return out


def run(protocol: str, lm, args: argparse.Namespace, folder: Path) -> dict:
    rl_args = argparse.Namespace(profile=args.profile, objective="lq", data=args.data, device=args.device,
                                 partner_calibration="share", precision="32-true")  # fmt: skip
    module, note = build_module("scratch", protocol, rl_args, folder)
    for line in note:
        print(f"  note: {line}")
    cap = args.paper_candidates if protocol == "paper" else 0
    policy = TimedPolicy(lm, score=args.score, batch_size=args.batch_size, cap=cap, sync=synchronizer(args.device))
    play(module, policy, args.turns)
    figures = summary(policy.turns)
    for head, f in figures["heads"].items():
        scaled = f", scaled from {f['scored']:.0f} scored" if f["scaled"] else ""
        print(
            f"  {head} turn: {f['turn_seconds']:.2f} s (mean of {f['turns']}; {f['candidates']:.0f} candidates"
            f"{scaled}; prompt {f['prompt_tokens']:.0f} tokens)"
        )
    print(
        f"  prompt {figures['prompt_tokens_per_s']:.0f} tokens/s (those its cache did not hold); candidates "
        f"{figures['candidates_per_s']:.1f}/s ({figures['candidate_tokens_per_s']:.0f} candidate tokens/s)"
    )
    figures["limits"] = {}
    for head in HEADS:
        last = next((t for t in reversed(policy.turns) if t["head"] == head), None)
        if last is None:
            continue
        limit = figures["limits"][head] = turn_limit(policy, last, args.device)
        print(
            f"  {head} turn's arithmetic: {limit['flops'] / 1e9:.1f} GFLOP ({last['scored']} candidates, prompt "
            f"{last['prompt_tokens']} tokens, run whole); its products replayed alone "
            f"{limit['matmul_flops_per_s'] / 1e9:.0f} GFLOP/s: a limit of {limit['limit_seconds']:.2f} s; the turn "
            f"{limit['seconds']:.2f} s, {limit['share_of_limit']:.0%} of it"
        )
    return figures


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llm", default=DEFAULT_MODEL, help="smollm2 (the wheel's GGUF), a model folder or .gguf")
    parser.add_argument("--dtype", choices=DTYPES, default="float32")
    parser.add_argument("--score", choices=SCORES, default="sum")
    parser.add_argument("--batch-size", type=int, default=32, help="candidates a forward pass")
    parser.add_argument("--turns", type=int, default=6, help="turns played per protocol (one environment)")
    parser.add_argument("--protocols", nargs="+", default=["restricted", "paper"], help="conf/protocol/ names")
    parser.add_argument(
        "--paper-candidates", type=int, help="under paper, candidates scored of a turn (0: all; default 400 on the "
        "CPU, all on cuda); the turn's time is scaled to all of them"
    )  # fmt: skip
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--profile", default="tiny", help="the profile whose partner and DM play (tiny, paper, quick)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--stand-ins", type=Path, help="keep the untrained stand-ins here, for the next run to reuse")
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    args = parser.parse_args(argv)
    args.profile = profile_file(args.profile)
    if args.paper_candidates is None:
        args.paper_candidates = 0 if args.device == "cuda" else 400
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if problem := unusable(args.data, args.device):
        print(problem, file=sys.stderr)
        return 1
    try:
        lm = load_language_model(args.llm, args.dtype)
    except ModelError as err:
        print(f"benchmarks/llm.py: {err}", file=sys.stderr)
        return 2
    lm.model.to(args.device)
    stick, results = Yardstick(), {}
    with tempfile.TemporaryDirectory() as temporary:
        folder = args.stand_ins or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        for protocol in args.protocols:
            print(f"{lm.source}, {protocol} protocol ({args.device}, {args.dtype}, {torch.get_num_threads()} threads):")
            torch.manual_seed(0)
            results[protocol] = run(protocol, lm, args, folder)
    roofline = large_matmul_rate(args.device, synchronizer(args.device))
    stick.end()
    print(f"the 2048-square product: {roofline / 1e9:.0f} GFLOP/s (this machine's roofline at these threads)")
    print(stick.report())
    for protocol, figures in results.items():
        heads = "; ".join(f"{head} turn {f['turn_seconds']:.2f} s" for head, f in figures["heads"].items())
        print(f"{protocol}: {heads}; {figures['candidates_per_s']:.1f} candidates/s "
              f"({stick.per(figures['candidates_per_s']):.2f} per yardstick)")  # fmt: skip
    if args.json:
        about = {"llm": lm.source, "device": args.device, "dtype": args.dtype, "score": args.score,
                 "batch_size": args.batch_size, "threads": torch.get_num_threads(), "turns": args.turns,
                 "paper_candidates": args.paper_candidates, "roofline_flops_per_s": roofline,
                 "yardstick": stick.rates}  # fmt: skip
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**about, "protocols": results}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
