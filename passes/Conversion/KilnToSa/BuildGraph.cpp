//===- BuildGraph.cpp - The planner's graph of a kiln training step -------===//

#include "KilnToSa.h"

#include "dialects/Kiln/IR/InitialValue.h"
#include "dialects/Kiln/IR/KilnOps.h"
#include "passes/Analysis/LayerNames.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cstring>
#include <optional>

using namespace mlir;

namespace kiln::sa {

namespace {

class GraphBuilder {
public:
  GraphBuilder(ModuleOp module, func::FuncOp step, const GraphOptions &options,
               Graph &g)
      : module(module), step(step), options(options), g(g) {}

  LogicalResult run();

private:
  FailureOr<int> tensorOf(Value v) {
    auto it = values.find(v);
    if (it == values.end())
      return emitError(v.getLoc(), "kiln-convert-to-sa: value has no tensor");
    return it->second;
  }
  FailureOr<Tensor> newTensor(Value v, TensorKind kind, bool activation);
  LogicalResult addNode(Operation *op, Node node, bool activationResults);
  /// addNode for the results `results` of `op` (a fused op split in nodes).
  LogicalResult addNode(Operation *op, Node node, bool activationResults,
                        ValueRange results);
  /// An f32 [2, channels] temporary the IR does not have: per-channel values
  /// one node hands to another (fused batch norm's statistics, scale and
  /// shift).
  int addHiddenTensor(int64_t channels);
  LogicalResult lower(Operation *op);

  // The steps of run().
  LogicalResult addVariables();
  LogicalResult findStemInput();
  LogicalResult addArguments();
  LogicalResult lowerBody(Block &body);
  LogicalResult markResults(Block &body);
  LogicalResult addAssignments(Block &body);
  bool assignsInPlace(Block &body, AssignOp assign, Operation *producer,
                      int val);
  void setBatch();

  // The steps of lower(), one per op family.
  LogicalResult addInputs(Node &n, ValueRange operands);
  LogicalResult addNodeOf(Operation *op, Node n, bool activationResults);
  LogicalResult lowerRead(ReadOp read);
  LogicalResult lowerConstant(arith::ConstantOp c);
  LogicalResult lowerReshape(ReshapeOp r);
  LogicalResult lowerConv(Conv2DOp conv);
  LogicalResult lowerConv(Conv2DBackwardDataOp conv);
  LogicalResult lowerConv(Conv2DBackwardFilterOp conv);
  LogicalResult lowerBatchNorm(BatchNormTrainOp bn);
  LogicalResult lowerBatchNorm(BatchNormBackwardOp bn);
  LogicalResult lowerBatchNorm(FusedConv2DBatchNormTrainOp bn);
  LogicalResult addBatchNormTrain(Operation *op, Node n, ValueRange results,
                                  Value batchMean);
  template <typename PoolOp> LogicalResult lowerPool(PoolOp p, NodeKind kind);
  LogicalResult lowerDense(DenseOp d);
  LogicalResult lowerMatmul(MatmulOp m);
  template <typename LossOp> LogicalResult lowerLoss(LossOp l, NodeKind kind);
  LogicalResult lowerSgd(SgdUpdateOp u);
  LogicalResult lowerLars(LarsUpdateOp u);
  LogicalResult lowerLearningRate(LearningRateOp lr);
  LogicalResult lowerAllReduce(AllReduceOp ar);
  LogicalResult lowerActivation(Operation *op, ActivationKind kind,
                                NodeKind nodeKind);
  LogicalResult lowerBroadcast(BroadcastBinaryOp b);
  LogicalResult lowerBroadcast(BroadcastBinaryBackwardOp b);
  LogicalResult lowerDropout(DropoutOp d);
  LogicalResult lowerMovement(Operation *op);
  LogicalResult lowerFused(FusedElementwiseOp f);
  std::string layerFromRead(Value v) {
    // Through the precision casts of --kiln-bf16.
    while (auto cast = v.getDefiningOp<CastOp>())
      v = cast.getInput();
    if (auto read = v.getDefiningOp<ReadOp>())
      return layerOfVariable(read.getVariable()).str();
    return "";
  }
  std::string layerOf(Value v) {
    std::string l = layerFromRead(v);
    if (!l.empty())
      return l;
    auto it = values.find(v);
    if (it != values.end() && size_t(it->second) < layers.size())
      return layers[size_t(it->second)];
    return "";
  }

