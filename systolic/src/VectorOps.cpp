//===- VectorOps.cpp - The vector and scalar units' operations ------------===//
//
// Semantics in kiln/sim/Isa.h; formulas follow the reference kernels
// (kiln/ref/*.h) so that the simulator and kiln-run agree to rounding.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/activation.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/conv.h"
#include "kiln/ref/elementwise.h"
#include "kiln/ref/philox.h"
#include "kiln/ref/schedule.h"
#include "kiln/sim/Functional.h"
#include "kiln/sim/Isa.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kiln::sim {

namespace {

/// Pointers to the operands of one vector instruction, and rounding of the
/// values written to bf16 destinations.
struct Operands {
  std::vector<const float *> src;
  std::vector<float *> dst;
  std::vector<bool> dstBf16;

  float store(size_t d, float v) const {
    return dstBf16[d] ? ref::roundToBf16(v) : v;
  }
  void set(size_t d, int64_t i, float v) const { dst[d][i] = store(d, v); }
};

void pool(const PoolShape &s, fb::VectorOp op, const Operands &o) {
  using Op = fb::VectorOp;
  if (op == Op::MaxPoolGrad || op == Op::AvgPoolGrad)
    for (int64_t i = 0; i < s.n * s.h * s.w * s.c; ++i)
      o.dst[0][i] = 0.0f;
  auto in = [&](int64_t n, int64_t h, int64_t w, int64_t c) {
    return ((n * s.h + h) * s.w + w) * s.c + c;
  };
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t oh = 0; oh < s.oh; ++oh)
      for (int64_t ow = 0; ow < s.ow; ++ow)
        for (int64_t c = 0; c < s.c; ++c) {
          int64_t outIdx = ((n * s.oh + oh) * s.ow + ow) * s.c + c;
          int64_t h0 = oh * s.sh - s.pt, w0 = ow * s.sw - s.pl;
          int64_t best = -1, count = 0;
          float bestVal = -std::numeric_limits<float>::infinity();
          double sum = 0;
          for (int64_t kh = 0; kh < s.kh; ++kh)
            for (int64_t kw = 0; kw < s.kw; ++kw) {
              int64_t h = h0 + kh, w = w0 + kw;
              if (h < 0 || h >= s.h || w < 0 || w >= s.w)
                continue;
              int64_t idx = in(n, h, w, c);
              ++count;
              if (op == Op::MaxPool || op == Op::MaxPoolGrad) {
                float v = o.src[op == Op::MaxPool ? 0 : 1][idx];
                // The first maximum in scan order, as the reference.
                if (best < 0 || v > bestVal) {
                  best = idx;
                  bestVal = v;
                }
              } else if (op == Op::AvgPool) {
                sum += o.src[0][idx];
              }
            }
          switch (op) {
          case Op::MaxPool:
            o.set(0, outIdx, bestVal);
            break;
          case Op::MaxPoolGrad:
            if (best >= 0) // a ceil-mode window always reads the input
              o.dst[0][best] = o.store(0, o.dst[0][best] + o.src[0][outIdx]);
            break;
          case Op::AvgPool:
            o.set(0, outIdx, float(sum / double(count)));
            break;
          default: { // AvgPoolGrad
            float g = float(double(o.src[0][outIdx]) / double(count));
            for (int64_t kh = 0; kh < s.kh; ++kh)
              for (int64_t kw = 0; kw < s.kw; ++kw) {
                int64_t h = h0 + kh, w = w0 + kw;
                if (h < 0 || h >= s.h || w < 0 || w >= s.w)
                  continue;
                int64_t idx = in(n, h, w, c);
                o.dst[0][idx] = o.store(0, o.dst[0][idx] + g);
              }
          }
          }
        }
}

/// `count` elements of an operand as a reference tensor of `shape`.
ref::Tensor tensorOf(const float *data, ref::Shape shape) {
  ref::Tensor t(std::move(shape));
  std::copy(data, data + t.size(), t.data.begin());
  return t;
}

