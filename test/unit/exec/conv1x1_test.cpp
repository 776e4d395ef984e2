//===- conv1x1_test.cpp - The runtime's AVX2 1x1 convolution kernel -------===//
//
// Through Kernels, as the training step uses it: which calls it takes, its
// three passes against the reference convolution (pixel counts that end in
// a partial tile of 6 rows and a partial block, channels that end in a
// partial tile of the filter gradient, reductions over several blocks of
// 256 channels, strides that leave input pixels unread), the same bits on
// any thread count, and a filter changed between two steps read anew. Then
// the kernel itself on layers of many pixel chunks on any AVX2 CPU.
//
//===----------------------------------------------------------------------===//

#include "exec_test_util.h"

#include "kiln/ref/conv.h"
#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/conv1x1.h"
#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/kernels.h"

#include <fmt/format.h>

#include <memory>

namespace kiln::rt::exec::test {
namespace {

constexpr const char *kImpl = "kiln_1x1:avx2";

/// The results against the reference, relative to its largest magnitude:
/// f32 sums of up to 544 products measured at most 6.6e-7 through Kernels
/// and 1.4e-6 (a filter gradient summed over 1,150 pixels) in
/// ManyChunksMatchReference.
constexpr double kTolerance = 5e-6;

struct Shape1x1 {
  std::vector<int64_t> input; // NHWC
  int64_t outputs;
  int64_t stride;
};

// 3x7x9 is 189 pixels: 31 full row tiles of 6 and a partial one; 2x5x6 is
// 10 tiles, a partial block of 16 on each thread; 48 into 320 is a reduction over two blocks of 256 channels in the
// input gradient, and 320 into 48 a filter gradient whose last tile of
// input channels is partial (320 = 53 x 6 + 2); stride 2 on 8x10 images
// reads 4x5 of their pixels, and on 10x10 5x5. The forward passes from 320
// and 288 channels run on oneDNN's kernel (ManyChunksMatchReference takes
// the kernel's over several blocks).
const Shape1x1 kShapes[] = {{{3, 7, 9, 32}, 32, 1},
                            {{2, 5, 6, 48}, 320, 1},
                            {{1, 6, 5, 320}, 48, 1},
                            {{2, 8, 10, 32}, 64, 2},
                            {{1, 10, 10, 288}, 32, 2}};

std::string describe(const Shape1x1 &s) {
  return fmt::format("{}x{}x{}x{}_to_{}_stride{}", s.input[0], s.input[1],
                     s.input[2], s.input[3], s.outputs, s.stride);
}

void PrintTo(const Shape1x1 &s, std::ostream *os) { *os << describe(s); }

ref::Conv2dAttrs attrsOf(const Shape1x1 &s) {
  ref::Conv2dAttrs attrs;
  attrs.strides = {s.stride, s.stride};
  return attrs;
}

std::vector<int64_t> outputShape(const Shape1x1 &s) {
  return {s.input[0], (s.input[1] - 1) / s.stride + 1,
          (s.input[2] - 1) / s.stride + 1, s.outputs};
}

/// A call of `kind` on a 1x1 filter with `s`'s stride.
Call call1x1(CallKind kind, const Shape1x1 &s,
             std::map<std::string, TensorRef> operands) {
  Call call;
  call.kind = kind;
  call.operands = std::move(operands);
  call.strides = {s.stride, s.stride};
  return call;
}

/// Whether oneDNN runs f32 1x1 convolutions on jit_1x1:avx2 here, the
/// kernel the runtime's replaces.
bool replacesOneDnn() {
  return Conv1x1::available() &&
         dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core;
}

/// The three passes of `s` through Kernels on `threads` threads, executed
/// `steps` times; before the last, the filter is changed to `laterFilter`
/// if given. The results in `out` (y, dx, dw), in logical order, and each
/// call's implementation in `impls`.
void run1x1(const Shape1x1 &s, int threads, std::vector<ref::Tensor> &out,
            std::vector<std::string> &impls, int steps = 2,
            const ref::Tensor *laterFilter = nullptr,
            ConvAlgorithm algorithm = ConvAlgorithm::Auto) {
  const std::vector<int64_t> &xShape = s.input;
  const std::vector<int64_t> wShape = {1, 1, xShape[3], s.outputs};
  const std::vector<int64_t> yShape = outputShape(s);
  ArenaLayout layout;
  TensorRef x = layout.place(xShape, DType::F32, Layout::Nhwc);
  TensorRef w = layout.place(wShape);
  TensorRef y = layout.place(yShape, DType::F32, Layout::Nhwc);
  TensorRef dy = layout.place(yShape, DType::F32, Layout::Nhwc);
  TensorRef dx = layout.place(xShape, DType::F32, Layout::Nhwc);
  TensorRef dw = layout.place(wShape);
  Manifest m;
  m.calls.push_back(call1x1(CallKind::Conv2dForward, s,
                            {{"input", x}, {"filter", w}, {"output", y}}));
  m.calls.push_back(
      call1x1(CallKind::Conv2dBackwardData, s,
              {{"output_grad", dy}, {"filter", w}, {"input_grad", dx}}));
  m.calls.push_back(
      call1x1(CallKind::Conv2dBackwardFilter, s,
              {{"input", x}, {"output_grad", dy}, {"filter_grad", dw}}));
  m.arenaBytes = layout.bytes();

  const int defaultThreads = omp_get_max_threads();
  ASSERT_TRUE(setComputeThreads(threads).isOk());
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk()) << arena.status().toString();
  KernelOptions options;
  options.convAlgorithm = algorithm;
  auto kernels = Kernels::create(m, (*arena)->data(), options);
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  impls.clear();
  for (int32_t id = 0; id < 3; ++id)
    impls.push_back((*kernels)->implementation(id));
  uint8_t *a = (*arena)->data();
  storeTensor(a, x, randomTensor(xShape, 1));
  storeTensor(a, w, randomTensor(wShape, 2));
  storeTensor(a, dy, randomTensor(yShape, 3));
  // Every result is written over what its buffer held, the input
  // gradient's unread pixels too.
  ref::Tensor garbage(xShape);
  for (float &v : garbage.data)
    v = 7.0f;
  storeTensor(a, dx, garbage);
  for (int step = 0; step < steps; ++step) {
    if (step == steps - 1 && laterFilter)
      storeTensor(a, w, *laterFilter);
    for (int32_t id = 0; id < 3; ++id)
      (*kernels)->execute(id);
  }
  out = {loadTensor(a, y), loadTensor(a, dx), loadTensor(a, dw)};
  ASSERT_TRUE(setComputeThreads(defaultThreads).isOk());
}

class Conv1x1Test : public ::testing::TestWithParam<Shape1x1> {
protected:
  void SetUp() override {
    if (!replacesOneDnn())
      GTEST_SKIP() << "the kernel replaces oneDNN's jit_1x1:avx2 only (CPUs "
                      "with AVX2 and FMA, without AVX-512)";
  }
};

TEST_P(Conv1x1Test, MatchesReference) {
  const Shape1x1 &s = GetParam();
  std::vector<ref::Tensor> actual;
  std::vector<std::string> impls;
  ASSERT_NO_FATAL_FAILURE(run1x1(s, 2, actual, impls));
  // Forward passes of more than 256 input channels stay on oneDNN's
  // kernel (kernel_conv1x1.cpp).
  EXPECT_EQ(impls[0].rfind(s.input[3] <= 256 ? kImpl : "jit_1x1:avx2", 0),
            0u)
      << impls[0];
  for (int id = 1; id < 3; ++id)
    EXPECT_EQ(impls[id], kImpl) << "call " << id;
  const std::vector<int64_t> wShape = {1, 1, s.input[3], s.outputs};
  ref::Tensor x = randomTensor(s.input, 1), w = randomTensor(wShape, 2),
              dy = randomTensor(outputShape(s), 3);
  EXPECT_TRUE(closeTo(actual[0], ref::conv2d(x, w, attrsOf(s)), kTolerance))
      << "forward";
  EXPECT_TRUE(closeTo(actual[1],
                      ref::conv2dBackwardData(dy, w, s.input, attrsOf(s)),
                      kTolerance))
      << "input gradient";
  EXPECT_TRUE(closeTo(actual[2],
                      ref::conv2dBackwardFilter(x, dy, wShape, attrsOf(s)),
                      kTolerance))
      << "filter gradient";
}

// Every result element is one chain of multiply-adds in a fixed order on
// any thread: one, two and three threads (more than the machine's cores)
// give the same bits.
TEST_P(Conv1x1Test, SameBitsOnAnyThreadCount) {
  std::vector<ref::Tensor> one, two, three;
  std::vector<std::string> impls;
  ASSERT_NO_FATAL_FAILURE(run1x1(GetParam(), 1, one, impls));
  ASSERT_NO_FATAL_FAILURE(run1x1(GetParam(), 2, two, impls));
  ASSERT_NO_FATAL_FAILURE(run1x1(GetParam(), 3, three, impls));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(closeTo(two[i], one[i], 0)) << "result " << i;
    EXPECT_TRUE(closeTo(three[i], one[i], 0)) << "result " << i;
  }
}

