//===- kernels_test.cpp - oneDNN calls against the reference kernels ------===//
//
// Every call kind through Kernels::execute, compared with kiln_ref on several
// shapes, strides, paddings and dilations, in both weight-format policies and
// in the three activation layouts.

#include "exec_test_util.h"

#include "kiln/ref/conv.h"
#include "kiln/ref/dense.h"
#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/winograd.h"

#include <fmt/format.h>

namespace kiln::rt::exec::test {
namespace {

struct ConvCase {
  const char *name;
  std::vector<int64_t> input;  // NHWC
  std::vector<int64_t> filter; // HWIO
  std::array<int64_t, 2> strides;
  std::array<int64_t, 4> padding;
  std::array<int64_t, 2> dilations;
  int64_t groups = 1;
};

const ConvCase kConvCases[] = {
    {"3x3_same", {2, 7, 9, 3}, {3, 3, 3, 5}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
    {"3x3_s2_tf_same", {2, 8, 8, 4}, {3, 3, 4, 6}, {2, 2}, {0, 1, 0, 1}, {1, 1}},
    {"1x1_s2_projection", {3, 6, 6, 8}, {1, 1, 8, 16}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
    {"5x5_dilated", {1, 11, 10, 2}, {5, 5, 2, 3}, {1, 1}, {2, 2, 4, 4}, {2, 2}},
    {"7x7_s2_stem", {2, 16, 16, 3}, {7, 7, 3, 8}, {2, 2}, {3, 3, 3, 3}, {1, 1}},
    {"1x1_wide", {2, 4, 4, 32}, {1, 1, 32, 64}, {1, 1}, {0, 0, 0, 0}, {1, 1}},
    // Grouped (oneDNN's hwigo weights): 2 groups of 4 channels, depthwise
    // strided, depthwise with channel multiplier 2 and dilation.
    {"3x3_grouped2", {2, 7, 9, 8}, {3, 3, 4, 6}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 2},
    {"3x3_depthwise_s2", {2, 8, 8, 16}, {3, 3, 1, 16}, {2, 2}, {0, 1, 0, 1}, {1, 1}, 16},
    {"3x3_depthwise_x2", {1, 7, 6, 4}, {3, 3, 1, 8}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 4},
};

struct ConvParam {
  ConvCase conv;
  bool blocked;
  Layout layout;
};

void PrintTo(const ConvParam &p, std::ostream *os) {
  *os << p.conv.name << (p.blocked ? " blocked " : " hwio ")
      << layoutName(p.layout);
}

std::string paramName(const ::testing::TestParamInfo<ConvParam> &info) {
  return std::string(info.param.conv.name) +
         (info.param.blocked ? "_blocked" : "_hwio") + "_" +
         layoutName(info.param.layout);
}

ref::Conv2dAttrs attrsOf(const ConvCase &c) {
  ref::Conv2dAttrs attrs;
  attrs.strides = c.strides;
  attrs.padding = c.padding;
  attrs.dilations = c.dilations;
  attrs.groups = c.groups;
  return attrs;
}

/// A convolution call of `kind` with the case's strides, padding and
/// dilations.
Call convCall(CallKind kind, std::map<std::string, TensorRef> operands,
              const ConvCase &c) {
  Call call;
  call.kind = kind;
  call.operands = std::move(operands);
  call.strides = c.strides;
  call.padding = c.padding;
  call.dilations = c.dilations;
  call.groups = c.groups;
  return call;
}

/// The six tensors of a convolution's three directions.
struct ConvTensors {
  TensorRef x, w, y, dx, dw, dy;
};

/// Places a convolution's tensors, activations in `layout`.
ConvTensors placeConv(ArenaLayout &arena, const ConvCase &c,
                      const ref::Shape &yShape, Layout layout) {
  ConvTensors t;
  t.x = arena.place(c.input, DType::F32, layout);
  t.w = arena.place(c.filter);
  t.y = arena.place(yShape, DType::F32, layout);
  t.dx = arena.place(c.input, DType::F32, layout);
  t.dw = arena.place(c.filter);
  t.dy = arena.place(yShape, DType::F32, layout);
  return t;
}

/// Appends the forward, backward-data and backward-filter calls of `c`.
void addConvCalls(Manifest &m, const ConvTensors &t, const ConvCase &c) {
  m.calls.push_back(convCall(CallKind::Conv2dForward,
                             {{"input", t.x}, {"filter", t.w}, {"output", t.y}},
                             c));
  m.calls.push_back(convCall(
      CallKind::Conv2dBackwardData,
      {{"output_grad", t.dy}, {"filter", t.w}, {"input_grad", t.dx}}, c));
  m.calls.push_back(convCall(
      CallKind::Conv2dBackwardFilter,
      {{"input", t.x}, {"output_grad", t.dy}, {"filter_grad", t.dw}}, c));
}

/// Fills x, w and dy with random values, runs calls `first` to `first + 2`
/// (addConvCalls' three) and compares each direction with the reference.
void expectConvMatchesReference(uint8_t *a, Kernels &kernels, int32_t first,
                                const ConvTensors &t, const ConvCase &c,
                                const ref::Shape &yShape, double tolerance) {
  ref::Conv2dAttrs attrs = attrsOf(c);
  ref::Tensor xv = randomTensor(c.input, 1);
  ref::Tensor wv = randomTensor(c.filter, 2);
  ref::Tensor dyv = randomTensor(yShape, 3);
  storeTensor(a, t.x, xv);
  storeTensor(a, t.w, wv);
  storeTensor(a, t.dy, dyv);
  for (int32_t id = first; id < first + 3; ++id)
    kernels.execute(id);
  EXPECT_TRUE(
      closeTo(loadTensor(a, t.y), ref::conv2d(xv, wv, attrs), tolerance))
      << "forward; " << kernels.implementation(first);
  EXPECT_TRUE(closeTo(loadTensor(a, t.dx),
                      ref::conv2dBackwardData(dyv, wv, c.input, attrs),
                      tolerance))
      << "backward data; " << kernels.implementation(first + 1);
  EXPECT_TRUE(closeTo(loadTensor(a, t.dw),
                      ref::conv2dBackwardFilter(xv, dyv, c.filter, attrs),
                      tolerance))
      << "backward filter; " << kernels.implementation(first + 2);
}

class ConvKernelTest : public ::testing::TestWithParam<ConvParam> {};

TEST_P(ConvKernelTest, MatchesReference) {
  const ConvParam &p = GetParam();
  ref::Shape yShape;
  ASSERT_TRUE(ref::inferConv2dShape(p.conv.input, p.conv.filter,
                                    attrsOf(p.conv), yShape)
                  .isOk());
  ArenaLayout layout;
  ConvTensors t = placeConv(layout, p.conv, yShape, p.layout);
  Manifest m;
  m.arenaBytes = layout.bytes();
  addConvCalls(m, t, p.conv);
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk()) << arena.status().toString();
  KernelOptions options;
  options.blockedWeights = p.blocked;
  auto kernels = Kernels::create(m, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  expectConvMatchesReference((*arena)->data(), **kernels, 0, t, p.conv, yShape,
                             1e-4);
}

std::vector<ConvParam> convParams() {
  std::vector<ConvParam> out;
  for (const ConvCase &c : kConvCases)
    for (bool blocked : {true, false})
      out.push_back({c, blocked, Layout::None});
  // Other activation layouts, on two shapes.
  for (Layout l : {Layout::Nchw, Layout::NChw16c}) {
    out.push_back({kConvCases[0], true, l});
    out.push_back({kConvCases[5], true, l});
    out.push_back({kConvCases[7], true, l});
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvKernelTest,
                         ::testing::ValuesIn(convParams()), paramName);

/// With --conv-algorithm winograd, an f32 3x3 stride-1 convolution on
/// nChw16c runs as Winograd in all three directions and still matches the
/// reference (to a looser tolerance: its transforms round more); a strided
/// one, and any NHWC one, stays direct.
TEST(ConvKernelWinogradTest, EligibleConvolutionsMatchReference) {
  const ref::Shape xShape = {2, 12, 12, 16}, wShape = {3, 3, 16, 32};
  const ref::Shape yShape = {2, 12, 12, 32};
  const ConvCase same = {"same", xShape, wShape, {1, 1}, {1, 1, 1, 1}, {1, 1}};
  const ConvCase strided = {"strided", xShape, wShape, {2, 2}, {1, 1, 1, 1},
                            {1, 1}};
  for (Layout layout : {Layout::NChw16c, Layout::None}) {
    ArenaLayout arenaLayout;
    ConvTensors t = placeConv(arenaLayout, same, yShape, layout);
    TensorRef ys = arenaLayout.place({2, 6, 6, 32}, DType::F32, layout);
    Manifest m;
    m.arenaBytes = arenaLayout.bytes();
    addConvCalls(m, t, same);
    m.calls.push_back(
        convCall(CallKind::Conv2dForward,
                 {{"input", t.x}, {"filter", t.w}, {"output", ys}}, strided));
    auto arena = Arena::allocate(m.arenaBytes);
    ASSERT_TRUE(arena.isOk()) << arena.status().toString();
    KernelOptions options;
    options.convAlgorithm = ConvAlgorithm::Winograd;
    auto kernels = Kernels::create(m, (*arena)->data(), options);
    ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
    // The runtime's own Winograd (winograd_test.cpp) takes all three
    // passes in either layout; oneDNN's, nChw16c only.
    for (int32_t id = 0; id < 4; ++id) {
      bool winograd =
          (*kernels)->implementation(id).find("wino") != std::string::npos;
      bool ours = id < 3 && Winograd3x3::available();
      bool theirs =
          layout == Layout::NChw16c && id < 3 && oneDnnHasAvx512Kernels();
      EXPECT_EQ(winograd, ours || theirs)
          << layoutName(layout) << " call " << id << ": "
          << (*kernels)->implementation(id);
    }
    expectConvMatchesReference((*arena)->data(), **kernels, 0, t, same, yShape,
                               1e-3);
  }
}

/// A forward convolution with a bias and post-ops (a fused inference batch
/// norm, residual and relu): output = relu(conv + bias + residual), with
/// the residual in its own buffer (copied first) or in the output's.
class ConvPostOpsTest : public ::testing::TestWithParam<ConvParam> {};

TEST_P(ConvPostOpsTest, MatchesReference) {
  const ConvParam &p = GetParam();
  ref::Conv2dAttrs attrs = attrsOf(p.conv);
  ref::Shape yShape;
  ASSERT_TRUE(
      ref::inferConv2dShape(p.conv.input, p.conv.filter, attrs, yShape).isOk());
  const int64_t channels = yShape[3];

  ArenaLayout layout;
  TensorRef x = layout.place(p.conv.input, DType::F32, p.layout);
  TensorRef w = layout.place(p.conv.filter);
  TensorRef bias = layout.place({channels});
  TensorRef residual = layout.place(yShape, DType::F32, p.layout);
  TensorRef y = layout.place(yShape, DType::F32, p.layout);
  TensorRef inPlace = layout.place(yShape, DType::F32, p.layout);
  TensorRef biased = layout.place(yShape, DType::F32, p.layout);

  Manifest m;
  m.arenaBytes = layout.bytes();
  Call c = convCall(CallKind::Conv2dForward,
                    {{"input", x},
                     {"filter", w},
                     {"output", y},
                     {"bias", bias},
                     {"residual", residual}},
                    p.conv);
  c.relu = true;
  m.calls.push_back(c);
  c.operands["output"] = c.operands["residual"] = inPlace;
  m.calls.push_back(c);
  // A bias alone.
  c.operands = {
      {"input", x}, {"filter", w}, {"output", biased}, {"bias", bias}};
  c.relu = false;
  m.calls.push_back(c);

  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk()) << arena.status().toString();
  KernelOptions options;
  options.blockedWeights = p.blocked;
  auto kernels = Kernels::create(m, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();

  ref::Tensor xv = randomTensor(p.conv.input, 1);
  ref::Tensor wv = randomTensor(p.conv.filter, 2);
  ref::Tensor bv = randomTensor({channels}, 3);
  ref::Tensor rv = randomTensor(yShape, 4);
  uint8_t *a = (*arena)->data();
  storeTensor(a, x, xv);
  storeTensor(a, w, wv);
  storeTensor(a, bias, bv);
  storeTensor(a, residual, rv);
  storeTensor(a, inPlace, rv);
  for (int32_t id = 0; id < 3; ++id)
    (*kernels)->execute(id);

  ref::Tensor withBias = ref::conv2d(xv, wv, attrs);
  for (int64_t i = 0; i < withBias.size(); ++i)
    withBias[i] += bv[i % channels];
  ref::Tensor full = withBias;
  for (int64_t i = 0; i < full.size(); ++i)
    full[i] = std::max(full[i] + rv[i], 0.0f);
  EXPECT_TRUE(closeTo(loadTensor(a, residual), rv, 0))
      << "the residual's own buffer is left alone";
  EXPECT_TRUE(closeTo(loadTensor(a, y), full, 1e-4))
      << (*kernels)->implementation(0);
  EXPECT_TRUE(closeTo(loadTensor(a, inPlace), full, 1e-4))
      << (*kernels)->implementation(1);
  EXPECT_TRUE(closeTo(loadTensor(a, biased), withBias, 1e-4))
      << (*kernels)->implementation(2);
}

INSTANTIATE_TEST_SUITE_P(Shapes, ConvPostOpsTest,
                         ::testing::ValuesIn(convParams()), paramName);

/// bf16 operands with f32 results: the products of bf16 values are exact in
/// f32, so the reference on bf16-rounded inputs matches to f32 accumulation.
TEST(ConvKernelBf16Test, ForwardAndBackwardMatchReferenceOnRoundedInputs) {
  if (!oneDnnHasAvx512Kernels())
    GTEST_SKIP() << "oneDNN has no bf16 convolutions without AVX-512";
  ref::Conv2dAttrs attrs;
  attrs.padding = {1, 1, 1, 1};
  ref::Shape xs = {2, 6, 6, 16}, ws = {3, 3, 16, 32}, ys = {2, 6, 6, 32};
  ArenaLayout layout;
  TensorRef x = layout.place(xs, DType::BF16);
  TensorRef w = layout.place(ws, DType::BF16);
  TensorRef y = layout.place(ys, DType::F32);
  TensorRef dy = layout.place(ys, DType::BF16);
  TensorRef dw = layout.place(ws, DType::F32);
  Manifest m;
  m.arenaBytes = layout.bytes();
  Call fwd;
  fwd.kind = CallKind::Conv2dForward;
  fwd.operands = {{"input", x}, {"filter", w}, {"output", y}};
  fwd.padding = attrs.padding;
  Call bwd = fwd;
  bwd.kind = CallKind::Conv2dBackwardFilter;
  bwd.operands = {{"input", x}, {"output_grad", dy}, {"filter_grad", dw}};
  m.calls = {fwd, bwd};
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(m, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor xv = ref::roundToBf16(randomTensor(xs, 4));
  ref::Tensor wv = ref::roundToBf16(randomTensor(ws, 5));
  ref::Tensor dyv = ref::roundToBf16(randomTensor(ys, 6));
  storeTensor((*arena)->data(), x, xv);
  storeTensor((*arena)->data(), w, wv);
  storeTensor((*arena)->data(), dy, dyv);
  (*kernels)->execute(0);
  (*kernels)->execute(1);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), y), ref::conv2d(xv, wv, attrs),
                      1e-4))
      << (*kernels)->implementation(0);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), dw),
                      ref::conv2dBackwardFilter(xv, dyv, ws, attrs), 1e-4))
      << (*kernels)->implementation(1);
}

