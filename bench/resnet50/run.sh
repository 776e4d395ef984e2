#!/usr/bin/env bash
# ResNet-50 training, 224x224, batch 32, 2 threads, synthetic data: Kiln (fp32
# and bf16) against PyTorch (fp32 and bf16 autocast, channels_last, glibc
# malloc tuned) in one run. Prints images/s, the ratios, Kiln's compile time
# and both peak memories, and writes the per-layer profile of a separate,
# shorter Kiln run under --profile (which slows the step by a few per cent).
# This machine's speed drifts by up to +-15% within minutes, so Kiln and
# PyTorch alternate for ROUNDS rounds and the table shows the medians, with
# every round's ratio below it.
#
#   bench/resnet50/run.sh [STEPS] [ROUNDS]   (results in build/bench/resnet50/)
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${1:-6}
rounds=${2:-3}
out=build/bench/resnet50
mkdir -p "$out"
source bench/ensure-packages.sh
ensure_packages python3-torch python3-torchvision python3-matplotlib
bash scripts/build.sh >/dev/null

results=$out/results.jsonl
: > "$results"
for precision in fp32 bf16; do
  start=$(date +%s.%N)
  build/bin/kilnc models/resnet50.mlir --batch=32 --precision=$precision \
    --nesterov=true --weight-decay=1e-4 -o "$out/resnet50_$precision"
  compile=$(echo "$(date +%s.%N) - $start" | bc)
  rm -rf "$out/profile_$precision"  # metrics.jsonl appends
  "$out/resnet50_$precision" --synthetic --steps 4 --threads 2 --log-every 0 \
    --model-dir "$out/profile_$precision" --profile > "$out/profile_$precision.log" 2>&1
  for round in $(seq 1 "$rounds"); do
    # Peak memory of the whole process, from the kernel's accounting. Timed
    # without --profile, which times every call and costs a few per cent.
    run=$out/run_${precision}_$round
    rm -rf "$run"
    /usr/bin/time -f "%M" -o "$out/rss_$precision" "$out/resnet50_$precision" \
      --synthetic --steps $((steps + 2)) --threads 2 --log-every 1 \
      --model-dir "$run" > "$out/kiln_$precision.log" 2>&1
    /usr/bin/python3 bench/kiln_rate.py "$run/metrics.jsonl" --precision "$precision" \
      --batch 32 --compile-sec "$compile" --peak-rss-kib "$(cat "$out/rss_$precision")" \
      --round "$round" >> "$results"
    GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
      /usr/bin/python3 bench/pytorch_step.py --model resnet50 --memory-format channels_last \
      --precision $precision --steps "$steps" --round "$round" >> "$results"
  done
done
# Debian's python3 has the python3-matplotlib installed above.
/usr/bin/python3 bench/resnet50/report.py "$results" "$out"
