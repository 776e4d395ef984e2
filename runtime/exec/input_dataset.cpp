//===- input_dataset.cpp - Training batches from TFRecord shards ----------===//

#include "kiln/rt/exec/input.h"

#include "kiln/rt/files.h"
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
               std::unique_ptr<Dataset> dataset, const Comm &comm)
      : images(*function.input("images")), labels(*function.input("labels")),
        epochSteps(stepsPerEpoch), dataset(std::move(dataset)),
        rankPrefix(comm.size() > 1 ? fmt::format("rank {}: ", comm.rank())
                                   : "") {}

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

  double waitSeconds() const override {
    return double(dataset->stats().wait_ns) * 1e-9;
  }

private:
  TensorRef images, labels;
  int64_t epochSteps;
  std::unique_ptr<Dataset> dataset;
  std::string rankPrefix;
  std::string epochNote;
};

} // namespace

StatusOr<std::unique_ptr<InputSource>>
openDatasetInput(const RunOptions &options, const Function &function,
                 Comm &comm, uint64_t seed, int64_t firstStep) {
  const TensorRef &images = *function.input("images");
  int64_t batch = images.shape[0];

  // This rank's records (the pipeline's assignment: file i to rank i % R).
  KILN_ASSIGN_OR_RETURN(std::vector<std::string> files,
                        listShards(options.dataDir, "train"));
  uint64_t records = 0;
  size_t mine = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(comm.size())) != comm.rank())
      continue;
    // Under --skip-bad-records a bad length or a truncation ends the file
    // here as it does in the pipeline; the epoch is then filled (see
    // batches_per_epoch).
    KILN_ASSIGN_OR_RETURN(TfRecordCount n,
                          countTfRecords(files[i], options.skipBadRecords));
    if (!n.stoppedBy.isOk())
      std::fprintf(stderr,
                   "kiln: counting records: %s; the rest of the file is "
                   "skipped (--skip-bad-records)\n",
                   n.stoppedBy.message().c_str());
    records += n.records;
    ++mine;
  }
  // -1 marks a rank without shards, so every rank learns why the job stops.
  int64_t steps = mine ? static_cast<int64_t>(records) / batch : -1;
  int64_t common = steps;
  KILN_RETURN_IF_ERROR(comm.allreduceMin(&common, 1));
  if (mine == 0)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("rank {} of {} has no training shard: {} "
                                   "holds only {} train-* files",
                                   comm.rank(), comm.size(), options.dataDir,
                                   files.size()));
  if (common < 0)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("another rank has no training shard: {} "
                                   "holds {} train-* files for {} ranks",
                                   options.dataDir, files.size(), comm.size()));
  if (common == 0)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("a rank has fewer training records than "
                                   "one batch of {} (this rank: {} records "
                                   "in {} files of {})",
                                   batch, records, mine, options.dataDir));

  KILN_ASSIGN_OR_RETURN(kiln_rt_dataset_config_t config,
                        datasetConfig(options, function, "train", comm, seed));
  config.first_epoch = static_cast<uint32_t>(firstStep / common);
  config.batches_per_epoch = static_cast<uint64_t>(common);
  KILN_ASSIGN_OR_RETURN(std::unique_ptr<Dataset> dataset,
                        Dataset::open(config));
  if (dataset->batchBytes() != static_cast<uint64_t>(images.byteSize()))
    return KILN_STATUS(kInternal,
                       fmt::format("the pipeline's batch has {} bytes, the "
                                   "model's images slot {}",
                                   dataset->batchBytes(), images.byteSize()));
  return std::unique_ptr<InputSource>(
      new DatasetInput(function, common, std::move(dataset), comm));
}

} // namespace kiln::rt::exec
