//===- Report.cpp - Cycle, utilization and traffic reports ----------------===//

#include "kiln/sim/Report.h"

#include "kiln/base/json.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <sstream>

namespace kiln::sim {

namespace {

void add(GroupStats &g, const InstrTiming &t, const UnitIds &u) {
  ++g.instructions;
  g.firstStart = std::min(g.firstStart, t.start);
  g.lastEnd = std::max(g.lastEnd, t.end);
  if (t.unit < u.mxuCount)
    g.mxuBusy += t.busy;
  else if (t.unit == u.vector() || t.unit == u.scalar())
    g.vectorBusy += t.busy;
  else if (t.unit == u.dmaIn() || t.unit == u.dmaOut())
    g.dmaBusy += t.busy;
  g.macs += t.macs;
  g.hbmBytes += t.hbmBytes;
}

double utilization(const GroupStats &g, uint32_t cells) {
  return g.mxuBusy ? double(g.macs) / (double(g.mxuBusy) * cells) : 0.0;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

void groupJson(std::ostringstream &os, const GroupStats &g, uint32_t cells) {
  os << "{\"kind\": " << json::quote(g.kind)
     << ", \"layer\": " << json::quote(g.layer)
     << ", \"instructions\": " << g.instructions
     << ", \"start\": " << (g.instructions ? g.firstStart : 0)
     << ", \"end\": " << g.lastEnd << ", \"span_cycles\": " << g.span()
     << ", \"mxu_busy_cycles\": " << g.mxuBusy
     << ", \"vector_busy_cycles\": " << g.vectorBusy
     << ", \"dma_busy_cycles\": " << g.dmaBusy << ", \"macs\": " << g.macs
     << ", \"hbm_bytes\": " << g.hbmBytes
     << ", \"mxu_utilization\": " << num(utilization(g, cells)) << "}";
}

} // namespace

Report makeReport(const Program &program, const TargetConfig &target,
                  const TimingResult &timing) {
  Report r;
  r.program = program.name;
  r.target = target.name;
  r.batch = program.batch;
  r.clockHz = target.clockHz;
  r.cycles = timing.cycles;
  r.seconds = double(timing.cycles) / target.clockHz;
  r.imagesPerSecond = r.seconds > 0 ? double(program.batch) / r.seconds : 0;
  r.macs = timing.macs;
  r.arrayCells = target.arrayRows * target.arrayCols;
  r.mxuUtilization =
      timing.cycles ? double(timing.macs) /
                          (double(timing.cycles) * target.peakMacsPerCycle())
                    : 0;
  uint64_t mxuBusy = 0;
  for (uint32_t m = 0; m < target.mxuCount; ++m)
    mxuBusy += timing.unitBusy[m];
  r.mxuBusyUtilization =
      mxuBusy ? double(timing.macs) / (double(mxuBusy) * r.arrayCells) : 0;
  r.hbmBytesRead = timing.hbmBytesRead;
  r.hbmBytesWritten = timing.hbmBytesWritten;
  r.iciBytes = timing.iciBytes;
  r.onChipPeakBytes = timing.onChipPeakBytes;
  r.onChipHighWater = timing.onChipHighWater;
  r.onChipBytes = target.onChipBytes;
  r.instructions = program.instructions.size();
  for (uint32_t u = 0; u < timing.units.count(); ++u)
    r.units.push_back(
        {timing.units.name(u), timing.unitBusy[u], timing.unitStall[u]});

  size_t numOps = std::max<size_t>(program.ops.size(), 1);
  r.ops.resize(numOps);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    r.ops[i].kind = program.ops[i]->kind;
    r.ops[i].layer = program.ops[i]->layer;
  }
  if (program.ops.empty())
    r.ops[0].kind = "program";
  for (size_t i = 0; i < program.instructions.size(); ++i) {
    uint32_t op = program.ops.empty() ? 0 : program.instructions[i]->op;
    add(r.ops[op], timing.instrs[i], timing.units);
  }
  std::map<std::string, size_t> layerIndex;
  for (const GroupStats &g : r.ops) {
    if (!g.instructions)
      continue;
    auto [it, inserted] = layerIndex.try_emplace(g.layer, r.layers.size());
    if (inserted) {
      r.layers.emplace_back();
      r.layers.back().layer = g.layer;
    }
    GroupStats &l = r.layers[it->second];
    l.instructions += g.instructions;
    l.firstStart = std::min(l.firstStart, g.firstStart);
    l.lastEnd = std::max(l.lastEnd, g.lastEnd);
    l.mxuBusy += g.mxuBusy;
    l.vectorBusy += g.vectorBusy;
    l.dmaBusy += g.dmaBusy;
    l.macs += g.macs;
    l.hbmBytes += g.hbmBytes;
  }
  return r;
}

std::string formatReportTable(const Report &r, size_t maxRows) {
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof(line),
                "program %s on %s: batch %" PRId64 ", %" PRIu64
                " instructions\n",
                r.program.c_str(), r.target.c_str(), r.batch, r.instructions);
  os << line;
  std::snprintf(line, sizeof(line),
                "step: %" PRIu64 " cycles = %.6g ms at %.4g MHz, %.2f "
                "images/s\n",
                r.cycles, r.seconds * 1e3, r.clockHz / 1e6, r.imagesPerSecond);
  os << line;
  std::snprintf(line, sizeof(line),
                "MXU utilization: %.1f%% of the step, %.1f%% while busy; %.4g "
                "G multiply-adds\n",
                100 * r.mxuUtilization, 100 * r.mxuBusyUtilization,
                double(r.macs) / 1e9);
  os << line;
  std::snprintf(line, sizeof(line),
                "HBM: %.4g MB read, %.4g MB written; on-chip peak %.4g MiB "
                "(high water %.4g of %.4g MiB)\n",
                double(r.hbmBytesRead) / 1e6, double(r.hbmBytesWritten) / 1e6,
                double(r.onChipPeakBytes) / (1 << 20),
                double(r.onChipHighWater) / (1 << 20),
                double(r.onChipBytes) / (1 << 20));
  os << line;
  os << "\nunit       busy cycles  busy %   stalled cycles\n";
  for (const UnitStats &u : r.units) {
    std::snprintf(
        line, sizeof(line), "%-9s %12" PRIu64 " %6.1f%% %16" PRIu64 "\n",
        u.name.c_str(), u.busy,
        r.cycles ? 100.0 * double(u.busy) / double(r.cycles) : 0.0, u.stall);
    os << line;
  }
  auto table = [&](const char *title, std::vector<GroupStats> groups,
                   bool withKind) {
    // Busiest first; ties in program order (first start).
    std::sort(groups.begin(), groups.end(),
              [](const GroupStats &a, const GroupStats &b) {
                uint64_t x = a.mxuBusy + a.vectorBusy,
                         y = b.mxuBusy + b.vectorBusy;
                return x != y ? x > y : a.firstStart < b.firstStart;
              });
    size_t shown = 0;
    for (const GroupStats &g : groups)
      shown += g.instructions > 0;
    os << "\n" << title;
    if (maxRows && shown > maxRows)
      os << " (the " << maxRows << " busiest of " << shown << ")";
    os << "\n";
    std::snprintf(line, sizeof(line),
                  "%-28s %-26s %12s %12s %12s %12s %8s %10s\n", "layer",
                  withKind ? "op" : "", "span", "mxu busy", "vector busy",
                  "dma busy", "mxu util", "HBM MB");
    os << line;
    size_t n = 0;
    for (const GroupStats &g : groups) {
      if (!g.instructions)
        continue;
      if (maxRows && n++ >= maxRows)
        break;
      std::snprintf(line, sizeof(line),
                    "%-28s %-26s %12" PRIu64 " %12" PRIu64 " %12" PRIu64
                    " %12" PRIu64 " %7.1f%% %10.3f\n",
                    g.layer.c_str(), withKind ? g.kind.c_str() : "", g.span(),
                    g.mxuBusy, g.vectorBusy, g.dmaBusy,
                    100 * utilization(g, r.arrayCells),
                    double(g.hbmBytes) / 1e6);
      os << line;
    }
  };
  table("per op", r.ops, true);
  table("per layer", r.layers, false);
  return os.str();
}