/// Writes a reference kernel's result to destination `d` (rounded to bf16
/// for a bf16 buffer), or adds it with `accumulate`.
void writeResult(const Operands &o, size_t d, const ref::Tensor &t,
                 bool accumulate) {
  for (int64_t i = 0; i < t.size(); ++i)
    o.set(d, i, accumulate ? o.dst[d][i] + t[i] : t[i]);
}

/// The depthwise convolutions through the reference kernels (grouped, one
/// channel per group), which accumulate in double and round once: the
/// vector unit's reduction numerics.
void depthwise(const DepthwiseShape &s, fb::VectorOp op, const Operands &o) {
  ref::Conv2dAttrs a;
  a.strides = {s.sh, s.sw};
  a.padding = {s.pt, s.pb, s.pl, s.pr};
  a.dilations = {s.dh, s.dw};
  a.groups = s.c;
  ref::Shape x = {s.n, s.h, s.w, s.c}, y = {s.n, s.oh, s.ow, s.c},
             w = {s.kh, s.kw, 1, s.c};
  switch (op) {
  case fb::VectorOp::DepthwiseConv:
    writeResult(o, 0,
                ref::conv2d(tensorOf(o.src[0], x), tensorOf(o.src[1], w), a),
                false);
    break;
  case fb::VectorOp::DepthwiseConvGradData:
    writeResult(o, 0,
                ref::conv2dBackwardData(tensorOf(o.src[0], y),
                                        tensorOf(o.src[1], w), x, a),
                false);
    break;
  default:
    writeResult(o, 0,
                ref::conv2dBackwardFilter(tensorOf(o.src[0], x),
                                          tensorOf(o.src[1], y), w, a),
                true);
  }
}

void broadcast(const fb::VectorT &v, const Operands &o) {
  BroadcastShape b;
  // Checked by the loader (vectorExtents).
  (void)decodeBroadcast(v, b);
  auto kind = ref::BinaryKind(b.kind);
  if (v.op == fb::VectorOp::BroadcastBinary) {
    writeResult(o, 0,
                ref::broadcastBinary(kind, tensorOf(o.src[0], b.lhs),
                                     tensorOf(o.src[1], b.rhs)),
                false);
    return;
  }
  bool readsLhs = false, readsRhs = false;
  broadcastGradReads(b.kind, b.wrtRhs, readsLhs, readsRhs);
  ref::Tensor lhs, rhs;
  size_t next = 1;
  if (readsLhs)
    lhs = tensorOf(o.src[next++], b.lhs);
  if (readsRhs)
    rhs = tensorOf(o.src[next++], b.rhs);
  writeResult(o, 0,
              ref::broadcastBinaryBackward(
                  kind, b.wrtRhs, tensorOf(o.src[0], b.out),
                  readsLhs ? &lhs : nullptr, readsRhs ? &rhs : nullptr,
                  b.wrtRhs ? b.rhs : b.lhs),
              b.accumulate);
}

/// -sum_k q_k log softmax(x)_k for one row, and optionally softmax - q.
double xentRow(const float *x, int64_t k, int64_t label, double smoothing,
               double *grad) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < k; ++j)
    mx = std::max(mx, double(x[j]));
  double sum = 0;
  for (int64_t j = 0; j < k; ++j)
    sum += std::exp(double(x[j]) - mx);
  double lse = mx + std::log(sum), loss = 0;
  for (int64_t j = 0; j < k; ++j) {
    double q = smoothing / double(k) + (j == label ? 1.0 - smoothing : 0.0);
    double logp = double(x[j]) - lse;
    loss -= q * logp;
    if (grad)
      grad[j] = std::exp(logp) - q;
  }
  return loss;
}

