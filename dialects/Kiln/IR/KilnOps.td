//===- KilnOps.td - Operations of the kiln dialect -----------*- tablegen -*-===//
//
// Forward ops of a training program: variables, layers and the loss.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNOPS_TD
#define KILN_DIALECT_KILN_IR_KILNOPS_TD

include "dialects/Kiln/IR/KilnBase.td"
include "dialects/Kiln/IR/KilnInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"

//===----------------------------------------------------------------------===//
// Variables
//===----------------------------------------------------------------------===//

def Kiln_VariableOp : Kiln_Op<"variable", [Symbol, HasParent<"mlir::ModuleOp">,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "declares a model variable: a parameter or persistent state";
  let description = [{
    Declares a tensor that lives across training steps. `parameter`s are
    trained (autodiff produces their gradients); `state` holds everything else
    that persists, such as batch-norm running statistics and optimizer
    momentum. The initializer says how the runtime fills it before step 0:
    `he_normal` is variance scaling with scale 2 over the fan-in (the product
    of all dimensions but the last), `normal` needs a standard deviation.
    Names follow PyTorch's state-dict names, so checkpoints map onto them.

    `copy of @w` declares derived state: the value of parameter `@w` rounded
    to this variable's element type (to nearest even). `--kiln-bf16-weight-copies`
    declares one per master weight a bf16 compute op reads. A runtime fills
    it from `@w` after initializing or loading variables, and checkpoints
    leave it out; every function that assigns `@w` must assign the copy the
    rounded new value, so that it stays equal to round(`@w`) between steps.

    Example:

    ```mlir
    kiln.variable parameter @conv1.weight : tensor<7x7x3x64xf32> init he_normal
    kiln.variable parameter @fc.weight : tensor<2048x1000xf32> init normal std 1.000000e-02
    kiln.variable state @bn1.running_var : tensor<64xf32> init ones
    kiln.variable state @conv1.weight.bf16 : tensor<7x7x3x64xbf16> init copy of @conv1.weight
    kiln.variable state @kiln.lr_schedule : tensor<4xf32> init constant
        value dense<[1.0e-01, 2.6e+02, 4.8, 4.68e+03]> : tensor<4xf32>
    ```
  }];
  let arguments = (ins
    Kiln_VariableKind:$kind,
    SymbolNameAttr:$sym_name,
    TypeAttrOf<AnyStaticShapeTensor>:$type,
    Kiln_Initializer:$init,
    OptionalAttr<F32Attr>:$std,
    OptionalAttr<ElementsAttr>:$value,
    OptionalAttr<FlatSymbolRefAttr>:$of
  );
  let assemblyFormat = [{
    $kind $sym_name `:` $type `init` $init (`std` $std^)? (`value` $value^)?
    (`of` $of^)? attr-dict
  }];
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
    bool isParameter() { return getKind() == VariableKind::Parameter; }
  }];
  let hasVerifier = 1;
}

