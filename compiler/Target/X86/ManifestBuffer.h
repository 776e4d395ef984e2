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

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <vector>

namespace kiln {

/// The FlatBuffers manifest (root Manifest, identifier "KMAN") of the JSON
/// manifest `json`. Fails, naming the path of the offending member, on JSON
/// that does not have the schema's shape: a compiler bug.
llvm::Expected<std::vector<uint8_t>> buildManifestBuffer(llvm::StringRef json);

} // namespace kiln

#endif // KILN_COMPILER_TARGET_X86_MANIFESTBUFFER_H
