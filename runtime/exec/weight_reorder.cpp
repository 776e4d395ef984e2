//===- weight_reorder.cpp - bf16 filters into pair-blocked formats --------===//

#include "kiln/rt/exec/weight_reorder.h"

#include "kiln/rt/exec/gomp.h"

#include <algorithm>

namespace kiln::rt::exec {

std::optional<PairBlockedWeightReorder>
PairBlockedWeightReorder::match(const dnnl::memory::desc &from,
                                const dnnl::memory::desc &to) {
  const dnnl_memory_desc_t &f = from.data, &t = to.data;
  if (f.ndims != 4 || t.ndims != 4 || f.data_type != dnnl_bf16 ||
      t.data_type != dnnl_bf16 || f.format_kind != dnnl_blocked ||
      t.format_kind != dnnl_blocked)
    return std::nullopt;
  for (int d = 0; d < 4; ++d)
    if (f.dims[d] != t.dims[d] || f.padded_dims[d] != f.dims[d] ||
        f.padded_offsets[d] != 0 || t.padded_offsets[d] != 0)
      return std::nullopt;
  const dnnl_blocking_desc_t &fb = f.format_desc.blocking;
  const dnnl_blocking_desc_t &tb = t.format_desc.blocking;
  // Source: plain, output channels dense and innermost (HWIO).
  if (fb.inner_nblks != 0 || fb.strides[0] != 1 || f.offset0 != 0)
    return std::nullopt;
  // Destination: X output channels, then 2 input channels, innermost.
  if (tb.inner_nblks != 2 || tb.inner_idxs[0] != 0 || tb.inner_idxs[1] != 1 ||
      tb.inner_blks[1] != 2)
    return std::nullopt;
  PairBlockedWeightReorder r;
  r.outputs = t.dims[0];
  r.inputs = t.dims[1];
  r.height = t.dims[2];
  r.width = t.dims[3];
  r.block = tb.inner_blks[0];
  r.outputBlocks = t.padded_dims[0] / r.block;
  r.inputPairs = t.padded_dims[1] / 2;
  for (int d = 0; d < 4; ++d) {
    r.fromStride[d] = fb.strides[d];
    r.toStride[d] = tb.strides[d];
  }
  r.toOffset = t.offset0;
  return r;
}

void PairBlockedWeightReorder::runShare(const uint16_t *from, uint16_t *to,
                                        int64_t thread, int64_t threads) const {
  // Work items: (output block, h, w); each writes inputPairs chunks of
  // 2 * block elements.
  int64_t items = outputBlocks * height * width;
  int64_t begin = items * thread / threads,
          end = items * (thread + 1) / threads;
  for (int64_t item = begin; item < end; ++item) {
    int64_t w = item % width, h = item / width % height,
            ob = item / (width * height);
    int64_t firstOutput = ob * block;
    int64_t valid =
        std::max<int64_t>(0, std::min(block, outputs - firstOutput));
    for (int64_t ip = 0; ip < inputPairs; ++ip) {
      uint16_t *out = to + toOffset + ob * toStride[0] + ip * toStride[1] +
                      h * toStride[2] + w * toStride[3];
      int64_t i0 = 2 * ip, i1 = 2 * ip + 1;
      const uint16_t *row0 = from + firstOutput + i0 * fromStride[1] +
                             h * fromStride[2] + w * fromStride[3];
      const uint16_t *row1 = row0 + fromStride[1];
      int64_t o = 0;
      if (i1 < inputs) {
        for (; o < valid; ++o) {
          out[2 * o] = row0[o];
          out[2 * o + 1] = row1[o];
        }
      } else if (i0 < inputs) {
        for (; o < valid; ++o) {
          out[2 * o] = row0[o];
          out[2 * o + 1] = 0;
        }
      }
      std::fill(out + 2 * o, out + 2 * block, uint16_t(0));
    }
  }
}

void PairBlockedWeightReorder::run(const void *from, void *to) const {
  struct Share {
    const PairBlockedWeightReorder *reorder;
    const uint16_t *from;
    uint16_t *to;
  } share{this, static_cast<const uint16_t *>(from),
          static_cast<uint16_t *>(to)};
  auto onThread = [](void *data) {
    const Share &s = *static_cast<const Share *>(data);
    s.reorder->runShare(s.from, s.to, omp_get_thread_num(),
                        omp_get_num_threads());
  };
  GOMP_parallel(onThread, &share, unsigned(omp_get_max_threads()), 0);
}

} // namespace kiln::rt::exec
