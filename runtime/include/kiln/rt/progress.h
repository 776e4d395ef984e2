//===- progress.h - A thread-safe progress bar on stderr --------*- C++ -*-===//
#ifndef KILN_DATA_PROGRESS_H
#define KILN_DATA_PROGRESS_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace kiln::data {

/// Redraws at most ten times a second on a terminal; when stderr is not a
/// terminal (logs, CI) prints one line per 10% instead of carriage returns.
class Progress {
public:
  Progress(std::string label, uint64_t total, bool enabled);
  void add(uint64_t records, uint64_t bytes);
  /// Draws the final state and ends the line.
  void finish();

private:
  void draw(bool final);
  std::string label_;
  uint64_t total_;
  bool enabled_;
  bool tty_;
  std::atomic<uint64_t> done_{0}, bytes_{0};
  std::mutex drawMu_;
  std::chrono::steady_clock::time_point start_, lastDraw_;
  int lastDecile_ = 0;
};

} // namespace kiln::data

#endif // KILN_DATA_PROGRESS_H
