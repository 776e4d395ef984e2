#!/usr/bin/env bash
# Kiln against the frameworks people train with today, on one model, in one
# run: PyTorch 2 eager (channels_last, bf16 autocast), PyTorch 2 torch.compile
# (Inductor), Keras 3 on TensorFlow with XLA (jit_compile=True) and Keras 3 on
# JAX, each from PyPI in build/peers-venv (bench/peers/venv.sh), 2 threads,
# synthetic data at batch 32 (resnet20-fmnist: the real Fashion-MNIST epoch,
# batch 128, the recipe of bench/fmnist). The machine's speed drifts within
# minutes, so Kiln and the peers alternate for ROUNDS rounds and the report
# gives medians and every round's ratio Kiln / peer. Each peer runs in the
# strongest configuration found here (docs/performance.md, "Peers").
#
#   bench/peers/run.sh [--model resnet50|resnet20-fmnist|mobilenet_v2|efficientnet_b0]
#                      [--precision fp32|bf16] [--rounds N] [--steps N] [--epochs N]
#                      [--peers torch-eager,torch-compile,keras-tf-xla,keras-jax,keras-tf]
#                      [--profile] [--no-build] [--omp-wait-policy active|passive]
#                      [--kiln-also "FLAGS"]
#
#   --steps     timed steps per round after the warm-up (synthetic models; 3)
#   --xla-steps the same for the Keras peers (1: on this CPU their ResNet-50
#               step takes minutes; their first, compiling call is the warm-up)
#   --epochs    timed epochs per round (resnet20-fmnist; 1)
#   --peers     default: the first four; keras-tf is TensorFlow without XLA
#   --profile   after the rounds, one Kiln step profile (--profile) and one
#               torch.profiler step of PyTorch (compiled if torch-compile runs)
#   --no-build  use build/bin as it is instead of running scripts/build.sh
#   --omp-wait-policy  OMP_WAIT_POLICY for every system (libgomp's default,
#               a spin of its own length, when not given): passive lets the
#               idle thread of a parallel region sleep at once, which on an
#               oversubscribed machine gives its core to the thread with the
#               work (docs/performance.md, "Peers")
#   --kiln-also runs Kiln's executable a second time each round with these
#               extra flags, as a row of its own named after them (e.g.
#               "--conv-algorithm library": without the runtime's own kernels)
#
# Results in build/peers-results/MODEL_PRECISION/: results.jsonl, table.md,
# peers.png, the logs. bf16 on x86 needs AVX-512 (avx512_bf16): where kilnc
# refuses it, the table says so and the peers are still measured.
set -euo pipefail
cd "$(dirname "$0")/../.."

model=resnet50 precision=fp32 rounds=3 steps=3 xla_steps=1 epochs=1 profile=0 build=1
wait_policy=
kiln_also=
peers=torch-eager,torch-compile,keras-tf-xla,keras-jax
while (($#)); do
  case $1 in
    --model) model=$2; shift 2 ;;
    --precision) precision=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --xla-steps) xla_steps=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --peers) peers=$2; shift 2 ;;
    --profile) profile=1; shift ;;
    --no-build) build=0; shift ;;
    --omp-wait-policy) wait_policy=$2; shift 2 ;;
    --kiln-also) kiln_also=$2; shift 2 ;;
    *) echo "bench/peers/run.sh: unknown argument '$1' (see the usage at the top of the script)" >&2
       exit 2 ;;
  esac
done
case $model in resnet50|resnet20-fmnist|mobilenet_v2|efficientnet_b0) ;;
  *) echo "bench/peers/run.sh: --model $model: not one of resnet50, resnet20-fmnist, mobilenet_v2, efficientnet_b0" >&2; exit 2 ;;
esac
case $wait_policy in ""|active|passive) ;;
  *) echo "bench/peers/run.sh: --omp-wait-policy $wait_policy: not active or passive" >&2; exit 2 ;;
esac
case $precision in fp32|bf16) ;;
  *) echo "bench/peers/run.sh: --precision $precision: not fp32 or bf16" >&2; exit 2 ;;
esac
for peer in ${peers//,/ }; do
  case $peer in torch-eager|torch-compile|keras-tf-xla|keras-jax|keras-tf) ;;
    *) echo "bench/peers/run.sh: --peers: unknown peer '$peer'" >&2; exit 2 ;;
  esac
done

out=build/peers-results/${model}_$precision
mkdir -p "$out"
source bench/ensure-packages.sh
# matplotlib for the plot (Debian's python3); Debian's torch exports the
# ONNX models Kiln imports, as bench/torchvision/run.sh does.
ensure_packages python3-matplotlib python3-numpy time bc
[[ $model == mobilenet_v2 || $model == efficientnet_b0 ]] &&
  ensure_packages python3-torch python3-torchvision python3-onnx
