//===- Isa.h - The instruction set of the systolic target ------*- C++ -*-===//
//
// Part of Kiln. The instructions are the FlatBuffers tables of
// schema/program.fbs (Dma, MatMul, Vector, AllReduce); this header gives the
// operand conventions of the vector operations, which the schema leaves to a
// table so that one Vector table serves all of them.
//
// A vector operation works on `rows` x `channels` elements stored row-major
// ("E" below, rows*channels elements), per-channel vectors of `channels`
// elements ("C") and scalars ("1"). Operands are Regions: a buffer and an
// element offset; every operand lies on chip. Elementwise arithmetic is fp32;
// reductions accumulate in higher precision and round once (a tree reduction
// in hardware); writing to a bf16 buffer rounds to nearest even.
//
//   op                 srcs                         dsts attrs Fill - y:E
//   f[value] Copy               x:E                          y:E Add a:E b:E
//   y:E Scale              x:E                          y:E f[s] Relu x:E y:E
//   ReluGrad           dy:E y:E                     dx:E (dy where y > 0)
//   ChannelAdd         x:E b:C                      y:E
//   ChannelSum         x:E                          s:C (+=)
//   ChannelMoments     x:E                          s:C q:C (+= sum, sum sq)
//   ChannelCenteredDot dy:E x:E mean:C              s:C d:C (+= dy, dy(x-mean))
//   BnStats            sum sumsq gamma beta rm rv   mean var scale shift rm'
//   rv'
//                      (all C)                      (all C)    f[count, eps,
//                      momentum]
//   ChannelAffine      x:E a:C b:C                  y:E = x*a+b  i[relu]
//   BnGradCoeffs       sdy sdyxc gamma mean var     dgamma dbeta A B K (all C)
//                      (all C)                                  f[count, eps]
//   ChannelAffine2     dy:E x:E A:C B:C K:C         dx:E = dy*A + x*B + K
//   MaxPool            x                            y
//   i[N,H,W,C,kh,kw,sh,sw,pt,pb,pl,pr] MaxPoolGrad        dy x dx       (same)
//   AvgPool            x                            y        (same)
//   AvgPoolGrad        dy                           dx       (same)
//   GlobalAvgPool      x:[N,HW,C]                   y:[N,C]  i[N,HW,C]
//   GlobalAvgPoolGrad  dy:[N,C]                     dx       i[N,HW,C]
//   XentLoss           logits:E labels:rows         loss:1 (+=)  f[smoothing,
//   1/batch] XentGrad           logits:E labels:rows dloss:1 dlogits:E
//   f[smoothing, 1/batch] SgdUpdate          w g v lr:1                   w' v'
//   f[momentum, decay, nesterov] SumSquares         x:E s:1 (+=) LarsUpdate w g
//   v lr:1 |w|^2:1 |g|^2:1   w' v'    f[momentum, eta, decay, eps,
//                                                              skip, nesterov]
//   LearningRate       step:1 params:channels       lr:1     i[schedule]
//   (scalar unit)
//
// The ops of newer CNNs (program version 1.1):
//
//   Activation          x:E -> y:E, i[kind]: kiln/ref/activation.h's kinds
//                       (sigmoid, silu, relu6, hard_sigmoid, hard_swish)
//   ActivationGrad      dy:E x:E -> dx:E, i[kind] (x: the forward input)
//   BroadcastBinary     lhs rhs -> y, i[kind, r, y shape, lhs shape, rhs
//                       shape] (rank r; kinds add, sub, mul, div; numpy
//                       broadcasting without rank extension)
//   BroadcastBinaryGrad dy [lhs] [rhs] -> g, i[kind, wrt, accumulate, r,
//                       dy shape, lhs shape, rhs shape]: dy times the
//                       partial derivative, summed to the operand's shape;
//                       the sources are dy and exactly the forward operands
//                       the formula reads; accumulate: g += instead of =
//   Dropout             x:E step:1 -> y:E, f[ratio] i[seed, stream, first
//                       index]: element k's logical index is first + k
//                       (kiln/ref/philox.h's mask rule, bit for bit)
//   DepthwiseConv       x w -> y            i[N,H,W,C,kh,kw,sh,sw,pt,pb,pl,
//   DepthwiseConvGradData dy w -> dx          pr,dh,dw], filter [kh,kw,1,C]
//   DepthwiseConvGradFilter x dy -> dw (+=)
//
// Pooling takes an optional 13th attribute, ceil mode.
//
// Pooling and the optimizer updates follow the reference kernels
// (kiln/ref/pool.h, optimizer.h, loss.h, batchnorm.h) exactly; the
// LearningRate schedules are kiln/ref/schedule.h's with the parameter slots
// of the kiln.learning_rate op.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_ISA_H
#define KILN_SIM_ISA_H

