//===- OnnxImport.cpp - ONNX models into the kiln dialect -----------------===//
//
// The ONNX library (libonnx) parses, checks, converts and shape-infers the
// model; this file maps the checked graph node by node onto kiln ops. One
// handler per ONNX op type, registered in `handlers()`: a new op is one more
// entry there.
//
// The ONNX library reports errors by throwing, so this file (alone among the
// compiler's) is built with exceptions, and every call into libonnx is
// wrapped by `callOnnx`, which turns an exception into a diagnostic.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/Onnx/OnnxImport.h"

#include "dialects/Kiln/IR/InitialValue.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "dialects/Kiln/IR/ShapeRules.h"
#include "kiln/ref/window.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include "onnx/checker.h"
#include "onnx/defs/parser.h"
#include "onnx/defs/tensor_proto_util.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"
#include "onnx/version_converter/convert.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>

using namespace mlir;

namespace kiln {
namespace {

/// The opsets imported as they are; others go through the version converter
/// to the nearest of these.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 17;

/// A shape entry standing for the batch dimension in folded shape values
/// (Shape of an activation): Reshape maps it back to the batch.
constexpr int64_t kBatch = std::numeric_limits<int64_t>::min();

/// An activation: its kiln value (NHWC for 4-D, [N, K] for 2-D) and its
/// ONNX shape (NCHW), with kBatch as the first dimension.
struct Activation {
  Value value;
  SmallVector<int64_t> shape;
};

/// The middle of a channel shuffle as PyTorch exports it: Reshape of an
/// [N, C, H, W] activation to [N, g, C/g, H, W], then Transpose perm
/// [0, 2, 1, 3, 4]; the Reshape back to [N, C, H, W] becomes one
/// kiln.channel_shuffle. Rank-5 values exist only here.
struct PendingShuffle {
  Activation input;
  int64_t groups;
  bool transposed;
  /// The rank-5 ONNX shape, kBatch first.
  SmallVector<int64_t> shape;
};

/// A value known at import time: an initializer, a Constant, or what a shape
/// subgraph computes from them. `origin` is the initializer's name through
/// Identity nodes: the name its variable gets.
struct Constant {
  SmallVector<int64_t> dims;
  std::vector<float> floats;
  std::vector<int64_t> ints;
  bool isFloat = true;
  std::string origin;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : dims)
      n *= d;
    return n;
  }
};

