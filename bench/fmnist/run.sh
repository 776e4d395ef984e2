#!/usr/bin/env bash
# Fashion-MNIST ResNet-20, batch 128, 2 threads, real data: Kiln's time per
# epoch against PyTorch's in the same run (default settings, and tuned:
# channels_last plus the glibc malloc settings of bench/resnet50/run.sh).
# Both train the same model with the same recipe; see pytorch_fmnist.py.
#
#   bench/fmnist/run.sh [EPOCHS]      (results in build/bench/fmnist/)
set -euo pipefail
cd "$(dirname "$0")/../.."
epochs=${1:-1}
out=build/bench/fmnist
mkdir -p "$out"
source bench/ensure-packages.sh
ensure_packages python3-torch python3-numpy
bash scripts/build.sh >/dev/null
bin=build/bin
[[ -f "$out/data/validation-00003-of-00004" ]] ||
  "$bin/kiln-data" idx --input /usr/share/datasets/fashion-mnist --output "$out/data" >/dev/null

# The executable drops the last partial batch: 468 steps per epoch.
spe=$(( 60000 / 128 ))
"$bin/kilnc" models/fmnist_resnet20.mlir -o "$out/fmnist" --batch=128 \
  --nesterov=true --momentum=0.9 --weight-decay=5e-4 --schedule=cosine_decay \
  --lr=0.1 --warmup-steps=$spe --total-steps=$((3 * spe))
rm -rf "$out/run"
"$out/fmnist" --data "$out/data" --epochs "$epochs" --pad-crop 2 --flip --threads 2 \
  --log-every $spe --model-dir "$out/run" > "$out/kiln.log" 2>&1
python3 - "$out/run/metrics.jsonl" > "$out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
spe = 60000 // 128
# One train row per epoch (--log-every spe); elapsed_sec counts from the start.
ends = [r["elapsed_sec"] for r in rows if r.get("kind") == "train" and r["step"] % spe == 0]
for epoch, end in enumerate(ends, 1):
    begin = ends[epoch - 2] if epoch > 1 else 0.0
    print(json.dumps({"system": "kiln", "epoch": epoch, "epoch_sec": end - begin}))
PY
/usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" >> "$out/results.jsonl"
GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
  /usr/bin/python3 bench/fmnist/pytorch_fmnist.py --epochs "$epochs" --channels-last \
  >> "$out/results.jsonl"
python3 - "$out/results.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def mean(system, channels_last=None):
    sel = [r["epoch_sec"] for r in rows if r["system"] == system
           and (channels_last is None or r.get("channels_last") == channels_last)]
    return sum(sel) / len(sel)
kiln = mean("kiln")
print(f"{'':28} {'s/epoch':>8} {'Kiln speed-up':>14}")
print(f"{'Kiln':28} {kiln:8.1f}")
for name, cl in (("PyTorch (default)", False), ("PyTorch (tuned, channels_last)", True)):
    t = mean("pytorch", cl)
    print(f"{name:28} {t:8.1f} {t / kiln:13.2f}x")
PY
