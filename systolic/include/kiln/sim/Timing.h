//===- Timing.h - The timed executor and the GEMM model --------*- C++ -*-===//
//
// Part of Kiln. Times a program on a target: every instruction gets a start
// and an end cycle on its unit. The machine (docs/systolic.md, "Timing
// model"):
//
// - Units run their own instructions in program order: each MXU, the vector
//   unit, the scalar unit, an inbound and an outbound DMA engine, the
//   inter-chip links. An instruction starts when its unit is free and every
//   instruction it depends on has ended. Units do not wait for each other
//   otherwise, so DMA overlaps compute exactly as far as the dependencies
//   allow.
// - MXU pass (k x n weight tile, m streamed rows): the tile shifts into the
//   array's shadow registers in k cycles while the previous pass streams;
//   the m rows then stream in m cycles (once the previous pass has streamed
//   and the tile is loaded); the last result leaves the array R + C - 2
//   cycles later (fill and drain). Consecutive passes on one MXU therefore
//   overlap their fill/drain, and a dependency on an earlier pass of the same
//   MXU is met in stream order (accumulation happens in order at the array's
//   foot), so a chain of K-tiles accumulating into one output streams
//   back-to-back.
// - Vector op: ceil(work / lanes) cycles on the vector unit, results
//   readable `vector_latency` cycles later; the work per op is in
//   vectorWork().
// - DMA: the engine is busy for `dma_overhead` + bytes / (HBM bytes per
//   cycle) while holding the HBM channel (shared by both engines, granted to
//   the earliest request that fits); data lands `dma_latency` later. Bytes
//   are those of in-bounds HBM elements (padding zeros are generated on
//   chip).
// - Allreduce: a ring over `ranks` ranks moves 2 (p-1)/p of the bytes over
//   the links; free with one rank.
//
// Analytical model of one GEMM (M x K x N) tiled into passes of k <= R rows
// and n <= C columns, all M rows streamed per pass, on one MXU
// (gemmModelCycles):
//   cycles = k_1 + sum over passes t of max(M, k_{t+1}) + (R + C - 2)
// i.e. the first tile's load, one stream per pass (lengthened when the next
// tile takes longer to load than M rows take to stream), and one fill/drain.
// For M >= R this is T*M + k_1 + R + C - 2 with T = ceil(K/R)*ceil(N/C),
// and utilization M*K*N / (cycles*R*C) -> 1 for large aligned shapes.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_TIMING_H
#define KILN_SIM_TIMING_H

#include "kiln/sim/Program.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sim {

/// Units of the machine: MXUs 0..mxuCount-1, then these.
struct UnitIds {
  uint32_t mxuCount;
  uint32_t vector() const { return mxuCount; }
  uint32_t scalar() const { return mxuCount + 1; }
  uint32_t dmaIn() const { return mxuCount + 2; }
  uint32_t dmaOut() const { return mxuCount + 3; }
  uint32_t ici() const { return mxuCount + 4; }
  uint32_t count() const { return mxuCount + 5; }
  std::string name(uint32_t unit) const;
};

struct InstrTiming {
  uint32_t unit = 0;
  uint64_t start = 0;
  /// When the results may be used.
  uint64_t end = 0;
  /// Cycles the unit is occupied.
  uint64_t busy = 0;
  /// Cycles the unit sat idle waiting for this instruction's dependencies.
  uint64_t stall = 0;
  uint64_t macs = 0;
  uint64_t hbmBytes = 0;
};

struct TimingResult {
  std::vector<InstrTiming> instrs;
  uint64_t cycles = 0;
  UnitIds units{0};
  std::vector<uint64_t> unitBusy, unitStall;
  uint64_t macs = 0, hbmBytesRead = 0, hbmBytesWritten = 0, iciBytes = 0;
  /// Largest sum of live on-chip buffer bytes at any instruction, and the
  /// highest on-chip address used.
  int64_t onChipPeakBytes = 0, onChipHighWater = 0;
};

struct TimingOptions {
  /// Data-parallel ranks sharing the allreduce (1: no communication).
  uint32_t ranks = 1;
};

/// Times a verified program.
TimingResult simulateTiming(const Program &program, const TargetConfig &target,
                            const TimingOptions &options = {});

/// Work of a vector-table instruction in lane-element operations.
uint64_t vectorWork(const fb::VectorT &vec);

/// Number of in-bounds elements of an operand view.
int64_t countInBounds(const fb::OperandT &op);

/// The analytical cycle count of an M x K x N GEMM on one MXU, tiled as
/// described above.
uint64_t gemmModelCycles(int64_t m, int64_t k, int64_t n,
                         const TargetConfig &target);

} // namespace kiln::sim

#endif // KILN_SIM_TIMING_H
