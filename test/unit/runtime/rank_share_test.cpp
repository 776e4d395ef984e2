//===- rank_share_test.cpp - Every record once per epoch at any rank count ===//
//
// Ranks share each epoch's records, not whole files: the files concatenated
// in the epoch's order are cut into one contiguous range per rank. These
// tests open the dataset as every rank of 3, 5 and 7 (and more ranks than
// files) over 16 uneven shards, two of them GZIP, whose records carry their
// id in the label and the pixels, and check which records each rank
// delivered in each epoch.
//
//===----------------------------------------------------------------------===//
#include "test_util.h"

#include "kiln/rt/pipeline.h"

#include <map>
#include <numeric>
#include <set>

namespace kiln::rt {
namespace {

using test::CStatus;
using test::TempDir;
using test::expectContains;

/// Uneven shards: one empty, one of a single record, up to 40.
const std::vector<uint64_t> kShardRecords = {12, 0,  31, 5, 18, 27, 1, 22,
                                             9,  40, 14, 3, 25, 16, 7, 30};
constexpr uint64_t kTotal = 260;

/// Writes kShardRecords raw 4x4 records; record id g (counting through the
/// shards in name order) has stored label g + 1 and every pixel g % 251.
/// Shards 3 and 9 are GZIP files. Returns the id of each shard's first
/// record.
std::vector<uint64_t> writeIdShards(const std::string &dir) {
  std::vector<uint64_t> firstId;
  uint64_t g = 0;
  for (size_t f = 0; f < kShardRecords.size(); ++f) {
    firstId.push_back(g);
    std::string bytes;
    for (uint64_t i = 0; i < kShardRecords[f]; ++i, ++g)
      appendTfRecord(bytes,
                     test::rawExample(4, 4, uint8_t(g % 251), int64_t(g + 1)));
    if (f == 3 || f == 9)
      bytes = test::compress(bytes, TfRecordCompression::kGzip);
    test::writeFile(dir + "/" + shardName("train", f, kShardRecords.size()),
                    bytes);
  }
  return firstId;
}

/// What one rank delivered: per epoch, the record ids in order.
struct RankRun {
  std::map<uint32_t, std::vector<int64_t>> ids;
  std::map<uint32_t, uint64_t> batches;
  std::vector<std::string> images; // every batch's buffer
  std::map<uint32_t, kiln_rt_dataset_epoch_stats_t> lastStats;
  CStatus error;
};

RankRun drainRank(const kiln_rt_dataset_config_t &config) {
  RankRun run;
  kiln_rt_dataset_t *ds = nullptr;
  run.error.s = kiln_rt_dataset_open(&config, &ds);
  if (!run.error.ok())
    return run;
  for (int guard = 0; guard < 10000; ++guard) {
    kiln_rt_batch_t b;
    run.error.s = kiln_rt_dataset_next_batch(ds, &b);
    if (!run.error.ok() || b.size == 0)
      break;
    EXPECT_EQ(b.index, run.batches[b.epoch]++);
    const float *px = static_cast<const float *>(b.images);
    for (uint32_t i = 0; i < b.size; ++i) {
      int64_t id = b.labels[i];
      run.ids[b.epoch].push_back(id);
      // The pixels travel with their label.
      EXPECT_EQ(px[i * 16], float(id % 251)) << "record id " << id;
    }
    run.images.emplace_back(static_cast<const char *>(b.images), b.image_bytes);
    kiln_rt_dataset_get_epoch_stats(ds, &run.lastStats[b.epoch]);
  }
  kiln_rt_dataset_close(ds);
  return run;
}

/// The ids of rank `rank`'s range of `epoch`, as the pipeline documents it.
std::set<int64_t> expectedShare(const std::vector<uint64_t> &firstId,
                                uint64_t seed, uint32_t epoch, uint32_t rank,
                                uint32_t ranks) {
  std::vector<uint32_t> order =
      epochFileOrder(kShardRecords.size(), seed, epoch, true);
  std::set<int64_t> ids;
  for (const FileSegment &s : rangeSegments(
           order, kShardRecords, rankRecordRange(kTotal, rank, ranks)))
    for (uint64_t i = s.first; i < s.first + s.count; ++i)
      ids.insert(int64_t(firstId[s.file] + i));
  return ids;
}

TEST(RankShare, RangesAreBalancedContiguousAndCoverEverything) {
  for (uint64_t total : {0ull, 1ull, 5ull, 16ull, 260ull, 1281167ull})
    for (uint32_t ranks : {1u, 2u, 3u, 5u, 7u, 16u, 20u}) {
      uint64_t next = 0;
      for (uint32_t r = 0; r < ranks; ++r) {
        RecordRange range = rankRecordRange(total, r, ranks);
        EXPECT_EQ(range.begin, next) << total << " over " << ranks;
        EXPECT_TRUE(range.size() == total / ranks ||
                    range.size() == total / ranks + 1);
        // The larger shares come first.
        EXPECT_EQ(range.size() > total / ranks, r < total % ranks);
        next = range.end;
      }
      EXPECT_EQ(next, total);
    }
}

TEST(RankShare, SegmentsCutFilesAtTheRangeBounds) {
  // Files of 4, 0, 6 and 3 records, read in the order 2, 1, 0, 3: the
  // concatenation is f2[0..6) f1 f0[0..4) f3[0..3), 13 records.
  std::vector<uint64_t> records = {4, 0, 6, 3};
  std::vector<uint32_t> order = {2, 1, 0, 3};
  auto segs = [&](uint64_t begin, uint64_t end) {
    std::vector<std::string> out;
    for (const FileSegment &s : rangeSegments(order, records, {begin, end}))
      out.push_back(std::to_string(s.file) + ":" + std::to_string(s.first) +
                    "+" + std::to_string(s.count) + (s.toEnd ? "$" : ""));
    return out;
  };
  // 13 over 3 ranks: [0, 5), [5, 9), [9, 13).
  EXPECT_EQ(segs(0, 5), (std::vector<std::string>{"2:0+5"}));
  // The empty file sits at position 6, inside the second range.
  EXPECT_EQ(segs(5, 9),
            (std::vector<std::string>{"2:5+1$", "1:0+0$", "0:0+3"}));
  EXPECT_EQ(segs(9, 13), (std::vector<std::string>{"0:3+1$", "3:0+3$"}));
  // An empty file at the very end belongs to the last non-empty range.
  order = {0, 2, 3, 1};
  EXPECT_EQ(segs(9, 13),
            (std::vector<std::string>{"2:5+1$", "3:0+3$", "1:0+0$"}));
  EXPECT_TRUE(rangeSegments(order, records, {13, 13}).empty());
  // The file order is the same for every rank and differs across epochs.
  EXPECT_EQ(epochFileOrder(16, 3, 1, true), epochFileOrder(16, 3, 1, true));
  EXPECT_NE(epochFileOrder(16, 3, 1, true), epochFileOrder(16, 3, 2, true));
  std::vector<uint32_t> names(16);
  std::iota(names.begin(), names.end(), 0u);
  EXPECT_EQ(epochFileOrder(16, 3, 1, false), names);
}

TEST(RankShare, EveryRecordOncePerEpochAtThreeFiveAndSevenRanks) {
  TempDir dir;
  std::vector<uint64_t> firstId = writeIdShards(dir.path());
  auto counts = countShards(dir.path(), "train", false);
  ASSERT_TRUE(counts.isOk()) << counts.status().toString();
  EXPECT_EQ(counts->records, kShardRecords);
  EXPECT_EQ(counts->total, kTotal);

  const uint32_t batch = 5, epochs = 3;
  const uint64_t seed = 11;
  for (uint32_t ranks : {3u, 5u, 7u}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    // As the training executable sets it: the smaller share's full batches.
    uint64_t steps = kTotal / ranks / batch;
    uint64_t left = kTotal - steps * batch * ranks;
    EXPECT_LT(left, uint64_t(ranks) * batch + ranks);
    std::vector<std::set<int64_t>> missed(epochs);
    std::vector<std::set<int64_t>> trained(epochs);
    for (uint32_t r = 0; r < ranks; ++r) {
      auto c = test::rawConfig(dir.path(), 4, batch);
      c.world_size = ranks;
      c.rank = r;
      c.seed = seed;
      c.num_epochs = epochs;
      c.shuffle_buffer = 8; // smaller than a share: shuffling stays local
      c.interleave = 3;
      c.batches_per_epoch = steps;
      RankRun run = drainRank(c);
      ASSERT_TRUE(run.error.ok()) << run.error.message();
      for (uint32_t e = 0; e < epochs; ++e) {
        EXPECT_EQ(run.batches[e], steps) << "rank " << r << " epoch " << e;
        std::set<int64_t> share = expectedShare(firstId, seed, e, r, ranks);
        for (int64_t id : run.ids[e]) {
          EXPECT_EQ(share.count(id), 1u)
              << "rank " << r << " epoch " << e << " read record " << id
              << " outside its range";
          EXPECT_TRUE(trained[e].insert(id).second)
              << "record " << id << " twice in epoch " << e;
        }
      }
    }
    std::set<int64_t> all;
    for (int64_t id = 0; id < int64_t(kTotal); ++id)
      all.insert(id);
    for (uint32_t e = 0; e < epochs; ++e) {
      EXPECT_EQ(trained[e].size(), steps * batch * ranks) << "epoch " << e;
      std::set_difference(all.begin(), all.end(), trained[e].begin(),
                          trained[e].end(),
                          std::inserter(missed[e], missed[e].end()));
      EXPECT_EQ(missed[e].size(), left) << "epoch " << e;
    }
    // The remainder moves with the epoch's shuffle: no record is left out
    // of every epoch.
    EXPECT_NE(missed[0], missed[1]);
    EXPECT_NE(missed[1], missed[2]);
    for (int64_t id : missed[0])
      EXPECT_FALSE(missed[1].count(id) && missed[2].count(id))
          << "record " << id << " missed in all " << epochs << " epochs";
  }
}

TEST(RankShare, OnePassReadsEveryRecordExactlyOnceEvenWithMoreRanksThanFiles) {
  TempDir dir;
  writeIdShards(dir.path());
  for (uint32_t ranks : {3u, 5u, 7u, 20u}) {
    SCOPED_TRACE(std::to_string(ranks) + " ranks");
    std::multiset<int64_t> seen;
    for (uint32_t r = 0; r < ranks; ++r) {
      // As an evaluation reads: one epoch, in order, the partial batch kept.
      auto c = test::rawConfig(dir.path(), 4, 4);
      c.world_size = ranks;
      c.rank = r;
      c.num_epochs = 1;
      c.shuffle = 0;
      c.interleave = 1;
      c.drop_remainder = 0;
      RankRun run = drainRank(c);
      ASSERT_TRUE(run.error.ok()) << run.error.message();
      RecordRange range = rankRecordRange(kTotal, r, ranks);
      // Without shuffling the range is the ids themselves, in order.
      std::vector<int64_t> want(range.size());
      std::iota(want.begin(), want.end(), int64_t(range.begin));
      EXPECT_EQ(run.ids[0], want) << "rank " << r;
      seen.insert(run.ids[0].begin(), run.ids[0].end());
    }
    EXPECT_EQ(seen.size(), kTotal);
    EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), kTotal);
  }
}

