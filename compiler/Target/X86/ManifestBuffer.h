//===- ManifestBuffer.h - The manifest as the runtime reads it ---*- C++ -*-===//
//
// Part of Kiln. The lowering describes the compiled model as the module's
// `kiln.manifest` attribute, JSON text shaped like
// runtime/include/kiln/rt/manifest.fbs (docs/model-abi.md). It stays text in
// the IR so that --emit=linalg and lit tests show it as people read it; the
// object file carries the FlatBuffers buffer built from it here with the
// schema's generated builder, which the runtime verifies and reads.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_TARGET_X86_MANIFESTBUFFER_H
#define KILN_COMPILER_TARGET_X86_MANIFESTBUFFER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <flatbuffers/flatbuffers.h>

namespace kiln {

/// The raw initial values of the variable named by the argument, which the
/// JSON refers to ("data": {"bytes": N, "in": ...}) instead of carrying.
using InitialValueLookup =
    llvm::function_ref<llvm::Expected<llvm::ArrayRef<char>>(llvm::StringRef)>;

/// The FlatBuffers manifest (root Manifest, identifier "KMAN") of the JSON
/// manifest `json`, with the bytes `lookup` gives for each variable's
/// "data". Fails, naming the path of the offending member, on JSON that
/// does not have the schema's shape (a compiler bug), on initial values of
/// the wrong size and on a buffer beyond FlatBuffers' 2 GiB. The buffer is
/// returned as the builder made it: a large model's values are copied once.
llvm::Expected<flatbuffers::DetachedBuffer>
buildManifestBuffer(llvm::StringRef json, InitialValueLookup lookup);

} // namespace kiln

#endif // KILN_COMPILER_TARGET_X86_MANIFESTBUFFER_H
