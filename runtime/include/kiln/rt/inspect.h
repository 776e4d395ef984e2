//===- inspect.h - Checking a TFRecord data set before training -*- C++ -*-===//
//
// The logic of `kiln-data inspect`: reads every record of a split (or of one
// file) the way the pipeline does -- both CRCs, the Example, the label
// against the convention, the image header and size -- and decodes a sample
// through the pipeline's own decoding path (strict JPEG), so that a data set
// can be checked before a run trains on it. Optionally writes the decoded
// images and their labels out, so that what the pipeline sees can be looked
// at, or compared with what another reader (TensorFlow) decodes.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_INSPECT_H
#define KILN_RT_INSPECT_H

#include "kiln/base/status.h"
#include "kiln/rt/example.h"
#include "kiln/rt/tfrecord.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace kiln::rt {

struct InspectOptions {
  /// A directory (its `split` shards) or one TFRecord file.
  std::string path;
  std::string split = "train";
  /// Records decoded, spread evenly over the data set.
  uint64_t decode = 0;
  int32_t labelOffset = 1;
  /// Checked label range (0: only the int32 fit is checked).
  uint32_t numClasses = 0;
  uint64_t maxImagePixels = 0; ///< 0: the pipeline's default
  /// If set, each decoded record (every record when `decode` is 0) is written
  /// to this directory as `<file>.<record>.pgm` (1 channel) or `.ppm`
  /// (3 channels): the whole image at its stored size, as the pipeline
  /// decodes it, before any resize or normalization. `records.tsv` lists
  /// them: file, record, stored label, class, width, height, channels,
  /// image/filename and the image's file name.
  std::string dumpDir;
};

struct InspectReport {
  struct File {
    std::string path;
    TfRecordCompression compression = TfRecordCompression::kNone;
    uint64_t records = 0; ///< records whose framing is intact
    uint64_t bad = 0;
  };
  struct Range {
    int64_t min = 0, max = 0;
    uint64_t count = 0;
    void add(int64_t v) {
      min = count ? std::min(min, v) : v;
      max = count ? std::max(max, v) : v;
      ++count;
    }
  };
  struct ImageFormat {
    uint64_t records = 0;
    Range width, height;
  };
  std::vector<File> files;
  uint64_t records = 0;
  /// Records holding each (key, kind).
  std::map<std::pair<std::string, Feature::Kind>, uint64_t> features;
  Range labels; ///< stored image/class/label values
  std::map<std::string, ImageFormat> formats;
  uint64_t decoded = 0;
  uint64_t dumped = 0;
  /// Every bad record, with its file, record index and byte offset.
  std::vector<std::string> problems;

  bool ok() const { return problems.empty(); }
};

/// Inspects the data; the returned status is an error only when the data
/// cannot be found or read at all (bad records go into the report).
Status inspectData(const InspectOptions &options, InspectReport &report);

/// The report as text for a terminal, ending with a summary line.
std::string formatInspectReport(const InspectOptions &options,
                                const InspectReport &report);

} // namespace kiln::rt

#endif // KILN_RT_INSPECT_H
