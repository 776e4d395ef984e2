#!/usr/bin/env bash
# Training steps of torchvision's models imported from ONNX (issue 28): Kiln's
# executable against PyTorch eager in its strongest configuration here, in
# one run: Debian's PyTorch 1.13 and PyPI's PyTorch 2 (build/peers-venv,
# bench/peers/venv.sh) both run every round, each in the memory format that
# was faster for the model in round 1 (pytorch_step.py times both), with
# glibc malloc kept from trimming; the report compares Kiln with the faster
# of the two. Batch 32 at 224x224, 2 threads, synthetic data, fp32 and bf16.
# Kiln and PyTorch alternate for ROUNDS rounds per model; report.py prints
# the medians and every round's ratio. Each model also compiles to the systolic target and
# one timed step prints its per-layer MXU utilization (kiln-sim).
#
#   bench/torchvision/run.sh [--no-build] [--no-torch2] [--no-systolic]
#                            [MODELS] [STEPS] [ROUNDS] [PRECISIONS]
#     MODELS      comma-separated (default: the ten of issue 28)
#     PRECISIONS  default "fp32 bf16"; bf16 on x86 needs AVX-512 (kilnc
#                 refuses it otherwise, and the row says so)
#     --no-build  use build/bin as it is instead of running scripts/build.sh
#     --no-torch2 only Debian's PyTorch 1.13 (no PyPI venv)
#     --no-systolic  skip the systolic half
#   results in build/bench/torchvision/
set -euo pipefail
cd "$(dirname "$0")/../.."
build=1 torch2=1 systolic=1
while [[ ${1:-} == --* ]]; do
  case $1 in
    --no-build) build=0 ;;
    --no-torch2) torch2=0 ;;
    --no-systolic) systolic=0 ;;
    *) echo "bench/torchvision/run.sh: unknown option '$1' (see the usage at the top)" >&2; exit 2 ;;
  esac
  shift
done
models=${1:-resnet18,resnet50,mobilenet_v2,mobilenet_v3_large,efficientnet_b0,densenet121,vgg11_bn,squeezenet1_1,shufflenet_v2_x1_0,regnet_y_400mf}
steps=${2:-4}
rounds=${3:-3}
precisions=${4:-fp32 bf16}
batch=32
size=224
out=build/bench/torchvision
mkdir -p "$out"
source bench/ensure-packages.sh
ensure_packages python3-torch python3-torchvision python3-onnx
((build)) && bash scripts/build.sh >/dev/null
pythons=(/usr/bin/python3)
if ((torch2)); then
  bash bench/peers/venv.sh
  pythons+=(build/peers-venv/bin/python)
fi
bin=build/bin
results=$out/results.jsonl
: >"$results"

for model in ${models//,/ }; do
  # torchvision's own model at its native size (1000 classes), trained as
  # exported: batch norm in training form, dropout on.
  onnx=$out/$model.onnx
  # torch 1.13 cannot export efficientnet_b0's stochastic depth for training
  # (no Bernoulli): its PRESERVE export from eval mode, the same training step
  # in Kiln without stochastic depth (docs/onnx.md).
  mode=train
  [[ $model == efficientnet_b0 ]] && mode=preserve
  [[ -f $onnx ]] || /usr/bin/python3 test/onnx/torch/export_torchvision.py "$model" $mode \
    "$onnx" --classes 1000 --image-size $size --published
  for precision in $precisions; do
    exe=$out/${model}_$precision
    declare -A formats=()
    start=$(date +%s.%N)
    if ! $bin/kilnc "$onnx" --batch=$batch --precision=$precision --nesterov=true \
        --momentum=0.9 --weight-decay=1e-4 --lr=0.01 -o "$exe" 2>"$exe.kilnc.log"; then
      echo "{\"system\": \"kiln\", \"model\": \"$model\", \"precision\": \"$precision\"," \
        "\"error\": $(head -c 300 "$exe.kilnc.log" | python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))')}" \
        >>"$results"
      continue
    fi
    compile=$(echo "$(date +%s.%N) - $start" | bc)
    for round in $(seq 1 "$rounds"); do
      run=$out/run_${model}_${precision}
      rm -rf "$run"
      if ! /usr/bin/time -f "%M" -o "$run.rss" "$exe" --synthetic --steps $((steps + 2)) \
          --threads 2 --log-every 1 --model-dir "$run" >"$run.log" 2>&1; then
        /usr/bin/python3 -c 'import json, sys; print(json.dumps({"system": "kiln", "model": sys.argv[1],
            "precision": sys.argv[2], "round": int(sys.argv[3]), "error": sys.argv[4][-300:]}))' \
          "$model" "$precision" "$round" "$(tail -3 "$run.log")" >>"$results"
        continue
      fi
      /usr/bin/python3 bench/kiln_rate.py "$run/metrics.jsonl" --model "$model" \
        --precision "$precision" --batch $batch --compile-sec "$compile" \
        --peak-rss-kib "$(cat "$run.rss")" --round "$round" >>"$results"
      # Round 1 times one step per memory format after a warm-up one and
      # measures the faster; later rounds reuse its choice (the trials are
      # most of PyTorch's time in a round otherwise).
      for py in "${pythons[@]}"; do
        format=${formats[$py]:-best}
        GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736 \
          "$py" bench/pytorch_step.py --model "$model" --precision "$precision" \
          --batch $batch --image-size $size --steps "$steps" --warmup 1 --trial-steps 1 \
          --memory-format "$format" --round "$round" >>"$results" 2>"$out/pytorch.log" &&
          formats[$py]=$(tail -1 "$results" |
            /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["memory_format"])') ||
          "$py" -c 'import json, sys; print(json.dumps({"system": "pytorch", "model": sys.argv[1],
              "precision": sys.argv[2], "round": int(sys.argv[3]), "error": sys.argv[4][-300:]}))' \
            "$model" "$precision" "$round" "$(tail -3 "$out/pytorch.log")" >>"$results"
      done
    done
  done
  ((systolic)) || continue
  # The systolic target: bf16 training step at the same batch, one timed
  # simulated step, per-layer utilization.
  $bin/kiln-translate --import-onnx --elide-values-larger-than=-1 "$onnx" |
    $bin/kiln-opt --kiln-bf16 --kiln-build-train-step --kiln-specialize-batch=batch=$batch |
    $bin/kiln-opt --kiln-convert-to-sa -o "$out/${model}_sa.mlir" 2>"$out/${model}_sa.log" &&
    $bin/kiln-translate --export-sa-program "$out/${model}_sa.mlir" -o "$out/$model.ksap" &&
    $bin/kiln-sim "$out/$model.ksap" --json="$out/${model}_sim.json" >"$out/${model}_sim.txt" ||
    echo "systolic: $model failed, see $out/${model}_sa.log"
done
no_systolic=()
((systolic)) || no_systolic=(--no-systolic)
/usr/bin/python3 bench/torchvision/report.py "$results" "$out" "${no_systolic[@]}"