TEST(RankShare, SameBatchesForAnyWorkerCountAndWhenResumedAtAnEpoch) {
  TempDir dir;
  writeIdShards(dir.path());
  auto c = test::rawConfig(dir.path(), 4, 5);
  c.world_size = 3;
  c.rank = 1;
  c.seed = 7;
  c.num_epochs = 3;
  c.shuffle_buffer = 16;
  c.batches_per_epoch = 17;
  c.num_workers = 1;
  c.prefetch_batches = 1;
  RankRun one = drainRank(c);
  c.num_workers = 3;
  c.prefetch_batches = 5;
  RankRun three = drainRank(c);
  c.first_epoch = 2;
  c.num_epochs = 1;
  RankRun resumed = drainRank(c);
  for (RankRun *run : {&one, &three, &resumed})
    ASSERT_TRUE(run->error.ok()) << run->error.message();
  ASSERT_EQ(one.images.size(), 51u);
  EXPECT_TRUE(one.images == three.images);
  EXPECT_EQ(one.ids, three.ids);
  EXPECT_EQ(resumed.ids[2], one.ids[2]);
  EXPECT_TRUE(std::equal(resumed.images.begin(), resumed.images.end(),
                         one.images.begin() + 34));
  // Another rank of the same world reads other records.
  c.rank = 2;
  RankRun other = drainRank(c);
  ASSERT_TRUE(other.error.ok()) << other.error.message();
  for (int64_t id : other.ids[2])
    EXPECT_EQ(std::count(one.ids[2].begin(), one.ids[2].end(), id), 0);
}

