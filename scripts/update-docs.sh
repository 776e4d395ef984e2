#!/usr/bin/env bash
# Refreshes docs/generated/ from the references the build generates from ODS.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target kiln-docs
mkdir -p docs/generated
cp build/docs/Dialects/Kiln.md build/docs/Dialects/Sa.md build/docs/Passes/KilnPasses.md \
  docs/generated/