  ModuleOp module;
  func::FuncOp step;
  const GraphOptions &options;
  Graph &g;
  llvm::DenseMap<Value, int> values;
  llvm::StringMap<int> variables;
  /// The layer of the node that produced each tensor.
  std::vector<std::string> layers;
  llvm::DenseMap<Operation *, int64_t> position;
  /// Forward convolutions by (input, filter): their layer, for the filter
  /// gradient.
  llvm::DenseMap<Value, std::string> convLayerByInput;
  /// Training batch norms by their batch mean: the [2, C] tensor of the
  /// scale and shift they normalized with, for a fused backward's relu mask.
  llvm::DenseMap<Value, int> scaleShiftByMean;
  Value stemInput;
  /// The step's layers by the rule every target shares (built on first use).
  std::optional<LayerNames> layerNames;
};

fb::DType dtypeOf(Type t) {
  if (t.isBF16())
    return fb::DType::BF16;
  if (t.isInteger())
    return fb::DType::I32;
  return fb::DType::F32;
}

FailureOr<Tensor> GraphBuilder::newTensor(Value v, TensorKind kind,
                                          bool activation) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return emitError(v.getLoc(), "kiln-convert-to-sa: needs static tensor "
                                 "shapes (run --kiln-specialize-batch)");
  Tensor t;
  t.shape.assign(type.getShape().begin(), type.getShape().end());
  t.dtype = dtypeOf(type.getElementType());
  t.kind = kind;
  if (activation && type.getRank() == 4 && t.dtype == fb::DType::F32)
    t.dtype = options.activationType;
  return t;
}

LogicalResult GraphBuilder::addNode(Operation *op, Node node,
                                    bool activationResults) {
  return addNode(op, std::move(node), activationResults, op->getResults());
}

int GraphBuilder::addHiddenTensor(int64_t channels) {
  Tensor t;
  t.shape = {2, channels};
  t.name = "t" + std::to_string(g.tensors.size());
  int id = g.addTensor(t);
  layers.resize(g.tensors.size());
  return id;
}

LogicalResult GraphBuilder::addNode(Operation *op, Node node,
                                    bool activationResults,
                                    ValueRange results) {
  if (node.opName.empty())
    node.opName = op->getName().stripDialect().str();
  for (Value r : results) {
    FailureOr<Tensor> t = newTensor(r, TensorKind::Temp, activationResults);
    if (failed(t))
      return failure();
    t->name = "t" + std::to_string(g.tensors.size());
    int id = g.addTensor(*t);
    values[r] = id;
    node.outputs.push_back(id);
  }
  // The shared rule names the node, so that kiln-sim's reports and the x86
  // profile name an op alike; what it leaves unnamed keeps the fallbacks.
  if (!layerNames)
    layerNames.emplace(step.front());
  if (StringRef layer = layerNames->lookup(op); !layer.empty())
    node.layer = layer.str();
  if (node.layer.empty() && op->getNumOperands() > 0)
    node.layer = layerOf(op->getOperand(0));
  if (node.layer.empty())
    node.layer = "step";
  layers.resize(g.tensors.size());
  for (int id : node.outputs)
    layers[size_t(id)] = node.layer;
  g.nodes.push_back(std::move(node));
  return success();
}

template <typename T> std::array<int64_t, 2> pair(T values) {
  return {values[0], values[1]};
}
template <typename T> std::array<int64_t, 4> quad(T values) {
  return {values[0], values[1], values[2], values[3]};
}

/// Sets the strides, padding and dilations of a convolution node.
template <typename ConvOp> void setConvAttrs(Node &n, ConvOp conv) {
  n.strides = pair(conv.getStrides());
  n.padding = quad(conv.getPadding());
  n.dilations = pair(conv.getDilations());
  n.groups = int64_t(conv.getGroups());
}

/// Appends the tensors of `operands` to `n`'s inputs.
LogicalResult GraphBuilder::addInputs(Node &n, ValueRange operands) {
  for (Value v : operands) {
    FailureOr<int> id = tensorOf(v);
    if (failed(id))
      return failure();
    n.inputs.push_back(*id);
  }
  return success();
}

/// Adds `n` with all of `op`'s operands as its inputs.
LogicalResult GraphBuilder::addNodeOf(Operation *op, Node n,
                                      bool activationResults) {
  if (failed(addInputs(n, op->getOperands())))
    return failure();
  return addNode(op, n, activationResults);
}

LogicalResult GraphBuilder::lowerRead(ReadOp read) {
  auto it = variables.find(read.getVariable());
  if (it == variables.end())
    return read.emitError("kiln-convert-to-sa: unknown variable");
  values[read.getResult()] = it->second;
  return success();
}

LogicalResult GraphBuilder::lowerConstant(arith::ConstantOp c) {
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense)
    return c.emitError("kiln-convert-to-sa: unsupported constant");
  FailureOr<Tensor> t = newTensor(c.getResult(), TensorKind::Constant, false);
  if (failed(t))
    return failure();
  t->name = "const" + std::to_string(g.tensors.size());
  for (APFloat v : dense.getValues<APFloat>())
    t->data.push_back(float(v.convertToDouble()));
  values[c.getResult()] = g.addTensor(*t);
  return success();
}

