//===- input_dataset.cpp - Training batches from TFRecord shards ----------===//

#include "kiln/rt/exec/input.h"

#include "kiln/rt/crc32c.h"
#include "kiln/rt/pipeline.h"
#include "kiln/rt/tfrecord.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstring>

namespace kiln::rt::exec {

StatusOr<kiln_rt_dataset_config_t>
datasetConfig(const RunOptions &options, const Function &function,
              const std::string &split, const Comm &comm, uint64_t seed) {
  const TensorRef &images = *function.input("images");
  kiln_rt_dataset_config_t c;
  kiln_rt_dataset_config_init(&c);
  c.path = options.dataDir.c_str();
  c.split = split == "train" ? "train" : "validation";
  c.rank = static_cast<uint32_t>(comm.rank());
  c.world_size = static_cast<uint32_t>(comm.size());
  c.batch_size = static_cast<uint32_t>(images.shape[0]);
  c.height = static_cast<uint32_t>(images.shape[1]);
  c.width = static_cast<uint32_t>(images.shape[2]);
  c.channels = static_cast<uint32_t>(images.shape[3]);
  if (c.channels != 1 && c.channels != 3)
    return KILN_STATUS(kUnimplemented,
                       fmt::format("the model's images have {} channels; the "
                                   "input pipeline delivers 1 or 3",
                                   c.channels));
  c.dtype = images.dtype == DType::BF16 ? KILN_RT_DTYPE_BF16 : KILN_RT_DTYPE_F32;
  c.layout = images.layout == Layout::Nchw      ? KILN_RT_LAYOUT_NCHW
             : images.layout == Layout::NChw16c ? KILN_RT_LAYOUT_NCHW16C
                                                : KILN_RT_LAYOUT_NHWC;
  if (c.channels == 1) {
    // Fashion-MNIST's statistics: the one gray data set Kiln ships models for.
    c.mean[0] = 0.2860f * 255.0f;
    c.std[0] = 0.3530f * 255.0f;
  }
  for (auto [values, target, flag] :
       {std::tuple(&options.mean, c.mean, "--mean"),
        std::tuple(&options.stddev, c.std, "--std")}) {
    if (values->empty())
      continue;
    if (values->size() != 1 && values->size() != c.channels)
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("{} has {} values for images with {} "
                                     "channels",
                                     flag, values->size(), c.channels));
    for (uint32_t k = 0; k < c.channels; ++k)
      target[k] = (*values)[values->size() == 1 ? 0 : k];
  }
  // Labels: the manifest checks that logits are [batch, classes].
  c.label_offset = static_cast<int32_t>(options.labelOffset);
  c.num_classes = static_cast<uint32_t>(function.output("logits")->shape[1]);
  bool train = split == "train";
  // Evaluation preprocessing belongs to the data, not to this command line:
  // the same checkpoint must score the same whatever --augment says.
  c.augment = KILN_RT_AUGMENT_EVAL;
  if (train) {
    switch (options.augment) {
    case Augment::RandomResizedCrop:
      c.augment = KILN_RT_AUGMENT_RANDOM_RESIZED_CROP;
      break;
    case Augment::PadCrop:
      c.augment = KILN_RT_AUGMENT_PAD_CROP_FLIP;
      c.pad = static_cast<uint32_t>(options.pad);
      break;
    case Augment::None:
      c.augment = KILN_RT_AUGMENT_NONE;
      break;
    }
  }
  c.flip = options.flip && train;
  c.seed = seed;
  c.shuffle_buffer = static_cast<uint32_t>(options.shuffleBuffer);
  c.num_workers = static_cast<uint32_t>(options.dataWorkers);
  c.prefetch_batches = static_cast<uint32_t>(options.prefetch);
  c.skip_bad_records = options.skipBadRecords;
  c.image_policy = (options.convertChannels ? KILN_RT_IMAGE_CONVERT_CHANNELS : 0u) |
                   (options.upscale ? KILN_RT_IMAGE_UPSCALE : 0u);
  c.log_skipped = 1;
  if (train) {
    c.num_epochs = 0; // the loop decides when to stop
  } else {
    // Every validation record once, in order; a final partial batch is kept
    // (its padding examples have label -1 and are not counted).
    c.num_epochs = 1;
    c.shuffle = 0;
    c.drop_remainder = 0;
  }
  return c;
}