((build)) && bash scripts/build.sh >/dev/null
bash bench/peers/venv.sh
py=build/peers-venv/bin/python
bin=build/bin
threads=2
batch=32
[[ $model == resnet20-fmnist ]] && batch=128
# 60000 images, the last partial batch dropped, as Kiln's pipeline does.
spe=$((60000 / 128))

# The peers' settings (docs/performance.md, "Peers", says what else was
# tried): OpenMP and the frameworks' pools at 2 threads; PyTorch with glibc's
# malloc kept from returning memory to the kernel (as bench/resnet50); XLA's CPU backend with its XNNPACK kernels,
# which took the JAX ResNet-50 step from 0.89 to 1.30 images/s (at 112x112,
# batch 16) where its oneDNN options made it slower.
export OMP_NUM_THREADS=$threads
[[ -n $wait_policy ]] && export OMP_WAIT_POLICY=$wait_policy
torch_env=(env GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736)
keras_env=(env TF_CPP_MIN_LOG_LEVEL=2 XLA_FLAGS=--xla_cpu_use_xnnpack=true)
# Inductor's cache starts empty, so round 1 reports a cold compile; later
# rounds reuse it, as a user's second run would.
export TORCHINDUCTOR_CACHE_DIR=$PWD/$out/inductor-cache
rm -rf "$TORCHINDUCTOR_CACHE_DIR"

# --- Kiln: compile once (timed), then one run per round -------------------
exe=$out/kiln_$model
kilnc_log=$out/kilnc.log
start=$(date +%s.%N)
kiln_ok=1
case $model in
  resnet50)
    $bin/kilnc models/resnet50.mlir --batch=$batch --precision=$precision --nesterov=true \
      --weight-decay=1e-4 -o "$exe" >"$kilnc_log" 2>&1 || kiln_ok=0 ;;
  resnet20-fmnist)
    $bin/kilnc models/fmnist_resnet20.mlir -o "$exe" --batch=$batch --precision=$precision \
      --nesterov=true --momentum=0.9 --weight-decay=5e-4 --schedule=cosine_decay --lr=0.1 \
      --warmup-steps=$spe --total-steps=$((3 * spe)) >"$kilnc_log" 2>&1 || kiln_ok=0 ;;
  *)
    # torchvision's model exported by Debian's torch 1.13 in its training
    # form (efficientnet_b0 in PRESERVE form: see bench/torchvision/run.sh).
    mode=train
    [[ $model == efficientnet_b0 ]] && mode=preserve
    [[ -f $out/$model.onnx ]] || /usr/bin/python3 test/onnx/torch/export_torchvision.py \
      "$model" $mode "$out/$model.onnx" --classes 1000 --image-size 224 --published
    start=$(date +%s.%N)
    $bin/kilnc "$out/$model.onnx" --batch=$batch --precision=$precision --nesterov=true \
      --momentum=0.9 --weight-decay=1e-4 --lr=0.01 -o "$exe" >"$kilnc_log" 2>&1 || kiln_ok=0 ;;
esac
compile=$(echo "$(date +%s.%N) - $start" | bc)

results=$out/results.jsonl
: >"$results"
if ((!kiln_ok)); then
  # The row the report shows in Kiln's place (e.g. bf16 without AVX-512).
  /usr/bin/python3 -c 'import json, sys
print(json.dumps({"system": "kiln", "model": sys.argv[1], "precision": sys.argv[2],
                  "error": open(sys.argv[3]).read().strip()[:400]}))' \
    "$model" "$precision" "$kilnc_log" >>"$results"
fi

# Kiln's round; the executable's flags after the round number.
kiln_round() {
  local round=$1 run=$out/kiln_run
  local extra=("${@:2}")
  rm -rf "$run"
  if [[ $model == resnet20-fmnist ]]; then
    [[ -f $out/../fmnist-data/validation-00003-of-00004 ]] ||
      $bin/kiln-data idx --input /usr/share/datasets/fashion-mnist \
        --output "$out/../fmnist-data" >/dev/null
    /usr/bin/time -f %M -o "$out/kiln.rss" "$exe" --data "$out/../fmnist-data" \
      --epochs "$epochs" --pad-crop 2 --flip --threads $threads --log-every $spe \
      --model-dir "$run" "${extra[@]}" >"$out/kiln.log" 2>&1
    /usr/bin/python3 bench/kiln_rate.py "$run/metrics.jsonl" --model "$model" \
      --precision "$precision" --batch $batch --compile-sec "$compile" \
      --peak-rss-kib "$(cat "$out/kiln.rss")" --round "$round" --epoch-steps $spe
  else
    /usr/bin/time -f %M -o "$out/kiln.rss" "$exe" --synthetic --steps $((steps + 2)) \
      --threads $threads --log-every 1 --model-dir "$run" "${extra[@]}" >"$out/kiln.log" 2>&1
    /usr/bin/python3 bench/kiln_rate.py "$run/metrics.jsonl" --model "$model" \
      --precision "$precision" --batch $batch --compile-sec "$compile" \
      --peak-rss-kib "$(cat "$out/kiln.rss")" --round "$round"
  fi
}

