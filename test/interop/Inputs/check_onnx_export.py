"""onnxruntime's side of test/interop/onnx-export.test (onnxruntime and the
safetensors package from PyPI, pinned, in build/interop-venv):

  batch SEED N H W C CLASSES OUT
      a fixed batch for kiln-run: arg0 the images (NHWC, standard normal),
      arg1 the labels (int32), as safetensors
  logits MODEL.onnx BATCH KILN_RESULTS TOL
      the exported model run by onnxruntime on BATCH's images (NCHW) against
      the logits Kiln's eval step saved (result1 of kiln-run
      --save-results): the largest absolute difference must be at most TOL
  same MODEL_A.onnx MODEL_B.onnx SEED N TOL
      two ONNX models (an export and its round trip through Kiln) run by
      onnxruntime on one random NCHW batch: their logits must agree to TOL

Each comparison prints the largest difference and the largest logit, then
OK or FAIL.
"""

import sys

import numpy as np
import onnxruntime
import safetensors.numpy


def run(model, images):
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    (name,) = [i.name for i in session.get_inputs()]
    return session.run(None, {name: images})[0]


def verdict(what, got, expect, tolerance):
    error = float(np.max(np.abs(got.astype(np.float64) - expect)))
    print(f"{what} {got.shape}: max abs difference {error:.3g}, "
          f"largest logit {np.max(np.abs(expect)):.3g}")
    if got.shape != expect.shape or not error <= tolerance:
        print(f"FAIL: above {tolerance:g}")
        sys.exit(1)
    print("OK")


def main():
    mode = sys.argv[1]
    if mode == "batch":
        seed, n, h, w, c, classes = (int(v) for v in sys.argv[2:8])
        rng = np.random.default_rng(seed)
        images = rng.standard_normal((n, h, w, c)).astype(np.float32)
        labels = rng.integers(0, classes, n).astype(np.int32)
        safetensors.numpy.save_file({"arg0": images, "arg1": labels}, sys.argv[8])
    elif mode == "logits":
        model, batch, results, tolerance = sys.argv[2:6]
        images = safetensors.numpy.load_file(batch)["arg0"]
        kiln = safetensors.numpy.load_file(results)["result1"].astype(np.float64)
        got = run(model, np.ascontiguousarray(images.transpose(0, 3, 1, 2)))
        verdict("onnxruntime against Kiln's eval step", got, kiln, float(tolerance))
    elif mode == "same":
        a, b, seed, n, tolerance = sys.argv[2:7]
        session = onnxruntime.InferenceSession(a, providers=["CPUExecutionProvider"])
        shape = [int(n)] + [d for d in session.get_inputs()[0].shape[1:]]
        images = np.random.default_rng(int(seed)).standard_normal(shape).astype(np.float32)
        verdict("round trip against the original", run(b, images),
                run(a, images).astype(np.float64), float(tolerance))
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