/// One bf16 backward convolution call of `kind` (filter or input gradient)
/// on `conv`'s shapes: its two operands bf16-rounded random values (seeds
/// `seed` and `seed + 1`), its result of `gradType`, planned under
/// `algorithm` and executed `executions` times. `expected` is the
/// reference's result on the same operands, rounded like the result.
struct Bf16BackwardRun {
  std::string impl;
  ref::Tensor actual, expected;
  double tolerance = 0;
};
void runBf16Backward(CallKind kind, const ConvCase &conv, DType gradType,
                     ConvAlgorithm algorithm, int executions, uint64_t seed,
                     Bf16BackwardRun &run) {
  bool filterGrad = kind == CallKind::Conv2dBackwardFilter;
  ref::Conv2dAttrs attrs = attrsOf(conv);
  ref::Shape ys;
  ASSERT_TRUE(ref::inferConv2dShape(conv.input, conv.filter, attrs, ys).isOk());
  // The operand besides the output gradient, and the result.
  const ref::Shape &operandShape = filterGrad ? conv.input : conv.filter;
  const ref::Shape &resultShape = filterGrad ? conv.filter : conv.input;
  ArenaLayout layout;
  TensorRef operand = layout.place(operandShape, DType::BF16);
  TensorRef dy = layout.place(ys, DType::BF16);
  TensorRef result = layout.place(resultShape, gradType);
  Manifest m;
  m.arenaBytes = layout.bytes();
  m.calls = {convCall(kind,
                      {{filterGrad ? "input" : "filter", operand},
                       {"output_grad", dy},
                       {filterGrad ? "filter_grad" : "input_grad", result}},
                      conv)};
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  KernelOptions options;
  options.convAlgorithm = algorithm;
  auto kernels = Kernels::create(m, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  run.impl = (*kernels)->implementation(0);
  ref::Tensor ov = ref::roundToBf16(randomTensor(operandShape, seed));
  ref::Tensor dyv = ref::roundToBf16(randomTensor(ys, seed + 1));
  storeTensor((*arena)->data(), operand, ov);
  storeTensor((*arena)->data(), dy, dyv);
  for (int i = 0; i < executions; ++i)
    (*kernels)->execute(0);
  run.actual = loadTensor((*arena)->data(), result);
  run.expected = filterGrad
                     ? ref::conv2dBackwardFilter(ov, dyv, conv.filter, attrs)
                     : ref::conv2dBackwardData(dyv, ov, conv.input, attrs);
  if (gradType == DType::BF16)
    run.expected = ref::roundToBf16(run.expected);
  run.tolerance = gradType == DType::BF16 ? 1e-2 : 1e-4;
}

/// The filter gradient of a bf16 convolution is a matrix product per thread
/// over its share of the batch under --conv-algorithm auto for 1x1 filters
/// with 64 channels in and out on outputs of at most 28x28 pixels, and for
/// larger filters with 128 columns and 32 output channels on 7x7 outputs,
/// strided ones on 14x14 outputs (after im2col, unless the filter is an
/// unpadded stride-1 1x1); otherwise, with a bf16 gradient, and with
/// direct, it stays a convolution. All match the reference on bf16-rounded
/// inputs, with one thread, and with two and three threads over 3 images
/// (unequal shares; with three, one image each).
TEST(ConvKernelBf16Test, FilterGradientAsMatmulsPerThread) {
  if (!oneDnnHasAvx512Kernels())
    GTEST_SKIP() << "oneDNN has no bf16 convolutions without AVX-512";
  struct Case {
    ref::Shape input, filter;
    std::array<int64_t, 2> strides;
    std::array<int64_t, 4> padding;
    DType gradType;
    ConvAlgorithm algorithm;
    bool matmul, im2col;
  };
  const Case cases[] = {
      {{3, 8, 8, 64}, {1, 1, 64, 80}, {1, 1}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, true, false},
      {{3, 28, 28, 64}, {1, 1, 64, 80}, {1, 1}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, true, false},
      {{3, 29, 29, 64}, {1, 1, 64, 80}, {1, 1}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      {{3, 7, 7, 64}, {1, 1, 64, 80}, {1, 1}, {0, 0, 0, 0}, DType::BF16,
       ConvAlgorithm::Auto, false, false},
      {{3, 7, 7, 64}, {1, 1, 64, 80}, {1, 1}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Direct, false, false},
      {{3, 7, 7, 32}, {1, 1, 32, 80}, {1, 1}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      // Output 28x28 (the odd input keeps its last column out).
      {{3, 56, 55, 64}, {1, 1, 64, 80}, {2, 2}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 14, 14, 64}, {1, 1, 64, 80}, {2, 2}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 58, 58, 64}, {1, 1, 64, 80}, {2, 2}, {0, 0, 0, 0}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      // 3x3: stride 1 on 7x7, not on 8x8 (72 input channels: the runtime's
      // Winograd takes stride-1 3x3 layers of multiples of 16); stride 2 on
      // 14x14 outputs, with same and TensorFlow-style (bottom and right
      // only) padding.
      {{3, 7, 7, 72}, {3, 3, 72, 80}, {1, 1}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 8, 8, 72}, {3, 3, 72, 80}, {1, 1}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      {{3, 28, 28, 64}, {3, 3, 64, 80}, {2, 2}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 14, 14, 64}, {3, 3, 64, 80}, {2, 2}, {0, 1, 0, 1}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 30, 30, 64}, {3, 3, 64, 80}, {2, 2}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      // A 5x3 filter with uneven padding: a 6x7 output.
      {{3, 8, 7, 64}, {5, 3, 64, 64}, {1, 1}, {0, 2, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      // Larger filters need 128 columns and 32 output channels: 3x3x16 ->
      // 32 qualifies, 3x3x8 -> 32 and 3x3x16 -> 16 do not.
      {{3, 14, 14, 16}, {3, 3, 16, 32}, {2, 2}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, true, true},
      {{3, 14, 14, 8}, {3, 3, 8, 32}, {2, 2}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, false, false},
      {{3, 14, 14, 16}, {3, 3, 16, 16}, {2, 2}, {1, 1, 1, 1}, DType::F32,
       ConvAlgorithm::Auto, false, false},
  };
  const int defaultThreads = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    ASSERT_TRUE(setComputeThreads(threads).isOk());
    for (const Case &c : cases) {
      SCOPED_TRACE(::testing::Message()
                   << threads << " threads, input " << c.input[1] << "x"
                   << c.input[2] << "x" << c.input[3] << ", filter "
                   << c.filter[0] << "x" << c.filter[1] << ", stride "
                   << c.strides[0]);
      const ConvCase conv = {"conv",    c.input,   c.filter,
                             c.strides, c.padding, {1, 1}};
      Bf16BackwardRun run;
      // Twice: the partial sums must not accumulate across calls.
      ASSERT_NO_FATAL_FAILURE(runBf16Backward(CallKind::Conv2dBackwardFilter,
                                              conv, c.gradType, c.algorithm,
                                              /*executions=*/2, 9, run));
      EXPECT_EQ(run.impl.find("matmul") != std::string::npos, c.matmul)
          << run.impl;
      EXPECT_EQ(run.impl.find("im2col") != std::string::npos, c.im2col)
          << run.impl;
      if (c.matmul)
        EXPECT_NE(run.impl.find(fmt::format("over {} parts", threads)),
                  std::string::npos)
            << run.impl;
      EXPECT_TRUE(closeTo(run.actual, run.expected, run.tolerance)) << run.impl;
    }
  }
  ASSERT_TRUE(setComputeThreads(defaultThreads).isOk());
}

/// The runtime's bf16 backward forms replace oneDNN's older jit kernels
/// only: a newer kernel (brgemm-based, AMX) is kept.
TEST(ConvKernelBf16Test, ReplacesOnlyTheOlderJitKernels) {
  if (!oneDnnHasAvx512Kernels())
    GTEST_SKIP() << "oneDNN has no bf16 convolutions without AVX-512";
  EXPECT_TRUE(isOlderBf16JitKernel("jit_bf16:avx512_core_bf16"));
  EXPECT_TRUE(isOlderBf16JitKernel("jit_bf16_1x1:avx512_core_bf16"));
  EXPECT_FALSE(isOlderBf16JitKernel("brgconv:avx512_core_bf16"));
  EXPECT_FALSE(isOlderBf16JitKernel("brgconv_bwd_w:avx512_core_amx"));
  EXPECT_FALSE(isOlderBf16JitKernel("jit:avx512_core"));
  EXPECT_FALSE(isOlderBf16JitKernel("gemm:jit"));
  EXPECT_FALSE(isOlderBf16JitKernel("jit_bf"));
  EXPECT_FALSE(isOlderBf16JitKernel(""));
}

/// The input gradient of a bf16 stride-1 convolution with a filter larger
/// than 1x1, at least 64 channels in and out and an image of at most 14x14
/// pixels is a forward convolution of the output gradient with the flipped
/// filter under --conv-algorithm auto; otherwise, and with direct, oneDNN's
/// backward-data kernel. Both match the reference on bf16-rounded inputs,
/// with f32 and bf16 input gradients, same and uneven padding.
TEST(ConvKernelBf16Test, BackwardDataAsForwardOnTheFlippedFilter) {
  if (!oneDnnHasAvx512Kernels())
    GTEST_SKIP() << "oneDNN has no bf16 convolutions without AVX-512";
  struct Case {
    ref::Shape input, filter;
    std::array<int64_t, 4> padding;
    std::array<int64_t, 2> strides;
    DType gradType;
    ConvAlgorithm algorithm;
    bool flipped;
  };
  // 72 channels on one side: the runtime's Winograd takes stride-1 3x3
  // layers of multiples of 16.
  const Case cases[] = {
      {{2, 7, 7, 72}, {3, 3, 72, 80}, {1, 1, 1, 1}, {1, 1}, DType::F32,
       ConvAlgorithm::Auto, true},
      {{2, 14, 13, 80}, {3, 3, 80, 72}, {1, 1, 1, 1}, {1, 1}, DType::BF16,
       ConvAlgorithm::Auto, true},
      // Uneven padding, a 5x3 filter: the output image is 6x7.
      {{2, 8, 7, 64}, {5, 3, 64, 64}, {0, 2, 1, 1}, {1, 1}, DType::F32,
       ConvAlgorithm::Auto, true},
      {{2, 15, 15, 72}, {3, 3, 72, 72}, {1, 1, 1, 1}, {1, 1}, DType::F32,
       ConvAlgorithm::Auto, false},
      {{2, 7, 7, 40}, {3, 3, 40, 72}, {1, 1, 1, 1}, {1, 1}, DType::F32,
       ConvAlgorithm::Auto, false},
      {{2, 8, 8, 64}, {3, 3, 64, 64}, {1, 1, 1, 1}, {2, 2}, DType::F32,
       ConvAlgorithm::Auto, false},
      {{2, 7, 7, 64}, {1, 1, 64, 64}, {0, 0, 0, 0}, {1, 1}, DType::F32,
       ConvAlgorithm::Auto, false},
      {{2, 7, 7, 72}, {3, 3, 72, 72}, {1, 1, 1, 1}, {1, 1}, DType::F32,
       ConvAlgorithm::Direct, false},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(::testing::Message()
                 << "input " << c.input[1] << "x" << c.input[2] << "x"
                 << c.input[3] << ", filter " << c.filter[0] << "x"
                 << c.filter[1]);
    const ConvCase conv = {"conv",    c.input, c.filter,
                           c.strides, c.padding, {1, 1}};
    Bf16BackwardRun run;
    ASSERT_NO_FATAL_FAILURE(runBf16Backward(CallKind::Conv2dBackwardData, conv,
                                            c.gradType, c.algorithm,
                                            /*executions=*/1, 11, run));
    EXPECT_EQ(run.impl.find("flipped") != std::string::npos, c.flipped)
        << run.impl;
    EXPECT_TRUE(closeTo(run.actual, run.expected, run.tolerance)) << run.impl;
  }
}

/// Reference matmul on logical (already transposed) operands.
ref::Tensor referenceMatmul(const ref::Tensor &a, const ref::Tensor &b,
                            bool ta, bool tb) {
  int64_t m = ta ? a.dim(1) : a.dim(0), k = ta ? a.dim(0) : a.dim(1);
  int64_t n = tb ? b.dim(0) : b.dim(1);
  ref::Tensor c({m, n});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += double(ta ? a.at(l, i) : a.at(i, l)) *
             double(tb ? b.at(j, l) : b.at(l, j));
      c.at(i, j) = float(s);
    }
  return c;
}

class MatmulKernelTest
    : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatmulKernelTest, MatchesReference) {
  auto [ta, tb] = GetParam();
  const int64_t m = 7, k = 13, n = 5;
  ref::Shape as = ta ? ref::Shape{k, m} : ref::Shape{m, k};
  ref::Shape bs = tb ? ref::Shape{n, k} : ref::Shape{k, n};
  ArenaLayout layout;
  TensorRef a = layout.place(as), b = layout.place(bs), c = layout.place({m, n});
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::Matmul;
  call.operands = {{"lhs", a}, {"rhs", b}, {"output", c}};
  call.transposeLhs = ta;
  call.transposeRhs = tb;
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor av = randomTensor(as, 7), bv = randomTensor(bs, 8);
  storeTensor((*arena)->data(), a, av);
  storeTensor((*arena)->data(), b, bv);
  (*kernels)->execute(0);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), c),
                      referenceMatmul(av, bv, ta, tb), 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Transposes, MatmulKernelTest,
                         ::testing::Combine(::testing::Bool(),
                                            ::testing::Bool()));

