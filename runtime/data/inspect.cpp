//===- inspect.cpp - Checking a TFRecord data set before training ---------===//
#include "kiln/rt/inspect.h"

#include "kiln/rt/files.h"
#include "kiln/rt/transform.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <vector>

namespace kiln::rt {
namespace {

std::string where(const std::string &file, uint64_t index, uint64_t offset) {
  return file + ": record " + std::to_string(index) + " at byte offset " +
         std::to_string(offset);
}

const char *kindName(Feature::Kind kind) {
  switch (kind) {
  case Feature::Kind::kBytes:
    return "bytes";
  case Feature::Kind::kFloat:
    return "float";
  case Feature::Kind::kInt64:
    return "int64";
  case Feature::Kind::kNone:
    break;
  }
  return "empty";
}

__attribute__((format(printf, 2, 3))) void appendf(std::string &out,
                                                   const char *format, ...) {
  char buf[1024];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  out += buf;
}

std::string basename(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// Closes a stdio file on every path; close() reports the error of a write
/// the buffer deferred.
struct OutputFile {
  std::string path;
  std::FILE *file = nullptr;
  ~OutputFile() {
    if (file)
      std::fclose(file);
  }
  Status open(std::string p) {
    path = std::move(p);
    file = std::fopen(path.c_str(), "wb");
    KILN_CHECK_LIBC_PTR(file, "cannot create " + path);
    return Status::ok();
  }
  Status write(const void *data, size_t n) {
    if (n && std::fwrite(data, 1, n, file) != n) {
      int saved = errno;
      return errnoStatus(__FILE__, __LINE__, "cannot write " + path, saved);
    }
    return Status::ok();
  }
  Status close() {
    std::FILE *f = file;
    file = nullptr;
    KILN_CHECK_LIBC(std::fclose(f), "cannot write " + path);
    return Status::ok();
  }
};

/// Writes HWC pixels (whole values in 0..255, as the exact path of the
/// pipeline's transform stores them) as a binary PGM (1 channel) or PPM.
Status writeNetpbm(const std::string &path, int width, int height, int channels,
                   const std::vector<float> &pixels) {
  std::string bytes = std::string(channels == 1 ? "P5" : "P6") + "\n" +
                      std::to_string(width) + " " + std::to_string(height) +
                      "\n255\n";
  size_t header = bytes.size();
  bytes.resize(header + size_t(width) * height * channels);
  for (size_t i = 0; i + header < bytes.size(); ++i)
    bytes[header + i] = static_cast<char>(
        static_cast<uint8_t>(std::lround(std::clamp(pixels[i], 0.0f, 255.0f))));
  OutputFile out;
  KILN_RETURN_IF_ERROR(out.open(path));
  KILN_RETURN_IF_ERROR(out.write(bytes.data(), bytes.size()));
  return out.close();
}

/// A feature's text for one column of records.tsv: no tabs or line breaks.
std::string tsvField(std::string_view text) {
  std::string out(text);
  for (char &c : out)
    if (c == '\t' || c == '\n' || c == '\r')
      c = ' ';
  return out.empty() ? "-" : out;
}

/// `--dump`: each decoded record as an image file and a line of
/// records.tsv.
class Dumper {
public:
  Status open(const InspectOptions &options) {
    dir_ = options.dumpDir;
    transform_.labelOffset = options.labelOffset;
    transform_.numClasses = options.numClasses;
    if (options.maxImagePixels)
      transform_.maxImagePixels = options.maxImagePixels;
    // The whole image at its own size: the transform's exact path, which
    // stores the decoded bytes unchanged.
    transform_.augment = KILN_RT_AUGMENT_NONE;
    transform_.convertChannels = transform_.upscale = true;
    KILN_RETURN_IF_ERROR(makeDirectories(dir_));
    KILN_RETURN_IF_ERROR(index_.open(dir_ + "/records.tsv"));
    static const char kHeader[] = "file\trecord\tlabel\tclass\twidth\theight\t"
                                  "channels\tfilename\timage\n";
    return index_.write(kHeader, sizeof(kHeader) - 1);
  }

  /// Decodes `record` (already checked as `image`) and writes it. A decode
  /// error is the record's problem and goes to `problem`; the returned
  /// status is a failure to write.
  Status dump(const std::string &file, uint64_t index, std::string_view record,
              const Example &example, const RecordImage &image,
              Status &problem) {
    TransformOptions o = transform_;
    o.width = image.width;
    o.height = image.height;
    // What the pipeline makes of the image's color: gray stays gray, color
    // (and CMYK, which it converts) is RGB.
    o.channels = image.channels == 1 ? 1 : 3;
    pixels_.resize(size_t(o.width) * o.height * o.channels);
    int32_t label;
    ExampleTransform transform(o);
    problem = transform.apply(record, 0, pixels_.data(), label);
    if (!problem.isOk())
      return Status::ok();
    std::string name = basename(file) + "." + std::to_string(index) +
                       (o.channels == 1 ? ".pgm" : ".ppm");
    KILN_RETURN_IF_ERROR(
        writeNetpbm(dir_ + "/" + name, o.width, o.height, o.channels, pixels_));
    std::string_view source;
    if (example.find(keys::kFilename)) {
      if (StatusOr<std::string_view> f = example.getBytes(keys::kFilename);
          f.isOk())
        source = *f;
    }
    std::string line = tsvField(basename(file)) + "\t" + std::to_string(index) +
                       "\t" + std::to_string(image.storedLabel) + "\t" +
                       std::to_string(label) + "\t" + std::to_string(o.width) +
                       "\t" + std::to_string(o.height) + "\t" +
                       std::to_string(o.channels) + "\t" + tsvField(source) +
                       "\t" + name + "\n";
    return index_.write(line.data(), line.size());
  }

  Status close() { return index_.close(); }

private:
  std::string dir_;
  TransformOptions transform_;
  OutputFile index_;
  std::vector<float> pixels_;
};

} // namespace

Status inspectData(const InspectOptions &options, InspectReport &report) {
  report = InspectReport();
  std::vector<std::string> paths;
  struct stat st;
  KILN_CHECK_LIBC(::stat(options.path.c_str(), &st),
                  "cannot stat " + options.path);
  if (S_ISDIR(st.st_mode)) {
    KILN_ASSIGN_OR_RETURN(paths, listShards(options.path, options.split));
  } else {
    paths.push_back(options.path);
  }

  // The decoded sample: every stride-th record of the framing count.
  uint64_t total = 0;
  for (const std::string &path : paths) {
    KILN_ASSIGN_OR_RETURN(TfRecordCount count, countTfRecords(path, true));
    total += count.records;
  }
  // A dump without a sample size decodes (and writes) every record.
  uint64_t decode = options.decode;
  if (!options.dumpDir.empty() && !decode)
    decode = std::max<uint64_t>(total, 1);
  uint64_t stride = decode ? std::max<uint64_t>(1, total / decode) : 0;
  std::unique_ptr<Dumper> dumper;
  if (!options.dumpDir.empty()) {
    dumper = std::make_unique<Dumper>();
    KILN_RETURN_IF_ERROR(dumper->open(options));
  }

  TransformOptions transform;
  transform.labelOffset = options.labelOffset;
  transform.numClasses = options.numClasses;
  if (options.maxImagePixels)
    transform.maxImagePixels = options.maxImagePixels;
  // The records are checked, not their fit to a model: any channels, any size.
  transform.convertChannels = transform.upscale = true;
  // The decode check: the whole image (the full decode path, which reads to
  // the end-of-image marker), shrunk to a small output.
  TransformOptions decodeOptions = transform;
  decodeOptions.augment = KILN_RT_AUGMENT_NONE;
  decodeOptions.height = decodeOptions.width = 32;
  decodeOptions.channels = 3;
  ExampleTransform decoder(decodeOptions);
  std::vector<float> pixels(32 * 32 * 3);

  Example example;
  RecordImage image;
  std::string record;
  uint64_t position = 0;
  for (const std::string &path : paths) {
    KILN_ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader,
                          RecordReader::openFile(path));
    InspectReport::File file;
    file.path = path;
    file.compression = reader->compression();
    auto problem = [&](std::string message) {
      report.problems.push_back(std::move(message));
      ++file.bad;
    };
    for (;;) {
      Status s = reader->next(record);
      if (s.code() == StatusCode::kOutOfRange)
        break;
      if (s.code() == StatusCode::kDataLoss) {
        problem(s.message());
        if (!reader->canContinue())
          break;
        ++file.records; // the framing held: the record exists
        continue;
      }
      KILN_RETURN_IF_ERROR(s);
      ++file.records;
      std::string at = where(path, reader->recordIndex(), reader->recordOffset());
      bool sampled =
          stride && position++ % stride == 0 && report.decoded < decode;

      // What the record holds, whether or not it passes the checks.
      if (Status p = example.parse(record); !p.isOk()) {
        problem(at + ": " + p.message());
        continue;
      }
      for (const auto &[key, feature] : example.features())
        ++report.features[{std::string(key), feature.kind}];
      if (StatusOr<int64_t> label = example.getInt64(keys::kLabel);
          label.isOk())
        report.labels.add(*label);

      if (Status v = inspectRecord(record, transform, example, image);
          !v.isOk()) {
        problem(at + ": " + v.message());
        continue;
      }
      InspectReport::ImageFormat &format =
          report.formats[image.raw ? std::string(kRawFormat) : "JPEG"];
      ++format.records;
      format.width.add(image.width);
      format.height.add(image.height);
      if (sampled && dumper) {
        // The dump's decode is the whole image too: it is the check.
        ++report.decoded;
        Status d;
        KILN_RETURN_IF_ERROR(dumper->dump(path, reader->recordIndex(), record,
                                          example, image, d));
        if (!d.isOk())
          problem(at + ": " + d.message());
        else
          ++report.dumped;
      } else if (sampled) {
        ++report.decoded;
        int32_t label;
        if (Status d = decoder.apply(record, 0, pixels.data(), label);
            !d.isOk())
          problem(at + ": " + d.message());
      }
    }
    report.records += file.records;
    report.files.push_back(std::move(file));
  }
  if (dumper)
    KILN_RETURN_IF_ERROR(dumper->close());
  return Status::ok();
}

std::string formatInspectReport(const InspectOptions &options,
                                const InspectReport &report) {
  std::string out;
  appendf(out, "files (%zu):\n", report.files.size());
  for (const auto &f : report.files)
    appendf(out, "  %-32s %10" PRIu64 " records  %s%s\n", basename(f.path).c_str(),
         f.records, compressionName(f.compression),
         f.bad ? ("  " + std::to_string(f.bad) + " bad").c_str() : "");
  appendf(out, "features (records holding each):\n");
  for (const auto &[key, count] : report.features)
    appendf(out, "  %-32s %-6s %10" PRIu64 "\n", key.first.c_str(),
         kindName(key.second), count);
  if (report.labels.count) {
    const auto &l = report.labels;
    appendf(out, "labels: stored image/class/label %" PRId64 "..%" PRId64
         " over %" PRIu64 " records\n",
         l.min, l.max, l.count);
    int64_t off = options.labelOffset;
    appendf(out, "  with --label-offset %" PRId64 "%s: classes %" PRId64 "..%" PRId64
         "\n",
         off, off == 1 ? " (the default)" : "", l.min - off, l.max - off);
    if (l.min == 0 && off != 0)
      appendf(out, "  the smallest stored label is 0: the data looks 0-based; train "
           "with --label-offset 0\n");
    else if (l.min - off < 0)
      appendf(out, "  labels below the offset would be rejected\n");
  }
  for (const auto &[name, f] : report.formats)
    appendf(out, "images: %" PRIu64 " %s, width %" PRId64 "..%" PRId64
         ", height %" PRId64 "..%" PRId64 "\n",
         f.records, name.c_str(), f.width.min, f.width.max, f.height.min,
         f.height.max);
  if (options.decode || !options.dumpDir.empty())
    appendf(out, "decoded: %" PRIu64 " records (strict JPEG, the pipeline's path)\n",
         report.decoded);
  if (!options.dumpDir.empty())
    out += "dumped: " + std::to_string(report.dumped) + " records to " +
           options.dumpDir + " (records.tsv lists them)\n";
  for (const auto &p : report.problems)
    out += "bad: " + p + "\n"; // unbounded: not through appendf's buffer
  if (report.ok())
    appendf(out, "OK: %" PRIu64 " records in %zu files, no problem found\n",
         report.records, report.files.size());
  else
    appendf(out, "FAILED: %zu bad records among %" PRIu64 " in %zu files\n",
         report.problems.size(), report.records, report.files.size());
  return out;
}

} // namespace kiln::rt
