//===- Graph.h - The training step as the systolic planner sees it -*- C++
//-*-===//
//
// Part of Kiln. A plain-C++ image of a `kiln` training-step function with
// static shapes: tensors (inputs, variables, constants, temporaries) and
// nodes in program order. The kiln-to-sa conversion builds it from the IR;
// unit tests build it directly and check the planner's programs against the
// reference kernels. No MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_CONVERSION_KILNTOSA_GRAPH_H
#define KILN_PASSES_CONVERSION_KILNTOSA_GRAPH_H

#include "program_generated.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::sa {

namespace fb = kiln::sim::fb;

enum class TensorKind { Input, Variable, Constant, Temp };

struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  fb::DType dtype = fb::DType::F32;
  TensorKind kind = TensorKind::Temp;
  /// Variables: Parameter or State; their initializer.
  fb::Role variableRole = fb::Role::Parameter;
  fb::Init init = fb::Init::None;
  float initStd = 0;
  /// Constants and value-initialized variables.
  std::vector<float> data;
  /// Inputs: argument index; outputs: result index (-1: not a result).
  int argument = -1, result = -1;
  /// Same storage as another tensor (reshape, in-place variable update).
  int aliasOf = -1;
  /// Inputs only: the host relays it (space-to-depth stem).
  fb::HostLayout hostLayout = fb::HostLayout::Identity;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  /// The last dimension (1 for scalars).
  int64_t channels() const { return shape.empty() ? 1 : shape.back(); }
};

enum class NodeKind {
  Conv2d,                // in: x, w            out: y
  Conv2dBackwardData,    // in: dy, w           out: dx
  Conv2dBackwardFilter,  // in: x, dy           out: dw
  Matmul,                // in: a, b [, bias]   out: c   (flags: transpose a, b)
  BatchNormTrain,        // in: x g b rm rv [r] [m] out: y mean var nrm nrv [ss]
  BatchNormBackward,     // in: dy x g mean var [ss] out: dx dg db
  Relu,                  // in: x               out: y
  ReluBackward,          // in: dy y            out: dx
  Add,                   // in: a b             out: c
  Copy,                  // in: x               out: y  (casts, assignments)
  MaxPool,               // in: x               out: y
  MaxPoolBackward,       // in: dy x            out: dx
  AvgPool,               // in: x               out: y
  AvgPoolBackward,       // in: dy              out: dx
  GlobalAvgPool,         // in: x               out: y
  GlobalAvgPoolBackward, // in: dy              out: dx
  ReduceSum,             // in: x               out: y (sum over leading dims)
  SoftmaxXent,           // in: logits labels   out: loss
  SoftmaxXentBackward,   // in: dloss logits labels out: dlogits
  SgdUpdate,             // in: w g v lr        out: w' v'
  LarsUpdate,            // in: w g v lr        out: w' v'
  LearningRate,          // in: step params     out: lr
  AllReduce,             // in: g...            out: same tensors (in place)
  // The ops of newer CNNs (issue 28).
  Activation,              // in: x               out: y   (activation)
  ActivationBackward,      // in: dy x            out: dx  (activation)
  BiasAdd,                 // in: x b             out: y
  BroadcastBinary,         // in: a b             out: c   (binaryKind)
  BroadcastBinaryBackward, // in: dy [a] [b]      out: g   (binaryKind, wrtRhs)
  Dropout,                 // in: x step          out: y
  Concat,                  // in: x...            out: y   (axis)
  Slice,                   // in: x               out: y   (axis, start)
  SliceBackward,           // in: dy              out: dx  (axis, start)
  Transpose,               // in: x               out: y   (permutation)
  ChannelShuffle,          // in: x               out: y   (groups)
  // kiln.fused_elementwise (--kiln-fuse's chains): one pass over the tiles.
  FusedElementwise, // in: x...  out: y...  (body, chainTypes, yields)
};

