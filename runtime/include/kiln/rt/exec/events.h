//===- events.h - TensorBoard event files -----------------------*- C++ -*-===//
//
// Rank 0 writes <model-dir>/events.out.tfevents.<seconds>.<host>.<pid>.<n>, the
// file TensorBoard (and tf.summary readers) load: TFRecord-framed
// `tensorflow.Event` protos (tensorflow/core/util/event.proto), the first
// holding `file_version: "brain.Event:2"`, each later one a step's scalars as
// `Summary.Value{tag, simple_value}`. MetricsLog feeds it every row it
// writes, so metrics.jsonl and the event file carry the same numbers
// (docs/runtime.md "Metrics" lists the tags). A new file per run: TensorBoard
// reads every event file of a directory, so a resumed run continues the
// curves.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_EVENTS_H
#define KILN_RT_EXEC_EVENTS_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

/// One scalar of a step: TensorBoard's tag and value.
struct Scalar {
  std::string tag;
  double value;
};

/// The serialized `Event` with `file_version` that starts every event file.
std::string encodeFileVersionEvent(double wallTime);
/// The serialized `Event` holding `scalars` as simple values at `step`.
std::string encodeScalarsEvent(double wallTime, int64_t step,
                               const std::vector<Scalar> &scalars);

class EventFile {
public:
  EventFile() = default;
  ~EventFile();
  EventFile(const EventFile &) = delete;
  EventFile &operator=(const EventFile &) = delete;

  /// Creates the event file in `dir` (which must exist) and writes its
  /// file-version record.
  Status open(const std::string &dir);
  bool isOpen() const { return fd_ >= 0; }
  /// Appends one event with `scalars` at `step`, wall time now. A record
  /// goes out in one write(2), so TensorBoard never reads half of one.
  Status write(int64_t step, const std::vector<Scalar> &scalars);
  const std::string &path() const { return path_; }

private:
  Status append(const std::string &event);

  int fd_ = -1;
  std::string path_;
};

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_EVENTS_H