#include "kiln/base/dtype.h"
#include "kiln/base/status.h"
#include "program_generated.h"

#include <cstdint>

namespace kiln::sim {

/// Which unit executes a vector-table instruction.
enum class VectorUnit { Vector, Scalar };

struct VectorSignature {
  const char *name;
  /// -1: checked per op (BroadcastBinaryGrad's sources are the operands
  /// its formula reads).
  int numSrcs;
  int numDsts;
  int numFattrs;
  /// -1: any number (LearningRate's params are counted by `channels`).
  int numIattrs;
  VectorUnit unit;
};

/// The operand counts of a vector operation (the table above).
const VectorSignature &vectorSignature(fb::VectorOp op);

/// Kiln's element type (kiln/base/dtype.h) of a program's dtype.
kiln::DType toDType(fb::DType dtype);
/// Bytes per element of a dtype.
int64_t dtypeBytes(fb::DType dtype);
/// "f32", ...
const char *dtypeName(fb::DType dtype);

/// Number of elements of a shape (1 for rank 0).
int64_t shapeElements(const std::vector<int64_t> &shape);

} // namespace kiln::sim

#endif // KILN_SIM_ISA_H

namespace kiln::sim {

/// Output height and width of a pooling window op from its 12 iattrs
/// [N,H,W,C,kh,kw,sh,sw,pt,pb,pl,pr].
/// A 13th attribute, when present, is the ceil mode (kiln/ref/window.h's
/// rule: the last window may overhang the input, and the overhang is
/// padding).
struct PoolShape {
  int64_t n, h, w, c, kh, kw, sh, sw, pt, pb, pl, pr, oh, ow;
  bool ceil;
};

/// Decodes and checks the attributes of a pooling op (positive sizes,
/// paddings smaller than the window, a non-empty output).
Status decodePoolShape(const std::vector<int64_t> &iattrs, PoolShape &shape);

/// The shape of a depthwise convolution op from its 14 iattrs
/// [N,H,W,C,kh,kw,sh,sw,pt,pb,pl,pr,dh,dw] (filter [kh,kw,1,C]) and its
/// output size.
struct DepthwiseShape {
  int64_t n, h, w, c, kh, kw, sh, sw, pt, pb, pl, pr, dh, dw, oh, ow;
};
Status decodeDepthwiseShape(const std::vector<int64_t> &iattrs,
                            DepthwiseShape &shape);

/// The attributes of BroadcastBinary ([kind, rank, out, lhs, rhs]) and
/// BroadcastBinaryGrad ([kind, wrt, accumulate, rank, dy, lhs, rhs]).
struct BroadcastShape {
  int64_t kind = 0;
  bool wrtRhs = false, accumulate = false;
  std::vector<int64_t> out, lhs, rhs;
};
Status decodeBroadcast(const fb::VectorT &vec, BroadcastShape &shape);
/// Which forward operands the gradient of broadcast `kind` with respect to
/// one operand reads (false for an unknown kind).
bool broadcastGradReads(int64_t kind, bool wrtRhs, bool &lhs, bool &rhs);

/// The number of elements each source and destination of a vector
/// instruction spans, after checking its operand counts and attributes.
Status vectorExtents(const fb::VectorT &vec, std::vector<int64_t> &srcs,
                     std::vector<int64_t> &dsts);

} // namespace kiln::sim