# One peer's round as JSON lines; a peer that fails leaves an error row
# (its log's last line) and the run goes on.
peer_round() {
  local peer=$1 round=$2 log=$out/$1.log cmd
  local fmnist_prec=()
  [[ $precision == bf16 ]] && fmnist_prec=(--bf16)
  case $peer in
    torch-eager|torch-compile)
      local compile_flag=()
      [[ $peer == torch-compile ]] && compile_flag=(--compile)
      if [[ $model == resnet20-fmnist ]]; then
        cmd=("${torch_env[@]}" "$py" bench/fmnist/pytorch_fmnist.py --epochs "$epochs"
             --threads $threads --channels-last "${fmnist_prec[@]}" "${compile_flag[@]}")
      else
        cmd=("${torch_env[@]}" "$py" bench/pytorch_step.py --model "$model"
             --memory-format channels_last --precision "$precision" --batch $batch
             --threads $threads --steps "$steps" "${compile_flag[@]}")
      fi ;;
    keras-*)
      local backend=tensorflow nojit=() n=$xla_steps warmup=1
      [[ $peer == keras-jax ]] && backend=jax
      [[ $peer == keras-tf ]] && nojit=(--no-jit)
      cmd=("${keras_env[@]}" "$py" bench/peers/keras_step.py --backend $backend
           --model "$model" --precision "$precision" --threads $threads --steps "$n"
           --warmup $warmup --epochs "$epochs" "${nojit[@]}") ;;
  esac
  if "${cmd[@]}" >"$log.out" 2>"$log"; then
    "$py" -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        r.update(peer=sys.argv[2], model=sys.argv[3], round=int(sys.argv[4]))
        print(json.dumps(r))' "$log.out" "$peer" "$model" "$round"
  else
    "$py" -c 'import json, sys
lines = [l.strip() for l in open(sys.argv[1]) if l.strip()]
print(json.dumps({"system": sys.argv[2], "peer": sys.argv[2], "model": sys.argv[3],
                  "precision": sys.argv[4], "round": int(sys.argv[5]),
                  "error": lines[-1][:300] if lines else "exited non-zero"}))' \
      "$log" "$peer" "$model" "$precision" "$round"
  fi
}

for round in $(seq 1 "$rounds"); do
  echo "round $round of $rounds: $(date -u +%H:%M:%S)" >&2
  ((kiln_ok)) && kiln_round "$round" >>"$results"
  if ((kiln_ok)) && [[ -n $kiln_also ]]; then
    # shellcheck disable=SC2086 # the flags are words
    kiln_round "$round" $kiln_also | /usr/bin/python3 -c 'import json, sys
for line in sys.stdin:
    r = json.loads(line)
    r["system"] = r["peer"] = "kiln " + sys.argv[1]
    print(json.dumps(r))' "$kiln_also" >>"$results"
  fi
  for peer in ${peers//,/ }; do
    peer_round "$peer" "$round" >>"$results"
  done
done

if ((profile)); then
  # Where the time goes, side by side: Kiln's per-call profile (library calls
  # by kernel, generated code by op) and torch.profiler's per-op table of one
  # PyTorch 2 step, compiled when torch-compile is among the peers (the
  # faster of the two here).
  if ((kiln_ok)) && [[ $model != resnet20-fmnist ]]; then
    rm -rf "$out/kiln_profile"
    "$exe" --synthetic --steps $((steps + 1)) --threads $threads --log-every 0 --profile \
      --model-dir "$out/kiln_profile" >"$out/kiln_profile.txt" 2>&1
  fi
  if [[ $model != resnet20-fmnist ]]; then
    compile_flag=()
    [[ ,$peers, == *,torch-compile,* ]] && compile_flag=(--compile)
    "${torch_env[@]}" "$py" bench/pytorch_step.py --model "$model" --memory-format channels_last \
      --precision "$precision" --batch $batch --threads $threads --steps 1 \
      "${compile_flag[@]}" --profile-out "$out/torch_profile.txt" >/dev/null
  fi
fi

/usr/bin/python3 bench/peers/report.py "$results" "$out" --model "$model" \
  --precision "$precision" --omp-wait-policy "$wait_policy" \
  --cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -1)"
