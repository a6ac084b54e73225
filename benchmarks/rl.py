"""RL training throughput: transitions per second of the whole switch A2C loop (rollout and update), and where the
time goes, for the scratch encoder and a pretrained one at the CPU profile, under each evaluation protocol
(``paper``: choice over the whole spaces, 30-turn episodes; ``restricted``: choice among the valid candidates) in
one run, since this machine's speed drifts between days: compare only figures of one run.

    python benchmarks/rl.py [--data data/default] [--warmup 20] [--updates 20] [--encoders scratch general_light]
                            [--profile tiny|paper|quick|conf/profile/tiny/rl.yaml] [--protocols restricted paper]
                            [--objective lq] [--device cpu|cuda] [--precision 32-true|bf16-mixed] [--fit N]
                            [--json PATH]

Each encoder runs the same loop as ``lq rl fit`` (``lq.rl.a2c.SwitchA2C``'s collect and objective: the A2C terms
and the objective's imitation term, backward, clipping and an Adam step) with the profile's sizes, then the objective's
(``conf/objective/``: the paper's has 32 environments and 100-turn training episodes). The first ``--warmup``
updates fill the caches that a run keeps (each context line's word pieces; for a pretrained encoder each line's
frozen states), as the first minutes of a 300-update run do; their rate is printed as the cold start, and the
timed updates after them give the figure. The partner, the DM and the pretrained encoder are the trained
checkpoints when they exist (``make partner dm PROFILE=tiny``, ``make pretrain``); otherwise untrained models of the
same shapes stand in (the cost is the same; it says so). For a pretrained encoder, "of which the frozen base" is the
part of the agent forward and the imitation term spent encoding the context lines its cache had not kept
(``StateEncoder.frozen_states``); the lines and word pieces it encoded per timed update, and the cache's size and
clears, are printed. Each encoder's arithmetic line gives one transition's FLOPs, the rate its matrix products run
at replayed alone and so the loop's share of that limit; the line after it, torch's profiler over three more updates:
the products' and attention kernels' share of the loop's wall time, the other operators' (the five largest named),
and the ceiling that share puts on any cut that keeps the arithmetic (CPU only). The last lines print one figure per
encoder.

``--profile paper`` (a profile's name stands for its ``rl.yaml``) runs the paper's sizes; a profile whose context
lengths its encoders have no positions for is refused as a stage would be (:mod:`lq.conf.lengths`). ``--device cuda``
runs the agent, the partner and the DM on the GPU: each timed part is then synchronised (``torch.cuda.synchronize``)
as it starts and ends, so that its share holds its own kernels, and the timed updates' peak GPU memory is printed.
``--precision bf16-mixed`` (the default on cuda: the paper profile's) runs the rollout and the objective under bf16
autocast, as Lightning's bf16-mixed wraps a training step; on the CPU the default is float32. ``--fit N`` first plays N
updates through Lightning's Trainer, the path of ``lq rl fit`` (its move of the module to the device after setup, its
precision plugin), and prints their rate. ``--json PATH`` writes every figure to a file.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from contextlib import ExitStack, nullcontext
from dataclasses import asdict
from functools import partial
from pathlib import Path
from unittest import mock

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode, sdpa_backward_flop_count, sdpa_flop_count

import lq.envs.quest_env as quest_env
import lq.models.agent as agent_model
from lq.conf.lengths import length_problems
from lq.conf.resolver import Profile, merged_config, profiles
from lq.envs.protocol import protocol_of
from lq.envs.spec import EnvSpec
from lq.lit.rl import RLModule
from lq.models.agent import AgentConfig
from lq.models.encoder import EncoderConfig, EncoderSpec, scratch_like
from lq.models.poly_encoder import PolyEncoder
from lq.stages import Resolver

from timing import COUNTS, TIMES, Yardstick, timed

ROOT = Path(__file__).resolve().parents[1]
FROZEN = "of which the frozen base"  # a part of the agent forward and the imitation term, not beside them
PRECISIONS = ("32-true", "bf16-mixed")  # Lightning's names: float32, and bf16 autocast around the forward


def merged_model_config(*files: Path) -> dict:
    """The ``model:`` sections of LightningCLI configs merged in order (:func:`lq.conf.resolver.merged_config`)."""
    return merged_config([a for f in files for a in ("--config", str(f))]).get("model", {})


def profile_file(value: str) -> Path:
    """``--profile``: a profile's name (``paper``: its ``rl.yaml``) or an RL profile file."""
    named = ROOT / "conf/profile" / value / "rl.yaml"
    return named if value in profiles() else Path(value)