/// A reshape is no node: its result aliases its input.
LogicalResult GraphBuilder::lowerReshape(ReshapeOp r) {
  FailureOr<int> in = tensorOf(r.getInput());
  if (failed(in))
    return failure();
  FailureOr<Tensor> t = newTensor(r.getResult(), TensorKind::Temp, false);
  if (failed(t))
    return failure();
  t->name = "t" + std::to_string(g.tensors.size());
  t->dtype = g.tensors[size_t(*in)].dtype;
  t->aliasOf = *in;
  values[r.getResult()] = g.addTensor(*t);
  layers.resize(g.tensors.size());
  return success();
}

LogicalResult GraphBuilder::lowerConv(Conv2DOp conv) {
  // --kiln-fuse, which folds a bias into a convolution, is x86-only.
  if (conv.getBias())
    return conv.emitError("kiln-convert-to-sa: 'kiln.conv2d' with a fused "
                          "bias is not supported on the systolic target; "
                          "convert the unfused step");
  Node n{NodeKind::Conv2d};
  setConvAttrs(n, conv);
  n.layer = layerFromRead(conv.getFilter());
  n.spaceToDepth = stemInput && conv.getInput() == stemInput;
  convLayerByInput[conv.getInput()] = n.layer;
  return addNodeOf(conv, n, true);
}

LogicalResult GraphBuilder::lowerConv(Conv2DBackwardDataOp conv) {
  Node n{NodeKind::Conv2dBackwardData};
  setConvAttrs(n, conv);
  n.layer = layerFromRead(conv.getFilter());
  return addNodeOf(conv, n, true);
}

LogicalResult GraphBuilder::lowerConv(Conv2DBackwardFilterOp conv) {
  Node n{NodeKind::Conv2dBackwardFilter};
  setConvAttrs(n, conv);
  n.layer = convLayerByInput.lookup(conv.getInput());
  n.spaceToDepth = stemInput && conv.getInput() == stemInput;
  return addNodeOf(conv, n, false);
}

/// Adds a training batch norm node whose inputs `n` has up to the running
/// variance (its residual, then its statistics tensor, after them), with
/// the scale-and-shift output a fused backward of `batchMean` needs.
LogicalResult GraphBuilder::addBatchNormTrain(Operation *op, Node n,
                                              ValueRange results,
                                              Value batchMean) {
  bool masked = llvm::any_of(batchMean.getUsers(), [](Operation *user) {
    auto back = dyn_cast<BatchNormBackwardOp>(user);
    return back && back.getReluOffset();
  });
  if (failed(addNode(op, n, true, results)))
    return failure();
  if (masked) {
    Node &added = g.nodes.back();
    int64_t c = g.tensors[size_t(added.inputs[1])].numElements();
    added.scaleShift = addHiddenTensor(c);
    added.outputs.push_back(added.scaleShift);
    scaleShiftByMean[batchMean] = added.scaleShift;
  }
  return success();
}

LogicalResult GraphBuilder::lowerBatchNorm(BatchNormTrainOp bn) {
  Node n{NodeKind::BatchNormTrain};
  n.epsilon = bn.getEpsilonAttr().getValueAsDouble();
  n.momentum = bn.getMomentumAttr().getValueAsDouble();
  n.layer = layerFromRead(bn.getScale());
  n.fuseRelu = bn.getRelu();
  if (failed(addInputs(n, bn->getOperands())))
    return failure();
  if (bn.getResidual())
    n.residual = n.inputs[5];
  return addBatchNormTrain(bn, n, bn->getResults(), bn.getBatchMean());
}

/// The convolution, whose epilogue accumulates the channel sums and sums of
/// squares of its (rounded) output into a [2, C] tensor, then the batch
/// norm, which starts from them.
LogicalResult GraphBuilder::lowerBatchNorm(FusedConv2DBatchNormTrainOp bn) {
  Node conv{NodeKind::Conv2d};
  conv.strides = pair(bn.getStrides());
  conv.padding = quad(bn.getPadding());
  conv.dilations = pair(bn.getDilations());
  conv.opName = "conv2d";
  conv.spaceToDepth = stemInput && bn.getInput() == stemInput;
  convLayerByInput[bn.getInput()] = layerFromRead(bn.getFilter());
  if (failed(addInputs(conv, {bn.getInput(), bn.getFilter()})) ||
      failed(addNode(bn, conv, true, bn.getConvOutput())))
    return failure();
  Node &added = g.nodes.back();
  if (std::string l = layerFromRead(bn.getFilter()); !l.empty())
    added.layer = l;
  int64_t c = cast<ShapedType>(bn.getScale().getType()).getNumElements();
  added.moments = addHiddenTensor(c);
  added.outputs.push_back(added.moments);

  Node n{NodeKind::BatchNormTrain};
  n.epsilon = bn.getEpsilonAttr().getValueAsDouble();
  n.momentum = bn.getMomentumAttr().getValueAsDouble();
  n.opName = "batch_norm_train";
  n.fuseRelu = bn.getRelu();
  n.moments = added.moments;
  if (failed(addInputs(n, {bn.getConvOutput(), bn.getScale(), bn.getOffset(),
                           bn.getRunningMean(), bn.getRunningVar()})))
    return failure();
  if (bn.getResidual()) {
    if (failed(addInputs(n, bn.getResidual())))
      return failure();
    n.residual = n.inputs.back();
  }
  n.inputs.push_back(n.moments);
  if (failed(addBatchNormTrain(bn, n, bn->getResults().drop_front(),
                               bn.getBatchMean())))
    return failure();
  if (std::string l = layerFromRead(bn.getScale()); !l.empty())
    g.nodes.back().layer = l;
  return success();
}

