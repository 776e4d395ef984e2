#!/usr/bin/env bash
# Fashion-MNIST ResNet-20, batch 128, 2 threads, real data: Kiln's time per
# epoch in fp32 and bf16 against PyTorch's in the same run (fp32 with default
# settings and tuned: channels_last plus the glibc malloc settings of
# bench/resnet50/run.sh; bf16 autocast, tuned), and fp32 the way PyTorch's
# tutorials feed it (torchvision transforms per image and a DataLoader, default
# settings). All train the same model with the same recipe; see
# pytorch_fmnist.py.
#
#   bench/fmnist/run.sh [EPOCHS] [ROUNDS]   (results in build/bench/fmnist/)
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-1}
rounds=${2:-1}
out=build/bench/fmnist
mkdir -p "$out"
source bench/ensure-packages.sh
ensure_packages python3-torch python3-torchvision python3-numpy
bash scripts/build.sh >/dev/null
bin=build/bin
[[ -f "$out/data/validation-00003-of-00004" ]] ||
  "$bin/kiln-data" idx --input /usr/share/datasets/fashion-mnist --output "$out/data" >/dev/null

# The executable drops the last partial batch: 468 steps per epoch.
spe=$(( 60000 / 128 ))
for precision in fp32 bf16; do
  "$bin/kilnc" models/fmnist_resnet20.mlir -o "$out/fmnist_$precision" --batch=128 \
    --precision=$precision --nesterov=true --momentum=0.9 --weight-decay=5e-4 \
    --schedule=cosine_decay --lr=0.1 --warmup-steps=$spe --total-steps=$((3 * spe))
done

# One Kiln epoch (or EPOCHS) as JSON lines tagged with the round.
kiln_epochs() {
  local precision=$1 round=$2
  rm -rf "$out/run_$precision"
  "$out/fmnist_$precision" --data "$out/data" --epochs "$epochs" --pad-crop 2 --flip \
    --threads 2 --log-every $spe --model-dir "$out/run_$precision" > "$out/kiln_$precision.log" 2>&1
  python3 - "$out/run_$precision/metrics.jsonl" "$precision" "$round" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
spe = 60000 // 128
# One train row per epoch (--log-every spe); elapsed_sec counts from the start.
ends = [r["elapsed_sec"] for r in rows if r.get("kind") == "train" and r["step"] % spe == 0]
for epoch, end in enumerate(ends, 1):
    begin = ends[epoch - 2] if epoch > 1 else 0.0
    print(json.dumps({"system": "kiln", "precision": sys.argv[2], "epoch": epoch,
                      "epoch_sec": end - begin, "round": int(sys.argv[3])}))
PY
}
pytorch_epochs() {
  local round=$1
  shift
  /usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" "$@" |
    python3 -c 'import json, sys
for l in sys.stdin:
    r = json.loads(l); r["round"] = int(sys.argv[1]); print(json.dumps(r))' "$round"
}

# The machine's speed drifts by up to +-20% within minutes, so Kiln and
# PyTorch alternate, round after round, and the summary takes medians.
tuned="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
: > "$out/results.jsonl"
for round in $(seq 1 "$rounds"); do
  {
    kiln_epochs fp32 "$round"
    pytorch_epochs "$round"
    pytorch_epochs "$round" --torchvision-loader
    GLIBC_TUNABLES=$tuned pytorch_epochs "$round" --channels-last
    kiln_epochs bf16 "$round"
    GLIBC_TUNABLES=$tuned pytorch_epochs "$round" --channels-last --bf16
  } >> "$out/results.jsonl"
done
python3 - "$out/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def times(system, precision, channels_last=None, loader="batched"):
    """Epoch times by round."""
    out = {}
    for r in rows:
        if (r["system"] == system and r["precision"] == precision
                and (channels_last is None or r.get("channels_last") == channels_last)
                and (system == "kiln" or r.get("loader") == loader)):
            out.setdefault(r["round"], []).append(r["epoch_sec"])
    return {k: sum(v) / len(v) for k, v in out.items()}
kiln32, kiln16 = times("kiln", "fp32"), times("kiln", "bf16")
torch = {"PyTorch fp32 (default)": times("pytorch", "fp32", False),
         "PyTorch fp32 (torchvision DataLoader)":
             times("pytorch", "fp32", False, "torchvision, 0 workers"),
         "PyTorch fp32 (tuned, channels_last)": times("pytorch", "fp32", True),
         "PyTorch bf16 autocast (tuned)": times("pytorch", "bf16", True)}
med = lambda d: statistics.median(d.values())
print(f"{'':38} {'s/epoch':>8} {'Kiln fp32 speed-up':>19} {'Kiln bf16 speed-up':>19}")
print(f"{'Kiln fp32':38} {med(kiln32):8.1f}")
print(f"{'Kiln bf16':38} {med(kiln16):8.1f}")
for name, t in torch.items():
    print(f"{name:38} {med(t):8.1f} {med(t) / med(kiln32):18.2f}x {med(t) / med(kiln16):18.2f}x")
print("(medians over rounds; speed-ups by round below)")
for name, t in torch.items():
    by32 = ", ".join(f"{t[k] / kiln32[k]:.2f}" for k in sorted(t))
    by16 = ", ".join(f"{t[k] / kiln16[k]:.2f}" for k in sorted(t))
    print(f"  {name}: fp32 {by32}; bf16 {by16}")
PY
