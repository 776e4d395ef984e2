//===- OnnxExport.cpp - kiln models out to ONNX ---------------------------===//
//
// Walks @forward from the images to the logits and writes one ONNX node (or
// a few) per kiln op, the mirror image of compiler/Import/Onnx: one handler
// per kiln op, registered in `handlers()`. The ONNX library (libonnx) holds
// the protobuf, checks the result and infers its shapes; as in the
// importer, it reports errors by throwing, so this library is built with
// exceptions and every call into libonnx goes through `callOnnx`.
//
// Layouts. Kiln's activations are NHWC, ONNX's NCHW; rather than assume
// which one a value is in, every exported value records the permutation
// from its kiln dimensions to its ONNX dimensions (`order`), and a node
// asks for its operands in the order it needs: a Transpose is written only
// where a value's order differs from its reader's and the permutation moves
// elements (not when it only moves dimensions of size 1). Weights are
// permuted once, as initializers: HWIO filters to OIHW, [K, M] dense
// weights to [M, K] (Gemm's transB), NHWC constants to NCHW.
//
//===----------------------------------------------------------------------===//

#include "compiler/Export/Onnx/OnnxExport.h"

#include "compiler/Interpreter/Interpreter.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "kiln/rt/safetensors.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include "onnx/checker.h"
#include "onnx/defs/printer.h"
#include "onnx/onnx_pb.h"
#include "onnx/shape_inference/implementation.h"

#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <sstream>

using namespace mlir;

namespace kiln {
namespace {

namespace st = rt::safetensors;

/// The opset and IR version written (opset 13 is IR version 7).
constexpr int64_t kOpset = 13;
constexpr int64_t kIrVersion = 7;

using Order = SmallVector<int64_t, 4>;

/// NHWC to NCHW: ONNX dimension i is kiln dimension kNchw[i].
const Order kNchw = {0, 3, 1, 2};
/// HWIO filters to OIHW.
const Order kOihw = {3, 2, 0, 1};
/// [K, M] dense weights to [M, K].
const Order kSwap = {1, 0};

Order identity(size_t rank) {
  Order order;
  for (size_t i = 0; i < rank; ++i)
    order.push_back(int64_t(i));
  return order;
}

/// The order kiln's ops mean by a value of this rank: NHWC activations for
/// rank 4, else row-major as is.
Order defaultOrder(size_t rank) { return rank == 4 ? kNchw : identity(rank); }

/// `shape` permuted by `order` (result dimension i is shape[order[i]]).
SmallVector<int64_t> permuted(ArrayRef<int64_t> shape,
                              ArrayRef<int64_t> order) {
  SmallVector<int64_t> out;
  for (int64_t d : order)
    out.push_back(shape[d]);
  return out;
}

/// Whether permuting `shape` by `order` keeps the row-major element order:
/// the dimensions larger than 1 stay in their relative order.
bool keepsElementOrder(ArrayRef<int64_t> shape, ArrayRef<int64_t> order) {
  int64_t last = -1;
  for (int64_t d : order) {
    if (shape[d] == 1)
      continue;
    if (d < last)
      return false;
    last = d;
  }
  return true;
}

/// Row-major `values` of `shape` permuted by `order`.
std::vector<float> permuteValues(ArrayRef<float> values,
                                 ArrayRef<int64_t> shape,
                                 ArrayRef<int64_t> order) {
  size_t rank = shape.size();
  if (keepsElementOrder(shape, order))
    return std::vector<float>(values.begin(), values.end());
  SmallVector<int64_t> strides(rank, 1);
  for (size_t d = rank; d-- > 1;)
    strides[d - 1] = strides[d] * shape[d];
  SmallVector<int64_t> outShape = permuted(shape, order);
  std::vector<float> out(values.size());
  SmallVector<int64_t> index(rank, 0);
  for (size_t n = 0; n < out.size(); ++n) {
    int64_t source = 0;
    for (size_t d = 0; d < rank; ++d)
      source += index[d] * strides[order[d]];
    out[n] = values[source];
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < outShape[d])
        break;
      index[d] = 0;
    }
  }
  return out;
}

std::string shapeString(ArrayRef<int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    out += (i ? ", " : "") + (ShapedType::isDynamic(shape[i])
                                  ? std::string("N")
                                  : std::to_string(shape[i]));
  return out + "]";
}

/// Runs a libonnx call, turning its exceptions into an error message.
template <typename Fn> bool callOnnx(Fn &&fn, std::string &error) {
  try {
    fn();
    return true;
  } catch (const std::exception &e) {
    error = e.what();
    return false;
  }
}

/// An exported value: its ONNX name, and ONNX dimension i is kiln dimension
/// order[i].
struct Exported {
  std::string name;
  Order order;
};

class Exporter {
public:
  Exporter(ModuleOp module, const OnnxExportOptions &options)
      : module(module), options(options) {}

  LogicalResult run(llvm::raw_ostream &os);

private:
  using Handler = LogicalResult (Exporter::*)(Operation *);
  static const llvm::StringMap<Handler> &handlers();

  LogicalResult findGraph();
  LogicalResult collect();
  LogicalResult loadWeights();
  LogicalResult finish(llvm::raw_ostream &os);
  void printText(llvm::raw_ostream &os);

  // Handlers, one per kiln op.
  LogicalResult exportConv(Operation *op);
  LogicalResult exportBiasAdd(Operation *op);
  LogicalResult exportBatchNorm(Operation *op);
  LogicalResult exportRelu(Operation *op);
  LogicalResult exportActivation(Operation *op);
  LogicalResult exportIdentity(Operation *op);
  LogicalResult exportDropout(Operation *op);
  LogicalResult exportAdd(Operation *op);
  LogicalResult exportBroadcastBinary(Operation *op);
  LogicalResult exportPool(Operation *op);
  LogicalResult exportGlobalAvgPool(Operation *op);
  LogicalResult exportDense(Operation *op);
  LogicalResult exportReshape(Operation *op);
  LogicalResult exportConcat(Operation *op);
  LogicalResult exportSlice(Operation *op);
  LogicalResult exportChannelShuffle(Operation *op);
  LogicalResult exportTranspose(Operation *op);
  // Weights and constants are written by the ops that read them, in the
  // layout each reader needs (operand()).
  LogicalResult exportRead(Operation *op) { return success(); }
  LogicalResult exportConstant(Operation *op) { return success(); }

