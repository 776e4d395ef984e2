//===- profile.h - Where the time of a step goes (--profile) ----*- C++ -*-===//
//
// With --profile the runtime times every library call (kernels.h) and every
// call of generated code (kiln_rt_parallel_for, kiln_rt_serial_call). The
// manifest's "sites" and "call_sites" (model-abi.md) name the kiln op, the
// model layer (its parameters' prefix, `layer1.0.conv1`, as kiln-sim names
// it) and the model line behind each call, so the report can say which ops
// the generated code's time belongs to and, with the library calls merged
// in, which layers of the model a step's time goes to. Without --profile none of this exists
// and the calls cost one branch more than untimed ones.
//
// The first step writes every activation for the first time, and its page
// faults land in whichever loop writes first (batch norm, mostly): it can
// take twice as long as the others. So the tables start counting after it
// (startAfterWarmUp), when the run takes more than one step. The library
// calls' table does too: page faults on a fresh output made some ResNet-50
// convolutions look twice as slow as they are.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_PROFILE_H
#define KILN_RT_EXEC_PROFILE_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/metrics.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::exec {

/// Where a call comes from: the kiln op ("kiln.relu"), its line in the model
/// ("resnet50.mlir:282"), its layer ("layer1.0.bn1"; empty when the
/// manifest names none) and the step function ("train" or "eval").
struct SourceSite {
  std::string op = "?";
  std::string loc = "?";
  std::string layer;
  std::string function;

  /// What the profile groups layers by: the layer, else the line (a
  /// manifest of an older compiler has no layers).
  const std::string &layerKey() const { return layer.empty() ? loc : layer; }
};

/// The time spent at each call site of generated code.
class SiteProfile {
public:
  /// Reads "sites" and "call_sites" from the manifest buffer; a manifest
  /// without them (a hand-written model) gives an empty table.
  static StatusOr<std::unique_ptr<SiteProfile>>
  create(std::string_view manifestBytes);

  /// Adds one call of `site` that took `seconds`. A site the manifest does
  /// not list is a compiler bug: prints it and aborts.
  void record(int32_t site, double seconds);

  size_t numSites() const { return sites.size(); }
  const SourceSite &site(size_t id) const { return sites[id]; }
  uint64_t calls(size_t id) const { return counters[id].calls; }
  double seconds(size_t id) const { return counters[id].seconds; }
  /// The source of library call `id` (manifest "calls"); "?" if unknown.
  const SourceSite &callSite(size_t id) const;

  /// Forgets the time counted so far, here and in `kernels` (whose own
  /// counters keep running: what they held now is subtracted later).
  void startAfterWarmUp(const Kernels &kernels);
  /// Calls and seconds of library call `id` since startAfterWarmUp.
  uint64_t libraryCalls(const Kernels &kernels, size_t id) const;
  double librarySeconds(const Kernels &kernels, size_t id) const;

private:
  struct Counter {
    uint64_t calls = 0;
    double seconds = 0;
  };
  std::vector<SourceSite> sites;
  std::vector<SourceSite> callSites;
  std::vector<Counter> counters;
  /// The library calls' counters at startAfterWarmUp.
  std::vector<Counter> libraryBase;
};

/// What the trainer measured around the kernels, since startAfterWarmUp.
struct StepTimes {
  int64_t steps = 0;
  /// Steps left out at the start (0 or 1).
  int64_t warmUpSteps = 0;
  /// The whole training loop: input, step, loss reduction, logging.
  double loopSeconds = 0;
  /// Inside the train step function only.
  double stepSeconds = 0;
};

/// One row of the report: a kiln op at a model line, or a layer with all
/// its ops.
struct ProfileRow {
  std::string layer;
  /// The op's line; for a layer, its lines ("m.mlir:12,14").
  std::string loc;
  /// The op; for a layer, the names of its ops without "kiln.".
  std::string ops;
  uint64_t calls = 0;
  /// For a kind of op: the (op, line) rows it sums.
  int lines = 0;
  double librarySeconds = 0;
  double generatedSeconds = 0;

  double seconds() const { return librarySeconds + generatedSeconds; }
};

/// Generated code of the train step by (kiln op, line), most time first.
/// The layer is the op's.
std::vector<ProfileRow> generatedCodeByOp(const SiteProfile &sites);

/// Library calls and generated code of the train step by layer (the
/// backward ops of a layer belong to it), most time first.
std::vector<ProfileRow> timeByLayer(const SiteProfile &sites,
                                    const Kernels &kernels,
                                    const Manifest &manifest);

/// The report: library calls (train and eval), generated code by op,
/// the split of the step into library calls, generated code and the rest,
/// and the time by layer. Tables list the `limit` rows with most time.
std::string profileReport(const SiteProfile &sites, const Kernels &kernels,
                          const Manifest &manifest, const StepTimes &times,
                          size_t limit = 30);

/// The same data for metrics.jsonl, every row: "profile_op" and
/// "profile_layer" rows, then one "profile" row with the totals.
std::vector<std::vector<JsonField>> profileMetrics(const SiteProfile &sites,
                                                   const Kernels &kernels,
                                                   const Manifest &manifest,
                                                   const StepTimes &times);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_PROFILE_H
