//===- DenseTest.cpp - Fully connected layer values and gradients ---------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "GradCheck.h"

#include "kiln/ref/dense.h"

#include "gtest/gtest.h"

namespace kiln::ref {
namespace {

using test::dot;
using test::expectGradient;
using test::randomTensor;
using test::smooth;

TEST(DenseTest, Forward) {
  // x [1,2] = [1,2]; w [2,3] (in x out) = [[1,2,3],[4,5,6]]; b = [10,20,30].
  Tensor x({1, 2}, {1, 2});
  Tensor w({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b({3}, {10, 20, 30});
  EXPECT_EQ(dense(x, w).data, (std::vector<float>{9, 12, 15}));
  EXPECT_EQ(dense(x, w, b).data, (std::vector<float>{19, 32, 45}));
}

TEST(DenseTest, ShapeErrors) {
  Shape y;
  Shape b{4};
  EXPECT_FALSE(inferDenseShape({2, 3}, {4, 5}, nullptr, y).isOk());
  EXPECT_FALSE(inferDenseShape({2, 3}, {3, 5}, &b, y).isOk());
  ASSERT_TRUE(inferDenseShape({2, 3}, {3, 4}, &b, y).isOk());
  EXPECT_EQ(y, (Shape{2, 4}));
}

TEST(DenseGradTest, MatchesFiniteDifferences) {
  std::mt19937 rng(31);
  Tensor x = randomTensor({3, 5}, rng);
  Tensor w = randomTensor({5, 4}, rng);
  Tensor b = randomTensor({4}, rng);
  Tensor r = randomTensor({3, 4}, rng);
  DenseGrads g = denseBackward(r, x, w, /*withBias=*/true);
  auto loss = smooth([&] { return dot(r, dense(x, w, b)); });
  expectGradient("dx", x, g.dx, loss, 0.1);
  expectGradient("dw", w, g.dw, loss, 0.1);
  expectGradient("db", b, g.db, loss, 0.1);
}

TEST(DenseGradTest, WithoutBias) {
  std::mt19937 rng(32);
  Tensor x = randomTensor({2, 3}, rng);
  Tensor w = randomTensor({3, 2}, rng);
  Tensor r = randomTensor({2, 2}, rng);
  DenseGrads g = denseBackward(r, x, w, /*withBias=*/false);
  EXPECT_TRUE(g.db.data.empty());
  auto loss = smooth([&] { return dot(r, dense(x, w)); });
  expectGradient("dx", x, g.dx, loss, 0.1);
  expectGradient("dw", w, g.dw, loss, 0.1);
}

} // namespace
} // namespace kiln::ref
