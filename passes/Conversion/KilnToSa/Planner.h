//===- Planner.h - Lowering a training step onto the systolic target -*- C++
//-*-===//
//
// Part of Kiln. Turns a Graph into the instructions of the systolic target
// (through kiln::sim::ProgramBuilder, so the same code feeds the `sa`
// dialect and, in tests, a program kiln-sim runs directly):
//
// - Memory: inputs, outputs and model variables live in HBM. Temporaries
//   whose channel count fits the array's columns are kept on chip for their
//   whole life when a first-fit allocation over live ranges finds room in
//   the resident pool; the others are spilled to HBM and streamed.
// - Staging: the rest of on-chip memory holds the tiles ops stream through.
//   It is split in two halves used by alternate ops, so one op's loads can
//   run while the previous op computes; inside an op, tiles alternate
//   between two slots (double buffering).
// - Matrix unit: convolutions (forward, both gradients) and matrix products
//   are implicit GEMMs: weight tiles of at most R x C, with small channel
//   counts packed several filter taps per tile; output-channel blocks
//   alternate between the MXUs. Operands are rounded to bf16 by the unit
//   (the f32 training step is accepted as is: this is where the bf16 policy
//   is applied until `--kiln-bf16` exists).
// - Vector unit: everything else, in row tiles.
//
// docs/systolic.md describes the tilings.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_PLANNER_H
#define KILN_PASSES_CONVERSION_KILNTOSA_PLANNER_H

#include "Graph.h"

#include "kiln/base/status.h"
#include "kiln/sim/Builder.h"
#include "kiln/sim/Target.h"

namespace kiln::sa {

struct PlanOptions {
  /// Fraction of on-chip memory for tensors kept on chip; the rest stages.
  double residentFraction = 0.25;
  /// Keep eligible temporaries on chip (otherwise every tensor is in HBM).
  bool allowResident = true;
  /// Fold several filter taps into one weight tile when channels are fewer
  /// than the array's rows (off: one tap per tile, as a plain mapping of
  /// input channels onto rows would do).
  bool packTaps = true;
  /// Run a matrix-unit op together with a later vector-unit op that neither
  /// depends on it nor on the ops in between (a filter gradient with the
  /// next batch-norm backward): their instructions interleave, so the
  /// vector op's HBM traffic overlaps the MXU passes.
  bool interleave = true;
  /// Run a vector-unit op together with the matrix-unit op among the next
  /// three that reads its output (a normalizing pass and the next
  /// convolution): the consumer's tiles start as the producer's tiles they
  /// read are stored, instead of after the whole producer.
  bool pipeline = true;
  /// With both: a matrix-unit op, the vector op interleaved with it and the
  /// matrix-unit op that vector op feeds run as one step (a filter
  /// gradient, the next batch-norm backward and the data gradient reading
  /// it), so the MXUs go from one convolution to the other while the batch
  /// norm streams; only where the merge's estimate says it is faster than
  /// the pair and then the data gradient.
  bool interleavePipelined = true;
};

/// Lowers `graph` for `target` into `sink`.
kiln::Status planProgram(const Graph &graph, const sim::TargetConfig &target,
                         const PlanOptions &options, sim::ProgramSink &sink);

} // namespace kiln::sa

#endif // KILN_PASSES_CONVERSION_KILNTOSA_PLANNER_H
