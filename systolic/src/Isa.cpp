//===- Isa.cpp - The instruction set of the systolic target ---------------===//

#include "kiln/sim/Isa.h"

#include "kiln/ref/elementwise.h"
#include "kiln/ref/window.h"

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
      {"max_pool", 1, 1, 0, -1, U::Vector},
      {"max_pool_grad", 2, 1, 0, -1, U::Vector},
      {"avg_pool", 1, 1, 0, -1, U::Vector},
      {"avg_pool_grad", 1, 1, 0, -1, U::Vector},
      {"global_avg_pool", 1, 1, 0, 3, U::Vector},
      {"global_avg_pool_grad", 1, 1, 0, 3, U::Vector},
      {"xent_loss", 2, 1, 2, 0, U::Vector},
      {"xent_grad", 3, 1, 2, 0, U::Vector},
      {"sgd_update", 4, 2, 3, 0, U::Vector},
      {"sum_squares", 1, 1, 0, 0, U::Vector},
      {"lars_update", 6, 2, 6, 0, U::Vector},
      {"learning_rate", 2, 1, 0, 1, U::Scalar},
      {"scale", 1, 1, 1, 0, U::Vector},
      {"activation", 1, 1, 0, 1, U::Vector},
      {"activation_grad", 2, 1, 0, 1, U::Vector},
      {"broadcast_binary", 2, 1, 0, -1, U::Vector},
      {"broadcast_binary_grad", -1, 1, 0, -1, U::Vector},
      {"dropout", 2, 1, 1, 3, U::Vector},
      {"depthwise_conv", 2, 1, 0, 14, U::Vector},
      {"depthwise_conv_grad_data", 2, 1, 0, 14, U::Vector},
      {"depthwise_conv_grad_filter", 2, 1, 0, 14, U::Vector},
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
  if (a.size() != 12 && a.size() != 13)
    return invalidArgumentError("pooling needs 12 integer attributes and an "
                                "optional ceil mode");
  s = {a[0], a[1], a[2],  a[3],  a[4], a[5], a[6],
       a[7], a[8], a[9], a[10], a[11], 0,    0, false};
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
  if (a.size() == 13) {
    if (a[12] != 0 && a[12] != 1)
      return invalidArgumentError("pooling's ceil mode must be 0 or 1");
    s.ceil = a[12] != 0;
  }
  s.oh = ref::slidingWindowOutputSize(s.h, s.pt, s.pb, s.kh, s.sh, 1, s.ceil);
  s.ow = ref::slidingWindowOutputSize(s.w, s.pl, s.pr, s.kw, s.sw, 1, s.ceil);
  if (s.oh <= 0 || s.ow <= 0)
    return invalidArgumentError("pooling window larger than the padded input");
  return Status::ok();
}

Status decodeDepthwiseShape(const std::vector<int64_t> &a,
                            DepthwiseShape &s) {
  if (a.size() != 14)
    return invalidArgumentError("depthwise convolution needs 14 integer "
                                "attributes");
  s = {a[0], a[1], a[2], a[3],  a[4],  a[5],  a[6], a[7],
       a[8], a[9], a[10], a[11], a[12], a[13], 0,    0};
  for (size_t i : {0, 1, 2, 3, 4, 5, 6, 7, 12, 13})
    if (a[i] <= 0)
      return invalidArgumentError("depthwise convolution sizes, windows, "
                                  "strides and dilations must be positive");
  for (size_t i = 8; i < 12; ++i)
    if (a[i] < 0)
      return invalidArgumentError(
          "depthwise convolution paddings must be non-negative");
  s.oh = ref::slidingWindowOutputSize(s.h, s.pt, s.pb, s.kh, s.sh, s.dh);
  s.ow = ref::slidingWindowOutputSize(s.w, s.pl, s.pr, s.kw, s.sw, s.dw);
  if (s.oh <= 0 || s.ow <= 0)
    return invalidArgumentError(
        "depthwise convolution window larger than the padded input");
  return Status::ok();
}

bool broadcastGradReads(int64_t kind, bool wrtRhs, bool &lhs, bool &rhs) {
  if (kind < 0 || kind > 3)
    return false;
  auto k = ref::BinaryKind(kind);
  // kiln/ref/elementwise.h's table: mul and div read the other operand,
  // div's gradient with respect to rhs both.
  lhs = (k == ref::BinaryKind::Mul || k == ref::BinaryKind::Div) && wrtRhs;
  rhs = (k == ref::BinaryKind::Mul && !wrtRhs) || k == ref::BinaryKind::Div;
  return true;
}