  // Helpers.
  std::string freshName(StringRef base);
  std::string nodeBase(Operation *op);
  onnx::NodeProto *addNode(Operation *op, StringRef opType,
                           ArrayRef<std::string> inputs, StringRef output);
  std::string addConstant(Operation *op, ArrayRef<int64_t> values,
                          ArrayRef<int64_t> dims);
  std::string addFloatConstant(Operation *op, float value);
  FailureOr<std::string> operand(Operation *user, Value value,
                                 ArrayRef<int64_t> order);
  FailureOr<std::string> initializer(Operation *user, VariableOp variable,
                                     ArrayRef<int64_t> order);
  FailureOr<std::string> constantTensor(Operation *user,
                                        arith::ConstantOp constant,
                                        ArrayRef<int64_t> order);
  FailureOr<Exported> exported(Operation *user, Value value);
  void define(Value value, std::string name, Order order) {
    values[value] = {std::move(name), std::move(order)};
  }
  std::string resultName(Operation *op) { return freshName(nodeBase(op)); }
  static ArrayRef<int64_t> shapeOf(Value v) {
    return cast<RankedTensorType>(v.getType()).getShape();
  }

  ModuleOp module;
  const OnnxExportOptions &options;
  func::FuncOp forward;
  Value images, logits;
  /// The ops the logits depend on, in program order.
  llvm::SetVector<Operation *> graphOps;
  onnx::ModelProto model;
  onnx::GraphProto *graph = nullptr;
  llvm::DenseMap<Value, Exported> values;
  /// Transposed copies of values, by value and order.
  llvm::DenseMap<Value, std::vector<Exported>> transposed;
  /// The ONNX node each op wrote last (a convolution's, for its bias).
  llvm::DenseMap<Operation *, onnx::NodeProto *> nodes;
  /// Initializers written, by variable, and the order of each.
  llvm::StringMap<Order> initializers;
  /// The variables' values (f32), from the weights file or the initializers.
  llvm::StringMap<std::vector<float>> weights;
  /// The [N, C, 1, 1] map a global pool wrote, by its kiln result.
  llvm::DenseMap<Value, std::string> pooledMaps;
  llvm::StringSet<> usedNames;
  llvm::StringMap<int> nodeNames;
  std::string weightsStep;
};

} // namespace

//===----------------------------------------------------------------------===//
// The op table
//===----------------------------------------------------------------------===//

const llvm::StringMap<Exporter::Handler> &Exporter::handlers() {
  static const llvm::StringMap<Handler> table = {
      {"arith.constant", &Exporter::exportConstant},
      {"kiln.activation", &Exporter::exportActivation},
      {"kiln.add", &Exporter::exportAdd},
      {"kiln.avg_pool", &Exporter::exportPool},
      {"kiln.batch_norm_inference", &Exporter::exportBatchNorm},
      {"kiln.batch_norm_train", &Exporter::exportBatchNorm},
      {"kiln.bias_add", &Exporter::exportBiasAdd},
      {"kiln.broadcast_binary", &Exporter::exportBroadcastBinary},
      {"kiln.channel_shuffle", &Exporter::exportChannelShuffle},
      {"kiln.concat", &Exporter::exportConcat},
      {"kiln.conv2d", &Exporter::exportConv},
      {"kiln.dense", &Exporter::exportDense},
      {"kiln.dropout", &Exporter::exportDropout},
      {"kiln.global_avg_pool", &Exporter::exportGlobalAvgPool},
      {"kiln.max_pool", &Exporter::exportPool},
      {"kiln.read", &Exporter::exportRead},
      {"kiln.relu", &Exporter::exportRelu},
      {"kiln.reorder", &Exporter::exportIdentity},
      {"kiln.reshape", &Exporter::exportReshape},
      {"kiln.slice", &Exporter::exportSlice},
      {"kiln.transpose", &Exporter::exportTranspose},
  };
  return table;
}

//===----------------------------------------------------------------------===//
// The graph: from the images to the logits
//===----------------------------------------------------------------------===//

LogicalResult Exporter::findGraph() {
  forward = module.lookupSymbol<func::FuncOp>("forward");
  if (!forward || forward.isExternal())
    return emitError(module.getLoc())
           << "the module has no @forward function to export (a model as "
              "models/build_model.py writes it or the ONNX importer makes it)";
  if (forward.getNumArguments() < 1)
    return forward.emitError("@forward has no arguments; the first must be "
                             "the images");
  images = forward.getArgument(0);
  auto imageType = dyn_cast<RankedTensorType>(images.getType());
  if (!imageType || imageType.getRank() != 4 ||
      !imageType.getElementType().isF32() ||
      llvm::any_of(imageType.getShape().drop_front(), ShapedType::isDynamic))
    return forward.emitError("@forward's first argument must be the images, "
                             "tensor<?xHxWxCxf32>, not ")
           << images.getType();
  auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
  // The logits: what the loss reads among the results, else the one
  // [N, classes] float result.
  for (Value result : ret.getOperands())
    if (auto loss = result.getDefiningOp<SoftmaxCrossEntropyOp>())
      if (llvm::is_contained(ret.getOperands(), loss.getLogits()))
        logits = loss.getLogits();
  if (!logits) {
    SmallVector<Value> candidates;
    for (Value result : ret.getOperands())
      if (auto type = dyn_cast<RankedTensorType>(result.getType());
          type && type.getRank() == 2 && type.getElementType().isF32())
        candidates.push_back(result);
    if (candidates.size() != 1)
      return ret.emitError("@forward must return the logits, the one "
                           "[N, classes] f32 result (or the one its "
                           "softmax_cross_entropy reads)");
    logits = candidates.front();
  }
  return success();
}