def profile_name(file: Path) -> str:
    """The profile a ``--profile`` file is of (its folder's name), for its partner, DM and pretrained encoders; the
    default profile's for a file outside conf/profile/."""
    return file.resolve().parent.name if file.resolve().parent.name in profiles() else "tiny"


def env_stand_in(profile: str) -> tuple[EncoderSpec, int]:
    """The profile's partner and DM as an untrained model of their shape stands in for them: its environment encoder's
    shape (MiniLM's for the paper profile's, read from its config without its weights) and its env.yaml's codes."""
    encoder = Profile(profile).env_encoder
    files = [ROOT / "conf/poly_encoder.yaml", ROOT / f"conf/encoder/{encoder}.yaml", *Profile(profile).files("env")]
    model = merged_model_config(*files)
    return scratch_like(EncoderSpec(**model["encoder"].get("spec", {}))), int(model["n_codes"])


def forward_context(device: str, precision: str):
    """What a training step's forward runs in under ``precision``: bf16 autocast for bf16-mixed (as Lightning's
    precision plugin wraps it), nothing for float32."""
    if precision not in PRECISIONS:
        raise ValueError(f"--precision {precision}: choose {' or '.join(PRECISIONS)}")
    return torch.autocast(device, dtype=torch.bfloat16) if precision == "bf16-mixed" else nullcontext()


def synchronizer(device: str):
    """``torch.cuda.synchronize`` on a GPU (timed parts wait for their kernels), None on the CPU."""
    return torch.cuda.synchronize if device == "cuda" else None


