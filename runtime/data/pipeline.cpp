//===- pipeline.cpp - Reader, workers, prefetch slots ---------------------===//
#include "kiln/rt/pipeline.h"

#include "kiln/rt/files.h"
#include "kiln/rt/output.h"
#include "kiln/rt/random.h"
#include "kiln/rt/tfrecord.h"
#include "kiln/rt/transform.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

namespace kiln::rt {

//===----------------------------------------------------------------------===//
// Config validation
//===----------------------------------------------------------------------===//

Status validateDatasetConfig(const kiln_rt_dataset_config_t &c) {
  auto bad = [](const std::string &what) {
    return KILN_STATUS(kInvalidArgument, "dataset config: " + what);
  };
  if ((c.abi_version >> 16) != KILN_RT_ABI_VERSION_MAJOR)
    return bad("abi_version major " + std::to_string(c.abi_version >> 16) +
               " differs from the runtime's " +
               std::to_string(KILN_RT_ABI_VERSION_MAJOR) +
               " (call kiln_rt_dataset_config_init)");
  if (!c.path || !*c.path)
    return bad("path is empty");
  if (!c.split || !*c.split)
    return bad("split is empty");
  if (c.world_size < 1 || c.rank >= c.world_size)
    return bad("rank " + std::to_string(c.rank) + " is not below world_size " +
               std::to_string(c.world_size));
  if (c.batch_size < 1 || c.batch_size > (1u << 20))
    return bad("batch_size " + std::to_string(c.batch_size) +
               " is outside 1..2^20");
  if (c.height < 1 || c.height > 16384 || c.width < 1 || c.width > 16384)
    return bad("height/width must be in 1..16384");
  if (c.channels != 1 && c.channels != 3)
    return bad("channels must be 1 or 3, not " + std::to_string(c.channels));
  if (c.dtype != KILN_RT_DTYPE_F32 && c.dtype != KILN_RT_DTYPE_BF16)
    return bad("unknown dtype " + std::to_string(c.dtype));
  if (c.layout != KILN_RT_LAYOUT_NHWC && c.layout != KILN_RT_LAYOUT_NCHW &&
      c.layout != KILN_RT_LAYOUT_NCHW16C)
    return bad("unknown layout " + std::to_string(c.layout));
  if ((c.abi_version & 0xffff) > KILN_RT_ABI_VERSION_MINOR)
    return bad("abi_version minor " + std::to_string(c.abi_version & 0xffff) +
               " is newer than the runtime's " +
               std::to_string(KILN_RT_ABI_VERSION_MINOR));
  if (c.augment > KILN_RT_AUGMENT_EVAL)
    return bad("unknown augment " + std::to_string(c.augment));
  if (c.max_image_pixels < 1)
    return bad("max_image_pixels must be at least 1");
  for (uint32_t k = 0; k < c.channels; ++k)
    if (!(std::isfinite(c.std[k]) && c.std[k] != 0) ||
        !std::isfinite(c.mean[k]))
      return bad("std[" + std::to_string(k) +
                 "] must be finite and nonzero, "
                 "mean finite");
  if (!(c.min_area > 0 && c.min_area <= c.max_area && c.max_area <= 1))
    return bad("need 0 < min_area <= max_area <= 1");
  if (!(c.min_aspect > 0 && c.min_aspect <= c.max_aspect))
    return bad("need 0 < min_aspect <= max_aspect");
  if (!(c.center_crop_fraction > 0 && c.center_crop_fraction <= 1))
    return bad("center_crop_fraction must be in (0, 1]");
  if (c.pad > 4096)
    return bad("pad " + std::to_string(c.pad) + " is too large");
  if (c.num_workers < 1 || c.num_workers > 256)
    return bad("num_workers must be in 1..256");
  if (c.prefetch_batches < 1 || c.prefetch_batches > 1024)
    return bad("prefetch_batches must be in 1..1024");
  if (c.interleave < 1)
    return bad("interleave must be at least 1");
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Assigning records to ranks
//===----------------------------------------------------------------------===//

StatusOr<ShardCounts> countShards(const std::string &dir,
                                  const std::string &split,
                                  bool stopAtCorruption) {
  ShardCounts counts;
  KILN_ASSIGN_OR_RETURN(counts.files, listShards(dir, split));
  for (const std::string &file : counts.files) {
    counts.offsets.emplace_back();
    KILN_ASSIGN_OR_RETURN(
        TfRecordCount n,
        countTfRecords(file, stopAtCorruption, &counts.offsets.back()));
    counts.records.push_back(n.records);
    counts.stoppedBy.push_back(std::move(n.stoppedBy));
    counts.total += n.records;
  }
  return counts;
}

RecordRange rankRecordRange(uint64_t total, uint32_t rank, uint32_t worldSize) {
  uint64_t share = total / worldSize, extra = total % worldSize;
  RecordRange range;
  range.begin = rank * share + std::min<uint64_t>(rank, extra);
  range.end = range.begin + share + (rank < extra ? 1 : 0);
  return range;
}

std::vector<uint32_t> epochFileOrder(size_t files, uint64_t seed,
                                     uint32_t epoch, bool shuffle) {
  std::vector<uint32_t> order(files);
  for (uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  if (shuffle) {
    // No rank in the seed: every rank must cut the same concatenation.
    Rng fileRng(hashCombine(hashCombine(seed, epoch), 0xf11e5));
    for (size_t i = order.size(); i > 1; --i)
      std::swap(order[i - 1], order[fileRng.below(i)]);
  }
  return order;
}

std::vector<FileSegment> rangeSegments(const std::vector<uint32_t> &order,
                                       const std::vector<uint64_t> &records,
                                       RecordRange range) {
  uint64_t total = 0;
  for (uint64_t n : records)
    total += n;
  std::vector<FileSegment> segments;
  uint64_t pos = 0;
  for (uint32_t file : order) {
    uint64_t n = records[file], fileEnd = pos + n;
    if (n == 0) {
      bool here =
          (pos >= range.begin && pos < range.end) ||
          (pos == total && range.end == total && range.begin < range.end);
      if (here)
        segments.push_back({file, 0, 0, true});
      continue;
    }
    uint64_t first = std::max(pos, range.begin);
    uint64_t last = std::min(fileEnd, range.end);
    if (first < last)
      segments.push_back({file, first - pos, last - first, last == fileEnd});
    pos = fileEnd;
  }
  return segments;
}

//===----------------------------------------------------------------------===//
// Implementation
//===----------------------------------------------------------------------===//

namespace {

struct Origin {
  uint32_t file = 0;
  uint64_t index = 0;
  uint64_t offset = 0;
};

/// Bad records of one epoch found since the last report, and the first
/// message among them.
struct SkipTally {
  uint64_t skipped = 0;
  uint64_t repeated = 0;
  std::string first;
  void add(const Status &s) {
    if (skipped++ == 0)
      first = s.message();
  }
  void merge(SkipTally &&other) {
    if (skipped == 0 && other.skipped)
      first = std::move(other.first);
    skipped += other.skipped;
    repeated += other.repeated;
  }
};

struct BatchJob {
  uint64_t seq = 0;
  uint32_t epoch = 0;
  uint64_t index = 0;
  bool lastOfEpoch = false;
  std::vector<std::string> records;
  std::vector<Origin> origins;
  std::vector<uint64_t> seeds;
  SkipTally skips; // the reader's, since the previous job of the epoch
  Status error;    // the reader failed here: the batch reports this error
};

struct FreeDeleter {
  void operator()(void *p) const { std::free(p); }
};

struct Slot {
  enum class State { kFree, kFilling, kReady, kHeld };
  State state = State::kFree;
  std::unique_ptr<void, FreeDeleter> images;
  std::vector<int32_t> labels;
  uint64_t seq = 0;
  uint32_t size = 0;
  uint32_t epoch = 0;
  uint64_t index = 0;
  bool lastOfEpoch = false;
  SkipTally skips;
  Status error;
};

constexpr int kMaxSkipLogs = 10;

} // namespace

struct Dataset::Impl {
  kiln_rt_dataset_config_t config;
  std::string path, split;
  std::vector<std::string> files;
  // Records per file, when counted (always with world_size > 1); otherwise
  // every epoch reads every file to its end.
  std::vector<uint64_t> records;
  std::vector<std::vector<uint64_t>> offsets; // ShardCounts::offsets
  bool counted = false;
  RecordRange range; // this rank's share of an epoch (when counted)
  TransformOptions transform;
  OutputFormat format;

  std::mutex mu;
  std::condition_variable jobAvailable; // workers: a job or a slot appeared
  std::condition_variable jobSpace;     // reader: the job queue shrank
  std::condition_variable batchReady;   // consumer: a slot became ready
  std::deque<BatchJob> jobs;
  std::vector<Slot> slots;
  bool stop = false;
  std::atomic<bool> stopping{false}; // `stop` for the reader's hot loop
  bool readerDone = false;
  uint64_t totalJobs = 0;
  uint64_t consumeSeq = 0;
  int heldSlot = -1;
  Status sticky; // the first error returned to the consumer, repeated after

  std::thread reader;
  std::vector<std::thread> workers;

  std::atomic<uint64_t> recordsRead{0}, recordsSkipped{0}, bytesRead{0},
      batchesReturned{0}, waitNs{0}, nextCalls{0};
  std::atomic<int> skipLogs{0};

  // Reader-thread state: the batch being assembled, and the previous one,
  // held back until the next is complete or the epoch ends so that it can
  // carry the epoch's last skips and the lastOfEpoch mark.
  BatchJob current;
  BatchJob pending;
  bool havePending = false;
  SkipTally readerSkips;
  uint64_t nextSeq = 0;
  bool epochFull = false; // batches_per_epoch reached
  // The last batch_size good records, for filling a short epoch.
  std::deque<std::pair<std::string, Origin>> recent;

  // Consumer state: the epoch of the batch last returned.
  kiln_rt_dataset_epoch_stats_t epochStats{};
  std::string epochFirstSkip;

  ~Impl() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      stopping.store(true);
    }
    jobAvailable.notify_all();
    jobSpace.notify_all();
    batchReady.notify_all();
    if (reader.joinable())
      reader.join();
    for (auto &w : workers)
      w.join();
  }

  std::string where(const Origin &o) const {
    return files[o.file] + ": record " + std::to_string(o.index) +
           " at byte offset " + std::to_string(o.offset);
  }

  void noteSkipped(const Status &s, SkipTally &tally) {
    tally.add(s);
    recordsSkipped.fetch_add(1);
    if (config.log_skipped && skipLogs.fetch_add(1) < kMaxSkipLogs)
      std::fprintf(stderr, "kiln-rt: skipping bad record: %s\n",
                   s.message().c_str());
  }

  // --- reader ---------------------------------------------------------------

  bool pushJob(BatchJob job) {
    std::unique_lock<std::mutex> lock(mu);
    jobSpace.wait(
        lock, [&] { return stop || jobs.size() < config.prefetch_batches; });
    if (stop)
      return false;
    job.seq = nextSeq++;
    jobs.push_back(std::move(job));
    jobAvailable.notify_all();
    return true;
  }

  bool emit(std::string record, const Origin &origin, uint32_t epoch,
            uint64_t position, uint64_t &batchIndex) {
    if (config.batches_per_epoch && config.skip_bad_records) {
      recent.emplace_back(record, origin);
      if (recent.size() > config.batch_size)
        recent.pop_front();
    }
    current.records.push_back(std::move(record));
    current.origins.push_back(origin);
    current.seeds.push_back(hashCombine(hashCombine(config.seed, epoch),
                                        hashCombine(config.rank, position)));
    if (current.records.size() < config.batch_size)
      return true;
    return flush(epoch, batchIndex);
  }

  bool flush(uint32_t epoch, uint64_t &batchIndex) {
    if (current.records.empty())
      return true;
    current.epoch = epoch;
    current.index = batchIndex++;
    if (!pushPending(false))
      return false;
    pending = std::move(current);
    havePending = true;
    current = BatchJob();
    if (config.batches_per_epoch && batchIndex == config.batches_per_epoch)
      epochFull = true;
    return true;
  }

  /// Sends the held-back job with the reader's skips since the last one.
  bool pushPending(bool lastOfEpoch) {
    if (!havePending)
      return true;
    havePending = false;
    pending.lastOfEpoch = lastOfEpoch;
    pending.skips.merge(std::move(readerSkips));
    readerSkips = SkipTally();
    return pushJob(std::move(pending));
  }

  /// Fills an epoch that skipped records left short of batches_per_epoch by
  /// repeating its last good records in order (each with the seed of its
  /// new position, so the result is deterministic).
  Status fillShortEpoch(uint32_t epoch, uint64_t &position,
                        uint64_t &batchIndex, bool &stopped) {
    const auto &c = config;
    uint64_t have = batchIndex * c.batch_size + current.records.size();
    uint64_t want = c.batches_per_epoch * c.batch_size;
    if (have >= want)
      return Status::ok();
    if (!c.skip_bad_records)
      return KILN_STATUS(kDataLoss,
                         share(epoch) + " gave " + std::to_string(have) +
                             " records, fewer than the " +
                             std::to_string(c.batches_per_epoch) +
                             " batches of " + std::to_string(c.batch_size) +
                             " (batches_per_epoch) need");
    std::vector<std::pair<std::string, Origin>> sources(recent.begin(),
                                                        recent.end());
    if (sources.empty())
      return KILN_STATUS(kInternal, "epoch " + std::to_string(epoch) +
                                        " is short but kept no record to "
                                        "repeat");
    for (uint64_t i = 0; have + i < want && !stopped; ++i) {
      const auto &[record, origin] = sources[i % sources.size()];
      ++current.skips.repeated;
      if (!emit(record, origin, epoch, position++, batchIndex))
        stopped = true;
    }
    return Status::ok();
  }

  /// The share of the epoch's records this rank reads: rank r's range of
  /// the files concatenated in the epoch's order, or every file whole.
  std::vector<FileSegment> epochSegments(uint32_t epoch) const {
    std::vector<uint32_t> order =
        epochFileOrder(files.size(), config.seed, epoch, config.shuffle != 0);
    if (counted)
      return rangeSegments(order, records, range);
    std::vector<FileSegment> whole;
    for (uint32_t f : order)
      whole.push_back({f, 0, UINT64_MAX, true});
    return whole;
  }

  /// "rank 1's share of epoch 3 (records 40..79 of the 16 train files in
  /// DIR)", for messages.
  std::string share(uint32_t epoch) const {
    std::string of =
        std::to_string(files.size()) + " " + split + " files in " + path;
    if (!counted)
      return "epoch " + std::to_string(epoch) + " of the " + of;
    return "rank " + std::to_string(config.rank) + "'s share of epoch " +
           std::to_string(epoch) + " (records " + std::to_string(range.begin) +
           ".." + std::to_string(range.end) + " of the " + of + ")";
  }

  Status readEpoch(uint32_t epoch, bool &stopped) {
    const auto &c = config;
    std::vector<FileSegment> segments = epochSegments(epoch);
    struct Open {
      FileSegment segment;
      std::unique_ptr<RecordReader> reader;
      uint64_t attempted = 0; // records of the segment read or skipped as bad
    };
    std::vector<Open> cycle;
    size_t nextSegment = 0;
    epochFull = false;
    readerSkips = SkipTally();
    recent.clear();
    auto openNext = [&](Open &slot) -> Status {
      slot = Open();
      slot.segment = segments[nextSegment++];
      const std::string &name = files[slot.segment.file];
      KILN_ASSIGN_OR_RETURN(slot.reader, RecordReader::openFile(name));
      // Go past the other ranks' records without reading them: one seek to
      // the counted offset, or, in a compressed file (or without offsets),
      // skipping their headers (inflating them: a deflate stream cannot be
      // entered in the middle). The count already checked their framing.
      uint32_t f = slot.segment.file;
      if (slot.segment.first > 0 && f < offsets.size() &&
          offsets[f].size() == records[f] &&
          slot.reader->compression() == TfRecordCompression::kNone)
        return slot.reader->seekToRecord(slot.segment.first,
                                         offsets[f][slot.segment.first]);
      for (uint64_t k = 0; k < slot.segment.first; ++k) {
        Status s = slot.reader->skip();
        if (s.code() == StatusCode::kOutOfRange)
          return KILN_STATUS(kDataLoss,
                             name + ": ended after " + std::to_string(k) +
                                 " records, before record " +
                                 std::to_string(slot.segment.first) +
                                 " where " + share(epoch) + " starts (it had " +
                                 std::to_string(records[slot.segment.file]) +
                                 " records when the dataset was opened: did it "
                                 "change?)");
        KILN_RETURN_IF_ERROR(s);
      }
      return Status::ok();
    };
    // A record beyond a counted segment's end, or a clean end before it,
    // means the file changed since it was counted: the ranks' ranges would
    // no longer fit together.
    auto changed = [&](const Open &o, const std::string &what) {
      return KILN_STATUS(kDataLoss,
                         files[o.segment.file] + ": " + what + " (it had " +
                             std::to_string(records[o.segment.file]) +
                             " records when the dataset was opened: did it "
                             "change?)");
    };
    while (cycle.size() < c.interleave && nextSegment < segments.size()) {
      cycle.emplace_back();
      KILN_RETURN_IF_ERROR(openNext(cycle.back()));
    }

    size_t bufferCap = c.shuffle ? std::max<uint32_t>(c.shuffle_buffer, 1) : 1;
    Rng bufferRng(
        hashCombine(hashCombine(c.seed, epoch), hashCombine(c.rank, 0xb0ffe7)));
    std::vector<std::pair<std::string, Origin>> buffer;
    buffer.reserve(std::min<size_t>(bufferCap, 1 << 16));
    uint64_t position = 0, batchIndex = 0, usable = 0;
    Example example;
    RecordImage image;
    size_t turn = 0;
    std::string record;

    auto retire = [&](size_t i) -> Status {
      if (nextSegment < segments.size())
        return openNext(cycle[i]);
      cycle.erase(cycle.begin() + i);
      if (turn >= cycle.size())
        turn = 0;
      return Status::ok();
    };
    auto out = [&](std::string rec, const Origin &o) {
      if (!emit(std::move(rec), o, epoch, position++, batchIndex))
        stopped = true;
    };

    while (!cycle.empty() && !stopped && !epochFull) {
      if (stopping.load(std::memory_order_relaxed)) {
        stopped = true;
        break;
      }
      Open &cur = cycle[turn];
      if (!cur.segment.toEnd && cur.attempted == cur.segment.count) {
        KILN_RETURN_IF_ERROR(retire(turn));
        continue;
      }
      Status s = cur.reader->next(record);
      if (s.code() == StatusCode::kOutOfRange) {
        if (counted && cur.attempted < cur.segment.count)
          return changed(cur,
                         "ended after " +
                             std::to_string(cur.segment.first + cur.attempted) +
                             " records, before the end of " + share(epoch));
        KILN_RETURN_IF_ERROR(retire(turn));
        continue;
      }
      if (counted && cur.attempted == cur.segment.count &&
          (s.isOk() || cur.reader->canContinue()))
        return changed(cur, "record " +
                                std::to_string(cur.reader->recordIndex()) +
                                " at byte offset " +
                                std::to_string(cur.reader->recordOffset()) +
                                " is past the records counted");
      ++cur.attempted;
      if (!s.isOk()) {
        if (s.code() != StatusCode::kDataLoss || !c.skip_bad_records)
          return s;
        noteSkipped(s, readerSkips);
        if (!cur.reader->canContinue())
          KILN_RETURN_IF_ERROR(retire(turn));
        continue;
      }
      Origin origin{cur.segment.file, cur.reader->recordIndex(),
                    cur.reader->recordOffset()};
      turn = (turn + 1) % cycle.size();
      recordsRead.fetch_add(1);
      bytesRead.fetch_add(record.size() + kTfRecordHeaderBytes +
                          kTfRecordFooterBytes);
      Status v = inspectRecord(record, transform, example, image);
      if (!v.isOk()) {
        v.withContext(where(origin));
        // Only corrupt records are skipped; data that is not what the
        // model takes (kInvalidArgument) would be skipped whole.
        if (!c.skip_bad_records || v.code() != StatusCode::kDataLoss)
          return v;
        noteSkipped(v, readerSkips);
        continue;
      }
      ++usable;
      if (bufferCap <= 1) {
        out(std::move(record), origin);
      } else if (buffer.size() < bufferCap) {
        buffer.emplace_back(std::move(record), origin);
      } else {
        size_t j = bufferRng.below(bufferCap);
        out(std::move(buffer[j].first), buffer[j].second);
        buffer[j] = {std::move(record), origin};
      }
      record = std::string();
    }
    while (!buffer.empty() && !stopped && !epochFull) {
      size_t j = bufferRng.below(buffer.size());
      out(std::move(buffer[j].first), buffer[j].second);
      buffer[j] = std::move(buffer.back());
      buffer.pop_back();
    }
    if (stopped)
      return Status::ok();
    if (usable == 0 && !(counted && range.size() == 0))
      return KILN_STATUS(kNotFound, "no usable records in " + share(epoch));
    if (c.batches_per_epoch && !epochFull)
      KILN_RETURN_IF_ERROR(fillShortEpoch(epoch, position, batchIndex, stopped));
    // With batches_per_epoch every batch is full: what remains is the data
    // beyond the epoch's batches.
    if (c.drop_remainder || c.batches_per_epoch)
      current = BatchJob();
    else if (!flush(epoch, batchIndex))
      stopped = true;
    if (!stopped && !pushPending(true))
      stopped = true;
    return Status::ok();
  }

  void readerMain() {
    bool stopped = false;
    for (uint64_t e = 0;
         !stopped && (config.num_epochs == 0 || e < config.num_epochs); ++e) {
      Status s =
          readEpoch(static_cast<uint32_t>(config.first_epoch + e), stopped);
      if (!s.isOk()) {
        // The batches read before the error are delivered first.
        if (pushPending(false)) {
          BatchJob job;
          job.error = s;
          pushJob(std::move(job));
        }
        break;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    readerDone = true;
    totalJobs = nextSeq;
    batchReady.notify_all();
  }

  // --- workers --------------------------------------------------------------

  int freeSlot() const {
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i].state == Slot::State::kFree)
        return static_cast<int>(i);
    return -1;
  }

  void fill(BatchJob &job, Slot &slot, ExampleTransform &transformer,
            std::vector<float> &hwc) {
    slot.seq = job.seq;
    slot.epoch = job.epoch;
    slot.index = job.index;
    slot.size = static_cast<uint32_t>(job.records.size());
    slot.lastOfEpoch = job.lastOfEpoch;
    slot.skips = std::move(job.skips);
    slot.error = job.error;
    if (!slot.error.isOk())
      return;
    size_t n = job.records.size();
    std::vector<bool> bad(n, false);
    size_t good = 0;
    for (size_t i = 0; i < n; ++i) {
      int32_t label = 0;
      Status s =
          transformer.apply(job.records[i], job.seeds[i], hwc.data(), label);
      if (!s.isOk()) {
        s.withContext(where(job.origins[i]));
        if (!config.skip_bad_records) {
          slot.error = s;
          return;
        }
        noteSkipped(s, slot.skips);
        ++slot.skips.repeated;
        bad[i] = true;
        continue;
      }
      writeExample(hwc.data(), format, slot.images.get(), i);
      slot.labels[i] = label;
      ++good;
    }
    if (good == 0 && n > 0) {
      slot.error = KILN_STATUS(
          kDataLoss, "every record of batch " + std::to_string(job.index) +
                         " of epoch " + std::to_string(job.epoch) + " is bad");
      return;
    }
    // The reader already screened headers, so a record failing here is rare
    // (corrupt entropy data). Keep the batch full and deterministic: reuse
    // the next good example of the same batch.
    size_t bytes = format.exampleBytes();
    auto *base = static_cast<char *>(slot.images.get());
    for (size_t i = 0; i < n; ++i) {
      if (!bad[i])
        continue;
      size_t j = (i + 1) % n;
      while (bad[j])
        j = (j + 1) % n;
      std::memcpy(base + i * bytes, base + j * bytes, bytes);
      slot.labels[i] = slot.labels[j];
    }
    for (size_t i = n; i < config.batch_size; ++i) {
      zeroExample(format, slot.images.get(), i);
      slot.labels[i] = -1;
    }
  }

  void workerMain() {
    ExampleTransform transformer(transform);
    std::vector<float> hwc(size_t(config.height) * config.width *
                           config.channels);
    std::unique_lock<std::mutex> lock(mu);
    while (true) {
      int s = -1;
      jobAvailable.wait(lock, [&] {
        return stop || (!jobs.empty() && (s = freeSlot()) >= 0);
      });
      if (stop)
        return;
      BatchJob job = std::move(jobs.front());
      jobs.pop_front();
      jobSpace.notify_one();
      Slot &slot = slots[s];
      slot.state = Slot::State::kFilling;
      lock.unlock();
      fill(job, slot, transformer, hwc);
      lock.lock();
      slot.state = Slot::State::kReady;
      batchReady.notify_all();
    }
  }

  // --- consumer -------------------------------------------------------------

  Status next(kiln_rt_batch_t &out) {
    nextCalls.fetch_add(1);
    out = kiln_rt_batch_t();
    std::unique_lock<std::mutex> lock(mu);
    if (heldSlot >= 0) {
      slots[heldSlot].state = Slot::State::kFree;
      heldSlot = -1;
      jobAvailable.notify_all();
    }
    if (!sticky.isOk())
      return sticky;
    int found = -1;
    auto ready = [&] {
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].state == Slot::State::kReady &&
            slots[i].seq == consumeSeq) {
          found = static_cast<int>(i);
          return true;
        }
      return readerDone && consumeSeq == totalJobs;
    };
    if (!ready()) {
      auto t0 = std::chrono::steady_clock::now();
      batchReady.wait(lock, ready);
      waitNs.fetch_add(std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::steady_clock::now() - t0)
                           .count());
    }
    if (found < 0)
      return Status::ok(); // exhausted: size 0
    Slot &slot = slots[found];
    ++consumeSeq;
    if (!slot.error.isOk()) {
      sticky = slot.error;
      slot.state = Slot::State::kFree;
      jobAvailable.notify_all();
      return sticky;
    }
    slot.state = Slot::State::kHeld;
    heldSlot = found;
    if (batchesReturned.load() == 0 || slot.epoch != epochStats.epoch) {
      epochStats = kiln_rt_dataset_epoch_stats_t();
      epochStats.epoch = slot.epoch;
      epochFirstSkip.clear();
    }
    ++epochStats.batches;
    epochStats.complete = slot.lastOfEpoch;
    if (epochStats.records_skipped == 0 && slot.skips.skipped)
      epochFirstSkip = slot.skips.first;
    epochStats.records_skipped += slot.skips.skipped;
    epochStats.records_repeated += slot.skips.repeated;
    epochStats.first_skipped = epochFirstSkip.c_str();
    out.images = slot.images.get();
    out.labels = slot.labels.data();
    out.image_bytes = format.exampleBytes() * config.batch_size;
    out.size = slot.size;
    out.epoch = slot.epoch;
    out.index = slot.index;
    batchesReturned.fetch_add(1);
    return Status::ok();
  }
};