TEST(MatmulKernelTest, BatchedWithTransposedRhs) {
  const int64_t batch = 3, m = 4, k = 6, n = 5;
  ArenaLayout layout;
  TensorRef a = layout.place({batch, m, k}), b = layout.place({batch, n, k});
  TensorRef c = layout.place({batch, m, n});
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::Matmul;
  call.operands = {{"lhs", a}, {"rhs", b}, {"output", c}};
  call.transposeRhs = true;
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor av = randomTensor({batch, m, k}, 9);
  ref::Tensor bv = randomTensor({batch, n, k}, 10);
  storeTensor((*arena)->data(), a, av);
  storeTensor((*arena)->data(), b, bv);
  (*kernels)->execute(0);
  ref::Tensor cv = loadTensor((*arena)->data(), c);
  for (int64_t i = 0; i < batch; ++i) {
    ref::Tensor ai({m, k}), bi({n, k}), ci({m, n});
    std::copy_n(av.data.begin() + i * m * k, m * k, ai.data.begin());
    std::copy_n(bv.data.begin() + i * n * k, n * k, bi.data.begin());
    std::copy_n(cv.data.begin() + i * m * n, m * n, ci.data.begin());
    EXPECT_TRUE(closeTo(ci, referenceMatmul(ai, bi, false, true), 1e-5))
        << "batch " << i;
  }
}