def stand_in(path: str, spec: EncoderSpec, n_codes: int, folder: Path, note: list[str]) -> str:
    """``path`` if it exists, else an untrained poly-encoder checkpoint of ``spec``'s shape."""
    if Path(path).exists():
        return path
    model = PolyEncoder.from_spec(spec, n_codes)
    out = folder / "-".join(Path(path).parts[-3:])  # the stage's too: the partner's and the DM's are two models
    hparams = {"encoder": asdict(EncoderConfig(Path(path).parent.name, spec)), "n_codes": n_codes}
    torch.save(
        {"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()}, "hyper_parameters": hparams}, out
    )
    note.append(f"{path} missing: an untrained model of its shape stands in")
    return str(out)


def run(encoder: str, protocol: str, args: argparse.Namespace, folder: Path) -> dict:
    """One encoder under one protocol: its figures (``transitions_per_s``, ``shares``, ``cold_transitions_per_s``,
    ``fit_transitions_per_s`` with ``--fit``, ``peak_gpu_memory_gib`` on a GPU)."""
    module, note = build_module(encoder, protocol, args, folder)
    part = partial(timed, sync=synchronizer(args.device))
    env, actor = module.env, module.a2c.actor
    env.partner.act = part("partner", env.partner.act)
    env.dm.rank = part("DM", env.dm.rank)
    actor._scores = part("agent forward", actor._scores)
    module.imitation_loss = part("imitation term", module.imitation_loss)  # lq's objective (conf/objective/lq.yaml)
    state_encoder = module.agent.encoder
    with ExitStack() as patches:  # module functions, timed for this run only (a second run would time them twice)
        for name in ("new_slot", "play_turn", "slot_valid_actions"):  # the engine, where the environment calls it
            patches.enter_context(mock.patch.object(quest_env, name, part("engine", getattr(quest_env, name))))
        if module.hparams.pretrained_checkpoint:  # within the agent forward and the imitation term: the lines a
            encode = part(FROZEN, counted(agent_model.token_states))  # frozen base has not kept yet
            patches.enter_context(mock.patch.object(agent_model, "token_states", encode))
        figures = {"fit_transitions_per_s": lightning_updates(module, args)} if args.fit else {}
        figures |= timed_updates(module, args)
    figures |= arithmetic_limit(module, args, figures["transitions_per_s"])
    if args.device == "cpu":  # a GPU's kernels run apart from the calls the profiler's CPU times see
        figures |= operator_split(module, args, figures["transitions_per_s"])
    for line in note:
        print(f"  note: {line}")
    if args.fit:
        fit = figures["fit_transitions_per_s"]
        print(f"  the {args.fit} updates through Lightning's Trainer: {fit:.1f} transitions/s")
    if args.warmup:
        cold = figures["cold_transitions_per_s"]
        print(f"  the {args.warmup} warm-up updates (cold caches): {cold:.1f} transitions/s")
    if "peak_gpu_memory_gib" in figures:
        print(f"  peak GPU memory of the timed updates: {figures['peak_gpu_memory_gib']:.2f} GiB")
    print_limit(figures)
    if module.hparams.pretrained_checkpoint:
        per = max(args.updates, 1)
        print(
            f"  the frozen base encoded {COUNTS['lines'] / per:.1f} lines ({COUNTS['word pieces'] / per:.0f} word "
            f"pieces) per timed update; its cache held {len(state_encoder._line_states)} lines "
            f"({state_encoder._cached_tokens} of at most {state_encoder.max_cached_tokens} word pieces) at the end"
        )
    return figures


def build_module(encoder: str, protocol: str, args: argparse.Namespace, folder: Path) -> tuple[RLModule, list[str]]:
    """The RL module of the profile's sizes, set up on ``args.device`` (refused where the profile's context lengths
    do not fit its encoders), and notes of the models that stand in for missing checkpoints."""
    files = [ROOT / f for f in ("conf/agent.yaml", "conf/rl.yaml", f"conf/encoder/{encoder}.yaml")]
    files += [args.profile, ROOT / f"conf/objective/{args.objective}.yaml"]
    config = merged_model_config(*files)
    env = {**config.pop("env"), "protocol": protocol_of(protocol), "data_dir": str(args.data)}
    if args.partner_calibration:  # "share": a few replays, not 49 settings' (calibration is no part of the loop)
        env["partner_calibration"] = args.partner_calibration
    enc = config.pop("encoder")
    enc["spec"] = EncoderSpec(**enc.get("spec", {}))
    note: list[str] = []
    profile = profile_name(args.profile)
    where = Resolver(profile=profile)  # the profile's checkpoints, as make partner / dm / pretrain leave them
    env_spec, env_codes = env_stand_in(profile)
    for stage in ("partner", "dm"):
        env[f"{stage}_checkpoint"] = stand_in(where.checkpoint(stage), env_spec, env_codes, folder, note)
    pretrained = None
    if encoder != "scratch":
        pretrained = stand_in(where.checkpoint("pretrain", encoder), EncoderSpec(), 64, folder, note)
    problems = length_problems("rl", {"model": {**config, "env": env, "pretrained_checkpoint": pretrained}}, files)
    if problems:
        raise ValueError("\n".join(problems))
    agent = config.pop("agent")
    if "scratch" in agent:  # else AgentConfig's own (the paper profile's before it named one)
        agent["scratch"] = EncoderSpec(**agent["scratch"])
    config.pop("init_from", None)  # the loop's cost does not depend on the weights it starts from (no BC agent here)
    module = RLModule(
        env=EnvSpec(**env),
        encoder=EncoderConfig(**enc),
        pretrained_checkpoint=pretrained,
        agent=AgentConfig(**agent),
        **config,
    )
    module.to(args.device)  # before setup: the environment's partner and DM are built where the module is
    module.setup("fit")
    return module.to(args.device), note  # and the agent setup built


def counted(encode):
    """``encode`` (``token_states``), adding the lines and word pieces it encodes to ``COUNTS``."""

    def wrapper(encoder, ids, mask):
        COUNTS["lines"] += len(ids)
        COUNTS["word pieces"] += int(mask.sum())
        return encode(encoder, ids, mask)

    return wrapper


def lightning_updates(module: RLModule, args: argparse.Namespace) -> float:
    """``args.fit`` updates through Lightning's Trainer, as ``lq rl fit`` plays them (its move of the module to the
    device after setup, its precision plugin's autocast): their transitions per second, Lightning's start included.
    Lightning moves the module back to the CPU when it ends: it goes back to the device."""
    import lightning as L

    h, sync = module.hparams, synchronizer(args.device)
    trainer = L.Trainer(
        accelerator="gpu" if args.device == "cuda" else "cpu",
        devices=1,
        precision=args.precision,
        max_steps=args.fit,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
    )
    start = time.perf_counter()
    trainer.fit(module)
    if sync is not None:
        sync()
    seconds = time.perf_counter() - start
    module.to(args.device)
    TIMES.clear()
    return args.fit * h.rollout_steps * h.num_envs / max(seconds, 1e-9)


def updater(module: RLModule, args: argparse.Namespace):
    """One A2C update of ``module`` as ``lq rl fit`` makes it (a rollout and the objective under ``args.precision``,
    backward, clipping, an Adam step of a fresh optimiser), its backward and step timed apart in ``TIMES``."""
    optimizer = module.configure_optimizers()
    sync = synchronizer(args.device)

    def update() -> None:
        with forward_context(args.device, args.precision):
            rollout = module.a2c.collect()
            losses = module.a2c.objective(rollout)
        if sync is not None:
            sync()
        start = time.perf_counter()
        optimizer.zero_grad()
        losses.total.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        if sync is not None:
            sync()
        TIMES["agent backward and step"] += time.perf_counter() - start

    return update


def timed_updates(module: RLModule, args: argparse.Namespace) -> dict:
    """``args.warmup`` A2C updates, then ``args.updates`` timed (their forward under ``args.precision``): transitions
    per second, each part's share of the timed updates, the warm-up's transitions per second and, on a GPU, the timed
    updates' peak memory."""
    h, sync, update = module.hparams, synchronizer(args.device), updater(module, args)
    cold = transitions_rate(args.warmup, update, h, sync)
    TIMES.clear()
    COUNTS.clear()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    start = time.perf_counter()
    warm = transitions_rate(args.updates, update, h, sync)
    whole = time.perf_counter() - start
    figures = {"transitions_per_s": warm, "cold_transitions_per_s": cold}
    figures["shares"] = {k: v / whole for k, v in TIMES.items()}
    if args.device == "cuda":
        figures["peak_gpu_memory_gib"] = torch.cuda.max_memory_allocated() / 2**30
    return figures


MATMULS = (torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default)
LIMIT_PARTS = ("rollout forward", "imitation term forward", "update backward", "partner", "DM")


class MatmulShapes(TorchDispatchMode):
    """The matrix products (``mm``, ``addmm``, ``bmm``) dispatched inside it: each one's operands' shapes and dtype."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in MATMULS:
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            self.calls.append((func, tuple(tuple(t.shape) for t in tensors), tensors[-1].dtype))
        return func(*args, **(kwargs or {}))


def cpu_attention_flops(query, key, value, *args, out_shape=None, **kwargs) -> int:
    """FLOPs of the CPU's fused attention from its operands' shapes (torch's counter knows the GPU kernels' only)."""
    return sdpa_flop_count(query, key, value)


def cpu_attention_backward_flops(grad_out, query, key, value, *args, out_shape=None, **kwargs) -> int:
    return sdpa_backward_flop_count(grad_out, query, key, value)


CPU_ATTENTION = {
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu: cpu_attention_flops,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward: cpu_attention_backward_flops,
}


def matmul_flops(func, shapes: tuple) -> int:
    """2 m k n (times the batch for ``bmm``) of a recorded product."""
    *_, (m, k), (_, n) = [shape[-2:] for shape in shapes]
    return 2 * m * k * n * (shapes[0][0] if func is torch.ops.aten.bmm.default else 1)


def matmul_rate(calls: list[tuple], device: str, sync) -> float:
    """FLOP/s of ``calls`` replayed alone on random operands of their shapes (after one pass to warm up)."""
    operands = [[torch.randn(shape, dtype=dtype, device=device) for shape in shapes] for _, shapes, dtype in calls]
    for _ in range(2):
        start = time.perf_counter()
        for (func, _, _), tensors in zip(calls, operands, strict=True):
            func(*tensors)
        if sync is not None:
            sync()
        seconds = time.perf_counter() - start
    return sum(matmul_flops(func, shapes) for func, shapes, _ in calls) / max(seconds, 1e-9)


def large_matmul_rate(device: str, sync, size: int = 2048, seconds: float = 1.0) -> float:
    """FLOP/s of ``size``-square float32 products: the machine's roofline for matrix arithmetic at these threads."""
    a, b = torch.randn(size, size, device=device), torch.randn(size, size, device=device)
    a @ b
    done, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        a @ b
        done += 1
    if sync is not None:
        sync()
    return 2 * size**3 * done / (time.perf_counter() - start)


def arithmetic_limit(module: RLModule, args: argparse.Namespace, reached: float) -> dict:
    """The arithmetic of one transition and the loop's rate were it nothing else: one more update (rollout, the
    objective, backward; the optimiser's elementwise step left out) under torch's FLOP counter, split by part
    (:data:`LIMIT_PARTS`); its matrix products replayed alone on this machine, at these threads and shapes, give the
    rate this machine does them at; the limit is the transitions per second of the whole arithmetic at that rate (the
    attention's FLOPs counted at it too), and ``share_of_limit`` what the loop reaches of it."""
    env, h = module.env, module.hparams
    sync = synchronizer(args.device)
    counter = FlopCounterMode(display=False, custom_mapping=CPU_ATTENTION)
    shapes, parts = MatmulShapes(), dict.fromkeys(LIMIT_PARTS, 0)

    def counted(name, fn):
        def wrapper(*a, **k):
            before = counter.get_total_flops()
            try:
                return fn(*a, **k)
            finally:
                parts[name] += counter.get_total_flops() - before

        return wrapper

    with ExitStack() as patches:
        for owner, attr, name in ((env.partner, "act", "partner"), (env.dm, "rank", "DM")):
            patches.enter_context(mock.patch.object(owner, attr, counted(name, getattr(owner, attr))))
        imitation = counted("imitation term forward", module.imitation_loss)
        patches.enter_context(mock.patch.object(module, "imitation_loss", imitation))
        with counter, shapes, forward_context(args.device, args.precision):
            before = counter.get_total_flops()
            rollout = module.a2c.collect()
            parts["rollout forward"] = counter.get_total_flops() - before - parts["partner"] - parts["DM"]
            losses = module.a2c.objective(rollout)
            counted("update backward", losses.total.backward)()
    module.zero_grad()
    transitions = h.rollout_steps * h.num_envs
    total = sum(parts.values())
    rate = matmul_rate(shapes.calls, args.device, sync)
    limit = rate / (total / transitions)
    return {
        "flops_per_transition": {name: flops / transitions for name, flops in parts.items()},
        "matmul_flops_per_s": rate,
        "large_matmul_flops_per_s": large_matmul_rate(args.device, sync),
        "limit_transitions_per_s": limit,
        "share_of_limit": reached / limit,
    }


PRODUCTS = {  # the loop's arithmetic: matrix products and the fused attention kernels (with dropout, as under the
    # paper profile, the CPU's attention is its math path instead: its bmm are counted, its softmax is not)
    "aten::mm",
    "aten::addmm",
    "aten::bmm",
    "aten::_scaled_dot_product_flash_attention_for_cpu",
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward",
}


def operator_split(module: RLModule, args: argparse.Namespace, reached: float, updates: int = 3) -> dict:
    """Where ``updates`` more updates spend their wall time, by torch's profiler: the matrix products' and attention
    kernels' share (:data:`PRODUCTS`, their own time in the loop, not replayed alone), every other operator's
    (elementwise, softmax, layer norm, copies, indexing, the optimiser), and the rest (Python between operators:
    the engine, text, the tokenizer, masks, sampling; the optimiser's ``record_function`` range too, its own
    operators apart). ``top_other``: the five other operators of most time, with their shares.
    ``ceiling_transitions_per_s``: the loop's rate were everything but the products free, so the most any cut that
    leaves the arithmetic as it is can gain is ``ceiling / reached`` (the profiler's own cost per operator makes it a
    little higher than it is: an upper bound)."""
    from torch.profiler import ProfilerActivity, profile

    update = updater(module, args)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        start = time.perf_counter()
        for _ in range(updates):
            update()
        wall = time.perf_counter() - start
    own = {e.key: e.self_cpu_time_total / 1e6 for e in prof.key_averages() if not e.key.startswith("Optimizer.")}
    products = sum(seconds for name, seconds in own.items() if name in PRODUCTS)
    other = sorted(((seconds, name) for name, seconds in own.items() if name not in PRODUCTS), reverse=True)
    return {
        "products_share": products / wall,
        "other_operators_share": sum(seconds for seconds, _ in other) / wall,
        "top_other": {name: seconds / wall for seconds, name in other[:5]},
        "ceiling_transitions_per_s": reached * wall / products,
    }


def print_limit(figures: dict) -> None:
    per = figures["flops_per_transition"]
    shown = ", ".join(f"{name} {flops / 1e6:.0f}" for name, flops in per.items())
    print(
        f"  arithmetic of one transition: {sum(per.values()) / 1e6:.0f} MFLOP ({shown}); its matrix products replayed "
        f"alone run at {figures['matmul_flops_per_s'] / 1e9:.0f} GFLOP/s (a 2048-square matmul: "
        f"{figures['large_matmul_flops_per_s'] / 1e9:.0f}): an arithmetic limit of "
        f"{figures['limit_transitions_per_s']:.0f} transitions/s, of which the loop reaches "
        f"{figures['share_of_limit']:.0%}"
    )
    if "products_share" in figures:
        ceiling = figures["ceiling_transitions_per_s"]
        print(
            f"  in the loop (torch's profiler): matrix products and attention kernels {figures['products_share']:.0%} "
            f"of the wall time, other operators {figures['other_operators_share']:.0%}, outside the operators "
            f"(Python, the tokenizer) the rest; were all but the products free, {ceiling:.0f} transitions/s "
            f"({ceiling / figures['transitions_per_s']:.2f}x: the most a cut that keeps the arithmetic gains)"
        )
        top = ", ".join(f"{name.removeprefix('aten::')} {share:.1%}" for name, share in figures["top_other"].items())
        print(f"  the other operators of most time: {top}")


def transitions_rate(updates: int, update, h, sync) -> float:
    """Transitions per second of ``updates`` calls of ``update`` (the GPU's queued work included)."""
    start = time.perf_counter()
    for _ in range(updates):
        update()
    if sync is not None:
        sync()
    return updates * h.rollout_steps * h.num_envs / max(time.perf_counter() - start, 1e-9)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("data/default"))
    parser.add_argument("--updates", type=int, default=20, help="timed A2C updates per encoder")
    parser.add_argument("--warmup", type=int, default=20, help="updates first, timed apart (the caches fill)")
    parser.add_argument("--encoders", nargs="+", default=["scratch", "general_light"])
    parser.add_argument("--profile", default="tiny", help="a profile's name (tiny, paper, quick) or an RL profile file")
    parser.add_argument("--protocols", nargs="+", default=["restricted", "paper"], help="conf/protocol/ names")
    parser.add_argument("--objective", default="lq", help="a conf/objective/ name (its sizes and terms)")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu", help="where the agent, partner and DM run")
    parser.add_argument(
        "--precision", choices=PRECISIONS, help="the forward's (default: the profile's on cuda, 32-true on the CPU)"
    )
    parser.add_argument(
        "--fit", type=int, default=0, help="updates through Lightning's Trainer first (the path of lq rl fit)"
    )
    parser.add_argument("--json", type=Path, help="write every figure to this file")
    parser.add_argument(
        "--stand-ins",
        type=Path,
        help="keep the untrained stand-ins here (with their encoded candidates and the partner's calibration), for "
        "the next run to reuse; default: a temporary folder",
    )
    parser.add_argument(
        "--partner-calibration", choices=("share", "completions"), help="the partner's (default: the configs')"
    )
    args = parser.parse_args(argv)
    args.profile = profile_file(args.profile)
    if args.precision is None:  # bf16-mixed is the GPU's: on the CPU a profile's figures are float32's
        profile_precision = merged_config(["--config", str(args.profile)]).get("trainer", {}).get("precision")
        args.precision = profile_precision if args.device == "cuda" and profile_precision else "32-true"
    return args


