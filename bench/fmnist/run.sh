#!/usr/bin/env bash
# Fashion-MNIST ResNet-20, batch 128, 2 threads, real data: Kiln's time per
# epoch in fp32 and bf16 against PyTorch's in the same run (fp32 with default
# settings and tuned: channels_last plus the glibc malloc settings of
# bench/resnet50/run.sh; bf16 autocast, tuned), and fp32 the way PyTorch's
# tutorials feed it (torchvision transforms per image and a DataLoader, default
# settings). All train the same model with the same recipe; see
# pytorch_fmnist.py.
#
#   bench/fmnist/run.sh [EPOCHS]      (results in build/bench/fmnist/)
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-1}
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
: > "$out/results.jsonl"
for precision in fp32 bf16; do
  "$bin/kilnc" models/fmnist_resnet20.mlir -o "$out/fmnist_$precision" --batch=128 \
    --precision=$precision --nesterov=true --momentum=0.9 --weight-decay=5e-4 \
    --schedule=cosine_decay --lr=0.1 --warmup-steps=$spe --total-steps=$((3 * spe))
  rm -rf "$out/run_$precision"
  "$out/fmnist_$precision" --data "$out/data" --epochs "$epochs" --pad-crop 2 --flip \
    --threads 2 --log-every $spe --model-dir "$out/run_$precision" > "$out/kiln_$precision.log" 2>&1
  python3 - "$out/run_$precision/metrics.jsonl" "$precision" >> "$out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
spe = 60000 // 128
# One train row per epoch (--log-every spe); elapsed_sec counts from the start.
ends = [r["elapsed_sec"] for r in rows if r.get("kind") == "train" and r["step"] % spe == 0]
for epoch, end in enumerate(ends, 1):
    begin = ends[epoch - 2] if epoch > 1 else 0.0
    print(json.dumps({"system": "kiln", "precision": sys.argv[2], "epoch": epoch,
                      "epoch_sec": end - begin}))
PY
done
/usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" >> "$out/results.jsonl"
/usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" --torchvision-loader \
  >> "$out/results.jsonl"
tuned="glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736"
GLIBC_TUNABLES=$tuned /usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" \
  --channels-last >> "$out/results.jsonl"
GLIBC_TUNABLES=$tuned /usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" \
  --channels-last --bf16 >> "$out/results.jsonl"
python3 - "$out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def mean(system, precision, channels_last=None, loader="batched"):
    sel = [r["epoch_sec"] for r in rows if r["system"] == system
           and r["precision"] == precision
           and (channels_last is None or r.get("channels_last") == channels_last)
           and (system == "kiln" or r.get("loader") == loader)]
    return sum(sel) / len(sel)
kiln32, kiln16 = mean("kiln", "fp32"), mean("kiln", "bf16")
torch = {"PyTorch fp32 (default)": mean("pytorch", "fp32", False),
         "PyTorch fp32 (torchvision DataLoader)":
             mean("pytorch", "fp32", False, "torchvision, 0 workers"),
         "PyTorch fp32 (tuned, channels_last)": mean("pytorch", "fp32", True),
         "PyTorch bf16 autocast (tuned)": mean("pytorch", "bf16", True)}
print(f"{'':38} {'s/epoch':>8} {'Kiln fp32 speed-up':>19} {'Kiln bf16 speed-up':>19}")
print(f"{'Kiln fp32':38} {kiln32:8.1f}")
print(f"{'Kiln bf16':38} {kiln16:8.1f}")
for name, t in torch.items():
    print(f"{name:38} {t:8.1f} {t / kiln32:18.2f}x {t / kiln16:18.2f}x")
PY