class DenseKernelTest : public ::testing::TestWithParam<bool> {};

TEST_P(DenseKernelTest, MatchesReference) {
  bool withBias = GetParam();
  const int64_t n = 6, k = 20, m = 10;
  ArenaLayout layout;
  TensorRef x = layout.place({n, k}), w = layout.place({k, m});
  TensorRef bias = layout.place({m}), y = layout.place({n, m});
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::Dense;
  call.operands = {{"input", x}, {"weight", w}, {"output", y}};
  if (withBias)
    call.operands["bias"] = bias;
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor xv = randomTensor({n, k}, 11), wv = randomTensor({k, m}, 12);
  ref::Tensor bv = randomTensor({m}, 13);
  storeTensor((*arena)->data(), x, xv);
  storeTensor((*arena)->data(), w, wv);
  storeTensor((*arena)->data(), bias, bv);
  (*kernels)->execute(0);
  ref::Tensor expected = withBias ? ref::dense(xv, wv, bv) : ref::dense(xv, wv);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), y), expected, 1e-5));
}

INSTANTIATE_TEST_SUITE_P(Bias, DenseKernelTest, ::testing::Bool());

// The weight and bias gradients of a dense layer in one call, against x^T dy
// and the column sums of dy.
TEST(DenseBackwardWeightsKernelTest, MatchesReference) {
  const int64_t n = 6, k = 20, m = 10;
  ArenaLayout layout;
  TensorRef x = layout.place({n, k}), dy = layout.place({n, m});
  TensorRef dw = layout.place({k, m}), db = layout.place({m});
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::DenseBackwardWeights;
  call.operands = {{"input", x},
                   {"output_grad", dy},
                   {"weight_grad", dw},
                   {"bias_grad", db}};
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor xv = randomTensor({n, k}, 14), dyv = randomTensor({n, m}, 15);
  storeTensor((*arena)->data(), x, xv);
  storeTensor((*arena)->data(), dy, dyv);
  (*kernels)->execute(0);
  ref::Tensor sums({m});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < m; ++j)
      sums[j] += dyv.at(i, j);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), dw),
                      referenceMatmul(xv, dyv, true, false), 1e-5))
      << (*kernels)->implementation(0);
  EXPECT_TRUE(closeTo(loadTensor((*arena)->data(), db), sums, 1e-5));
}