struct Node {
  explicit Node(NodeKind kind) : kind(kind) {}
  NodeKind kind;
  std::vector<int> inputs, outputs;
  /// Conv/pool: strides, padding {t,b,l,r}, dilations, window.
  std::array<int64_t, 2> strides{1, 1}, dilations{1, 1}, window{1, 1};
  std::array<int64_t, 4> padding{0, 0, 0, 0};
  /// BN: epsilon, momentum; loss: label smoothing; optimizers: momentum,
  /// weight decay, eta, epsilon.
  double epsilon = 0, momentum = 0, labelSmoothing = 0, weightDecay = 0,
         eta = 0;
  bool transposeA = false, transposeB = false, nesterov = false, skip = false;
  /// Fold a following ReLU into BatchNormTrain's output.
  bool fuseRelu = false;
  /// Fused batch norm (docs/systolic.md, "Fusion"); each is a tensor id
  /// also listed among the node's inputs or outputs, or -1.
  /// BatchNormTrain: the residual added before the relu.
  int residual = -1;
  /// Conv2d (output) and BatchNormTrain (input): the [2, C] f32 channel
  /// sums and sums of squares of the convolution's output, accumulated in
  /// its epilogue.
  int moments = -1;
  /// BatchNormTrain (output) and BatchNormBackward (input): the [2, C] f32
  /// scale and shift of the normalization; the backward recomputes the
  /// relu mask of the forward output from x with them.
  int scaleShift = -1;
  /// The reductions of a batch-norm backward taken where its dy is produced
  /// (fuseBatchNormBackwardSums): `sums` is the [2, C] f32 tensor of the
  /// channel sums of dy and of dy * (x - mean), dy masked by the forward's
  /// relu when `scaleShift` is set. On the producer (Conv2dBackwardData,
  /// FusedElementwise, MaxPoolBackward) `sums` is an output and the others
  /// are inputs; on the BatchNormBackward only `sums` is set, an input.
  struct GradSums {
    int sums = -1, dy = -1, x = -1, mean = -1, scaleShift = -1;
  } gradSums;
  /// Conv2d: lower as a space-to-depth stem (see docs/systolic.md).
  bool spaceToDepth = false;
  int64_t schedule = 0;
  /// Convolutions: groups; channel shuffle: groups.
  int64_t groups = 1;
  /// Pools: PyTorch's ceil mode (kiln/ref/window.h).
  bool ceilMode = false;
  /// Activation: kiln/ref/activation.h's kind; broadcast: its BinaryKind.
  int64_t activation = 0, binaryKind = 0;
  /// BroadcastBinaryBackward: the gradient is the rhs's.
  bool wrtRhs = false;
  /// Concat, slices: the axis; slices: the first element along it.
  int64_t axis = 0, start = 0;
  std::vector<int64_t> permutation;
  /// Dropout (kiln.dropout's attributes).
  double ratio = 0;
  int64_t seed = 0, stream = 0;
  /// FusedElementwise: the chain's ops in order (Relu, ReluBackward, Add,
  /// Copy, Activation, ActivationBackward). The chain's values are the
  /// node's inputs, then each body op's result; body inputs and outputs are
  /// indices of chain values, chainTypes their element types, and yields
  /// the chain values that are the node's outputs.
  std::vector<Node> body;
  std::vector<fb::DType> chainTypes;
  std::vector<int> yields;
  /// For reports: the kiln op and the layer it belongs to.
  std::string opName, layer;
};

struct Graph {
  std::string name;
  int64_t batch = 1;
  std::vector<Tensor> tensors;
  std::vector<Node> nodes;

  int addTensor(Tensor t) {
    tensors.push_back(std::move(t));
    return int(tensors.size()) - 1;
  }
  /// Follows aliases to the tensor that owns the storage.
  int root(int t) const {
    while (tensors[size_t(t)].aliasOf >= 0)
      t = tensors[size_t(t)].aliasOf;
    return t;
  }
};

/// Moves the reductions of each batch-norm backward into the node that
/// produces its dy (a stride-1 data gradient, a max pool's gradient or a
/// fused elementwise chain), which reads the batch norm's input while dy is
/// on chip: the backward then makes one pass (dx) instead of two. docs/systolic.md, "Fusion".
void fuseBatchNormBackwardSums(Graph &g);

} // namespace kiln::sa

#endif // KILN_PASSES_CONVERSION_KILNTOSA_GRAPH_H
