//===- KilnToLinalg.h - Lower planned training steps for x86 ----*- C++ -*-===//

#ifndef KILN_PASSES_CONVERSION_KILNTOLINALG_KILNTOLINALG_H
#define KILN_PASSES_CONVERSION_KILNTOLINALG_KILNTOLINALG_H

#include "mlir/IR/BuiltinOps.h"

namespace kiln {

/// The module attribute holding the manifest: the readable JSON form of
/// runtime/include/kiln/rt/manifest.fbs, kept as text so that the IR shows it
/// as people read it; Target/X86 builds the object's FlatBuffers buffer from
/// it (ManifestBuffer.h, docs/model-abi.md).
inline constexpr llvm::StringLiteral kManifestAttr = "kiln.manifest";

/// The module attribute holding the initial values the manifest refers to
/// instead of carrying them ("data" of a variable): a dictionary from the
/// variable's name to its `value` attribute, usually a dense_resource blob,
/// which the object's manifest takes as raw bytes.
inline constexpr llvm::StringLiteral kInitialValuesAttr = "kiln.initial_values";

/// A constant initializer of at most this many elements travels in the
/// manifest as numbers ("value", the schedule's slots, which the runtime
/// reads by name); a larger one as raw bytes ("data"), or as one number when
/// it is a splat.
inline constexpr int64_t kManifestValueLimit = 16;

/// Lowers `@train_step` and `@eval_step` (static shapes) into
/// `@kiln_model_train_step(ctx, arena)` / `@kiln_model_eval_step(ctx, arena)`
/// over linalg, scf, memref and runtime calls, with every tensor at the
/// arena offset of a static memory plan; removes the kiln functions and
/// variables and records the manifest on the module.
llvm::LogicalResult lowerKilnToLinalg(mlir::ModuleOp module);

} // namespace kiln

#endif // KILN_PASSES_CONVERSION_KILNTOLINALG_KILNTOLINALG_H
