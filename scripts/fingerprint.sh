#!/usr/bin/env bash
# Behaviour fingerprint of a build, for refactors that must change nothing:
# checkpoints after a few training steps and the compiler's output for every
# target, CPU and precision, as SHA-256 sums. Run it on the commit before and
# the commit after a refactor with the same OUT_DIR (checkpoints record the
# path of the data they trained on) and diff the two sums files.
#
#   scripts/fingerprint.sh BUILD_DIR OUT_DIR     (writes OUT_DIR/sums.txt)
#
# Checkpoints: Fashion-MNIST ResNet-20 fp32 after 10 steps (x86, this host),
# the same model in bf16 on the systolic target after 10 steps, ResNet-50
# fp32 after 2 steps. x86 bf16 and the nChw16c layouts need AVX-512 to run;
# their compiled code is fingerprinted for AVX-512 CPUs (--cpu) whatever the
# host, and their checkpoints are added when the host has AVX-512.
set -euo pipefail
build=$(realpath "$1")
out=$(realpath -m "$2")
src=$(cd "$(dirname "$0")/.." && pwd)
bin=$build/bin
mkdir -p "$out"
work=$out/work
rm -rf "$work" && mkdir -p "$work"
sums=$out/sums.txt
: >"$sums"

sum() { # NAME FILE
  echo "$(sha256sum <"$2" | cut -d' ' -f1)  $1" >>"$sums"
}

data=$work/fmnist
"$bin/kiln-data" idx --input /usr/share/datasets/fashion-mnist --output "$data" >/dev/null

fmnist_flags=(--batch=128 --nesterov=true --momentum=0.9 --weight-decay=5e-4
  --schedule=cosine_decay --lr=0.1 --warmup-epochs=1 --decay-epochs=3)
run_flags=(--data "$data" --steps 10 --pad-crop 2 --flip --seed 7 --threads 2)

train() { # NAME EXE RUN-FLAGS...
  local name=$1 exe=$2
  shift 2
  "$exe" "$@" --model-dir "$work/$name.run" >"$work/$name.log" 2>&1
  local ckpt
  ckpt=$(ls "$work/$name.run"/ckpt-*.safetensors | tail -1)
  sum "checkpoint:$name:$(basename "$ckpt")" "$ckpt"
}

has_avx512=0
grep -qw avx512bw /proc/cpuinfo && has_avx512=1

# Checkpoints.
"$bin/kilnc" "$src/models/fmnist_resnet20.mlir" "${fmnist_flags[@]}" -o "$work/fmnist_fp32"
train fmnist-fp32 "$work/fmnist_fp32" "${run_flags[@]}"
"$bin/kilnc" "$src/models/fmnist_resnet20.mlir" --target=systolic --precision=bf16 \
  --batch=8 --lr=0.05 -o "$work/fmnist_sa_bf16"
train fmnist-systolic-bf16 "$work/fmnist_sa_bf16" --data "$data" --steps 10 --seed 7
if ((has_avx512)); then
  "$bin/kilnc" "$src/models/fmnist_resnet20.mlir" "${fmnist_flags[@]}" --precision=bf16 \
    -o "$work/fmnist_bf16"
  train fmnist-bf16 "$work/fmnist_bf16" "${run_flags[@]}"
fi
"$bin/kilnc" "$src/models/resnet50.mlir" --batch=4 -o "$work/resnet50_fp32"
train resnet50-fp32 "$work/resnet50_fp32" --synthetic --steps 2 --seed 7 --threads 2

# Compiler output, independent of the host (every CPU named).
compile() { # NAME KILNC-ARGS...
  local name=$1
  shift
  "$bin/kilnc" "$@" -o "$work/$name.out"
  sum "compile:$name" "$work/$name.out"
}
for cpu in znver3 skylake-avx512 sapphirerapids; do
  compile "fmnist-fp32-$cpu-llvm" "$src/models/fmnist_resnet20.mlir" "${fmnist_flags[@]}" \
    --cpu=$cpu --emit=llvm
  compile "resnet50-fp32-$cpu-llvm" "$src/models/resnet50.mlir" --batch=8 --cpu=$cpu --emit=llvm
done
for cpu in skylake-avx512 sapphirerapids; do
  compile "fmnist-bf16-$cpu-llvm" "$src/models/fmnist_resnet20.mlir" "${fmnist_flags[@]}" \
    --precision=bf16 --cpu=$cpu --emit=llvm
  compile "resnet50-bf16-$cpu-llvm" "$src/models/resnet50.mlir" --batch=8 --precision=bf16 \
    --cpu=$cpu --emit=llvm
done
compile resnet50-lars-train "$src/models/resnet50.mlir" --recipe=mlperf-v0.6 --emit=train
compile resnet50-sa-bf16-ksap "$src/models/resnet50.mlir" --target=systolic --precision=bf16 \
  --batch=8 --emit=ksap
compile fmnist-sa-bf16-ksap "$src/models/fmnist_resnet20.mlir" --target=systolic \
  --precision=bf16 --batch=8 --emit=ksap
for model in "$src"/test/e2e/Inputs/*.mlir; do
  name=$(basename "$model" .mlir)
  if "$bin/kilnc" "$model" --batch=4 --cpu=znver3 --emit=linalg -o "$work/$name.linalg" \
    2>/dev/null; then
    sum "compile:e2e-$name-linalg" "$work/$name.linalg"
  else
    echo "refused  compile:e2e-$name-linalg" >>"$sums"
  fi
done
cat "$sums"