TEST(RankShare, BadRecordsAreSkippedByTheRankWhoseRangeHoldsThem) {
  TempDir dir;
  // 16 shards of 10 records, id = 10 * shard + index. Shard 5's record 3
  // has a data CRC mismatch; shard 9 is cut inside record 6, so its count
  // stops at 6 under skip mode: 156 records, 52 per rank of 3.
  for (int f = 0; f < 16; ++f) {
    std::string bytes;
    std::vector<uint64_t> offsets;
    for (int i = 0; i < 10; ++i) {
      offsets.push_back(bytes.size());
      int g = 10 * f + i;
      appendTfRecord(bytes, test::rawExample(4, 4, uint8_t(g), g + 1));
    }
    if (f == 5)
      bytes[offsets[3] + 12 + 5] ^= 0x20;
    if (f == 9)
      bytes.resize(offsets[6] + 20);
    test::writeFile(dir.path() + "/" + shardName("train", f, 16), bytes);
  }
  auto strict = countShards(dir.path(), "train", false);
  ASSERT_FALSE(strict.isOk());
  expectContains(strict.status().message(), "train-00009-of-00016: record 6");
  auto counts = countShards(dir.path(), "train", true);
  ASSERT_TRUE(counts.isOk());
  ASSERT_EQ(counts->total, 156u);
  expectContains(counts->stoppedBy[9].message(), "truncated");

  const uint32_t ranks = 3, batch = 4, steps = 13; // 52 / 4, nothing left
  uint64_t skipped[2] = {0, 0}, repeated[2] = {0, 0};
  std::vector<std::multiset<int64_t>> seen(2);
  for (uint32_t r = 0; r < ranks; ++r) {
    auto c = test::rawConfig(dir.path(), 4, batch);
    c.world_size = ranks;
    c.rank = r;
    c.seed = 3;
    c.num_epochs = 2;
    c.skip_bad_records = 1;
    c.batches_per_epoch = steps;
    RankRun run = drainRank(c);
    ASSERT_TRUE(run.error.ok()) << run.error.message();
    for (uint32_t e = 0; e < 2; ++e) {
      EXPECT_EQ(run.batches[e], steps);
      EXPECT_EQ(run.lastStats[e].complete, 1u);
      skipped[e] += run.lastStats[e].records_skipped;
      repeated[e] += run.lastStats[e].records_repeated;
      seen[e].insert(run.ids[e].begin(), run.ids[e].end());
    }
  }
  for (uint32_t e = 0; e < 2; ++e) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    // The CRC mismatch and the truncation, each met by one rank; only the
    // first leaves its rank short (the count already excluded the second).
    EXPECT_EQ(skipped[e], 2u);
    EXPECT_EQ(repeated[e], 1u);
    EXPECT_EQ(seen[e].size(), 156u);
    EXPECT_EQ(seen[e].count(53), 0u); // shard 5, record 3
    std::set<int64_t> distinct(seen[e].begin(), seen[e].end());
    EXPECT_EQ(distinct.size(), 155u);
    for (int i = 6; i < 10; ++i)
      EXPECT_EQ(seen[e].count(90 + i), 0u);
  }
}

