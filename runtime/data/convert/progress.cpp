//===- progress.cpp - Progress bar
//-----------------------------------------===//
#include "kiln/rt/progress.h"

#include <cstdio>
#include <unistd.h>

namespace kiln::data {

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)), total_(total), enabled_(enabled),
      tty_(::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()), lastDraw_(start_) {}

void Progress::add(uint64_t records, uint64_t bytes) {
  done_.fetch_add(records);
  bytes_.fetch_add(bytes);
  if (!enabled_)
    return;
  // Never block a writer thread on drawing.
  std::unique_lock<std::mutex> lock(drawMu_, std::try_to_lock);
  if (lock.owns_lock())
    draw(false);
}

void Progress::finish() {
  if (!enabled_)
    return;
  std::lock_guard<std::mutex> lock(drawMu_);
  draw(true);
}

void Progress::draw(bool final) {
  auto now = std::chrono::steady_clock::now();
  uint64_t done = done_.load();
  double frac = total_ ? double(done) / total_ : 1.0;
  int decile = static_cast<int>(frac * 10);
  if (final && !tty_ && lastDecile_ == 10)
    return; // the 100% line is already out
  if (!final) {
    if (tty_ && now - lastDraw_ < std::chrono::milliseconds(100))
      return;
    if (!tty_ && decile == lastDecile_)
      return;
  }
  lastDraw_ = now;
  lastDecile_ = decile;
  double secs = std::chrono::duration<double>(now - start_).count();
  double rate = secs > 0 ? done / secs : 0;
  double eta = rate > 0 ? (total_ - done) / rate : 0;
  constexpr int kWidth = 30;
  int filled = static_cast<int>(frac * kWidth);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i)
    bar[i] = i < filled ? '#' : '-';
  bar[kWidth] = '\0';
  std::fprintf(stderr,
               "%s%-10s [%s] %3d%%  %llu/%llu records  %.1f MB  %.0f rec/s  "
               "ETA %.0fs%s",
               tty_ ? "\r" : "", label_.c_str(), bar,
               static_cast<int>(frac * 100),
               static_cast<unsigned long long>(done),
               static_cast<unsigned long long>(total_), bytes_.load() / 1e6,
               rate, final ? 0.0 : eta, (final || !tty_) ? "\n" : "");
  std::fflush(stderr);
}

} // namespace kiln::data
