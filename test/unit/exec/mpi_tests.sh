#!/bin/sh
# Data-parallel runs of the test model under mpirun (2 ranks), registered as
# ctest tests by CMakeLists.txt:
#   mpi_tests.sh MODE TRAIN_EXE MAKE_SHARDS_EXE
# MODE: replicas | data | kill | hang | nan | interrupt | rank-error | torus. Each checks the
# exit status, the messages and (for failures) that the job ended quickly.
set -u
mode=$1 exe=$2 shards=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-mpi-XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1
mpirun="mpirun -np 2 --oversubscribe --allow-run-as-root"

fail() { echo "FAIL ($mode): $*"; echo "---- output ----"; cat "$work/out"; exit 1; }
expect() { grep -q -- "$1" "$work/out" || fail "output lacks '$1'"; }

# A wrapper that sends signal $1 to rank 1 after $2 seconds, then execs the
# program (the wrapper's pid becomes the program's).
wrapper() {
  cat > "$work/wrap.sh" <<WRAP
#!/bin/sh
if [ "\$OMPI_COMM_WORLD_RANK" = 1 ]; then (sleep $2; kill -$1 \$\$) & fi
exec "\$@"
WRAP
  chmod +x "$work/wrap.sh"
}

start=$(date +%s)
case $mode in
replicas)
  $mpirun "$exe" --synthetic --steps 30 --log-every 10 --verify-replicas \
    --model-dir "$work/m" > "$work/out" 2>&1 || fail "exit status $?"
  expect "batch 8 x 2 ranks (mpi)"
  expect "step 30/30"
  expect "parameters identical on all 2 ranks"
  test -f "$work/m/ckpt-0000000030.safetensors" || fail "no final checkpoint"
  test "$(grep -c '"kind":"train"' "$work/m/metrics.jsonl")" = 3 ||
    fail "metrics.jsonl should have 3 train lines (rank 0 alone writes)"
  ;;
data)
  "$shards" "$work/d" || fail "could not write shards"
  # 76 records in 4 uneven shards: 38 per rank, 4 steps of 8 per epoch.
  $mpirun "$exe" --data "$work/d" --augment none --epochs 2 --eval \
    --verify-replicas --log-every 3 > "$work/out" 2>&1 || fail "exit status $?"
  expect "76 records over 2 ranks: 4 steps per epoch of 16 global batch; 12 records per epoch not trained on (the remainder), different ones each epoch; training to step 8"
  expect "(20 examples"
  expect "parameters identical on all 2 ranks"
  ;;
kill)
  wrapper 9 2
  $mpirun "$work/wrap.sh" "$exe" --synthetic --steps 100000000 --log-every 0 \
    --model-dir "$work/k" --checkpoint-every 50 > "$work/out" 2>&1 &&
    fail "a killed rank must fail the job"
  expect "rank 1"
  expect "signal 9"
  # The last checkpoint written before the failure is intact and resumes.
  ckpt=$(ls "$work/k"/ckpt-*.safetensors 2>/dev/null | sort | tail -n 1)
  test -n "$ckpt" || fail "no checkpoint survived the failure"
  step=$(basename "$ckpt" .safetensors | sed 's/ckpt-0*//')
  "$exe" --synthetic --steps $((step + 5)) --resume --model-dir "$work/k" \
    > "$work/out" 2>&1 || fail "resume after the failure failed: $?"
  expect "resuming from $ckpt"
  ;;
hang)
  wrapper STOP 2
  $mpirun "$work/wrap.sh" "$exe" --synthetic --steps 100000000 --log-every 0 \
    --comm-timeout 3 > "$work/out" 2>&1 && fail "a hung rank must fail the job"
  expect "did not finish within 3 s (--comm-timeout); another rank has died or hangs"
  ;;
nan)
  $mpirun "$exe" --synthetic --steps 50 --lr 1e30 > "$work/out" 2>&1
  rc=$?
  test $rc -ne 0 || fail "a NaN loss must fail the job"
  grep -Eq "step [0-9]+: loss is (NaN|Inf) on 2 of 2 ranks; stopping \(last checkpoint: none\)" \
    "$work/out" || fail "no NaN message"
  ;;