/// Runs a libonnx call, turning its exceptions into an error message.
template <typename Fn> static bool callOnnx(Fn &&fn, std::string &error) {
  try {
    fn();
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

class Importer {
public:
  Importer(const llvm::MemoryBuffer &buffer, MLIRContext &context,
           const OnnxImportOptions &options)
      : buffer(buffer), path(buffer.getBufferIdentifier().str()),
        context(context), options(options), builder(&context),
        fileLoc(FileLineColLoc::get(&context, path, 0, 0)) {}

  OwningOpRef<ModuleOp> run();

private:
  using Handler = LogicalResult (Importer::*)(const onnx::NodeProto &);
  static const llvm::StringMap<Handler> &handlers();

  LogicalResult load();
  LogicalResult refuseFoldedBatchNorm();
  LogicalResult declareInputs();
  LogicalResult importNode(const onnx::NodeProto &node);
  LogicalResult finish();

  // Handlers, one per ONNX op type.
  LogicalResult importConv(const onnx::NodeProto &node);
  LogicalResult importBatchNorm(const onnx::NodeProto &node);
  LogicalResult importRelu(const onnx::NodeProto &node);
  LogicalResult importDropout(const onnx::NodeProto &node);
  LogicalResult importSigmoid(const onnx::NodeProto &node);
  LogicalResult importHardSigmoid(const onnx::NodeProto &node);
  LogicalResult importHardSwish(const onnx::NodeProto &node);
  LogicalResult importClip(const onnx::NodeProto &node);
  LogicalResult importMul(const onnx::NodeProto &node);
  LogicalResult activationOf(const onnx::NodeProto &node, ActivationKind kind);
  LogicalResult importAdd(const onnx::NodeProto &node);
  LogicalResult importSub(const onnx::NodeProto &node);
  LogicalResult importDiv(const onnx::NodeProto &node);
  LogicalResult importReduceMean(const onnx::NodeProto &node);
  LogicalResult importMaxPool(const onnx::NodeProto &node);
  LogicalResult importAveragePool(const onnx::NodeProto &node);
  LogicalResult importGlobalAveragePool(const onnx::NodeProto &node);
  LogicalResult importFlatten(const onnx::NodeProto &node);
  LogicalResult importReshape(const onnx::NodeProto &node);
  LogicalResult importGemm(const onnx::NodeProto &node);
  LogicalResult importMatMul(const onnx::NodeProto &node);
  LogicalResult importIdentity(const onnx::NodeProto &node);
  LogicalResult importPad(const onnx::NodeProto &node);
  LogicalResult importConstant(const onnx::NodeProto &node);
  LogicalResult importShape(const onnx::NodeProto &node);
  LogicalResult importGather(const onnx::NodeProto &node);
  LogicalResult importUnsqueeze(const onnx::NodeProto &node);
  LogicalResult importSqueeze(const onnx::NodeProto &node);
  LogicalResult importConcat(const onnx::NodeProto &node);
  LogicalResult importSplit(const onnx::NodeProto &node);
  LogicalResult importSlice(const onnx::NodeProto &node);
  LogicalResult importTranspose(const onnx::NodeProto &node);
  LogicalResult foldIntegerArithmetic(const onnx::NodeProto &node,
                                      BinaryKind kind);
  LogicalResult concatActivations(const onnx::NodeProto &node);
  FailureOr<int64_t> kilnAxis(const onnx::NodeProto &node,
                              const Activation &x, int64_t axis);
  FailureOr<SmallVector<int64_t>> resolveTarget(const onnx::NodeProto &node,
                                                ArrayRef<int64_t> shape,
                                                SmallVector<int64_t> target);
  LogicalResult reshapeShuffle(const onnx::NodeProto &node,
                               ArrayRef<int64_t> target);
  LogicalResult importCast(const onnx::NodeProto &node);

  // Helpers.
  InFlightDiagnostic nodeError(const onnx::NodeProto &node);
  Location nodeLoc(const onnx::NodeProto &node);
  FailureOr<Activation> activation(const onnx::NodeProto &node, int index);
  FailureOr<const Constant *> constant(const onnx::NodeProto &node, int index);
  bool hasInput(const onnx::NodeProto &node, int index) {
    return index < node.input_size() && !node.input(index).empty();
  }
  void define(const onnx::NodeProto &node, int index, Value value,
              ArrayRef<int64_t> shape) {
    activations[node.output(index)] = {value, SmallVector<int64_t>(shape)};
  }
  Value readVariable(const onnx::NodeProto &node, const Constant &c,
                     VariableKind kind, RankedTensorType type,
                     ArrayRef<float> values, Initializer freshInit,
                     float freshStd = 0.0f);
  LogicalResult pool(const onnx::NodeProto &node, bool max);
  LogicalResult arithmetic(const onnx::NodeProto &node, BinaryKind kind);
  FailureOr<Activation> constantOperand(const onnx::NodeProto &node,
                                        const Constant &c,
                                        const Activation &other,
                                        BinaryKind kind);
  bool isInitializer(StringRef name) const;
  LogicalResult reshapeTo(const onnx::NodeProto &node, const Activation &input,
                          SmallVector<int64_t> target);
  RankedTensorType kilnType(ArrayRef<int64_t> onnxShape);

  const llvm::MemoryBuffer &buffer;
  std::string path;
  MLIRContext &context;
  OnnxImportOptions options;
  OpBuilder builder;
  Location fileLoc;
  onnx::ModelProto model;
  int64_t opset = 0;
  OwningOpRef<ModuleOp> module;
  func::FuncOp forward;
  Value labels;
  llvm::StringMap<Activation> activations;
  llvm::StringMap<Constant> constants;
  /// Channel shuffles between their first Reshape and their last, by the
  /// ONNX value of the Reshape's or the Transpose's output.
  llvm::StringMap<PendingShuffle> shuffles;
  /// The batch of an export without a dynamic batch, which kilnc's batch
  /// replaces: a reshape target of that many leading rows is the batch.
  std::optional<int64_t> exportBatch;
  /// How many node inputs and graph outputs read each ONNX value.
  llvm::StringMap<int> readers;
  /// Variables declared so far, by name (an initializer read twice is one
  /// variable).
  llvm::StringMap<VariableOp> variables;
  /// The forward function's step argument, added with the first dropout
  /// (its masks depend on the step), and the dropouts imported so far (each
  /// one's stream is its position).
  Value step;
  int64_t dropouts = 0;
};

} // namespace

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

const llvm::StringMap<Importer::Handler> &Importer::handlers() {
  static const llvm::StringMap<Handler> table = {
      {"AveragePool", &Importer::importAveragePool},
      {"BatchNormalization", &Importer::importBatchNorm},
      {"Cast", &Importer::importCast},
      {"Clip", &Importer::importClip},
      {"Concat", &Importer::importConcat},
      {"Div", &Importer::importDiv},
      {"Constant", &Importer::importConstant},
      {"Conv", &Importer::importConv},
      {"Dropout", &Importer::importDropout},
      {"Flatten", &Importer::importFlatten},
      {"Gather", &Importer::importGather},
      {"Gemm", &Importer::importGemm},
      {"GlobalAveragePool", &Importer::importGlobalAveragePool},
      {"HardSigmoid", &Importer::importHardSigmoid},
      {"HardSwish", &Importer::importHardSwish},
      {"Identity", &Importer::importIdentity},
      {"Pad", &Importer::importPad},
      {"MatMul", &Importer::importMatMul},
      {"MaxPool", &Importer::importMaxPool},
      {"Mul", &Importer::importMul},
      {"ReduceMean", &Importer::importReduceMean},
      {"Relu", &Importer::importRelu},
      {"Reshape", &Importer::importReshape},
      {"Shape", &Importer::importShape},
      {"Sigmoid", &Importer::importSigmoid},
      {"Slice", &Importer::importSlice},
      {"Split", &Importer::importSplit},
      {"Transpose", &Importer::importTranspose},
      {"Squeeze", &Importer::importSqueeze},
      {"Sub", &Importer::importSub},
      {"Unsqueeze", &Importer::importUnsqueeze},
      {"Add", &Importer::importAdd},
  };
  return table;
}

//===----------------------------------------------------------------------===//
// Diagnostics and values
//===----------------------------------------------------------------------===//

static std::string
joined(const google::protobuf::RepeatedPtrField<std::string> &names) {
  std::string out = "[";
  for (int i = 0; i < names.size(); ++i)
    out += (i ? ", " : "") + names.Get(i);
  return out + "]";
}

InFlightDiagnostic Importer::nodeError(const onnx::NodeProto &node) {
  InFlightDiagnostic diag = emitError(fileLoc);
  if (node.name().empty())
    diag << "unnamed node";
  else
    diag << "node '" << node.name() << "'";
  return std::move(diag) << " (" << node.op_type() << ", inputs "
                         << joined(node.input()) << ", outputs "
                         << joined(node.output()) << ", opset " << opset
                         << "): ";
}

Location Importer::nodeLoc(const onnx::NodeProto &node) {
  std::string name = node.name().empty() ? node.output(0) : node.name();
  return NameLoc::get(StringAttr::get(&context, name), fileLoc);
}

FailureOr<Activation> Importer::activation(const onnx::NodeProto &node,
                                           int index) {
  if (!hasInput(node, index)) {
    nodeError(node) << "input " << index << " is missing";
    return failure();
  }
  auto it = activations.find(node.input(index));
  if (it != activations.end())
    return it->second;
  if (constants.count(node.input(index)))
    nodeError(node) << "input '" << node.input(index)
                    << "' is a constant where Kiln needs an activation";
  else if (shuffles.count(node.input(index)))
    nodeError(node) << "input '" << node.input(index)
                    << "' is the rank-5 middle of a channel shuffle (Reshape "
                       "to [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], "
                       "Reshape back to [N, C, H, W]), which Kiln imports "
                       "only as a whole";
  else
    nodeError(node) << "input '" << node.input(index)
                    << "' is not produced by any imported node";
  return failure();
}

FailureOr<const Constant *> Importer::constant(const onnx::NodeProto &node,
                                               int index) {
  if (!hasInput(node, index)) {
    nodeError(node) << "input " << index << " is missing";
    return failure();
  }
  auto it = constants.find(node.input(index));
  if (it != constants.end())
    return &it->second;
  nodeError(node) << "input '" << node.input(index)
                  << "' must be an initializer or a value computed from "
                     "constants at import time";
  return failure();
}

static const onnx::AttributeProto *attribute(const onnx::NodeProto &node,
                                             StringRef name) {
  for (const onnx::AttributeProto &a : node.attribute())
    if (a.name() == name)
      return &a;
  return nullptr;
}

static int64_t intAttr(const onnx::NodeProto &node, StringRef name,
                       int64_t fallback) {
  const onnx::AttributeProto *a = attribute(node, name);
  return a ? a->i() : fallback;
}

static float floatAttr(const onnx::NodeProto &node, StringRef name,
                       float fallback) {
  const onnx::AttributeProto *a = attribute(node, name);
  return a ? a->f() : fallback;
}

static SmallVector<int64_t> intsAttr(const onnx::NodeProto &node,
                                     StringRef name,
                                     ArrayRef<int64_t> fallback) {
  const onnx::AttributeProto *a = attribute(node, name);
  if (!a)
    return SmallVector<int64_t>(fallback);
  return SmallVector<int64_t>(a->ints().begin(), a->ints().end());
}

RankedTensorType Importer::kilnType(ArrayRef<int64_t> onnxShape) {
  SmallVector<int64_t> shape(onnxShape);
  if (!shape.empty() && shape[0] == kBatch)
    shape[0] = ShapedType::kDynamic;
  if (shape.size() == 4)
    shape = {shape[0], shape[2], shape[3], shape[1]};
  return RankedTensorType::get(shape, builder.getF32Type());
}

/// An initializer of more than this many elements becomes a dense_resource
/// blob; smaller ones stay inline, readable in the IR and in tests.
static constexpr int64_t kInlineInitialValueLimit = 1024;

/// A variable's initial value: inline when small, else a dense_resource
/// blob made from the raw floats in one copy, so that a large model is not
/// hashed and interned element by element, nor printed as numbers
/// (docs/onnx.md, "Initial values"). The blob is named after the variable
/// (characters a bare resource key cannot hold become '_'; MLIR makes keys
/// unique).
static ElementsAttr initialValue(RankedTensorType type, ArrayRef<float> values,
                                 StringRef name) {
  if (type.getNumElements() <= kInlineInitialValueLimit)
    return DenseElementsAttr::get(type, values);
  std::string key = name.str();
  for (char &ch : key)
    if (!llvm::isAlnum(ch) && ch != '_' && ch != '.')
      ch = '_';
  if (key.empty() || llvm::isDigit(key.front()))
    key.insert(0, "v");
  return DenseResourceElementsAttr::get(
      type, key, HeapAsmResourceBlob::allocateAndCopyInferAlign(values));
}

Value Importer::readVariable(const onnx::NodeProto &node, const Constant &c,
                             VariableKind kind, RankedTensorType type,
                             ArrayRef<float> values, Initializer freshInit,
                             float freshStd) {
  StringRef name = c.origin;
  auto it = variables.find(name);
  if (it == variables.end()) {
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(forward);
    bool fresh = options.freshInit;
    Initializer init = fresh ? freshInit : Initializer::Constant;
    ElementsAttr value;
    if (!fresh)
      value = initialValue(type, values, name);
    FloatAttr std;
    if (fresh && freshInit == Initializer::Normal)
      std = builder.getF32FloatAttr(freshStd);
    auto variable = VariableOp::create(
        builder, fileLoc, VariableKindAttr::get(&context, kind),
        builder.getStringAttr(name), TypeAttr::get(type),
        InitializerAttr::get(&context, init), std, value, FlatSymbolRefAttr());
    it = variables.insert({name, variable}).first;
  }
  return ReadOp::create(builder, nodeLoc(node), type,
                        FlatSymbolRefAttr::get(it->second.getSymNameAttr()));
}

//===----------------------------------------------------------------------===//
// Loading: parse, convert, check, infer shapes
//===----------------------------------------------------------------------===//

bool isOnnxFile(StringRef path) {
  if (llvm::sys::path::extension(path) == ".onnx")
    return true;
  auto buffer = llvm::MemoryBuffer::getFileSlice(path, 1, 0);
  return buffer && (*buffer)->getBufferSize() == 1 &&
         (*buffer)->getBuffer()[0] == '\x08';
}

static int64_t defaultOpset(const onnx::ModelProto &model) {
  for (const onnx::OperatorSetIdProto &set : model.opset_import())
    if (set.domain().empty() || set.domain() == "ai.onnx")
      return set.version();
  return 0;
}

LogicalResult Importer::load() {
  StringRef bytes = buffer.getBuffer();
  bool parsed = model.ParseFromArray(bytes.data(), int(bytes.size()));
  if (!parsed && bytes.starts_with("\x08"))
    return emitError(fileLoc)
           << "not an ONNX model (the file starts like a serialized "
              "onnx.ModelProto but does not parse as one)";
  if (!parsed) {
    // ONNX's textual syntax.
    model.Clear();
    std::string text = bytes.str();
    onnx::Status status;
    std::string error;
    parsed = callOnnx(
        [&] { status = onnx::OnnxParser::Parse(model, text.c_str()); }, error);
    if (!parsed || !status.IsOK())
      return emitError(fileLoc)
             << "not an ONNX model (neither a serialized onnx.ModelProto nor "
                "ONNX's textual syntax"
             << (parsed ? ": " + status.ErrorMessage() : std::string()) << ")";
  }
  opset = defaultOpset(model);
  if (opset == 0)
    return emitError(fileLoc) << "the model imports no ai.onnx opset";
  std::string error;
  if (opset < kMinOpset || opset > kMaxOpset) {
    int64_t target = opset < kMinOpset ? kMinOpset : kMaxOpset;
    onnx::ModelProto converted;
    if (!callOnnx(
            [&] {
              converted =
                  onnx::version_conversion::ConvertVersion(model, int(target));
            },
            error))
      return emitError(fileLoc)
             << "cannot convert the model from opset " << opset << " to opset "
             << target << " (Kiln imports opsets 13-17): " << error;
    model = std::move(converted);
    opset = target;
  }
  if (!callOnnx([&] { onnx::checker::check_model(model); }, error))
    return emitError(fileLoc) << "the ONNX checker rejects the model (opset "
                              << opset << "): " << error;
  if (!callOnnx([&] { onnx::shape_inference::InferShapes(model); }, error))
    return emitError(fileLoc)
           << "ONNX shape inference fails (opset " << opset << "): " << error;
  return success();
}

/// An eval-mode export (torch.onnx.export's default) folds every batch norm
/// into the convolution before it, leaving a bias and no BatchNormalization:
/// training that graph would train another model than the user's. What
/// tells it from a model that never had batch norm (SqueezeNet: biased
/// convolutions under their state-dict names) is the bias's name: constant
/// folding creates the tensor, and torch names it "onnx::Conv_<n>".
LogicalResult Importer::refuseFoldedBatchNorm() {
  const onnx::GraphProto &graph = model.graph();
  llvm::StringMap<std::string> identitySource;
  for (const onnx::NodeProto &node : graph.node())
    if (node.op_type() == "Identity" && node.input_size() == 1)
      identitySource[node.output(0)] = node.input(0);
  const onnx::NodeProto *foldedConv = nullptr;
  for (const onnx::NodeProto &node : graph.node()) {
    if (node.op_type() == "BatchNormalization")
      return success();
    if (node.op_type() != "Conv" || node.input_size() < 3 ||
        node.input(2).empty() || foldedConv)
      continue;
    std::string bias = node.input(2);
    for (auto it = identitySource.find(bias); it != identitySource.end();
         it = identitySource.find(bias))
      bias = it->second;
    if (llvm::StringRef(bias).starts_with("onnx::"))
      foldedConv = &node;
  }
  if (!foldedConv)
    return success();
  return nodeError(*foldedConv)
         << "the model has convolutions with a bias made by constant "
            "folding and no BatchNormalization: an eval-mode export with "
            "batch norm folded into the convolutions, which is not the model "
            "that was trained; export it for training with "
            "torch.onnx.export(model, ..., "
            "training=torch.onnx.TrainingMode.TRAINING, "
            "do_constant_folding=False)";
}

//===----------------------------------------------------------------------===//
// Inputs, initializers, outputs
//===----------------------------------------------------------------------===//

static FailureOr<Constant> readTensor(const onnx::TensorProto &t,
                                      std::string &error) {
  Constant c;
  c.dims.assign(t.dims().begin(), t.dims().end());
  c.origin = t.name();
  if (t.data_location() == onnx::TensorProto::EXTERNAL) {
    error = "its data is stored outside the model file, which Kiln does not "
            "read; save the model with its data inside";
    return failure();
  }
  bool ok = true;
  switch (t.data_type()) {
  case onnx::TensorProto::FLOAT:
    ok = callOnnx([&] { c.floats = onnx::ParseData<float>(&t); }, error);
    break;
  case onnx::TensorProto::INT64:
    c.isFloat = false;
    ok = callOnnx([&] { c.ints = onnx::ParseData<int64_t>(&t); }, error);
    break;
  case onnx::TensorProto::INT32: {
    c.isFloat = false;
    std::vector<int32_t> ints;
    ok = callOnnx([&] { ints = onnx::ParseData<int32_t>(&t); }, error);
    c.ints.assign(ints.begin(), ints.end());
    break;
  }
  case onnx::TensorProto::BOOL:
    // Dropout's training_mode. libonnx has no ParseData<bool>: one byte a
    // value in raw_data, else one int32_data entry a value.
    c.isFloat = false;
    if (t.has_raw_data())
      for (char b : t.raw_data())
        c.ints.push_back(b != 0);
    else
      for (int32_t v : t.int32_data())
        c.ints.push_back(v != 0);
    break;
  default:
    error = "its element type (ONNX data type " +
            std::to_string(t.data_type()) +
            ") is not one Kiln imports (float, int64, int32, bool)";
    return failure();
  }
  if (!ok)
    return failure();
  size_t count = c.isFloat ? c.floats.size() : c.ints.size();
  if (int64_t(count) != c.numElements()) {
    error = "it holds " + std::to_string(count) + " values for " +
            std::to_string(c.numElements()) + " elements";
    return failure();
  }
  return c;
}

LogicalResult Importer::declareInputs() {
  const onnx::GraphProto &graph = model.graph();
  for (const onnx::NodeProto &node : graph.node())
    for (const std::string &input : node.input())
      ++readers[input];
  for (const onnx::ValueInfoProto &output : graph.output())
    ++readers[output.name()];
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
    std::string error;
    FailureOr<Constant> c = readTensor(init, error);
    if (failed(c))
      return emitError(fileLoc)
             << "initializer '" << init.name() << "': " << error;
    constants[init.name()] = std::move(*c);
    // The values live on in `constants`: keeping the protobuf's copy too
    // would hold a large model twice for the rest of the import. (Moving
    // empty storage in frees it; clear_*() would keep the capacity.)
    init.set_raw_data(std::string());
    google::protobuf::RepeatedField<float>().Swap(init.mutable_float_data());
  }
  const onnx::ValueInfoProto *images = nullptr;
  for (const onnx::ValueInfoProto &input : graph.input()) {
    if (constants.count(input.name()))
      continue;
    if (images)
      return emitError(fileLoc)
             << "input '" << input.name()
             << "': Kiln trains models of one input (the images), and '"
             << images->name() << "' is one already";
    images = &input;
  }
  if (!images)
    return emitError(fileLoc) << "the model has no input besides initializers";
  const onnx::TypeProto &type = images->type();
  if (!type.has_tensor_type() ||
      type.tensor_type().elem_type() != onnx::TensorProto::FLOAT)
    return emitError(fileLoc) << "input '" << images->name()
                              << "': Kiln imports float32 images only";
  const onnx::TensorShapeProto &shape = type.tensor_type().shape();
  if (shape.dim_size() != 4)
    return emitError(fileLoc)
           << "input '" << images->name() << "': Kiln imports images of "
           << "shape [N, C, H, W], this input has rank " << shape.dim_size();
  SmallVector<int64_t> onnxShape = {kBatch};
  if (shape.dim(0).has_dim_value())
    exportBatch = shape.dim(0).dim_value();
  for (int i = 1; i < 4; ++i) {
    if (!shape.dim(i).has_dim_value())
      return emitError(fileLoc)
             << "input '" << images->name() << "': dimension " << i
             << " is dynamic; only the batch (dimension 0) may be";
    onnxShape.push_back(shape.dim(i).dim_value());
  }

  // The function, as models/build_model.py writes it.
  StringRef stem = llvm::sys::path::stem(path);
  module = ModuleOp::create(fileLoc, stem);
  builder.setInsertionPointToEnd(module->getBody());
  RankedTensorType imageType = kilnType(onnxShape);
  const onnx::GraphProto &g = model.graph();
  if (g.output_size() < 1)
    return emitError(fileLoc) << "the model has no output";
  auto labelType =
      RankedTensorType::get({ShapedType::kDynamic}, builder.getI32Type());
  // The result types are set by finish(), once the logits are known.
  forward =
      func::FuncOp::create(builder, fileLoc, "forward",
                           builder.getFunctionType({imageType, labelType}, {}));
  Block *entry = forward.addEntryBlock();
  builder.setInsertionPointToEnd(entry);
  activations[images->name()] = {entry->getArgument(0), onnxShape};
  labels = entry->getArgument(1);
  return success();
}

