//===- SaBase.td - The sa dialect, its types, enums and attributes -*- tablegen -*-===//
//
// The `sa` dialect is the instruction level of Kiln's systolic-array target:
// one op per instruction of systolic/schema/program.fbs, over named
// buffers in HBM and on-chip memory, with SSA tokens for synchronization.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_SA_IR_SABASE_TD
#define KILN_DIALECT_SA_IR_SABASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

def Sa_Dialect : Dialect {
  let name = "sa";
  let cppNamespace = "::kiln::sa";
  let summary = "Instruction-level IR of the systolic-array target";
  let description = [{
    An `sa.program` holds the buffers of a compiled training step
    (`sa.buffer`: HBM tensors the host sees, on-chip buffers at fixed
    offsets) and its instructions in program order: DMA between HBM and
    on-chip memory (`sa.dma`), weight-stationary passes of a matrix unit
    (`sa.matmul`), vector-unit operations (`sa.vector`) and the host
    collective (`sa.allreduce`). Each instruction returns a `!sa.token` and
    lists the tokens it waits for after `after`; `sa.source` marks which
    kiln op the following instructions come from, for reports.

    Operands of DMA and matmul are views (`#sa.view`): a rows x cols matrix
    of a buffer's elements through an affine map onto tensor coordinates with
    bounds; out-of-bounds reads are zero (padding) and out-of-bounds writes
    are dropped. The program is serialized 1:1 into the FlatBuffers format
    `kiln-sim` runs (`kiln-translate --export-sa-program`).
  }];
  let useDefaultAttributePrinterParser = 1;
  let useDefaultTypePrinterParser = 1;
}

class Sa_Op<string mnemonic, list<Trait> traits = []>
    : Op<Sa_Dialect, mnemonic, traits>;

def Sa_TokenType : TypeDef<Sa_Dialect, "Token"> {
  let mnemonic = "token";
  let summary = "completion of an instruction";
  let description = [{
    Produced by every instruction; an instruction that lists a token after
    `after` starts only once that instruction has completed.
  }];
}

//===----------------------------------------------------------------------===//
// Enums (values equal to the FlatBuffers schema's).
//===----------------------------------------------------------------------===//

def Sa_DType : I32EnumAttr<"DType", "element type of a buffer", [
    I32EnumAttrCase<"F32", 0, "f32">,
    I32EnumAttrCase<"BF16", 1, "bf16">,
    I32EnumAttrCase<"I32", 2, "i32">]> {
  let cppNamespace = "::kiln::sa";
}

def Sa_Space : I32EnumAttr<"Space", "memory a buffer lives in", [
    I32EnumAttrCase<"HBM", 0, "hbm">,
    I32EnumAttrCase<"OnChip", 1, "onchip">]> {
  let cppNamespace = "::kiln::sa";
}

def Sa_Role : I32EnumAttr<"Role", "what a buffer is for the host", [
    I32EnumAttrCase<"Temp", 0, "temp">,
    I32EnumAttrCase<"Input", 1, "input">,
    I32EnumAttrCase<"Output", 2, "output">,
    I32EnumAttrCase<"Parameter", 3, "parameter">,
    I32EnumAttrCase<"State", 4, "state">,
    I32EnumAttrCase<"Constant", 5, "constant">]> {
  let cppNamespace = "::kiln::sa";
}

def Sa_Init : I32EnumAttr<"Init", "initializer of a variable buffer", [
    I32EnumAttrCase<"None", 0, "none">,
    I32EnumAttrCase<"Zeros", 1, "zeros">,
    I32EnumAttrCase<"Ones", 2, "ones">,
    I32EnumAttrCase<"HeNormal", 3, "he_normal">,
    I32EnumAttrCase<"Normal", 4, "normal">,
    I32EnumAttrCase<"Value", 5, "value">]> {
  let cppNamespace = "::kiln::sa";
}

def Sa_HostLayout : I32EnumAttr<"HostLayout", "relayout the host applies to an input", [
    I32EnumAttrCase<"Identity", 0, "identity">,
    I32EnumAttrCase<"SpaceToDepth2", 1, "space_to_depth2">]> {
  let cppNamespace = "::kiln::sa";
}

