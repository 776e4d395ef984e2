//===- Planner.cpp - Memory homes, staging and the lowering driver --------===//

#include "PlannerImpl.h"

#include <algorithm>

namespace kiln::sa {

namespace {

constexpr int64_t kAlign = 64;

// How far to look for a partner: the filter gradient and the next
// batch-norm backward have the gradient's cast between them, a normalizing
// pass and the next convolution its filter's cast.
constexpr size_t kLookahead = 3;

// The share of a staging half the vector op of a step of three takes.
constexpr double kPipelinedVectorShare = 0.25;

int64_t alignUp(int64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

const char *nodeName(NodeKind k) {
  switch (k) {
  case NodeKind::Conv2d:
    return "conv2d";
  case NodeKind::Conv2dBackwardData:
    return "conv2d_backward_data";
  case NodeKind::Conv2dBackwardFilter:
    return "conv2d_backward_filter";
  case NodeKind::Matmul:
    return "matmul";
  case NodeKind::BatchNormTrain:
    return "batch_norm_train";
  case NodeKind::BatchNormBackward:
    return "batch_norm_backward";
  case NodeKind::Relu:
    return "relu";
  case NodeKind::ReluBackward:
    return "relu_backward";
  case NodeKind::Add:
    return "add";
  case NodeKind::Copy:
    return "copy";
  case NodeKind::MaxPool:
    return "max_pool";
  case NodeKind::MaxPoolBackward:
    return "max_pool_backward";
  case NodeKind::AvgPool:
    return "avg_pool";
  case NodeKind::AvgPoolBackward:
    return "avg_pool_backward";
  case NodeKind::GlobalAvgPool:
    return "global_avg_pool";
  case NodeKind::GlobalAvgPoolBackward:
    return "global_avg_pool_backward";
  case NodeKind::ReduceSum:
    return "reduce_sum";
  case NodeKind::SoftmaxXent:
    return "softmax_cross_entropy";
  case NodeKind::SoftmaxXentBackward:
    return "softmax_cross_entropy_backward";
  case NodeKind::SgdUpdate:
    return "sgd_update";
  case NodeKind::LarsUpdate:
    return "lars_update";
  case NodeKind::LearningRate:
    return "learning_rate";
  case NodeKind::AllReduce:
    return "allreduce";
  case NodeKind::Activation:
    return "activation";
  case NodeKind::ActivationBackward:
    return "activation_backward";
  case NodeKind::BiasAdd:
    return "bias_add";
  case NodeKind::BroadcastBinary:
    return "broadcast_binary";
  case NodeKind::BroadcastBinaryBackward:
    return "broadcast_binary_backward";
  case NodeKind::Dropout:
    return "dropout";
  case NodeKind::Concat:
    return "concat";
  case NodeKind::Slice:
    return "slice";
  case NodeKind::SliceBackward:
    return "slice_backward";
  case NodeKind::Transpose:
    return "transpose";
  case NodeKind::ChannelShuffle:
    return "channel_shuffle";
  case NodeKind::FusedElementwise:
    return "fused_elementwise";
  }
  return "?";
}

} // namespace

Status Planner::assignHomes() {
  size_t n = g.tensors.size();
  homes.assign(n, {});
  // Live ranges (in nodes) of every storage root.
  std::vector<int64_t> first(n, INT64_MAX), last(n, -1);
  std::vector<bool> strided(n, false);
  for (size_t index = 0; index < g.nodes.size(); ++index) {
    const Node &node = g.nodes[index];
    int64_t i = position[index];
    // Data movement copies between HBM views, and grouped convolutions on
    // the MXU read and write one group's channels through strided views,
    // which only DMAs have: their operands live in HBM.
    if (isMovement(node.kind) || (isConv(node.kind) && node.groups > 1 &&
                                  !depthwise(node))) {
      for (int id : node.inputs)
        strided[size_t(g.root(id))] = true;
      for (int id : node.outputs)
        strided[size_t(g.root(id))] = true;
    }
    for (int id : node.inputs) {
      int r = g.root(id);
      first[size_t(r)] = std::min<int64_t>(first[size_t(r)], int64_t(i));
      last[size_t(r)] = std::max<int64_t>(last[size_t(r)], int64_t(i));
    }
    for (int id : node.outputs) {
      int r = g.root(id);
      first[size_t(r)] = std::min<int64_t>(first[size_t(r)], int64_t(i));
      last[size_t(r)] = std::max<int64_t>(last[size_t(r)], int64_t(i));
      // Strided backward-data writes and the space-to-depth filter
      // gradient's unfolding need a DMA's strided view.
      if ((node.kind == NodeKind::Conv2dBackwardData &&
           (node.strides[0] > 1 || node.strides[1] > 1)) ||
          (node.kind == NodeKind::Conv2dBackwardFilter && node.spaceToDepth))
        strided[size_t(r)] = true;
    }
  }
  struct Placed {
    int64_t lo, hi, first, last;
  };
  std::vector<Placed> placed;
  for (size_t id = 0; id < n; ++id) {
    const Tensor &ten = g.tensors[id];
    if (ten.aliasOf >= 0)
      continue;
    sim::BufferSpec s;
    s.name = ten.name;
    s.dtype = ten.dtype;
    s.shape = ten.shape; // rank 0 for scalars (the step counter, the loss)
    int64_t size = ten.numElements() * bytes(ten.dtype);
    switch (ten.kind) {
    case TensorKind::Input:
      s.role = fb::Role::Input;
      s.binding = "arg" + std::to_string(ten.argument);
      s.hostLayout = ten.hostLayout;
      break;
    case TensorKind::Variable:
      s.role = ten.variableRole;
      s.binding = ten.name;
      s.init = ten.init;
      s.initStd = ten.initStd;
      s.data = ten.data;
      break;
    case TensorKind::Constant:
      s.role = fb::Role::Constant;
      s.data = ten.data;
      break;
    case TensorKind::Temp:
      if (ten.result >= 0) {
        s.role = fb::Role::Output;
        s.binding = "result" + std::to_string(ten.result);
        break;
      }
      if (opt.allowResident && last[id] >= 0 &&
          ten.channels() <= int64_t(t.arrayCols) && !strided[id] &&
          size <= residentBytes) {
        // First fit among the tensors whose live ranges meet this one's.
        std::vector<Placed> live;
        for (const Placed &p : placed)
          if (p.first <= last[id] && first[id] <= p.last)
            live.push_back(p);
        std::sort(live.begin(), live.end(),
                  [](const Placed &a, const Placed &b) { return a.lo < b.lo; });
        int64_t at = 0;
        for (const Placed &p : live) {
          if (at + size <= p.lo)
            break;
          at = std::max(at, alignUp(p.hi));
        }
        if (at + size <= residentBytes) {
          placed.push_back({at, at + size, first[id], last[id]});
          s.space = fb::Space::OnChip;
          s.offset = at;
          homes[id].onChip = true;
        }
      }
      break;
    }
    homes[id].buffer = b.addBuffer(s);
  }
  return Status::ok();
}

bool Planner::isConv(NodeKind k) {
  return k == NodeKind::Conv2d || k == NodeKind::Conv2dBackwardData ||
         k == NodeKind::Conv2dBackwardFilter;
}

bool Planner::isMovement(NodeKind k) {
  return k == NodeKind::Concat || k == NodeKind::Slice ||
         k == NodeKind::SliceBackward || k == NodeKind::Transpose ||
         k == NodeKind::ChannelShuffle;
}

bool Planner::depthwise(const Node &n) const {
  if (!isConv(n.kind) || n.groups <= 1)
    return false;
  // The filter is the second input (forward, backward data) or the output.
  const Tensor &w = tensor(n.kind == NodeKind::Conv2dBackwardFilter
                               ? n.outputs[0]
                               : n.inputs[1]);
  const Tensor &a = tensor(n.inputs[0]);
  const Tensor &b = tensor(n.kind == NodeKind::Conv2dBackwardFilter
                               ? n.inputs[1]
                               : n.outputs[0]);
  return w.shape.size() == 4 && w.shape[2] == 1 && n.groups == w.shape[3] &&
         a.channels() == n.groups && b.channels() == n.groups;
}

static bool onMatrixUnit(NodeKind k) {
  return Planner::isConv(k) || k == NodeKind::Matmul;
}

static bool streamsThroughVectorUnit(NodeKind k) {
  return k == NodeKind::BatchNormTrain || k == NodeKind::BatchNormBackward ||
         k == NodeKind::FusedElementwise || k == NodeKind::Relu ||
         k == NodeKind::ReluBackward || k == NodeKind::Add ||
         k == NodeKind::Copy;
}

bool Planner::independent(const Node &a, const Node &b) const {
  auto roots = [&](const std::vector<int> &ids) {
    std::vector<int> r;
    for (int id : ids)
      r.push_back(g.root(id));
    return r;
  };
  auto meet = [](const std::vector<int> &x, const std::vector<int> &y) {
    return std::any_of(x.begin(), x.end(), [&](int v) {
      return std::find(y.begin(), y.end(), v) != y.end();
    });
  };
  std::vector<int> ai = roots(a.inputs), ao = roots(a.outputs),
                   bi = roots(b.inputs), bo = roots(b.outputs);
  return !meet(ao, bi) && !meet(ao, bo) && !meet(bo, ai);
}

bool Planner::consumes(const Node &b, const Node &a) const {
  for (int o : a.outputs)
    for (int in : b.inputs)
      if (g.root(o) == g.root(in))
        return true;
  return false;
}

void Planner::addStep(std::vector<size_t> step) {
  for (size_t k : step) {
    done[k] = true;
    position[k] = int64_t(steps.size());
  }
  steps.push_back(std::move(step));
}

void Planner::planSteps() {
  size_t n = g.nodes.size();
  done.assign(n, false);
  position.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    if (done[i])
      continue;
    std::vector<size_t> step = {i};
    const Node &a = g.nodes[i];
    if (opt.interleave && onMatrixUnit(a.kind) && !depthwise(a)) {
      for (size_t j = i + 1; j < n && j <= i + kLookahead; ++j) {
        const Node &b = g.nodes[j];
        if (done[j] || !streamsThroughVectorUnit(b.kind) || !independent(a, b))
          continue;
        // b moves ahead of the nodes between: it must not need them, nor
        // write what they read.
        bool movable = true;
        for (size_t k = i + 1; k < j && movable; ++k)
          movable = done[k] || independent(g.nodes[k], b);
        if (movable) {
          step.push_back(j);
          break;
        }
      }
      if (step.size() == 2 && opt.pipeline && opt.interleavePipelined)
        addPipelinedConsumer(step);
    } else if (opt.pipeline && streamsThroughVectorUnit(a.kind)) {
      for (size_t j = i + 1; j < n && j <= i + kLookahead; ++j) {
        const Node &b = g.nodes[j];
        if (done[j] || !onMatrixUnit(b.kind) || depthwise(b))
          continue;
        if (!consumes(b, a))
          break;
        // The consumer must not write what the producer touches, and the
        // nodes between (a filter's cast) run first: they must neither
        // need the producer nor write what it reads.
        Node outputsOnly(b.kind);
        outputsOnly.outputs = b.outputs;
        bool movable = independent(a, outputsOnly);
        for (size_t k = i + 1; k < j && movable; ++k)
          movable = done[k] || independent(a, g.nodes[k]);
        if (!movable)
          break;
        for (size_t k = i + 1; k < j; ++k)
          if (!done[k])
            addStep({k});
        step.push_back(j);
        break;
      }
    }
    addStep(std::move(step));
  }
}

void Planner::addPipelinedConsumer(std::vector<size_t> &step) {
  size_t i = step[0], j = step[1], n = g.nodes.size();
  const Node &a = g.nodes[i], &producer = g.nodes[j];
  // A batch norm that takes its own sums walks its dx pass backwards: the
  // consumer could only start at its end.
  if (producer.kind != NodeKind::BatchNormBackward ||
      producer.gradSums.sums < 0)
    return;
  for (size_t c = j + 1; c < n && c <= j + kLookahead; ++c) {
    if (done[c])
      continue;
    const Node &consumer = g.nodes[c];
    if (consumer.kind != NodeKind::Conv2dBackwardData ||
        !consumes(consumer, producer))
      return;
    // The consumer moves ahead of the nodes between `a` and the producer,
    // which stay after the step; the nodes between the producer and the
    // consumer (a filter's cast) run before the step: they must not need
    // `a`, the producer or the nodes they pass, nor write what those read.
    Node outputsOnly(consumer.kind);
    outputsOnly.outputs = consumer.outputs;
    bool movable =
        independent(producer, outputsOnly) && independent(a, consumer);
    for (size_t k = i + 1; k < c && movable; ++k) {
      if (done[k] || k == j)
        continue;
      const Node &between = g.nodes[k];
      if (k < j) {
        movable = independent(between, consumer);
        continue;
      }
      movable = independent(between, a) && independent(between, producer);
      for (size_t q = i + 1; q < j && movable; ++q)
        movable = done[q] || independent(g.nodes[q], between);
    }
    if (!movable)
      return;
    for (size_t k = j + 1; k < c; ++k)
      if (!done[k])
        addStep({k});
    step.push_back(c);
    return;
  }
}

void Planner::beginNode(const Node &n, size_t index, int64_t base,
                        int64_t bytes) {
  nodeIndex = index;
  regionBase = base;
  regionBytes = bytes;
  bump = 0;
  slotCount = 0;
  b.beginSourceOp(n.opName.empty() ? nodeName(n.kind) : n.opName, n.layer);
}

Status Planner::slot(const std::string &what, fb::DType dtype, int64_t elems,
                     uint32_t &id) {
  int64_t size = alignUp(std::max<int64_t>(elems, 1) * bytes(dtype));
  if (bump + size > regionBytes)
    return invalidArgumentError(
        "op " + std::to_string(nodeIndex) + " (" + g.nodes[nodeIndex].layer +
        ") needs more than the " + std::to_string(regionBytes) +
        " bytes of staging memory");
  sim::BufferSpec s;
  s.name = "s" + std::to_string(nodeIndex) + "." + what + "." +
           std::to_string(slotCount++);
  s.dtype = dtype;
  s.space = fb::Space::OnChip;
  s.shape = {std::max<int64_t>(elems, 1)};
  s.offset = regionBase + bump;
  bump += size;
  id = b.addBuffer(s);
  return Status::ok();
}

Loc Planner::load(int id, int64_t begin, int64_t count, uint32_t staging) {
  if (onChip(id))
    return {home(id), begin};
  b.dma(range(home(id), begin, count), range(staging, 0, count));
  return {staging, 0};
}

Loc Planner::outLoc(int id, int64_t begin, uint32_t staging) {
  if (onChip(id))
    return {home(id), begin};
  return {staging, 0};
}

void Planner::store(int id, int64_t begin, int64_t count, Loc from) {
  if (onChip(id))
    return;
  b.dma(range(from.buffer, from.offset, count), range(home(id), begin, count));
}

void Planner::storeBlock(int id, uint32_t acc, int64_t row0, int64_t rows,
                         int64_t col0, int64_t cols, uint32_t cvt) {
  int64_t c = tensor(id).channels();
  if (onChip(id)) {
    // Resident tensors have at most one column block (see assignHomes).
    b.vector(fb::VectorOp::Copy, {fb::Region(acc, 0)},
             {fb::Region(home(id), row0 * c)}, rows, cols);
    return;
  }
  uint32_t src = acc;
  if (dtype(id) != fb::DType::F32) {
    b.vector(fb::VectorOp::Copy, {fb::Region(acc, 0)}, {fb::Region(cvt, 0)},
             rows, cols);
    src = cvt;
  }
  b.dma(OperandSpec::matrix(src, 0, rows, cols, cols),
        OperandSpec::matrix(home(id), row0 * c + col0, rows, cols, c));
}

Status Planner::run() {
  residentBytes =
      opt.allowResident
          ? alignUp(int64_t(double(t.onChipBytes) * opt.residentFraction))
          : 0;
  halfBytes = (t.onChipBytes - residentBytes) / 2 / kAlign * kAlign;
  if (halfBytes <= 0)
    return invalidArgumentError("no on-chip memory left for staging");
  planSteps();
  Status s = assignHomes();
  if (!s.isOk())
    return s;
  for (const std::vector<size_t> &step : steps) {
    s = step.size() == 3 ? lowerTriple(step) : lowerStep(step);
    if (!s.isOk())
      return s;
  }
  b.finish();
  return Status::ok();
}

Status Planner::lowerIn(size_t index, int64_t base, int64_t bytes,
                        sim::ProgramBuilder::Capture *capture) {
  const Node &n = g.nodes[index];
  beginNode(n, index, base, bytes);
  if (capture)
    b.beginCapture();
  Status s = lowerNode(n);
  if (capture)
    *capture = b.endCapture();
  if (!s.isOk())
    return invalidArgumentError(std::string(nodeName(n.kind)) + " (" +
                                n.layer + "): " + s.message());
  return Status::ok();
}

int64_t Planner::nextHalf() {
  return residentBytes + int64_t(begun++ % 2) * halfBytes;
}

Status Planner::lowerStep(const std::vector<size_t> &step) {
  if (step.size() == 1)
    return lowerIn(step[0], nextHalf(), halfBytes, nullptr);
  std::vector<sim::ProgramBuilder::Capture> captures(2);
  KILN_RETURN_IF_ERROR(lowerIn(step[0], nextHalf(), halfBytes, &captures[0]));
  KILN_RETURN_IF_ERROR(lowerIn(step[1], nextHalf(), halfBytes, &captures[1]));
  b.emitInterleaved(std::move(captures), t);
  return Status::ok();
}

Status Planner::lowerTriple(const std::vector<size_t> &step) {
  // The matrix-unit op keeps a half; the vector op and the data gradient
  // it feeds share the other (the vector op streams: a quarter keeps its
  // transfers long).
  int64_t share = int64_t(double(halfBytes) * kPipelinedVectorShare) /
                  kAlign * kAlign;
  int64_t c = tensor(g.nodes[step[1]].inputs[0]).channels();
  bool fits = share >= vectorBytes(16, c) + 32 * c + 64 * kAlign &&
              dataGradientReadsAlike(g.nodes[step[2]], halfBytes - share);
  if (!fits) {
    KILN_RETURN_IF_ERROR(lowerStep({step[0], step[1]}));
    return lowerStep({step[2]});
  }
  // Both ways are lowered as trials and the one the merge's schedule
  // estimates faster is kept: with little staging the batch norm's share
  // holds short tiles and the three can take longer than the pair and then
  // the data gradient.
  using Capture = sim::ProgramBuilder::Capture;
  size_t first = begun;
  auto attempt = [&](const std::vector<std::pair<size_t, int64_t>> &at,
                     const std::vector<int64_t> &bytes,
                     std::vector<Capture> &captures) -> Status {
    captures.clear();
    captures.resize(at.size());
    for (size_t i = 0; i < at.size(); ++i) {
      Status s = lowerIn(at[i].first, at[i].second, bytes[i], &captures[i]);
      if (!s.isOk()) {
        b.endTrial(false);
        begun = first;
        return s;
      }
    }
    return Status::ok();
  };
  b.beginTrial();
  int64_t h0 = nextHalf(), h1 = nextHalf(), h2 = nextHalf();
  std::vector<std::vector<Capture>> serial(2);
  KILN_RETURN_IF_ERROR(attempt({{step[0], h0}, {step[1], h1}},
                               {halfBytes, halfBytes}, serial[0]));
  KILN_RETURN_IF_ERROR(attempt({{step[2], h2}}, {halfBytes}, serial[1]));
  uint64_t serialCycles = b.estimateCycles(serial, t);
  b.endTrial(false);
  begun = first;

  b.beginTrial();
  int64_t own = nextHalf(), other = nextHalf();
  std::vector<std::vector<Capture>> joint(1);
  KILN_RETURN_IF_ERROR(attempt(
      {{step[0], own}, {step[1], other}, {step[2], other + share}},
      {halfBytes, share, halfBytes - share}, joint[0]));
  if (b.estimateCycles(joint, t) < serialCycles) {
    b.endTrial(true);
    b.emitInterleaved(std::move(joint[0]), t);
    return Status::ok();
  }
  b.endTrial(false);
  begun = first;
  KILN_RETURN_IF_ERROR(lowerStep({step[0], step[1]}));
  return lowerStep({step[2]});
}

Status Planner::lowerNode(const Node &n) {
  Status s;
  switch (n.kind) {
  case NodeKind::Conv2d:
  case NodeKind::Conv2dBackwardData:
  case NodeKind::Conv2dBackwardFilter:
    if (depthwise(n))
      s = lowerDepthwise(n);
    else if (n.kind == NodeKind::Conv2d)
      s = lowerConv(n);
    else if (n.kind == NodeKind::Conv2dBackwardData)
      s = lowerConvBackwardData(n);
    else
      s = lowerConvBackwardFilter(n);
    break;
  case NodeKind::Matmul:
    s = lowerMatmul(n);
    break;
  case NodeKind::BatchNormTrain:
    s = lowerBatchNorm(n);
    break;
  case NodeKind::BatchNormBackward:
    s = lowerBatchNormBackward(n);
    break;
  case NodeKind::Relu:
  case NodeKind::ReluBackward:
  case NodeKind::Add:
  case NodeKind::Copy:
  case NodeKind::Activation:
  case NodeKind::ActivationBackward:
  case NodeKind::BiasAdd:
  case NodeKind::Dropout:
    s = lowerElementwise(n);
    break;
  case NodeKind::BroadcastBinary:
  case NodeKind::BroadcastBinaryBackward:
    s = lowerBroadcast(n);
    break;
  case NodeKind::Concat:
  case NodeKind::Slice:
  case NodeKind::SliceBackward:
  case NodeKind::Transpose:
  case NodeKind::ChannelShuffle:
    s = lowerMovement(n);
    break;
  case NodeKind::MaxPool:
  case NodeKind::MaxPoolBackward:
  case NodeKind::AvgPool:
  case NodeKind::AvgPoolBackward:
    s = lowerPool(n);
    break;
  case NodeKind::GlobalAvgPool:
  case NodeKind::GlobalAvgPoolBackward:
    s = lowerGlobalPool(n);
    break;
  case NodeKind::ReduceSum:
    s = lowerReduceSum(n);
    break;
  case NodeKind::SoftmaxXent:
  case NodeKind::SoftmaxXentBackward:
    s = lowerLoss(n);
    break;
  case NodeKind::SgdUpdate:
  case NodeKind::LarsUpdate:
    s = lowerOptimizer(n);
    break;
  case NodeKind::LearningRate:
    s = lowerLearningRate(n);
    break;
  case NodeKind::AllReduce:
    s = lowerAllReduce(n);
    break;
  case NodeKind::FusedElementwise:
    s = lowerFusedElementwise(n);
    break;
  }
  return s;
}

Status planProgram(const Graph &graph, const sim::TargetConfig &target,
                   const PlanOptions &options, sim::ProgramSink &sink) {
  Planner p(graph, target, options, sink);
  return p.run();
}

} // namespace kiln::sa