LogicalResult Importer::finish() {
  const onnx::GraphProto &graph = model.graph();
  StringRef name = graph.output(0).name();
  auto it = activations.find(name);
  if (it == activations.end() || it->second.shape.size() != 2)
    return emitError(fileLoc)
           << "output '" << name
           << "': the model's first output must be the logits, [N, classes]";
  Value logits = it->second.value;
  Value loss = SoftmaxCrossEntropyOp::create(
      builder, NameLoc::get(builder.getStringAttr("loss"), fileLoc),
      RankedTensorType::get({}, builder.getF32Type()), logits, labels,
      builder.getF32FloatAttr(options.labelSmoothing));
  func::ReturnOp::create(builder, fileLoc, ValueRange{loss, logits});
  forward.setFunctionType(builder.getFunctionType(
      forward.getArgumentTypes(), {loss.getType(), logits.getType()}));
  return verify(*module);
}

LogicalResult Importer::importNode(const onnx::NodeProto &node) {
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node) << "domain '" << node.domain()
                           << "' is not one Kiln imports";
  auto it = handlers().find(node.op_type());
  if (it == handlers().end())
    return nodeError(node) << "Kiln does not support " << node.op_type()
                           << " yet (docs/onnx.md lists the ops it imports)";
  return (this->*(it->second))(node);
}

OwningOpRef<ModuleOp> Importer::run() {
  if (failed(load()) || failed(refuseFoldedBatchNorm()) ||
      failed(declareInputs()))
    return {};
  for (const onnx::NodeProto &node : model.graph().node())
    if (failed(importNode(node)))
      return {};
  if (failed(finish()))
    return {};
  return std::move(module);
}

OwningOpRef<ModuleOp> importOnnx(const llvm::MemoryBuffer &buffer,
                                 MLIRContext &context,
                                 const OnnxImportOptions &options) {
  context.loadDialect<KilnDialect, func::FuncDialect, arith::ArithDialect>();
  return Importer(buffer, context, options).run();
}

OwningOpRef<ModuleOp> importOnnxFile(StringRef path, MLIRContext &context,
                                     const OnnxImportOptions &options) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    emitError(FileLineColLoc::get(&context, path, 0, 0))
        << "cannot read the ONNX model: " << buffer.getError().message();
    return {};
  }
  return importOnnx(**buffer, context, options);
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// ONNX pads are [top, left, bottom, right]; kiln's [top, bottom, left, right].
static SmallVector<int64_t> kilnPadding(ArrayRef<int64_t> pads) {
  return {pads[0], pads[2], pads[1], pads[3]};
}

/// Checks what every windowed op (Conv, pools) needs: explicit 2-D pads,
/// strides and dilations, and a window that fits the padded input (so that
/// kiln's result-type inference cannot fail); `error` says what does not.
static LogicalResult
checkWindow(const onnx::NodeProto &node, ArrayRef<int64_t> inputShape,
            ArrayRef<int64_t> window, ArrayRef<int64_t> strides,
            ArrayRef<int64_t> pads, ArrayRef<int64_t> dilations,
            std::string &error) {
  const onnx::AttributeProto *autoPad = attribute(node, "auto_pad");
  if (autoPad && autoPad->s() != "NOTSET") {
    error = "auto_pad " + autoPad->s() +
            " is not supported; export with explicit pads";
    return failure();
  }
  if (window.size() != 2 || strides.size() != 2 || pads.size() != 4 ||
      dilations.size() != 2) {
    error = "Kiln imports 2-D windows only";
    return failure();
  }
  for (int i = 0; i < 2; ++i) {
    int64_t extent = inputShape[2 + i] + pads[i] + pads[i + 2];
    if (ref::dilatedWindowSize(window[i], dilations[i]) > extent) {
      error = "the window does not fit the padded input";
      return failure();
    }
  }
  return success();
}