def unusable(data: Path, device: str) -> str | None:
    """Why a benchmark cannot run on ``data`` and ``device`` (no dataset there, no GPU for cuda), or None."""
    if not (data / "demos").is_dir():
        return f"no dataset at {data}: run `make data` first (or pass --data)"
    if device == "cuda" and not torch.cuda.is_available():
        return "--device cuda: torch sees no GPU here"
    return None


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    if problem := unusable(args.data, args.device):
        print(problem, file=sys.stderr)
        return 1
    results = {}
    stick = Yardstick()
    try:
        with tempfile.TemporaryDirectory() as temporary:
            folder = args.stand_ins or Path(temporary)
            folder.mkdir(parents=True, exist_ok=True)
            for encoder in args.encoders:
                for protocol in args.protocols:
                    print(
                        f"{encoder}, {protocol} protocol, {args.objective} objective ({args.profile}, {args.device}, "
                        f"{args.precision}, {torch.get_num_threads()} threads):"
                    )
                    torch.manual_seed(0)
                    results[encoder, protocol] = run(encoder, protocol, args, Path(folder))
                    print_shares(results[encoder, protocol]["shares"])
    except ValueError as err:  # a profile a stage would refuse (lq.conf.lengths), a precision not known
        print(f"benchmarks/rl.py: {err}", file=sys.stderr)
        return 2
    stick.end()
    print(stick.report())
    print_rates(results, args, stick)
    if args.json:
        write_json(args, results, stick)
    return 0


