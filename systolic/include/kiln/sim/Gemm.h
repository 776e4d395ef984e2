//===- Gemm.h - A single GEMM as a program ---------------------*- C++ -*-===//
//
// Part of Kiln. C[M,N] = A[M,K] x B[K,N] (bf16 operands, fp32 result) tiled
// the way the analytical model of Timing.h assumes: weight tiles of
// min(R, K - k0) x min(C, N - n0), N tiles outer and K tiles inner (one
// accumulation chain per N tile, on MXU (N tile index mod MXUs)), every pass
// streaming all M rows. Used to characterize the array (kiln-sim --gemm,
// the timing tests) and as the simplest end-to-end check of the numerics.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_GEMM_H
#define KILN_SIM_GEMM_H

#include "kiln/sim/Program.h"

namespace kiln::sim {

struct GemmOptions {
  /// Operands start (and the result ends) in HBM, moved by DMA; otherwise
  /// they are on-chip inputs and only the array is timed.
  bool fromHbm = false;
  /// MXUs to spread the N tiles over (at most the target's).
  uint32_t mxus = 1;
};

/// Builds the program; fails if the operands do not fit on chip. Inputs are
/// bound as "a" and "b", the result as "c" (in HBM) or "c.<t>".
Status buildGemmProgram(const TargetConfig &target, int64_t m, int64_t k,
                        int64_t n, const GemmOptions &options,
                        std::unique_ptr<Program> &program);

} // namespace kiln::sim

#endif // KILN_SIM_GEMM_H
