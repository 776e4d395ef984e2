//===- Report.h - Cycle, utilization and traffic reports -------*- C++ -*-===//
//
// Part of Kiln. Summarizes a timed run per source op (a kiln op: "conv2d" of
// layer "layer1.0.conv1"), per layer and per step, as a text table or JSON.
//
// Per op and per layer: span (first start to last end: ops overlap, so spans
// do not add up to the step), busy cycles per unit class, multiply-adds, HBM
// bytes, and MXU utilization while the op's passes ran
// (MACs / (MXU busy cycles * R * C)). Per step: cycles, seconds and images/s
// at the clock, utilization over the whole step
// (MACs / (cycles * MXUs * R * C)), HBM bytes, on-chip peak, and per unit its
// busy and stalled cycles.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_REPORT_H
#define KILN_SIM_REPORT_H

#include "kiln/sim/Timing.h"

#include <string>
#include <vector>

namespace kiln::sim {

struct GroupStats {
  std::string kind, layer;
  uint64_t instructions = 0;
  uint64_t firstStart = UINT64_MAX, lastEnd = 0;
  uint64_t mxuBusy = 0, vectorBusy = 0, dmaBusy = 0;
  uint64_t macs = 0, hbmBytes = 0;
  uint64_t span() const {
    return lastEnd > firstStart ? lastEnd - firstStart : 0;
  }
};

struct UnitStats {
  std::string name;
  uint64_t busy = 0, stall = 0;
};

struct Report {
  std::string program, target;
  int64_t batch = 0;
  double clockHz = 0;
  uint64_t cycles = 0;
  double seconds = 0, imagesPerSecond = 0;
  uint64_t macs = 0;
  /// Of the whole step, and of the MXUs' busy time.
  double mxuUtilization = 0, mxuBusyUtilization = 0;
  uint64_t hbmBytesRead = 0, hbmBytesWritten = 0, iciBytes = 0;
  int64_t onChipPeakBytes = 0, onChipHighWater = 0, onChipBytes = 0;
  uint64_t instructions = 0;
  std::vector<UnitStats> units;
  std::vector<GroupStats> ops, layers;
  uint32_t arrayCells = 0;
};

Report makeReport(const Program &program, const TargetConfig &target,
                  const TimingResult &timing);

/// A text table: the step summary, the units, then the `maxRows` ops and
/// layers with the longest MXU+vector busy time (0: all).
std::string formatReportTable(const Report &report, size_t maxRows = 20);

std::string formatReportJson(const Report &report);

} // namespace kiln::sim

#endif // KILN_SIM_REPORT_H
