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
    SameVariadicOperandSize, AttrSizedResultSegments]> {
  let summary = "the SGD-with-momentum steps of several parameters at once";
  let description = [{
    For each `i`, `new_weights[i], new_velocities[i]` are what
    `kiln.sgd_update weights[i], gradients[i], velocities[i], learning_rate`
    with the same `momentum`, `weight_decay` and `nesterov` computes, to the
    bit. `--kiln-fuse` groups the updates sharing these hyperparameters, so
    a backend updates all of them in one kernel launch instead of one small
    loop per parameter. Operands `i` of the three groups have one type,
    printed once.

    With `copies <type>`, `new_copies[i]` is `kiln.cast new_weights[i]` to
    that element type (the bf16 weight copies of `--kiln-bf16-weight-copies`),
    written in the same loop: the cast costs no pass of its own over the
    weights.

    ```mlir
    %w:2, %v:2 = kiln.fused_sgd_update (%w0, %w1), (%g0, %g1), (%v0, %v1), %lr
        momentum 0.899999976 weight_decay 5.000000e-04 nesterov
        : tensor<3x3x16x16xf32>, tensor<16xf32>
    %w:2, %v:2, %c:2 = kiln.fused_sgd_update (%w0, %w1), (%g0, %g1), (%v0, %v1), %lr
        momentum 0.899999976 weight_decay 5.000000e-04
        : tensor<3x3x16x16xf32>, tensor<64x10xf32> copies bf16
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
    Variadic<Kiln_FloatTensor>:$new_velocities,
    Variadic<Kiln_FloatTensor>:$new_copies
  );
  let assemblyFormat = [{
    `(` $weights `)` `,` `(` $gradients `)` `,` `(` $velocities `)` `,`
    $learning_rate `momentum` $momentum `weight_decay` $weight_decay
    (`nesterov` $nesterov^)? attr-dict `:`
    custom<ParameterTypes>(type($weights), type($gradients), type($velocities),
                           type($new_weights), type($new_velocities),
                           type($new_copies))
  }];
  let hasVerifier = 1;
}

def Kiln_FusedConv2DBatchNormOp : Kiln_Op<"fused_conv2d_batch_norm", [Pure,
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["getLayoutOperands", "getLayoutResults"]>,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "a convolution with its inference batch norm, residual add and relu";
  let description = [{
    `kiln.conv2d` of `input` and `filter`, then `kiln.batch_norm_inference`
    of the result with `scale`, `offset`, `mean` and `variance`, then, when
    present, the `residual` added, then, with `relu`, rectified. The
    convolution's result and the sum are not rounded to bf16 in between;
    only the output is. `--kiln-fuse` builds it in the evaluation step:
    batch norm with fixed statistics is a per-channel scale and shift, so
    the x86 backend scales the filter (rounding it to its element type),
    passes the shift as the convolution's bias and adds the residual and
    rectifies in the library's post-ops, while each output block is in
    cache. That saves the batch norm's and the residual add's passes over
    the activations.

    ```mlir
    %y = kiln.fused_conv2d_batch_norm %x, %w, %gamma, %beta, %mean, %var
        residual %shortcut stride [1, 1] pad [0, 0, 0, 0] epsilon 1.000000e-05 relu
        : (tensor<?x14x14x256xf32>, tensor<1x1x256x1024xf32>, tensor<1024xf32>,
           tensor<1024xf32>, tensor<1024xf32>, tensor<1024xf32>,
           tensor<?x14x14x1024xf32>) -> tensor<?x14x14x1024xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$input,
    Kiln_ActivationTensor:$filter,
    Kiln_VectorF32:$scale,
    Kiln_VectorF32:$offset,
    Kiln_VectorF32:$mean,
    Kiln_VectorF32:$variance,
    Optional<Kiln_ActivationTensor>:$residual,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    DefaultValuedAttr<Kiln_Positive2, "{1, 1}">:$dilations,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$epsilon,
    UnitAttr:$relu
  );
  let results = (outs Kiln_ActivationTensor:$output);
  let assemblyFormat = [{
    $input `,` $filter `,` $scale `,` $offset `,` $mean `,` $variance
    (`residual` $residual^)? `stride` $strides `pad` $padding
    (`dilation` $dilations^)? `epsilon` $epsilon (`relu` $relu^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_FusedConv2DBatchNormTrainOp : Kiln_Op<"fused_conv2d_batch_norm_train", [Pure,
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["getLayoutOperands"]>,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "a convolution with its training batch norm";
  let description = [{
    `kiln.conv2d` of `input` and `filter` (`conv_output`, rounded to the
    element type), then `kiln.batch_norm_train` of that with `scale`,
    `offset`, `running_mean` and `running_var`, its optional `residual` and
    `relu`: the results are the convolution's and the batch norm's. The
    batch statistics are those of the rounded convolution output. The
    batch-norm backward still reads `conv_output`. `--kiln-fuse` builds it
    in the training step, after a batch norm has taken its residual add
    and relu, so that the convolution kernel can take the statistics as it
    writes its output (on x86 the runtime's Winograd kernel does, after a
    oneDNN convolution a pass over the output): the batch norm's pass for
    its statistics disappears, the normalizing pass stays.

    ```mlir
    %c, %y, %mean, %var, %rm, %rv = kiln.fused_conv2d_batch_norm_train
        %x, %w, %gamma, %beta, %m, %v stride [1, 1] pad [1, 1, 1, 1]
        epsilon 1.000000e-05 momentum 0.899999976 relu
        : (tensor<?x28x28x16xf32>, tensor<3x3x16x16xf32>, tensor<16xf32>,
           tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
        -> (tensor<?x28x28x16xf32>, tensor<?x28x28x16xf32>, tensor<16xf32>,
            tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$input,
    Kiln_ActivationTensor:$filter,
    Kiln_VectorF32:$scale,
    Kiln_VectorF32:$offset,
    Kiln_VectorF32:$running_mean,
    Kiln_VectorF32:$running_var,
    Optional<Kiln_ActivationTensor>:$residual,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    DefaultValuedAttr<Kiln_Positive2, "{1, 1}">:$dilations,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$epsilon,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$momentum,
    UnitAttr:$relu
  );
  let results = (outs
    Kiln_ActivationTensor:$conv_output,
    Kiln_ActivationTensor:$output,
    Kiln_VectorF32:$batch_mean,
    Kiln_VectorF32:$batch_var,
    Kiln_VectorF32:$new_running_mean,
    Kiln_VectorF32:$new_running_var
  );
  let assemblyFormat = [{
    $input `,` $filter `,` $scale `,` $offset `,` $running_mean `,` $running_var
    (`residual` $residual^)? `stride` $strides `pad` $padding
    (`dilation` $dilations^)? `epsilon` $epsilon `momentum` $momentum
    (`relu` $relu^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_FusedDenseBackwardWeightsOp : Kiln_BackwardOp<"fused_dense_backward_weights", [
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "a dense layer's weight and bias gradients in one pass";
  let description = [{
    `weight_grad` is `kiln.matmul %input, %output_grad transpose_lhs` and
    `bias_grad` is `kiln.reduce_sum %output_grad`: the two gradients that
    read the dense layer's output gradient. `--kiln-fuse` builds it so a
    backend reads that gradient once (on x86, one oneDNN inner-product
    backward-weights call with its bias gradient).

    ```mlir
    %dw, %db = kiln.fused_dense_backward_weights %x, %dy
        : (tensor<?x2048xf32>, tensor<?x1000xf32>) -> (tensor<2048x1000xf32>, tensor<1000xf32>)
    ```
  }];
  let arguments = (ins Kiln_MatrixTensor:$input, Kiln_MatrixTensor:$output_grad);
  let results = (outs Kiln_MatrixTensor:$weight_grad, Kiln_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $output_grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_IR_KILNFUSIONOPS_TD
