//===- ModelStats.h - Parameter and cost counts of a model ------*- C++ -*-===//

#ifndef KILN_PASSES_ANALYSIS_MODELSTATS_H
#define KILN_PASSES_ANALYSIS_MODELSTATS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>

namespace kiln {

/// Multiply-adds of one function, split by op name.
struct FunctionCost {
  std::string name;
  /// The batch size the function was counted at: its leading input dimension
  /// when static, 1 when dynamic (kilnc fixes the batch only later, so a
  /// dynamic batch is counted per example).
  int64_t batch = 1;
  bool dynamicBatch = false;
  int64_t multiplyAdds = 0;
  /// The part of multiplyAdds in ops of the backward pass.
  int64_t backwardMultiplyAdds = 0;
  llvm::MapVector<llvm::StringRef, int64_t> multiplyAddsByOp;
  /// Ops computing in nChw16c, and the kiln.reorder ops between layouts
  /// (`--kiln-layout`) with the bytes they copy per example; those that
  /// copy nothing (isStorageNoOp) are counted apart.
  int64_t blockedOps = 0;
  int64_t reorders = 0;
  int64_t reorderBytes = 0;
  int64_t storageNoOpReorders = 0;
};

struct ModelStats {
  int64_t parameterElements = 0;
  int64_t parameterTensors = 0;
  int64_t stateElements = 0;
  int64_t stateTensors = 0;
  llvm::SmallVector<FunctionCost> functions;
};

/// Counts the variables of `module` and the multiply-adds of each of its
/// functions (see the kiln-model-stats pass).
ModelStats computeModelStats(mlir::ModuleOp module);

/// Prints `stats` as a readable report.
void printModelStats(const ModelStats &stats, llvm::raw_ostream &os,
                     bool perOp);

/// Formats 25557032 as "25,557,032".
std::string formatThousands(int64_t value);

} // namespace kiln

#endif // KILN_PASSES_ANALYSIS_MODELSTATS_H