namespace {

class DatasetInput final : public InputSource {
public:
  DatasetInput(const Function &function, int64_t stepsPerEpoch,
               std::unique_ptr<Dataset> dataset, const Comm &comm,
               std::string summary)
      : images(*function.input("images")), labels(*function.input("labels")),
        epochSteps(stepsPerEpoch), dataset(std::move(dataset)),
        rankPrefix(comm.size() > 1 ? fmt::format("rank {}: ", comm.rank())
                                   : ""),
        summary(std::move(summary)) {}

  Status fill(int64_t step, uint8_t *arena) override {
    auto epoch = static_cast<uint32_t>(step / epochSteps);
    auto index = static_cast<uint64_t>(step % epochSteps);
    for (;;) {
      kiln_rt_batch_t batch;
      KILN_RETURN_IF_ERROR(dataset->nextBatch(batch));
      if (batch.size == 0)
        return KILN_STATUS(kInternal, "the training data ended, but it "
                                      "repeats forever");
      // Skip the batches a resumed run already trained on (the pipeline
      // delivers exactly epochSteps batches per epoch: batches_per_epoch).
      if (batch.epoch < epoch || (batch.epoch == epoch && batch.index < index))
        continue;
      if (batch.epoch != epoch || batch.index != index)
        return KILN_STATUS(kInternal,
                           fmt::format("wanted batch {} of epoch {}, the "
                                       "pipeline gave batch {} of epoch {}",
                                       index, epoch, batch.index, batch.epoch));
      std::memcpy(arena + images.offset, batch.images, batch.image_bytes);
      std::memcpy(arena + labels.offset, batch.labels,
                  static_cast<size_t>(labels.byteSize()));
      kiln_rt_dataset_epoch_stats_t es = dataset->epochStats();
      if (es.complete && es.records_skipped)
        epochNote = fmt::format(
            "kiln: {}epoch {}: skipped {} bad record{}{} (first: {})\n",
            rankPrefix, es.epoch, es.records_skipped,
            es.records_skipped == 1 ? "" : "s",
            es.records_repeated
                ? fmt::format(", repeated {} good example{} in their place",
                              es.records_repeated,
                              es.records_repeated == 1 ? "" : "s")
                : "",
            es.first_skipped);
      return Status::ok();
    }
  }

  std::string takeEpochNote() override { return std::move(epochNote); }

  int64_t stepsPerEpoch() const override { return epochSteps; }

  std::string describe() const override { return summary; }

  double waitSeconds() const override {
    return double(dataset->stats().wait_ns) * 1e-9;
  }

private:
  TensorRef images, labels;
  int64_t epochSteps;
  std::unique_ptr<Dataset> dataset;
  std::string rankPrefix;
  std::string summary;
  std::string epochNote;
};

} // namespace