Status decodeBroadcast(const fb::VectorT &v, BroadcastShape &s) {
  const auto &a = v.iattrs;
  bool grad = v.op == fb::VectorOp::BroadcastBinaryGrad;
  size_t head = grad ? 4 : 2;
  if (a.size() < head || a[head - 1] < 1 || a[head - 1] > 8 ||
      a.size() != head + 3 * size_t(a[head - 1]))
    return invalidArgumentError(
        std::string(grad ? "broadcast_binary_grad" : "broadcast_binary") +
        " needs [kind, " + (grad ? "wrt, accumulate, " : "") +
        "rank] and three shapes of that rank");
  s.kind = a[0];
  if (s.kind < 0 || s.kind > 3)
    return invalidArgumentError("broadcast kind must be one of 0..3");
  if (grad) {
    if ((a[1] != 0 && a[1] != 1) || (a[2] != 0 && a[2] != 1))
      return invalidArgumentError("broadcast_binary_grad: wrt and accumulate "
                                  "must be 0 or 1");
    s.wrtRhs = a[1] != 0;
    s.accumulate = a[2] != 0;
  }
  size_t r = size_t(a[head - 1]);
  s.out.assign(a.begin() + long(head), a.begin() + long(head + r));
  s.lhs.assign(a.begin() + long(head + r), a.begin() + long(head + 2 * r));
  s.rhs.assign(a.begin() + long(head + 2 * r), a.end());
  for (const auto *shape : {&s.out, &s.lhs, &s.rhs})
    for (int64_t d : *shape)
      if (d <= 0)
        return invalidArgumentError("broadcast shapes must be positive");
  ref::Shape out;
  if (!ref::inferBroadcast(s.lhs, s.rhs, out).isOk() || out != s.out)
    return invalidArgumentError("broadcast shapes " +
                                ref::shapeToString(s.lhs) + " and " +
                                ref::shapeToString(s.rhs) +
                                " do not broadcast to " +
                                ref::shapeToString(s.out));
  return Status::ok();
}

Status vectorExtents(const fb::VectorT &v, std::vector<int64_t> &srcs,
                     std::vector<int64_t> &dsts) {
  const VectorSignature &sig = vectorSignature(v.op);
  std::string name = sig.name;
  if ((sig.numSrcs >= 0 && int(v.srcs.size()) != sig.numSrcs) ||
      int(v.dsts.size()) != sig.numDsts)
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
  if (v.op == Op::BroadcastBinaryGrad) {
    // dy and the forward operands its formula reads.
    BroadcastShape b;
    KILN_RETURN_IF_ERROR(decodeBroadcast(v, b));
    bool lhs = false, rhs = false;
    broadcastGradReads(b.kind, b.wrtRhs, lhs, rhs);
    if (int(v.srcs.size()) != 1 + int(lhs) + int(rhs) || v.dsts.size() != 1)
      return invalidArgumentError(
          name + " takes dy and the " +
          std::to_string(int(lhs) + int(rhs)) +
          " forward operands its formula reads, and one destination");
    srcs = {shapeElements(b.out)};
    if (lhs)
      srcs.push_back(shapeElements(b.lhs));
    if (rhs)
      srcs.push_back(shapeElements(b.rhs));
    dsts = {shapeElements(b.wrtRhs ? b.rhs : b.lhs)};
    return Status::ok();
  }
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
  case Op::Activation:
  case Op::ActivationGrad:
    if (v.iattrs[0] < 0 || v.iattrs[0] > 4)
      return invalidArgumentError(name + ": kind must be one of 0..4");
    srcs.assign(v.op == Op::Activation ? 1 : 2, e);
    dsts = {e};
    break;
  case Op::BroadcastBinary: {
    BroadcastShape b;
    KILN_RETURN_IF_ERROR(decodeBroadcast(v, b));
    srcs = {shapeElements(b.lhs), shapeElements(b.rhs)};
    dsts = {shapeElements(b.out)};
    break;
  }
  case Op::BroadcastBinaryGrad:
    break; // above
  case Op::Dropout:
    if (!(v.fattrs[0] >= 0.0 && v.fattrs[0] < 1.0))
      return invalidArgumentError(name + ": ratio must be in [0, 1)");
    if (v.iattrs[1] < 0 || v.iattrs[1] > int64_t(UINT32_MAX) ||
        v.iattrs[2] < 0)
      return invalidArgumentError(name + ": stream must be a 32-bit value "
                                         "and the first index non-negative");
    srcs = {e, 1};
    dsts = {e};
    break;
  case Op::DepthwiseConv:
  case Op::DepthwiseConvGradData:
  case Op::DepthwiseConvGradFilter: {
    DepthwiseShape s;
    KILN_RETURN_IF_ERROR(decodeDepthwiseShape(v.iattrs, s));
    int64_t x = s.n * s.h * s.w * s.c, y = s.n * s.oh * s.ow * s.c,
            w = s.kh * s.kw * s.c;
    if (v.op == Op::DepthwiseConv) {
      srcs = {x, w};
      dsts = {y};
    } else if (v.op == Op::DepthwiseConvGradData) {
      srcs = {y, w};
      dsts = {x};
    } else {
      srcs = {x, y};
      dsts = {w};
    }
    break;
  }
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