// The filter is read at every call: a step after the update sees the new
// weights in both passes that read them.
TEST_P(Conv1x1Test, ReadsTheFilterAnew) {
  const Shape1x1 &s = GetParam();
  const std::vector<int64_t> wShape = {1, 1, s.input[3], s.outputs};
  ref::Tensor updated = randomTensor(wShape, 9);
  std::vector<ref::Tensor> actual;
  std::vector<std::string> impls;
  ASSERT_NO_FATAL_FAILURE(run1x1(s, 2, actual, impls, 2, &updated));
  ref::Tensor x = randomTensor(s.input, 1),
              dy = randomTensor(outputShape(s), 3);
  EXPECT_TRUE(
      closeTo(actual[0], ref::conv2d(x, updated, attrsOf(s)), kTolerance));
  EXPECT_TRUE(closeTo(actual[1],
                      ref::conv2dBackwardData(dy, updated, s.input, attrsOf(s)),
                      kTolerance));
}

INSTANTIATE_TEST_SUITE_P(Shapes, Conv1x1Test, ::testing::ValuesIn(kShapes),
                         [](const ::testing::TestParamInfo<Shape1x1> &info) {
                           return describe(info.param);
                         });

/// The calls the kernel leaves to oneDNN, by what disqualifies them.
TEST(Conv1x1SelectionTest, LeavesOtherCallsToOneDnn) {
  if (!replacesOneDnn())
    GTEST_SKIP() << "the kernel replaces oneDNN's jit_1x1:avx2 only";
  ArenaLayout layout;
  TensorRef x = layout.place({2, 6, 6, 32}, DType::F32, Layout::Nhwc);
  TensorRef w = layout.place({1, 1, 32, 32});
  TensorRef y = layout.place({2, 6, 6, 32}, DType::F32, Layout::Nhwc);
  TensorRef bias = layout.place({32});
  TensorRef statistics = layout.place({2, 32});
  TensorRef x16 = layout.place({2, 6, 6, 16}, DType::F32, Layout::Nhwc);
  TensorRef w16 = layout.place({1, 1, 16, 32});
  TensorRef yPadded = layout.place({2, 8, 8, 32}, DType::F32, Layout::Nhwc);
  TensorRef xWide = layout.place({2, 6, 6, 272}, DType::F32, Layout::Nhwc);
  TensorRef wWide = layout.place({1, 1, 272, 32});
  TensorRef xBlocked = layout.place({2, 6, 6, 32}, DType::F32, Layout::NChw16c);
  TensorRef yBlocked = layout.place({2, 6, 6, 32}, DType::F32, Layout::NChw16c);
  Manifest m;
  Call plain;
  plain.kind = CallKind::Conv2dForward;
  plain.operands = {{"input", x}, {"filter", w}, {"output", y}};
  m.calls.push_back(plain); // 0: taken
  Call withStatistics = plain;
  withStatistics.operands["statistics"] = statistics;
  m.calls.push_back(withStatistics); // 1: taken, statistics after
  Call withRelu = plain;
  withRelu.relu = true;
  m.calls.push_back(withRelu); // 2: relu
  Call withBias = plain;
  withBias.operands["bias"] = bias;
  m.calls.push_back(withBias); // 3: bias
  Call narrow = plain;
  narrow.operands = {{"input", x16}, {"filter", w16}, {"output", y}};
  m.calls.push_back(narrow); // 4: 16 input channels
  Call padded = plain;
  padded.operands["output"] = yPadded;
  padded.padding = {1, 1, 1, 1};
  m.calls.push_back(padded); // 5: padding
  Call wide = plain;
  wide.operands = {{"input", xWide}, {"filter", wWide}, {"output", y}};
  m.calls.push_back(wide); // 6: a forward pass from 272 channels
  Call blocked = plain;
  blocked.operands = {{"input", xBlocked}, {"filter", w}, {"output", yBlocked}};
  m.calls.push_back(blocked); // 7: nChw16c activations (planned, not run)
  Call wideData = wide;
  wideData.kind = CallKind::Conv2dBackwardData;
  wideData.operands = {
      {"output_grad", y}, {"filter", wWide}, {"input_grad", xWide}};
  m.calls.push_back(wideData); // 8: its input gradient, taken
  m.arenaBytes = layout.bytes();
  auto arena = Arena::allocate(m.arenaBytes);
  ASSERT_TRUE(arena.isOk());
  auto kernels = Kernels::create(m, (*arena)->data(), {});
  ASSERT_TRUE(kernels.isOk()) << kernels.status().toString();
  EXPECT_EQ((*kernels)->implementation(0), kImpl);
  EXPECT_EQ((*kernels)->implementation(1),
            std::string(kImpl) + " (+ statistics pass)");
  for (int32_t id = 2; id < 8; ++id)
    EXPECT_EQ((*kernels)->implementation(id).find(kImpl), std::string::npos)
        << "call " << id << ": " << (*kernels)->implementation(id);
  EXPECT_EQ((*kernels)->implementation(8), kImpl);
  KernelOptions library;
  library.convAlgorithm = ConvAlgorithm::Library;
  auto oneDnn = Kernels::create(m, (*arena)->data(), library);
  ASSERT_TRUE(oneDnn.isOk());
  EXPECT_EQ((*oneDnn)->implementation(0).rfind("jit_1x1:avx2", 0), 0u)
      << (*oneDnn)->implementation(0);
}

