//===- Interpreter.h - kiln-run, the reference interpreter ------*- C++ -*-===//
//
// Part of Kiln. Executes functions of a kiln module op by op on the reference
// kernels (kiln_ref): the golden model every backend is compared against
// (design §6.11). Variables live in a VariableStore; a call sees their values
// at its start, and its kiln.assigns are returned to the caller, who applies
// them (or, for finite-difference evaluations, drops them).
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_INTERPRETER_H
#define KILN_COMPILER_INTERPRETER_INTERPRETER_H

#include "compiler/Interpreter/HostTensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace kiln::interp {

/// The element type of an MLIR tensor type; failure for anything kiln-run
/// does not hold (reported by the caller).
mlir::FailureOr<DType> getElementType(mlir::Type type);

/// The value of a dense elements attribute (arith.constant, a variable's
/// `constant` initializer); failure for other attributes or element types.
mlir::FailureOr<HostTensor> tensorFromAttr(mlir::ElementsAttr attr);

/// Checks a runtime value against a static type: element type, rank and every
/// static dimension. Returns a description of the mismatch, or "" if it fits.
std::string describeMismatch(const HostTensor &value,
                             mlir::RankedTensorType type);

/// The non-differentiable choices of one evaluation, in evaluation order:
/// which elements of each ReLU input are positive, and which input element
/// wins each max-pool window. Replayed in another evaluation, it makes every
/// ReLU multiply by the recorded mask and every max-pool select the recorded
/// winners: the program becomes the smooth piece of itself that the recorded
/// point lies on, whose derivative there is exactly what the backward ops
/// compute (their masks come from the same point). Gradient checks use this
/// to difference across kinks.
struct KinkPattern {
  std::vector<std::vector<uint8_t>> reluMasks;
  std::vector<std::vector<int64_t>> poolWinners;
  bool operator==(const KinkPattern &other) const {
    return reluMasks == other.reluMasks && poolWinners == other.poolWinners;
  }
};

struct CallOptions {
  /// Round values whose type is bf16 to bf16. Gradient checks turn this off:
  /// they check the calculus of the program, which rounding would hide
  /// under quantization steps.
  bool roundBf16 = true;
  /// Where the call happens ("step 3"), for error messages.
  std::string context;
  /// If set, filled with the call's kink pattern.
  KinkPattern *recordKinks = nullptr;
  /// If set, the kink pattern to replay instead of deciding from the data.
  const KinkPattern *frozenKinks = nullptr;
};

/// The model variables, in declaration order.
class VariableStore {
public:
  /// Declares every kiln.variable of `module` (zero-filled).
  static mlir::FailureOr<VariableStore> declare(mlir::ModuleOp module);

  /// Fills every variable from its initializer (see kiln/ref/init.h).
  mlir::LogicalResult initialize(uint64_t seed);
  /// Replaces every variable with the tensor of its name in a safetensors
  /// file; a missing or extra name, or a dtype or shape that differs from the
  /// declaration, is an error naming it. Copies (`init copy`) are not in
  /// the file: they are recomputed from their sources.
  mlir::LogicalResult load(const std::string &path);
  /// Writes every variable but the copies to a safetensors file
  /// (atomically).
  mlir::LogicalResult save(const std::string &path) const;
  /// Sets every copy variable to its source rounded to its element type.
  void refreshCopies();

  /// The variable called `name`, or null.
  HostTensor *lookup(llvm::StringRef name);
  const HostTensor *lookup(llvm::StringRef name) const;
  /// The variable declarations, in order.
  llvm::ArrayRef<mlir::Operation *> declarations() const { return decls; }

private:
  mlir::ModuleOp module;
  std::vector<mlir::Operation *> decls;
  llvm::StringMap<HostTensor> values;
};

/// A kiln.assign of a finished call: the variable gets `value` next.
struct Assignment {
  std::string variable;
  HostTensor value;
};

struct CallResult {
  std::vector<HostTensor> results;
  /// In program order.
  std::vector<Assignment> assignments;
};

/// Applies a call's assignments to the store, in order.
void applyAssignments(VariableStore &store,
                      std::vector<Assignment> assignments);

/// Runs `function` (a single block of kiln ops, arith.constant and
/// func.return) on `arguments`, reading variables from `store` (which is not
/// modified). Errors are emitted as diagnostics at the failing op.
mlir::FailureOr<CallResult> call(mlir::func::FuncOp function,
                                 llvm::ArrayRef<HostTensor> arguments,
                                 const VariableStore &store,
                                 const CallOptions &options);

} // namespace kiln::interp

#endif // KILN_COMPILER_INTERPRETER_INTERPRETER_H
