#!/usr/bin/env bash
# Installs every Debian package Kiln needs to build, test and run. Idempotent: packages already
# present are left alone, and apt's index is refreshed only when something is missing.
set -euo pipefail

packages=(
  # Compiler toolchain: LLVM/MLIR 22 (libMLIR.so, mlir-tblgen, lit, FileCheck), clang + lld.
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools clang-22 lld-22 libclang-rt-22-dev
  cmake ninja-build ccache git python3
  # The interop tests' virtual environment of pinned PyPI tools (scripts/interop-venv.sh).
  python3-venv
  # Runtime libraries.
  # Debian builds oneDNN with its OpenCL GPU runtime, so its CMake package needs OpenCL.
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers libflatbuffers-dev flatbuffers-compiler libopenmpi-dev openmpi-bin libfmt-dev
  libturbojpeg0-dev zlib1g-dev libgtest-dev
  # The ONNX importer: libonnx (parser, checker, shape inference, version converter) and the
  # protobuf headers its API exposes; test/onnx builds its models with python3-onnx and numpy.
  libonnx-dev libprotobuf-dev python3-onnx python3-numpy
  # kiln-report draws a run's plots with Debian's matplotlib.
  python3-matplotlib
  # Cluster simulation (bench/cluster, runtime/smpi): SimGrid's SMPI (mpi.h, libsimgrid, smpirun).
  libsimgrid-dev simgrid
  # Test-only: test/onnx/torch exports torchvision's models and compares with PyTorch.
  python3-torch python3-torchvision
  # The default data set the README's main command trains on.
  dataset-fashion-mnist
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
