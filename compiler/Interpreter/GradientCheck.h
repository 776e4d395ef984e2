//===- GradientCheck.h - Finite-difference checks of autodiff ---*- C++ -*-===//
//
// Part of Kiln. Checks the gradients a training step built by --kiln-autodiff
// returns (its `kiln.gradient_of` results) against finite differences of the
// forward function's loss, both run by the interpreter:
//
// - The step runs once; its kiln.assigns (batch-norm running statistics) are
//   dropped, and so are those of every forward evaluation, so all of them
//   see the same variables. Perturbed elements are restored exactly.
// - Up to `samples` elements per parameter are perturbed (all if the tensor
//   is that small; otherwise the element with the largest analytic gradient
//   plus a deterministic random choice). Derivatives are taken of the loss
//   in double (softmax_cross_entropy's value before rounding to f32), around
//   the fp32 parameter, with the spacing the fp32 perturbed values realise.
// - Kinks (KinkHandling::Freeze, the default): the unperturbed evaluation
//   records its ReLU masks and max-pool winners and every perturbed one
//   replays them, so the differenced function is the smooth piece the point
//   lies on, whose derivative is what the backward ops compute. Fourth-order
//   central differences at steps h, h/2, ..., h/128 then choose the step that
//   balances truncation (the difference between consecutive estimates)
//   against the fp32 rounding noise of the forward pass (eps * |loss| / h).
//   In a ResNet nearly every perturbation flips some ReLU, so avoiding kinks
//   instead forces steps so small that the noise swamps the quotient.
// - KinkHandling::Detect (the scheme of test/unit/reference/GradCheck.h):
//   evaluations whose kink pattern differs from the unperturbed one are
//   rejected; fourth-order differences where all points are smooth, else a
//   second-order central or one-sided stencil on the smooth side, else h/4.
//   Fine for single layers; too noisy for deep networks (see above).
// - Per parameter, the error is max |analytic - numeric| over the sampled
//   elements divided by the largest |gradient| of the tensor (analytic over
//   all elements, numeric over the sampled ones), or by the noise floor
//   eps * max(1, |loss|) / (h/8) if that is larger: smaller gradients are
//   not resolvable and count as zero. The check fails if any parameter's
//   error exceeds the tolerance.
// - In Detect mode an element whose every neighbour changes the pattern sits
//   on a kink itself (e.g. a zero batch-norm scale leaves ReLU inputs at
//   exactly 0); it is skipped and reported, and a parameter whose sampled
//   elements are all skipped is reported "unchecked".
// - bf16 rounding is off in every evaluation: the check is about calculus;
//   the quantization steps of bf16 would swamp any finite difference.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_COMPILER_INTERPRETER_GRADIENTCHECK_H
#define KILN_COMPILER_INTERPRETER_GRADIENTCHECK_H

#include "compiler/Interpreter/Interpreter.h"

#include "llvm/Support/raw_ostream.h"

namespace kiln::interp {

/// How finite differences deal with kinks (ReLU, max-pool).
enum class KinkHandling {
  /// Replay the unperturbed point's kink pattern in every evaluation, so the
  /// differenced function is smooth (the default).
  Freeze,
  /// Evaluate the real program and use only points whose kink pattern equals
  /// the unperturbed one, with one-sided stencils and smaller steps near a
  /// kink.
  Detect,
};

struct GradientCheckOptions {
  /// Largest accepted relative error per parameter.
  double tolerance = 1e-3;
  /// Elements checked per parameter.
  int64_t samples = 16;
  /// Initial finite-difference step (the largest one).
  double step = 0.1;
  KinkHandling kinks = KinkHandling::Freeze;
  /// Chooses the sampled elements.
  uint64_t seed = 0;
};

/// Runs the check and prints one line per parameter and a verdict to `out`.
/// Fails if the check fails or an evaluation reports an error.
mlir::LogicalResult
checkGradients(mlir::func::FuncOp step, mlir::func::FuncOp forward,
               llvm::ArrayRef<HostTensor> inputs, VariableStore &store,
               const GradientCheckOptions &options, llvm::raw_ostream &out);

} // namespace kiln::interp

#endif // KILN_COMPILER_INTERPRETER_GRADIENTCHECK_H
