//===- channel_statistics_test.cpp - Statistics of a convolution output ---===//
//
// The pass that follows a oneDNN convolution asked for its output's
// statistics: channel counts that are and are not multiples of 16, both
// layouts, both element types, more threads than rows.
//
//===----------------------------------------------------------------------===//

#include "exec_test_util.h"

#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/channel_statistics.h"
#include "kiln/rt/exec/gomp.h"

#include <fmt/format.h>

namespace kiln::rt::exec::test {
namespace {

struct Case {
  std::vector<int64_t> shape; // NHWC
  Layout layout;
  DType dtype;
  int threads;
};

TEST(ChannelStatisticsTest, MatchesDoublePrecisionSums) {
  const Case cases[] = {
      {{3, 5, 7, 3}, Layout::None, DType::F32, 2},
      {{2, 4, 4, 20}, Layout::NChw16c, DType::F32, 2},
      {{2, 6, 5, 32}, Layout::None, DType::BF16, 2},
      {{1, 3, 9, 48}, Layout::NChw16c, DType::BF16, 2},
      {{1, 1, 2, 16}, Layout::None, DType::F32, 3},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(fmt::format("{} {} {}", ref::shapeToString(c.shape),
                             layoutName(c.layout), dtypeInfo(c.dtype).name));
    ArenaLayout layout;
    TensorRef y = layout.place(c.shape, c.dtype, c.layout);
    TensorRef statistics = layout.place({2, c.shape[3]});
    auto arena = Arena::allocate(layout.bytes());
    ASSERT_TRUE(arena.isOk()) << arena.status().toString();
    uint8_t *a = (*arena)->data();
    // Values around 3 with a spread of ~1: a mean that a naive one-pass
    // variance in f32 would lose digits to.
    ref::Tensor values = randomTensor(c.shape, 7);
    for (float &v : values.data)
      v = 3.0f + v;
    storeTensor(a, y, values);
    bool bf16 = c.dtype == DType::BF16;
    ActivationView view =
        c.layout == Layout::NChw16c
            ? ActivationView::nChw16c(a + y.offset, bf16, c.shape[0],
                                      c.shape[1], c.shape[2], c.shape[3])
            : ActivationView::nhwc(a + y.offset, bf16, c.shape[0], c.shape[1],
                                   c.shape[2], c.shape[3]);
    std::vector<double> workspace(
        channelStatisticsWorkspaceBytes(c.shape[3], c.threads) /
        sizeof(double));
    channelStatistics(view, reinterpret_cast<float *>(a + statistics.offset),
                      workspace.data(), c.threads);
    EXPECT_TRUE(statisticsOf(loadTensor(a, statistics), loadTensor(a, y)));
  }
}

} // namespace
} // namespace kiln::rt::exec::test
