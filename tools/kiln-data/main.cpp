//===- main.cpp - kiln-data: convert data sets to sharded TFRecords -------===//
//
// A thin main: parses flags, runs a converter, prints the summary.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/convert.h"

#include "kiln/rt/inspect.h"

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>

namespace {

const char *kUsage =
    "usage: kiln-data <mode> --input DIR --output DIR [options]\n"
    "       kiln-data inspect DIR_OR_FILE [--split S] [--decode N]\n"
    "                 [--label-offset N] [--classes N]\n"
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
    "            checks their range), the image headers, and N records decoded\n"
    "            (--decode N, strict JPEG). Exit status 1 if a record is bad.\n"
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

uint64_t parseNumber(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(value.c_str(), &end, 10);
  if (value.empty() || *end || errno || value[0] == '-')
    usageError(flag + " expects a non-negative integer, got '" + value + "'");
  return v;
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

int64_t parseSigned(const std::string &flag, const std::string &value,
                    int64_t min, int64_t max) {
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || *end || errno || v < min || v > max)
    usageError(flag + " expects an integer in " + std::to_string(min) + ".." +
               std::to_string(max) + ", got '" + value + "'");
  return v;
}

/// Splits `--flag=value` into `arg` (the flag) and the returned value;
/// nullopt when the value is not attached.
std::optional<std::string> splitFlag(std::string &arg) {
  size_t eq = arg.find('=');
  if (arg.rfind("--", 0) != 0 || eq == std::string::npos)
    return std::nullopt;
  std::string value = arg.substr(eq + 1);
  arg.resize(eq);
  return value;
}

/// The value of `flag`: the attached one, or the next argument (consumed).
std::string flagValue(int argc, char **argv, int &i, const std::string &flag,
                      const std::optional<std::string> &attached) {
  if (attached)
    return *attached;
  if (i + 1 >= argc)
    usageError(flag + " needs a value");
  return argv[++i];
}

/// `kiln-data inspect`: the checks live in the library (kiln/rt/inspect.h).
int inspectMain(int argc, char **argv) {
  kiln::rt::InspectOptions options;
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> attached = splitFlag(arg);
    auto need = [&] { return flagValue(argc, argv, i, arg, attached); };
    if (arg == "--split")
      options.split = need();
    else if (arg == "--decode")
      options.decode = parseNumber(arg, need());
    else if (arg == "--label-offset")
      options.labelOffset =
          static_cast<int32_t>(parseSigned(arg, need(), INT32_MIN, INT32_MAX));
    else if (arg == "--classes")
      options.numClasses =
          static_cast<uint32_t>(parseSigned(arg, need(), 1, UINT32_MAX));
    else if (arg.rfind("--", 0) == 0)
      usageError("unknown option '" + arg + "'");
    else if (options.path.empty())
      options.path = arg;
    else
      usageError("inspect takes one DIR_OR_FILE, got '" + options.path +
                 "' and '" + arg + "'");
  }
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
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    std::optional<std::string> attached = splitFlag(arg);
    auto need = [&] { return flagValue(argc, argv, i, arg, attached); };
    if (arg == "--input")
      options.input = need();
    else if (arg == "--output")
      options.output = need();
    else if (arg == "--train-shards")
      options.trainShards = parseNumber(arg, need());
    else if (arg == "--validation-shards")
      options.validationShards = parseNumber(arg, need());
    else if (arg == "--splits")
      options.splits = splitList(need());
    else if (arg == "--seed")
      options.seed = parseNumber(arg, need());
    else if (arg == "--threads")
      options.threads = static_cast<unsigned>(parseNumber(arg, need()));
    else if (arg == "--skip-bad")
      options.skipBad = true;
    else if (arg == "--quiet")
      options.progress = false;
    else
      usageError("unknown option '" + arg + "'");
  }
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
