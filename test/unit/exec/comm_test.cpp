//===- comm_test.cpp - Bucket planning, packing, averaging; local backend -===//

#include "exec_test_util.h"

#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/variables.h"

namespace kiln::rt::exec::test {
namespace {

Bucket bucketOf(std::vector<TensorRef> tensors) {
  Bucket b;
  b.tensors = std::move(tensors);
  return b;
}

TEST(BucketPlanTest, AdjacentSameTypeTensorsReduceInPlace) {
  ArenaLayout l;
  TensorRef a = l.place({16}), b = l.place({8, 2}); // 64 bytes each: adjacent
  // Listed out of order: contiguity is about the set of bytes.
  auto plans = planBuckets({bucketOf({b, a})});
  ASSERT_EQ(plans.size(), 1u);
  EXPECT_TRUE(plans[0].contiguous);
  EXPECT_EQ(plans[0].offset, a.offset);
  EXPECT_EQ(plans[0].count, 32);
  EXPECT_EQ(plans[0].reduceType, DType::F32);
}

TEST(BucketPlanTest, GapsBf16AndMixedTypesAreStaged) {
  ArenaLayout l;
  TensorRef a = l.place({3});      // 12 bytes, next starts at 64: a gap
  TensorRef b = l.place({16});
  TensorRef h = l.place({16}, DType::BF16);
  TensorRef d = l.place({2}, DType::F64);
  auto plans = planBuckets({bucketOf({a, b}), bucketOf({h}), bucketOf({b, d})});
  EXPECT_FALSE(plans[0].contiguous);
  EXPECT_FALSE(plans[1].contiguous);
  EXPECT_EQ(plans[1].reduceType, DType::F32); // bf16 sums in f32
  EXPECT_FALSE(plans[2].contiguous);
  EXPECT_EQ(plans[2].reduceType, DType::F64);
  EXPECT_EQ(plans[2].count, 18);
}

/// Packs, sums `ranks` identical copies (what MPI_SUM of equal inputs
/// gives), and finishes: the average must equal the input exactly for
/// values whose multiples are exact.
TEST(BucketPlanTest, PackSumFinishAveragesEveryDtype) {
  ArenaLayout l;
  TensorRef f = l.place({5});
  TensorRef h = l.place({7}, DType::BF16);
  TensorRef d = l.place({3}, DType::F64);
  std::vector<uint8_t> arena(static_cast<size_t>(l.bytes()));
  for (int64_t i = 0; i < 5; ++i)
    storeElement(arena.data() + f.offset, DType::F32, i, 0.5 * double(i) - 1);
  for (int64_t i = 0; i < 7; ++i)
    storeElement(arena.data() + h.offset, DType::BF16, i, 0.25 * double(i));
  for (int64_t i = 0; i < 3; ++i)
    storeElement(arena.data() + d.offset, DType::F64, i, 1.0 / 3 + double(i));
  std::vector<uint8_t> before = arena;

  for (const auto &tensors : {std::vector<TensorRef>{f, h},
                              std::vector<TensorRef>{f, h, d}}) {
    BucketPlan plan = planBuckets({bucketOf(tensors)})[0];
    ASSERT_FALSE(plan.contiguous);
    std::vector<uint8_t> staging(static_cast<size_t>(plan.count) *
                                 dtypeInfo(plan.reduceType).bytes);
    packBucket(plan, arena.data(), staging.data());
    // Clobber the arena: finish must write every element back.
    std::fill(arena.begin(), arena.end(), 0xff);
    const int ranks = 4;
    for (int64_t i = 0; i < plan.count; ++i) {
      if (plan.reduceType == DType::F32)
        reinterpret_cast<float *>(staging.data())[i] *= ranks;
      else
        reinterpret_cast<double *>(staging.data())[i] *= ranks;
    }
    finishBucket(plan, arena.data(), staging.data(), ranks);
    for (const TensorRef &t : tensors)
      EXPECT_EQ(0, std::memcmp(arena.data() + t.offset, before.data() + t.offset,
                               static_cast<size_t>(t.byteSize())))
          << dtypeInfo(t.dtype).name;
    arena = before;
  }
}

TEST(BucketPlanTest, ContiguousFinishDividesInPlace) {
  ArenaLayout l;
  TensorRef a = l.place({16}), b = l.place({16});
  std::vector<uint8_t> arena(static_cast<size_t>(l.bytes()));
  auto *values = reinterpret_cast<float *>(arena.data());
  for (int i = 0; i < 32; ++i)
    values[i] = float(3 * i);
  BucketPlan plan = planBuckets({bucketOf({a, b})})[0];
  ASSERT_TRUE(plan.contiguous);
  finishBucket(plan, arena.data(), nullptr, 3);
  for (int i = 0; i < 32; ++i)
    EXPECT_EQ(values[i], float(i));
}

TEST(LocalCommTest, CollectivesAreIdentities) {
  auto comm = createLocalComm();
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  EXPECT_STREQ(comm->backend(), "local");
  ArenaLayout l;
  TensorRef a = l.place({4});
  std::vector<uint8_t> arena(static_cast<size_t>(l.bytes()));
  reinterpret_cast<float *>(arena.data())[2] = 7;
  ASSERT_TRUE(comm->setBuckets({bucketOf({a})}, arena.data()).isOk());
  comm->allreduceStart(0);
  comm->allreduceWait(0);
  EXPECT_EQ(reinterpret_cast<float *>(arena.data())[2], 7);
  double sums[2] = {1.5, 2};
  ASSERT_TRUE(comm->allreduceSum(sums, 2).isOk());
  EXPECT_EQ(sums[0], 1.5);
  auto all = comm->allgather(42);
  ASSERT_TRUE(all.isOk());
  EXPECT_EQ(*all, std::vector<uint64_t>{42});
}

TEST(LocalCommDeathTest, UnknownBucketAborts) {
  auto comm = createLocalComm();
  ASSERT_TRUE(comm->setBuckets({}, nullptr).isOk());
  EXPECT_DEATH(comm->allreduceStart(2), "allreduce of bucket 2, but the "
                                        "manifest has 0 buckets");
}

} // namespace
} // namespace kiln::rt::exec::test
