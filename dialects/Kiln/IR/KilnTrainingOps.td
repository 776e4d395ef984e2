//===- KilnTrainingOps.td - Optimizer, schedule, allreduce ---*- tablegen -*-===//
//
// Ops the training passes add after autodiff: the learning-rate schedule,
// per-parameter optimizer updates and gradient allreduce.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNTRAININGOPS_TD
#define KILN_DIALECT_KILN_IR_KILNTRAININGOPS_TD

def Kiln_LearningRateOp : Kiln_Op<"learning_rate", [Pure]> {
  let summary = "the learning rate of a schedule at a step";
  let description = [{
    Evaluates `schedule` at the 0-based global `step` (the optimizer steps
    already taken), in f64, with its parameters read from `params` so the
    runtime can override them. The parameter slots:

    | schedule | params |
    |---|---|
    | `constant` | lr |
    | `linear_warmup_linear_decay` | init_lr, warmup_steps, peak_lr, total_steps |
    | `warmup_polynomial_decay` | base_lr, warmup_steps, train_steps, end_lr, power |
    | `step_decay` | base_lr, warmup_init_lr, warmup_steps, factor, boundary... |
    | `cosine_decay` | base_lr, warmup_init_lr, warmup_steps, total_steps, end_lr |

    `linear_warmup_linear_decay` is the SURFsara/Intel recipe's
    `gradual_warmup_then_dec`: a linear rise from init_lr to peak_lr over
    warmup_steps, then a linear fall to 0 at total_steps;
    `warmup_polynomial_decay` is MLPerf's LARS schedule (rise from 0, then
    `(base - end) * (1 - s/D)^power + end`, `D = train_steps - warmup_steps + 1`);
    `step_decay` multiplies by `factor` at each boundary passed (Goyal et al.);
    `cosine_decay` falls along a half cosine. Steps past the end keep the
    final value.

    ```mlir
    %lr = kiln.learning_rate %step, %params schedule linear_warmup_linear_decay
        : (tensor<i64>, tensor<4xf64>) -> tensor<f32>
    ```
  }];
  let arguments = (ins
    0DTensorOf<[I64]>:$step,
    1DTensorOf<[F64]>:$params,
    Kiln_Schedule:$schedule
  );
  let results = (outs Kiln_ScalarF32:$learning_rate);
  let assemblyFormat = [{
    $step `,` $params `schedule` $schedule attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_SgdUpdateOp : Kiln_Op<"sgd_update", [Pure,
    AllTypesMatch<["weight", "gradient", "velocity", "new_weight", "new_velocity"]>]> {
  let summary = "one SGD-with-momentum step of one parameter";
  let description = [{
    `g' = g + weight_decay * w; v' = momentum * v + g'`, then
    `w' = w - lr * v'`, or with `nesterov` `w' = w - lr * (g' + momentum * v')`
    (the PyTorch and TF MomentumOptimizer convention).

    ```mlir
    %w2, %v2 = kiln.sgd_update %w, %g, %v, %lr momentum 0.899999976
        weight_decay 5.000000e-04 nesterov : tensor<3x3x16x16xf32>
    ```
  }];
  let arguments = (ins
    Kiln_FloatTensor:$weight,
    Kiln_FloatTensor:$gradient,
    Kiln_FloatTensor:$velocity,
    Kiln_ScalarF32:$learning_rate,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$momentum,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$weight_decay,
    UnitAttr:$nesterov
  );
  let results = (outs Kiln_FloatTensor:$new_weight, Kiln_FloatTensor:$new_velocity);
  let assemblyFormat = [{
    $weight `,` $gradient `,` $velocity `,` $learning_rate `momentum` $momentum
    `weight_decay` $weight_decay (`nesterov` $nesterov^)? attr-dict `:` type($weight)
  }];
}

def Kiln_LarsForm : I32EnumAttr<"LarsForm",
    "where LARS applies lr * trust: inside the momentum or to its step", [
      I32EnumAttrCase<"Tf2", 0, "tf2">,
      I32EnumAttrCase<"V0_6", 1, "v0_6">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_LarsUpdateOp : Kiln_Op<"lars_update", [Pure,
    AllTypesMatch<["weight", "gradient", "velocity", "new_weight", "new_velocity"]>]> {
  let summary = "one LARS step of one parameter (layer-wise adaptive rate)";
  let description = [{
    `g' = g + weight_decay * w` (`weight_decay` is 0 for a parameter exempt
    from decay), `trust = eta * |w| / (|n| + weight_decay * |w| + epsilon)`
    when both norms are positive, else 1, and 1 with `skip_adaptation`. The
    two forms of the MLPerf ResNet-50 references (docs/reference-kernels.md):

    - `form tf2` (the default; mlcommons/training's TensorFlow 2 code):
      `n = g` (the norm before decay), `v' = momentum * v + lr * trust * g'`,
      `w' = w - v'`.
    - `form v0_6` (MLPerf v0.6's `tf.contrib.opt.LARSOptimizer` with the L2
      term in the loss): `n = g'`, `v' = momentum * v + g'`,
      `w' = w - lr * trust * v'`. The momentum holds raw gradients, so a
      change of `lr * trust` takes effect at once.

    With a `copy` result, the step also writes `kiln.cast w'` to the copy's
    element type (a bf16 weight copy of `--kiln-bf16-weight-copies`, folded
    in by `--kiln-fuse`) in the same loop.

    ```mlir
    %w2, %v2 = kiln.lars_update %w, %g, %v, %lr momentum 0.899999976
        eta 1.000000e-03 weight_decay 9.99999974E-5 epsilon 0.000000e+00
        : tensor<1x1x64x256xf32>
    %b2, %u2 = kiln.lars_update %b, %gb, %u, %lr momentum 0.899999976
        eta 1.000000e-03 weight_decay 9.99999974E-5 epsilon 0.000000e+00
        form v0_6 skip_adaptation : tensor<1000xf32>
    %w3, %v3, %c3 = kiln.lars_update %w, %g, %v, %lr momentum 0.899999976
        eta 1.000000e-03 weight_decay 9.99999974E-5 epsilon 0.000000e+00
        : tensor<1x1x64x256xf32> copy tensor<1x1x64x256xbf16>
    ```
  }];
  let arguments = (ins
    Kiln_FloatTensor:$weight,
    Kiln_FloatTensor:$gradient,
    Kiln_FloatTensor:$velocity,
    Kiln_ScalarF32:$learning_rate,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$momentum,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$eta,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$weight_decay,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$epsilon,
    DefaultValuedAttr<Kiln_LarsForm, "::kiln::LarsForm::Tf2">:$form,
    UnitAttr:$skip_adaptation
  );
  let results = (outs Kiln_FloatTensor:$new_weight, Kiln_FloatTensor:$new_velocity,
                  Optional<Kiln_FloatTensor>:$new_copy);
  let assemblyFormat = [{
    $weight `,` $gradient `,` $velocity `,` $learning_rate `momentum` $momentum
    `eta` $eta `weight_decay` $weight_decay `epsilon` $epsilon
    (`form` $form^)? (`skip_adaptation` $skip_adaptation^)? attr-dict `:` type($weight)
    (`copy` type($new_copy)^)?
  }];
  let hasVerifier = 1;
}

def Kiln_AllReduceOp : Kiln_Op<"allreduce", [Pure, InferTypeOpAdaptor]> {
  let summary = "averages a bucket of gradients over all data-parallel ranks";
  let description = [{
    One collective for a whole bucket: each result is the mean over ranks of
    the matching operand. `--kiln-insert-allreduce` places it where the last
    gradient of its bucket is produced, so the runtime can start it while the
    rest of the backward pass runs; the results are first needed by the
    optimizer. On one rank it is the identity.

    ```mlir
    %a, %b = kiln.allreduce %ga, %gb bucket 3 : tensor<512xf32>, tensor<3x3x512x512xf32>
    ```
  }];
  let arguments = (ins
    Variadic<Kiln_FloatTensor>:$gradients,
    ConfinedAttr<I64Attr, [IntNonNegative]>:$bucket
  );
  let results = (outs Variadic<Kiln_FloatTensor>:$averaged);
  let assemblyFormat = "$gradients `bucket` $bucket attr-dict `:` type($gradients)";
}

#endif // KILN_DIALECT_KILN_IR_KILNTRAININGOPS_TD