def print_shares(shares: dict[str, float]) -> None:
    rest = 1.0 - sum(share for name, share in shares.items() if name != FROZEN)
    for name, share in sorted(shares.items(), key=lambda kv: (kv[0] == FROZEN, -kv[1])):
        print(f"  {name:<28}{share:>7.1%}")
    print(f"  {'other (env text, masks, sampling)':<28}{rest:>7.1%}")


def print_rates(results: dict, args: argparse.Namespace, stick: Yardstick) -> None:
    """One line per encoder and protocol: its transitions per second, per yardstick, beside the first protocol's and
    the first encoder's."""
    first = args.encoders[0]
    rates = {key: figures["transitions_per_s"] for key, figures in results.items()}
    for (encoder, protocol), rate in rates.items():
        base = rates.get((encoder, args.protocols[0]))
        ratio = f", {rate / base:.2f} of {args.protocols[0]}'s" if base and protocol != args.protocols[0] else ""
        if encoder != first and (first, protocol) in rates:
            ratio += f", {rate / rates[first, protocol]:.2f} of {first}'s"
        print(
            f"{encoder}, {protocol}: {rate:.1f} transitions/s (rollout and update; {stick.per(rate):.2f} per "
            f"yardstick{ratio})"
        )


def write_json(args: argparse.Namespace, results: dict, stick: Yardstick) -> None:
    """Every figure of the run, with what it ran on, to ``args.json``."""
    runs = [
        {"encoder": encoder, "protocol": protocol, **figures, "per_yardstick": stick.per(figures["transitions_per_s"])}
        for (encoder, protocol), figures in results.items()
    ]
    about = {
        "device": args.device,
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "precision": args.precision,
        "profile": str(args.profile),
        "objective": args.objective,
        "threads": torch.get_num_threads(),
        "warmup": args.warmup,
        "updates": args.updates,
        "fit": args.fit,
        "yardstick": stick.rates,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({**about, "runs": runs}, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