def Sa_VectorOpKind : I32EnumAttr<"VectorOpKind", "operation of the vector unit", [
    I32EnumAttrCase<"Fill", 0, "fill">,
    I32EnumAttrCase<"Copy", 1, "copy">,
    I32EnumAttrCase<"Add", 2, "add">,
    I32EnumAttrCase<"Relu", 3, "relu">,
    I32EnumAttrCase<"ReluGrad", 4, "relu_grad">,
    I32EnumAttrCase<"ChannelAdd", 5, "channel_add">,
    I32EnumAttrCase<"ChannelSum", 6, "channel_sum">,
    I32EnumAttrCase<"ChannelMoments", 7, "channel_moments">,
    I32EnumAttrCase<"ChannelCenteredDot", 8, "channel_centered_dot">,
    I32EnumAttrCase<"BnStats", 9, "bn_stats">,
    I32EnumAttrCase<"ChannelAffine", 10, "channel_affine">,
    I32EnumAttrCase<"BnGradCoeffs", 11, "bn_grad_coeffs">,
    I32EnumAttrCase<"ChannelAffine2", 12, "channel_affine2">,
    I32EnumAttrCase<"MaxPool", 13, "max_pool">,
    I32EnumAttrCase<"MaxPoolGrad", 14, "max_pool_grad">,
    I32EnumAttrCase<"AvgPool", 15, "avg_pool">,
    I32EnumAttrCase<"AvgPoolGrad", 16, "avg_pool_grad">,
    I32EnumAttrCase<"GlobalAvgPool", 17, "global_avg_pool">,
    I32EnumAttrCase<"GlobalAvgPoolGrad", 18, "global_avg_pool_grad">,
    I32EnumAttrCase<"XentLoss", 19, "xent_loss">,
    I32EnumAttrCase<"XentGrad", 20, "xent_grad">,
    I32EnumAttrCase<"SgdUpdate", 21, "sgd_update">,
    I32EnumAttrCase<"SumSquares", 22, "sum_squares">,
    I32EnumAttrCase<"LarsUpdate", 23, "lars_update">,
    I32EnumAttrCase<"LearningRate", 24, "learning_rate">,
    I32EnumAttrCase<"Scale", 25, "scale">,
    I32EnumAttrCase<"Activation", 26, "activation">,
    I32EnumAttrCase<"ActivationGrad", 27, "activation_grad">,
    I32EnumAttrCase<"BroadcastBinary", 28, "broadcast_binary">,
    I32EnumAttrCase<"BroadcastBinaryGrad", 29, "broadcast_binary_grad">,
    I32EnumAttrCase<"Dropout", 30, "dropout">,
    I32EnumAttrCase<"DepthwiseConv", 31, "depthwise_conv">,
    I32EnumAttrCase<"DepthwiseConvGradData", 32, "depthwise_conv_grad_data">,
    I32EnumAttrCase<"DepthwiseConvGradFilter", 33, "depthwise_conv_grad_filter">]> {
  let cppNamespace = "::kiln::sa";
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

def Sa_ViewAttr : AttrDef<Sa_Dialect, "View"> {
  let mnemonic = "view";
  let summary = "a rows x cols view of a buffer through an affine map";
  let description = [{
    Row index i and column index j are decomposed over `rows` and `cols`
    (first dimension outermost). Each coordinate q is
    `t_q = offset_q + sum row_q[d] * i_d + sum col_q[e] * j_e`; the element
    is in bounds iff `0 <= t_q < bound_q` for all q, and its address is
    `base + sum stride_q * t_q`.

    ```mlir
    // A 3x3 tap (kh = 0, kw = 1, padding 1) of an NHWC 1x4x4x8 input, as the
    // rows (n, oh, ow) x columns (c) of a matmul:
    #sa.view<[1, 4, 4] x [8], base 0, (stride 128, offset 0, bound 1, row [1, 0, 0], col [0]),
             (stride 32, offset -1, bound 4, row [0, 1, 0], col [0]),
             (stride 8, offset 0, bound 4, row [0, 0, 1], col [0]),
             (stride 1, offset 0, bound 8, row [0, 0, 0], col [1])>
    ```
  }];
  let parameters = (ins
    ArrayRefParameter<"int64_t">:$rows,
    ArrayRefParameter<"int64_t">:$cols,
    "int64_t":$base,
    ArrayRefParameter<"int64_t">:$strides,
    ArrayRefParameter<"int64_t">:$offsets,
    ArrayRefParameter<"int64_t">:$bounds,
    // Per coordinate: rows.size() row coefficients, then cols.size() column
    // coefficients.
    ArrayRefParameter<"int64_t">:$coefs
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    int64_t getNumRows() const;
    int64_t getNumCols() const;
    size_t getNumCoords() const { return getStrides().size(); }
  }];
}

#endif // KILN_DIALECT_SA_IR_SABASE_TD
