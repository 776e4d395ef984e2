//===- InitialValue.h - A constant initializer's values as bytes -*- C++ -*-===//
//
// Part of Kiln. `kiln.variable ... init constant value <attr>` holds its
// values either inline (`dense<...>`: the learning-rate schedule, small
// initializers) or as a `dense_resource` blob, which is what the ONNX
// importer makes of a large initializer (docs/onnx.md, "Initial values"):
// built from the raw data, never interned or hashed element by element, and
// printed as one hex string instead of numbers. The consumers that copy the
// values in bulk (the manifest, kiln-run, the systolic graph) read both
// forms here, as bytes, rather than each through its own attribute walk.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECTS_KILN_IR_INITIALVALUE_H
#define KILN_DIALECTS_KILN_IR_INITIALVALUE_H

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace kiln {

/// The values of `value` one element after another, each as the
/// little-endian bytes of the element type (the host's order: Kiln targets
/// x86). `value` must not be a splat, which has one element's bytes only.
/// Fails, with a message for the caller to put after the variable's name,
/// for a dense_resource whose blob is missing (IR printed with its
/// resources elided) or does not hold the type's byte count, and for an
/// element type without a byte form (i1).
inline llvm::Expected<llvm::ArrayRef<char>>
getInitialValueBytes(mlir::ElementsAttr value) {
  auto type = llvm::cast<mlir::ShapedType>(value.getType());
  mlir::Type element = type.getElementType();
  unsigned bits = element.isIntOrFloat() ? element.getIntOrFloatBitWidth() : 0;
  if (bits == 0 || bits % 8 != 0)
    return llvm::createStringError("its element type has no byte form");
  auto expected = static_cast<size_t>(type.getNumElements()) * (bits / 8);
  llvm::ArrayRef<char> bytes;
  if (auto resource = llvm::dyn_cast<mlir::DenseResourceElementsAttr>(value)) {
    mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return llvm::createStringError(
          "its dense_resource '" + resource.getRawHandle().getKey().str() +
          "' has no data (was the IR printed with its resources elided?)");
    bytes = blob->getData();
  } else if (auto dense = llvm::dyn_cast<mlir::DenseElementsAttr>(value)) {
    if (dense.isSplat() && type.getNumElements() != 1)
      return llvm::createStringError("a splat has no per-element bytes");
    bytes = dense.getRawData();
  } else {
    return llvm::createStringError(
        "its value is neither dense<...> nor dense_resource<...>");
  }
  if (bytes.size() != expected)
    return llvm::createStringError(
        "its value holds " + std::to_string(bytes.size()) + " bytes for " +
        std::to_string(expected) + " (" + std::to_string(type.getNumElements()) +
        " elements of " + std::to_string(bits / 8) + " bytes)");
  return bytes;
}

} // namespace kiln

#endif // KILN_DIALECTS_KILN_IR_INITIALVALUE_H
