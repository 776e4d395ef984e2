//===- pipeline.h - The input pipeline (C++ side of data.h) -----*- C++ -*-===//
//
// Ranks: every epoch, the split's files are concatenated in the epoch's file
// order (name order, or shuffled with (seed, epoch): the same on every rank)
// and cut into world_size contiguous record ranges of floor or ceil(N /
// world_size) records; rank r reads range r. Ranks therefore need the record
// count of every file (countShards), and each reads exactly its records,
// whatever the shard count: whole files are not the unit of assignment.
//
// Threads:
//   reader   reads this rank's range of the epoch (up to `interleave` of its
//            file segments round-robin), checks each (CRCs, Example keys, JPEG
//            header), shuffles through a buffer and groups records into batch
//            jobs. Every record gets a seed derived from (seed, epoch, rank,
//            position) — never from the thread that decodes it — so output is
//            independent of the number of workers.
//   workers  take jobs in order, decode + augment each example, and write the
//            batch in the model's dtype and layout into a free slot.
//   consumer next_batch() returns slots in job order; a bounded number of
//            slots (prefetch_batches + the one the consumer holds) caps memory
//            while batch k+1.. are prepared during step k.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_PIPELINE_H
#define KILN_RT_PIPELINE_H

#include "kiln/base/status.h"
#include "kiln/rt/data.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

/// The records of every file of a split, counted from the TFRecord framing
/// (countTfRecords: length CRCs checked, data not read; compressed files are
/// inflated). Every rank counts every file, so that all ranks cut an epoch
/// into the same ranges.
struct ShardCounts {
  std::vector<std::string> files; ///< full paths, sorted by name
  std::vector<uint64_t> records;  ///< per file
  /// Per plain file, the byte offset of each counted record's header, so a
  /// rank's range is entered by one seek (8 bytes a record: 10 MB for
  /// ImageNet); empty for a compressed file, which must be inflated up to
  /// the range instead.
  std::vector<std::vector<uint64_t>> offsets;
  /// Per file: why its count stopped early (stopAtCorruption), else OK.
  std::vector<Status> stoppedBy;
  uint64_t total = 0;
};

/// Counts the `split` files of `dir` (see ShardCounts and countTfRecords).
StatusOr<ShardCounts> countShards(const std::string &dir,
                                  const std::string &split,
                                  bool stopAtCorruption);

/// Records [begin, end) of an epoch's record order.
struct RecordRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t size() const { return end - begin; }
};

/// Rank `rank`'s share of `total` records: ceil(total / worldSize) records
/// for the first total % worldSize ranks, floor for the others.
RecordRange rankRecordRange(uint64_t total, uint32_t rank, uint32_t worldSize);

/// The file order of `epoch`: name order, or with `shuffle` a permutation
/// drawn from (seed, epoch) alone, so that every rank draws the same one.
std::vector<uint32_t> epochFileOrder(size_t files, uint64_t seed,
                                     uint32_t epoch, bool shuffle);

/// Consecutive records [first, first + count) of one file.
struct FileSegment {
  uint32_t file = 0;
  uint64_t first = 0;
  uint64_t count = 0;
  /// The segment reaches the end of the file: its reader reads to the end,
  /// so that a corruption that ended the file's count is met and reported.
  bool toEnd = false;
};

/// The segments that make up `range` when the files, of `records` records
/// each, are concatenated in `order`. A file without records lies in the
/// range that holds its position (in the last range if at the end), so that
/// a file whose count stopped at its first record is still read by one rank.
std::vector<FileSegment> rangeSegments(const std::vector<uint32_t> &order,
                                       const std::vector<uint64_t> &records,
                                       RecordRange range);

/// kInvalidArgument naming the offending field, or OK.
Status validateDatasetConfig(const kiln_rt_dataset_config_t &config);

class Dataset {
public:
  /// Lists the files; with world_size > 1 also counts them (countShards).
  static StatusOr<std::unique_ptr<Dataset>>
  open(const kiln_rt_dataset_config_t &config);
  /// With the counts of config.split in config.path already taken (under
  /// stopAtCorruption = config.skip_bad_records), as the training executable
  /// does to compute its steps per epoch.
  static StatusOr<std::unique_ptr<Dataset>>
  open(const kiln_rt_dataset_config_t &config, ShardCounts counts);
  ~Dataset();

  /// See kiln_rt_dataset_next_batch.
  Status nextBatch(kiln_rt_batch_t &batch);
  kiln_rt_dataset_stats_t stats() const;
  /// See kiln_rt_dataset_get_epoch_stats; call from the consumer's thread.
  /// first_skipped is valid until the next nextBatch.
  kiln_rt_dataset_epoch_stats_t epochStats() const;
  uint64_t batchBytes() const;
  /// The split's files, in name order (every rank reads from any of them).
  const std::vector<std::string> &files() const;

  struct Impl;

private:
  explicit Dataset(std::unique_ptr<Impl> impl);
  /// `counted`: counts.records holds every file's count, and this rank reads
  /// its range of each epoch; otherwise it reads every file whole.
  static StatusOr<std::unique_ptr<Dataset>>
  openImpl(const kiln_rt_dataset_config_t &config, ShardCounts counts,
           bool counted);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::rt

#endif // KILN_RT_PIPELINE_H
