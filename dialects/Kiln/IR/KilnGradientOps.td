//===- KilnGradientOps.td - Ops of the backward pass ---------*- tablegen -*-===//
//
// The gradients `--kiln-autodiff` builds from the forward ops. Each takes the
// gradient of a forward result (`dy`) and what it needs of the forward pass;
// results whose shape the forward attributes do not determine are given.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNGRADIENTOPS_TD
#define KILN_DIALECT_KILN_IR_KILNGRADIENTOPS_TD

class Kiln_BackwardOp<string mnemonic, list<Trait> traits = []>
    : Kiln_Op<mnemonic, !listconcat([Pure, Kiln_BackwardOpTrait], traits)>;

def Kiln_Conv2DBackwardDataOp : Kiln_BackwardOp<"conv2d_backward_data", [
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["getLayoutOperands", "getLayoutResults", "canComputeBlocked"]>,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "gradient of conv2d with respect to its input";
  let description = [{
    The transposed convolution of `dy` with `filter`; the result type is the
    forward input's (a strided forward convolution may have dropped rows, so
    it does not follow from `dy`). With `groups` G, each group's input
    channels take the gradient through that group's filter slice only.

    ```mlir
    %dx = kiln.conv2d_backward_data %dy, %w stride [2, 2] pad [1, 1, 1, 1]
        : (tensor<?x28x28x128xf32>, tensor<3x3x128x128xf32>) -> tensor<?x56x56x128xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$output_grad,
    Kiln_ActivationTensor:$filter,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    DefaultValuedAttr<Kiln_Positive2, "{1, 1}">:$dilations,
    DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$groups
  );
  let results = (outs Kiln_ActivationTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $filter `stride` $strides `pad` $padding
    (`dilation` $dilations^)? (`groups` $groups^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_Conv2DBackwardFilterOp : Kiln_BackwardOp<"conv2d_backward_filter", [
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["getLayoutOperands", "getLayoutResults", "canComputeBlocked"]>,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "gradient of conv2d with respect to its filter";
  let description = [{
    `filter_grad[kh, kw, c, o] = sum over n, oh, ow of
       input[n, oh*sh + kh*dh - pt, ow*sw + kw*dw - pl, g*(C/G) + c] * dy[n, oh, ow, o]`
    with `g = o / (O/G)` the group of output channel `o` (`groups` G,
    default 1).

    ```mlir
    %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1]
        : (tensor<?x56x56x64xf32>, tensor<?x56x56x64xf32>) -> tensor<3x3x64x64xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$input,
    Kiln_ActivationTensor:$output_grad,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    DefaultValuedAttr<Kiln_Positive2, "{1, 1}">:$dilations,
    DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$groups
  );
  let results = (outs Kiln_ActivationTensor:$filter_grad);
  let assemblyFormat = [{
    $input `,` $output_grad `stride` $strides `pad` $padding
    (`dilation` $dilations^)? (`groups` $groups^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_BatchNormBackwardOp : Kiln_BackwardOp<"batch_norm_backward", [Kiln_LayoutOpInterface,
    InferTypeOpAdaptor]> {
  let summary = "gradients of training-mode batch normalization";
  let description = [{
    The exact gradient through the batch statistics, with `xhat` the
    normalized input and `M` the elements per channel:
    `offset_grad = sum dy`, `scale_grad = sum dy * xhat`,
    `input_grad = scale / sqrt(var + eps) * (dy - offset_grad / M - xhat * scale_grad / M)`.
    With `relu_offset` (set by `--kiln-fuse` when the forward batch norm was
    fused with a relu, and the forward's `offset`), `dy` is first masked
    where the rectified output, `xhat * scale + relu_offset` in f32, is not
    positive: the gradient of the rectifier, in the same pass, recomputed
    from `x` rather than read from the forward output (one tensor fewer to
    read twice).

    ```mlir
    %dx, %dgamma, %dbeta = kiln.batch_norm_backward %dy, %x, %gamma, %mean, %var
        epsilon 9.99999974E-6 : (tensor<?x56x56x64xf32>, tensor<?x56x56x64xf32>,
        tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<?x56x56x64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    Kiln_FloatTensor:$output_grad,
    Kiln_FloatTensor:$input,
    Kiln_VectorF32:$scale,
    Kiln_VectorF32:$batch_mean,
    Kiln_VectorF32:$batch_var,
    Optional<Kiln_VectorF32>:$relu_offset,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$epsilon
  );
  let results = (outs
    Kiln_FloatTensor:$input_grad,
    Kiln_VectorF32:$scale_grad,
    Kiln_VectorF32:$offset_grad
  );
  let assemblyFormat = [{
    $output_grad `,` $input `,` $scale `,` $batch_mean `,` $batch_var
    (`relu_offset` $relu_offset^)? `epsilon` $epsilon attr-dict
    `:` functional-type(operands, results)
  }];
}

def Kiln_ReluBackwardOp : Kiln_BackwardOp<"relu_backward", [Kiln_LayoutOpInterface, Elementwise,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>,
    SameOperandsAndResultType]> {
  let summary = "gradient of relu: dy where the forward output is positive";
  let description = [{
    Takes the forward *output*, so the input need not be kept alive.

    ```mlir
    %dx = kiln.relu_backward %dy, %y : tensor<?x56x56x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$output_grad, Kiln_FloatTensor:$output);
  let results = (outs Kiln_FloatTensor:$input_grad);
  let assemblyFormat = "$output_grad `,` $output attr-dict `:` type($input_grad)";
}

def Kiln_ActivationBackwardOp : Kiln_BackwardOp<"activation_backward", [Kiln_LayoutOpInterface, Elementwise,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>,
    SameOperandsAndResultType]> {
  let summary = "gradient of kiln.activation: dy times the derivative at the forward input";
  let description = [{
    Takes the forward *input* (the derivatives of the hard functions are
    not functions of their outputs at the kinks, and SiLU's is not one at
    all); the table of derivatives is in `kiln.activation`.

    ```mlir
    %dx = kiln.activation_backward hard_swish %dy, %x : tensor<?x56x56x16xf32>
    ```
  }];
  let arguments = (ins Kiln_ActivationKind:$kind, Kiln_FloatTensor:$output_grad,
                       Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$input_grad);
  let assemblyFormat = "$kind $output_grad `,` $input attr-dict `:` type($input_grad)";
}

def Kiln_BroadcastBinaryBackwardOp : Kiln_BackwardOp<"broadcast_binary_backward", [AttrSizedOperandSegments]> {
  let summary = "gradient of broadcast_binary with respect to one operand";
  let description = [{
    `dy` times the partial derivative of `lhs <kind> rhs` with respect to
    the operand `wrt`, summed over the dimensions where that operand (the
    result type) is 1 and `dy` is not, accumulated in f32:

    | kind  | wrt lhs    | wrt rhs             | operands read |
    |-------|------------|---------------------|---------------|
    | `add` | `dy`       | `dy`                | none          |
    | `sub` | `dy`       | `-dy`               | none          |
    | `mul` | `dy * rhs` | `dy * lhs`          | the other one |
    | `div` | `dy / rhs` | `-dy * lhs / rhs^2` | `rhs`; both   |

    Exactly the forward operands the formula reads are given (so an add's
    gradient keeps no activation alive); they broadcast to `dy`'s shape.
    For squeeze-and-excitation's `mul` wrt the scale, a sum per image and
    channel over the spatial dimensions. NHWC only.

    ```mlir
    %ds = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x
        : (tensor<?x14x14x96xf32>, tensor<?x14x14x96xf32>) -> tensor<?x1x1x96xf32>
    %db = kiln.broadcast_binary_backward sub wrt rhs %dy
        : (tensor<?x14x14x96xf32>) -> tensor<1x1x1x96xf32>
    ```
  }];
  let arguments = (ins Kiln_BinaryKind:$kind, Kiln_BinaryOperand:$wrt,
                       Kiln_FloatTensor:$output_grad,
                       Optional<Kiln_FloatTensor>:$lhs,
                       Optional<Kiln_FloatTensor>:$rhs);
  let results = (outs Kiln_FloatTensor:$operand_grad);
  let assemblyFormat = [{
    $kind `wrt` $wrt $output_grad (`lhs` $lhs^)? (`rhs` $rhs^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Which forward operands the gradient of `kind` with respect to `wrt`
    /// reads (the table above): {lhs, rhs}.
    static std::pair<bool, bool> operandsRead(BinaryKind kind,
                                              BinaryOperand wrt);
  }];
  let hasVerifier = 1;
}

def Kiln_BiasAddBackwardOp : Kiln_BackwardOp<"bias_add_backward", [InferTypeOpAdaptor]> {
  let summary = "gradient of bias_add with respect to the bias: dy summed per channel";
  let description = [{
    Sums `dy` over every dimension but the last, accumulating in f32.

    ```mlir
    %db = kiln.bias_add_backward %dy : (tensor<?x112x112x32xf32>) -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$output_grad);
  let results = (outs Kiln_VectorTensor:$bias_grad);
  let assemblyFormat = "$output_grad attr-dict `:` functional-type(operands, results)";
}

def Kiln_MaxPoolBackwardOp : Kiln_BackwardOp<"max_pool_backward", [Kiln_LayoutOpInterface]> {
  let summary = "gradient of max_pool: dy routed to each window's maximum";
  let description = [{
    Each window's gradient goes to the first maximum in scan order.

    ```mlir
    %dx = kiln.max_pool_backward %dy, %x window [3, 3] stride [2, 2] pad [1, 1, 1, 1]
        : (tensor<?x56x56x64xf32>, tensor<?x112x112x64xf32>) -> tensor<?x112x112x64xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$output_grad,
    Kiln_ActivationTensor:$input,
    Kiln_Positive2:$window,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    UnitAttr:$ceil_mode
  );
  let results = (outs Kiln_ActivationTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `,` $input `window` $window `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_AvgPoolBackwardOp : Kiln_BackwardOp<"avg_pool_backward", [Kiln_LayoutOpInterface]> {
  let summary = "gradient of avg_pool: dy spread evenly over each window";
  let description = [{
    ```mlir
    %dx = kiln.avg_pool_backward %dy window [2, 2] stride [2, 2] pad [0, 0, 0, 0]
        : (tensor<?x4x4x64xf32>) -> tensor<?x8x8x64xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$output_grad,
    Kiln_Positive2:$window,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    UnitAttr:$ceil_mode
  );
  let results = (outs Kiln_ActivationTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `window` $window `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Kiln_GlobalAvgPoolBackwardOp : Kiln_BackwardOp<"global_avg_pool_backward", [Kiln_LayoutOpInterface]> {
  let summary = "gradient of global_avg_pool: dy / (H*W) broadcast over H, W";
  let description = [{
    ```mlir
    %dx = kiln.global_avg_pool_backward %dy : (tensor<?x2048xf32>) -> tensor<?x7x7x2048xf32>
    ```
  }];
  let arguments = (ins Kiln_MatrixTensor:$output_grad);
  let results = (outs Kiln_ActivationTensor:$input_grad);
  let assemblyFormat = "$output_grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Kiln_MatmulOp : Kiln_BackwardOp<"matmul", [InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "matrix product with optional transposes (dense gradients)";
  let description = [{
    `op(lhs) x op(rhs)` where `op` transposes when the flag is set. The dense
    layer's gradients are `dy x w^T` and `x^T x dy`.

    ```mlir
    %dx = kiln.matmul %dy, %w transpose_rhs
        : (tensor<?x1000xf32>, tensor<2048x1000xf32>) -> tensor<?x2048xf32>
    %dw = kiln.matmul %x, %dy transpose_lhs
        : (tensor<?x2048xf32>, tensor<?x1000xf32>) -> tensor<2048x1000xf32>
    ```
  }];
  let arguments = (ins
    Kiln_MatrixTensor:$lhs,
    Kiln_MatrixTensor:$rhs,
    UnitAttr:$transpose_lhs,
    UnitAttr:$transpose_rhs
  );
  let results = (outs Kiln_MatrixTensor:$output);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_lhs` $transpose_lhs^)? (`transpose_rhs` $transpose_rhs^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_ReduceSumOp : Kiln_BackwardOp<"reduce_sum", [InferTypeOpAdaptor]> {
  let summary = "sums a tensor over its leading dimension (bias gradients)";
  let description = [{
    ```mlir
    %db = kiln.reduce_sum %dy : (tensor<?x1000xf32>) -> tensor<1000xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Kiln_SoftmaxCrossEntropyBackwardOp
    : Kiln_BackwardOp<"softmax_cross_entropy_backward"> {
  let summary = "gradient of softmax_cross_entropy with respect to the logits";
  let description = [{
    `dlogits = loss_grad * (softmax(logits) - q) / N`, with `q` the smoothed
    one-hot labels.

    ```mlir
    %dl = kiln.softmax_cross_entropy_backward %dloss, %logits, %labels
        label_smoothing 1.000000e-01
        : (tensor<f32>, tensor<?x1000xf32>, tensor<?xi32>) -> tensor<?x1000xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ScalarF32:$loss_grad,
    2DTensorOf<[F32]>:$logits,
    Kiln_LabelTensor:$labels,
    DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing
  );
  let results = (outs 2DTensorOf<[F32]>:$logits_grad);
  let assemblyFormat = [{
    $loss_grad `,` $logits `,` $labels (`label_smoothing` $label_smoothing^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_IR_KILNGRADIENTOPS_TD
