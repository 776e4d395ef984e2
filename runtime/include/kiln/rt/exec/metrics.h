//===- metrics.h - metrics.jsonl and progress-line formatting ---*- C++ -*-===//
//
// Rank 0 appends one JSON object per line to <model-dir>/metrics.jsonl:
//
//   {"kind":"train","step":120,"epoch":1.2,"loss":2.3456,"lr":0.1,
//    "images_per_sec":1234.5,"elapsed_sec":12.3}
//   {"kind":"eval","step":4680,"epoch":10,"top1":0.752,"top5":0.924,
//    "loss":1.01,"examples":50000}
//   {"kind":"summary","steps":4680,"seconds":3600.5,"images_per_sec":...,
//    "final_loss":...,"checkpoint":"..."}
//
// Appending (never truncating) keeps the history of a resumed run in one
// file. Every line goes out in one write(2) as soon as it is complete; a
// write that fails or stops short (a full disk) cuts the file back to its
// last complete line and is an error naming the file, and opening the file
// removes a torn last line that a killed run left.
//
// Unless turned off (--tensorboard off), every row also goes to a TensorBoard
// event file beside it (events.h): each numeric field becomes the scalar
// "<kind>/<key>" at the row's step (the last step seen for rows without
// one), and a profile row's series is in the tag: a layer row's "layer"
// ("profile_layer/layer1.0.conv1/library_sec"), any other row's "loc"
// ("profile_op/tiny.mlir:12/seconds").
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_METRICS_H
#define KILN_RT_EXEC_METRICS_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/events.h"

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

/// A JSON value already rendered: numbers via number(), strings via text().
/// Numbers and strings keep their values for the event file too.
struct JsonField {
  std::string key;
  std::string value;
  bool isNumber = false;
  double numeric = 0;
  std::string textValue; ///< a string's value, unquoted
  static JsonField number(std::string key, double v);
  static JsonField integer(std::string key, long long v);
  static JsonField text(std::string key, const std::string &v);
};

class MetricsLog {
public:
  MetricsLog() = default;
  ~MetricsLog();
  MetricsLog(const MetricsLog &) = delete;
  MetricsLog &operator=(const MetricsLog &) = delete;

  /// Opens <dir>/metrics.jsonl for appending (creates dir) and, with
  /// `tensorboard`, a new event file in dir.
  Status open(const std::string &dir, bool tensorboard = true);
  bool isOpen() const { return fd_ >= 0; }
  /// Appends one line holding `fields`, and their numbers to the event file.
  Status write(const std::vector<JsonField> &fields);
  const std::string &path() const { return path_; }

private:
  Status writeLine(const std::vector<JsonField> &fields);
  Status writeEvent(const std::vector<JsonField> &fields);

  int fd_ = -1;
  std::string path_;
  off_t complete_ = 0; ///< bytes up to the end of the last complete line
  EventFile events_;
  long long lastStep_ = 0;
};

/// "1h02m03s", "5m07s", "42s".
std::string formatDuration(double seconds);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_METRICS_H
