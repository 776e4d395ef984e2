#!/usr/bin/env bash
# Builds Kiln and runs the whole test suite (lit + GoogleTest + end-to-end) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
# test/interop's real tools (TensorBoard, ...), pinned, from PyPI.
bash scripts/interop-venv.sh build || echo "test.sh: no interop environment: test/interop will fail" >&2
cd build
set +e
ctest --output-on-failure -j "${KILN_JOBS:-$(nproc)}" 2>&1 | tee ctest.log
status=${PIPESTATUS[0]}
set -e
# ctest lists the tests that did not run (those needing AVX-512 on a host
# without it) after its summary line: repeat the summary as the last line.
grep -E '^[0-9]+% tests passed' ctest.log | tail -n 1
exit "$status"