LogicalResult GraphBuilder::lowerBatchNorm(BatchNormBackwardOp bn) {
  Node n{NodeKind::BatchNormBackward};
  n.epsilon = bn.getEpsilonAttr().getValueAsDouble();
  n.layer = layerFromRead(bn.getScale());
  if (!bn.getReluOffset())
    return addNodeOf(bn, n, true);
  // The relu mask of the forward output is recomputed from x with the
  // forward's own scale and shift (bit for bit its output's sign).
  auto it = scaleShiftByMean.find(bn.getBatchMean());
  if (it == scaleShiftByMean.end())
    return bn.emitError("kiln-convert-to-sa: batch norm backward with a "
                        "relu mask whose batch statistics come from no "
                        "training batch norm of this step");
  if (failed(addInputs(n, {bn.getOutputGrad(), bn.getInput(), bn.getScale(),
                           bn.getBatchMean(), bn.getBatchVar()})))
    return failure();
  n.scaleShift = it->second;
  n.inputs.push_back(n.scaleShift);
  return addNode(bn, n, true);
}

/// The windowed pools and their gradients.
template <typename PoolOp>
LogicalResult GraphBuilder::lowerPool(PoolOp p, NodeKind kind) {
  Node n{kind};
  n.ceilMode = p.getCeilMode();
  n.window = pair(p.getWindow());
  n.strides = pair(p.getStrides());
  n.padding = quad(p.getPadding());
  return addNodeOf(p, n, true);
}

LogicalResult GraphBuilder::lowerDense(DenseOp d) {
  Node n{NodeKind::Matmul};
  n.layer = layerFromRead(d.getWeight());
  return addNodeOf(d, n, false);
}

LogicalResult GraphBuilder::lowerMatmul(MatmulOp m) {
  Node n{NodeKind::Matmul};
  n.transposeA = m.getTransposeLhs();
  n.transposeB = m.getTransposeRhs();
  n.layer = layerFromRead(m.getRhs());
  return addNodeOf(m, n, false);
}

/// The softmax cross entropy and its gradient.
template <typename LossOp>
LogicalResult GraphBuilder::lowerLoss(LossOp l, NodeKind kind) {
  Node n{kind};
  n.labelSmoothing = l.getLabelSmoothingAttr().getValueAsDouble();
  n.layer = "loss";
  return addNodeOf(l, n, false);
}

LogicalResult GraphBuilder::lowerSgd(SgdUpdateOp u) {
  Node n{NodeKind::SgdUpdate};
  n.momentum = u.getMomentumAttr().getValueAsDouble();
  n.weightDecay = u.getWeightDecayAttr().getValueAsDouble();
  n.nesterov = u.getNesterov();
  n.layer = "optimizer";
  return addNodeOf(u, n, false);
}

LogicalResult GraphBuilder::lowerLars(LarsUpdateOp u) {
  // The device's LarsUpdate instruction is the tf2 form, and its skip
  // flag drops the decay with the trust ratio (MLPerf TF2's skip list).
  if (u.getForm() != LarsForm::Tf2)
    return u.emitError("kiln-convert-to-sa: the systolic target runs "
                       "LARS in the tf2 form only, not ")
           << stringifyLarsForm(u.getForm())
           << " (compile with --lars-form=tf2)";
  if (u.getSkipAdaptation() && !u.getWeightDecayAttr().getValue().isZero())
    return u.emitError("kiln-convert-to-sa: the systolic target's LARS "
                       "cannot decay a parameter that skips the trust "
                       "ratio (weight_decay ")
           << u.getWeightDecayAttr().getValueAsDouble()
           << " with skip_adaptation; list its kind in both "
              "--no-decay and --lars-skip)";
  Node n{NodeKind::LarsUpdate};
  n.momentum = u.getMomentumAttr().getValueAsDouble();
  n.weightDecay = u.getWeightDecayAttr().getValueAsDouble();
  n.eta = u.getEtaAttr().getValueAsDouble();
  n.epsilon = u.getEpsilonAttr().getValueAsDouble();
  n.skip = u.getSkipAdaptation();
  n.layer = "optimizer";
  return addNodeOf(u, n, false);
}

