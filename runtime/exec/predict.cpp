//===- predict.cpp - Classifying images with a trained model --------------===//

#include "kiln/rt/exec/predict.h"

#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/context.h"
#include "kiln/rt/exec/cpu_check.h"
#include "kiln/rt/exec/input.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/output.h"
#include "kiln/rt/transform.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>

namespace kiln::rt::exec {
namespace {

/// The bytes of `path`.
StatusOr<std::string> readWholeFile(const std::string &path) {
  std::FILE *f = std::fopen(path.c_str(), "rb");
  KILN_CHECK_LIBC_PTR(f, "cannot open " + path);
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0)
    bytes.append(buffer, n);
  bool failed = std::ferror(f);
  int savedErrno = errno;
  std::fclose(f);
  if (failed)
    return errnoStatus(__FILE__, __LINE__, "cannot read " + path, savedErrno);
  return bytes;
}

/// The rank mpirun gave this process, from its environment (0 without
/// mpirun): prediction starts no communicator.
int launchRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoi(value);
  return 0;
}

class Predictor {
public:
  Predictor(const RunOptions &options, const ModelEntryPoints &model)
      : options(options), model(model) {}

  /// Everything before the first image: manifest, weights, kernels, the
  /// preprocessing, the labels.
  Status setup();
  /// Classifies every file; false if any could not be.
  StatusOr<bool> run();

private:
  /// Runs the eval step on the examples of `files`, written into the first
  /// slots of the images input, and prints their blocks.
  Status classify(const std::vector<std::string> &files);

  const RunOptions &options;
  const ModelEntryPoints &model;
  Manifest manifest;
  const Function *evalFn = nullptr;
  std::unique_ptr<Arena> arena;
  std::unique_ptr<Kernels> kernels;
  std::unique_ptr<Comm> comm;
  kiln_rt_context_t context;
  kiln_rt_arena_ref_t arenaRef{};
  std::unique_ptr<ExampleTransform> transform;
  OutputFormat format;
  int64_t classes = 0;
  std::vector<std::string> labels;
};

Status Predictor::setup() {
  if (!model.manifest)
    return KILN_STATUS(kInternal, "the model provides no manifest");
  size_t size = 0;
  const uint8_t *data = model.manifest(&size);
  KILN_ASSIGN_OR_RETURN(manifest, parseManifest(manifestBytes(data, size)));
  evalFn = manifest.findFunction("eval");
  if (!evalFn || !model.eval)
    return KILN_STATUS(kInvalidArgument,
                       "--predict: the model has no eval function (compile "
                       "it with one)");
  if (model.target)
    KILN_RETURN_IF_ERROR(checkTargetCpu(model.target()));
  classes = evalFn->output("logits")->shape[1];
  if (!options.labels.empty()) {
    KILN_ASSIGN_OR_RETURN(labels, readLabels(options.labels, classes));
  }

  KILN_RETURN_IF_ERROR(setComputeThreads(
      options.threads ? static_cast<int>(options.threads) : availableCores()));
  KILN_ASSIGN_OR_RETURN(arena, Arena::allocate(manifest.arenaBytes));
  KILN_RETURN_IF_ERROR(initializeVariables(manifest, arena->data(), 0));
  std::string weights;
  if (!options.initFrom.empty()) {
    KILN_RETURN_IF_ERROR(
        loadInitialValues(options.initFrom, manifest, arena->data()));
    weights = options.initFrom;
  } else {
    std::vector<std::string> warnings;
    KILN_ASSIGN_OR_RETURN(
        std::optional<LoadedCheckpoint> loaded,
        loadNewestCheckpoint(options.modelDir, manifest, arena->data(),
                             warnings));
    for (const std::string &warning : warnings)
      fmt::print(stderr, "kiln: warning: {}\n", warning);
    if (!loaded)
      return KILN_STATUS(kNotFound,
                         fmt::format("--predict: no checkpoint in {} (train "
                                     "with --model-dir first, or pass "
                                     "--init-from FILE)",
                                     options.modelDir));
    weights = fmt::format("{} (step {})", loaded->path, loaded->info.step);
  }

  KernelOptions kernelOptions;
  kernelOptions.blockedWeights = options.blockedWeights;
  kernelOptions.convAlgorithm =
      parseConvAlgorithm(options.convAlgorithm).value_or(ConvAlgorithm::Auto);
  KILN_ASSIGN_OR_RETURN(kernels,
                        Kernels::create(manifest, arena->data(), kernelOptions));
  comm = createLocalComm();
  context.kernels = kernels.get();
  context.comm = comm.get();
  arenaRef = arena->ref();

  // The evaluation's configuration, so that an image is preprocessed as
  // --eval preprocesses the record holding it.
  KILN_ASSIGN_OR_RETURN(
      kiln_rt_dataset_config_t config,
      datasetConfig(options, *evalFn, "validation", *comm, 0));
  transform =
      std::make_unique<ExampleTransform>(TransformOptions::fromConfig(config));
  format = OutputFormat::fromConfig(config);
  fmt::print("kiln: model {}: {} classes, {}x{}x{} images, weights {}\n",
             manifest.model, classes, format.height, format.width,
             format.channels, weights);
  std::fflush(stdout);
  return Status::ok();
}

