//===- Isa.cpp - The instruction set of the systolic target ---------------===//

#include "kiln/sim/Isa.h"

namespace kiln::sim {

const VectorSignature &vectorSignature(fb::VectorOp op) {
  using U = VectorUnit;
  // Indexed by the enum value; the static_assert below keeps it in sync.
  static const VectorSignature table[] = {
      {"fill", 0, 1, 1, 0, U::Vector},
      {"copy", 1, 1, 0, 0, U::Vector},
      {"add", 2, 1, 0, 0, U::Vector},
      {"relu", 1, 1, 0, 0, U::Vector},
      {"relu_grad", 2, 1, 0, 0, U::Vector},
      {"channel_add", 2, 1, 0, 0, U::Vector},
      {"channel_sum", 1, 1, 0, 0, U::Vector},
      {"channel_moments", 1, 2, 0, 0, U::Vector},
      {"channel_centered_dot", 3, 2, 0, 0, U::Vector},
      {"bn_stats", 6, 6, 3, 0, U::Vector},
      {"channel_affine", 3, 1, 0, 1, U::Vector},
      {"bn_grad_coeffs", 5, 5, 2, 0, U::Vector},
      {"channel_affine2", 5, 1, 0, 0, U::Vector},
      {"max_pool", 1, 1, 0, 12, U::Vector},
      {"max_pool_grad", 2, 1, 0, 12, U::Vector},
      {"avg_pool", 1, 1, 0, 12, U::Vector},
      {"avg_pool_grad", 1, 1, 0, 12, U::Vector},
      {"global_avg_pool", 1, 1, 0, 3, U::Vector},
      {"global_avg_pool_grad", 1, 1, 0, 3, U::Vector},
      {"xent_loss", 2, 1, 2, 0, U::Vector},
      {"xent_grad", 3, 1, 2, 0, U::Vector},
      {"sgd_update", 4, 2, 3, 0, U::Vector},
      {"sum_squares", 1, 1, 0, 0, U::Vector},
      {"lars_update", 6, 2, 6, 0, U::Vector},
      {"learning_rate", 2, 1, 0, 1, U::Scalar},
      {"scale", 1, 1, 1, 0, U::Vector},
  };
  static_assert(sizeof(table) / sizeof(table[0]) ==
                    size_t(fb::VectorOp::MAX) + 1,
                "vector signature table out of sync with the schema");
  return table[static_cast<size_t>(op)];
}

kiln::DType toDType(fb::DType dtype) {
  switch (dtype) {
  case fb::DType::F32:
    return kiln::DType::F32;
  case fb::DType::BF16:
    return kiln::DType::BF16;
  case fb::DType::I32:
    return kiln::DType::I32;
  }
  return kiln::DType::F32;
}

int64_t dtypeBytes(fb::DType dtype) {
  return int64_t(dtypeInfo(toDType(dtype)).bytes);
}

const char *dtypeName(fb::DType dtype) {
  if (dtype < fb::DType::MIN || dtype > fb::DType::MAX)
    return "?";
  return dtypeInfo(toDType(dtype)).name;
}

int64_t shapeElements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

} // namespace kiln::sim