LogicalResult GraphBuilder::lowerLearningRate(LearningRateOp lr) {
  Node n{NodeKind::LearningRate};
  n.schedule = int64_t(lr.getSchedule());
  n.layer = "optimizer";
  return addNodeOf(lr, n, false);
}

LogicalResult GraphBuilder::lowerAllReduce(AllReduceOp ar) {
  Node n{NodeKind::AllReduce};
  n.layer = "allreduce";
  if (failed(addInputs(n, ar.getGradients())))
    return failure();
  // In place: each result is its operand's storage.
  for (auto [in, out] : llvm::zip(ar.getGradients(), ar.getResults()))
    values[out] = values[in];
  g.nodes.push_back(n);
  g.nodes.back().opName = "allreduce";
  return success();
}

LogicalResult GraphBuilder::lowerActivation(Operation *op,
                                            ActivationKind kind,
                                            NodeKind nodeKind) {
  Node n{nodeKind};
  // kiln/ref/activation.h numbers the kinds as the dialect does.
  n.activation = int64_t(kind);
  return addNodeOf(op, n, true);
}

LogicalResult GraphBuilder::lowerBroadcast(BroadcastBinaryOp b) {
  Node n{NodeKind::BroadcastBinary};
  n.binaryKind = int64_t(b.getKind());
  return addNodeOf(b, n, true);
}

/// Its inputs are dy and the forward operands the formula reads, in order.
LogicalResult GraphBuilder::lowerBroadcast(BroadcastBinaryBackwardOp b) {
  Node n{NodeKind::BroadcastBinaryBackward};
  n.binaryKind = int64_t(b.getKind());
  n.wrtRhs = b.getWrt() == BinaryOperand::Rhs;
  return addNodeOf(b, n, true);
}

LogicalResult GraphBuilder::lowerDropout(DropoutOp d) {
  Node n{NodeKind::Dropout};
  n.ratio = d.getRatioAttr().getValueAsDouble();
  n.seed = int64_t(d.getSeed());
  n.stream = int64_t(d.getStream());
  return addNodeOf(d, n, true);
}

/// A chain of elementwise ops, run on each tile while it is on chip; every
/// value keeps the element type it has in the IR (a cast's result its own,
/// an activation's the activation storage type), so intermediates round as
/// the unfused ops' results do.
LogicalResult GraphBuilder::lowerFused(FusedElementwiseOp f) {
  Node n{NodeKind::FusedElementwise};
  if (failed(addInputs(n, f.getInputs())))
    return failure();
  Block &body = f.getBody().front();
  llvm::DenseMap<Value, int> chain;
  for (BlockArgument a : body.getArguments()) {
    chain[a] = int(chain.size());
    n.chainTypes.push_back(
        g.tensors[size_t(g.root(n.inputs[a.getArgNumber()]))].dtype);
  }
  for (Operation &op : body.without_terminator()) {
    std::optional<Node> step =
        llvm::TypeSwitch<Operation *, std::optional<Node>>(&op)
            .Case([](ReluOp) { return Node{NodeKind::Relu}; })
            .Case([](ReluBackwardOp) { return Node{NodeKind::ReluBackward}; })
            .Case([](AddOp) { return Node{NodeKind::Add}; })
            .Case([](CastOp) { return Node{NodeKind::Copy}; })
            .Case([](ActivationOp a) {
              Node s{NodeKind::Activation};
              s.activation = int64_t(a.getKind());
              return s;
            })
            .Case([](ActivationBackwardOp a) {
              Node s{NodeKind::ActivationBackward};
              s.activation = int64_t(a.getKind());
              return s;
            })
            .Default([](Operation *) { return std::nullopt; });
    if (!step || op.getNumResults() != 1)
      return op.emitError("kiln-convert-to-sa: '")
             << op.getName()
             << "' in a kiln.fused_elementwise is not supported on the "
                "systolic target";
    for (Value v : op.getOperands())
      step->inputs.push_back(chain.lookup(v));
    FailureOr<Tensor> t =
        newTensor(op.getResult(0), TensorKind::Temp, !isa<CastOp>(op));
    if (failed(t))
      return failure();
    step->outputs.push_back(int(n.chainTypes.size()));
    chain[op.getResult(0)] = int(n.chainTypes.size());
    n.chainTypes.push_back(t->dtype);
    n.body.push_back(std::move(*step));
  }
  for (Value v : body.getTerminator()->getOperands()) {
    int index = chain.lookup(v);
    if (index < int(f.getInputs().size()))
      return f.emitError("kiln-convert-to-sa: a kiln.fused_elementwise that "
                         "yields an operand is not supported");
    n.yields.push_back(index);
  }
  if (failed(addNode(f, n, true)))
    return failure();
  const Node &added = g.nodes.back();
  for (size_t i = 0; i < added.outputs.size(); ++i)
    g.tensors[size_t(added.outputs[i])].dtype =
        added.chainTypes[size_t(added.yields[i])];
  return success();
}

