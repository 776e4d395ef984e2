//===- weight_reorder.h - bf16 filters into oneDNN's pair-blocked formats -===//
//
// oneDNN 2.6's reorder of a bf16 HWIO filter into the formats its bf16
// convolutions want (AcdB{X}a2b and the like: X output channels by 2 input
// channels innermost) runs at 1-3 GB/s here (2048x512: ~0.5 ms), ~1% of a
// ResNet-50 bf16 step in all. The layout is simple: each X-pair block is
// two rows of X output channels of the HWIO filter, interleaved. This
// reorder writes it directly, on all threads, padding included.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_WEIGHT_REORDER_H
#define KILN_RT_EXEC_WEIGHT_REORDER_H

#include <dnnl.hpp>

#include <cstdint>
#include <optional>

namespace kiln::rt::exec {

class PairBlockedWeightReorder {
public:
  /// The reorder from `from` to `to` if `from` is a bf16 4-D filter with
  /// output channels (logical dim 0) innermost and dense, and `to` the same
  /// logical filter in bf16 blocked by X output channels, then 2 input
  /// channels innermost, with any outer order and padding.
  static std::optional<PairBlockedWeightReorder>
  match(const dnnl::memory::desc &from, const dnnl::memory::desc &to);

  /// Runs the reorder on the OpenMP pool.
  void run(const void *from, void *to) const;

private:
  PairBlockedWeightReorder() = default;

  /// The share of thread `thread` of `threads`.
  void runShare(const uint16_t *from, uint16_t *to, int64_t thread,
                int64_t threads) const;

  int64_t outputs = 0, inputs = 0, height = 0, width = 0;
  int64_t block = 0; // X output channels
  int64_t outputBlocks = 0, inputPairs = 0;
  int64_t fromStride[4] = {}; // elements, logical O, I, H, W
  int64_t toStride[4] = {};   // elements per O block, I pair, H, W
  int64_t toOffset = 0;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_WEIGHT_REORDER_H
