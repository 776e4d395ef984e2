//===- InitTest.cpp - Deterministic variable initializers (kiln/ref/init.h)
//===//

#include "kiln/ref/init.h"

#include "gtest/gtest.h"

#include <cmath>

namespace kiln::ref {
namespace {

// Random123's known-answer vectors for philox4x32_10 (kat_vectors: counter,
// key, expected).
TEST(InitTest, PhiloxMatchesRandom123KnownAnswers) {
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                          {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                          {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

TEST(InitTest, HashesMatchTheirDefinitions) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ULL);
  // The first two outputs of the splitmix64 generator seeded with 0.
  EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(splitmix64(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
}

// Pinned values: any change to the generator, the key derivation or
// Box-Muller changes every checkpoint of a fresh model, so it must be
// deliberate (update these and say so in docs/kiln-run.md).
TEST(InitTest, KnownFirstValues) {
  Tensor t({3, 3, 1, 4});
  fillHeNormal(t, /*seed=*/0, "conv1.weight");
  // std = sqrt(2/9) = 0.4714; the draws are -0.268, -0.255, 0.654, -0.116.
  const float expected[4] = {-0.12631537f, -0.120308585f, 0.308451414f,
                             -0.0547738485f};
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(t[i], expected[i]) << i;
}

TEST(InitTest, DeterministicAndIndependentOfOrderAndSize) {
  Tensor a({8, 8}), b({8, 8}), big({16, 8});
  fillNormal(a, 1.0, 7, "fc.weight");
  fillNormal(b, 1.0, 7, "other");
  fillNormal(big, 1.0, 7, "fc.weight");
  Tensor again({8, 8});
  fillNormal(again, 1.0, 7, "fc.weight");
  EXPECT_EQ(a.data, again.data);
  EXPECT_NE(a.data, b.data);
  // Element i depends only on (seed, name, i): a bigger tensor of the same
  // name starts with the same values, whatever was drawn before.
  for (int64_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(a[i], big[i]) << i;
  Tensor seeded({8, 8});
  fillNormal(seeded, 1.0, 8, "fc.weight");
  EXPECT_NE(a.data, seeded.data);
}

TEST(InitTest, NormalHasTheRequestedMoments) {
  const int64_t n = 200000;
  RandomStream stream(3, "stats");
  double sum = 0, sumSq = 0, sum4 = 0;
  for (int64_t i = 0; i < n; ++i) {
    double z = stream.normal(static_cast<uint64_t>(i));
    sum += z;
    sumSq += z * z;
    sum4 += z * z * z * z;
  }
  double mean = sum / n, var = sumSq / n - mean * mean;
  // Standard errors: 1/sqrt(n) = 0.0022 for the mean, sqrt(2/n) = 0.0032 for
  // the variance; the bounds are about 5 of them.
  EXPECT_NEAR(mean, 0.0, 0.011);
  EXPECT_NEAR(var, 1.0, 0.016);
  EXPECT_NEAR(sum4 / n, 3.0, 0.1); // kurtosis of a normal
}

TEST(InitTest, HeNormalUsesTheFanIn) {
  EXPECT_DOUBLE_EQ(heNormalStd({3, 3, 16, 32}), std::sqrt(2.0 / 144));
  EXPECT_DOUBLE_EQ(heNormalStd({2048, 1000}), std::sqrt(2.0 / 2048));
  Tensor w({3, 3, 64, 128});
  fillHeNormal(w, 1, "layer.conv.weight");
  double sumSq = 0;
  for (float v : w.data)
    sumSq += static_cast<double>(v) * v;
  double stddev = std::sqrt(sumSq / static_cast<double>(w.size()));
  EXPECT_NEAR(stddev / std::sqrt(2.0 / 576), 1.0, 0.01);
}

TEST(InitTest, UniformIntCoversTheRange) {
  RandomStream stream(0, "labels");
  int counts[10] = {};
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    uint64_t v = stream.uniformInt(static_cast<uint64_t>(i), 10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts)
    EXPECT_NEAR(c, n / 10, 600); // ~6 standard deviations
}

} // namespace
} // namespace kiln::ref