Status learningRate(const Operands &o, int64_t numParams, int64_t kind) {
  const float *p = o.src[1];
  auto param = [&](int64_t i) { return i < numParams ? double(p[i]) : 0.0; };
  int64_t need[] = {1, 4, 5, 4, 5};
  if (numParams < need[kind])
    return invalidArgumentError("learning_rate: schedule needs " +
                                std::to_string(need[kind]) + " parameters");
  ref::Schedule s;
  switch (kind) {
  case 0:
    s = ref::Schedule::constant(param(0));
    break;
  case 1:
    s = ref::Schedule::linearWarmupLinearDecay(
        {param(0), param(1), param(2), int64_t(param(3))});
    break;
  case 2:
    s = ref::Schedule::warmupPolynomialDecay(
        {param(0), param(1), int64_t(param(2)), param(3), param(4)});
    break;
  case 3: {
    ref::StepDecayParams sp;
    sp.baseLr = param(0);
    sp.warmupInitLr = param(1);
    sp.warmupSteps = param(2);
    sp.factor = param(3);
    for (int64_t i = 4; i < numParams; ++i)
      sp.boundaries.push_back(int64_t(param(i)));
    s = ref::Schedule::stepDecay(sp);
    break;
  }
  default:
    s = ref::Schedule::cosineDecay(
        {param(0), param(1), param(2), int64_t(param(3)), param(4)});
  }
  kiln::Status check = ref::checkSchedule(s);
  if (!check.isOk())
    return invalidArgumentError("learning_rate: " + check.message());
  double step = o.src[0][0];
  if (step < 0)
    return invalidArgumentError("learning_rate: negative step");
  o.set(0, 0, float(ref::learningRate(s, int64_t(step))));
  return Status::ok();
}

} // namespace

