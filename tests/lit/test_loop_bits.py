"""The RL loop's speed-ups change no figure: a few updates of lq's objective under the paper's protocol give the very
losses, bit for bit, that the loop gave before them (lq 160d725, the commit benchmarks/rl.py compares against)."""

import os

import lightning as L
import pytest
import torch

from lq.envs.protocol import protocol_of
from lq.lit.rl import RLModule
from tests.samples import env_spec, tiny_agent_config

# losses/total of the first four updates, float.hex, as 160d725 gave them (`LQ_RECORD_BITS=1 pytest` prints them), by
# torch's CPU capability, the CPU's vendor and whether it has AMX units: the math libraries sum in other orders on
# other CPUs (2026-12-02: the same commit on the two machines lq was measured on, the third update's loss 2 float32
# ulps apart, the fourth's 1); a CPU of none of these kinds skips the test
RECORDED = {
    ("AVX512", "GenuineIntel", "amx"): [
        "0x1.d7799a0000000p+3", "0x1.eae0c80000000p+3", "0x1.e6b3b80000000p+3", "0x1.fc5d4a0000000p+3"
    ],
    ("AVX512", "AuthenticAMD", "no amx"): [
        "0x1.d7799a0000000p+3", "0x1.eae0c80000000p+3", "0x1.e6b3bc0000000p+3", "0x1.fc5d4c0000000p+3"
    ],
}  # fmt: skip


def _cpu() -> tuple[str, str, str]:
    """torch's CPU capability, the CPU's vendor (``vendor_id`` in /proc/cpuinfo) and "amx" where its flags name AMX
    tiles ("no amx" else; "unknown" for what /proc/cpuinfo does not say)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            info = f.read()
    except OSError:
        info = ""
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    fields = {k.strip(): v.strip() for k, v in fields.items()}
    amx = "unknown" if "flags" not in fields else "amx" if "amx_tile" in fields["flags"].split() else "no amx"
    return torch.backends.cpu.get_cpu_capability(), fields.get("vendor_id", "unknown"), amx


class _Losses(L.Callback):
    def __init__(self):
        self.seen = []

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.seen.append(float(trainer.callback_metrics["losses/total"]).hex())


def _losses(root) -> list[str]:
    L.seed_everything(0)
    module = RLModule(
        env=env_spec(root, protocol=protocol_of("paper")),
        num_envs=6,
        rollout_steps=4,
        context_length=64,
        candidate_dim=8,
        agent={**vars(tiny_agent_config()), "head_temperature": True},
        updates_per_epoch=4,
        coefficients={"imitation": 1.0},
        imitation_batch=4,
        valid_reduction="mean",
        normalize_advantages=True,
        gain_lr_scale=30.0,
        lr=1e-3,
    )
    record = _Losses()
    trainer = L.Trainer(
        max_epochs=1,
        logger=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        enable_checkpointing=False,
        accelerator="cpu",
        deterministic=True,
        callbacks=[record],
    )
    trainer.fit(module)
    return record.seen


@pytest.mark.slow
def test_the_loop_gives_the_losses_it_gave_before_its_speed_ups(setup_dir):
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a sum's order can depend on the thread count
    try:
        seen = _losses(setup_dir)
    finally:
        torch.set_num_threads(threads)
    cpu = _cpu()
    if os.environ.get("LQ_RECORD_BITS"):
        print(f"\n{cpu}: {seen}")
    if cpu not in RECORDED:
        pytest.skip(f"the losses were recorded on {', '.join(' '.join(c) for c in RECORDED)} CPUs; this one is {cpu}")
    assert seen == RECORDED[cpu]
