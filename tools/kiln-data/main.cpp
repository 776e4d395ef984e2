//===- main.cpp - kiln-data: convert data sets to sharded TFRecords -------===//
//
// A thin main: parses flags, runs a converter, prints the summary.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/convert.h"

#include "kiln/base/flags.h"
#include "kiln/rt/inspect.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char *kUsage =
    "usage: kiln-data <mode> --input DIR --output DIR [options]\n"
    "       kiln-data inspect DIR_OR_FILE [--split S] [--decode N]\n"
    "                 [--label-offset N] [--classes N] [--dump DIR]\n"
    "\n"
    "modes:\n"
    "  idx       MNIST-style IDX files in DIR: {train,t10k}-{images-idx3,"
    "labels-idx1}-ubyte[.gz]\n"
    "            (t10k becomes 'validation'); pixels stored raw, lossless\n"
    "  imagenet  DIR/train/<synset>/*.JPEG, DIR/validation/*.JPEG and\n"
    "            DIR/synset_labels.txt, as imagenet_to_gcs.py reads them\n"
    "  inspect   check the shards of a split (default train) or one file as\n"
    "            the training pipeline reads them: both CRCs of every record,\n"
    "            the keys, the labels (--label-offset, default 1; --classes N\n"
    "            checks their range), the image headers, and N records "
    "decoded\n"
    "            (--decode N, strict JPEG). Exit status 1 if a record is bad.\n"
    "            --dump DIR writes the decoded records (all, or the N of\n"
    "            --decode N) to DIR as <file>.<record>.pgm/.ppm, whole and\n"
    "            at their stored size, with DIR/records.tsv listing each\n"
    "            one's file, record, stored label, class, size, channels\n"
    "            and image/filename.\n"
    "\n"
    "options:\n"
    "  --train-shards N        training shards (imagenet 1024, idx 16)\n"
    "  --validation-shards N   validation shards (imagenet 128, idx 4)\n"
    "  --splits LIST           train,validation (default both)\n"
    "  --seed N                shuffle seed (default 0)\n"
    "  --threads N             writer threads (default: all cores)\n"
    "  --skip-bad              skip unreadable inputs and count them\n"
    "  --quiet                 no progress bar\n"
    "\n"
    "Output: <split>-NNNNN-of-NNNNN files of tf.train.Example with the keys\n"
    "image/encoded, image/class/label (1-based), image/height, image/width,\n"
    "image/channels, image/format, image/colorspace, image/filename\n"
    "(and image/class/synset for imagenet).\n";

[[noreturn]] void usageError(const std::string &message) {
  std::fprintf(stderr, "kiln-data: error: %s\n\n%s", message.c_str(), kUsage);
  std::exit(2);
}

/// A non-negative integer: "<flag> expects a non-negative integer, got
/// '<value>'".
template <typename T> kiln::flags::Flag numberFlag(T &target) {
  return kiln::flags::valueFlag(
      [&target](const std::string &flag, const std::string &value) {
        char *end = nullptr;
        errno = 0;
        unsigned long long v = std::strtoull(value.c_str(), &end, 10);
        if (value.empty() || *end || errno || value[0] == '-')
          return kiln::flags::usageError(
              flag + " expects a non-negative integer, got '" + value + "'");
        target = static_cast<T>(v);
        return kiln::Status::ok();
      });
}

std::vector<std::string> splitList(const std::string &s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos)
      comma = s.size();
    if (comma > pos)
      out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

/// An integer in [min, max]: "<flag> expects an integer in <min>..<max>,
/// got '<value>'".
template <typename T>
kiln::flags::Flag signedFlag(T &target, int64_t min, int64_t max) {
  return kiln::flags::valueFlag(
      [&target, min, max](const std::string &flag, const std::string &value) {
        char *end = nullptr;
        errno = 0;
        long long v = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || *end || errno || v < min || v > max)
          return kiln::flags::usageError(
              flag + " expects an integer in " + std::to_string(min) + ".." +
              std::to_string(max) + ", got '" + value + "'");
        target = static_cast<T>(v);
        return kiln::Status::ok();
      });
}

