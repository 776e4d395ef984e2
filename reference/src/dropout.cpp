//===- dropout.cpp - Training dropout with a counter-based mask -----------===//
//
// Part of Kiln. The x86 lowering (LowerDropout.cpp) draws the same Philox
// words and multiplies by the same f32 scale, so both agree bit for bit.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/dropout.h"

#include "kiln/ref/check.h"
#include "kiln/ref/philox.h"

#include <string>

namespace kiln::ref {

Status checkDropout(const DropoutAttrs &attrs) {
  if (!(attrs.ratio >= 0.0 && attrs.ratio < 1.0))
    return invalidArgumentError("dropout: ratio " + std::to_string(attrs.ratio) +
                           " is outside [0, 1)");
  return Status::ok();
}

Tensor dropout(const Tensor &x, const DropoutAttrs &attrs) {
  KILN_REF_CHECK_OK(checkDropout(attrs));
  uint32_t threshold = dropoutThreshold(attrs.ratio);
  float scale = dropoutScale(attrs.ratio);
  Tensor y(x.shape);
  for (int64_t i = 0; i < x.size(); ++i)
    y[i] = dropoutKeeps(attrs.seed, attrs.step, attrs.stream,
                        static_cast<uint64_t>(i), threshold)
               ? x[i] * scale
               : 0.0f;
  return y;
}

} // namespace kiln::ref