class ReorderKernelTest
    : public ::testing::TestWithParam<std::tuple<Layout, Layout, DType>> {};

// A reorder keeps every logical element, whichever way and in either type.
TEST_P(ReorderKernelTest, KeepsEveryElement) {
  auto [from, to, dtype] = GetParam();
  ArenaLayout layout;
  TensorRef in = layout.place({3, 5, 7, 32}, dtype, from);
  TensorRef out = layout.place({3, 5, 7, 32}, dtype, to);
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::Reorder;
  call.operands = {{"input", in}, {"output", out}};
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  ref::Tensor value = randomTensor({3, 5, 7, 32}, 14);
  storeTensor((*arena)->data(), in, value);
  ref::Tensor stored = loadTensor((*arena)->data(), in); // bf16-rounded
  (*kernels)->execute(0);
  EXPECT_EQ(loadTensor((*arena)->data(), out).data, stored.data);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, ReorderKernelTest,
    ::testing::Values(
        std::make_tuple(Layout::Nhwc, Layout::NChw16c, DType::F32),
        std::make_tuple(Layout::NChw16c, Layout::Nhwc, DType::F32),
        std::make_tuple(Layout::Nhwc, Layout::NChw16c, DType::BF16),
        std::make_tuple(Layout::NChw16c, Layout::Nhwc, DType::BF16)));