TEST(RankShare, AFileThatChangedSinceItWasCountedIsAnError) {
  TempDir dir;
  for (int f = 0; f < 2; ++f) {
    std::vector<std::string> records;
    for (int i = 0; i < 6; ++i)
      records.push_back(test::rawExample(4, 4, 1, 6 * f + i + 1));
    test::writeRecords(dir.path() + "/" + shardName("train", f, 2), records);
  }
  auto counts = countShards(dir.path(), "train", false);
  ASSERT_TRUE(counts.isOk());
  auto c = test::rawConfig(dir.path(), 4, 1);
  c.shuffle = 0;
  c.world_size = 2;
  c.num_epochs = 1;
  auto drainWith = [&](ShardCounts claimed, uint32_t rank) {
    c.rank = rank;
    auto ds = Dataset::open(c, std::move(claimed));
    if (!ds.isOk())
      return ds.status();
    kiln_rt_batch_t b;
    Status s;
    while ((s = (*ds)->nextBatch(b)).isOk() && b.size)
      ;
    return s;
  };
  std::string file0 = dir.path() + "/train-00000-of-00002";
  std::string file1 = dir.path() + "/train-00001-of-00002";
  // Counted 8 in file 0: rank 0's range [0, 7) runs out at its sixth.
  ShardCounts more = *counts;
  more.records[0] = 8;
  Status s = drainWith(more, 0);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  expectContains(s.message(),
                 file0 +
                     ": ended after 6 records, before the end of rank "
                     "0's share of epoch 0 (records 0..7 of the 2 train "
                     "files in " +
                     dir.path() +
                     ") (it had 8 records when the dataset was opened: did "
                     "it change?)");
  // Counted 4 in file 1: rank 1 ([5, 10)) finds a fifth record there.
  ShardCounts fewer = *counts;
  fewer.records[1] = 4;
  s = drainWith(fewer, 1);
  uint64_t recordBytes = test::readFileBytes(file1).size() / 6;
  expectContains(s.message(), file1 + ": record 4 at byte offset " +
                                  std::to_string(4 * recordBytes) +
                                  " is past the records counted (it had 4 "
                                  "records when the dataset was opened");
  // A range starting past a file's real end.
  ShardCounts skipPast = *counts;
  skipPast.records[0] = 12;
  s = drainWith(skipPast, 1); // [9, 18): file 0 from record 9
  expectContains(s.message(), file0 + ": ended after 6 records, before "
                                      "record 9 where rank 1's share of "
                                      "epoch 0");
  // Counts that do not cover the files are refused.
  ShardCounts partial = *counts;
  partial.records.pop_back();
  auto refused = Dataset::open(c, partial);
  ASSERT_FALSE(refused.isOk());
  expectContains(refused.status().message(),
                 "dataset open: the record counts cover 1 of 2 files");
}

