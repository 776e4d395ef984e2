//===- LayerNames.h - The model layer an op belongs to ----------*- C++ -*-===//
//
// The one home of "the layer of an op": the name users know a layer by,
// its parameters' prefix in the checkpoint (`layer1.0.conv1` for
// `layer1.0.conv1.weight`, which are torchvision's state-dict names). The
// systolic graph (kiln-convert-to-sa, so kiln-sim's reports), the x86
// profile (the manifest's sites) and kiln-run's messages all name layers
// through it, so the same op has the same name everywhere.
//
// The rule, for the ops of one block in order:
//  1. the loss (`loss`), optimizer updates and the learning rate
//     (`optimizer`) and gradient allreduces (`allreduce`) are named by role:
//     they belong to no layer;
//  2. an op with an operand read from a variable (through casts and
//     reorders) is in that variable's layer: a parameter's first, else a
//     state variable's (a copy such as `w.bf16` counts as its source `w`);
//  3. an op sharing its location with earlier ops of one layer (named by
//     any rule) is in that layer: autodiff gives a gradient op its forward
//     op's location, so a filter gradient, which reads no variable, joins
//     its convolution, and a ReLU's gradient its ReLU;
//  4. otherwise the layer of the first operand whose producer has one (a
//     ReLU after a batch norm is in the batch norm's layer), forward values
//     before gradients: a ReLU's gradient whose ReLU was fused into its
//     batch norm reads the forward activation of its own layer and the
//     gradient of the next one.
// An op none of these name (one that only consumes the step's inputs) has
// no layer ("").
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_ANALYSIS_LAYERNAMES_H
#define KILN_PASSES_ANALYSIS_LAYERNAMES_H

#include "mlir/IR/Block.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace kiln {

/// The layer of variable `name`: its name up to the last '.' (the whole name
/// if it has none).
llvm::StringRef layerOfVariable(llvm::StringRef name);

/// The layers of the ops of one block (a step function's body), computed
/// once by the rule above.
class LayerNames {
public:
  explicit LayerNames(mlir::Block &block);

  /// The layer of `op` (an op of the block), or "" if it has none.
  llvm::StringRef lookup(mlir::Operation *op) const {
    return names.lookup(op);
  }

private:
  /// Prefixes of variables' symbol names (owned by the context) or the
  /// role names, which are literals.
  llvm::DenseMap<mlir::Operation *, llvm::StringRef> names;
};

/// The layer of `op` within its block (computes the whole block's names:
/// for an occasional lookup, such as an error message).
std::string layerNameOf(mlir::Operation *op);

/// `loc` marked as belonging to `layer` (itself if `layer` is empty): what
/// the x86 lowering gives the code it emits for an op, so that the sites of
/// the manifest can name the layer.
mlir::Location locationWithLayer(mlir::Location loc, llvm::StringRef layer);

/// The layer a location made by locationWithLayer names (searching nested
/// locations), or "".
llvm::StringRef layerOfLocation(mlir::Location loc);

} // namespace kiln

#endif // KILN_PASSES_ANALYSIS_LAYERNAMES_H