std::string unknownOption(const std::string &arg) {
  return "unknown option '" + arg + "'";
}

/// `kiln-data inspect`: the checks live in the library (kiln/rt/inspect.h).
int inspectMain(int argc, char **argv) {
  kiln::rt::InspectOptions options;
  kiln::flags::Parser parser;
  parser.add("--split", kiln::flags::stringFlag(options.split));
  parser.add("--decode", numberFlag(options.decode));
  parser.add("--label-offset",
             signedFlag(options.labelOffset, INT32_MIN, INT32_MAX));
  parser.add("--classes", signedFlag(options.numClasses, 1, UINT32_MAX));
  parser.add("--dump", kiln::flags::stringFlag(options.dumpDir));
  parser.setUnknownMessage(unknownOption);
  parser.setPositional([&](const std::string &arg) {
    if (!options.path.empty())
      return kiln::flags::usageError("inspect takes one DIR_OR_FILE, got '" +
                                     options.path + "' and '" + arg + "'");
    options.path = arg;
    return kiln::Status::ok();
  });
  if (kiln::Status s = parser.parse(argc, argv, 2); !s.isOk())
    usageError(s.message());
  if (options.path.empty())
    usageError("inspect needs a directory or a TFRecord file");
  kiln::rt::InspectReport report;
  kiln::Status status = kiln::rt::inspectData(options, report);
  if (!status.isOk()) {
    std::fprintf(stderr, "kiln-data: error: %s\n", status.toString().c_str());
    return 1;
  }
  std::fputs(kiln::rt::formatInspectReport(options, report).c_str(), stdout);
  return report.ok() ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  using namespace kiln::data;
  if (argc < 2 || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string mode = argv[1];
  if (mode == "inspect")
    return inspectMain(argc, argv);
  if (mode != "idx" && mode != "imagenet")
    usageError("unknown mode '" + mode + "'");

  ConvertOptions options;
  kiln::flags::Parser parser;
  parser.add("--input", kiln::flags::stringFlag(options.input));
  parser.add("--output", kiln::flags::stringFlag(options.output));
  parser.add("--train-shards", numberFlag(options.trainShards));
  parser.add("--validation-shards", numberFlag(options.validationShards));
  parser.add("--splits", kiln::flags::valueFlag(
                             [&](const std::string &, const std::string &v) {
                               options.splits = splitList(v);
                               return kiln::Status::ok();
                             }));
  parser.add("--seed", numberFlag(options.seed));
  parser.add("--threads", numberFlag(options.threads));
  parser.add("--skip-bad", kiln::flags::switchFlag(options.skipBad));
  parser.add("--quiet", kiln::flags::switchFlag(options.progress, false));
  parser.setUnknownMessage(unknownOption);
  if (kiln::Status s = parser.parse(argc, argv, 2); !s.isOk())
    usageError(s.message());
  if (options.input.empty() || options.output.empty())
    usageError("--input and --output are required");

  auto start = std::chrono::steady_clock::now();
  ConvertSummary summary;
  kiln::Status status = mode == "idx" ? convertIdx(options, summary)
                                      : convertImagenet(options, summary);
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (!status.isOk()) {
    std::fprintf(stderr, "kiln-data: error: %s\n", status.toString().c_str());
    return 1;
  }
  std::printf(
      "kiln-data %s: %llu records in %llu shards, %.1f MB, %.2f s "
      "(%.0f records/s), %llu skipped -> %s\n",
      mode.c_str(), static_cast<unsigned long long>(summary.records),
      static_cast<unsigned long long>(summary.shards), summary.bytes / 1e6,
      secs, secs > 0 ? summary.records / secs : 0.0,
      static_cast<unsigned long long>(summary.skipped), options.output.c_str());
  return 0;
}
