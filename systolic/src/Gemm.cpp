//===- Gemm.cpp - A single GEMM as a program ------------------------------===//

#include "kiln/sim/Gemm.h"

#include "kiln/sim/Builder.h"

#include <algorithm>
#include <string>

namespace kiln::sim {

Status buildGemmProgram(const TargetConfig &target, int64_t m, int64_t k,
                        int64_t n, const GemmOptions &options,
                        std::unique_ptr<Program> &program) {
  if (m <= 0 || k <= 0 || n <= 0)
    return invalidArgumentError("GEMM sizes must be positive");
  if (options.mxus == 0 || options.mxus > target.mxuCount)
    return invalidArgumentError("GEMM over " + std::to_string(options.mxus) +
                                " MXUs on a target with " +
                                std::to_string(target.mxuCount));
  int64_t bytes = 2 * m * k + 2 * k * n + 4 * m * n;
  if (bytes > target.onChipBytes)
    return invalidArgumentError(
        "GEMM " + std::to_string(m) + "x" + std::to_string(k) + "x" +
        std::to_string(n) + " needs " + std::to_string(bytes) +
        " bytes on chip, the target has " + std::to_string(target.onChipBytes));
  std::string name = "gemm_" + std::to_string(m) + "x" + std::to_string(k) +
                     "x" + std::to_string(n);
  ProgramTSink sink(target, name, m);
  ProgramBuilder b(sink);
  b.beginSourceOp("matmul", "gemm");
  auto onChip = [&](const char *id, fb::DType t, std::vector<int64_t> shape,
                    int64_t offset, fb::Role role, const char *binding) {
    BufferSpec s;
    s.name = id;
    s.dtype = t;
    s.space = fb::Space::OnChip;
    s.role = role;
    s.shape = std::move(shape);
    s.offset = offset;
    s.binding = binding;
    return b.addBuffer(s);
  };
  fb::Role in = options.fromHbm ? fb::Role::Temp : fb::Role::Input;
  fb::Role out = options.fromHbm ? fb::Role::Temp : fb::Role::Output;
  uint32_t a = onChip("a.vmem", fb::DType::BF16, {m, k}, 0, in, "a");
  uint32_t w = onChip("b.vmem", fb::DType::BF16, {k, n}, 2 * m * k, in, "b");
  const int64_t R = target.arrayRows, C = target.arrayCols;
  // One accumulator buffer per N tile, so that passes of different MXUs
  // write different buffers (dependencies are tracked per buffer).
  int64_t numTiles = (n + C - 1) / C;
  std::vector<uint32_t> acc;
  int64_t offset = 2 * m * k + 2 * k * n;
  for (int64_t t = 0; t < numTiles; ++t) {
    int64_t nt = std::min(C, n - t * C);
    std::string id = "c.vmem." + std::to_string(t);
    std::string binding = "c." + std::to_string(t);
    acc.push_back(onChip(id.c_str(), fb::DType::F32, {m, nt}, offset, out,
                         binding.c_str()));
    offset += 4 * m * nt;
  }
  uint32_t hc = 0;
  if (options.fromHbm) {
    auto hbm = [&](const char *id, fb::DType t, std::vector<int64_t> shape,
                   fb::Role role, const char *binding) {
      BufferSpec s;
      s.name = id;
      s.dtype = t;
      s.role = role;
      s.shape = std::move(shape);
      s.binding = binding;
      return b.addBuffer(s);
    };
    uint32_t ha = hbm("a", fb::DType::BF16, {m, k}, fb::Role::Input, "a");
    uint32_t hb = hbm("b", fb::DType::BF16, {k, n}, fb::Role::Input, "b");
    hc = hbm("c", fb::DType::F32, {m, n}, fb::Role::Output, "c");
    b.dma(OperandSpec::matrix(hb, 0, k, n, n),
          OperandSpec::matrix(w, 0, k, n, n));
    b.dma(OperandSpec::matrix(ha, 0, m, k, k),
          OperandSpec::matrix(a, 0, m, k, k));
  }
  for (int64_t t = 0; t < numTiles; ++t) {
    int64_t n0 = t * C, nt = std::min(C, n - n0);
    uint32_t mxu = uint32_t(t % options.mxus);
    for (int64_t k0 = 0; k0 < k; k0 += R) {
      int64_t kt = std::min(R, k - k0);
      b.matmul(mxu, OperandSpec::matrix(a, k0, m, kt, k),
               OperandSpec::matrix(w, k0 * n + n0, kt, nt, n),
               OperandSpec::matrix(acc[size_t(t)], 0, m, nt, nt),
               /*accumulate=*/k0 > 0);
    }
    if (options.fromHbm)
      b.dma(OperandSpec::matrix(acc[size_t(t)], 0, m, nt, nt),
            OperandSpec::matrix(hc, n0, m, nt, n));
  }
  b.finish();
  program = sink.take();
  return Status::ok();
}

} // namespace kiln::sim