/// The kernel itself on `threads` threads: y, dx, dw of input `xShape`
/// into `outputs` channels, stride `stride`.
void runKernel(const std::vector<int64_t> &xShape, int64_t outputs,
               int64_t stride, int threads, std::vector<ref::Tensor> &out) {
  Conv1x1 conv(xShape[0], xShape[1], xShape[2], xShape[3], outputs, stride,
               stride);
  const std::vector<int64_t> yShape = {xShape[0], conv.outputHeight(),
                                       conv.outputWidth(), outputs};
  const std::vector<int64_t> wShape = {1, 1, xShape[3], outputs};
  ref::Tensor x = randomTensor(xShape, 1), w = randomTensor(wShape, 2),
              dy = randomTensor(yShape, 3);
  ref::Tensor y(yShape), dx(xShape), dw(wShape);
  // 64-byte aligned buffers, as in the arena (a large forward output is
  // then streamed).
  auto aligned = [](size_t bytes) {
    return std::unique_ptr<float, decltype(&std::free)>(
        static_cast<float *>(std::aligned_alloc(64, (bytes + 63) / 64 * 64)),
        &std::free);
  };
  size_t bytes = conv.workspaceBytes(threads);
  auto workspace = aligned(bytes);
  auto yBuffer = aligned(y.data.size() * sizeof(float));
  auto dxBuffer = aligned(dx.data.size() * sizeof(float));
  ASSERT_TRUE(workspace && yBuffer && dxBuffer);
  conv.forward(x.data.data(), w.data.data(), yBuffer.get(), workspace.get(),
               threads);
  conv.inputGradient(dy.data.data(), w.data.data(), dxBuffer.get(),
                     workspace.get(), threads);
  conv.filterGradient(x.data.data(), dy.data.data(), dw.data.data(),
                      workspace.get(), threads);
  std::memcpy(y.data.data(), yBuffer.get(), y.data.size() * sizeof(float));
  std::memcpy(dx.data.data(), dxBuffer.get(), dx.data.size() * sizeof(float));
  out = {y, dx, dw};
}

