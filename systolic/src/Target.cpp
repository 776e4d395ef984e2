//===- Target.cpp - Systolic-array target configurations ------------------===//

#include "kiln/sim/Target.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace kiln::sim {

namespace {

// Values from REFERENCE.md ("The systolic-array target"), which collects
// Jouppi et al., ISCA'17 (TPUv1) and CACM'20 (TPUv2/v3). The fields that
// table does not give are assumptions, marked as such.
const char *const kTable = "REFERENCE.md profile table";

bool parseDouble(const std::string &text, double &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  value = std::strtod(text.c_str(), &end);
  return errno == 0 && end && *end == '\0' && std::isfinite(value);
}

bool parseInt(const std::string &text, int64_t &value) {
  if (text.empty())
    return false;
  char *end = nullptr;
  errno = 0;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno != 0 || !end || *end != '\0')
    return false;
  value = v;
  return true;
}

} // namespace

const std::vector<TargetField> &targetFields() {
  static const std::vector<TargetField> fields = {
      {"mxu_count", "matrix units per core", kTable},
      {"array_rows", "systolic array rows (contraction depth of a tile)",
       kTable},
      {"array_cols", "systolic array columns (output width of a tile)", kTable},
      {"clock_hz", "core clock in Hz", kTable},
      {"onchip_bytes", "on-chip memory in bytes",
       "REFERENCE.md profile table (TPUv1: the 24 MiB unified buffer; its "
       "4 MiB of accumulators are not modeled separately)"},
      {"hbm_bytes_per_s", "HBM bandwidth per core in bytes/s",
       "REFERENCE.md profile table (TPUv3: 900 GB/s per chip, 2 cores)"},
      {"vector_lanes", "fp32 lanes of the vector unit",
       "REFERENCE.md (8 x 128 lanes); TPUv1: assumption, its 256-wide "
       "activation unit"},
      {"vector_latency", "cycles until a vector result can be read",
       "assumption (pipeline depth of a vector ALU plus memory access)"},
      {"dma_latency",
       "cycles from the end of a DMA transfer until its data "
       "has landed",
       "assumption (~0.5 us HBM round trip and descriptor processing)"},
      {"dma_overhead", "cycles a DMA engine spends per descriptor",
       "assumption"},
      {"ici_bytes_per_s",
       "inter-chip link bandwidth per core in bytes/s "
       "(allreduce)",
       "assumption (order of magnitude of TPUv3 ICI per core)"},
  };
  return fields;
}

std::vector<std::string> targetProfileNames() {
  return {"tpuv3", "tpuv2", "tpuv1"};
}

Status getTargetProfile(const std::string &name, TargetConfig &config) {
  TargetConfig c; // tpuv3 defaults
  if (name == "tpuv3") {
    // 2 MXUs x 128 x 128 x 2 flop x 940 MHz = 61.6 TFLOP/s.
  } else if (name == "tpuv2") {
    c.name = "tpuv2";
    c.mxuCount = 1;
    c.clockHz = 700e6;
    c.hbmBytesPerSecond = 350e9;
  } else if (name == "tpuv1") {
    // An int8 inference chip; simulated with the same bf16 numerics, so
    // only its timing and capacities differ.
    c.name = "tpuv1";
    c.mxuCount = 1;
    c.arrayRows = 256;
    c.arrayCols = 256;
    c.clockHz = 700e6;
    c.onChipBytes = 24ll << 20;
    c.hbmBytesPerSecond = 34e9;
    c.vectorLanes = 256;
  } else {
    return invalidArgumentError("unknown target profile '" + name +
                                "' (expected tpuv3, tpuv2 or tpuv1)");
  }
  config = c;
  return Status::ok();
}

Status setTargetField(TargetConfig &config, const std::string &name,
                      const std::string &value) {
  auto bad = [&](const char *what) {
    return invalidArgumentError("target field '" + name + "': '" + value +
                                "' is not " + what);
  };
  auto setUnsigned = [&](uint32_t &field) {
    int64_t v;
    if (!parseInt(value, v) || v <= 0 || v > (1ll << 20))
      return bad("an integer in [1, 2^20]");
    field = static_cast<uint32_t>(v);
    return Status::ok();
  };
  auto setCycles = [&](uint32_t &field) {
    int64_t v;
    if (!parseInt(value, v) || v < 0 || v > (1ll << 30))
      return bad("an integer in [0, 2^30]");
    field = static_cast<uint32_t>(v);
    return Status::ok();
  };
  auto setRate = [&](double &field) {
    double v;
    if (!parseDouble(value, v) || v <= 0)
      return bad("a positive number");
    field = v;
    return Status::ok();
  };
  if (name == "mxu_count")
    return setUnsigned(config.mxuCount);
  if (name == "array_rows")
    return setUnsigned(config.arrayRows);
  if (name == "array_cols")
    return setUnsigned(config.arrayCols);
  if (name == "clock_hz")
    return setRate(config.clockHz);
  if (name == "onchip_bytes") {
    int64_t v;
    if (!parseInt(value, v) || v <= 0)
      return bad("a positive integer");
    config.onChipBytes = v;
    return Status::ok();
  }
  if (name == "hbm_bytes_per_s")
    return setRate(config.hbmBytesPerSecond);
  if (name == "vector_lanes")
    return setUnsigned(config.vectorLanes);
  if (name == "vector_latency")
    return setCycles(config.vectorLatency);
  if (name == "dma_latency")
    return setCycles(config.dmaLatency);
  if (name == "dma_overhead")
    return setCycles(config.dmaOverhead);
  if (name == "ici_bytes_per_s")
    return setRate(config.iciBytesPerSecond);
  if (name == "name") {
    config.name = value;
    return Status::ok();
  }
  return invalidArgumentError("unknown target field '" + name + "'");
}

Status validateTarget(const TargetConfig &c) {
  if (c.mxuCount == 0 || c.arrayRows == 0 || c.arrayCols == 0 ||
      c.vectorLanes == 0)
    return invalidArgumentError("target '" + c.name +
                                "': unit counts and sizes must be positive");
  if (!(c.clockHz > 0) || !(c.hbmBytesPerSecond > 0) ||
      !(c.iciBytesPerSecond > 0) || c.onChipBytes <= 0)
    return invalidArgumentError(
        "target '" + c.name +
        "': clock, bandwidths and memory must be positive");
  return Status::ok();
}

std::string describeTarget(const TargetConfig &c) {
  std::ostringstream os;
  os << "name = " << c.name << "\n"
     << "mxu_count = " << c.mxuCount << "\n"
     << "array_rows = " << c.arrayRows << "\n"
     << "array_cols = " << c.arrayCols << "\n"
     << "clock_hz = " << c.clockHz << "\n"
     << "onchip_bytes = " << c.onChipBytes << "\n"
     << "hbm_bytes_per_s = " << c.hbmBytesPerSecond << "\n"
     << "vector_lanes = " << c.vectorLanes << "\n"
     << "vector_latency = " << c.vectorLatency << "\n"
     << "dma_latency = " << c.dmaLatency << "\n"
     << "dma_overhead = " << c.dmaOverhead << "\n"
     << "ici_bytes_per_s = " << c.iciBytesPerSecond << "\n"
     << "# peak bf16 = " << 2 * c.peakMacsPerCycle() * c.clockHz / 1e12
     << " TFLOP/s\n";
  return os.str();
}

} // namespace kiln::sim