LogicalResult Importer::importConv(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  FailureOr<const Constant *> w = constant(node, 1);
  if (failed(x) || failed(w))
    return failure();
  const Constant &filter = **w;
  if (x->shape.size() != 4 || filter.dims.size() != 4 || !filter.isFloat)
    return nodeError(node) << "Kiln imports 2-D convolutions of float "
                              "[N, C, H, W] inputs and [O, C/group, KH, KW] "
                              "filters";
  // Grouped and depthwise: the filter has C / group input channels, and
  // both C and O split into the groups (kiln.conv2d's `groups`).
  int64_t group = intAttr(node, "group", 1);
  if (group < 1 || x->shape[1] % group != 0 || filter.dims[0] % group != 0)
    return nodeError(node) << "group " << group << " must divide the "
                           << x->shape[1] << " input channels of '"
                           << node.input(0) << "' and the " << filter.dims[0]
                           << " output channels of '" << node.input(1) << "'";
  if (filter.dims[1] * group != x->shape[1])
    return nodeError(node) << "filter '" << node.input(1) << "' has "
                           << filter.dims[1] << " input channels"
                           << (group == 1 ? "" : " per group") << ", input '"
                           << node.input(0) << "' has " << x->shape[1]
                           << (group == 1
                                   ? std::string()
                                   : " (" + std::to_string(group) +
                                         " groups of " +
                                         std::to_string(x->shape[1] / group) +
                                         ")");
  int64_t o = filter.dims[0], c = filter.dims[1], kh = filter.dims[2],
          kw = filter.dims[3];
  SmallVector<int64_t> strides = intsAttr(node, "strides", {1, 1});
  SmallVector<int64_t> pads = intsAttr(node, "pads", {0, 0, 0, 0});
  SmallVector<int64_t> dilations = intsAttr(node, "dilations", {1, 1});
  std::string error;
  if (failed(checkWindow(node, x->shape, {kh, kw}, strides, pads, dilations,
                         error)))
    return nodeError(node) << error;

  // OIHW -> HWIO.
  std::vector<float> hwio(filter.floats.size());
  for (int64_t oi = 0; oi < o; ++oi)
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t y = 0; y < kh; ++y)
        for (int64_t xi = 0; xi < kw; ++xi)
          hwio[((y * kw + xi) * c + ci) * o + oi] =
              filter.floats[((oi * c + ci) * kh + y) * kw + xi];
  auto filterType = RankedTensorType::get({kh, kw, c, o}, builder.getF32Type());
  Value weight = readVariable(node, filter, VariableKind::Parameter, filterType,
                              hwio, Initializer::HeNormal);
  Value y = Conv2DOp::create(builder, nodeLoc(node), x->value, weight,
                             /*bias=*/Value(),
                             builder.getDenseI64ArrayAttr(strides),
                             builder.getDenseI64ArrayAttr(kilnPadding(pads)),
                             builder.getDenseI64ArrayAttr(dilations),
                             builder.getI64IntegerAttr(group));
  if (hasInput(node, 2)) {
    FailureOr<const Constant *> b = constant(node, 2);
    if (failed(b))
      return failure();
    const Constant &bias = **b;
    if (bias.dims.size() != 1 || bias.dims[0] != o || !bias.isFloat)
      return nodeError(node) << "bias '" << node.input(2)
                             << "' must be a float vector of the " << o
                             << " output channels";
    auto biasType = RankedTensorType::get({o}, builder.getF32Type());
    Value biasValue = readVariable(node, bias, VariableKind::Parameter,
                                   biasType, bias.floats, Initializer::Zeros);
    y = BiasAddOp::create(builder, nodeLoc(node), y, biasValue);
  }
  SmallVector<int64_t> shape = {
      x->shape[0], o,
      ref::slidingWindowOutputSize(x->shape[2], pads[0], pads[2], kh,
                                   strides[0], dilations[0]),
      ref::slidingWindowOutputSize(x->shape[3], pads[1], pads[3], kw,
                                   strides[1], dilations[1])};
  define(node, 0, y, shape);
  return success();
}

/// Both forms, training (training_mode, or opset 13's five outputs) and
/// inference (an eval-mode PRESERVE export), become the training form: the
/// model is imported to be trained, with the running statistics as state.
LogicalResult Importer::importBatchNorm(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (x->shape.size() != 4 && x->shape.size() != 2)
    return nodeError(node) << "Kiln imports batch norm of [N, C, H, W] or "
                              "[N, C] inputs";
  int64_t channels = x->shape[1];
  auto vectorType = RankedTensorType::get({channels}, builder.getF32Type());
  static const struct {
    VariableKind kind;
    Initializer fresh;
  } roles[4] = {{VariableKind::Parameter, Initializer::Ones},
                {VariableKind::Parameter, Initializer::Zeros},
                {VariableKind::State, Initializer::Zeros},
                {VariableKind::State, Initializer::Ones}};
  Value operands[4];
  for (int i = 0; i < 4; ++i) {
    FailureOr<const Constant *> c = constant(node, i + 1);
    if (failed(c))
      return failure();
    if ((*c)->dims.size() != 1 || (*c)->dims[0] != channels || !(*c)->isFloat)
      return nodeError(node)
             << "input '" << node.input(i + 1)
             << "' must be a float vector of the " << channels << " channels";
    operands[i] = readVariable(node, **c, roles[i].kind, vectorType,
                               (*c)->floats, roles[i].fresh);
  }
  Location loc = nodeLoc(node);
  auto bn = BatchNormTrainOp::create(
      builder, loc, x->value, operands[0], operands[1], operands[2],
      operands[3], /*residual=*/Value(),
      builder.getF32FloatAttr(floatAttr(node, "epsilon", 1e-5f)),
      builder.getF32FloatAttr(floatAttr(node, "momentum", 0.9f)), UnitAttr());
  AssignOp::create(builder, loc,
                   cast<ReadOp>(operands[2].getDefiningOp()).getVariable(),
                   bn.getNewRunningMean());
  AssignOp::create(builder, loc,
                   cast<ReadOp>(operands[3].getDefiningOp()).getVariable(),
                   bn.getNewRunningVar());
  // The other outputs (statistics) are for ONNX training graphs; nothing in a
  // forward graph reads them, and a node that did fails as reading a value
  // no imported node produces.
  define(node, 0, bn.getOutput(), x->shape);
  return success();
}

LogicalResult Importer::importRelu(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  define(node, 0, ReluOp::create(builder, nodeLoc(node), x->value), x->shape);
  return success();
}

/// Training dropout whatever the export's mode: a TRAINING export's Dropout
/// has training_mode true, a PRESERVE export from eval mode false or no
/// such input; Kiln trains the model either way, so training_mode is not
/// read (--kiln-derive-eval makes the evaluation step's dropout the
/// identity).
LogicalResult Importer::importDropout(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  float ratio = floatAttr(node, "ratio", 0.5f);
  if (hasInput(node, 1)) {
    if (!constants.count(node.input(1)))
      return nodeError(node) << "the ratio '" << node.input(1)
                             << "' is computed at run time; Kiln needs a "
                                "constant ratio";
    const Constant &c = constants.find(node.input(1))->second;
    if (!c.isFloat || c.numElements() != 1)
      return nodeError(node) << "the ratio must be one float";
    ratio = c.floats[0];
  }
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return nodeError(node) << "ratio " << ratio << " is outside [0, 1)";
  if (node.output_size() > 1 && !node.output(1).empty() &&
      readers.lookup(node.output(1)) > 0)
    return nodeError(node) << "its mask output '" << node.output(1)
                           << "' is read; Kiln regenerates masks and never "
                              "stores them";
  // A seed attribute is honoured as the op's Philox key; without one the
  // model's dropouts share seed 0 and differ by stream (kilnc
  // --dropout-seed sets them all).
  int64_t seed = intAttr(node, "seed", 0);
  if (ratio == 0.0f) {
    define(node, 0, x->value, x->shape);
    return success();
  }
  if (!step) {
    auto stepType = RankedTensorType::get({}, builder.getI64Type());
    unsigned index = forward.getNumArguments();
    (void)forward.insertArgument(
        index, stepType,
        builder.getDictionaryAttr(
            builder.getNamedAttr("kiln.step", builder.getUnitAttr())),
        fileLoc);
    step = forward.getArgument(index);
  }
  Value y = DropoutOp::create(builder, nodeLoc(node), x->value, step,
                              builder.getF32FloatAttr(ratio),
                              builder.getI64IntegerAttr(seed),
                              builder.getI64IntegerAttr(dropouts++));
  define(node, 0, y, x->shape);
  return success();
}

LogicalResult Importer::activationOf(const onnx::NodeProto &node,
                                     ActivationKind kind) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  Value y =
      ActivationOp::create(builder, nodeLoc(node),
                           ActivationKindAttr::get(&context, kind), x->value);
  define(node, 0, y, x->shape);
  return success();
}

LogicalResult Importer::importSigmoid(const onnx::NodeProto &node) {
  return activationOf(node, ActivationKind::Sigmoid);
}

LogicalResult Importer::importHardSigmoid(const onnx::NodeProto &node) {
  // ONNX's default alpha is 0.2; torch.nn.Hardsigmoid exports 1/6.
  float alpha = floatAttr(node, "alpha", 0.2f);
  float beta = floatAttr(node, "beta", 0.5f);
  if (std::abs(alpha - 1.0f / 6.0f) > 1e-6f || beta != 0.5f)
    return nodeError(node) << "Kiln's hard sigmoid is relu6(x + 3) / 6 "
                              "(alpha 1/6, beta 0.5), not alpha "
                           << alpha << ", beta " << beta;
  return activationOf(node, ActivationKind::HardSigmoid);
}

LogicalResult Importer::importHardSwish(const onnx::NodeProto &node) {
  return activationOf(node, ActivationKind::HardSwish);
}