TEST(KernelsTest, ProfileCountsCallsAndMultiplyAdds) {
  ArenaLayout layout;
  TensorRef a = layout.place({4, 8}), b = layout.place({8, 2});
  TensorRef c = layout.place({4, 2});
  Manifest manifest;
  manifest.arenaBytes = layout.bytes();
  Call call;
  call.kind = CallKind::Matmul;
  call.operands = {{"lhs", a}, {"rhs", b}, {"output", c}};
  manifest.calls = {call};
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  KernelOptions options;
  options.profile = true;
  auto kernels = Kernels::create(manifest, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk());
  for (int i = 0; i < 3; ++i)
    (*kernels)->execute(0);
  EXPECT_EQ((*kernels)->callCount(0), 3u);
  EXPECT_EQ((*kernels)->multiplyAdds(0), 4.0 * 2 * 8);
  EXPECT_EQ((*kernels)->summary(0), "[4x8] x [8x2] -> [4x2]");
}

TEST(KernelsDeathTest, OutOfRangeCallIdAborts) {
  Manifest manifest;
  manifest.arenaBytes = 64;
  auto arena = Arena::allocate(manifest.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(manifest, (*arena)->data(), KernelOptions());
  ASSERT_TRUE(kernels.isOk());
  EXPECT_DEATH((*kernels)->execute(3), "call id 3, but the manifest has 0");
}

TEST(ArenaTest, IsTwoMiBAlignedAndZeroed) {
  auto arena = Arena::allocate(5000);
  ASSERT_TRUE(arena.isOk());
  EXPECT_EQ(reinterpret_cast<uintptr_t>((*arena)->data()) % Arena::kAlignment,
            0u);
  kiln_rt_arena_ref_t ref = (*arena)->ref();
  EXPECT_EQ(ref.size, 5000);
  EXPECT_EQ(ref.stride, 1);
  EXPECT_EQ(ref.offset, 0);
  EXPECT_EQ(ref.aligned, (*arena)->data());
  for (int i = 0; i < 5000; ++i)
    ASSERT_EQ((*arena)->data()[i], 0) << i;
  EXPECT_FALSE(Arena::allocate(0).isOk());
}

} // namespace
} // namespace kiln::rt::exec::test
