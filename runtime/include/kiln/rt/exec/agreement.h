//===- agreement.h - What the ranks of a job must agree on ------*- C++ -*-===//
//
// Data-parallel ranks that were built or started differently do not fail by
// themselves: ranks with another batch, precision, optimizer or learning
// rate train on silently (each weighted 1/R), ranks with other step counts
// hang in a collective whose partner never comes, and ranks of other models
// fail inside MPI on buffers of other sizes. So before anything collective
// depends on it, every rank describes what it was built from and asked to do
// as named fields (the model, its ABI, batch, precision, optimizer and
// schedule, the run flags that must agree) and compares them with rank 0's.
//
// The first exchange must be safe however much the ranks differ: every rank
// contributes one 64-bit digest of its fields to an allgather of fixed size.
// Only if some digest differs do the ranks exchange the fields themselves,
// lengths first, so that every receive is as long as its message (no
// MPI_ERR_TRUNCATE). Then every rank knows who differs in what: rank 0 and
// each differing rank say so, and all ranks stop together.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_AGREEMENT_H
#define KILN_RT_EXEC_AGREEMENT_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/options.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::rt::exec {

/// One thing the ranks must agree on.
struct RankField {
  std::string name;  ///< "--lr", "batch"
  std::string value; ///< what is compared
  std::string shown; ///< how it is printed (empty: `value`)
  /// A digest that catches what the named fields do not (the whole
  /// manifest, the code): printed only when no other field differs, since
  /// it differs along with almost any of them.
  bool backstop = false;

  const std::string &display() const { return shown.empty() ? value : shown; }
};
using RankFields = std::vector<RankField>;

/// The run flags every rank must give alike (docs/runtime.md lists them,
/// and those that may differ per rank): input, augmentation, length, seed,
/// schedule overrides, checkpoints, evaluation and replica checks. A flag
/// of the schedule given on no rank is absent; one given on some ranks only
/// shows as "not given" on the others.
RankFields describeRunFlags(const RunOptions &options);

/// The model as the manifest describes it: name, ABI, batch, precision,
/// optimizer and compiled schedule, then the variables, allreduce buckets
/// and the manifest's bytes as backstops.
RankFields describeModel(const Manifest &manifest,
                         std::string_view manifestBytes);

/// "fp32" or "bf16": bf16 if any library call or train input is bf16.
std::string manifestPrecision(const Manifest &manifest);

/// The manifest's "optimizer" entry (kilnc records the update of every
/// parameter): "sgd_update(momentum=0.9 weight_decay=0) x3 + ...", or a
/// note that the manifest does not record it.
std::string manifestOptimizer(std::string_view manifestBytes);

/// FNV-1a of `bytes`, continuing from `hash`.
uint64_t fnv1a(std::string_view bytes, uint64_t hash = 0xcbf29ce484222325ULL);

/// A digest of this executable's machine code (the executable segments of
/// the main program as loaded): two builds of different models or recipes
/// differ here even where their manifests agree.
uint64_t executableCodeDigest();

/// The fields in a form that parseRankFields reads back (any bytes in the
/// names and values).
std::string serializeRankFields(const RankFields &fields);
StatusOr<RankFields> parseRankFields(std::string_view text);

/// What `mine` (of `rank` of `size`) says differently from `rankZero`:
/// "rank 1 of 2 differs from rank 0: --lr 0.2 (rank 0: 0.1)", the fields in
/// rank 0's order, those only one side has as "not given" on the other,
/// backstops only when nothing else differs, at most a few in full; "" if
/// they agree.
std::string describeDisagreement(int rank, int size, const RankFields &mine,
                                 const RankFields &rankZero);

/// The outcome of checkRanksAgree, the same on every rank.
struct Agreement {
  bool agreed = true;
  /// What this rank prints: on rank 0 a line per differing rank, on a
  /// differing rank its own line, elsewhere nothing.
  std::vector<std::string> messages;
};

/// Compares `fields` with rank 0's (collective; see the top of this file).
/// An error status only if the communication itself fails.
StatusOr<Agreement> checkRanksAgree(Comm &comm, const RankFields &fields);

/// After the schedule in effect is written (schedule.h): its slots' values
/// compared with rank 0's (collective). They follow from what the ranks
/// agreed on at start-up, so a difference is an internal error naming the
/// slots.
Status checkScheduleAgrees(const Manifest &manifest, const uint8_t *arena,
                           Comm &comm);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_AGREEMENT_H