/// Clip to [0, 6] (torch.nn.ReLU6) or [0, +inf) (a ReLU); bounds are inputs
/// since opset 11 and must be constants.
LogicalResult Importer::importClip(const onnx::NodeProto &node) {
  float bounds[2] = {-std::numeric_limits<float>::infinity(),
                     std::numeric_limits<float>::infinity()};
  for (int i = 0; i < 2; ++i) {
    if (!hasInput(node, i + 1))
      continue;
    FailureOr<const Constant *> c = constant(node, i + 1);
    if (failed(c))
      return failure();
    if (!(*c)->isFloat || (*c)->floats.size() != 1)
      return nodeError(node) << "the bounds must be float scalars";
    bounds[i] = (*c)->floats[0];
  }
  if (bounds[0] == 0.0f && bounds[1] == 6.0f)
    return activationOf(node, ActivationKind::ReLU6);
  if (bounds[0] == 0.0f && std::isinf(bounds[1]))
    return importRelu(node);
  return nodeError(node) << "Kiln imports Clip to [0, 6] (ReLU6) or [0, inf) "
                            "(ReLU) only, not ["
                         << bounds[0] << ", " << bounds[1] << "]";
}

/// x * Sigmoid(x), as torch exports nn.SiLU, is one SiLU, and
/// x * HardSigmoid(x) (torch's hardswish below opset 14) one hard swish, when
/// nothing else reads the gate; other products are broadcasting multiplies.
LogicalResult Importer::importMul(const onnx::NodeProto &node) {
  for (int i = 0; i < 2 && hasInput(node, 0) && hasInput(node, 1); ++i) {
    auto x = activations.find(node.input(i));
    auto s = activations.find(node.input(1 - i));
    if (x == activations.end() || s == activations.end())
      continue;
    auto gate = s->second.value.getDefiningOp<ActivationOp>();
    if (!gate || gate.getInput() != x->second.value ||
        readers.lookup(node.input(1 - i)) != 1 ||
        !s->second.value.use_empty())
      continue;
    if (gate.getKind() == ActivationKind::Sigmoid)
      gate.setKind(ActivationKind::SiLU);
    else if (gate.getKind() == ActivationKind::HardSigmoid)
      gate.setKind(ActivationKind::HardSwish);
    else
      continue;
    gate->setLoc(nodeLoc(node));
    define(node, 0, gate, x->second.shape);
    return success();
  }
  return arithmetic(node, BinaryKind::Mul);
}

LogicalResult Importer::importAdd(const onnx::NodeProto &node) {
  // A dense layer's bias (MatMul + Add of a vector initializer) joins the
  // kiln.dense it follows; other Adds of a constant broadcast it.
  auto product = hasInput(node, 0) ? activations.find(node.input(0))
                                   : activations.end();
  auto biasIt = hasInput(node, 1) ? constants.find(node.input(1))
                                  : constants.end();
  if (product != activations.end() && biasIt != constants.end()) {
    const Activation *x = &product->second;
    auto dense = x->value.getDefiningOp<DenseOp>();
    const Constant &bias = biasIt->second;
    int64_t m = x->shape.back();
    // The MatMul's product must have no other reader, in ONNX (later nodes,
    // graph outputs) or kiln.
    if (!dense || dense.getBias() || readers.lookup(node.input(0)) != 1 ||
        !x->value.use_empty() || bias.dims.size() != 1 || bias.dims[0] != m ||
        !bias.isFloat)
      return arithmetic(node, BinaryKind::Add);
    auto type = RankedTensorType::get({m}, builder.getF32Type());
    Value b = readVariable(node, bias, VariableKind::Parameter, type,
                           bias.floats, Initializer::Zeros);
    auto withBias = DenseOp::create(builder, nodeLoc(node), dense.getInput(),
                                    dense.getWeight(), b);
    dense.replaceAllUsesWith(withBias.getOutput());
    dense.erase();
    define(node, 0, withBias, x->shape);
    return success();
  }
  return arithmetic(node, BinaryKind::Add);
}

LogicalResult Importer::importSub(const onnx::NodeProto &node) {
  return arithmetic(node, BinaryKind::Sub);
}

LogicalResult Importer::importDiv(const onnx::NodeProto &node) {
  return arithmetic(node, BinaryKind::Div);
}

bool Importer::isInitializer(StringRef name) const {
  return llvm::any_of(model.graph().initializer(),
                      [&](const onnx::TensorProto &t) { return t.name() == name; });
}

/// A constant operand of Add/Sub/Mul/Div against the activation `other`,
/// with ONNX's broadcasting (aligned on the last dimension): a scalar, a
/// per-channel [C, 1, 1] or [1, C, 1, 1], or any shape of 1s and `other`'s
/// sizes, without a batch dimension. An initializer becomes a parameter (a
/// learned scale or shift; ONNX does not say which initializers are
/// trained, and torch exports its parameters so); a Constant node (torch's
/// `x * 0.5`, `x / 6`) must be one value repeated and stays fixed.
FailureOr<Activation> Importer::constantOperand(const onnx::NodeProto &node,
                                                const Constant &c,
                                                const Activation &other,
                                                BinaryKind kind) {
  size_t rank = other.shape.size();
  if (!c.isFloat) {
    nodeError(node) << "the constant operand must be float";
    return failure();
  }
  if (c.dims.size() > rank || (rank != 2 && rank != 4)) {
    nodeError(node) << "Kiln broadcasts a constant of rank " << c.dims.size()
                    << " against an activation of rank " << rank
                    << " only when the activation is [N, C, H, W] or [N, K] "
                       "and the constant's rank is not larger";
    return failure();
  }
  SmallVector<int64_t> dims(rank - c.dims.size(), 1);
  dims.append(c.dims.begin(), c.dims.end());
  if (dims[0] != 1) {
    nodeError(node) << "the constant operand has a batch dimension of "
                    << dims[0]
                    << "; Kiln's batch is dynamic, so a constant can only "
                       "be broadcast over it (size 1)";
    return failure();
  }
  for (size_t i = 1; i < rank; ++i)
    if (dims[i] != 1 && other.shape[i] != 1 && dims[i] != other.shape[i]) {
      nodeError(node) << "the constant operand's dimension " << i << " ("
                      << dims[i] << ") does not broadcast against "
                      << other.shape[i];
      return failure();
    }
  // NCHW values to NHWC.
  std::vector<float> values(c.floats);
  if (rank == 4) {
    int64_t ch = dims[1], h = dims[2], w = dims[3];
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < ch; ++k)
          values[(y * w + x) * ch + k] = c.floats[(k * h + y) * w + x];
  }
  RankedTensorType type = kilnType(dims);
  Value value;
  if (isInitializer(c.origin)) {
    // A fresh scale starts at one, a fresh shift at zero.
    bool scale = kind == BinaryKind::Mul || kind == BinaryKind::Div;
    value = readVariable(node, c, VariableKind::Parameter, type, values,
                         scale ? Initializer::Ones : Initializer::Zeros);
  } else {
    if (llvm::any_of(values, [&](float v) { return v != values.front(); })) {
      nodeError(node) << "a Constant node operand must be one value (a "
                         "scalar or a splat); give other fixed tensors as "
                         "initializers";
      return failure();
    }
    value = arith::ConstantOp::create(
        builder, nodeLoc(node),
        DenseElementsAttr::get(type, values.empty() ? 0.0f : values.front()));
  }
  return Activation{value, dims};
}

/// Add, Sub, Mul and Div of two activations, or of an activation and a
/// constant, with numpy's broadcasting: kiln.add for two activations of one
/// shape (a residual; it fuses into elementwise chains), else
/// kiln.broadcast_binary. Two activations need one rank (their batches are
/// the same dynamic dimension).
LogicalResult Importer::arithmetic(const onnx::NodeProto &node,
                                   BinaryKind kind) {
  if (!hasInput(node, 0) || !hasInput(node, 1))
    return nodeError(node) << "expects two inputs";
  bool constant0 = constants.count(node.input(0)),
       constant1 = constants.count(node.input(1));
  if (constant0 && constant1)
    return foldIntegerArithmetic(node, kind);
  FailureOr<Activation> a, b;
  if (constant0) {
    b = activation(node, 1);
    if (succeeded(b))
      a = constantOperand(node, constants[node.input(0)], *b, kind);
  } else {
    a = activation(node, 0);
    if (succeeded(a))
      b = constant1 ? constantOperand(node, constants[node.input(1)], *a, kind)
                    : activation(node, 1);
  }
  if (failed(a) || failed(b))
    return failure();
  Location loc = nodeLoc(node);
  if (kind == BinaryKind::Add && a->shape == b->shape && !constant0 &&
      !constant1) {
    define(node, 0, AddOp::create(builder, loc, a->value, b->value),
           a->shape);
    return success();
  }
  // The dialect's broadcasting rule (the result type the op will infer),
  // checked first so that a bad pair is this node's error.
  FailureOr<RankedTensorType> type = inferBroadcast(
      std::nullopt, "", cast<RankedTensorType>(a->value.getType()),
      cast<RankedTensorType>(b->value.getType()));
  if (failed(type)) {
    auto print = [](ArrayRef<int64_t> s) {
      std::string out = "[";
      for (size_t i = 0; i < s.size(); ++i)
        out += (i ? ", " : "") +
               (s[i] == kBatch ? std::string("N") : std::to_string(s[i]));
      return out + "]";
    };
    return nodeError(node) << "Kiln broadcasts operands of one rank whose "
                              "dimensions are equal or 1 (the batch N is "
                              "dynamic), not "
                           << print(a->shape) << " and " << print(b->shape);
  }
  // Back to ONNX's order (NHWC to NCHW) and its batch marker.
  SmallVector<int64_t> shape(type->getShape());
  if (shape.size() == 4)
    shape = {shape[0], shape[3], shape[1], shape[2]};
  for (int64_t &d : shape)
    if (ShapedType::isDynamic(d))
      d = kBatch;
  Value y = BroadcastBinaryOp::create(builder, loc,
                                      BinaryKindAttr::get(&context, kind),
                                      a->value, b->value);
  define(node, 0, y, shape);
  return success();
}

