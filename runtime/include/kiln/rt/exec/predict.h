//===- predict.h - Classifying images with a trained model ------*- C++ -*-===//
//
// `--predict FILE...`: the executable classifies JPEG files with its compiled
// eval step and the weights of a checkpoint (--init-from, or the newest in
// --model-dir) instead of training. Each image goes through the evaluation
// pipeline's own code (ExampleTransform::applyToImage: the center crop of
// KILN_RT_AUGMENT_EVAL, the image policy of --convert-channels and
// --upscale; then the batch format with --mean/--std, as datasetConfig
// sets them for --eval), so an image is classified exactly as --eval
// scores the record holding it. Images go through the step in batches of the
// compiled batch size, the last one padded with zeros (the eval step's
// batch norm uses running statistics, so padding changes no other example).
//
// Output, one block per file in command-line order:
//
//   cat.jpg
//     1  281  0.912345  tabby cat
//     2  282  0.051234  tiger cat
//
// rank, class, probability (softmax of the logits, in double), and the
// class's name with --labels. A file that cannot be read or decoded (missing,
// not a JPEG, truncated, other channels without --convert-channels) is an
// error naming it on stderr; the others are still classified, and the exit
// status is 1. Under mpirun only rank 0 predicts (no collective runs).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_PREDICT_H
#define KILN_RT_EXEC_PREDICT_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/options.h"
#include "kiln/rt/exec/trainer.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt::exec {

/// One class of a prediction.
struct ClassScore {
  int64_t index = 0;
  double probability = 0;
};

/// The `k` most probable classes of one row of `classes` logits, most
/// probable first (ties: the lower class first), with softmax
/// probabilities computed in double.
std::vector<ClassScore> topClasses(const std::vector<double> &logits,
                                   size_t k);

/// Reads a labels file: one class name per line (a final newline optional,
/// "\r\n" accepted). kInvalidArgument naming the file if its count differs
/// from `classes` or a line is empty; kNotFound/kIoError if unreadable.
StatusOr<std::vector<std::string>> readLabels(const std::string &path,
                                              int64_t classes);

/// --predict: runs as described above and returns the exit code.
int runPredict(const RunOptions &options, const ModelEntryPoints &model);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_PREDICT_H