Status executeVector(const Program &program, const fb::VectorT &v,
                     std::vector<std::vector<float>> &memory) {
  Operands o;
  for (const fb::Region &r : v.srcs)
    o.src.push_back(memory[r.buffer()].data() + r.offset());
  for (const fb::Region &r : v.dsts) {
    o.dst.push_back(memory[r.buffer()].data() + r.offset());
    o.dstBf16.push_back(program.buffers[r.buffer()]->dtype == fb::DType::BF16);
  }
  const int64_t rows = v.rows, ch = v.channels, e = rows * ch;
  const auto &f = v.fattrs;
  using Op = fb::VectorOp;
  switch (v.op) {
  case Op::Fill:
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i, float(f[0]));
    break;
  case Op::Copy:
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i, o.src[0][i]);
    break;
  case Op::Scale:
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i, float(f[0]) * o.src[0][i]);
    break;
  case Op::Add:
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i, o.src[0][i] + o.src[1][i]);
    break;
  case Op::Relu:
    for (int64_t i = 0; i < e; ++i) {
      float x = o.src[0][i];
      o.set(0, i, std::isnan(x) ? x : std::max(x, 0.0f));
    }
    break;
  case Op::ReluGrad:
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i, o.src[1][i] > 0.0f ? o.src[0][i] : 0.0f);
    break;
  case Op::ChannelAdd:
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ch; ++c)
        o.set(0, r * ch + c, o.src[0][r * ch + c] + o.src[1][c]);
    break;
  case Op::ChannelSum:
  case Op::ChannelMoments:
  case Op::ChannelCenteredDot: {
    std::vector<double> s(size_t(ch), 0.0), q(size_t(ch), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ch; ++c) {
        double x = o.src[0][r * ch + c];
        s[size_t(c)] += x;
        if (v.op == Op::ChannelMoments)
          q[size_t(c)] += x * x;
        else if (v.op == Op::ChannelCenteredDot)
          q[size_t(c)] += x * (double(o.src[1][r * ch + c]) - o.src[2][c]);
      }
    for (int64_t c = 0; c < ch; ++c) {
      o.set(0, c, float(o.dst[0][c] + s[size_t(c)]));
      if (v.op != Op::ChannelSum)
        o.set(1, c, float(o.dst[1][c] + q[size_t(c)]));
    }
    break;
  }
  case Op::BnStats: {
    double count = f[0], eps = f[1], momentum = f[2];
    for (int64_t c = 0; c < ch; ++c) {
      double mean = o.src[0][c] / count;
      double var = std::max(0.0, o.src[1][c] / count - mean * mean);
      double scale = o.src[2][c] / std::sqrt(var + eps);
      double unbiased = count > 1 ? var * count / (count - 1) : var;
      o.set(0, c, float(mean));
      o.set(1, c, float(var));
      o.set(2, c, float(scale));
      o.set(3, c, float(o.src[3][c] - mean * scale));
      o.set(4, c, float(momentum * o.src[4][c] + (1 - momentum) * mean));
      o.set(5, c, float(momentum * o.src[5][c] + (1 - momentum) * unbiased));
    }
    break;
  }
  case Op::ChannelAffine: {
    bool relu = v.iattrs[0] != 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ch; ++c) {
        float y = o.src[0][r * ch + c] * o.src[1][c] + o.src[2][c];
        o.set(0, r * ch + c, relu && !(y > 0.0f) && !std::isnan(y) ? 0.0f : y);
      }
    break;
  }
  case Op::BnGradCoeffs: {
    double count = f[0], eps = f[1];
    for (int64_t c = 0; c < ch; ++c) {
      double invStd = 1.0 / std::sqrt(double(o.src[4][c]) + eps);
      double dbeta = o.src[0][c], dgamma = o.src[1][c] * invStd;
      double a = o.src[2][c] * invStd;
      double b = -a * invStd * dgamma / count;
      double k = -a * dbeta / count - b * o.src[3][c];
      o.set(0, c, float(dgamma));
      o.set(1, c, float(dbeta));
      o.set(2, c, float(a));
      o.set(3, c, float(b));
      o.set(4, c, float(k));
    }
    break;
  }
  case Op::ChannelAffine2:
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < ch; ++c) {
        int64_t i = r * ch + c;
        o.set(0, i,
              o.src[0][i] * o.src[2][c] + o.src[1][i] * o.src[3][c] +
                  o.src[4][c]);
      }
    break;
  case Op::MaxPool:
  case Op::MaxPoolGrad:
  case Op::AvgPool:
  case Op::AvgPoolGrad: {
    PoolShape s;
    KILN_RETURN_IF_ERROR(decodePoolShape(v.iattrs, s));
    pool(s, v.op, o);
    break;
  }
  case Op::GlobalAvgPool:
  case Op::GlobalAvgPoolGrad: {
    int64_t n = v.iattrs[0], hw = v.iattrs[1], c = v.iattrs[2];
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < c; ++k) {
        if (v.op == Op::GlobalAvgPool) {
          double sum = 0;
          for (int64_t p = 0; p < hw; ++p)
            sum += o.src[0][(b * hw + p) * c + k];
          o.set(0, b * c + k, float(sum / double(hw)));
        } else {
          float g = float(double(o.src[0][b * c + k]) / double(hw));
          for (int64_t p = 0; p < hw; ++p)
            o.set(0, (b * hw + p) * c + k, g);
        }
      }
    break;
  }
  case Op::XentLoss:
  case Op::XentGrad: {
    double smoothing = f[0], invBatch = f[1];
    double total = 0;
    std::vector<double> grad(static_cast<size_t>(ch));
    for (int64_t r = 0; r < rows; ++r) {
      double label = o.src[1][r];
      if (!(label >= 0 && label < double(ch)) || label != std::floor(label))
        return invalidArgumentError(
            "label " + std::to_string(label) + " of row " + std::to_string(r) +
            " is not a class in [0, " + std::to_string(ch) + ")");
      bool wantGrad = v.op == Op::XentGrad;
      total += xentRow(o.src[0] + r * ch, ch, int64_t(label), smoothing,
                       wantGrad ? grad.data() : nullptr);
      if (wantGrad) {
        double dloss = o.src[2][0];
        for (int64_t c = 0; c < ch; ++c)
          o.set(0, r * ch + c, float(dloss * grad[size_t(c)] * invBatch));
      }
    }
    if (v.op == Op::XentLoss)
      o.set(0, 0, float(o.dst[0][0] + total * invBatch));
    break;
  }
  case Op::SgdUpdate: {
    double lr = o.src[3][0], m = f[0], wd = f[1];
    bool nesterov = f[2] != 0;
    for (int64_t i = 0; i < e; ++i) {
      double w = o.src[0][i], g = double(o.src[1][i]) + wd * w;
      double vel = m * o.src[2][i] + g;
      double step = nesterov ? g + m * vel : vel;
      o.set(0, i, float(w - lr * step));
      o.set(1, i, float(vel));
    }
    break;
  }
  case Op::SumSquares: {
    double s = 0;
    for (int64_t i = 0; i < e; ++i)
      s += double(o.src[0][i]) * o.src[0][i];
    o.set(0, 0, float(o.dst[0][0] + s));
    break;
  }
  case Op::LarsUpdate: {
    double lr = o.src[3][0], m = f[0], eta = f[1], wd = f[2], eps = f[3];
    bool skip = f[4] != 0, nesterov = f[5] != 0;
    double wn = std::sqrt(double(o.src[4][0])),
           gn = std::sqrt(double(o.src[5][0]));
    double trust = 1.0;
    if (!skip && wn > 0 && gn > 0)
      trust = eta * wn / (gn + wd * wn + eps);
    double decay = skip ? 0.0 : wd;
    for (int64_t i = 0; i < e; ++i) {
      double w = o.src[0][i], g = double(o.src[1][i]) + decay * w;
      double vel = m * o.src[2][i] + lr * trust * g;
      double step = nesterov ? m * vel + lr * trust * g : vel;
      o.set(0, i, float(w - step));
      o.set(1, i, float(vel));
    }
    break;
  }
  case Op::LearningRate:
    return learningRate(o, ch, v.iattrs[0]);
  case Op::Activation:
  case Op::ActivationGrad: {
    auto kind = ref::Activation(v.iattrs[0]);
    ref::Tensor x = tensorOf(o.src[v.op == Op::Activation ? 0 : 1], {e});
    writeResult(o, 0,
                v.op == Op::Activation
                    ? ref::activation(kind, x)
                    : ref::activationBackward(kind, tensorOf(o.src[0], {e}),
                                              x),
                false);
    break;
  }
  case Op::BroadcastBinary:
  case Op::BroadcastBinaryGrad:
    broadcast(v, o);
    break;
  case Op::Dropout: {
    double ratio = f[0];
    double step = o.src[1][0];
    if (!(step >= 0) || step != std::floor(step))
      return invalidArgumentError("dropout: step " + std::to_string(step) +
                                  " is not a non-negative integer");
    uint32_t threshold = ref::dropoutThreshold(ratio);
    float scale = ref::dropoutScale(ratio);
    auto seed = uint64_t(v.iattrs[0]);
    auto stream = uint32_t(v.iattrs[1]);
    auto first = uint64_t(v.iattrs[2]);
    for (int64_t i = 0; i < e; ++i)
      o.set(0, i,
            ref::dropoutKeeps(seed, uint64_t(step), stream, first + uint64_t(i),
                              threshold)
                ? o.src[0][i] * scale
                : 0.0f);
    break;
  }
  case Op::DepthwiseConv:
  case Op::DepthwiseConvGradData:
  case Op::DepthwiseConvGradFilter: {
    DepthwiseShape s;
    KILN_RETURN_IF_ERROR(decodeDepthwiseShape(v.iattrs, s));
    depthwise(s, v.op, o);
    break;
  }
  }
  return Status::ok();
}

} // namespace kiln::sim