LogicalResult Importer::pool(const onnx::NodeProto &node, bool max) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (x->shape.size() != 4)
    return nodeError(node) << "Kiln imports 2-D pooling of [N, C, H, W] "
                              "inputs";
  bool ceil = intAttr(node, "ceil_mode", 0) != 0;
  if (max && node.output_size() > 1 && !node.output(1).empty())
    return nodeError(node) << "MaxPool's Indices output is not supported";
  SmallVector<int64_t> window = intsAttr(node, "kernel_shape", {});
  SmallVector<int64_t> strides = intsAttr(node, "strides", {1, 1});
  SmallVector<int64_t> pads = intsAttr(node, "pads", {0, 0, 0, 0});
  SmallVector<int64_t> dilations = intsAttr(node, "dilations", {1, 1});
  if (dilations != SmallVector<int64_t>{1, 1})
    return nodeError(node) << "dilated pooling is not supported";
  bool padded = llvm::any_of(pads, [](int64_t p) { return p != 0; });
  // kiln.avg_pool averages the window's real elements (TensorFlow's rule).
  // Without explicit pads that is also count_include_pad=1's average, in
  // ceil mode too: PyTorch counts explicit padding, never a ceil-mode
  // window's overhang.
  if (!max && padded && intAttr(node, "count_include_pad", 0) != 0)
    return nodeError(node) << "count_include_pad=1 with padding is not "
                              "supported: Kiln's average excludes padding";
  std::string error;
  if (failed(
          checkWindow(node, x->shape, window, strides, pads, dilations, error)))
    return nodeError(node) << error;
  Location loc = nodeLoc(node);
  auto windowAttr = builder.getDenseI64ArrayAttr(window);
  auto stridesAttr = builder.getDenseI64ArrayAttr(strides);
  auto padAttr = builder.getDenseI64ArrayAttr(kilnPadding(pads));
  UnitAttr ceilAttr = ceil ? builder.getUnitAttr() : UnitAttr();
  Value y = max ? Value(MaxPoolOp::create(builder, loc, x->value, windowAttr,
                                          stridesAttr, padAttr, ceilAttr))
                : Value(AvgPoolOp::create(builder, loc, x->value, windowAttr,
                                          stridesAttr, padAttr, ceilAttr));
  SmallVector<int64_t> shape = {
      x->shape[0], x->shape[1],
      ref::slidingWindowOutputSize(x->shape[2], pads[0], pads[2], window[0],
                                   strides[0], 1, ceil),
      ref::slidingWindowOutputSize(x->shape[3], pads[1], pads[3], window[1],
                                   strides[1], 1, ceil)};
  define(node, 0, y, shape);
  return success();
}

LogicalResult Importer::importMaxPool(const onnx::NodeProto &node) {
  return pool(node, /*max=*/true);
}

LogicalResult Importer::importAveragePool(const onnx::NodeProto &node) {
  return pool(node, /*max=*/false);
}

LogicalResult Importer::importGlobalAveragePool(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (x->shape.size() != 4)
    return nodeError(node) << "Kiln imports global pooling of [N, C, H, W] "
                              "inputs";
  Location loc = nodeLoc(node);
  Value pooled = GlobalAvgPoolOp::create(builder, loc, x->value);
  // ONNX keeps [N, C, 1, 1]; kiln's global pool gives [N, C].
  SmallVector<int64_t> shape = {x->shape[0], x->shape[1], 1, 1};
  Value y = ReshapeOp::create(builder, loc, kilnType(shape), pooled);
  define(node, 0, y, shape);
  return success();
}

/// ReduceMean over the spatial axes [2, 3] of an [N, C, H, W] value (how
/// some exports write global pooling): kiln.global_avg_pool, reshaped back
/// to [N, C, 1, 1] with keepdims (the default).
LogicalResult Importer::importReduceMean(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (hasInput(node, 1))
    return nodeError(node) << "axes as an input (opset 18) are not supported";
  SmallVector<int64_t> axes = intsAttr(node, "axes", {});
  int64_t rank = x->shape.size();
  for (int64_t &a : axes)
    if (a < 0)
      a += rank;
  llvm::sort(axes);
  if (rank != 4 || axes != SmallVector<int64_t>{2, 3})
    return nodeError(node) << "Kiln imports ReduceMean over the spatial axes "
                              "[2, 3] of an [N, C, H, W] value only (global "
                              "average pooling)";
  Location loc = nodeLoc(node);
  Value pooled = GlobalAvgPoolOp::create(builder, loc, x->value);
  if (intAttr(node, "keepdims", 1) == 0) {
    define(node, 0, pooled, {x->shape[0], x->shape[1]});
    return success();
  }
  SmallVector<int64_t> shape = {x->shape[0], x->shape[1], 1, 1};
  define(node, 0, ReshapeOp::create(builder, loc, kilnType(shape), pooled),
         shape);
  return success();
}

/// `target` of a reshape of `shape` resolved (ONNX semantics: 0 copies, -1
/// is inferred, kBatch or the export's static batch is the batch), with the
/// batch first.
FailureOr<SmallVector<int64_t>>
Importer::resolveTarget(const onnx::NodeProto &node, ArrayRef<int64_t> shape,
                        SmallVector<int64_t> target) {
  int64_t known = 1, inferred = -1;
  int64_t total = 1;
  for (int64_t d : shape.drop_front())
    total *= d;
  for (auto [i, d] : llvm::enumerate(target)) {
    if (d == kBatch || (i == 0 && (d == 0 || d == exportBatch))) {
      if (i != 0) {
        nodeError(node) << "only the first dimension of the target shape "
                           "may be the batch";
        return failure();
      }
      d = kBatch;
      continue;
    }
    if (d == 0 && i < shape.size())
      d = shape[i];
    if (d == -1) {
      inferred = int64_t(i);
      continue;
    }
    known *= d;
  }
  if (target.empty() || target[0] != kBatch) {
    nodeError(node) << "the target shape must keep the batch as its first "
                       "dimension";
    return failure();
  }
  if (inferred >= 0) {
    if (known == 0 || total % known != 0) {
      nodeError(node) << "the target shape does not fit the input";
      return failure();
    }
    target[inferred] = total / known;
  } else if (known != total) {
    nodeError(node) << "the target shape does not fit the input";
    return failure();
  }
  return target;
}

/// Reshapes to `target` (see resolveTarget): [N, C, H, W] or [N, K] to
/// [N, K]; where H * W > 1 the NHWC activation is transposed to NCHW
/// first, so that its elements come in ONNX's order (docs/onnx.md).
LogicalResult Importer::reshapeTo(const onnx::NodeProto &node,
                                  const Activation &input,
                                  SmallVector<int64_t> shape) {
  FailureOr<SmallVector<int64_t>> resolved =
      resolveTarget(node, input.shape, std::move(shape));
  if (failed(resolved))
    return failure();
  SmallVector<int64_t> target = std::move(*resolved);
  if (target.size() == 5 && input.shape.size() == 4)
    return reshapeShuffle(node, target);
  if (target.size() != 2 ||
      (input.shape.size() != 2 && input.shape.size() != 4))
    return nodeError(node)
           << "Kiln imports reshapes to [N, K] of [N, C, H, W] or [N, K] "
              "values, and a channel shuffle's reshapes to [N, g, C/g, H, W] "
              "and back, only";
  bool nhwcIsNchw =
      input.shape.size() == 2 || (input.shape[2] == 1 && input.shape[3] == 1);
  Location loc = nodeLoc(node);
  if (!nhwcIsNchw) {
    Value nchw = TransposeOp::create(builder, loc, input.value,
                                     ArrayRef<int64_t>{0, 3, 1, 2});
    define(node, 0, ReshapeOp::create(builder, loc, kilnType(target), nchw),
           target);
    return success();
  }
  // A reshape of a reshape (GlobalAveragePool's [N, C, 1, 1] flattened)
  // reads the first one's input.
  Value source = input.value;
  if (auto inner = source.getDefiningOp<ReshapeOp>())
    source = inner.getInput();
  Value y = source;
  if (source.getType() != kilnType(target))
    y = ReshapeOp::create(builder, nodeLoc(node), kilnType(target), source);
  if (auto inner = input.value.getDefiningOp<ReshapeOp>();
      inner && inner->use_empty())
    inner.erase();
  define(node, 0, y, target);
  return success();
}

LogicalResult Importer::importFlatten(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (intAttr(node, "axis", 1) != 1)
    return nodeError(node) << "Kiln imports Flatten with axis 1 only";
  return reshapeTo(node, *x, {kBatch, -1});
}

LogicalResult Importer::importReshape(const onnx::NodeProto &node) {
  FailureOr<const Constant *> shape = constant(node, 1);
  if (failed(shape))
    return failure();
  if ((*shape)->isFloat)
    return nodeError(node) << "the target shape must be integers";
  if (intAttr(node, "allowzero", 0) != 0)
    return nodeError(node) << "allowzero=1 is not supported";
  SmallVector<int64_t> target((*shape)->ints.begin(), (*shape)->ints.end());
  // The last step of a channel shuffle.
  if (hasInput(node, 0)) {
    auto pending = shuffles.find(node.input(0));
    if (pending != shuffles.end()) {
      PendingShuffle shuffle = pending->second;
      FailureOr<SmallVector<int64_t>> resolved =
          resolveTarget(node, shuffle.shape, std::move(target));
      if (failed(resolved))
        return failure();
      if (!shuffle.transposed || *resolved != shuffle.input.shape)
        return nodeError(node)
               << "Kiln imports a reshape of a rank-5 value only as the end "
                  "of a channel shuffle: Transpose perm [0, 2, 1, 3, 4] "
                  "first, then back to the [N, C, H, W] shape reshaped";
      define(node, 0,
             ChannelShuffleOp::create(builder, nodeLoc(node),
                                      shuffle.input.value, shuffle.groups),
             shuffle.input.shape);
      return success();
    }
  }
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  return reshapeTo(node, *x, std::move(target));
}