StatusOr<std::unique_ptr<InputSource>>
openDatasetInput(const RunOptions &options, const Function &function,
                 Comm &comm, uint64_t seed, int64_t firstStep) {
  const TensorRef &images = *function.input("images");
  int64_t batch = images.shape[0];
  int64_t ranks = comm.size();

  // Every rank counts every file: each epoch is cut into one record range
  // per rank (kiln/rt/pipeline.h), so all ranks need the same counts. Under
  // --skip-bad-records a bad length or a truncation ends the file's count as
  // it ends the file for the reader.
  StatusOr<ShardCounts> counted =
      countShards(options.dataDir, "train", options.skipBadRecords);
  uint64_t total = 0;
  uint32_t digest = 0; // the files' names and counts
  if (counted.isOk()) {
    total = counted->total;
    for (size_t i = 0; i < counted->files.size(); ++i) {
      const std::string &file = counted->files[i];
      std::string name = file.substr(file.rfind('/') + 1);
      uint64_t n = counted->records[i];
      digest = crc32cExtend(digest, name.data(), name.size());
      digest = crc32cExtend(digest, &n, sizeof(n));
    }
  }
  // Ranks that counted differently would take different steps per epoch
  // and stop pairing their allreduces: one reduction finds out first, and
  // also tells every rank that another one could not count.
  int64_t agree[5] = {counted.isOk() ? 0 : -1, int64_t(total), -int64_t(total),
                      int64_t(digest), -int64_t(digest)};
  KILN_RETURN_IF_ERROR(comm.allreduceMin(agree, 5));
  if (!counted.isOk())
    return counted.status();
  if (agree[0] < 0)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("another rank could not count the "
                                   "training records of {} (its error says "
                                   "why)",
                                   options.dataDir));
  if (agree[1] != -agree[2] || agree[3] != -agree[4])
    return KILN_STATUS(
        kInvalidArgument,
        fmt::format("the ranks see different training data in {}: rank {} "
                    "counts {} record{} in {} train file{}, the ranks between "
                    "{} and {} records{}; every rank must read the same files",
                    options.dataDir, comm.rank(), total, total == 1 ? "" : "s",
                    counted->files.size(),
                    counted->files.size() == 1 ? "" : "s", agree[1], -agree[2],
                    agree[1] == -agree[2] ? " (the same total in other files)"
                                          : ""));
  if (comm.rank() == 0)
    for (const Status &stopped : counted->stoppedBy)
      if (!stopped.isOk())
        std::fprintf(stderr,
                     "kiln: counting records: %s; the rest of the file is "
                     "skipped (--skip-bad-records)\n",
                     stopped.message().c_str());

  // Rank r reads floor or ceil(N / R) records per epoch; every rank takes
  // the steps the smaller share fills.
  uint64_t share = total / uint64_t(ranks);
  int64_t steps = static_cast<int64_t>(share / uint64_t(batch));
  if (steps == 0)
    return KILN_STATUS(
        kInvalidArgument,
        ranks == 1
            ? fmt::format("the {} training records in {} ({} train files) "
                          "are fewer than one batch of {}",
                          total, options.dataDir, counted->files.size(), batch)
            : fmt::format("the {} training records in {} ({} train files) "
                          "give each of the {} ranks {}, fewer than one "
                          "batch of {}",
                          total, options.dataDir, counted->files.size(), ranks,
                          share, batch));
  uint64_t trained = uint64_t(steps) * uint64_t(batch) * uint64_t(ranks);
  uint64_t left = total - trained;
  std::string summary = fmt::format(
      "{} records over {} rank{}: {} step{} per epoch of {} global batch; {}",
      total, ranks, ranks == 1 ? "" : "s", steps, steps == 1 ? "" : "s",
      batch * ranks,
      left == 0 ? std::string("every record trained on once per epoch")
                : fmt::format("{} record{} per epoch not trained on (the "
                              "remainder), different ones each epoch",
                              left, left == 1 ? "" : "s"));

  KILN_ASSIGN_OR_RETURN(kiln_rt_dataset_config_t config,
                        datasetConfig(options, function, "train", comm, seed));
  config.first_epoch = static_cast<uint32_t>(firstStep / steps);
  config.batches_per_epoch = static_cast<uint64_t>(steps);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> dataset,
                        Dataset::open(config, std::move(*counted)));
  if (dataset->batchBytes() != static_cast<uint64_t>(images.byteSize()))
    return KILN_STATUS(kInternal,
                       fmt::format("the pipeline's batch has {} bytes, the "
                                   "model's images slot {}",
                                   dataset->batchBytes(), images.byteSize()));
  return std::unique_ptr<InputSource>(new DatasetInput(
      function, steps, std::move(dataset), comm, std::move(summary)));
}

} // namespace kiln::rt::exec