/// Concat, slices, transposes and shuffles: copies between HBM views.
LogicalResult GraphBuilder::lowerMovement(Operation *op) {
  Node n = llvm::TypeSwitch<Operation *, Node>(op)
               .Case([](ConcatOp c) {
                 Node n{NodeKind::Concat};
                 n.axis = int64_t(c.getAxis());
                 return n;
               })
               .Case([](SliceOp s) {
                 Node n{NodeKind::Slice};
                 n.axis = int64_t(s.getAxis());
                 n.start = int64_t(s.getStart());
                 return n;
               })
               .Case([](SliceBackwardOp s) {
                 Node n{NodeKind::SliceBackward};
                 n.axis = int64_t(s.getAxis());
                 n.start = int64_t(s.getStart());
                 return n;
               })
               .Case([](TransposeOp t) {
                 Node n{NodeKind::Transpose};
                 n.permutation.assign(t.getPermutation().begin(),
                                      t.getPermutation().end());
                 return n;
               })
               .Case([](ChannelShuffleOp c) {
                 Node n{NodeKind::ChannelShuffle};
                 n.groups = int64_t(c.getGroups());
                 return n;
               });
  // Moved elements keep their type (activation-type=bf16 included): the
  // result is stored as the first input is.
  if (failed(addNodeOf(op, n, false)))
    return failure();
  const Node &added = g.nodes.back();
  g.tensors[size_t(added.outputs[0])].dtype =
      g.tensors[size_t(g.root(added.inputs[0]))].dtype;
  return success();
}

LogicalResult GraphBuilder::lower(Operation *op) {
  auto simple = [&](NodeKind kind, bool activation) {
    return addNodeOf(op, Node{kind}, activation);
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ReadOp read) { return lowerRead(read); })
      .Case([&](AssignOp) -> LogicalResult {
        return success();
      }) // handled after the walk
      .Case([&](arith::ConstantOp c) { return lowerConstant(c); })
      .Case<Conv2DOp, Conv2DBackwardDataOp, Conv2DBackwardFilterOp>(
          [&](auto conv) { return lowerConv(conv); })
      .Case<BatchNormTrainOp, BatchNormBackwardOp,
            FusedConv2DBatchNormTrainOp>(
          [&](auto bn) { return lowerBatchNorm(bn); })
      .Case([&](ReluOp) { return simple(NodeKind::Relu, true); })
      .Case(
          [&](ReluBackwardOp) { return simple(NodeKind::ReluBackward, true); })
      .Case([&](AddOp) { return simple(NodeKind::Add, true); })
      .Case([&](CastOp) { return simple(NodeKind::Copy, false); })
      .Case([&](ReshapeOp r) { return lowerReshape(r); })
      .Case([&](MaxPoolOp p) { return lowerPool(p, NodeKind::MaxPool); })
      .Case([&](AvgPoolOp p) { return lowerPool(p, NodeKind::AvgPool); })
      .Case([&](MaxPoolBackwardOp p) {
        return lowerPool(p, NodeKind::MaxPoolBackward);
      })
      .Case([&](AvgPoolBackwardOp p) {
        return lowerPool(p, NodeKind::AvgPoolBackward);
      })
      .Case([&](GlobalAvgPoolOp) {
        return simple(NodeKind::GlobalAvgPool, true);
      })
      .Case([&](GlobalAvgPoolBackwardOp) {
        return simple(NodeKind::GlobalAvgPoolBackward, true);
      })
      .Case([&](DenseOp d) { return lowerDense(d); })
      .Case([&](MatmulOp m) { return lowerMatmul(m); })
      .Case([&](ReduceSumOp) { return simple(NodeKind::ReduceSum, false); })
      .Case([&](SoftmaxCrossEntropyOp l) {
        return lowerLoss(l, NodeKind::SoftmaxXent);
      })
      .Case([&](SoftmaxCrossEntropyBackwardOp l) {
        return lowerLoss(l, NodeKind::SoftmaxXentBackward);
      })
      .Case([&](SgdUpdateOp u) { return lowerSgd(u); })
      .Case([&](LarsUpdateOp u) { return lowerLars(u); })
      .Case([&](LearningRateOp lr) { return lowerLearningRate(lr); })
      .Case([&](AllReduceOp ar) { return lowerAllReduce(ar); })
      .Case([&](ActivationOp a) {
        return lowerActivation(a, a.getKind(), NodeKind::Activation);
      })
      .Case([&](ActivationBackwardOp a) {
        return lowerActivation(a, a.getKind(), NodeKind::ActivationBackward);
      })
      .Case([&](BiasAddOp b) {
        // The layer whose bias it is, for the reports.
        Node n{NodeKind::BiasAdd};
        n.layer = layerFromRead(b.getBias());
        return addNodeOf(b, n, true);
      })
      // The bias gradient is a channel sum over the leading dimensions.
      .Case([&](BiasAddBackwardOp) {
        return simple(NodeKind::ReduceSum, false);
      })
      .Case<BroadcastBinaryOp, BroadcastBinaryBackwardOp>(
          [&](auto b) { return lowerBroadcast(b); })
      .Case([&](DropoutOp d) { return lowerDropout(d); })
      .Case<ConcatOp, SliceOp, SliceBackwardOp, TransposeOp,
            ChannelShuffleOp>([&](Operation *m) { return lowerMovement(m); })
      .Case([&](FusedElementwiseOp f) { return lowerFused(f); })
      .Case([&](func::ReturnOp) -> LogicalResult { return success(); })
      .Default([&](Operation *other) -> LogicalResult {
        return other->emitError("kiln-convert-to-sa: '")
               << other->getName()
               << "' is not supported on the systolic target";
      });
}

