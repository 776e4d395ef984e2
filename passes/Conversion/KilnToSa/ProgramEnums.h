//===- ProgramEnums.h - The sa dialect's enums <-> program.fbs's -*- C++ -*-===//
//
// The sa dialect's enums (SaBase.td) have the values of the program schema's
// (systolic/schema/program.fbs) so that the planner's buffers become sa ops
// and sa ops become program tables by a cast. These conversions are the only
// place the two meet; the static_asserts below make any drift (a renumbered,
// renamed, added or removed enumerator on either side) fail to compile.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_PROGRAMENUMS_H
#define KILN_PASSES_CONVERSION_KILNTOSA_PROGRAMENUMS_H

#include "dialects/Sa/IR/SaOps.h"

#include "program_generated.h"

#include <cstdint>

namespace kiln::sa {

// One enumerator: the same name has the same value on both sides.
#define KILN_SA_SAME(SaEnum, FbEnum, Case)                                     \
  static_assert(int64_t(::kiln::sa::SaEnum::Case) ==                           \
                    int64_t(::kiln::sim::fb::FbEnum::Case),                    \
                "sa::" #SaEnum "::" #Case " differs from program.fbs")
// One enum: both end at the same enumerator, so neither has one more.
#define KILN_SA_SAME_MAX(SaEnum, FbEnum)                                       \
  static_assert(int64_t(::kiln::sa::getMaxEnumValFor##SaEnum()) ==             \
                    int64_t(::kiln::sim::fb::FbEnum::MAX),                     \
                "sa::" #SaEnum " and program.fbs's " #FbEnum                   \
                " have different enumerators")

KILN_SA_SAME(DType, DType, F32);
KILN_SA_SAME(DType, DType, BF16);
KILN_SA_SAME(DType, DType, I32);
KILN_SA_SAME_MAX(DType, DType);

KILN_SA_SAME(Space, Space, HBM);
KILN_SA_SAME(Space, Space, OnChip);
KILN_SA_SAME_MAX(Space, Space);

KILN_SA_SAME(Role, Role, Temp);
KILN_SA_SAME(Role, Role, Input);
KILN_SA_SAME(Role, Role, Output);
KILN_SA_SAME(Role, Role, Parameter);
KILN_SA_SAME(Role, Role, State);
KILN_SA_SAME(Role, Role, Constant);
KILN_SA_SAME_MAX(Role, Role);

KILN_SA_SAME(Init, Init, None);
KILN_SA_SAME(Init, Init, Zeros);
KILN_SA_SAME(Init, Init, Ones);
KILN_SA_SAME(Init, Init, HeNormal);
KILN_SA_SAME(Init, Init, Normal);
KILN_SA_SAME(Init, Init, Value);
KILN_SA_SAME_MAX(Init, Init);

KILN_SA_SAME(HostLayout, HostLayout, Identity);
KILN_SA_SAME(HostLayout, HostLayout, SpaceToDepth2);
KILN_SA_SAME_MAX(HostLayout, HostLayout);

KILN_SA_SAME(VectorOpKind, VectorOp, Fill);
KILN_SA_SAME(VectorOpKind, VectorOp, Copy);
KILN_SA_SAME(VectorOpKind, VectorOp, Add);
KILN_SA_SAME(VectorOpKind, VectorOp, Relu);
KILN_SA_SAME(VectorOpKind, VectorOp, ReluGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelAdd);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelSum);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelMoments);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelCenteredDot);
KILN_SA_SAME(VectorOpKind, VectorOp, BnStats);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelAffine);
KILN_SA_SAME(VectorOpKind, VectorOp, BnGradCoeffs);
KILN_SA_SAME(VectorOpKind, VectorOp, ChannelAffine2);
KILN_SA_SAME(VectorOpKind, VectorOp, MaxPool);
KILN_SA_SAME(VectorOpKind, VectorOp, MaxPoolGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, AvgPool);
KILN_SA_SAME(VectorOpKind, VectorOp, AvgPoolGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, GlobalAvgPool);
KILN_SA_SAME(VectorOpKind, VectorOp, GlobalAvgPoolGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, XentLoss);
KILN_SA_SAME(VectorOpKind, VectorOp, XentGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, SgdUpdate);
KILN_SA_SAME(VectorOpKind, VectorOp, SumSquares);
KILN_SA_SAME(VectorOpKind, VectorOp, LarsUpdate);
KILN_SA_SAME(VectorOpKind, VectorOp, LearningRate);
KILN_SA_SAME(VectorOpKind, VectorOp, Scale);
KILN_SA_SAME(VectorOpKind, VectorOp, Activation);
KILN_SA_SAME(VectorOpKind, VectorOp, ActivationGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, BroadcastBinary);
KILN_SA_SAME(VectorOpKind, VectorOp, BroadcastBinaryGrad);
KILN_SA_SAME(VectorOpKind, VectorOp, Dropout);
KILN_SA_SAME(VectorOpKind, VectorOp, DepthwiseConv);
KILN_SA_SAME(VectorOpKind, VectorOp, DepthwiseConvGradData);
KILN_SA_SAME(VectorOpKind, VectorOp, DepthwiseConvGradFilter);
KILN_SA_SAME_MAX(VectorOpKind, VectorOp);

#undef KILN_SA_SAME
#undef KILN_SA_SAME_MAX

// The conversions, in both directions, that the checks above make casts.
inline sim::fb::DType toProgram(DType v) { return sim::fb::DType(v); }
inline sim::fb::Space toProgram(Space v) { return sim::fb::Space(v); }
inline sim::fb::Role toProgram(Role v) { return sim::fb::Role(v); }
inline sim::fb::Init toProgram(Init v) { return sim::fb::Init(v); }
inline sim::fb::HostLayout toProgram(HostLayout v) {
  return sim::fb::HostLayout(v);
}
inline sim::fb::VectorOp toProgram(VectorOpKind v) {
  return sim::fb::VectorOp(v);
}

inline DType fromProgram(sim::fb::DType v) { return DType(v); }
inline Space fromProgram(sim::fb::Space v) { return Space(v); }
inline Role fromProgram(sim::fb::Role v) { return Role(v); }
inline Init fromProgram(sim::fb::Init v) { return Init(v); }
inline HostLayout fromProgram(sim::fb::HostLayout v) { return HostLayout(v); }
inline VectorOpKind fromProgram(sim::fb::VectorOp v) { return VectorOpKind(v); }

} // namespace kiln::sa

#endif // KILN_PASSES_CONVERSION_KILNTOSA_PROGRAMENUMS_H
