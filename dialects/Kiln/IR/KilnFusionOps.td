//===- KilnFusionOps.td - Ops that --kiln-fuse creates -------*- tablegen -*-===//
//
// Fused forms of several kiln ops: what `--kiln-fuse` builds so that the
// backends run them in one pass over memory. Each has the semantics of the
// ops it replaces, in order; kiln-run executes it as such.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNFUSIONOPS_TD
#define KILN_DIALECT_KILN_IR_KILNFUSIONOPS_TD

def Kiln_FusedElementwiseOp : Kiln_Op<"fused_elementwise", [Pure, Kiln_LayoutOpInterface,
    IsolatedFromAbove, SingleBlock]> {
  let summary = "a chain of elementwise ops run as one loop";
  let description = [{
    The body is a chain of ops implementing `ElementwiseOpInterface` over
    tensors of one shape, applied to the block arguments (the operands);
    `kiln.yield` gives the results. The op means exactly what the body's
    ops mean run one after the other, intermediate bf16 values rounded to
    bf16 included; a backend runs all of it in one pass over the elements
    (on x86, one `linalg.generic`). A value the body computes that is also
    needed outside is yielded as a further result.

    ```mlir
    %r = kiln.fused_elementwise %a, %b
        : (tensor<?x28x28x16xf32>, tensor<?x28x28x16xf32>) -> tensor<?x28x28x16xf32> {
    ^bb0(%x: tensor<?x28x28x16xf32>, %y: tensor<?x28x28x16xf32>):
      %s = kiln.add %x, %y : tensor<?x28x28x16xf32>
      %t = kiln.relu %s : tensor<?x28x28x16xf32>
      kiln.yield %t : tensor<?x28x28x16xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Kiln_FloatTensor>:$inputs);
  let results = (outs Variadic<Kiln_FloatTensor>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, results) $body
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield", [Pure, Terminator, ReturnLike,
    HasParent<"FusedElementwiseOp">]> {
  let summary = "the results of a kiln.fused_elementwise body";
  let description = [{
    ```mlir
    kiln.yield %t, %s : tensor<?x28x28x16xf32>, tensor<?x28x28x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_FloatTensor>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}

def Kiln_FusedSgdUpdateOp : Kiln_Op<"fused_sgd_update", [Pure,
    SameVariadicOperandSize, SameVariadicResultSize]> {
  let summary = "the SGD-with-momentum steps of several parameters at once";
  let description = [{
    For each `i`, `new_weights[i], new_velocities[i]` are what
    `kiln.sgd_update weights[i], gradients[i], velocities[i], learning_rate`
    with the same `momentum`, `weight_decay` and `nesterov` computes, to the
    bit. `--kiln-fuse` groups the updates sharing these hyperparameters, so
    a backend updates all of them in one kernel launch instead of one small
    loop per parameter. Operands `i` of the three groups have one type,
    printed once.

    ```mlir
    %w:2, %v:2 = kiln.fused_sgd_update (%w0, %w1), (%g0, %g1), (%v0, %v1), %lr
        momentum 0.899999976 weight_decay 5.000000e-04 nesterov
        : tensor<3x3x16x16xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins
    Variadic<Kiln_FloatTensor>:$weights,
    Variadic<Kiln_FloatTensor>:$gradients,
    Variadic<Kiln_FloatTensor>:$velocities,
    Kiln_ScalarF32:$learning_rate,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$momentum,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$weight_decay,
    UnitAttr:$nesterov
  );
  let results = (outs
    Variadic<Kiln_FloatTensor>:$new_weights,
    Variadic<Kiln_FloatTensor>:$new_velocities
  );
  let assemblyFormat = [{
    `(` $weights `)` `,` `(` $gradients `)` `,` `(` $velocities `)` `,`
    $learning_rate `momentum` $momentum `weight_decay` $weight_decay
    (`nesterov` $nesterov^)? attr-dict `:`
    custom<ParameterTypes>(type($weights), type($gradients), type($velocities),
                           type($new_weights), type($new_velocities))
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_IR_KILNFUSIONOPS_TD