/// The initializer of a variable's tensor.
LogicalResult setInitializer(VariableOp var, Tensor &t) {
  switch (var.getInit()) {
  case Initializer::Zeros:
    t.init = fb::Init::Zeros;
    break;
  case Initializer::Ones:
    t.init = fb::Init::Ones;
    break;
  case Initializer::HeNormal:
    t.init = fb::Init::HeNormal;
    break;
  case Initializer::Normal:
    t.init = fb::Init::Normal;
    t.initStd =
        var.getStdAttr() ? float(var.getStdAttr().getValueAsDouble()) : 0;
    break;
  case Initializer::Constant: {
    t.init = fb::Init::Value;
    // An imported model's large initializer is a dense_resource: its f32
    // bytes are the data as they are.
    if (auto resource =
            dyn_cast_or_null<DenseResourceElementsAttr>(var.getValueAttr())) {
      llvm::Expected<ArrayRef<char>> bytes = getInitialValueBytes(resource);
      if (!bytes)
        return var.emitError("kiln-convert-to-sa: constant variable: ")
               << llvm::toString(bytes.takeError());
      if (!var.getTensorType().getElementType().isF32())
        return var.emitError("kiln-convert-to-sa: a constant variable's "
                             "dense_resource must be f32");
      t.data.resize(bytes->size() / sizeof(float));
      std::memcpy(t.data.data(), bytes->data(), bytes->size());
      break;
    }
    auto dense = dyn_cast_or_null<DenseElementsAttr>(var.getValueAttr());
    if (!dense)
      return var.emitError("kiln-convert-to-sa: constant variable needs "
                           "dense values");
    for (APFloat v : dense.getValues<APFloat>())
      t.data.push_back(float(v.convertToDouble()));
    if (dense.isSplat())
      t.data.assign(size_t(t.numElements()), t.data.front());
    break;
  }
  case Initializer::Copy:
    return var.emitError("kiln-convert-to-sa: copy variables "
                         "(--kiln-bf16-weight-copies) are for x86; the "
                         "device program casts the weights itself");
  }
  return success();
}

/// A tensor for each of the module's variables.
LogicalResult GraphBuilder::addVariables() {
  for (auto var : module.getOps<VariableOp>()) {
    Tensor t;
    RankedTensorType type = var.getTensorType();
    t.shape.assign(type.getShape().begin(), type.getShape().end());
    t.dtype = dtypeOf(type.getElementType());
    if (type.getElementType().isF64())
      t.dtype = fb::DType::F32;
    t.kind = TensorKind::Variable;
    t.name = var.getSymName().str();
    t.variableRole = var.isParameter() ? fb::Role::Parameter : fb::Role::State;
    if (failed(setInitializer(var, t)))
      return failure();
    variables[t.name] = g.addTensor(t);
  }
  return success();
}

/// The stem the space-to-depth rewrite applies to: a 7x7/2 convolution of
/// an image argument with at most 4 channels and even sides.
LogicalResult GraphBuilder::findStemInput() {
  for (BlockArgument arg : step.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || type.getRank() != 4 || type.getDimSize(3) > 4 ||
        type.getDimSize(1) % 2 || type.getDimSize(2) % 2)
      continue;
    bool ok = !arg.use_empty();
    for (Operation *user : arg.getUsers()) {
      // The stem, fused with its batch norm (`fuse`) or not, and its filter
      // gradient.
      ArrayRef<int64_t> strides =
          llvm::TypeSwitch<Operation *, ArrayRef<int64_t>>(user)
              .Case<Conv2DOp, FusedConv2DBatchNormTrainOp,
                    Conv2DBackwardFilterOp>(
                  [](auto conv) { return conv.getStrides(); })
              .Default([](Operation *) { return ArrayRef<int64_t>(); });
      ok &= strides.size() == 2 && strides[0] == 2 && strides[1] == 2;
    }
    if (ok)
      stemInput = arg;
  }
  if (!stemInput)
    return step.emitError("kiln-convert-to-sa: space-to-depth-stem found no "
                          "stride-2 stem convolution of an image argument");
  return success();
}