StatusOr<bool> Predictor::run() {
  const TensorRef &images = *evalFn->input("images");
  const int64_t batch = images.shape[0];
  std::vector<float> hwc(size_t(format.height) * format.width *
                         format.channels);
  bool allGood = true;
  std::vector<std::string> pending;
  auto flush = [&]() -> Status {
    if (pending.empty())
      return Status::ok();
    Status status = classify(pending);
    pending.clear();
    return status;
  };
  for (const std::string &file : options.predict) {
    Status status = [&]() -> Status {
      KILN_ASSIGN_OR_RETURN(std::string bytes, readWholeFile(file));
      KILN_RETURN_IF_ERROR(transform->applyToImage(bytes, hwc.data()));
      writeExample(hwc.data(), format, arena->data() + images.offset,
                   pending.size());
      return Status::ok();
    }();
    if (!status.isOk()) {
      // Each file is its own question: the others still get answers.
      std::fflush(stdout);
      fmt::print(stderr, "kiln: error: {}: {}\n", file, status.message());
      std::fflush(stderr);
      allGood = false;
      continue;
    }
    pending.push_back(file);
    if (int64_t(pending.size()) == batch)
      KILN_RETURN_IF_ERROR(flush());
  }
  KILN_RETURN_IF_ERROR(flush());
  return allGood;
}

Status Predictor::classify(const std::vector<std::string> &files) {
  const TensorRef &images = *evalFn->input("images");
  const TensorRef &labelSlot = *evalFn->input("labels");
  const TensorRef &logits = *evalFn->output("logits");
  uint8_t *base = arena->data();
  for (size_t i = files.size(); i < size_t(images.shape[0]); ++i)
    zeroExample(format, base + images.offset, i);
  // The eval step takes labels (for its loss); any valid class will do.
  std::fill_n(reinterpret_cast<int32_t *>(base + labelSlot.offset),
              labelSlot.shape[0], 0);
  model.eval(&context, &arenaRef);

  std::vector<double> row(static_cast<size_t>(classes));
  for (size_t n = 0; n < files.size(); ++n) {
    for (int64_t c = 0; c < classes; ++c)
      row[size_t(c)] = loadElement(base + logits.offset, logits.dtype,
                                   int64_t(n) * classes + c);
    std::string block = files[n] + "\n";
    std::vector<ClassScore> top = topClasses(row, 5);
    for (size_t k = 0; k < top.size(); ++k) {
      block += fmt::format("  {}  {}  {:.6f}", k + 1, top[k].index,
                           top[k].probability);
      if (!labels.empty())
        block += "  " + labels[size_t(top[k].index)];
      block += "\n";
    }
    fmt::print("{}", block);
  }
  std::fflush(stdout);
  return Status::ok();
}

} // namespace

std::vector<ClassScore> topClasses(const std::vector<double> &logits,
                                   size_t k) {
  std::vector<ClassScore> scores;
  if (logits.empty())
    return scores;
  double maxLogit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (double logit : logits)
    sum += std::exp(logit - maxLogit);
  std::vector<size_t> order(logits.size());
  std::iota(order.begin(), order.end(), size_t(0));
  k = std::min(k, logits.size());
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](size_t a, size_t b) {
                      return logits[a] != logits[b] ? logits[a] > logits[b]
                                                    : a < b;
                    });
  for (size_t i = 0; i < k; ++i)
    scores.push_back({int64_t(order[i]),
                      std::exp(logits[order[i]] - maxLogit) / sum});
  return scores;
}

StatusOr<std::vector<std::string>> readLabels(const std::string &path,
                                              int64_t classes) {
  KILN_ASSIGN_OR_RETURN(std::string text, readWholeFile(path));
  std::vector<std::string> names;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    std::string name = text.substr(start, end - start);
    if (!name.empty() && name.back() == '\r')
      name.pop_back();
    if (name.empty())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("--labels {}:{}: an empty line (one "
                                     "class name per line)",
                                     path, names.size() + 1));
    names.push_back(std::move(name));
    start = end + 1;
  }
  if (int64_t(names.size()) != classes)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("--labels {} names {} classes, but the "
                                   "model has {}",
                                   path, names.size(), classes));
  return names;
}

int runPredict(const RunOptions &options, const ModelEntryPoints &model) {
  // Under mpirun every rank would print the same answers.
  if (launchRank() != 0)
    return kExitOk;
  Predictor predictor(options, model);
  Status status = predictor.setup();
  if (!status.isOk()) {
    fmt::print(stderr, "kiln: error: {}\n", status.message());
    return kExitError;
  }
  StatusOr<bool> done = predictor.run();
  if (!done.isOk()) {
    std::fflush(stdout);
    fmt::print(stderr, "kiln: error: {}\n", done.status().message());
    return kExitError;
  }
  return *done ? kExitOk : kExitError;
}

} // namespace kiln::rt::exec
