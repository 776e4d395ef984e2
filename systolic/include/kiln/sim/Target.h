//===- Target.h - Systolic-array target configurations ---------*- C++ -*-===//
//
// Part of Kiln. The parameters of a simulated core: its matrix units, vector
// unit, memories and clock. Every field can be set by name (kiln-sim
// --set NAME=VALUE), and every field documents where its value comes from:
// REFERENCE.md's profile table where it has one, otherwise an assumption
// stated here and in docs/systolic.md.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_TARGET_H
#define KILN_SIM_TARGET_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sim {

struct TargetConfig {
  std::string name = "tpuv3";
  /// Matrix units (MXUs) per core.
  uint32_t mxuCount = 2;
  /// Systolic array: rows (the contraction depth of one weight tile) and
  /// columns (the output width of one weight tile).
  uint32_t arrayRows = 128;
  uint32_t arrayCols = 128;
  double clockHz = 940e6;
  int64_t onChipBytes = 16ll << 20;
  double hbmBytesPerSecond = 450e9;
  /// fp32 lanes of the vector unit (8 sublanes x 128 lanes).
  uint32_t vectorLanes = 1024;
  /// Cycles from a vector instruction's start until its results can be read.
  uint32_t vectorLatency = 16;
  /// Cycles from the end of a DMA's transfer until its data has landed.
  uint32_t dmaLatency = 500;
  /// Cycles a DMA engine spends per descriptor besides moving bytes.
  uint32_t dmaOverhead = 32;
  /// Bytes per second of the inter-chip links (allreduce), per core.
  double iciBytesPerSecond = 70e9;

  double hbmBytesPerCycle() const { return hbmBytesPerSecond / clockHz; }
  /// Peak multiply-adds per cycle of all matrix units.
  double peakMacsPerCycle() const {
    return double(mxuCount) * arrayRows * arrayCols;
  }
  /// Cycles for a value to cross the array (fill and drain of one pass).
  uint32_t fillDrainCycles() const { return arrayRows + arrayCols - 2; }
};

/// A named field of TargetConfig, with its meaning and the source of the
/// default values of each profile.
struct TargetField {
  const char *name;
  const char *meaning;
  const char *source;
};

/// The fields settable with setTargetField, in a stable order.
const std::vector<TargetField> &targetFields();

/// The profile names: tpuv3 (the default), tpuv2, tpuv1.
std::vector<std::string> targetProfileNames();

/// The configuration of a named profile (REFERENCE.md's table).
Status getTargetProfile(const std::string &name, TargetConfig &config);

/// Sets one field by name from text (e.g. "mxu_count", "2"); rejects unknown
/// names, malformed numbers and values out of range.
Status setTargetField(TargetConfig &config, const std::string &name,
                      const std::string &value);

/// Checks that every field is in range.
Status validateTarget(const TargetConfig &config);

/// The value of every field as "name = value", one per line.
std::string describeTarget(const TargetConfig &config);

} // namespace kiln::sim

#endif // KILN_SIM_TARGET_H
