//===- OnnxExport.h - kiln models out to ONNX -------------------*- C++ -*-===//
//
// The inverse of compiler/Import/Onnx: exports the inference graph of a
// model in the form models/build_model.py writes (and the importer
// produces) as an ONNX ModelProto, opset 13, with the model's weights as
// initializers named after its variables (PyTorch's state-dict names).
// docs/onnx.md "Exporting" describes what is exported and how.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_EXPORT_ONNX_ONNXEXPORT_H
#define KILN_COMPILER_EXPORT_ONNX_ONNXEXPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace kiln {

struct OnnxExportOptions {
  /// A safetensors file holding the variables in Kiln's layouts (the
  /// executable's checkpoint, kiln-run --save, kiln-checkpoint
  /// from-pytorch); empty: the variables' own initializers.
  std::string weights;
  /// The seed of the random initializers (he_normal, normal) when there is
  /// no weights file: the executable's and kiln-run's --seed.
  uint64_t seed = 0;
  /// Write ONNX's textual syntax (onnx/defs/printer.h, the importer reads
  /// it back) instead of the serialized ModelProto.
  bool text = false;
};

/// Writes the inference graph of `module`'s @forward to `os`: its first
/// argument (NHWC images) becomes the input `images` (NCHW, dynamic batch),
/// its logits the output `logits`; batch norm uses the running statistics,
/// dropout is ONNX's inference Dropout (the identity, its ratio kept for
/// an importer) and the loss is left out. The result passes ONNX's checker
/// and shape inference before it is written. Errors are emitted on the
/// module's context, naming the op and its location, or the weights file
/// and the variable.
mlir::LogicalResult exportOnnx(mlir::ModuleOp module,
                               const OnnxExportOptions &options,
                               llvm::raw_ostream &os);

} // namespace kiln

#endif // KILN_COMPILER_EXPORT_ONNX_ONNXEXPORT_H