/// The ops the logits depend on. Only what the inference graph computes is
/// followed: a dropout's step, a batch norm's batch statistics and the loss
/// are not part of it.
LogicalResult Exporter::collect() {
  llvm::SmallPtrSet<Operation *, 32> seen;
  SmallVector<Value> work = {logits};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (arg != images)
        return forward.emitError("the logits depend on @forward's argument #")
               << arg.getArgNumber() << " (" << arg.getType()
               << "); an inference graph has one input, the images";
      continue;
    }
    Operation *def = v.getDefiningOp();
    if (auto bn = dyn_cast<BatchNormTrainOp>(def); bn && v != bn.getOutput())
      return def->emitError("the logits depend on result #")
             << cast<OpResult>(v).getResultNumber()
             << " of kiln.batch_norm_train (a batch statistic), which the "
                "inference graph does not compute";
    if (!seen.insert(def).second)
      continue;
    if (auto dropout = dyn_cast<DropoutOp>(def)) {
      work.push_back(dropout.getInput());
      continue;
    }
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  for (Operation &op : forward.getBody().front())
    if (seen.count(&op))
      graphOps.insert(&op);
  for (Operation *op : graphOps) {
    for (Type type : op->getResultTypes())
      if (auto tensor = dyn_cast<RankedTensorType>(type);
          tensor && !tensor.getElementType().isF32())
        return op->emitError("'")
               << op->getName() << "' computes in " << tensor.getElementType()
               << "; the exporter writes f32 models (export the model "
                  "before --kiln-bf16)";
    if (!handlers().count(op->getName().getStringRef()))
      return op->emitError("'")
             << op->getName()
             << "' has no ONNX form in the exporter (docs/onnx.md "
                "\"Exporting\" lists the ops it writes)";
  }
  return success();
}