/// The first step of a channel shuffle: [N, C, H, W] to [N, g, C/g, H, W].
LogicalResult Importer::reshapeShuffle(const onnx::NodeProto &node,
                                       ArrayRef<int64_t> target) {
  const Activation &x = activations.find(node.input(0))->second;
  ArrayRef<int64_t> s = x.shape;
  if (target[1] < 1 || target[1] * target[2] != s[1] || target[3] != s[2] ||
      target[4] != s[3])
    return nodeError(node)
           << "Kiln imports a reshape to rank 5 only as the start of a "
              "channel shuffle: [N, C, H, W] to [N, g, C/g, H, W], not ["
           << (s[0] == kBatch ? "N" : std::to_string(s[0])) << ", " << s[1]
           << ", " << s[2] << ", " << s[3] << "] to [N, " << target[1] << ", "
           << target[2] << ", " << target[3] << ", " << target[4] << "]";
  shuffles[node.output(0)] = {x, target[1], false, SmallVector<int64_t>(target)};
  return success();
}

/// Transpose is imported only inside a channel shuffle; a general
/// kiln.transpose of an activation would leave NHWC behind.
LogicalResult Importer::importTranspose(const onnx::NodeProto &node) {
  auto pending =
      hasInput(node, 0) ? shuffles.find(node.input(0)) : shuffles.end();
  SmallVector<int64_t> perm = intsAttr(node, "perm", {});
  if (pending == shuffles.end() || pending->second.transposed ||
      perm != SmallVector<int64_t>{0, 2, 1, 3, 4})
    return nodeError(node)
           << "Kiln imports Transpose only inside a channel shuffle (Reshape "
              "to [N, g, C/g, H, W], Transpose perm [0, 2, 1, 3, 4], Reshape "
              "back to [N, C, H, W])";
  PendingShuffle shuffle = pending->second;
  shuffle.transposed = true;
  std::swap(shuffle.shape[1], shuffle.shape[2]);
  shuffles[node.output(0)] = std::move(shuffle);
  return success();
}

/// The kiln axis of ONNX `axis` of `x` (negative counts from the end):
/// NCHW's channels are NHWC's last dimension. The batch cannot be cut.
FailureOr<int64_t> Importer::kilnAxis(const onnx::NodeProto &node,
                                      const Activation &x, int64_t axis) {
  int64_t rank = int64_t(x.shape.size());
  if (axis < -rank || axis >= rank) {
    nodeError(node) << "axis " << axis << " of a rank-" << rank << " value";
    return failure();
  }
  if (axis < 0)
    axis += rank;
  if (axis == 0) {
    nodeError(node) << "Kiln cannot split or join along the batch (axis 0)";
    return failure();
  }
  if (rank == 4)
    return axis == 1 ? 3 : axis - 1;
  return axis;
}

/// "[1, 2, 3]".
static std::string formatList(ArrayRef<int64_t> values) {
  std::string out = "[";
  for (auto [i, v] : llvm::enumerate(values))
    out += (i ? ", " : "") + std::to_string(v);
  return out + "]";
}

/// Split (opset 13): one kiln.slice per output, of the sizes the `split`
/// input gives, or equal parts without it.
LogicalResult Importer::importSplit(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  int64_t onnxAxis = intAttr(node, "axis", 0);
  FailureOr<int64_t> axis = kilnAxis(node, *x, onnxAxis);
  if (failed(axis))
    return failure();
  int64_t position = onnxAxis < 0 ? onnxAxis + int64_t(x->shape.size())
                                  : onnxAxis;
  int64_t extent = x->shape[position];
  SmallVector<int64_t> sizes;
  if (hasInput(node, 1)) {
    FailureOr<const Constant *> split = constant(node, 1);
    if (failed(split))
      return failure();
    if ((*split)->isFloat || (*split)->dims.size() != 1)
      return nodeError(node) << "the split sizes must be an integer vector";
    sizes.assign((*split)->ints.begin(), (*split)->ints.end());
  } else {
    int64_t parts = node.output_size();
    if (parts == 0 || extent % parts != 0)
      return nodeError(node) << "cannot split " << extent
                             << " elements into " << parts << " equal parts";
    sizes.assign(parts, extent / parts);
  }
  int64_t sum = 0;
  for (int64_t size : sizes)
    sum += size;
  if (int64_t(sizes.size()) != node.output_size() || sum != extent ||
      llvm::any_of(sizes, [](int64_t size) { return size <= 0; }))
    return nodeError(node) << "split sizes " << formatList(sizes)
                           << " do not divide the " << extent
                           << " elements of axis " << onnxAxis << " into "
                           << node.output_size() << " non-empty outputs";
  int64_t start = 0;
  for (auto [i, size] : llvm::enumerate(sizes)) {
    SmallVector<int64_t> shape = x->shape;
    shape[position] = size;
    if (!node.output(i).empty())
      define(node, i,
             SliceOp::create(builder, nodeLoc(node), x->value, *axis, start,
                             size),
             shape);
    start += size;
  }
  return success();
}

/// Slice with constant starts, ends, axes and steps of 1: one kiln.slice
/// per axis it cuts (ONNX's clamping of out-of-range bounds).
LogicalResult Importer::importSlice(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  auto ints = [&](int index) -> FailureOr<SmallVector<int64_t>> {
    FailureOr<const Constant *> c = constant(node, index);
    if (failed(c))
      return failure();
    if ((*c)->isFloat || (*c)->dims.size() != 1) {
      nodeError(node) << "input " << index << " must be an integer vector";
      return failure();
    }
    return SmallVector<int64_t>((*c)->ints.begin(), (*c)->ints.end());
  };
  FailureOr<SmallVector<int64_t>> starts = ints(1), ends = ints(2);
  if (failed(starts) || failed(ends))
    return failure();
  int64_t rank = int64_t(x->shape.size());
  SmallVector<int64_t> axes;
  if (hasInput(node, 3)) {
    FailureOr<SmallVector<int64_t>> given = ints(3);
    if (failed(given))
      return failure();
    axes = std::move(*given);
  } else {
    for (int64_t i = 0; i < int64_t(starts->size()); ++i)
      axes.push_back(i);
  }
  if (hasInput(node, 4)) {
    FailureOr<SmallVector<int64_t>> steps = ints(4);
    if (failed(steps))
      return failure();
    if (llvm::any_of(*steps, [](int64_t step) { return step != 1; }))
      return nodeError(node) << "Kiln imports Slice with steps of 1 only";
  }
  if (starts->size() != axes.size() || ends->size() != axes.size())
    return nodeError(node) << "starts, ends and axes differ in length";
  Value y = x->value;
  SmallVector<int64_t> shape = x->shape;
  for (auto [onnxAxis, first, last] : llvm::zip(axes, *starts, *ends)) {
    int64_t position = onnxAxis < 0 ? onnxAxis + rank : onnxAxis;
    if (position < 0 || position >= rank)
      return nodeError(node) << "axis " << onnxAxis << " of a rank-" << rank
                             << " value";
    int64_t extent = x->shape[position];
    // The whole of an axis is no cut (the batch's: up to INT64_MAX).
    if (first == 0 &&
        last >= (extent == kBatch ? std::numeric_limits<int64_t>::max()
                                  : extent))
      continue;
    FailureOr<int64_t> axis = kilnAxis(node, *x, onnxAxis);
    if (failed(axis))
      return failure();
    auto clamp = [&](int64_t bound) {
      if (bound < 0)
        bound += extent;
      return std::clamp<int64_t>(bound, 0, extent);
    };
    int64_t start = clamp(first), end = clamp(last);
    if (end <= start)
      return nodeError(node) << "the slice [" << first << ", " << last
                             << ") of axis " << onnxAxis << " is empty";
    y = SliceOp::create(builder, nodeLoc(node), y, *axis, start, end - start);
    shape[position] = end - start;
  }
  define(node, 0, y, shape);
  return success();
}

LogicalResult Importer::importGemm(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  FailureOr<const Constant *> w = constant(node, 1);
  if (failed(x) || failed(w))
    return failure();
  if (intAttr(node, "transA", 0) != 0 || floatAttr(node, "alpha", 1) != 1 ||
      floatAttr(node, "beta", 1) != 1)
    return nodeError(node) << "Kiln imports Gemm with transA=0, alpha=1 and "
                              "beta=1 only";
  const Constant &weight = **w;
  bool transB = intAttr(node, "transB", 0) != 0;
  if (x->shape.size() != 2 || weight.dims.size() != 2 || !weight.isFloat)
    return nodeError(node) << "Kiln imports Gemm of an [N, K] activation and "
                              "a float matrix";
  int64_t k = transB ? weight.dims[1] : weight.dims[0];
  int64_t m = transB ? weight.dims[0] : weight.dims[1];
  if (k != x->shape[1])
    return nodeError(node) << "weight '" << node.input(1) << "' takes " << k
                           << " inputs, input '" << node.input(0) << "' has "
                           << x->shape[1];
  std::vector<float> km = weight.floats;
  if (transB)
    for (int64_t i = 0; i < k; ++i)
      for (int64_t j = 0; j < m; ++j)
        km[i * m + j] = weight.floats[j * k + i];
  auto weightType = RankedTensorType::get({k, m}, builder.getF32Type());
  // The builder's classifier: normal(0, 0.01).
  Value wv = readVariable(node, weight, VariableKind::Parameter, weightType, km,
                          Initializer::Normal, 0.01f);
  Value bias;
  if (hasInput(node, 2)) {
    FailureOr<const Constant *> c = constant(node, 2);
    if (failed(c))
      return failure();
    if ((*c)->dims.size() != 1 || (*c)->dims[0] != m || !(*c)->isFloat)
      return nodeError(node)
             << "bias '" << node.input(2) << "' must be a float vector of the "
             << m << " outputs";
    bias = readVariable(node, **c, VariableKind::Parameter,
                        RankedTensorType::get({m}, builder.getF32Type()),
                        (*c)->floats, Initializer::Zeros);
  }
  Value y = DenseOp::create(builder, nodeLoc(node), x->value, wv, bias);
  define(node, 0, y, {x->shape[0], m});
  return success();
}

