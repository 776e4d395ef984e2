//===- weight_reorder_test.cpp - PairBlockedWeightReorder -----------------===//
//
// The runtime's own reorder of bf16 HWIO filters into pair-blocked formats
// must write exactly what oneDNN's reorder writes, padding included, and
// claim no other formats.

#include "kiln/rt/exec/weight_reorder.h"

#include "kiln/rt/exec/gomp.h"

#include "exec_test_util.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kiln::rt::exec::test {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;

struct Case {
  memory::dim outputs, inputs, kh, kw;
  Tag format;
};

TEST(PairBlockedWeightReorderTest, MatchesOneDnnIncludingPadding) {
  // The reference is oneDNN's own bf16 reorder into its AVX-512 formats.
  if (!oneDnnHasAvx512Kernels())
    GTEST_SKIP() << "oneDNN's bf16 formats need AVX-512";
  // ResNet-50's shapes and formats, and padded ones: 50 outputs in blocks
  // of 32 or 64, odd input counts (the stem's 3 channels).
  const Case cases[] = {
      {512, 2048, 1, 1, Tag::AcdB48a2b}, {512, 512, 3, 3, Tag::AcdB32a2b},
      {64, 3, 7, 7, Tag::AcdB64a2b},     {50, 7, 3, 3, Tag::AcdB32a2b},
      {50, 6, 1, 3, Tag::AcdB64a2b},     {16, 16, 3, 3, Tag::AcdB16a2b},
      {40, 5, 2, 2, Tag::ABcd8a2b},
  };
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const int defaultThreads = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    for (const Case &c : cases) {
      SCOPED_TRACE(::testing::Message() << threads << " threads, " << c.outputs
                                        << "x" << c.inputs << "x" << c.kh << "x"
                                        << c.kw << " format " << int(c.format));
      memory::dims dims = {c.outputs, c.inputs, c.kh, c.kw};
      memory::desc from(dims, memory::data_type::bf16, Tag::hwio);
      memory::desc to(dims, memory::data_type::bf16, c.format);
      auto reorder = PairBlockedWeightReorder::match(from, to);
      ASSERT_TRUE(reorder.has_value());
      memory source(from, engine), expected(to, engine), actual(to, engine);
      auto *s = static_cast<uint16_t *>(source.get_data_handle());
      for (size_t i = 0; i < from.get_size() / 2; ++i)
        s[i] = uint16_t((i * 2654435761u) >> 9);
      // Different garbage in both: the padding must be written as zeros.
      std::memset(expected.get_data_handle(), 0xa5, to.get_size());
      std::memset(actual.get_data_handle(), 0x5a, to.get_size());
      dnnl::reorder(source, expected).execute(stream, source, expected);
      stream.wait();
      reorder->run(source.get_data_handle(), actual.get_data_handle());
      EXPECT_EQ(std::memcmp(expected.get_data_handle(),
                            actual.get_data_handle(), to.get_size()),
                0);
    }
  }
  omp_set_num_threads(defaultThreads);
}

TEST(PairBlockedWeightReorderTest, ClaimsOnlyItsFormats) {
  memory::dims dims = {64, 32, 3, 3};
  auto desc = [&](memory::data_type type, Tag tag) {
    return memory::desc(dims, type, tag);
  };
  const auto bf16 = memory::data_type::bf16, f32 = memory::data_type::f32;
  EXPECT_TRUE(PairBlockedWeightReorder::match(desc(bf16, Tag::hwio),
                                              desc(bf16, Tag::AcdB32a2b)));
  // f32; a source whose output channels are not innermost; three inner
  // blocks; the reverse direction; a plain destination.
  EXPECT_FALSE(PairBlockedWeightReorder::match(desc(f32, Tag::hwio),
                                               desc(f32, Tag::AcdB32a2b)));
  EXPECT_FALSE(PairBlockedWeightReorder::match(desc(bf16, Tag::oihw),
                                               desc(bf16, Tag::AcdB32a2b)));
  EXPECT_FALSE(PairBlockedWeightReorder::match(desc(bf16, Tag::hwio),
                                               desc(bf16, Tag::BAcd8a16b2a)));
  EXPECT_FALSE(PairBlockedWeightReorder::match(desc(bf16, Tag::AcdB32a2b),
                                               desc(bf16, Tag::hwio)));
  EXPECT_FALSE(PairBlockedWeightReorder::match(desc(bf16, Tag::hwio),
                                               desc(bf16, Tag::oihw)));
}

} // namespace
} // namespace kiln::rt::exec::test