/// The values of every variable the graph reads: from the weights file
/// (Kiln's layouts, by name) or from the variables' initializers as
/// kiln-run and the executable compute them (kiln/ref/init.h).
LogicalResult Exporter::loadWeights() {
  SmallVector<VariableOp> read;
  for (Operation *op : graphOps)
    if (auto r = dyn_cast<ReadOp>(op)) {
      auto variable = module.lookupSymbol<VariableOp>(r.getVariableAttr());
      if (!variable)
        return r.emitError("reads @")
               << r.getVariable() << ", which the module does not declare";
      if (!weights.count(variable.getSymName())) {
        weights[variable.getSymName()];
        // Initializers are named after their variables: no value may be.
        usedNames.insert(variable.getSymName());
        read.push_back(variable);
      }
    }
  if (options.weights.empty()) {
    FailureOr<interp::VariableStore> store =
        interp::VariableStore::declare(module);
    if (failed(store) || failed(store->initialize(options.seed)))
      return failure();
    for (VariableOp variable : read) {
      const interp::HostTensor *value = store->lookup(variable.getSymName());
      weights[variable.getSymName()] = value->floats;
    }
    return success();
  }
  const std::string &path = options.weights;
  st::File file;
  if (Status s = st::read(path, file); !s.isOk())
    return emitError(module.getLoc()) << s.message();
  auto meta = [&](const char *key) {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? std::string() : it->second;
  };
  std::string format = meta("format");
  if (format != "kiln-checkpoint" && format != "kiln-variables" &&
      format != "kiln-initial-values")
    return emitError(module.getLoc())
           << path << ": not in Kiln's layouts (its metadata has format '"
           << format
           << "', not kiln-checkpoint, kiln-variables or "
              "kiln-initial-values); a PyTorch state dict must be converted "
              "first: kiln-checkpoint from-pytorch";
  weightsStep = meta("step");
  for (VariableOp variable : read) {
    StringRef name = variable.getSymName();
    ArrayRef<int64_t> shape = variable.getTensorType().getShape();
    const st::Tensor *tensor = file.find(name.str());
    if (!tensor)
      return emitError(module.getLoc())
             << path << ": no tensor '" << name
             << "' for the model's variable F32" << shapeString(shape);
    if (tensor->dtype != st::DType::F32 ||
        ArrayRef<int64_t>(tensor->shape) != shape)
      return emitError(module.getLoc())
             << path << ": tensor '" << name << "' is "
             << st::dtypeName(tensor->dtype) << shapeString(tensor->shape)
             << ", the model's variable F32" << shapeString(shape);
    weights[name] = st::toF32(*tensor);
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Names, nodes, operands
//===----------------------------------------------------------------------===//

std::string Exporter::freshName(StringRef base) {
  std::string name = base.str();
  for (int n = 2; usedNames.count(name); ++n)
    name = base.str() + "_" + std::to_string(n);
  usedNames.insert(name);
  return name;
}

/// An imported op keeps its ONNX node's name (its NameLoc); an op reading
/// a weight is named after the weight's layer (`layer1.0.conv1` for
/// `layer1.0.conv1.weight`), others after their kind.
std::string Exporter::nodeBase(Operation *op) {
  if (auto name = dyn_cast<NameLoc>(op->getLoc()))
    return name.getName().str();
  for (Value v : op->getOperands())
    if (auto read = v.getDefiningOp<ReadOp>()) {
      StringRef variable = read.getVariable();
      size_t dot = variable.rfind('.');
      return (dot == StringRef::npos ? variable : variable.take_front(dot))
          .str();
    }
  return op->getName().stripDialect().str();
}

onnx::NodeProto *Exporter::addNode(Operation *op, StringRef opType,
                                   ArrayRef<std::string> inputs,
                                   StringRef output) {
  onnx::NodeProto *node = graph->add_node();
  std::string base = nodeBase(op);
  int n = ++nodeNames[base];
  node->set_name(n == 1 ? base : base + "_" + std::to_string(n));
  node->set_op_type(opType.str());
  for (const std::string &input : inputs)
    node->add_input(input);
  node->add_output(output.str());
  nodes[op] = node;
  return node;
}

static void setInts(onnx::NodeProto *node, StringRef name,
                    ArrayRef<int64_t> values) {
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name(name.str());
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values)
    a->add_ints(v);
}

static void setInt(onnx::NodeProto *node, StringRef name, int64_t value) {
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name(name.str());
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

static void setFloat(onnx::NodeProto *node, StringRef name, float value) {
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name(name.str());
  a->set_type(onnx::AttributeProto::FLOAT);
  a->set_f(value);
}

static void setFloats(onnx::TensorProto *t, ArrayRef<float> values) {
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->set_raw_data(std::string(reinterpret_cast<const char *>(values.data()),
                              values.size() * sizeof(float)));
}

/// An int64 Constant node (shape targets, slice bounds): constants other
/// than the weights are nodes, so that the initializers are exactly the
/// model's variables.
std::string Exporter::addConstant(Operation *op, ArrayRef<int64_t> values,
                                  ArrayRef<int64_t> dims) {
  std::string name = freshName(nodeBase(op) + "_const");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Constant");
  node->set_name(name);
  node->add_output(name);
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  t->set_data_type(onnx::TensorProto::INT64);
  for (int64_t d : dims)
    t->add_dims(d);
  for (int64_t v : values)
    t->add_int64_data(v);
  return name;
}

std::string Exporter::addFloatConstant(Operation *op, float value) {
  std::string name = freshName(nodeBase(op) + "_const");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Constant");
  node->set_name(name);
  node->add_output(name);
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  setFloats(a->mutable_t(), {value});
  return name;
}

FailureOr<Exported> Exporter::exported(Operation *user, Value value) {
  auto it = values.find(value);
  if (it != values.end())
    return it->second;
  // Weights and constants are operands of the ops that take them
  // (operand()); as activations they are a model the exporter does not
  // know.
  return user->emitError("operand of '")
         << user->getName()
         << "' is not an activation the exporter has written (a weight or "
            "constant where an activation belongs)";
}

/// `value` in ONNX with its kiln dimensions permuted by `order`: a weight
/// (kiln.read) becomes an initializer, an arith.constant a Constant node,
/// an activation is transposed when it is in another order.
FailureOr<std::string> Exporter::operand(Operation *user, Value value,
                                         ArrayRef<int64_t> order) {
  if (auto read = value.getDefiningOp<ReadOp>())
    return initializer(
        user, module.lookupSymbol<VariableOp>(read.getVariableAttr()), order);
  if (auto constant = value.getDefiningOp<arith::ConstantOp>())
    return constantTensor(user, constant, order);
  FailureOr<Exported> x = exported(user, value);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> shape = shapeOf(value);
  if (ArrayRef<int64_t>(x->order) == order)
    return x->name;
  // The permutation from the value's ONNX dimensions to the wanted ones.
  SmallVector<int64_t> perm;
  for (int64_t d : order)
    perm.push_back(llvm::find(x->order, d) - x->order.begin());
  SmallVector<int64_t> onnxShape = permuted(shape, x->order);
  for (const Exported &t : transposed[value])
    if (ArrayRef<int64_t>(t.order) == order)
      return t.name;
  std::string name = freshName(
      x->name + "_" + (order == ArrayRef<int64_t>(kNchw) ? "nchw" : "t"));
  if (keepsElementOrder(onnxShape, perm)) {
    // Only dimensions of size 1 move: a reshape. The batch is copied (0)
    // where it stays in place, else inferred (-1).
    SmallVector<int64_t> target = permuted(shape, order);
    for (auto [i, d] : llvm::enumerate(target))
      if (ShapedType::isDynamic(d))
        d = ShapedType::isDynamic(onnxShape[i]) ? 0 : -1;
    std::string shapeName = addConstant(user, target, {int64_t(target.size())});
    addNode(user, "Reshape", {x->name, shapeName}, name);
  } else {
    setInts(addNode(user, "Transpose", {x->name}, name), "perm", perm);
  }
  transposed[value].push_back({name, Order(order)});
  return name;
}

FailureOr<std::string> Exporter::initializer(Operation *user,
                                             VariableOp variable,
                                             ArrayRef<int64_t> order) {
  StringRef name = variable.getSymName();
  auto it = initializers.find(name);
  if (it != initializers.end()) {
    if (ArrayRef<int64_t>(it->second) != order)
      return user->emitError("'")
             << user->getName() << "' reads @" << name
             << " in another layout than an earlier reader; ONNX gives an "
                "initializer one layout";
    return name.str();
  }
  ArrayRef<int64_t> shape = variable.getTensorType().getShape();
  onnx::TensorProto *t = graph->add_initializer();
  t->set_name(name.str());
  for (int64_t d : permuted(shape, order))
    t->add_dims(d);
  setFloats(t, permuteValues(weights[name], shape, order));
  initializers[name] = Order(order);
  usedNames.insert(name);
  return name.str();
}

FailureOr<std::string> Exporter::constantTensor(Operation *user,
                                                arith::ConstantOp constant,
                                                ArrayRef<int64_t> order) {
  auto dense = dyn_cast<DenseElementsAttr>(constant.getValue());
  auto type = cast<RankedTensorType>(constant.getType());
  if (!dense || !type.getElementType().isF32())
    return constant.emitError("the exporter "
                              "writes dense f32 constants only");
  std::vector<float> raw(dense.getValues<float>().begin(),
                         dense.getValues<float>().end());
  std::string name = freshName(nodeBase(user) + "_const");
  onnx::NodeProto *node = graph->add_node();
  node->set_op_type("Constant");
  node->set_name(name);
  node->add_output(name);
  onnx::AttributeProto *a = node->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto *t = a->mutable_t();
  for (int64_t d : permuted(type.getShape(), order))
    t->add_dims(d);
  setFloats(t, permuteValues(raw, type.getShape(), order));
  return name;
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

/// kiln's pad [top, bottom, left, right] is ONNX's [top, left, bottom,
/// right].
static SmallVector<int64_t> onnxPads(ArrayRef<int64_t> padding) {
  return {padding[0], padding[2], padding[1], padding[3]};
}

LogicalResult Exporter::exportConv(Operation *op) {
  auto conv = cast<Conv2DOp>(op);
  FailureOr<std::string> x = operand(op, conv.getInput(), kNchw);
  FailureOr<std::string> w = operand(op, conv.getFilter(), kOihw);
  if (failed(x) || failed(w))
    return failure();
  SmallVector<std::string> inputs = {*x, *w};
  if (conv.getBias()) {
    FailureOr<std::string> b = operand(op, conv.getBias(), {0});
    if (failed(b))
      return failure();
    inputs.push_back(*b);
  }
  ArrayRef<int64_t> filter = shapeOf(conv.getFilter());
  std::string y = resultName(op);
  onnx::NodeProto *node = addNode(op, "Conv", inputs, y);
  setInts(node, "kernel_shape", {filter[0], filter[1]});
  setInts(node, "strides", conv.getStrides());
  setInts(node, "pads", onnxPads(conv.getPadding()));
  setInts(node, "dilations", conv.getDilations());
  if (conv.getGroups() != 1)
    setInt(node, "group", int64_t(conv.getGroups()));
  define(conv.getOutput(), y, kNchw);
  return success();
}

/// A bias added to a convolution's result that nothing else reads becomes
/// the Conv's bias input (what the importer makes of a biased Conv); other
/// biases are an Add of the vector broadcast over the channels.
LogicalResult Exporter::exportBiasAdd(Operation *op) {
  auto biasAdd = cast<BiasAddOp>(op);
  Value input = biasAdd.getInput();
  auto conv = input.getDefiningOp<Conv2DOp>();
  if (conv && !conv.getBias() && input.hasOneUse() && nodes.count(conv)) {
    FailureOr<std::string> b = operand(op, biasAdd.getBias(), {0});
    if (failed(b))
      return failure();
    onnx::NodeProto *node = nodes[conv];
    node->add_input(*b);
    define(biasAdd.getOutput(), values[input].name, values[input].order);
    return success();
  }
  size_t rank = shapeOf(input).size();
  FailureOr<std::string> x = operand(op, input, defaultOrder(rank));
  FailureOr<std::string> b = operand(op, biasAdd.getBias(), {0});
  if (failed(x) || failed(b))
    return failure();
  std::string bias = *b;
  if (rank == 4) {
    // [C] to [C, 1, 1], against NCHW.
    bias = freshName(*b + "_c11");
    addNode(op, "Unsqueeze", {*b, addConstant(op, {1, 2}, {2})}, bias);
  }
  std::string y = resultName(op);
  addNode(op, "Add", {*x, bias}, y);
  define(biasAdd.getOutput(), y, defaultOrder(rank));
  return success();
}

/// Both forms are exported as ONNX's inference batch norm, on the running
/// statistics: the training form's batch statistics are not part of an
/// inference graph. The fused forms' residual and ReLU follow it.
LogicalResult Exporter::exportBatchNorm(Operation *op) {
  Value input = op->getOperand(0), residual;
  float epsilon, momentum = 0.9f;
  bool relu;
  if (auto bn = dyn_cast<BatchNormTrainOp>(op)) {
    residual = bn.getResidual();
    epsilon = bn.getEpsilon().convertToFloat();
    momentum = bn.getMomentum().convertToFloat();
    relu = bn.getRelu();
  } else {
    auto inference = cast<BatchNormInferenceOp>(op);
    epsilon = inference.getEpsilon().convertToFloat();
    relu = inference.getRelu();
  }
  Order order = defaultOrder(shapeOf(input).size());
  SmallVector<std::string> inputs;
  FailureOr<std::string> x = operand(op, input, order);
  if (failed(x))
    return failure();
  inputs.push_back(*x);
  for (int i = 1; i <= 4; ++i) {
    FailureOr<std::string> v = operand(op, op->getOperand(i), {0});
    if (failed(v))
      return failure();
    inputs.push_back(*v);
  }
  std::string y = resultName(op);
  onnx::NodeProto *node = addNode(op, "BatchNormalization", inputs, y);
  setFloat(node, "epsilon", epsilon);
  // Kiln's momentum is ONNX's (new = momentum * old + (1 - momentum) *
  // batch); an inference graph does not use it, an importer trains with it.
  setFloat(node, "momentum", momentum);
  if (residual) {
    FailureOr<std::string> r = operand(op, residual, order);
    if (failed(r))
      return failure();
    std::string sum = freshName(y + "_residual");
    addNode(op, "Add", {y, *r}, sum);
    y = sum;
  }
  if (relu) {
    std::string rectified = freshName(y + "_relu");
    addNode(op, "Relu", {y}, rectified);
    y = rectified;
  }
  define(op->getResult(0), y, order);
  return success();
}

LogicalResult Exporter::exportRelu(Operation *op) {
  FailureOr<Exported> x = exported(op, op->getOperand(0));
  if (failed(x))
    return failure();
  std::string y = resultName(op);
  addNode(op, "Relu", {x->name}, y);
  define(op->getResult(0), y, x->order);
  return success();
}

/// ONNX opset 13 has no SiLU and no HardSwish: x * Sigmoid(x) and
/// x * HardSigmoid(x), the forms torch exports and the importer recognizes.
LogicalResult Exporter::exportActivation(Operation *op) {
  auto activation = cast<ActivationOp>(op);
  FailureOr<Exported> x = exported(op, activation.getInput());
  if (failed(x))
    return failure();
  std::string y = resultName(op);
  auto hardSigmoid = [&](StringRef output) {
    onnx::NodeProto *node = addNode(op, "HardSigmoid", {x->name}, output);
    setFloat(node, "alpha", 1.0f / 6.0f);
    setFloat(node, "beta", 0.5f);
  };
  switch (activation.getKind()) {
  case ActivationKind::Sigmoid:
    addNode(op, "Sigmoid", {x->name}, y);
    break;
  case ActivationKind::SiLU: {
    std::string gate = freshName(y + "_sigmoid");
    addNode(op, "Sigmoid", {x->name}, gate);
    addNode(op, "Mul", {x->name, gate}, y);
    break;
  }
  case ActivationKind::ReLU6:
    addNode(op, "Clip",
            {x->name, addFloatConstant(op, 0.0f), addFloatConstant(op, 6.0f)},
            y);
    break;
  case ActivationKind::HardSigmoid:
    hardSigmoid(y);
    break;
  case ActivationKind::HardSwish: {
    std::string gate = freshName(y + "_hard_sigmoid");
    hardSigmoid(gate);
    addNode(op, "Mul", {x->name, gate}, y);
    break;
  }
  }
  define(activation.getOutput(), y, x->order);
  return success();
}

/// ONNX's Dropout without training_mode is the identity, as inference
/// wants, and keeps where the model drops out and how much: a model
/// imported from the export trains with its dropouts (the importer reads
/// every Dropout as training dropout, the seed from its attribute).
LogicalResult Exporter::exportDropout(Operation *op) {
  auto dropout = cast<DropoutOp>(op);
  FailureOr<Exported> x = exported(op, dropout.getInput());
  if (failed(x))
    return failure();
  std::string y = resultName(op);
  onnx::NodeProto *node = addNode(
      op, "Dropout",
      {x->name, addFloatConstant(op, dropout.getRatio().convertToFloat())}, y);
  if (int64_t seed = int64_t(dropout.getSeed()))
    setInt(node, "seed", seed);
  define(dropout.getOutput(), y, x->order);
  return success();
}

/// Reorders (a physical layout only) write nothing.
LogicalResult Exporter::exportIdentity(Operation *op) {
  FailureOr<Exported> x = exported(op, op->getOperand(0));
  if (failed(x))
    return failure();
  define(op->getResult(0), x->name, x->order);
  return success();
}

LogicalResult Exporter::exportAdd(Operation *op) {
  FailureOr<Exported> a = exported(op, op->getOperand(0));
  if (failed(a))
    return failure();
  FailureOr<std::string> b = operand(op, op->getOperand(1), a->order);
  if (failed(b))
    return failure();
  std::string y = resultName(op);
  addNode(op, "Add", {a->name, *b}, y);
  define(op->getResult(0), y, a->order);
  return success();
}

/// numpy broadcasting is the same rule in both layouts once both operands
/// are permuted alike; a weight operand becomes an initializer in NCHW
/// (`[1, C, 1, 1]` for kiln's `[1, 1, 1, C]`), a constant a Constant node.
LogicalResult Exporter::exportBroadcastBinary(Operation *op) {
  auto binary = cast<BroadcastBinaryOp>(op);
  Order order = defaultOrder(shapeOf(binary.getOutput()).size());
  FailureOr<std::string> a = operand(op, binary.getLhs(), order);
  FailureOr<std::string> b = operand(op, binary.getRhs(), order);
  if (failed(a) || failed(b))
    return failure();
  static const char *const kinds[] = {"Add", "Sub", "Mul", "Div"};
  std::string y = resultName(op);
  addNode(op, kinds[static_cast<int>(binary.getKind())], {*a, *b}, y);
  define(binary.getOutput(), y, order);
  return success();
}

/// Kiln's average excludes padding: ONNX's count_include_pad=0. A
/// ceil-mode window's overhang is padding in both.
LogicalResult Exporter::exportPool(Operation *op) {
  bool max = isa<MaxPoolOp>(op);
  ArrayRef<int64_t> window, strides, padding;
  bool ceil;
  if (max) {
    auto pool = cast<MaxPoolOp>(op);
    window = pool.getWindow(), strides = pool.getStrides(),
    padding = pool.getPadding(), ceil = pool.getCeilMode();
  } else {
    auto pool = cast<AvgPoolOp>(op);
    window = pool.getWindow(), strides = pool.getStrides(),
    padding = pool.getPadding(), ceil = pool.getCeilMode();
  }
  FailureOr<std::string> x = operand(op, op->getOperand(0), kNchw);
  if (failed(x))
    return failure();
  std::string y = resultName(op);
  onnx::NodeProto *node = addNode(op, max ? "MaxPool" : "AveragePool", {*x}, y);
  setInts(node, "kernel_shape", window);
  setInts(node, "strides", strides);
  setInts(node, "pads", onnxPads(padding));
  if (ceil)
    setInt(node, "ceil_mode", 1);
  if (!max)
    setInt(node, "count_include_pad", 0);
  define(op->getResult(0), y, kNchw);
  return success();
}

/// ONNX's GlobalAveragePool keeps [N, C, 1, 1], kiln's gives [N, C]: the
/// kiln.reshape back to [N, 1, 1, C] that imported models have reads the
/// pooled map itself; other readers get a Flatten.
LogicalResult Exporter::exportGlobalAvgPool(Operation *op) {
  FailureOr<std::string> x = operand(op, op->getOperand(0), kNchw);
  if (failed(x))
    return failure();
  std::string pooled = resultName(op);
  addNode(op, "GlobalAveragePool", {*x}, pooled);
  Value result = op->getResult(0);
  bool flat =
      result == logits || llvm::any_of(result.getUsers(), [&](Operation *user) {
        return graphOps.contains(user) &&
               !(isa<ReshapeOp>(user) &&
                 shapeOf(user->getResult(0)).size() == 4);
      });
  std::string y = pooled;
  if (flat) {
    y = freshName(pooled + "_flat");
    addNode(op, "Flatten", {pooled}, y);
  }
  define(result, y, identity(2));
  pooledMaps[result] = pooled;
  return success();
}

LogicalResult Exporter::exportDense(Operation *op) {
  auto dense = cast<DenseOp>(op);
  FailureOr<std::string> x = operand(op, dense.getInput(), identity(2));
  FailureOr<std::string> w = operand(op, dense.getWeight(), kSwap);
  if (failed(x) || failed(w))
    return failure();
  SmallVector<std::string> inputs = {*x, *w};
  if (dense.getBias()) {
    FailureOr<std::string> b = operand(op, dense.getBias(), {0});
    if (failed(b))
      return failure();
    inputs.push_back(*b);
  }
  std::string y = resultName(op);
  setInt(addNode(op, "Gemm", inputs, y), "transB", 1);
  define(dense.getOutput(), y, identity(2));
  return success();
}

/// A kiln reshape keeps the row-major order of its kiln shapes: the input
/// in kiln's order (unless its order moves only dimensions of size 1), then
/// one Flatten or Reshape, to NCHW when that is the same element order and
/// else to kiln's shape.
LogicalResult Exporter::exportReshape(Operation *op) {
  auto reshape = cast<ReshapeOp>(op);
  Value input = reshape.getInput();
  ArrayRef<int64_t> in = shapeOf(input), out = shapeOf(reshape.getOutput());
  Order outOrder = defaultOrder(out.size());
  // The pooled map of a global pool reshaped back to [N, 1, 1, C].
  if (auto pooled = pooledMaps.find(input); pooled != pooledMaps.end() &&
                                            out.size() == 4 && out[1] == 1 &&
                                            out[2] == 1) {
    define(reshape.getOutput(), pooled->second, kNchw);
    return success();
  }
  FailureOr<Exported> x = exported(op, input);
  if (failed(x))
    return failure();
  // Flatten and Reshape read ONNX's row-major order: the input in kiln's
  // order, unless its own order moves only dimensions of size 1.
  Order sourceOrder =
      keepsElementOrder(in, x->order) ? x->order : identity(in.size());
  FailureOr<std::string> src = operand(op, input, sourceOrder);
  if (failed(src))
    return failure();
  SmallVector<int64_t> sourceShape = permuted(in, sourceOrder);
  std::string y = resultName(op);
  if (out.size() == 2 && out[0] == sourceShape[0]) {
    setInt(addNode(op, "Flatten", {*src}, y), "axis", 1);
    define(reshape.getOutput(), y, outOrder);
    return success();
  }
  // Reshape's 0 copies the batch, -1 infers it.
  auto target = [&](ArrayRef<int64_t> shape) {
    SmallVector<int64_t> t(shape);
    for (auto [i, d] : llvm::enumerate(t))
      if (ShapedType::isDynamic(d))
        d = i == 0 && ShapedType::isDynamic(sourceShape[0]) ? 0 : -1;
    return t;
  };
  if (keepsElementOrder(out, outOrder)) {
    SmallVector<int64_t> t = target(permuted(out, outOrder));
    addNode(op, "Reshape", {*src, addConstant(op, t, {int64_t(t.size())})}, y);
    define(reshape.getOutput(), y, outOrder);
    return success();
  }
  // Left in kiln's order: a reader that wants NCHW transposes it
  // (operand()), one that reshapes again does not.
  SmallVector<int64_t> t = target(out);
  addNode(op, "Reshape", {*src, addConstant(op, t, {int64_t(t.size())})}, y);
  define(reshape.getOutput(), y, identity(out.size()));
  return success();
}

LogicalResult Exporter::exportConcat(Operation *op) {
  auto concat = cast<ConcatOp>(op);
  FailureOr<Exported> first = exported(op, concat.getInputs().front());
  if (failed(first))
    return failure();
  SmallVector<std::string> inputs;
  for (Value v : concat.getInputs()) {
    FailureOr<std::string> x = operand(op, v, first->order);
    if (failed(x))
      return failure();
    inputs.push_back(*x);
  }
  std::string y = resultName(op);
  int64_t axis = llvm::find(first->order, int64_t(concat.getAxis())) -
                 first->order.begin();
  setInt(addNode(op, "Concat", inputs, y), "axis", axis);
  define(concat.getOutput(), y, first->order);
  return success();
}

LogicalResult Exporter::exportSlice(Operation *op) {
  auto slice = cast<SliceOp>(op);
  FailureOr<Exported> x = exported(op, slice.getInput());
  if (failed(x))
    return failure();
  int64_t axis =
      llvm::find(x->order, int64_t(slice.getAxis())) - x->order.begin();
  int64_t start = int64_t(slice.getStart());
  int64_t end = start + int64_t(slice.getSize());
  std::string y = resultName(op);
  addNode(op, "Slice",
          {x->name, addConstant(op, {start}, {1}), addConstant(op, {end}, {1}),
           addConstant(op, {axis}, {1})},
          y);
  define(slice.getOutput(), y, x->order);
  return success();
}

/// ShuffleNet's channel shuffle as torch exports it (and the importer
/// recognizes): [N, C, H, W] to [N, g, C/g, H, W], Transpose perm
/// [0, 2, 1, 3, 4], back to [N, C, H, W].
LogicalResult Exporter::exportChannelShuffle(Operation *op) {
  auto shuffle = cast<ChannelShuffleOp>(op);
  FailureOr<std::string> x = operand(op, shuffle.getInput(), kNchw);
  if (failed(x))
    return failure();
  ArrayRef<int64_t> s = shapeOf(shuffle.getInput());
  int64_t g = int64_t(shuffle.getGroups()), c = s[3], h = s[1], w = s[2];
  std::string y = resultName(op);
  std::string split = freshName(y + "_groups");
  std::string swapped = freshName(y + "_transposed");
  addNode(op, "Reshape", {*x, addConstant(op, {0, g, c / g, h, w}, {5})},
          split);
  setInts(addNode(op, "Transpose", {split}, swapped), "perm", {0, 2, 1, 3, 4});
  addNode(op, "Reshape", {swapped, addConstant(op, {0, c, h, w}, {4})}, y);
  define(shuffle.getOutput(), y, kNchw);
  return success();
}

/// The result is in kiln's order (it is not an activation): ONNX's
/// permutation composes the value's order with kiln's, and is often the
/// identity (the importer's NHWC-to-NCHW transpose before a flatten).
LogicalResult Exporter::exportTranspose(Operation *op) {
  auto transpose = cast<TransposeOp>(op);
  FailureOr<Exported> x = exported(op, transpose.getInput());
  if (failed(x))
    return failure();
  ArrayRef<int64_t> p = transpose.getPermutation();
  SmallVector<int64_t> perm;
  for (int64_t d : p)
    perm.push_back(llvm::find(x->order, d) - x->order.begin());
  Order order = identity(p.size());
  if (ArrayRef<int64_t>(perm) == ArrayRef<int64_t>(order)) {
    define(transpose.getOutput(), x->name, order);
    return success();
  }
  std::string y = resultName(op);
  setInts(addNode(op, "Transpose", {x->name}, y), "perm", perm);
  define(transpose.getOutput(), y, order);
  return success();
}

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

static void setTensorType(onnx::ValueInfoProto *info, StringRef name,
                          ArrayRef<int64_t> shape) {
  info->set_name(name.str());
  onnx::TypeProto_Tensor *t = info->mutable_type()->mutable_tensor_type();
  t->set_elem_type(onnx::TensorProto::FLOAT);
  onnx::TensorShapeProto *s = t->mutable_shape();
  for (int64_t d : shape) {
    onnx::TensorShapeProto_Dimension *dim = s->add_dim();
    if (ShapedType::isDynamic(d))
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
}

/// ONNX's textual syntax, which the importer reads back: libonnx 1.12's
/// printer writes a graph without its initializers and no model header, so
/// the header is written here and the initializers (as the parser takes
/// them, between the signature and the nodes) with 9 significant digits,
/// enough to give back every f32.
void Exporter::printText(llvm::raw_ostream &os) {
  std::ostringstream printed;
  printed << model.graph();
  std::string text = printed.str();
  std::string values;
  for (const onnx::TensorProto &t : model.graph().initializer()) {
    values += values.empty() ? "<" : ",\n ";
    values += "float[";
    for (int i = 0; i < t.dims_size(); ++i)
      values += (i ? ", " : "") + std::to_string(t.dims(i));
    values += "] " + t.name() + " = {";
    const std::string &raw = t.raw_data();
    for (size_t i = 0; i * sizeof(float) < raw.size(); ++i) {
      float v;
      std::memcpy(&v, raw.data() + i * sizeof(float), sizeof(float));
      char number[32];
      std::snprintf(number, sizeof(number), "%.9g", double(v));
      values += (i ? ", " : "") + std::string(number);
    }
    values += "}";
  }
  // libonnx 1.12 prints a scalar tensor attribute (Clip's bounds) as
  // `float[] {6}`, which its parser refuses; it reads `float {6}`.
  for (size_t at = text.find("[] {"); at != std::string::npos;
       at = text.find("[] {", at))
    text.replace(at, 2, "");
  if (!values.empty()) {
    // After the signature's closing parenthesis, before the body's brace.
    size_t brace = text.find(") {");
    text.insert(brace + 1, "\n" + values + ">\n");
  }
  os << "<ir_version: " << kIrVersion << ", opset_import: [\"\" : " << kOpset
     << "]>\n"
     << text << "\n";
}

LogicalResult Exporter::finish(llvm::raw_ostream &os) {
  // The logits under the name "logits": the writer's output renamed.
  FailureOr<std::string> y = operand(forward, logits, identity(2));
  if (failed(y))
    return failure();
  std::string name = *y;
  if (name != "logits" && !initializers.count(name) && name != "images") {
    for (onnx::NodeProto &node : *graph->mutable_node()) {
      for (std::string &input : *node.mutable_input())
        if (input == name)
          input = "logits";
      for (std::string &output : *node.mutable_output())
        if (output == name)
          output = "logits";
    }
  } else if (name != "logits") {
    onnx::NodeProto *node = graph->add_node();
    node->set_op_type("Identity");
    node->add_input(name);
    node->add_output("logits");
  }
  SmallVector<int64_t> logitsShape(shapeOf(logits));
  logitsShape[0] = ShapedType::kDynamic;
  setTensorType(graph->add_output(), "logits", logitsShape);

  std::string error;
  if (!callOnnx([&] { onnx::checker::check_model(model); }, error))
    return emitError(module.getLoc()) << "the ONNX checker rejects the "
                                         "exported model: "
                                      << error;
  // Strict: a node whose shapes do not infer, or an inferred output shape
  // other than the one declared, is an exporter error.
  onnx::ShapeInferenceOptions inference(/*check_type=*/true,
                                        /*strict_mode=*/1);
  if (!callOnnx(
          [&] {
            onnx::shape_inference::InferShapes(
                model, onnx::OpSchemaRegistry::Instance(), inference);
          },
          error))
    return emitError(module.getLoc()) << "ONNX shape inference fails on "
                                         "the exported model: "
                                      << error;
  if (options.text) {
    printText(os);
    return success();
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes))
    return emitError(module.getLoc()) << "the model does not serialize "
                                         "(over protobuf's 2 GiB limit?)";
  os.write(bytes.data(), bytes.size());
  return success();
}

LogicalResult Exporter::run(llvm::raw_ostream &os) {
  if (failed(findGraph()) || failed(collect()) || failed(loadWeights()))
    return failure();
  model.set_ir_version(kIrVersion);
  model.set_producer_name("kiln");
  onnx::OperatorSetIdProto *opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  auto addMetadata = [&](StringRef key, StringRef value) {
    onnx::StringStringEntryProto *entry = model.add_metadata_props();
    entry->set_key(key.str());
    entry->set_value(value.str());
  };
  addMetadata("kiln_weights",
              options.weights.empty()
                  ? "initializers, seed " + std::to_string(options.seed)
                  : options.weights);
  if (!weightsStep.empty())
    addMetadata("kiln_step", weightsStep);
  graph = model.mutable_graph();
  // The module's name as an identifier of ONNX's textual syntax.
  std::string name =
      module.getSymName() ? module.getSymName()->str() : std::string("kiln");
  for (char &ch : name)
    if (!llvm::isAlnum(ch) && ch != '_')
      ch = '_';
  graph->set_name(name);
  SmallVector<int64_t> imageShape = permuted(shapeOf(images), kNchw);
  imageShape[0] = ShapedType::kDynamic;
  setTensorType(graph->add_input(), "images", imageShape);
  usedNames.insert("images");
  usedNames.insert("logits");
  define(images, "images", kNchw);
  for (Operation *op : graphOps)
    if (failed((this->*(handlers().find(op->getName().getStringRef())->second))(
            op)))
      return failure();
  return finish(os);
}

LogicalResult exportOnnx(ModuleOp module, const OnnxExportOptions &options,
                         llvm::raw_ostream &os) {
  return Exporter(module, options).run(os);
}

} // namespace kiln