LogicalResult Importer::importMatMul(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  FailureOr<const Constant *> w = constant(node, 1);
  if (failed(x) || failed(w))
    return failure();
  const Constant &weight = **w;
  if (x->shape.size() != 2 || weight.dims.size() != 2 || !weight.isFloat)
    return nodeError(node) << "Kiln imports MatMul of an [N, K] activation "
                              "and a float [K, M] matrix";
  if (weight.dims[0] != x->shape[1])
    return nodeError(node) << "weight '" << node.input(1) << "' takes "
                           << weight.dims[0] << " inputs, input '"
                           << node.input(0) << "' has " << x->shape[1];
  auto weightType = RankedTensorType::get(weight.dims, builder.getF32Type());
  Value wv = readVariable(node, weight, VariableKind::Parameter, weightType,
                          weight.floats, Initializer::Normal, 0.01f);
  Value y = DenseOp::create(builder, nodeLoc(node), x->value, wv, Value());
  define(node, 0, y, {x->shape[0], weight.dims[1]});
  return success();
}

//===----------------------------------------------------------------------===//
// Identity and shape subgraphs, folded at import
//===----------------------------------------------------------------------===//

LogicalResult Importer::importIdentity(const onnx::NodeProto &node) {
  if (hasInput(node, 0) && constants.count(node.input(0))) {
    // PRESERVE exports wrap initializers: the variable keeps the
    // initializer's (state-dict) name.
    constants[node.output(0)] = constants[node.input(0)];
    // torch's eval-mode export also replaces each initializer equal to an
    // earlier one (a batch norm's ones and zeros) by an Identity named after
    // it: a parameter of its own, not one tied to the first.
    if (!StringRef(node.output(0)).starts_with("onnx::"))
      constants[node.output(0)].origin = node.output(0);
    return success();
  }
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  activations[node.output(0)] = *x;
  return success();
}

/// Pad with zero pads is the identity: torch exports AvgPool2d with its
/// default count_include_pad=True as a Pad before the AveragePool, with zero
/// pads when the pool has no padding (DenseNet's transitions). Nonzero pads
/// would make padding count in the average, which Kiln's excludes.
LogicalResult Importer::importPad(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  FailureOr<const Constant *> pads = constant(node, 1);
  if (failed(x) || failed(pads))
    return failure();
  if ((*pads)->isFloat ||
      llvm::any_of((*pads)->ints, [](int64_t p) { return p != 0; }))
    return nodeError(node) << "Kiln imports Pad with zero pads only (torch "
                              "writes one before an AveragePool with "
                              "count_include_pad=True; Kiln's average "
                              "excludes padding: export with "
                              "count_include_pad=False)";
  activations[node.output(0)] = *x;
  return success();
}

LogicalResult Importer::importConstant(const onnx::NodeProto &node) {
  const onnx::AttributeProto *value = attribute(node, "value");
  if (!value || !value->has_t())
    return nodeError(node) << "Kiln imports Constant nodes with a tensor "
                              "'value' only";
  std::string error;
  FailureOr<Constant> c = readTensor(value->t(), error);
  if (failed(c))
    return nodeError(node) << error;
  c->origin = node.output(0);
  constants[node.output(0)] = std::move(*c);
  return success();
}

LogicalResult Importer::importShape(const onnx::NodeProto &node) {
  FailureOr<Activation> x = activation(node, 0);
  if (failed(x))
    return failure();
  if (attribute(node, "start") || attribute(node, "end"))
    return nodeError(node) << "Shape with start or end is not supported";
  Constant c;
  c.isFloat = false;
  c.dims = {int64_t(x->shape.size())};
  c.ints.assign(x->shape.begin(), x->shape.end());
  c.origin = node.output(0);
  constants[node.output(0)] = std::move(c);
  return success();
}

/// Integer constants only: shape arithmetic.
static bool isIntVector(const Constant &c) {
  return !c.isFloat && c.dims.size() <= 1;
}

LogicalResult Importer::importGather(const onnx::NodeProto &node) {
  FailureOr<const Constant *> data = constant(node, 0);
  FailureOr<const Constant *> indices = constant(node, 1);
  if (failed(data) || failed(indices))
    return failure();
  if (!isIntVector(**data) || (*data)->dims.size() != 1 ||
      !isIntVector(**indices) || intAttr(node, "axis", 0) != 0)
    return nodeError(node) << "Kiln folds Gather of integer vectors on axis "
                              "0 only";
  Constant c;
  c.isFloat = false;
  c.dims = (*indices)->dims;
  c.origin = node.output(0);
  int64_t n = (*data)->dims[0];
  for (int64_t i : (*indices)->ints) {
    if (i < -n || i >= n)
      return nodeError(node) << "index " << i << " is out of range";
    c.ints.push_back((*data)->ints[i < 0 ? i + n : i]);
  }
  constants[node.output(0)] = std::move(c);
  return success();
}

LogicalResult Importer::importUnsqueeze(const onnx::NodeProto &node) {
  FailureOr<const Constant *> data = constant(node, 0);
  FailureOr<const Constant *> axes = constant(node, 1);
  if (failed(data) || failed(axes))
    return failure();
  if (!isIntVector(**data) || (*data)->dims.size() != 0 ||
      (*axes)->ints != std::vector<int64_t>{0})
    return nodeError(node) << "Kiln folds Unsqueeze of an integer scalar on "
                              "axis 0 only";
  Constant c = **data;
  c.dims = {1};
  c.origin = node.output(0);
  constants[node.output(0)] = std::move(c);
  return success();
}

LogicalResult Importer::importSqueeze(const onnx::NodeProto &node) {
  FailureOr<const Constant *> data = constant(node, 0);
  if (failed(data))
    return failure();
  if (!isIntVector(**data) || (*data)->numElements() != 1)
    return nodeError(node) << "Kiln folds Squeeze of a one-element integer "
                              "vector only";
  Constant c = **data;
  c.dims = {};
  c.origin = node.output(0);
  constants[node.output(0)] = std::move(c);
  return success();
}

/// Concat of activations (DenseNet's and SqueezeNet's feature maps, along
/// the channels in practice) is kiln.concat.
LogicalResult Importer::concatActivations(const onnx::NodeProto &node) {
  SmallVector<Value> values;
  SmallVector<int64_t> shape;
  int64_t onnxAxis = intAttr(node, "axis", 0), position = 0;
  FailureOr<int64_t> axis = failure();
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<Activation> x = activation(node, i);
    if (failed(x))
      return failure();
    if (i == 0) {
      axis = kilnAxis(node, *x, onnxAxis);
      if (failed(axis))
        return failure();
      shape = x->shape;
      position = onnxAxis < 0 ? onnxAxis + int64_t(shape.size()) : onnxAxis;
      shape[position] = 0;
    } else if (x->shape.size() != shape.size()) {
      return nodeError(node) << "input '" << node.input(i) << "' has rank "
                             << x->shape.size() << ", input '"
                             << node.input(0) << "' " << shape.size();
    }
    shape[position] += x->shape[position];
    values.push_back(x->value);
  }
  // The ONNX checker has checked the other dimensions; kiln's verifier
  // checks them again.
  define(node, 0,
         ConcatOp::create(builder, nodeLoc(node), values, *axis), shape);
  return success();
}

LogicalResult Importer::importConcat(const onnx::NodeProto &node) {
  if (llvm::any_of(node.input(), [&](const std::string &name) {
        return activations.count(name) || shuffles.count(name);
      }))
    return concatActivations(node);
  Constant c;
  c.isFloat = false;
  c.origin = node.output(0);
  for (int i = 0; i < node.input_size(); ++i) {
    FailureOr<const Constant *> part = constant(node, i);
    if (failed(part))
      return failure();
    if (!isIntVector(**part) || (*part)->dims.size() != 1)
      return nodeError(node) << "Kiln folds Concat of integer vectors only";
    c.ints.insert(c.ints.end(), (*part)->ints.begin(), (*part)->ints.end());
  }
  c.dims = {int64_t(c.ints.size())};
  constants[node.output(0)] = std::move(c);
  return success();
}

/// Integer arithmetic on shape values (torch's channel shuffle divides the
/// channels by the groups; its chunk computes Slice bounds with Add, Div and
/// Mul): folded elementwise, a one-element operand broadcast. Division
/// truncates, as ONNX's integer Div does.
LogicalResult Importer::foldIntegerArithmetic(const onnx::NodeProto &node,
                                              BinaryKind kind) {
  const Constant &a = constants[node.input(0)];
  const Constant &b = constants[node.input(1)];
  if (a.isFloat || b.isFloat || a.dims.size() > 1 || b.dims.size() > 1 ||
      (a.numElements() != b.numElements() && a.numElements() != 1 &&
       b.numElements() != 1))
    return nodeError(node) << "both operands are constants; Kiln folds "
                              "integer shape arithmetic only";
  const Constant &wide = a.numElements() >= b.numElements() ? a : b;
  Constant c;
  c.isFloat = false;
  c.dims = wide.dims;
  c.origin = node.output(0);
  for (int64_t i = 0; i < wide.numElements(); ++i) {
    int64_t x = a.ints[a.numElements() == 1 ? 0 : i];
    int64_t y = b.ints[b.numElements() == 1 ? 0 : i];
    switch (kind) {
    case BinaryKind::Add:
      c.ints.push_back(x + y);
      break;
    case BinaryKind::Sub:
      c.ints.push_back(x - y);
      break;
    case BinaryKind::Mul:
      c.ints.push_back(x * y);
      break;
    case BinaryKind::Div:
      if (y == 0)
        return nodeError(node) << "integer division by zero";
      c.ints.push_back(x / y);
      break;
    }
  }
  constants[node.output(0)] = std::move(c);
  return success();
}

LogicalResult Importer::importCast(const onnx::NodeProto &node) {
  FailureOr<const Constant *> data = constant(node, 0);
  if (failed(data))
    return failure();
  int64_t to = intAttr(node, "to", 0);
  if ((*data)->isFloat ||
      (to != onnx::TensorProto::INT64 && to != onnx::TensorProto::INT32))
    return nodeError(node) << "Kiln folds Cast of integer shape values to "
                              "int32 or int64 only";
  Constant c = **data;
  c.origin = node.output(0);
  constants[node.output(0)] = std::move(c);
  return success();
}

} // namespace kiln
