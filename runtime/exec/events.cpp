//===- events.cpp - TensorBoard event files -------------------------------===//

#include "kiln/rt/exec/events.h"

#include "kiln/rt/protobuf_wire.h"
#include "kiln/rt/tfrecord.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace kiln::rt::exec {

namespace {

// Field numbers of tensorflow.Event and tensorflow.Summary(.Value).
constexpr uint32_t kEventWallTime = 1;    // double
constexpr uint32_t kEventStep = 2;        // int64
constexpr uint32_t kEventFileVersion = 3; // string
constexpr uint32_t kEventSummary = 5;     // Summary
constexpr uint32_t kSummaryValue = 1;     // repeated Summary.Value
constexpr uint32_t kValueTag = 1;         // string
constexpr uint32_t kValueSimpleValue = 2; // float

void appendWallTime(std::string &event, double wallTime) {
  appendTag(event, kEventWallTime, kFixed64);
  appendFixed64(event, wallTime);
}

double now() {
  return std::chrono::duration<double>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

} // namespace

std::string encodeFileVersionEvent(double wallTime) {
  std::string event;
  appendWallTime(event, wallTime);
  appendLengthDelimited(event, kEventFileVersion, "brain.Event:2");
  return event;
}

std::string encodeScalarsEvent(double wallTime, int64_t step,
                               const std::vector<Scalar> &scalars) {
  std::string summary;
  for (const Scalar &s : scalars) {
    std::string value;
    appendLengthDelimited(value, kValueTag, s.tag);
    appendTag(value, kValueSimpleValue, kFixed32);
    appendFixed32(value, static_cast<float>(s.value));
    appendLengthDelimited(summary, kSummaryValue, value);
  }
  std::string event;
  appendWallTime(event, wallTime);
  appendTag(event, kEventStep, kVarint);
  appendVarint(event, static_cast<uint64_t>(step));
  appendLengthDelimited(event, kEventSummary, summary);
  return event;
}

EventFile::~EventFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status EventFile::open(const std::string &dir) {
  double wallTime = now();
  char host[256] = "localhost";
  ::gethostname(host, sizeof(host) - 1);
  // TensorFlow's own name, plus a count: several runs (or tests) of one
  // process may open a file in the same second.
  static std::atomic<int> opened{0};
  path_ = fmt::format("{}/events.out.tfevents.{}.{}.{}.{}", dir,
                      static_cast<long long>(wallTime), host, ::getpid(),
                      opened++);
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  KILN_CHECK_LIBC(fd_, "create " + path_);
  return append(encodeFileVersionEvent(wallTime));
}

Status EventFile::write(int64_t step, const std::vector<Scalar> &scalars) {
  return append(encodeScalarsEvent(now(), step, scalars));
}

Status EventFile::append(const std::string &event) {
  std::string record;
  appendTfRecord(record, event);
  size_t done = 0;
  while (done < record.size()) {
    ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return KILN_STATUS(
          kIoError, fmt::format("writing a record of {} bytes to {} failed "
                                "after {} bytes: {}",
                                record.size(), path_, done,
                                n < 0 ? std::strerror(errno) : "no progress"));
    done += size_t(n);
  }
  return Status::ok();
}

} // namespace kiln::rt::exec
