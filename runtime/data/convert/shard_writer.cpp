//===- shard_writer.cpp - Parallel writing of TFRecord shards -------------===//
#include "kiln/rt/convert.h"
#include "kiln/rt/progress.h"

#include "kiln/rt/files.h"
#include "kiln/rt/random.h"
#include "kiln/rt/tfrecord.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <thread>

namespace kiln::data {

std::vector<size_t> shuffledOrder(size_t n, uint64_t seed) {
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  rt::Rng rng(rt::hashCombine(seed, 0x5a4d));
  for (size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[rng.below(i)]);
  return order;
}

Status writeShards(const ConvertOptions &options, const std::string &split,
                   const std::vector<size_t> &order, size_t numShards,
                   const MakeExample &make, ConvertSummary &summary) {
  if (numShards == 0)
    return KILN_STATUS(kInvalidArgument, "shard count must be positive");
  if (order.empty())
    return KILN_STATUS(kNotFound, "no " + split + " items to convert");
  if (numShards > order.size())
    return KILN_STATUS(kInvalidArgument,
                       std::to_string(numShards) + " " + split +
                           " shards requested for only " +
                           std::to_string(order.size()) + " items");
  KILN_RETURN_IF_ERROR(rt::makeDirectories(options.output));

  Progress progress(split, order.size(), options.progress);
  std::atomic<size_t> nextShard{0};
  std::atomic<uint64_t> bytes{0}, records{0}, skipped{0};
  std::atomic<bool> failed{false};
  std::mutex errorMu;
  Status firstError;
  std::mutex logMu;

  auto writeOne = [&](size_t shard) -> Status {
    // Contiguous slices of nearly equal size, as imagenet_to_gcs.py's
    // np.linspace spacing gives.
    size_t begin = order.size() * shard / numShards;
    size_t end = order.size() * (shard + 1) / numShards;
    std::string path =
        options.output + "/" + rt::shardName(split, shard, numShards);
    KILN_ASSIGN_OR_RETURN(auto writer, rt::RecordWriter::create(path));
    std::string example;
    for (size_t i = begin; i < end && !failed.load(); ++i) {
      example.clear();
      Status s = make(order[i], example);
      if (!s.isOk()) {
        if (s.code() != StatusCode::kDataLoss || !options.skipBad)
          return s;
        if (skipped.fetch_add(1) < 10) {
          std::lock_guard<std::mutex> lock(logMu);
          std::fprintf(stderr, "\nkiln-data: skipping: %s\n",
                       s.message().c_str());
        }
        progress.add(1, 0);
        continue;
      }
      uint64_t before = writer->bytesWritten();
      KILN_RETURN_IF_ERROR(writer->write(example));
      progress.add(1, writer->bytesWritten() - before);
    }
    if (failed.load())
      return Status::ok(); // another shard failed; the writer drops its file
    bytes.fetch_add(writer->bytesWritten());
    records.fetch_add(writer->recordsWritten());
    return writer->close();
  };

  unsigned threads = options.threads
                         ? options.threads
                         : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<size_t>(threads, numShards));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (size_t s;
           !failed.load() && (s = nextShard.fetch_add(1)) < numShards;) {
        Status st = writeOne(s);
        if (!st.isOk()) {
          std::lock_guard<std::mutex> lock(errorMu);
          if (firstError.isOk())
            firstError = st;
          failed.store(true);
        }
      }
    });
  for (auto &t : pool)
    t.join();
  progress.finish();
  KILN_RETURN_IF_ERROR(firstError);
  summary.records += records.load();
  summary.bytes += bytes.load();
  summary.skipped += skipped.load();
  summary.shards += numShards;
  return Status::ok();
}

} // namespace kiln::data
