//===- Functional.cpp - The functional executor ---------------------------===//

#include "kiln/sim/Functional.h"

#include "kiln/ref/bf16.h"
#include "kiln/sim/Isa.h"
#include "kiln/sim/View.h"

namespace kiln::sim {

FunctionalMachine::FunctionalMachine(const Program &program)
    : program(program) {
  reset();
}

void FunctionalMachine::reset() {
  memory.assign(program.buffers.size(), {});
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const fb::BufferT &b = *program.buffers[i];
    memory[i].assign(size_t(shapeElements(b.shape)), 0.0f);
    if (b.role == fb::Role::Constant)
      memory[i] = b.data;
  }
}

namespace {

Status runDma(const Program &program, const fb::DmaT &dma,
              std::vector<std::vector<float>> &memory) {
  View src(*dma.src), dst(*dma.dst);
  const std::vector<float> &from = memory[dma.src->buffer];
  std::vector<float> &to = memory[dma.dst->buffer];
  bool round = program.buffers[dma.dst->buffer]->dtype == fb::DType::BF16;
  for (int64_t i = 0; i < dst.rows(); ++i) {
    if (!dst.rowInBounds(i))
      continue;
    for (int64_t j = 0; j < dst.cols(); ++j) {
      if (!dst.inBounds(i, j))
        continue;
      float v = src.inBounds(i, j) ? from[size_t(src.address(i, j))] : 0.0f;
      to[size_t(dst.address(i, j))] = round ? ref::roundToBf16(v) : v;
    }
  }
  return Status::ok();
}

Status runMatMul(const fb::MatMulT &mm,
                 std::vector<std::vector<float>> &memory) {
  View lhs(*mm.lhs), rhs(*mm.rhs), out(*mm.out);
  const std::vector<float> &a = memory[mm.lhs->buffer];
  const std::vector<float> &b = memory[mm.rhs->buffer];
  std::vector<float> &c = memory[mm.out->buffer];
  int64_t m = lhs.rows(), k = lhs.cols(), n = rhs.cols();
  // The stationary tile, rounded once as it is loaded into the array.
  std::vector<float> w(size_t(k * n), 0.0f);
  for (int64_t p = 0; p < k; ++p)
    for (int64_t j = 0; j < n; ++j)
      if (rhs.inBounds(p, j))
        w[size_t(p * n + j)] = ref::roundToBf16(b[size_t(rhs.address(p, j))]);
  std::vector<float> row(static_cast<size_t>(k)), acc(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i) {
    if (!out.rowInBounds(i))
      continue;
    for (int64_t p = 0; p < k; ++p)
      row[size_t(p)] = lhs.inBounds(i, p)
                           ? ref::roundToBf16(a[size_t(lhs.address(i, p))])
                           : 0.0f;
    std::fill(acc.begin(), acc.end(), 0.0f);
    // Partial sums move down the array in contraction order; bf16 x bf16
    // products are exact in fp32, so fused or separate multiply-adds agree.
    for (int64_t p = 0; p < k; ++p) {
      float x = row[size_t(p)];
      const float *wp = &w[size_t(p * n)];
      for (int64_t j = 0; j < n; ++j)
        acc[size_t(j)] += x * wp[j];
    }
    for (int64_t j = 0; j < n; ++j) {
      if (!out.inBounds(i, j))
        continue;
      float &dst = c[size_t(out.address(i, j))];
      dst = mm.accumulate ? dst + acc[size_t(j)] : acc[size_t(j)];
    }
  }
  return Status::ok();
}

} // namespace

Status FunctionalMachine::execute(size_t index) {
  const fb::InstructionT &instr = *program.instructions[index];
  switch (instr.kind.type) {
  case fb::Kind::Dma:
    return runDma(program, *instr.kind.AsDma(), memory);
  case fb::Kind::MatMul:
    return runMatMul(*instr.kind.AsMatMul(), memory);
  case fb::Kind::Vector:
    return executeVector(program, *instr.kind.AsVector(), memory);
  case fb::Kind::AllReduce: {
    if (!allReduce)
      return Status::ok();
    std::vector<std::vector<float> *> buffers;
    for (uint32_t b : instr.kind.AsAllReduce()->buffers)
      buffers.push_back(&memory[b]);
    return allReduce(std::move(buffers));
  }
  default:
    return invalidArgumentError("instruction " + std::to_string(index) +
                                " has no kind");
  }
}

Status FunctionalMachine::run() {
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    Status s = execute(i);
    if (!s.isOk())
      return invalidArgumentError("instruction " + std::to_string(i) + ": " +
                                  s.message());
  }
  return Status::ok();
}

} // namespace kiln::sim
