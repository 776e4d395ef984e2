//===- winograd_test.cpp - The runtime's fused-tile Winograd F(4x4,3x3) ---===//
//
// Through Kernels, as the training step uses it: which calls it takes, and
// its results against the reference convolution on shapes that exercise
// the partial tiles at the image's edges, a last group of tiles only partly
// filled, one, two and three channel blocks on either side, both
// activation layouts, the epilogue, and thread counts.
//
//===----------------------------------------------------------------------===//

#include "exec_test_util.h"

#include "kiln/ref/conv.h"
#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/winograd.h"
#include "kiln/rt/kernel_rules.h"

#include <fmt/format.h>

#include <cstdlib>
#include <memory>

namespace kiln::rt::exec::test {
namespace {

constexpr const char *kImpl = "kiln_wino_4x3";

struct Shape3x3 {
  std::vector<int64_t> input; // NHWC
  int64_t outputs;
};

// 7x9 and 5x6 images end in partial tiles; 1x3 is a single partial tile
// row; 5x8x8 is 20 tiles, not a whole number of groups (12); 48 channels
// are three blocks, which the products take as a pair and a single;
// 2x28x28 is 98 tiles, several groups on each thread; the 99x101x64
// forward output (2.4 MiB, partial tiles) is written with streaming stores.
const Shape3x3 kShapes[] = {{{3, 7, 9, 16}, 32},
                            {{2, 5, 6, 48}, 16},
                            {{1, 1, 3, 16}, 48},
                            {{5, 8, 8, 32}, 32},
                            {{2, 28, 28, 16}, 16},
                            {{1, 99, 101, 16}, 64}};
// Wide layers (a transformed filter larger than at 128 x 128 channels),
// where the threads share one transformed filter, or split the filter
// gradient's output channels, and multiply sweeps of several groups:
// ResNet-50's 14x14x256 layer at batch 1 (16 tiles: a full group and a
// partial one, one per thread), 512 channels into 176 on 7x7 images (4
// tiles: a single partial group, so that the second thread has none; 11
// blocks of outputs, the filter gradient's split 5/6), and 256 channels
// into 144 on 9x5 images. Taken on AVX2 only (kernel_rules.h);
// WideLayersMatchReference below takes the kernel itself through several
// sweeps on any CPU.
const Shape3x3 kWideShapes[] = {
    {{1, 14, 14, 256}, 256}, {{1, 7, 7, 512}, 176}, {{1, 9, 5, 256}, 144}};
// bf16 takes images of at least 28x28 pixels and 64 channels (the forward
// and input gradient; kiln/rt/kernel_rules.h): 29x30 ends in partial tiles,
// 80 channels are five blocks.
const Shape3x3 kBf16Shapes[] = {{{1, 29, 30, 64}, 80}, {{2, 28, 28, 80}, 64}};

struct Param {
  Shape3x3 shape;
  Layout layout;
  /// Activations and the filter (filter gradients are f32 either way).
  DType dtype;
};

std::string describe(const Param &p) {
  const Shape3x3 &s = p.shape;
  return fmt::format("{}x{}x{}x{}_to_{}_{}_{}", s.input[0], s.input[1],
                     s.input[2], s.input[3], s.outputs, layoutName(p.layout),
                     dtypeInfo(p.dtype).name);
}

void PrintTo(const Param &p, std::ostream *os) { *os << describe(p); }

std::string paramName(const ::testing::TestParamInfo<Param> &info) {
  return describe(info.param);
}

std::vector<Param> params(bool withF32) {
  std::vector<Param> out;
  for (Layout layout : {Layout::None, Layout::NChw16c}) {
    if (withF32) {
      for (const Shape3x3 &s : kShapes)
        out.push_back({s, layout, DType::F32});
      for (const Shape3x3 &s : kWideShapes)
        out.push_back({s, layout, DType::F32});
    }
    for (const Shape3x3 &s : kBf16Shapes)
      out.push_back({s, layout, DType::BF16});
  }
  return out;
}

ref::Conv2dAttrs same3x3() {
  ref::Conv2dAttrs attrs;
  attrs.padding = {1, 1, 1, 1};
  return attrs;
}

Call call3x3(CallKind kind, std::map<std::string, TensorRef> operands) {
  Call call;
  call.kind = kind;
  call.operands = std::move(operands);
  call.padding = {1, 1, 1, 1};
  return call;
}

/// Forward, input gradient, filter gradient, forward with bias, residual
/// (in the output's own storage) and relu, forward with the output's
/// statistics, and forward with bias, residual (in a buffer of its own),
/// relu and statistics together, on `threads` threads; the results in `out`
/// (y, dx, dw, fused, y again, statistics, fused again, its statistics), in
/// logical order. With `bf16Values` the activations and the filter hold bf16
/// values whatever their type.
/// `algorithm` Auto expects every call on the fused-tile Winograd.
void run3x3(const Param &p, int threads, std::vector<ref::Tensor> &out,
            bool bf16Values = false,
            ConvAlgorithm algorithm = ConvAlgorithm::Auto) {
  const std::vector<int64_t> &xShape = p.shape.input;
  const std::vector<int64_t> wShape = {3, 3, xShape[3], p.shape.outputs};
  const std::vector<int64_t> yShape = {xShape[0], xShape[1], xShape[2],
                                       p.shape.outputs};
  ArenaLayout layout;
  TensorRef x = layout.place(xShape, p.dtype, p.layout);
  TensorRef w = layout.place(wShape, p.dtype);
  TensorRef y = layout.place(yShape, p.dtype, p.layout);
  TensorRef dy = layout.place(yShape, p.dtype, p.layout);
  TensorRef dx = layout.place(xShape, p.dtype, p.layout);
  TensorRef dw = layout.place(wShape);
  TensorRef bias = layout.place({p.shape.outputs});
  TensorRef fused = layout.place(yShape, p.dtype, p.layout);
  Manifest m;
  m.calls.push_back(call3x3(CallKind::Conv2dForward,
                            {{"input", x}, {"filter", w}, {"output", y}}));
  m.calls.push_back(
      call3x3(CallKind::Conv2dBackwardData,
              {{"output_grad", dy}, {"filter", w}, {"input_grad", dx}}));
  m.calls.push_back(
      call3x3(CallKind::Conv2dBackwardFilter,
              {{"input", x}, {"output_grad", dy}, {"filter_grad", dw}}));
  Call withEpilogue = call3x3(CallKind::Conv2dForward, {{"input", x},
                                                        {"filter", w},
                                                        {"output", fused},
                                                        {"bias", bias},
                                                        {"residual", fused}});
  withEpilogue.relu = true;
  m.calls.push_back(withEpilogue);
  TensorRef yAgain = layout.place(yShape, p.dtype, p.layout);
  TensorRef statistics = layout.place({2, p.shape.outputs});
  m.calls.push_back(
      call3x3(CallKind::Conv2dForward, {{"input", x},
                                        {"filter", w},
                                        {"output", yAgain},
                                        {"statistics", statistics}}));
  TensorRef residual = layout.place(yShape, p.dtype, p.layout);
  TensorRef fusedAgain = layout.place(yShape, p.dtype, p.layout);
  TensorRef fusedStatistics = layout.place({2, p.shape.outputs});
  Call everything =
      call3x3(CallKind::Conv2dForward, {{"input", x},
                                        {"filter", w},
                                        {"output", fusedAgain},
                                        {"bias", bias},
                                        {"residual", residual},
                                        {"statistics", fusedStatistics}});
  everything.relu = true;
  m.calls.push_back(everything);
  const int32_t calls = int32_t(m.calls.size());
  m.arenaBytes = layout.bytes();

  const int defaultThreads = omp_get_max_threads();
  ASSERT_TRUE(setComputeThreads(threads).isOk());
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk()) << arena.status().toString();
  KernelOptions options;
  options.convAlgorithm = algorithm;
  auto kernels = Kernels::create(m, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  for (int32_t id = 0; id < calls; ++id)
    EXPECT_EQ((*kernels)->implementation(id).find(kImpl) != std::string::npos,
              algorithm == ConvAlgorithm::Auto)
        << "call " << id << ": " << (*kernels)->implementation(id);
  // f32 forward outputs from 2 MiB on; never the input gradient.
  bool streams = algorithm == ConvAlgorithm::Auto && p.dtype == DType::F32 &&
                 y.byteSize() >= (int64_t(2) << 20);
  for (int32_t id = 0; id < calls; ++id)
    EXPECT_EQ((*kernels)->implementation(id).find("streaming stores") !=
                  std::string::npos,
              streams && id != 1 && id != 2)
        << "call " << id << ": " << (*kernels)->implementation(id);
  uint8_t *a = (*arena)->data();
  auto values = [&](const ref::Shape &shape, uint64_t seed) {
    ref::Tensor t = randomTensor(shape, seed);
    return bf16Values ? ref::roundToBf16(t) : t;
  };
  storeTensor(a, x, values(xShape, 1));
  storeTensor(a, w, values(wShape, 2));
  storeTensor(a, dy, values(yShape, 3));
  storeTensor(a, bias, randomTensor({p.shape.outputs}, 4));
  storeTensor(a, residual, values(yShape, 5));
  // Twice: nothing may carry over from one execution to the next (the
  // epilogue's residual is re-stored in between).
  for (int round = 0; round < 2; ++round) {
    storeTensor(a, fused, values(yShape, 5));
    for (int32_t id = 0; id < calls; ++id)
      (*kernels)->execute(id);
  }
  out = {loadTensor(a, y),          loadTensor(a, dx),
         loadTensor(a, dw),         loadTensor(a, fused),
         loadTensor(a, yAgain),     loadTensor(a, statistics),
         loadTensor(a, fusedAgain), loadTensor(a, fusedStatistics)};
  ASSERT_TRUE(setComputeThreads(defaultThreads).isOk());
}

/// Results of layers wider than 128 channels against the reference,
/// relative to its largest magnitude: more transformed products summed in
/// f32, measured 0.9-1.2e-5 on the forward and input gradient at 256, 512
/// and 1040 channels, 3-4e-6 on the filter gradient.
constexpr double kWideLayerTolerance = 4e-5;

/// The instruction set the kernel runs on here.
KernelIsa kernelIsa() {
  return std::string_view(Winograd3x3::instructionSet()) == "avx2"
             ? KernelIsa::Avx2
             : KernelIsa::Avx512;
}

class FusedTileWinogradTest : public ::testing::TestWithParam<Param> {
protected:
  void SetUp() override {
    if (!Winograd3x3::available())
      GTEST_SKIP() << "the kernel needs AVX-512F, or AVX2 and FMA";
    const Shape3x3 &shape = GetParam().shape;
    if (std::max(shape.input[3], shape.outputs) >
        fusedTileWinogradMaxChannels(kernelIsa()))
      GTEST_SKIP() << "the rule keeps oneDNN for this layer on "
                   << Winograd3x3::instructionSet();
    if (GetParam().dtype == DType::BF16 && __builtin_cpu_supports("amx-bf16"))
      GTEST_SKIP() << "oneDNN's AMX kernels are kept in bf16";
  }
};

TEST_P(FusedTileWinogradTest, MatchesReference) {
  const Param &p = GetParam();
  std::vector<ref::Tensor> actual;
  ASSERT_NO_FATAL_FAILURE(run3x3(p, 2, actual));

  const std::vector<int64_t> &xShape = p.shape.input;
  const std::vector<int64_t> wShape = {3, 3, xShape[3], p.shape.outputs};
  const std::vector<int64_t> yShape = {xShape[0], xShape[1], xShape[2],
                                       p.shape.outputs};
  // bf16 operands as the kernel sees them; their products are exact in f32.
  auto operand = [&](const ref::Shape &shape, uint64_t seed) {
    ref::Tensor t = randomTensor(shape, seed);
    return p.dtype == DType::BF16 ? ref::roundToBf16(t) : t;
  };
  ref::Tensor xv = operand(xShape, 1), wv = operand(wShape, 2);
  ref::Tensor dyv = operand(yShape, 3);
  ref::Tensor bv = randomTensor({p.shape.outputs}, 4);
  ref::Tensor rv = operand(yShape, 5);
  ref::Tensor y = ref::conv2d(xv, wv, same3x3());
  ref::Tensor fused = y;
  for (int64_t i = 0; i < fused.size(); ++i)
    fused[i] = std::max(y[i] + bv[i % p.shape.outputs] + rv[i], 0.0f);
  // F(4x4,3x3) rounds more than a direct sum (its transforms scale by up
  // to 8 and 1/24): 0.3-7e-6 of the largest output up to 128 channels,
  // 0.9-1.2e-5 at 256 and 512 (kWideLayerTolerance). A bf16 result is
  // rounded to 8 significant bits on top (at most 2^-9 of its magnitude).
  bool wide = std::max(xShape[3], p.shape.outputs) > 128;
  double rounded = p.dtype == DType::BF16 ? 4e-3
                   : wide                 ? kWideLayerTolerance
                                          : 1e-5;
  EXPECT_TRUE(closeTo(actual[0], y, rounded)) << "forward";
  EXPECT_TRUE(closeTo(
      actual[1], ref::conv2dBackwardData(dyv, wv, xShape, same3x3()), rounded))
      << "input gradient";
  EXPECT_TRUE(closeTo(actual[2],
                      ref::conv2dBackwardFilter(xv, dyv, wShape, same3x3()),
                      wide ? kWideLayerTolerance : 1e-5))
      << "filter gradient";
  EXPECT_TRUE(closeTo(actual[3], fused, rounded)) << "bias, residual, relu";
  EXPECT_TRUE(closeTo(actual[4], actual[0], 0)) << "forward with statistics";
  EXPECT_TRUE(statisticsOf(actual[5], actual[4]));
  EXPECT_TRUE(closeTo(actual[6], actual[3], 0))
      << "bias, residual, relu with statistics";
  EXPECT_TRUE(statisticsOf(actual[7], actual[6]));
}

// After a oneDNN convolution a pass over its output takes the statistics.
TEST_P(FusedTileWinogradTest, StatisticsAfterTheLibrary) {
  if (!oneDnnHasAvx512Kernels() && (GetParam().dtype == DType::BF16 ||
                                    GetParam().layout == Layout::NChw16c))
    GTEST_SKIP() << "without AVX-512 oneDNN has no bf16 convolution and runs "
                    "nChw16c on its reference kernel (minutes)";
  std::vector<ref::Tensor> actual;
  ASSERT_NO_FATAL_FAILURE(
      run3x3(GetParam(), 2, actual, false, ConvAlgorithm::Library));
  EXPECT_TRUE(closeTo(actual[4], actual[0], 0));
  EXPECT_TRUE(statisticsOf(actual[5], actual[4]));
  EXPECT_TRUE(closeTo(actual[6], actual[3], 0));
  EXPECT_TRUE(statisticsOf(actual[7], actual[6]));
}

// Each output tile is computed the same way whichever thread takes it, so
// the thread count changes neither the forward nor the input gradient, not
// even their rounding. The filter gradient sums each thread's share of the
// tiles, then the shares in thread order: the same bits from run to run on
// a given thread count, rounded differently on another. Three threads on
// two cores also run a team larger than the machine.
TEST_P(FusedTileWinogradTest, ThreadCounts) {
  std::vector<ref::Tensor> one, three, threeAgain;
  ASSERT_NO_FATAL_FAILURE(run3x3(GetParam(), 1, one));
  ASSERT_NO_FATAL_FAILURE(run3x3(GetParam(), 3, three));
  ASSERT_NO_FATAL_FAILURE(run3x3(GetParam(), 3, threeAgain));
  for (size_t i : {0, 1, 3, 4, 6})
    EXPECT_TRUE(closeTo(three[i], one[i], 0)) << "result " << i;
  // Each within 1e-5 of the reference (MatchesReference).
  EXPECT_TRUE(closeTo(three[2], one[2], 2e-5)) << "filter gradient";
  EXPECT_TRUE(closeTo(threeAgain[2], three[2], 0)) << "filter gradient";
  EXPECT_TRUE(statisticsOf(three[5], three[4])) << "statistics";
  EXPECT_TRUE(closeTo(threeAgain[5], three[5], 0)) << "statistics";
  EXPECT_TRUE(statisticsOf(three[7], three[6])) << "fused statistics";
  EXPECT_TRUE(closeTo(threeAgain[7], three[7], 0)) << "fused statistics";
}

// bf16 operands are widened exactly and the kernel computes in f32, so its
// bf16 results are its f32 results on the same values rounded to nearest
// even, bit for bit, and its f32 filter gradient is the same.
class FusedTileWinogradBf16Test : public FusedTileWinogradTest {};

TEST_P(FusedTileWinogradBf16Test, ResultsAreTheF32OnesRounded) {
  Param f32 = GetParam();
  f32.dtype = DType::F32;
  std::vector<ref::Tensor> bf16Out, f32Out;
  ASSERT_NO_FATAL_FAILURE(run3x3(GetParam(), 2, bf16Out));
  ASSERT_NO_FATAL_FAILURE(run3x3(f32, 2, f32Out, /*bf16Values=*/true));
  for (size_t i : {0, 1, 3, 6})
    EXPECT_TRUE(closeTo(bf16Out[i], ref::roundToBf16(f32Out[i]), 0))
        << "result " << i;
  EXPECT_TRUE(closeTo(bf16Out[2], f32Out[2], 0)) << "filter gradient";
}

/// The kernel itself, the rule bypassed, on NHWC f32: the forward pass
/// with its output's statistics, the input gradient and the filter
/// gradient on `threads` threads; the results in `out` (y, statistics, dx,
/// dw).
void runDirect(const Shape3x3 &shape, int threads,
               std::vector<ref::Tensor> &out) {
  const std::vector<int64_t> &xShape = shape.input;
  int64_t C = xShape[3], K = shape.outputs;
  const std::vector<int64_t> yShape = {xShape[0], xShape[1], xShape[2], K};
  ref::Tensor x = randomTensor(xShape, 1), w = randomTensor({3, 3, C, K}, 2),
              dy = randomTensor(yShape, 3);
  ref::Tensor y(yShape), dx(xShape), dw({3, 3, C, K}), statistics({2, K});
  using Pass = Winograd3x3::Pass;
  Winograd3x3 forward(C, K, Pass::Forward),
      inputGradient(K, C, Pass::InputGradient),
      filterGradient(C, K, Pass::FilterGradient);
  size_t bytes = std::max({forward.workspaceBytes(threads),
                           inputGradient.workspaceBytes(threads),
                           filterGradient.workspaceBytes(threads)});
  std::unique_ptr<void, decltype(&std::free)> workspace(
      std::aligned_alloc(64, (bytes + 63) / 64 * 64), &std::free);
  ASSERT_NE(workspace, nullptr);
  auto view = [](ref::Tensor &t) {
    return ActivationView::nhwc(t.data.data(), false, t.dim(0), t.dim(1),
                                t.dim(2), t.dim(3));
  };
  Winograd3x3::Epilogue epilogue;
  epilogue.statistics = statistics.data.data();
  forward.run(w.data.data(), false, view(x), view(y), epilogue,
              workspace.get(), threads);
  inputGradient.run(w.data.data(), false, view(dy), view(dx), {},
                    workspace.get(), threads);
  filterGradient.runFilterGradient(view(x), view(dy), dw.data.data(),
                                   workspace.get(), threads);
  out = {y, statistics, dx, dw};
}

// Wide layers through several sweeps on a thread, and thread counts that
// leave a thread without tiles or without output channels: the kernel
// called directly, on any CPU it runs on, whatever the rule. 36x34 images
// of 16 channels into 1040 (65 blocks) are 81 tiles, seven groups, taken in
// sweeps of three (winograd.cpp's groupsPerSweep), and its input gradient
// runs from 1040 channels into 16; 1040 channels into 16 on 9x10 images
// have one block of output channels, so that the filter gradient leaves
// all threads but one idle.
TEST(Winograd3x3Test, WideLayersMatchReference) {
  if (!Winograd3x3::available())
    GTEST_SKIP() << "the kernel needs AVX-512F, or AVX2 and FMA";
  const Shape3x3 shapes[] = {{{1, 36, 34, 16}, 1040}, {{2, 9, 10, 1040}, 16}};
  for (const Shape3x3 &shape : shapes) {
    SCOPED_TRACE(fmt::format("{}x{}x{}x{} to {}", shape.input[0],
                             shape.input[1], shape.input[2], shape.input[3],
                             shape.outputs));
    const std::vector<int64_t> &xShape = shape.input;
    const std::vector<int64_t> wShape = {3, 3, xShape[3], shape.outputs};
    const std::vector<int64_t> yShape = {xShape[0], xShape[1], xShape[2],
                                         shape.outputs};
    std::vector<ref::Tensor> two;
    ASSERT_NO_FATAL_FAILURE(runDirect(shape, 2, two));
    ref::Tensor x = randomTensor(xShape, 1), w = randomTensor(wShape, 2),
                dy = randomTensor(yShape, 3);
    EXPECT_TRUE(closeTo(two[0], ref::conv2d(x, w, same3x3()),
                        kWideLayerTolerance))
        << "forward";
    EXPECT_TRUE(statisticsOf(two[1], two[0]));
    EXPECT_TRUE(closeTo(two[2],
                        ref::conv2dBackwardData(dy, w, xShape, same3x3()),
                        kWideLayerTolerance))
        << "input gradient";
    EXPECT_TRUE(closeTo(two[3],
                        ref::conv2dBackwardFilter(x, dy, wShape, same3x3()),
                        kWideLayerTolerance))
        << "filter gradient";
    // Every tile is computed the same way on any thread, and a wide
    // layer's filter gradient sums the tiles in the same order on any
    // thread count: the same bits on one, two and three threads (the
    // statistics merge the threads' sums, rounded differently).
    for (int threads : {1, 3}) {
      std::vector<ref::Tensor> other;
      ASSERT_NO_FATAL_FAILURE(runDirect(shape, threads, other));
      for (size_t i : {0, 2, 3})
        EXPECT_TRUE(closeTo(other[i], two[i], 0))
            << "result " << i << " on " << threads << " threads";
      EXPECT_TRUE(statisticsOf(other[1], other[0]));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, FusedTileWinogradTest,
                         ::testing::ValuesIn(params(/*withF32=*/true)),
                         paramName);
INSTANTIATE_TEST_SUITE_P(Shapes, FusedTileWinogradBf16Test,
                         ::testing::ValuesIn(params(/*withF32=*/false)),
                         paramName);

/// The calls the kernel does not take go to oneDNN.
TEST(FusedTileWinogradRuleTest, TakesOnlyNarrowSamePaddedF32Layers) {
  struct Case {
    const char *what;
    std::vector<int64_t> input, filter;
    std::array<int64_t, 2> strides;
    std::array<int64_t, 4> padding;
    DType dtype;
    ConvAlgorithm algorithm;
    /// Forward, input gradient, filter gradient.
    std::array<bool, 3> taken;
  };
  const std::array<bool, 3> kAll = {true, true, true}, kNone = {};
  // In bf16 against oneDNN's AVX-512 kernels; its AMX kernels are kept.
  bool amx = __builtin_cpu_supports("amx-bf16");
  const Case cases[] = {
      {"eligible", {2, 8, 8, 128}, {3, 3, 128, 16}, {1, 1}, {1, 1, 1, 1},
       DType::F32, ConvAlgorithm::Auto, kAll},
      {"forced Winograd", {2, 8, 8, 16}, {3, 3, 16, 16}, {1, 1}, {1, 1, 1, 1},
       DType::F32, ConvAlgorithm::Winograd, kAll},
      {"direct asked for", {2, 8, 8, 16}, {3, 3, 16, 16}, {1, 1},
       {1, 1, 1, 1}, DType::F32, ConvAlgorithm::Direct, kNone},
      {"oneDNN's choice asked for", {2, 8, 8, 16}, {3, 3, 16, 16}, {1, 1},
       {1, 1, 1, 1}, DType::F32, ConvAlgorithm::Library, kNone},
      {"256 input channels", {2, 8, 8, 256}, {3, 3, 256, 16}, {1, 1},
       {1, 1, 1, 1}, DType::F32, ConvAlgorithm::Auto,
       kernelIsa() == KernelIsa::Avx2 ? kAll : kNone},
      {"1024 input channels", {1, 4, 4, 1024}, {3, 3, 1024, 16}, {1, 1},
       {1, 1, 1, 1}, DType::F32, ConvAlgorithm::Auto, kNone},
      {"channels not a multiple of 16", {2, 8, 8, 24}, {3, 3, 24, 16},
       {1, 1}, {1, 1, 1, 1}, DType::F32, ConvAlgorithm::Auto, kNone},
      {"strided", {2, 8, 8, 16}, {3, 3, 16, 16}, {2, 2}, {1, 1, 1, 1},
       DType::F32, ConvAlgorithm::Auto, kNone},
      {"unpadded", {2, 8, 8, 16}, {3, 3, 16, 16}, {1, 1}, {0, 0, 0, 0},
       DType::F32, ConvAlgorithm::Auto, kNone},
      {"5x5", {2, 8, 8, 16}, {5, 5, 16, 16}, {1, 1}, {2, 2, 2, 2},
       DType::F32, ConvAlgorithm::Auto, kNone},
      {"bf16, 16 channels", {2, 8, 8, 16}, {3, 3, 16, 16}, {1, 1},
       {1, 1, 1, 1}, DType::BF16, ConvAlgorithm::Auto, kNone},
      {"bf16, 32 channels on 8x8", {2, 8, 8, 32}, {3, 3, 32, 32}, {1, 1},
       {1, 1, 1, 1}, DType::BF16, ConvAlgorithm::Auto, {false, false, !amx}},
      {"bf16, 64 channels on 28x28", {1, 28, 28, 64}, {3, 3, 64, 64}, {1, 1},
       {1, 1, 1, 1}, DType::BF16, ConvAlgorithm::Auto, {!amx, !amx, !amx}},
  };
  for (const Case &c : cases) {
    if (c.dtype == DType::BF16 && !oneDnnHasAvx512Kernels())
      continue; // oneDNN creates no bf16 primitive to compare with
    ref::Conv2dAttrs attrs;
    attrs.strides = c.strides;
    attrs.padding = c.padding;
    ref::Shape yShape;
    ASSERT_TRUE(ref::inferConv2dShape(c.input, c.filter, attrs, yShape).isOk());
    ArenaLayout layout;
    TensorRef x = layout.place(c.input, c.dtype);
    TensorRef w = layout.place(c.filter, c.dtype);
    TensorRef y = layout.place(yShape, c.dtype);
    Manifest m;
    TensorRef dw = layout.place(c.filter, DType::F32);
    m.arenaBytes = layout.bytes();
    m.calls = {
        call3x3(CallKind::Conv2dForward,
                {{"input", x}, {"filter", w}, {"output", y}}),
        call3x3(CallKind::Conv2dBackwardData,
                {{"output_grad", y}, {"filter", w}, {"input_grad", x}}),
        call3x3(CallKind::Conv2dBackwardFilter,
                {{"input", x}, {"output_grad", y}, {"filter_grad", dw}})};
    for (Call &call : m.calls) {
      call.strides = c.strides;
      call.padding = c.padding;
    }
    auto arena = Arena::allocate(m.arenaBytes);
    ASSERT_TRUE(arena.isOk()) << arena.status().toString();
    KernelOptions options;
    options.convAlgorithm = c.algorithm;
    auto kernels = Kernels::create(m, (*arena)->data(), options);
    ASSERT_TRUE(kernels.isOk()) << c.what << ": "
                                << kernels.status().toString();
    for (int32_t id = 0; id < 3; ++id) {
      std::string impl = (*kernels)->implementation(id);
      EXPECT_EQ(impl.find(kImpl) != std::string::npos,
                c.taken[size_t(id)] && Winograd3x3::available())
          << c.what << ", call " << id << ": " << impl;
    }
  }
}


// The rule itself (kiln/rt/kernel_rules.h), which the fusion pass shares,
// on any CPU.
constexpr ConvGeometry geometry3x3(int64_t inputs, int64_t outputs,
                                   int64_t pixels) {
  ConvGeometry g;
  g.kernelH = g.kernelW = 3;
  g.strideH = g.strideW = 1;
  g.dilationH = g.dilationW = 1;
  g.padTop = g.padBottom = g.padLeft = g.padRight = 1;
  g.inputChannels = inputs;
  g.outputChannels = outputs;
  g.outputPixels = pixels;
  return g;
}
static_assert(fusedTileWinogradApplies(ConvPass::Forward,
                                       geometry3x3(16, 16, 28 * 28), false),
              "the rule is a constant expression");

TEST(FusedTileWinogradRule, ShapesAndThresholds) {
  using P = ConvPass;
  EXPECT_TRUE(fusedTileWinogradApplies(P::Forward, geometry3x3(16, 32, 49),
                                       false));
  EXPECT_TRUE(fusedTileWinogradApplies(P::InputGradient,
                                       geometry3x3(128, 128, 49), false));
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, geometry3x3(256, 64, 49),
                                        false));
  // On AVX2, up to 512 channels.
  const KernelIsa avx2 = KernelIsa::Avx2;
  EXPECT_TRUE(fusedTileWinogradApplies(P::Forward, geometry3x3(256, 64, 49),
                                       false, avx2));
  EXPECT_TRUE(fusedTileWinogradApplies(P::FilterGradient,
                                       geometry3x3(512, 512, 49), false, avx2));
  EXPECT_FALSE(fusedTileWinogradApplies(P::InputGradient,
                                        geometry3x3(512, 1024, 49), false,
                                        avx2));
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, geometry3x3(520, 16, 49),
                                        false, avx2));
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, geometry3x3(24, 32, 49),
                                        false));
  ConvGeometry strided = geometry3x3(16, 16, 49);
  strided.strideW = 2;
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, strided, false));
  ConvGeometry unpadded = geometry3x3(16, 16, 49);
  unpadded.padRight = 0;
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, unpadded, false));
  ConvGeometry dilated = geometry3x3(16, 16, 49);
  dilated.dilationH = 2;
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, dilated, false));
  // bf16: the forward and input gradient from 64 channels on 28x28 images,
  // the filter gradient from 32 channels on any image.
  EXPECT_TRUE(fusedTileWinogradApplies(P::Forward,
                                       geometry3x3(64, 64, 28 * 28), true));
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward,
                                        geometry3x3(64, 64, 14 * 14), true));
  EXPECT_FALSE(fusedTileWinogradApplies(P::InputGradient,
                                        geometry3x3(32, 64, 28 * 28), true));
  EXPECT_TRUE(fusedTileWinogradApplies(P::FilterGradient,
                                       geometry3x3(32, 32, 49), true));
  EXPECT_FALSE(fusedTileWinogradApplies(P::FilterGradient,
                                        geometry3x3(16, 32, 49), true));
  // An unknown image size passes in f32 only.
  EXPECT_TRUE(fusedTileWinogradApplies(P::Forward, geometry3x3(64, 64, 0),
                                       false));
  EXPECT_FALSE(fusedTileWinogradApplies(P::Forward, geometry3x3(64, 64, 0),
                                        true));
}

} // namespace
} // namespace kiln::rt::exec::test