interrupt)
  # SIGTERM to mpirun (a scheduler's preemption): mpirun forwards it, all
  # ranks stop at the same step after a checkpoint, and the run resumes.
  # Few progress lines: mpirun stops reading the ranks' output while it
  # waits to send SIGTERM and SIGKILL, and a rank printing every step of
  # 0.1 ms fills its stdout pipe and blocks there until SIGKILL.
  $mpirun "$exe" --synthetic --steps 1000000000 --log-every 200 \
    --model-dir "$work/m" > "$work/out" 2>&1 &
  pid=$!
  i=0
  until grep -q '"kind":"train"' "$work/m/metrics.jsonl" 2>/dev/null; do
    i=$((i + 1)); test $i -lt 300 || fail "the run did not start"; sleep 0.1
  done
  kill -TERM $pid
  wait $pid && fail "an interrupted job must not exit 0"
  step=$(sed -n 's/.*step \([0-9]*\): interrupted; stopping (checkpoint: .*/\1/p' "$work/out")
  test -n "$step" || fail "no interruption message"
  ckpt=$(printf '%s/m/ckpt-%010d.safetensors' "$work" "$step")
  test -f "$ckpt" || fail "no checkpoint $ckpt"
  $mpirun "$exe" --synthetic --steps $((step + 5)) --resume --verify-replicas \
    --model-dir "$work/m" > "$work/out" 2>&1 || fail "resume failed: $?"
  expect "resuming from $ckpt"
  expect "parameters identical on all 2 ranks"
  ;;
rank-error)
  # One shard of 25 equal records: rank 0 reads records 0..12, rank 1
  # 13..24, where record 20 has a data CRC mismatch that only rank 1 meets.
  "$shards" "$work/d" || fail "could not write shards"
  rm "$work/d"/train-0000[123]-of-00004
  python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read())
b[len(b) // 25 * 20 + 12 + 5] ^= 0x20; open(p, "wb").write(b)' \
    "$work/d/train-00000-of-00004" || fail "could not corrupt a record"
  $mpirun "$exe" --data "$work/d" --steps 5 > "$work/out" 2>&1 &&
    fail "a rank that meets a bad record must fail the job"
  expect "rank 1: error: .*train-00000-of-00004: record 20 at byte offset [0-9]*: data CRC mismatch"
  ;;
torus)
  # --allreduce torus on 4 ranks as a 2x2 grid: the replicas agree, and the
  # last step's loss is the ring's (the same sums, added in another order).
  mpirun4="mpirun -np 4 --oversubscribe --allow-run-as-root"
  $mpirun4 "$exe" --synthetic --steps 12 --log-every 12 --allreduce ring \
    > "$work/ring" 2>&1 || { cp "$work/ring" "$work/out"; fail "ring: exit status $?"; }
  $mpirun4 "$exe" --synthetic --steps 12 --log-every 12 --allreduce torus \
    --torus-dims 2x2 --verify-replicas > "$work/out" 2>&1 || fail "exit status $?"
  expect "x 4 ranks (mpi)"
  expect "parameters identical on all 4 ranks"
  loss() { sed -n 's/.*step 12\/12.*loss \([0-9.e+-]*\).*/\1/p' "$1" | head -n 1; }
  ring=$(loss "$work/ring") torus=$(loss "$work/out")
  test -n "$ring" && test -n "$torus" || fail "no step 12 loss (ring '$ring')"
  python3 -c "import sys; r, t = map(float, sys.argv[1:]); sys.exit(abs(r - t) > 1e-5 * abs(r))" \
    "$ring" "$torus" || fail "torus loss $torus, ring $ring"
  # A grid that is not the world refuses to start, naming the flag.
  $mpirun4 "$exe" --synthetic --steps 2 --allreduce torus --torus-dims 2x3 \
    > "$work/out" 2>&1 && fail "a 2x3 grid on 4 ranks must be refused"
  expect "the torus allreduce's grid 2x3 has 6 ranks, the job 4 (--torus-dims)"
  ;;
*)
  echo "unknown mode $mode"; exit 2 ;;
esac
elapsed=$(( $(date +%s) - start ))
test $elapsed -lt 60 || fail "took ${elapsed}s"
echo "PASS ($mode, ${elapsed}s)"
