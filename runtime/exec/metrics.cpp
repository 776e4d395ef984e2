//===- metrics.cpp - metrics.jsonl ----------------------------------------===//

#include "kiln/rt/exec/metrics.h"

#include "kiln/base/json.h"
#include "kiln/rt/files.h"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

namespace kiln::rt::exec {

JsonField JsonField::number(std::string key, double v) {
  // JSON has no NaN/Inf; null says "not a number" without breaking readers.
  return {std::move(key),
          std::isfinite(v) ? fmt::format("{:.9g}", v) : "null", true, v, {}};
}

JsonField JsonField::integer(std::string key, long long v) {
  return {std::move(key), std::to_string(v), true, double(v), {}};
}

JsonField JsonField::text(std::string key, const std::string &v) {
  return {std::move(key), json::quote(v), false, 0, v};
}

MetricsLog::~MetricsLog() {
  if (fd_ >= 0)
    ::close(fd_);
}

namespace {

/// The length of the file behind `fd` up to and including its last newline
/// (0 if it has none), reading backwards from `size`.
StatusOr<off_t> lastCompleteLine(int fd, off_t size, const std::string &path) {
  char buffer[4096];
  for (off_t end = size; end > 0;) {
    off_t begin = std::max<off_t>(0, end - off_t(sizeof(buffer)));
    ssize_t n = ::pread(fd, buffer, size_t(end - begin), begin);
    KILN_CHECK_LIBC(n, "read " + path);
    if (n != end - begin)
      return KILN_STATUS(kIoError, "read " + path + ": the file shrank");
    for (off_t i = end - begin; i > 0; --i)
      if (buffer[i - 1] == '\n')
        return begin + i;
    end = begin;
  }
  return off_t(0);
}

} // namespace

Status MetricsLog::open(const std::string &dir, bool tensorboard) {
  KILN_RETURN_IF_ERROR(makeDirectories(dir));
  if (tensorboard)
    KILN_RETURN_IF_ERROR(events_.open(dir));
  path_ = dir + "/metrics.jsonl";
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  KILN_CHECK_LIBC(fd_, "open " + path_ + " for appending");
  struct stat st;
  KILN_CHECK_LIBC(::fstat(fd_, &st), "stat " + path_);
  complete_ = st.st_size;
  if (!S_ISREG(st.st_mode) || complete_ == 0)
    return Status::ok();
  // A run killed in the middle of a line (by an older runtime; this one
  // writes whole lines) would glue that torn line to our first one.
  int reader = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  KILN_CHECK_LIBC(reader, "open " + path_ + " for reading");
  auto complete = lastCompleteLine(reader, complete_, path_);
  ::close(reader);
  KILN_RETURN_IF_ERROR(complete.status());
  if (*complete != complete_) {
    KILN_CHECK_LIBC(::ftruncate(fd_, *complete),
                    "cut the torn last line of " + path_);
    fmt::print(stderr,
               "kiln: warning: {} ended in a torn line; removed its {} "
               "bytes\n",
               path_, complete_ - *complete);
    complete_ = *complete;
  }
  return Status::ok();
}

Status MetricsLog::write(const std::vector<JsonField> &fields) {
  KILN_RETURN_IF_ERROR(writeLine(fields));
  return events_.isOpen() ? writeEvent(fields) : Status::ok();
}

Status MetricsLog::writeEvent(const std::vector<JsonField> &fields) {
  std::string kind = "metrics", loc, layer;
  for (const JsonField &f : fields) {
    if (f.key == "step" && f.isNumber)
      lastStep_ = static_cast<long long>(f.numeric);
    else if (f.key == "kind")
      kind = f.textValue;
    else if (f.key == "loc")
      loc = f.textValue;
    else if (f.key == "layer")
      layer = f.textValue;
  }
  // A layer row's series is named by its layer; an op row's by its line,
  // since the ops of a layer share its name.
  std::string series = kind == "profile_layer" && !layer.empty() ? layer : loc;
  std::string prefix = series.empty() ? "" : series + "/";
  std::vector<Scalar> scalars;
  for (const JsonField &f : fields)
    if (f.isNumber && f.key != "step")
      scalars.push_back({kind + "/" + prefix + f.key, f.numeric});
  return scalars.empty() ? Status::ok() : events_.write(lastStep_, scalars);
}

Status MetricsLog::writeLine(const std::vector<JsonField> &fields) {
  std::string line = "{";
  for (size_t i = 0; i < fields.size(); ++i)
    line += fmt::format("{}\"{}\":{}", i ? "," : "", fields[i].key,
                        fields[i].value);
  line += "}\n";
  // One write per line, so that a reader (tail -f, a plotting script) never
  // sees half a line; a loop only for the rare short write.
  size_t done = 0;
  int err = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += size_t(n);
  }
  if (done == line.size()) {
    complete_ += off_t(line.size());
    return Status::ok();
  }
  // A full disk or a file-size limit: leave no torn line behind.
  std::string cut =
      ::ftruncate(fd_, complete_) == 0
          ? fmt::format("cut back to its last complete line ({} bytes)",
                        complete_)
          : fmt::format("cutting it back to its last complete line failed "
                        "too: {}",
                        std::strerror(errno));
  return KILN_STATUS(kIoError,
                     fmt::format("writing a line of {} bytes to {} failed "
                                 "after {} bytes: {}; {}",
                                 line.size(), path_, done,
                                 std::strerror(err), cut));
}

std::string formatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 1e8)
    return "?";
  auto s = static_cast<long long>(std::llround(seconds));
  if (s >= 3600)
    return fmt::format("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60);
  if (s >= 60)
    return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

} // namespace kiln::rt::exec
