#!/usr/bin/env bash
# Builds Kiln and runs the whole test suite (lit + GoogleTest + end-to-end) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure -j "${KILN_JOBS:-$(nproc)}"
