//===- profile.cpp - Where the time of a step goes (--profile) ------------===//

#include "kiln/rt/exec/profile.h"

#include "kiln/rt/manifest_generated.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <tuple>
#include <utility>

namespace kiln::rt::exec {
namespace {

const char *const kTrain = "train";

std::string text(const flatbuffers::String *s) { return s ? s->str() : "?"; }

/// The manifest's `sites` or `call_sites` as sources; entries without
/// members (library calls no step makes with a constant id) stay "?".
std::vector<SourceSite>
readSources(const flatbuffers::Vector<flatbuffers::Offset<fb::Site>> *sites) {
  std::vector<SourceSite> sources;
  if (!sites)
    return sources;
  for (const fb::Site *site : *sites) {
    SourceSite source;
    source.op = text(site->op());
    source.loc = text(site->loc());
    source.layer = site->layer() ? site->layer()->str() : "";
    source.function = text(site->function());
    sources.push_back(std::move(source));
  }
  return sources;
}

/// "batch_norm_train" for "kiln.batch_norm_train".
std::string_view shortName(std::string_view op) {
  if (op.substr(0, 5) == "kiln.")
    op.remove_prefix(5);
  return op;
}

/// Appends `op` to the space-separated list `ops` unless it is there.
void addOpName(std::string &ops, std::string_view op) {
  std::string name(shortName(op));
  std::string padded = " " + ops + " ";
  if (padded.find(" " + name + " ") != std::string::npos)
    return;
  ops += ops.empty() ? name : " " + name;
}

/// "m.mlir:12,14" for the lines {"m.mlir:14", "m.mlir:12", "m.mlir:14"}:
/// each file once, its lines in order, without repeats.
std::string joinLines(std::vector<std::string> locs) {
  std::map<std::string, std::vector<long>> byFile;
  std::vector<std::string> whole; // without a line ("?")
  for (const std::string &loc : locs) {
    size_t colon = loc.rfind(':');
    char *end = nullptr;
    long line = colon == std::string::npos
                    ? -1
                    : std::strtol(loc.c_str() + colon + 1, &end, 10);
    if (colon == std::string::npos || !end || *end || line < 0) {
      if (std::find(whole.begin(), whole.end(), loc) == whole.end())
        whole.push_back(loc);
      continue;
    }
    byFile[loc.substr(0, colon)].push_back(line);
  }
  std::string out;
  for (auto &[file, numbers] : byFile) {
    std::sort(numbers.begin(), numbers.end());
    numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
    out += (out.empty() ? "" : " ") + file + ":";
    for (size_t i = 0; i < numbers.size(); ++i)
      out += (i ? "," : "") + std::to_string(numbers[i]);
  }
  for (const std::string &loc : whole)
    out += (out.empty() ? "" : " ") + loc;
  return out;
}

std::vector<ProfileRow> sortedByTime(std::map<std::string, ProfileRow> rows) {
  std::vector<ProfileRow> sorted;
  for (auto &entry : rows)
    sorted.push_back(std::move(entry.second));
  // Ties (rows that took no measurable time) in a fixed order.
  std::sort(sorted.begin(), sorted.end(),
            [](const ProfileRow &a, const ProfileRow &b) {
              if (a.seconds() != b.seconds())
                return a.seconds() > b.seconds();
              return std::tie(a.layer, a.loc, a.ops) <
                     std::tie(b.layer, b.loc, b.ops);
            });
  return sorted;
}

struct Totals {
  double library = 0;
  double generated = 0;
};

/// The train step's library and generated time.
Totals trainTotals(const SiteProfile &sites, const Kernels &kernels,
                   const Manifest &manifest) {
  Totals totals;
  for (size_t i = 0; i < kernels.numCalls(); ++i)
    if (manifest.calls[i].function == kTrain)
      totals.library += sites.librarySeconds(kernels, i);
  for (size_t i = 0; i < sites.numSites(); ++i)
    if (sites.site(i).function == kTrain)
      totals.generated += sites.seconds(i);
  return totals;
}

double percentOf(double part, double whole) {
  return whole > 0 ? 100 * part / whole : 0.0;
}

std::string generatedTable(const std::vector<ProfileRow> &rows,
                           double loopSeconds, size_t limit) {
  std::string out =
      fmt::format("  {:<44} {:<24} {:<24} {:>8} {:>9} {:>7}\n", "kiln op",
                  "layer", "location", "calls", "s", "% step");
  for (size_t i = 0; i < rows.size() && i < limit; ++i)
    out += fmt::format("  {:<44} {:<24} {:<24} {:8} {:9.4f} {:6.1f}%\n",
                       rows[i].ops, rows[i].layer.empty() ? "-" : rows[i].layer,
                       rows[i].loc, rows[i].calls, rows[i].seconds(),
                       percentOf(rows[i].seconds(), loopSeconds));
  if (rows.size() > limit) {
    double rest = 0;
    for (size_t i = limit; i < rows.size(); ++i)
      rest += rows[i].seconds();
    out += fmt::format("  {:<103} {:9.4f} {:6.1f}%\n",
                       fmt::format("({} more)", rows.size() - limit), rest,
                       percentOf(rest, loopSeconds));
  }
  return out;
}

/// The rows of `ops` summed per kind of op (all batch norms together).
std::vector<ProfileRow> byKind(const std::vector<ProfileRow> &ops) {
  std::map<std::string, ProfileRow> kinds;
  for (const ProfileRow &op : ops) {
    ProfileRow &kind = kinds[op.ops];
    kind.ops = op.ops;
    ++kind.lines;
    kind.calls += op.calls;
    kind.generatedSeconds += op.generatedSeconds;
  }
  return sortedByTime(std::move(kinds));
}

std::string kindTable(const std::vector<ProfileRow> &kinds,
                      double loopSeconds) {
  std::string out = fmt::format("  {:<44} {:>6} {:>8} {:>9} {:>7}\n", "kiln op",
                                "lines", "calls", "s", "% step");
  for (const ProfileRow &kind : kinds)
    out += fmt::format("  {:<44} {:6} {:8} {:9.4f} {:6.1f}%\n", kind.ops,
                       kind.lines, kind.calls, kind.seconds(),
                       percentOf(kind.seconds(), loopSeconds));
  return out;
}

std::string layerTable(const std::vector<ProfileRow> &rows, double loopSeconds,
                       size_t limit) {
  std::string out = fmt::format(
      "  {:<24} {:>10} {:>12} {:>9} {:>7}  {:<24} {}\n", "layer", "library s",
      "generated s", "total s", "% step", "location", "kiln ops");
  for (size_t i = 0; i < rows.size() && i < limit; ++i)
    out += fmt::format(
        "  {:<24} {:10.4f} {:12.4f} {:9.4f} {:6.1f}%  {:<24} {}\n",
        rows[i].layer, rows[i].librarySeconds, rows[i].generatedSeconds,
        rows[i].seconds(), percentOf(rows[i].seconds(), loopSeconds),
        rows[i].loc, rows[i].ops);
  if (rows.size() > limit) {
    ProfileRow rest;
    for (size_t i = limit; i < rows.size(); ++i) {
      rest.librarySeconds += rows[i].librarySeconds;
      rest.generatedSeconds += rows[i].generatedSeconds;
    }
    out += fmt::format("  {:<24} {:10.4f} {:12.4f} {:9.4f} {:6.1f}%\n",
                       fmt::format("({} more)", rows.size() - limit),
                       rest.librarySeconds, rest.generatedSeconds,
                       rest.seconds(), percentOf(rest.seconds(), loopSeconds));
  }
  return out;
}

/// One line per library call (train and eval): kind, shapes,
/// implementation, calls, seconds, share of the library time and GFLOP/s.
std::string libraryTable(const SiteProfile &sites, const Kernels &kernels,
                         const Manifest &manifest) {
  double total = 0;
  for (size_t i = 0; i < kernels.numCalls(); ++i)
    total += sites.librarySeconds(kernels, i);
  std::string out;
  for (size_t i = 0; i < kernels.numCalls(); ++i) {
    auto id = int32_t(i);
    uint64_t calls = sites.libraryCalls(kernels, i);
    double seconds = sites.librarySeconds(kernels, i);
    double gflops = seconds > 0 ? 2 * kernels.multiplyAdds(id) * double(calls) /
                                      seconds / 1e9
                                : 0;
    out += fmt::format("  {:3} {:<22} {:<60} {:<34} {:6} calls {:9.3f} s "
                       "{:5.1f}% {:7.1f} GFLOP/s\n",
                       i, callKindName(manifest.calls[i].kind),
                       kernels.summary(id), kernels.implementation(id), calls,
                       seconds, percentOf(seconds, total), gflops);
  }
  return out;
}

/// One line: the step split into library calls, generated code and the
/// rest, inside the step function (glue, copies, allreduce waits) and
/// outside it (input, the loss reduction, logging).
std::string summaryLine(const Totals &totals, const StepTimes &times) {
  double steps = double(std::max<int64_t>(times.steps, 1));
  double inStep = times.stepSeconds - totals.library - totals.generated;
  double outside = times.loopSeconds - times.stepSeconds;
  double other = inStep + outside;
  return fmt::format(
      "kiln: train step {:.3f} s/step over {} step{}: library calls {:.3f} s "
      "({:.1f}%), generated code {:.3f} s ({:.1f}%), other {:.3f} s "
      "({:.1f}%: {:.3f} s in the step outside both, {:.3f} s between steps "
      "for input, allreduce and the framework)\n",
      times.loopSeconds / steps, times.steps, times.steps == 1 ? "" : "s",
      totals.library / steps, percentOf(totals.library, times.loopSeconds),
      totals.generated / steps, percentOf(totals.generated, times.loopSeconds),
      other / steps, percentOf(other, times.loopSeconds), inStep / steps,
      outside / steps);
}

} // namespace

StatusOr<std::unique_ptr<SiteProfile>>
SiteProfile::create(std::string_view manifestBytes) {
  const fb::Manifest *root = verifyManifest(manifestBytes);
  if (!root)
    return KILN_STATUS(kInvalidArgument,
                       "manifest: not a valid manifest buffer");
  auto profile = std::make_unique<SiteProfile>();
  profile->sites = readSources(root->sites());
  profile->callSites = readSources(root->call_sites());
  profile->counters.resize(profile->sites.size());
  return profile;
}

void SiteProfile::record(int32_t site, double seconds) {
  if (site < 0 || size_t(site) >= counters.size()) {
    std::fprintf(stderr,
                 "kiln runtime: generated code called with site %d, but the "
                 "manifest has %zu sites [%s:%d]\n",
                 site, counters.size(), __FILE__, __LINE__);
    std::abort();
  }
  Counter &counter = counters[size_t(site)];
  ++counter.calls;
  counter.seconds += seconds;
}

void SiteProfile::startAfterWarmUp(const Kernels &kernels) {
  std::fill(counters.begin(), counters.end(), Counter());
  libraryBase.clear();
  for (size_t i = 0; i < kernels.numCalls(); ++i)
    libraryBase.push_back(
        {kernels.callCount(int32_t(i)), kernels.callSeconds(int32_t(i))});
}

uint64_t SiteProfile::libraryCalls(const Kernels &kernels, size_t id) const {
  uint64_t base = id < libraryBase.size() ? libraryBase[id].calls : 0;
  return kernels.callCount(int32_t(id)) - base;
}

double SiteProfile::librarySeconds(const Kernels &kernels, size_t id) const {
  double base = id < libraryBase.size() ? libraryBase[id].seconds : 0;
  return kernels.callSeconds(int32_t(id)) - base;
}

const SourceSite &SiteProfile::callSite(size_t id) const {
  static const SourceSite unknown;
  return id < callSites.size() ? callSites[id] : unknown;
}

std::vector<ProfileRow> generatedCodeByOp(const SiteProfile &sites) {
  std::map<std::string, ProfileRow> rows;
  for (size_t i = 0; i < sites.numSites(); ++i) {
    const SourceSite &site = sites.site(i);
    if (site.function != kTrain)
      continue;
    ProfileRow &row = rows[site.op + '\0' + site.loc];
    row.ops = site.op;
    row.loc = site.loc;
    row.layer = site.layer;
    row.calls += sites.calls(i);
    row.generatedSeconds += sites.seconds(i);
  }
  return sortedByTime(std::move(rows));
}

std::vector<ProfileRow> timeByLayer(const SiteProfile &sites,
                                    const Kernels &kernels,
                                    const Manifest &manifest) {
  std::map<std::string, ProfileRow> rows;
  std::map<std::string, std::vector<std::string>> lines;
  auto rowOf = [&](const std::string &layer,
                   const std::string &loc) -> ProfileRow & {
    ProfileRow &row = rows[layer];
    row.layer = layer;
    lines[layer].push_back(loc);
    return row;
  };
  for (size_t i = 0; i < kernels.numCalls(); ++i) {
    if (manifest.calls[i].function != kTrain)
      continue;
    const SourceSite &site = sites.callSite(i);
    ProfileRow &row = rowOf(site.layerKey(), site.loc);
    addOpName(row.ops, site.op);
    row.calls += sites.libraryCalls(kernels, i);
    row.librarySeconds += sites.librarySeconds(kernels, i);
  }
  for (const ProfileRow &op : generatedCodeByOp(sites)) {
    ProfileRow &row = rowOf(op.layer.empty() ? op.loc : op.layer, op.loc);
    addOpName(row.ops, op.ops);
    row.calls += op.calls;
    row.generatedSeconds += op.generatedSeconds;
  }
  for (auto &[layer, row] : rows)
    row.loc = joinLines(std::move(lines[layer]));
  return sortedByTime(std::move(rows));
}

std::string profileReport(const SiteProfile &sites, const Kernels &kernels,
                          const Manifest &manifest, const StepTimes &times,
                          size_t limit) {
  std::vector<ProfileRow> ops = generatedCodeByOp(sites);
  std::vector<ProfileRow> layers = timeByLayer(sites, kernels, manifest);
  std::string out;
  if (times.warmUpSteps > 0)
    out += fmt::format("kiln: below, the {} step{} after the first (which "
                       "writes fresh memory and is left out)\n",
                       times.steps, times.steps == 1 ? "" : "s");
  out += "kiln: library calls (rank 0):\n";
  out += libraryTable(sites, kernels, manifest);
  out += fmt::format(
      "kiln: generated code of the train step by kiln op (rank 0), {} ops:\n",
      ops.size());
  out += generatedTable(ops, times.loopSeconds, limit);
  out += "kiln: the same by kind of op:\n";
  out += kindTable(byKind(ops), times.loopSeconds);
  out += summaryLine(trainTotals(sites, kernels, manifest), times);
  out += fmt::format("kiln: train step by model layer (library calls and "
                     "generated code, rank 0), {} layers:\n",
                     layers.size());
  out += layerTable(layers, times.loopSeconds, limit);
  return out;
}

std::vector<std::vector<JsonField>> profileMetrics(const SiteProfile &sites,
                                                   const Kernels &kernels,
                                                   const Manifest &manifest,
                                                   const StepTimes &times) {
  std::vector<std::vector<JsonField>> rows;
  for (const ProfileRow &op : generatedCodeByOp(sites))
    rows.push_back({JsonField::text("kind", "profile_op"),
                    JsonField::text("op", op.ops),
                    JsonField::text("layer", op.layer),
                    JsonField::text("loc", op.loc),
                    JsonField::integer("calls", (long long)op.calls),
                    JsonField::number("seconds", op.generatedSeconds)});
  for (const ProfileRow &layer : timeByLayer(sites, kernels, manifest))
    rows.push_back(
        {JsonField::text("kind", "profile_layer"),
         JsonField::text("layer", layer.layer),
         JsonField::text("loc", layer.loc), JsonField::text("ops", layer.ops),
         JsonField::integer("calls", (long long)layer.calls),
         JsonField::number("library_sec", layer.librarySeconds),
         JsonField::number("generated_sec", layer.generatedSeconds)});
  Totals totals = trainTotals(sites, kernels, manifest);
  rows.push_back({JsonField::text("kind", "profile"),
                  JsonField::integer("steps", times.steps),
                  JsonField::integer("warm_up_steps", times.warmUpSteps),
                  JsonField::number("loop_sec", times.loopSeconds),
                  JsonField::number("step_sec", times.stepSeconds),
                  JsonField::number("library_sec", totals.library),
                  JsonField::number("generated_sec", totals.generated)});
  return rows;
}

} // namespace kiln::rt::exec