TEST(RankShare, AnEmptyShareIsAnErrorOnlyWhenEpochsRepeat) {
  TempDir dir;
  for (int f = 0; f < 5; ++f)
    test::writeRecords(dir.path() + "/" + shardName("train", f, 5),
                       {test::rawExample(4, 4, 1, f + 1)});
  auto c = test::rawConfig(dir.path(), 4, 2);
  c.world_size = 8;
  c.rank = 6;
  c.num_epochs = 0;
  RankRun forever = drainRank(c);
  EXPECT_EQ(forever.error.code(), KILN_RT_STATUS_INVALID_ARGUMENT);
  expectContains(forever.error.message(),
                 "rank 6 of 8 gets no records: the 5 train files in " +
                     dir.path() + " hold only 5 records");
  c.num_epochs = 1;
  c.batches_per_epoch = 1;
  EXPECT_FALSE(drainRank(c).error.ok());
  // One pass (an evaluation): nothing to read, no error.
  c.batches_per_epoch = 0;
  RankRun once = drainRank(c);
  ASSERT_TRUE(once.error.ok()) << once.error.message();
  EXPECT_TRUE(once.ids.empty());
  c.rank = 4;
  c.drop_remainder = 0;
  RankRun one = drainRank(c);
  ASSERT_TRUE(one.error.ok()) << one.error.message();
  EXPECT_EQ(one.ids[0].size(), 1u);
}

} // namespace
} // namespace kiln::rt