def Kiln_ReadOp : Kiln_Op<"read", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemRead]>]> {
  let summary = "reads the current value of a variable";
  let description = [{
    Example:

    ```mlir
    %w = kiln.read @conv1.weight : tensor<7x7x3x64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable);
  let results = (outs AnyStaticShapeTensor:$value);
  let assemblyFormat = "$variable attr-dict `:` type($value)";
}

def Kiln_AssignOp : Kiln_Op<"assign", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>, MemoryEffects<[MemWrite]>]> {
  let summary = "stores a new value into a variable at the end of the step";
  let description = [{
    Gives a variable the value it holds in the next step. A function assigns
    each variable at most once; reads in the same function see the old value.

    Example:

    ```mlir
    kiln.assign @bn1.running_mean, %mean : tensor<64xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$variable, AnyStaticShapeTensor:$value);
  let assemblyFormat = "$variable `,` $value attr-dict `:` type($value)";
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

def Kiln_Conv2DOp : Kiln_Op<"conv2d", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor, DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["getLayoutOperands", "getLayoutResults", "canComputeBlocked"]>,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "2-D convolution, NHWC input and HWIO filter, grouped, with an optional bias";
  let description = [{
    `output[n, oh, ow, o] = sum over kh, kw, c < C/G of
       input[n, oh*sh + kh*dh - pt, ow*sw + kw*dw - pl, g*(C/G) + c] * filter[kh, kw, c, o]
       (+ bias[o])`
    with `g = o / (O/G)` the group of output channel `o`, `G` = `groups`
    (default 1), zero padding `pad [top, bottom, left, right]`. The filter is
    HWIO with `I = C/G` input channels per group; `C` and `O` are multiples
    of `G`. A depthwise convolution has `G = C` (and `O = C * multiplier`).
    The output height is `(H + top + bottom - dh*(KH-1) - 1) / sh + 1`,
    likewise the width.

    The optional f32 `bias` (one per output channel) is added to the result
    before it is rounded to the element type. Importers write
    `kiln.bias_add` after the convolution; `--kiln-fuse` folds the pair into
    this operand after autodiff, so that a backend adds it as the
    convolution writes its output (oneDNN's convolution with bias). Its
    gradient is `kiln.bias_add_backward`, a reduction of `dy`.

    Example:

    ```mlir
    %y = kiln.conv2d %x, %w stride [2, 2] pad [3, 3, 3, 3]
        : (tensor<?x224x224x3xf32>, tensor<7x7x3x64xf32>) -> tensor<?x112x112x64xf32>
    %d = kiln.conv2d %y, %dw bias %b stride [1, 1] pad [1, 1, 1, 1] groups 64
        : (tensor<?x112x112x64xf32>, tensor<3x3x1x64xf32>, tensor<64xf32>)
        -> tensor<?x112x112x64xf32>
    ```
  }];
  let arguments = (ins
    Kiln_ActivationTensor:$input,
    Kiln_ActivationTensor:$filter,
    Optional<Kiln_VectorF32>:$bias,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    DefaultValuedAttr<Kiln_Positive2, "{1, 1}">:$dilations,
    DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>, "1">:$groups
  );
  let results = (outs Kiln_ActivationTensor:$output);
  let assemblyFormat = [{
    $input `,` $filter (`bias` $bias^)? `stride` $strides `pad` $padding
    (`dilation` $dilations^)? (`groups` $groups^)? attr-dict
    `:` functional-type(operands, results)
  }];
}

def Kiln_BatchNormTrainOp : Kiln_Op<"batch_norm_train", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "batch normalization over the batch, training form";
  let description = [{
    Normalizes over every dimension but the last (channels) with the batch's
    own mean and biased variance, then scales by `scale` (gamma) and shifts by
    `offset` (beta). Also returns the batch statistics (for the backward pass)
    and the running statistics for the next step:
    `new_mean = momentum * running_mean + (1 - momentum) * batch_mean`, and
    likewise for the variance with the unbiased batch variance. Statistics and
    parameters are f32 whatever the input's element type.

    `--kiln-fuse` (after autodiff: these forms have no gradient rule) may
    add, in this order, a `residual` to the normalized output (the residual
    connection of a ResNet block) and `relu`, rectifying the result. The
    normalized value is not rounded to bf16 before the residual is added;
    only the output is. A backend does all of it in the normalizing pass.

    Example:

    ```mlir
    %y, %mean, %var, %rm, %rv = kiln.batch_norm_train %x, %gamma, %beta, %m, %v
        epsilon 1.000000e-05 momentum 0.899999976
        : (tensor<?x56x56x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
        -> (tensor<?x56x56x64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
    ```
  }];
  let arguments = (ins
    Kiln_FloatTensor:$input,
    Kiln_VectorF32:$scale,
    Kiln_VectorF32:$offset,
    Kiln_VectorF32:$running_mean,
    Kiln_VectorF32:$running_var,
    Optional<Kiln_FloatTensor>:$residual,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$epsilon,
    ConfinedAttr<F32Attr, [Kiln_FloatNonNegative]>:$momentum,
    UnitAttr:$relu
  );
  let results = (outs
    Kiln_FloatTensor:$output,
    Kiln_VectorF32:$batch_mean,
    Kiln_VectorF32:$batch_var,
    Kiln_VectorF32:$new_running_mean,
    Kiln_VectorF32:$new_running_var
  );
  let assemblyFormat = [{
    $input `,` $scale `,` $offset `,` $running_mean `,` $running_var
    (`residual` $residual^)? `epsilon` $epsilon `momentum` $momentum
    (`relu` $relu^)?
    attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_BatchNormInferenceOp : Kiln_Op<"batch_norm_inference", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "batch normalization with fixed statistics, inference form";
  let description = [{
    `output = (input - mean) / sqrt(var + epsilon) * scale + offset`, per
    channel (the last dimension), rectified when `relu` is set.

    Example:

    ```mlir
    %y = kiln.batch_norm_inference %x, %gamma, %beta, %m, %v epsilon 1.000000e-05
        : (tensor<?x7x7x2048xf32>, tensor<2048xf32>, tensor<2048xf32>, tensor<2048xf32>,
           tensor<2048xf32>) -> tensor<?x7x7x2048xf32>
    ```
  }];
  let arguments = (ins
    Kiln_FloatTensor:$input,
    Kiln_VectorF32:$scale,
    Kiln_VectorF32:$offset,
    Kiln_VectorF32:$mean,
    Kiln_VectorF32:$variance,
    ConfinedAttr<F32Attr, [Kiln_FloatPositive]>:$epsilon,
    UnitAttr:$relu
  );
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $scale `,` $offset `,` $mean `,` $variance `epsilon` $epsilon
    (`relu` $relu^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_ReluOp : Kiln_Op<"relu", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, Elementwise,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>, SameOperandsAndResultType]> {
  let summary = "rectified linear unit, max(x, 0)";
  let description = [{
    Example:

    ```mlir
    %y = kiln.relu %x : tensor<?x56x56x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Kiln_ActivationOp : Kiln_Op<"activation", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, Elementwise,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>, SameOperandsAndResultType]> {
  let summary = "a smooth or clipped activation function: sigmoid, SiLU, ReLU6, hard sigmoid, hard swish";
  let description = [{
    Applies `kind` to every element (definitions as PyTorch's):

    | kind           | y                           | dy/dx                                  |
    |----------------|-----------------------------|----------------------------------------|
    | `sigmoid`      | s(x) = 1 / (1 + exp(-x))    | s(x) (1 - s(x))                        |
    | `silu`         | x s(x)                      | s(x) (1 + x (1 - s(x)))                |
    | `relu6`        | min(max(x, 0), 6)           | 1 where 0 < x < 6, else 0              |
    | `hard_sigmoid` | relu6(x + 3) / 6            | 1/6 where -3 < x < 3, else 0           |
    | `hard_swish`   | x relu6(x + 3) / 6          | 0 below -3, x/3 + 1/2 up to 3, 1 above |

    The derivatives at the kinks are PyTorch's (`hardtanh_backward`,
    `hardsigmoid_backward`, `hardswish_backward`), so gradients compared
    with PyTorch agree there too. One op with a kind rather than one op per
    function: they share everything but the scalar formula (fusion,
    layout, bf16 policy, lowering), and the op set stays small. ReLU stays
    its own op because batch norm and convolutions fuse it.

    Elementwise, so it computes in any layout (`--kiln-layout` leaves its
    operand where it is). NaN propagates.

    Example (MobileNetV3's activation, EfficientNet's):

    ```mlir
    %y = kiln.activation hard_swish %x : tensor<?x56x56x16xf32>
    %z = kiln.activation silu %x : tensor<?x56x56x16xf32>
    ```
  }];
  let arguments = (ins Kiln_ActivationKind:$kind, Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$kind $input attr-dict `:` type($input)";
}

def Kiln_DropoutOp : Kiln_Op<"dropout", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "training dropout with a counter-based mask: keep with probability 1 - ratio, scale by 1 / (1 - ratio)";
  let description = [{
    Inverted dropout (as PyTorch's): each element is kept with probability
    `1 - ratio` and then multiplied by `1 / (1 - ratio)`, or set to zero.
    The mask is a pure function of the op's attributes, the step and the
    element's logical (NHWC, row-major) index, through Philox4x32-10
    (`kiln/ref/philox.h`, which states the rule):

    ```
    key     = {lo32(seed), hi32(seed)}
    counter = {lo32(i), hi32(i), lo32(step), stream}
    keep    = philox4x32_10(counter, key)[0] >= round(ratio * 2^32)
    ```

    So the op is `Pure` (no hidden generator state): kiln-run and the
    compiled step draw the same mask bit for bit, every MPI rank draws the
    same mask at the same step, and a resumed run continues the sequence.
    `step` is the training step's `kiln.step` argument (optimizer steps
    taken); `stream` tells the dropouts of one model apart (the importer
    numbers them in graph order) and `seed` is the user's (kilnc
    `--dropout-seed`, default 0). The gradient is this op again on `dy`,
    with the same step and attributes: it regenerates the mask instead of
    keeping it alive from the forward pass to the backward pass.

    `--kiln-derive-eval` makes it the identity in the evaluation step.
    Elementwise, so it computes in any layout (the mask follows the logical
    index whatever the physical layout); bf16 follows the input.

    Example (a classifier's dropout, the second of the model):

    ```mlir
    %y = kiln.dropout %x, %step ratio 2.000000e-01 seed 0 stream 1 : tensor<?x1280xf32>, tensor<i64>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, 0DTensorOf<[I64]>:$step,
                       F32Attr:$ratio, I64Attr:$seed, I64Attr:$stream);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $input `,` $step `ratio` $ratio `seed` $seed `stream` $stream attr-dict
    `:` type($input) `,` type($step)
  }];
  let hasVerifier = 1;
}

def Kiln_AddOp : Kiln_Op<"add", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, Elementwise, Commutative,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>,
    SameOperandsAndResultType]> {
  let summary = "elementwise sum of two tensors of the same type";
  let description = [{
    Example (a residual connection):

    ```mlir
    %s = kiln.add %a, %b : tensor<?x56x56x256xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$lhs, Kiln_FloatTensor:$rhs);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($output)";
}

def Kiln_BroadcastBinaryOp : Kiln_Op<"broadcast_binary", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "add, sub, mul or div of two tensors with numpy broadcasting";
  let description = [{
    `lhs <kind> rhs` where each operand is broadcast to the result's shape:
    both have one rank (without numpy's rank extension: the importer
    reshapes a lower-rank operand first) and along each dimension their
    sizes are equal or one of them is 1; the result takes the larger.
    Squeeze-and-excitation scales every channel of every image,
    [N, H, W, C] x [N, 1, 1, C]; a per-channel constant is [1, 1, 1, C].
    Both operands have one element type, the result's.

    The gradient with respect to each operand is
    `kiln.broadcast_binary_backward`: the partial derivative times `dy`,
    summed over the dimensions that operand broadcasts (add: `dy`, sub:
    `dy` and `-dy`, mul: `dy * rhs` and `dy * lhs`, div: `dy / rhs` and
    `-dy * lhs / rhs^2`). One op with a kind rather than four: they share
    the broadcasting rule, the gradient's reduction and the lowering.
    Operands of one shape are `kiln.add`'s business when adding (it fuses
    into elementwise chains); this op is for shapes that differ.

    NHWC only (no `LayoutOpInterface`): `--kiln-layout` reorders around it.
    Not fused: a broadcast operand is not elementwise. bf16 follows both
    operands.

    Example:

    ```mlir
    %y = kiln.broadcast_binary mul %x, %s : (tensor<?x14x14x96xf32>, tensor<?x1x1x96xf32>) -> tensor<?x14x14x96xf32>
    %z = kiln.broadcast_binary div %x, %c : (tensor<?x14x14x96xf32>, tensor<1x1x1x96xf32>) -> tensor<?x14x14x96xf32>
    ```
  }];
  let arguments = (ins Kiln_BinaryKind:$kind, Kiln_FloatTensor:$lhs,
                       Kiln_FloatTensor:$rhs);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$kind $lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
}

def Kiln_BiasAddOp : Kiln_Op<"bias_add", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "adds a per-channel bias: input[..., c] + bias[c]";
  let description = [{
    The bias of a convolution (ONNX Conv's third input, PyTorch's
    `Conv2d(bias=True)`) or of any layer whose channels are the last
    dimension. A separate op rather than an operand of `kiln.conv2d`: the
    convolution, its gradients, its fusions with batch norm and the
    systolic target stay as they are, and a convolution followed by batch
    norm (where a bias is redundant) never carries one. Its gradients are
    `dy` for the input and `kiln.bias_add_backward` (the channel sum of
    `dy`) for the bias.

    NHWC only (no `LayoutOpInterface`): `--kiln-layout` reorders around it.
    bf16 follows the input; the bias is rounded with it.

    Example:

    ```mlir
    %y = kiln.bias_add %c, %b : (tensor<?x112x112x32xf32>, tensor<32xf32>) -> tensor<?x112x112x32xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, Kiln_VectorTensor:$bias);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input `,` $bias attr-dict `:` functional-type(operands, results)";
}

class Kiln_PoolOp<string mnemonic, string what> : Kiln_Op<mnemonic, [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = what # " pooling over windows of an NHWC tensor";
  let arguments = (ins
    Kiln_ActivationTensor:$input,
    Kiln_Positive2:$window,
    Kiln_Positive2:$strides,
    Kiln_Padding4:$padding,
    UnitAttr:$ceil_mode
  );
  let results = (outs Kiln_ActivationTensor:$output);
  let assemblyFormat = [{
    $input `window` $window `stride` $strides `pad` $padding
    (`ceil_mode` $ceil_mode^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_MaxPoolOp : Kiln_PoolOp<"max_pool", "max"> {
  let description = [{
    Padded positions never win the maximum. With `ceil_mode` the output
    size rounds up (PyTorch's and ONNX's `ceil_mode`, SqueezeNet's pools):
    a last window that would overhang the bottom/right padding is kept
    when it starts inside the input or the top/left padding
    (`kiln/ref/window.h`); its overhang is padding like the rest, so it
    never wins either. Example (the ResNet stem):

    ```mlir
    %y = kiln.max_pool %x window [3, 3] stride [2, 2] pad [1, 1, 1, 1]
        : (tensor<?x112x112x64xf32>) -> tensor<?x56x56x64xf32>
    ```
  }];
}

def Kiln_AvgPoolOp : Kiln_PoolOp<"avg_pool", "average"> {
  let description = [{
    Averages the non-padding elements of each window (TensorFlow semantics,
    PyTorch's `count_include_pad=False`). `ceil_mode` as in `max_pool`:
    the overhang of a last window is not counted either, which is also
    what PyTorch does with `count_include_pad=True` when there is no
    explicit padding (it counts explicit padding, never the overhang).

    ```mlir
    %y = kiln.avg_pool %x window [2, 2] stride [2, 2] pad [0, 0, 0, 0]
        : (tensor<?x8x8x64xf32>) -> tensor<?x4x4x64xf32>
    ```
  }];
}

def Kiln_GlobalAvgPoolOp : Kiln_Op<"global_avg_pool", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor]> {
  let summary = "mean over the spatial dimensions, NHWC to NC";
  let description = [{
    Example:

    ```mlir
    %y = kiln.global_avg_pool %x : (tensor<?x7x7x2048xf32>) -> tensor<?x2048xf32>
    ```
  }];
  let arguments = (ins Kiln_ActivationTensor:$input);
  let results = (outs Kiln_MatrixTensor:$output);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Kiln_DenseOp : Kiln_Op<"dense", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    InferTypeOpAdaptor,
    DeclareOpInterfaceMethods<Kiln_CostOpInterface>]> {
  let summary = "fully connected layer: input[N,K] x weight[K,M] (+ bias[M])";
  let description = [{
    Example:

    ```mlir
    %logits = kiln.dense %x, %w bias %b
        : (tensor<?x2048xf32>, tensor<2048x1000xf32>, tensor<1000xf32>) -> tensor<?x1000xf32>
    ```
  }];
  let arguments = (ins
    Kiln_MatrixTensor:$input,
    Kiln_MatrixTensor:$weight,
    Optional<Kiln_VectorF32>:$bias
  );
  let results = (outs Kiln_MatrixTensor:$output);
  let assemblyFormat = [{
    $input `,` $weight (`bias` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
}

def Kiln_ReshapeOp : Kiln_Op<"reshape", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>]> {
  let summary = "reinterprets a tensor with another shape of the same size";
  let description = [{
    Only the batch (leading) dimension may be dynamic, in both types alike.

    ```mlir
    %y = kiln.reshape %x : tensor<?x1x1x64xf32> to tensor<?x64xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  let hasVerifier = 1;
}

def Kiln_CastOp : Kiln_Op<"cast", [Pure, Kiln_LayoutOpInterface, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, Elementwise, SameOperandsAndResultShape,
    DeclareOpInterfaceMethods<Kiln_ElementwiseOpInterface>]> {
  let summary = "converts between f32 and bf16 (round to nearest even)";
  let description = [{
    ```mlir
    %y = kiln.cast %x : tensor<?x56x56x64xf32> to tensor<?x56x56x64xbf16>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($output)";
  // A cast to the input's own type, and a bf16 value widened and rounded
  // back, are the identity.
  let hasFolder = 1;
}

def Kiln_ReorderOp : Kiln_Op<"reorder", [Pure, SameOperandsAndResultType]> {
  let summary = "the same activation, stored in another physical layout";
  let description = [{
    Logically the identity: the result holds the input's values, stored as
    `layout` (the input is stored as its producer's `kiln.layout` says).
    `--kiln-layout` inserts these where a value is produced in one layout and
    read in another; the x86 lowering runs them as oneDNN reorders.

    ```mlir
    %y = kiln.reorder %x to nChw16c : tensor<32x56x56x64xf32>
    ```
  }];
  let arguments = (ins Kiln_ActivationTensor:$input, Kiln_Layout:$layout);
  let results = (outs Kiln_ActivationTensor:$output);
  let assemblyFormat = "$input `to` $layout attr-dict `:` type($input)";
  let hasVerifier = 1;
  // A reorder to the layout its input is stored in, directly or through
  // other reorders, is the identity.
  let hasFolder = 1;
}

def Kiln_SoftmaxCrossEntropyOp : Kiln_Op<"softmax_cross_entropy", [Pure, DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>, DeclareOpInterfaceMethods<Kiln_GradientOpInterface>]> {
  let summary = "mean softmax cross-entropy over a batch, with label smoothing";
  let description = [{
    `loss = mean_n( -sum_k q[n,k] * log softmax(logits[n])[k] )` with
    `q = (1 - label_smoothing) * onehot(labels) + label_smoothing / K`.
    Labels are class indices in `[0, K)`.

    ```mlir
    %loss = kiln.softmax_cross_entropy %logits, %labels label_smoothing 1.000000e-01
        : (tensor<?x1000xf32>, tensor<?xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins
    2DTensorOf<[F32]>:$logits,
    Kiln_LabelTensor:$labels,
    DefaultValuedAttr<F32Attr, "0.0f">:$label_smoothing
  );
  let results = (outs Kiln_ScalarF32:$loss);
  let assemblyFormat = [{
    $logits `,` $labels (`label_smoothing` $label_smoothing^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "dialects/Kiln/IR/KilnGradientOps.td"
include "dialects/Kiln/IR/KilnTrainingOps.td"
include "dialects/Kiln/IR/KilnFusionOps.td"
include "dialects/Kiln/IR/KilnDataMovementOps.td"

#endif // KILN_DIALECT_KILN_IR_KILNOPS_TD
