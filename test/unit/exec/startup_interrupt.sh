#!/usr/bin/env bash
# SIGTERM while the executable is still starting up (here: a manifest read
# that blocks for 60 s, standing for MPI_Init or a hung file system) ends it
# at once with a message (exit status 4), alone and on every rank under mpirun: there is
# no step boundary coming to notice the signal, and nothing to save.
# Usage: startup_interrupt.sh EXE
set -u
exe=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/kiln-startup-XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL ($1)"; echo "---- output ----"; cat "$work/out"; exit 1; }

check() { # LABEL STATUS RANKS COMMAND...
  local label=$1 want=$2 ranks=$3; shift 3
  rm -f "$work"/ready.*
  KILN_TEST_MODEL_MANIFEST_MS=60000 KILN_TEST_MODEL_MANIFEST_READY=$work \
    "$@" > "$work/out" 2>&1 &
  local pid=$!
  # Every rank in its start-up (a loaded machine may take seconds to start
  # mpirun's ranks; a signal before a rank's watcher runs would kill it
  # without a word).
  local waited=0
  while (( $(ls "$work" | grep -c '^ready\.') < ranks )); do
    (( waited++ < 600 )) || fail "$label: the ranks did not reach start-up in 60 s"
    sleep 0.1
  done
  sleep 0.2
  local start=$SECONDS
  kill -TERM $pid
  wait $pid; local status=$?
  (( SECONDS - start <= 10 )) || fail "$label: took $((SECONDS - start)) s to end"
  [[ $status == "$want" ]] || fail "$label: exit status $status, not $want"
  local said
  said=$(grep -c "kiln: SIGTERM during start-up: exiting (no step has run, nothing to save)" \
    "$work/out")
  [[ $said == "$ranks" ]] || fail "$label: $said start-up messages, not $ranks"
}

check alone 4 1 "$exe" --synthetic --steps 5
# mpirun itself exits 1 when its ranks end by a signal it forwarded.
check mpirun 1 2 mpirun -np 2 --oversubscribe --allow-run-as-root \
  -x KILN_TEST_MODEL_MANIFEST_MS -x KILN_TEST_MODEL_MANIFEST_READY "$exe" --synthetic --steps 5
echo "PASS: SIGTERM during start-up ends the run at once, alone and under mpirun"