namespace kiln::sim {

Status decodePoolShape(const std::vector<int64_t> &a, PoolShape &s) {
  if (a.size() != 12)
    return invalidArgumentError("pooling needs 12 integer attributes");
  s = {a[0], a[1], a[2], a[3],  a[4],  a[5], a[6],
       a[7], a[8], a[9], a[10], a[11], 0,    0};
  for (size_t i = 0; i < 8; ++i)
    if (a[i] <= 0)
      return invalidArgumentError("pooling sizes, windows and strides must be "
                                  "positive");
  for (size_t i = 8; i < 12; ++i)
    if (a[i] < 0)
      return invalidArgumentError("pooling paddings must be non-negative");
  if (s.pt >= s.kh || s.pb >= s.kh || s.pl >= s.kw || s.pr >= s.kw)
    return invalidArgumentError(
        "pooling paddings must be smaller than the window");
  int64_t hp = s.h + s.pt + s.pb, wp = s.w + s.pl + s.pr;
  if (hp < s.kh || wp < s.kw)
    return invalidArgumentError("pooling window larger than the padded input");
  s.oh = (hp - s.kh) / s.sh + 1;
  s.ow = (wp - s.kw) / s.sw + 1;
  return Status::ok();
}

Status vectorExtents(const fb::VectorT &v, std::vector<int64_t> &srcs,
                     std::vector<int64_t> &dsts) {
  const VectorSignature &sig = vectorSignature(v.op);
  std::string name = sig.name;
  if (int(v.srcs.size()) != sig.numSrcs || int(v.dsts.size()) != sig.numDsts)
    return invalidArgumentError(name + " takes " + std::to_string(sig.numSrcs) +
                                " sources and " + std::to_string(sig.numDsts) +
                                " destinations");
  if (int(v.fattrs.size()) != sig.numFattrs ||
      (sig.numIattrs >= 0 && int(v.iattrs.size()) != sig.numIattrs))
    return invalidArgumentError(name + " has the wrong number of attributes");
  if (v.rows < 0 || v.channels < 0)
    return invalidArgumentError(name + ": negative rows or channels");
  int64_t e = v.rows * v.channels, c = v.channels, r = v.rows;
  using Op = fb::VectorOp;
  switch (v.op) {
  case Op::Fill:
    dsts = {e};
    break;
  case Op::Copy:
  case Op::Relu:
  case Op::Scale:
    srcs = {e};
    dsts = {e};
    break;
  case Op::Add:
  case Op::ReluGrad:
    srcs = {e, e};
    dsts = {e};
    break;
  case Op::ChannelAdd:
    srcs = {e, c};
    dsts = {e};
    break;
  case Op::ChannelSum:
    srcs = {e};
    dsts = {c};
    break;
  case Op::ChannelMoments:
    srcs = {e};
    dsts = {c, c};
    break;
  case Op::ChannelCenteredDot:
    srcs = {e, e, c};
    dsts = {c, c};
    break;
  case Op::BnStats:
    srcs.assign(6, c);
    dsts.assign(6, c);
    break;
  case Op::ChannelAffine:
    srcs = {e, c, c};
    dsts = {e};
    break;
  case Op::BnGradCoeffs:
    srcs.assign(5, c);
    dsts.assign(5, c);
    break;
  case Op::ChannelAffine2:
    srcs = {e, e, c, c, c};
    dsts = {e};
    break;
  case Op::MaxPool:
  case Op::AvgPool:
  case Op::MaxPoolGrad:
  case Op::AvgPoolGrad: {
    PoolShape s;
    KILN_RETURN_IF_ERROR(decodePoolShape(v.iattrs, s));
    int64_t in = s.n * s.h * s.w * s.c, out = s.n * s.oh * s.ow * s.c;
    if (v.op == Op::MaxPool || v.op == Op::AvgPool) {
      srcs = {in};
      dsts = {out};
    } else {
      srcs = v.op == Op::MaxPoolGrad ? std::vector<int64_t>{out, in}
                                     : std::vector<int64_t>{out};
      dsts = {in};
    }
    break;
  }
  case Op::GlobalAvgPool:
  case Op::GlobalAvgPoolGrad: {
    const auto &a = v.iattrs;
    if (a[0] <= 0 || a[1] <= 0 || a[2] <= 0)
      return invalidArgumentError(name + ": sizes must be positive");
    int64_t in = a[0] * a[1] * a[2], out = a[0] * a[2];
    srcs = {v.op == Op::GlobalAvgPool ? in : out};
    dsts = {v.op == Op::GlobalAvgPool ? out : in};
    break;
  }
  case Op::XentLoss:
    srcs = {e, r};
    dsts = {1};
    break;
  case Op::XentGrad:
    srcs = {e, r, 1};
    dsts = {e};
    break;
  case Op::SgdUpdate:
    srcs = {e, e, e, 1};
    dsts = {e, e};
    break;
  case Op::SumSquares:
    srcs = {e};
    dsts = {1};
    break;
  case Op::LarsUpdate:
    srcs = {e, e, e, 1, 1, 1};
    dsts = {e, e};
    break;
  case Op::LearningRate:
    if (v.iattrs.size() != 1 || v.iattrs[0] < 0 || v.iattrs[0] > 4)
      return invalidArgumentError(name + ": schedule must be one of 0..4");
    srcs = {1, c};
    dsts = {1};
    break;
  }
  return Status::ok();
}

} // namespace kiln::sim