Dataset::Dataset(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Dataset::~Dataset() = default;

StatusOr<std::unique_ptr<Dataset>>
Dataset::open(const kiln_rt_dataset_config_t &config) {
  KILN_RETURN_IF_ERROR(validateDatasetConfig(config));
  if (config.world_size == 1) {
    // One rank reads every file whole: nothing to cut, nothing to count.
    ShardCounts whole;
    KILN_ASSIGN_OR_RETURN(whole.files, listShards(config.path, config.split));
    return openImpl(config, std::move(whole), false);
  }
  KILN_ASSIGN_OR_RETURN(
      ShardCounts counts,
      countShards(config.path, config.split, config.skip_bad_records != 0));
  if (config.log_skipped && config.rank == 0)
    for (const Status &s : counts.stoppedBy)
      if (!s.isOk())
        std::fprintf(stderr,
                     "kiln-rt: counting records: %s; the rest of the file is "
                     "skipped\n",
                     s.message().c_str());
  return openImpl(config, std::move(counts), true);
}

StatusOr<std::unique_ptr<Dataset>>
Dataset::open(const kiln_rt_dataset_config_t &config, ShardCounts counts) {
  KILN_RETURN_IF_ERROR(validateDatasetConfig(config));
  if (counts.files.empty() || counts.records.size() != counts.files.size())
    return KILN_STATUS(kInvalidArgument,
                       "dataset open: the record counts cover " +
                           std::to_string(counts.records.size()) + " of " +
                           std::to_string(counts.files.size()) + " files of " +
                           config.path + " (call countShards)");
  return openImpl(config, std::move(counts), true);
}

StatusOr<std::unique_ptr<Dataset>>
Dataset::openImpl(const kiln_rt_dataset_config_t &config, ShardCounts counts,
                  bool counted) {
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  impl->path = config.path;
  impl->split = config.split;
  impl->config.path = impl->path.c_str();
  impl->config.split = impl->split.c_str();
  impl->files = std::move(counts.files);
  impl->records = std::move(counts.records);
  impl->offsets = std::move(counts.offsets);
  impl->counted = counted;
  if (counted) {
    uint64_t total = 0;
    for (uint64_t n : impl->records)
      total += n;
    impl->range = rankRecordRange(total, config.rank, config.world_size);
    // An empty share (fewer records than ranks) is fine for a single pass,
    // such as an evaluation, but an epoch of no batches cannot repeat.
    if (impl->range.size() == 0 &&
        (config.num_epochs == 0 || config.batches_per_epoch))
      return KILN_STATUS(
          kInvalidArgument,
          "rank " + std::to_string(config.rank) + " of " +
              std::to_string(config.world_size) + " gets no records: the " +
              std::to_string(impl->files.size()) + " " + impl->split +
              " files in " + impl->path + " hold only " +
              std::to_string(total) + " records");
  }
  impl->transform = TransformOptions::fromConfig(config);
  impl->format = OutputFormat::fromConfig(config);
  size_t bytes = impl->format.exampleBytes() * config.batch_size;
  size_t alloc = (bytes + 63) / 64 * 64;
  impl->slots.resize(config.prefetch_batches + 1);
  for (Slot &s : impl->slots) {
    s.images.reset(std::aligned_alloc(64, alloc));
    if (!s.images)
      return KILN_STATUS(kInvalidArgument, "cannot allocate a " +
                                               std::to_string(alloc) +
                                               "-byte batch buffer");
    // Zero once: nChw16c padding channels are never written afterwards.
    std::memset(s.images.get(), 0, alloc);
    s.labels.assign(config.batch_size, -1);
  }
  Impl *p = impl.get();
  impl->reader = std::thread([p] { p->readerMain(); });
  for (uint32_t i = 0; i < config.num_workers; ++i)
    impl->workers.emplace_back([p] { p->workerMain(); });
  return std::unique_ptr<Dataset>(new Dataset(std::move(impl)));
}

Status Dataset::nextBatch(kiln_rt_batch_t &batch) { return impl_->next(batch); }

uint64_t Dataset::batchBytes() const {
  return impl_->format.exampleBytes() * impl_->config.batch_size;
}

const std::vector<std::string> &Dataset::files() const { return impl_->files; }

kiln_rt_dataset_epoch_stats_t Dataset::epochStats() const {
  kiln_rt_dataset_epoch_stats_t s = impl_->epochStats;
  s.first_skipped = impl_->epochFirstSkip.c_str();
  return s;
}

kiln_rt_dataset_stats_t Dataset::stats() const {
  kiln_rt_dataset_stats_t s{};
  s.records_read = impl_->recordsRead.load();
  s.records_skipped = impl_->recordsSkipped.load();
  s.batches_returned = impl_->batchesReturned.load();
  s.bytes_read = impl_->bytesRead.load();
  s.files = impl_->files.size();
  s.wait_ns = impl_->waitNs.load();
  s.next_batch_calls = impl_->nextCalls.load();
  return s;
}

} // namespace kiln::rt