/// An input tensor for each of the step's arguments.
LogicalResult GraphBuilder::addArguments() {
  for (BlockArgument arg : step.getArguments()) {
    FailureOr<Tensor> t = newTensor(arg, TensorKind::Input, false);
    if (failed(t))
      return failure();
    t->name = "input" + std::to_string(arg.getArgNumber());
    t->argument = int(arg.getArgNumber());
    if (arg == stemInput) {
      t->shape = {t->shape[0], t->shape[1] / 2, t->shape[2] / 2,
                  4 * t->shape[3]};
      t->hostLayout = fb::HostLayout::SpaceToDepth2;
    }
    values[arg] = g.addTensor(*t);
  }
  return success();
}

/// Numbers the body's ops, then lowers each in order.
LogicalResult GraphBuilder::lowerBody(Block &body) {
  int64_t index = 0;
  for (Operation &op : body)
    position[&op] = index++;
  for (Operation &op : body)
    if (failed(lower(&op)))
      return failure();
  return success();
}

/// Numbers the tensors the step returns.
LogicalResult GraphBuilder::markResults(Block &body) {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    FailureOr<int> id = tensorOf(v);
    if (failed(id))
      return failure();
    Tensor &t = g.tensors[size_t(g.root(*id))];
    if (t.kind != TensorKind::Temp || t.result >= 0) {
      return ret.emitError("kiln-convert-to-sa: result ")
             << i << " must be a value computed by the step";
    }
    t.result = int(i);
  }
  return success();
}

/// Whether `assign` can write its value in place: `producer` is an update
/// that computes into fresh storage and no read of the variable comes after
/// it.
bool GraphBuilder::assignsInPlace(Block &body, AssignOp assign,
                                  Operation *producer, int val) {
  bool inPlace =
      producer &&
      isa<SgdUpdateOp, LarsUpdateOp, BatchNormTrainOp,
          FusedConv2DBatchNormTrainOp>(producer) &&
      g.tensors[size_t(val)].aliasOf < 0 && g.tensors[size_t(val)].result < 0;
  if (inPlace) {
    for (auto read : body.getOps<ReadOp>()) {
      if (read.getVariable() != assign.getVariable())
        continue;
      for (Operation *user : read->getUsers())
        if (position.lookup(user) > position.lookup(producer))
          inPlace = false;
    }
  }
  return inPlace;
}

/// Assignments: in place when no read of the variable comes after the
/// producer, otherwise a copy at the end of the step.
LogicalResult GraphBuilder::addAssignments(Block &body) {
  for (auto assign : body.getOps<AssignOp>()) {
    int var = variables.lookup(assign.getVariable());
    FailureOr<int> val = tensorOf(assign.getValue());
    if (failed(val))
      return failure();
    if (g.root(*val) == var)
      continue;
    Operation *producer = assign.getValue().getDefiningOp();
    if (assignsInPlace(body, assign, producer, *val)) {
      g.tensors[size_t(*val)].aliasOf = var;
      continue;
    }
    Node copy{NodeKind::Copy};
    copy.inputs = {*val};
    copy.outputs = {var};
    copy.opName = "assign";
    copy.layer = layerOfVariable(assign.getVariable()).str();
    g.nodes.push_back(copy);
  }
  return success();
}

/// The batch: the leading dimension of the first image-like argument.
void GraphBuilder::setBatch() {
  for (const Tensor &t : g.tensors)
    if (t.kind == TensorKind::Input && t.shape.size() == 4) {
      g.batch = t.shape[0];
      break;
    }
}

LogicalResult GraphBuilder::run() {
  g.name = module.getSymName() ? module.getSymName()->str() : "program";
  if (failed(addVariables()))
    return failure();
  if (options.spaceToDepthStem && failed(findStemInput()))
    return failure();
  if (failed(addArguments()))
    return failure();
  layers.resize(g.tensors.size());
  Block &body = step.getBody().front();
  if (failed(lowerBody(body)) || failed(markResults(body)) ||
      failed(addAssignments(body)))
    return failure();
  setBatch();
  return success();
}

} // namespace

LogicalResult buildGraph(ModuleOp module, func::FuncOp step,
                         const GraphOptions &options, Graph &graph) {
  return GraphBuilder(module, step, options, graph).run();
}

} // namespace kiln::sa