std::string formatReportJson(const Report &r) {
  std::ostringstream os;
  os << "{\n  \"program\": " << json::quote(r.program)
     << ",\n  \"target\": " << json::quote(r.target)
     << ",\n  \"step\": {\"batch\": " << r.batch << ", \"cycles\": " << r.cycles
     << ", \"seconds\": " << num(r.seconds)
     << ", \"images_per_second\": " << num(r.imagesPerSecond)
     << ", \"clock_hz\": " << num(r.clockHz) << ", \"macs\": " << r.macs
     << ", \"mxu_utilization\": " << num(r.mxuUtilization)
     << ", \"mxu_busy_utilization\": " << num(r.mxuBusyUtilization)
     << ", \"hbm_bytes_read\": " << r.hbmBytesRead
     << ", \"hbm_bytes_written\": " << r.hbmBytesWritten
     << ", \"ici_bytes\": " << r.iciBytes
     << ", \"onchip_peak_bytes\": " << r.onChipPeakBytes
     << ", \"onchip_high_water_bytes\": " << r.onChipHighWater
     << ", \"onchip_bytes\": " << r.onChipBytes
     << ", \"instructions\": " << r.instructions << "},\n  \"units\": [";
  for (size_t i = 0; i < r.units.size(); ++i)
    os << (i ? ", " : "") << "{\"name\": " << json::quote(r.units[i].name)
       << ", \"busy_cycles\": " << r.units[i].busy
       << ", \"stall_cycles\": " << r.units[i].stall << "}";
  os << "],\n  \"ops\": [";
  bool first = true;
  for (const GroupStats &g : r.ops) {
    if (!g.instructions)
      continue;
    os << (first ? "\n    " : ",\n    ");
    first = false;
    groupJson(os, g, r.arrayCells);
  }
  os << "],\n  \"layers\": [";
  first = true;
  for (const GroupStats &g : r.layers) {
    os << (first ? "\n    " : ",\n    ");
    first = false;
    groupJson(os, g, r.arrayCells);
  }
  os << "]\n}\n";
  return os.str();
}

} // namespace kiln::sim
