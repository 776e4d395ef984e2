//===- SaPassOptions.h - Enum options of kiln-convert-to-sa -----*- C++ -*-===//
//
// The value types of kiln-convert-to-sa's enum options (Passes.td spells
// them), without the program schema the lowering itself needs.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_SAPASSOPTIONS_H
#define KILN_PASSES_CONVERSION_KILNTOSA_SAPASSOPTIONS_H

#include "passes/EnumOptionParser.h"

namespace kiln::sa {

/// How activations and their gradients are stored in device memory.
enum class ActivationStorage { F32, BF16 };

} // namespace kiln::sa

// kiln-convert-to-sa's activation-type option names its values in errors.
KILN_ENUM_OPTION_PARSER(::kiln::sa::ActivationStorage)

#endif // KILN_PASSES_CONVERSION_KILNTOSA_SAPASSOPTIONS_H
