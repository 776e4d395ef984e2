//===- pipeline.h - The input pipeline (C++ side of data.h) -----*- C++ -*-===//
//
// Threads:
//   reader   lists this rank's files, interleaves records from several files,
//            checks each (CRCs, Example keys, JPEG header), shuffles through a
//            buffer and groups records into batch jobs. Every record gets a
//            seed derived from (seed, epoch, rank, position) — never from the
//            thread that decodes it — so output is independent of the number
//            of workers.
//   workers  take jobs in order, decode + augment each example, and write the
//            batch in the model's dtype and layout into a free slot.
//   consumer next_batch() returns slots in job order; a bounded number of
//            slots (prefetch_batches + the one the consumer holds) caps memory
//            while batch k+1.. are prepared during step k.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_PIPELINE_H
#define KILN_RT_PIPELINE_H

#include "kiln/rt/data.h"
#include "kiln/rt/status.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::rt {

/// kInvalidArgument naming the offending field, or OK.
Status validateDatasetConfig(const kiln_rt_dataset_config_t &config);

class Dataset {
public:
  static StatusOr<std::unique_ptr<Dataset>>
  open(const kiln_rt_dataset_config_t &config);
  ~Dataset();

  /// See kiln_rt_dataset_next_batch.
  Status nextBatch(kiln_rt_batch_t &batch);
  kiln_rt_dataset_stats_t stats() const;
  /// See kiln_rt_dataset_get_epoch_stats; call from the consumer's thread.
  /// first_skipped is valid until the next nextBatch.
  kiln_rt_dataset_epoch_stats_t epochStats() const;
  uint64_t batchBytes() const;
  /// The files this rank reads, in name order.
  const std::vector<std::string> &files() const;

  struct Impl;

private:
  explicit Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

} // namespace kiln::rt

#endif // KILN_RT_PIPELINE_H