// Many pixel chunks (2x23x25 = 1,150 pixels, four chunks of 256 and a
// partial one, the next chunk prefetched during each), the filter
// gradient's threads splitting its columns (more outputs than inputs) or
// its rows, and reductions over three blocks of 256 channels; stride 2
// takes 12x13 of the pixels; a 64x64x128 output (2 MiB) is streamed.
TEST(Conv1x1KernelTest, ManyChunksMatchReference) {
  if (!Conv1x1::available())
    GTEST_SKIP() << "the kernel needs AVX2 and FMA";
  struct Case {
    std::vector<int64_t> input;
    int64_t outputs, stride;
  };
  const Case cases[] = {{{2, 23, 25, 16}, 80, 1},
                        {{2, 23, 25, 80}, 16, 1},
                        {{1, 9, 7, 544}, 528, 1},
                        {{2, 23, 25, 32}, 48, 2},
                        {{1, 64, 64, 16}, 128, 1}};
  for (const Case &c : cases) {
    SCOPED_TRACE(fmt::format("{}x{}x{}x{} to {} stride {}", c.input[0],
                             c.input[1], c.input[2], c.input[3], c.outputs,
                             c.stride));
    std::vector<ref::Tensor> two, three;
    ASSERT_NO_FATAL_FAILURE(runKernel(c.input, c.outputs, c.stride, 2, two));
    ASSERT_NO_FATAL_FAILURE(
        runKernel(c.input, c.outputs, c.stride, 3, three));
    const std::vector<int64_t> wShape = {1, 1, c.input[3], c.outputs};
    ref::Conv2dAttrs attrs;
    attrs.strides = {c.stride, c.stride};
    ref::Tensor x = randomTensor(c.input, 1), w = randomTensor(wShape, 2),
                dy = randomTensor(two[0].shape, 3);
    EXPECT_TRUE(closeTo(two[0], ref::conv2d(x, w, attrs), kTolerance))
        << "forward";
    EXPECT_TRUE(closeTo(two[1], ref::conv2dBackwardData(dy, w, c.input, attrs),
                        kTolerance))
        << "input gradient";
    EXPECT_TRUE(closeTo(two[2],
                        ref::conv2dBackwardFilter(x, dy, wShape, attrs),
                        kTolerance))
        << "filter gradient";
    for (size_t i = 0; i < 3; ++i)
      EXPECT_TRUE(closeTo(three[i], two[i], 0)) << "result " << i;
  }
}

} // namespace
} // namespace kiln::rt::exec::test
