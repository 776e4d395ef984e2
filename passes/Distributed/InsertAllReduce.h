//===- InsertAllReduce.h - Gradient buckets and their allreduce -*- C++ -*-===//

#ifndef KILN_PASSES_DISTRIBUTED_INSERTALLREDUCE_H
#define KILN_PASSES_DISTRIBUTED_INSERTALLREDUCE_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace kiln {

/// Groups the gradients `step` returns into buckets of at least
/// `bucketBytes`, in production order, and averages each bucket with one
/// kiln.allreduce placed right after its last gradient.
llvm::LogicalResult insertAllReduce(mlir::func::FuncOp step,
                                    int64_t bucketBytes);

} // namespace kiln

#endif // KILN_PASSES_DISTRIBUTED_INSERTALLREDUCE_H
