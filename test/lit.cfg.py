# -*- Python -*-
# The Kiln lit suite: FileCheck tests for the dialects, passes, pipelines and tools.

import os
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
# GoogleTest suites and their inputs are run by ctest, not lit.
config.excludes = ["unit", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%python", config.python_executable))

llvm_config.use_default_substitutions()
# `not` and `count` at the start of a RUN line are found through PATH.
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
# Strict FileCheck, as upstream MLIR's suite.
llvm_config.with_environment("FILECHECK_OPTS",
                             "-enable-var-scope --allow-unused-prefixes=false")
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP"])

tool_dirs = [config.kiln_tools_dir, config.llvm_tools_dir]
tools = ["kiln-checkpoint", "kiln-opt", "kiln-report", "kiln-run", "kiln-sim", "kiln-translate",
         "kilnc"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# test/onnx builds its models with Debian's python3-onnx (1.12) and numpy,
# which lit's own Python may lack: %onnx_python runs them, and the `onnx`
# feature says it can.
onnx_python = "/usr/bin/python3"
config.substitutions.append(("%onnx_python", onnx_python))
try:
    if subprocess.run([onnx_python, "-c", "import onnx, numpy"],
                      capture_output=True).returncode == 0:
        config.available_features.add("onnx")
except OSError:
    pass
# test/onnx/torch exports torchvision's models and checks Kiln's steps
# against PyTorch's (Debian's python3-torch and python3-torchvision, test-only
# dependencies): the `torch` feature says that Python has them.
try:
    if subprocess.run([onnx_python, "-c", "import torch, torchvision"],
                      capture_output=True).returncode == 0:
        config.available_features.add("torch")
except OSError:
    pass

# test/interop checks Kiln's files with the real tools (TensorBoard, ...) from
# PyPI, pinned, in the virtual environment scripts/interop-venv.sh makes (the
# test script runs it). No feature gates them: without the environment they
# fail, saying the interpreter is missing, rather than pass unchecked.
config.substitutions.append(
    ("%interop_python", os.path.join(config.kiln_obj_root, "interop-venv", "bin", "python")))

# End-to-end tests link compiled models with the runtime.
if config.kiln_build_runtime:
    config.available_features.add("runtime")
    # Writes raw TFRecord shards (test/unit/exec/make_shards.cpp); kiln-data
    # converts IDX files into shards (test/onnx/torch).
    llvm_config.add_tool_substitutions(["kiln-exec-make-shards", "kiln-data"],
                                       tool_dirs)

# The host's CPU flags as features (cpu-<flag> in /proc/cpuinfo's spelling,
# e.g. cpu-amx_tile), for tests that need a CPU the host is not.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        for line in cpuinfo:
            if line.startswith("flags"):
                config.available_features.update(
                    "cpu-" + flag for flag in line.split(":", 1)[1].split())
                break
except OSError:
    pass
