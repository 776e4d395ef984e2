//===- KilnBase.td - The kiln dialect and its enums ----------*- tablegen -*-===//
//
// The `kiln` dialect describes a training program at the level of tensors:
// model variables, forward layers, the loss, and (after the training passes)
// their gradients and optimizer updates.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_IR_KILNBASE_TD
#define KILN_DIALECT_KILN_IR_KILNBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonTypeConstraints.td"
include "mlir/IR/CommonAttrConstraints.td"

def Kiln_Dialect : Dialect {
  let name = "kiln";
  let cppNamespace = "::kiln";
  let summary = "Tensor-level IR for deep-learning training programs";
  let description = [{
    A `kiln` module holds the variables of a model (`kiln.variable`, at module
    level) and functions over tensors that read them. Activations are NHWC and
    filters HWIO in their logical shapes, whatever their physical layout.

    Shapes are static except, optionally, the batch dimension, which is
    dynamic (`?`) in model files and fixed when a training step is compiled.

    The physical layout of activations is a backend decision
    (`--kiln-layout`): an op that computes in another layout than NHWC
    carries the discardable attribute `kiln.layout` (see
    LayoutOpInterface), and `kiln.reorder` converts between layouts.
  }];
  let hasOperationAttrVerify = 1;
  let useDefaultAttributePrinterParser = 1;
}

class Kiln_Op<string mnemonic, list<Trait> traits = []>
    : Op<Kiln_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums. Modes are enum attributes, never magic integers.
//===----------------------------------------------------------------------===//

def Kiln_VariableKind : I32EnumAttr<"VariableKind",
    "what a model variable holds", [
      I32EnumAttrCase<"Parameter", 0, "parameter">,
      I32EnumAttrCase<"State", 1, "state">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_Initializer : I32EnumAttr<"Initializer",
    "how a variable is initialized before training", [
      I32EnumAttrCase<"Zeros", 0, "zeros">,
      I32EnumAttrCase<"Ones", 1, "ones">,
      // Variance scaling with scale 2 over fan-in (Kaiming/He), normal.
      I32EnumAttrCase<"HeNormal", 2, "he_normal">,
      // Normal(0, std).
      I32EnumAttrCase<"Normal", 3, "normal">,
      // The values given in the `value` attribute.
      I32EnumAttrCase<"Constant", 4, "constant">,
      // The value of the variable named by `of`, rounded to this variable's
      // element type: derived state, refilled after every load.
      I32EnumAttrCase<"Copy", 5, "copy">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_Layout : I32EnumAttr<"Layout",
    "physical layout of an activation tensor", [
      I32EnumAttrCase<"NHWC", 0, "nhwc">,
      I32EnumAttrCase<"NCHW", 1, "nchw">,
      // Channels blocked by 16 innermost (oneDNN's nChw16c).
      I32EnumAttrCase<"NChw16c", 2, "nChw16c">
    ]> {
  let cppNamespace = "::kiln";
}

//===----------------------------------------------------------------------===//
// Attributes.
//===----------------------------------------------------------------------===//

// The discardable `kiln.layout` attribute of a LayoutOpInterface op:
// `{kiln.layout = #kiln.layout<nChw16c>}` (NHWC when absent).
// (kiln.reorder's `layout` is the enum's integer attribute, LayoutAttr.)
def Kiln_ComputeLayoutAttr : EnumAttr<Kiln_Dialect, Kiln_Layout, "layout"> {
  let cppClassName = "ComputeLayoutAttr";
  let assemblyFormat = "`<` $value `>`";
}

def Kiln_ActivationKind : I32EnumAttr<"ActivationKind",
    "the function of kiln.activation, with PyTorch's definitions", [
      // 1 / (1 + exp(-x)).
      I32EnumAttrCase<"Sigmoid", 0, "sigmoid">,
      // x * sigmoid(x) (SiLU, Swish-1).
      I32EnumAttrCase<"SiLU", 1, "silu">,
      // min(max(x, 0), 6).
      I32EnumAttrCase<"ReLU6", 2, "relu6">,
      // relu6(x + 3) / 6: torch.nn.Hardsigmoid, ONNX HardSigmoid with
      // alpha 1/6 and beta 0.5.
      I32EnumAttrCase<"HardSigmoid", 3, "hard_sigmoid">,
      // x * hard_sigmoid(x): torch.nn.Hardswish, ONNX HardSwish.
      I32EnumAttrCase<"HardSwish", 4, "hard_swish">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_BinaryKind : I32EnumAttr<"BinaryKind",
    "the arithmetic of kiln.broadcast_binary", [
      I32EnumAttrCase<"Add", 0, "add">,
      I32EnumAttrCase<"Sub", 1, "sub">,
      I32EnumAttrCase<"Mul", 2, "mul">,
      I32EnumAttrCase<"Div", 3, "div">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_BinaryOperand : I32EnumAttr<"BinaryOperand",
    "which operand of kiln.broadcast_binary a gradient is taken with respect to", [
      I32EnumAttrCase<"Lhs", 0, "lhs">,
      I32EnumAttrCase<"Rhs", 1, "rhs">
    ]> {
  let cppNamespace = "::kiln";
}

def Kiln_Schedule : I32EnumAttr<"Schedule",
    "learning-rate schedule; the parameter slots of each are in the op docs", [
      I32EnumAttrCase<"Constant", 0, "constant">,
      I32EnumAttrCase<"LinearWarmupLinearDecay", 1, "linear_warmup_linear_decay">,
      I32EnumAttrCase<"WarmupPolynomialDecay", 2, "warmup_polynomial_decay">,
      I32EnumAttrCase<"StepDecay", 3, "step_decay">,
      I32EnumAttrCase<"CosineDecay", 4, "cosine_decay">
    ]> {
  let cppNamespace = "::kiln";
}

//===----------------------------------------------------------------------===//
// Type constraints.
//===----------------------------------------------------------------------===//

def Kiln_Float : AnyTypeOf<[F32, BF16]>;
def Kiln_FloatTensor : RankedTensorOf<[F32, BF16]>;
def Kiln_ActivationTensor : 4DTensorOf<[F32, BF16]>;
def Kiln_MatrixTensor : 2DTensorOf<[F32, BF16]>;
def Kiln_VectorF32 : 1DTensorOf<[F32]>;
def Kiln_VectorTensor : 1DTensorOf<[F32, BF16]>;
def Kiln_LabelTensor : 1DTensorOf<[I32]>;
def Kiln_ScalarF32 : 0DTensorOf<[F32]>,
    BuildableType<"::mlir::RankedTensorType::get({}, $_builder.getF32Type())">;

// Four non-negative paddings: top, bottom, left, right.
def Kiln_Padding4 : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<4>,
    DenseArrayNonNegative<DenseI64ArrayAttr>]>;
// Two positive values: height, width.
def Kiln_Positive2 : ConfinedAttr<DenseI64ArrayAttr, [DenseArrayCount<2>,
    DenseArrayStrictlyPositive<DenseI64ArrayAttr>]>;

def Kiln_FloatPositive : AttrConstraint<
    CPred<"::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNegative() == false && ::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNonZero()">,
    "whose value is positive">;
def Kiln_FloatNonNegative : AttrConstraint<
    CPred<"!::llvm::cast<::mlir::FloatAttr>($_self).getValue().isNegative()">,
    "whose value is non-negative">;

#endif // KILN_DIALECT_KILN_IR_KILNBASE_TD
