//===- KilnDataMovementOps.td - Concat, slices, shuffles -----*- tablegen -*-===//
//
// Ops that only move elements: concatenation and slices along one axis
// (DenseNet, SqueezeNet, ShuffleNet's split), channel shuffle and a general
// transpose (flattening an NHWC map in ONNX's NCHW order). No arithmetic, so
// they run in whatever precision their input has (bf16 follows) and their
// gradients are the inverse movements.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNDATAMOVEMENTOPS_TD
#define KILN_DIALECT_KILN_IR_KILNDATAMOVEMENTOPS_TD

def Kiln_ConcatOp : Kiln_Op<"concat", [Pure, Kiln_LayoutOpInterface,
    DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface, ["getPrecisionOperands"]>,
    DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, InferTypeOpAdaptor]> {
  let summary = "joins tensors along one axis";
  let description = [{
    The inputs, in order, placed one after the other along `axis`: all of
    one rank and element type, equal in every other dimension. The axis may
    not be dynamic (the batch). DenseNet and SqueezeNet concatenate feature
    maps along the channels (`axis 3` of NHWC); ShuffleNet v2 joins its two
    branches so.

    The gradient of each input is `kiln.slice` of `dy` at that input's
    offset. Any layout (`LayoutOpInterface`): concatenating nChw16c
    tensors along the channels appends whole channel blocks when every
    input has a multiple of 16 channels, which is what `kiln.layout`
    requires of every activation anyway. bf16 follows: if any input is
    bf16 all are.

    Example:

    ```mlir
    %y = kiln.concat %a, %b axis 3
        : (tensor<?x28x28x64xf32>, tensor<?x28x28x32xf32>) -> tensor<?x28x28x96xf32>
    ```
  }];
  let arguments = (ins Variadic<Kiln_FloatTensor>:$inputs,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $inputs `axis` $axis attr-dict `:` functional-type($inputs, results)
  }];
}

def Kiln_SliceOp : Kiln_Op<"slice", [Pure,
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["canComputeBlocked"]>,
    DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>,
    DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, InferTypeOpAdaptor]> {
  let summary = "the elements [start, start + size) along one axis";
  let description = [{
    A static range of one axis, every other dimension whole (ONNX Slice
    with constant starts and ends and step 1 on one axis; ONNX Split is one
    slice per output). The axis may not be dynamic (the batch).

    Its gradient is `kiln.slice_backward`: `dy` placed into zeros of the
    input's shape. Several slices of one value (a split) each contribute
    such a gradient, and `--kiln-autodiff` sums them like any gradients of
    a value with several uses.

    nChw16c when the slice takes whole channel blocks (a channel slice
    starting at a multiple of 16; `kiln.layout` already requires 16-channel
    multiples of the input and the result); otherwise it computes in NHWC
    and `--kiln-layout` reorders around it. bf16 follows.

    Example (the first half of ShuffleNet v2's channel split):

    ```mlir
    %a = kiln.slice %x axis 3 start 0 size 58
        : (tensor<?x28x28x116xf32>) -> tensor<?x28x28x58xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$start,
                       ConfinedAttr<I64Attr, [IntPositive]>:$size);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $input `axis` $axis `start` $start `size` $size attr-dict
    `:` functional-type(operands, results)
  }];
}

def Kiln_SliceBackwardOp : Kiln_BackwardOp<"slice_backward", [
    DeclareOpInterfaceMethods<Kiln_LayoutOpInterface, ["canComputeBlocked"]>,
    InferTypeOpAdaptor]> {
  let summary = "gradient of slice: dy placed into zeros of the input's shape";
  let description = [{
    `input_grad` has `dy`'s shape except along `axis`, where it has
    `input_size` elements: `dy` at `[start, start + dy's size)`, zeros
    elsewhere. Layout as `kiln.slice`'s.

    ```mlir
    %dx = kiln.slice_backward %dy axis 3 start 58 input_size 116
        : (tensor<?x28x28x58xf32>) -> tensor<?x28x28x116xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$output_grad,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$axis,
                       ConfinedAttr<I64Attr, [IntNonNegative]>:$start,
                       ConfinedAttr<I64Attr, [IntPositive]>:$input_size);
  let results = (outs Kiln_FloatTensor:$input_grad);
  let assemblyFormat = [{
    $output_grad `axis` $axis `start` $start `input_size` $input_size attr-dict
    `:` functional-type(operands, results)
  }];
}

def Kiln_ChannelShuffleOp : Kiln_Op<"channel_shuffle", [Pure,
    DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>,
    DeclareOpInterfaceMethods<Kiln_GradientOpInterface>,
    SameOperandsAndResultType]> {
  let summary = "ShuffleNet's channel shuffle: groups interleaved";
  let description = [{
    With `C` channels in `groups` groups of `K = C / groups`:
    `output[n, h, w, k * groups + g] = input[n, h, w, g * K + k]`, the
    channels seen as a `[groups, K]` matrix and transposed (PyTorch's
    `x.view(N, g, K, H, W).transpose(1, 2).reshape(N, C, H, W)`, the
    pattern the ONNX importer recognizes). Its gradient is the inverse
    permutation, the shuffle with `K` groups.

    NHWC only (no `LayoutOpInterface`): a permutation of single channels
    crosses nChw16c's blocks, and ShuffleNet's channel counts (58, 116,
    232) do not block anyway. bf16 follows.

    Example:

    ```mlir
    %y = kiln.channel_shuffle %x groups 2 : tensor<?x28x28x116xf32>
    ```
  }];
  let arguments = (ins Kiln_ActivationTensor:$input,
                       ConfinedAttr<I64Attr, [IntPositive]>:$groups);
  let results = (outs Kiln_ActivationTensor:$output);
  let assemblyFormat = "$input `groups` $groups attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Kiln_TransposeOp : Kiln_Op<"transpose", [Pure,
    DeclareOpInterfaceMethods<Kiln_PrecisionOpInterface>,
    DeclareOpInterfaceMethods<Kiln_GradientOpInterface>, InferTypeOpAdaptor]> {
  let summary = "permutes the dimensions of a tensor";
  let description = [{
    `output` dimension `i` is `input` dimension `permutation[i]`:
    `output[i_0, ..., i_r-1] = input[j]` with `j[permutation[i]] = i_i`
    (numpy's `transpose(x, permutation)`). Its gradient is the transpose
    by the inverse permutation.

    The ONNX importer flattens an NHWC feature map in ONNX's NCHW order
    (VGG's classifier input) as this transpose to `[N, C, H, W]` followed
    by `kiln.reshape`: the dense weight then keeps PyTorch's row order. Its
    result is not an NHWC activation, so the op is NHWC only (no
    `LayoutOpInterface`). bf16 follows.

    Example:

    ```mlir
    %t = kiln.transpose %x permutation [0, 3, 1, 2]
        : (tensor<?x7x7x512xf32>) -> tensor<?x512x7x7xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$input, DenseI64ArrayAttr:$permutation);
  let results = (outs Kiln_FloatTensor:$output);
  let assemblyFormat = [{
    $input `permutation` $permutation attr-dict `:` functional-type(operands, results)
  }];
}

#endif // KILN_DIALECT_KILN_IR_KILNDATAMOVEMENTOPS_TD
