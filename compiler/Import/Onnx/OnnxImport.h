//===- OnnxImport.h - ONNX models into the kiln dialect ---------*- C++ -*-===//
//
// Imports an ONNX model (opset 13-17; others through ONNX's version
// converter) as a training model in the form models/build_model.py writes:
// module-level variables with the initializers' names, and
// @forward(%images, %labels) -> (loss, logits) on NHWC activations.
// docs/onnx.md describes what is imported and how.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_IMPORT_ONNX_ONNXIMPORT_H
#define KILN_COMPILER_IMPORT_ONNX_ONNXIMPORT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

namespace kiln {

struct OnnxImportOptions {
  /// The loss's label smoothing.
  float labelSmoothing = 0.0f;
  /// Initialize the parameters as models/build_model.py does (He-normal
  /// convolutions, normal(0, 0.01) dense weights, BN ones/zeros) instead of
  /// with the initializers' values.
  bool freshInit = false;
};

/// True when `path` names an ONNX file: by its extension, else by its first
/// byte (a serialized ModelProto starts with field 1, ir_version, a varint:
/// 0x08), which MLIR text never does.
bool isOnnxFile(llvm::StringRef path);

/// Imports the model in `buffer`: a serialized onnx.ModelProto, or ONNX's
/// textual syntax (onnx/defs/parser.h), which lit tests write. Errors are
/// emitted on `context` and name the buffer's identifier (the file), and for
/// a node its name, op type, inputs, outputs and the opset.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnx(const llvm::MemoryBuffer &buffer, mlir::MLIRContext &context,
           const OnnxImportOptions &options = {});

/// Reads `path` and imports it.
mlir::OwningOpRef<mlir::ModuleOp>
importOnnxFile(llvm::StringRef path, mlir::MLIRContext &context,
               const OnnxImportOptions &options = {});

} // namespace kiln

#endif // KILN_COMPILER_IMPORT_ONNX_ONNXIMPORT_H
