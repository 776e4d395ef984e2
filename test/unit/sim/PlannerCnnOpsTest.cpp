//===- PlannerCnnOpsTest.cpp - The newer CNN ops against the reference ----===//
//
// Each lowering of the ops of issue 28 (grouped and depthwise convolutions,
// activations, bias, broadcasting arithmetic, dropout, ceil-mode pooling,
// concat, slices, transposes, channel shuffles) is planned into a program,
// run on the functional simulator and compared with the reference kernel.
// Every op runs twice: on HBM inputs and results, and between temporaries
// the planner may keep on chip (produced and consumed by copies); small
// on-chip memories force several tiles.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"

#include "kiln/ref/activation.h"
#include "kiln/ref/bf16.h"
#include "kiln/ref/conv.h"
#include "kiln/ref/dropout.h"
#include "kiln/ref/elementwise.h"
#include "kiln/ref/init.h"
#include "kiln/ref/movement.h"
#include "kiln/ref/pool.h"
#include "kiln/sim/Isa.h"
#include "kiln/sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <tuple>

using namespace kiln;
using sa::Graph;
using sa::Node;
using sa::NodeKind;
using sa::TensorKind;
namespace fb = kiln::sim::fb;

#define ASSERT_OK(expr)                                                        \
  do {                                                                         \
    kiln::Status status_ = (expr);                                             \
    ASSERT_TRUE(status_.isOk()) << status_.message();                          \
  } while (false)

namespace {

ref::Tensor random(ref::Shape shape, const char *name) {
  ref::Tensor t(shape);
  ref::RandomStream r(7, name);
  for (int64_t i = 0; i < t.size(); ++i)
    t[i] = float(r.normal(uint64_t(i)));
  return t;
}

ref::Tensor bf16(const ref::Tensor &t) { return ref::roundToBf16(t); }

sim::TargetConfig target(int64_t onChip, uint32_t array = 16) {
  sim::TargetConfig t;
  t.arrayRows = t.arrayCols = array;
  t.onChipBytes = onChip;
  return t;
}

/// A graph of one op: inputs bound as "arg<i>", result 0. With `viaTemps`
/// each input is copied into a temporary first and the op's result is
/// copied out, so that the op reads and writes tensors the planner may keep
/// on chip.
struct OneOp {
  Graph g;
  std::vector<int> args;
  Node node{NodeKind::Copy};

  OneOp(NodeKind kind, const std::vector<ref::Shape> &inputs,
        const ref::Shape &out, bool viaTemps,
        fb::DType dtype = fb::DType::F32) {
    node = Node(kind);
    node.layer = "op";
    for (size_t i = 0; i < inputs.size(); ++i) {
      sa::Tensor t;
      t.name = "in" + std::to_string(i);
      t.shape = inputs[i];
      t.kind = TensorKind::Input;
      t.argument = int(i);
      t.dtype = dtype;
      int id = g.addTensor(t);
      args.push_back(id);
      node.inputs.push_back(viaTemps ? copy(id, dtype) : id);
    }
    sa::Tensor r;
    r.name = "out";
    r.shape = out;
    r.dtype = dtype;
    int rid = g.addTensor(r);
    if (viaTemps) {
      sa::Tensor t = r;
      t.name = "t";
      int tid = g.addTensor(t);
      node.outputs = {tid};
      result = rid;
      resultFrom = tid;
    } else {
      node.outputs = {rid};
    }
    g.tensors[size_t(rid)].result = 0;
  }

  int copy(int from, fb::DType dtype) {
    sa::Tensor t = g.tensors[size_t(from)];
    t.name = "copy" + std::to_string(from);
    t.kind = TensorKind::Temp;
    t.argument = -1;
    t.dtype = dtype;
    int id = g.addTensor(t);
    Node c(NodeKind::Copy);
    c.inputs = {from};
    c.outputs = {id};
    c.layer = "copy";
    g.nodes.push_back(c);
    return id;
  }

  /// Plans, runs one step and returns result 0 (or the planner's error).
  kiln::Status run(const sim::TargetConfig &t,
                   const std::vector<std::vector<float>> &values,
                   std::vector<float> &out) {
    g.nodes.push_back(node);
    if (result >= 0) {
      Node c(NodeKind::Copy);
      c.inputs = {resultFrom};
      c.outputs = {result};
      c.layer = "copy";
      g.nodes.push_back(c);
    }
    sim::ProgramTSink sink(t, "test", 1);
    KILN_RETURN_IF_ERROR(sa::planProgram(g, t, options, sink));
    std::unique_ptr<sim::Program> program = sink.take();
    vectorOps.clear();
    for (const auto &instr : program->instructions)
      if (const fb::VectorT *v = instr->kind.AsVector())
        ++vectorOps[v->op];
    std::unique_ptr<sim::Simulator> sim;
    KILN_RETURN_IF_ERROR(sim::Simulator::create(std::move(program), t, sim));
    for (size_t i = 0; i < values.size(); ++i)
      KILN_RETURN_IF_ERROR(sim->setInput("arg" + std::to_string(i), values[i]));
    KILN_RETURN_IF_ERROR(sim->runStep());
    return sim->read("result0", out);
  }

  int result = -1, resultFrom = -1;
  sa::PlanOptions options;
  /// Instructions of each vector op in the last planned program.
  std::map<fb::VectorOp, int64_t> vectorOps;
};

void expectClose(const std::vector<float> &got, const ref::Tensor &want,
                 double tol, const std::string &what) {
  ASSERT_EQ(int64_t(got.size()), want.size()) << what;
  double scale = 0;
  for (float v : want.data)
    scale = std::max(scale, double(std::fabs(v)));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want.data[i], tol * (1 + scale))
        << what << " [" << i << "]";
}

void expectEqual(const std::vector<float> &got, const ref::Tensor &want,
                 const std::string &what) {
  ASSERT_EQ(int64_t(got.size()), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want.data[i]) << what << " [" << i << "]";
}

/// Runs `op` on HBM operands and between temporaries, for each memory size.
template <typename Check>
void bothWays(const std::vector<int64_t> &memories, Check check) {
  for (int64_t memory : memories)
    for (bool viaTemps : {false, true})
      check(target(memory), viaTemps,
            std::string(viaTemps ? "temps" : "hbm") + " onchip " +
                std::to_string(memory));
}

struct GroupedCase {
  ref::Shape x, w;
  int64_t groups, stride, pad;
};

} // namespace

// Grouped convolutions (and a depthwise one with a channel multiplier) run
// on the MXU as one implicit GEMM per group; depthwise ones without a
// multiplier on the vector unit. Both against the reference, forward and
// both gradients; the MXU rounds its operands to bf16, the vector unit not.
TEST(PlannerCnnOps, GroupedAndDepthwiseConvolutions) {
  const std::vector<GroupedCase> cases = {
      {{2, 7, 7, 8}, {3, 3, 4, 6}, 2, 1, 1},    // two groups
      {{2, 9, 9, 12}, {3, 3, 3, 8}, 4, 2, 1},   // strided, four groups
      {{2, 6, 6, 6}, {3, 3, 1, 12}, 6, 1, 1},   // depthwise, multiplier 2
      {{3, 9, 9, 10}, {3, 3, 1, 10}, 10, 1, 1}, // depthwise: vector unit
      {{2, 11, 11, 8}, {5, 5, 1, 8}, 8, 2, 2},  // depthwise 5x5 / 2
  };
  for (const GroupedCase &c : cases) {
    ref::Conv2dAttrs a;
    a.strides = {c.stride, c.stride};
    a.padding = {c.pad, c.pad, c.pad, c.pad};
    a.groups = c.groups;
    ref::Shape ys;
    ASSERT_TRUE(ref::inferConv2dShape(c.x, c.w, a, ys).isOk());
    ref::Tensor x = random(c.x, "x"), w = random(c.w, "w"),
                dy = random(ys, "dy");
    bool vector = c.w[2] == 1 && c.w[3] == c.x[3];
    // The vector unit multiplies in fp32; the MXU rounds operands to bf16.
    auto in = [&](const ref::Tensor &t) { return vector ? t : bf16(t); };
    std::string what = "x " + ref::shapeToString(c.x) + " w " +
                       ref::shapeToString(c.w) + " groups " +
                       std::to_string(c.groups);
    auto setAttrs = [&](Node &n) {
      n.strides = {c.stride, c.stride};
      n.padding = {c.pad, c.pad, c.pad, c.pad};
      n.groups = c.groups;
    };
    bothWays({1 << 20, 24 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                      const std::string &how) {
      std::vector<float> got;
      OneOp fwd(NodeKind::Conv2d, {c.x, c.w}, ys, temps);
      setAttrs(fwd.node);
      ASSERT_OK(fwd.run(t, {x.data, w.data}, got));
      expectClose(got, ref::conv2d(in(x), in(w), a), 1e-5,
                  what + " forward " + how);
      OneOp data(NodeKind::Conv2dBackwardData, {ys, c.w}, c.x, temps);
      setAttrs(data.node);
      ASSERT_OK(data.run(t, {dy.data, w.data}, got));
      expectClose(got, ref::conv2dBackwardData(in(dy), in(w), c.x, a), 1e-5,
                  what + " data " + how);
      OneOp filter(NodeKind::Conv2dBackwardFilter, {c.x, ys}, c.w, temps);
      setAttrs(filter.node);
      ASSERT_OK(filter.run(t, {x.data, dy.data}, got));
      expectClose(got, ref::conv2dBackwardFilter(in(x), in(dy), c.w, a), 1e-5,
                  what + " filter " + how);
    });
  }
}

TEST(PlannerCnnOps, ActivationsAndTheirGradients) {
  ref::Shape s = {3, 5, 5, 7};
  ref::Tensor x = random(s, "x"), dy = random(s, "dy");
  for (int i = 0; i < 5; i++)
    x[i] = float(i - 3) * 1.5f; // the kinks of the clipped kinds
  for (int kind = 0; kind < 5; ++kind)
    bothWays({1 << 20, 8 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                     const std::string &how) {
      auto k = ref::Activation(kind);
      std::vector<float> got;
      OneOp fwd(NodeKind::Activation, {s}, s, temps);
      fwd.node.activation = kind;
      ASSERT_OK(fwd.run(t, {x.data}, got));
      expectEqual(got, ref::activation(k, x), "kind " + std::to_string(kind));
      OneOp bwd(NodeKind::ActivationBackward, {s, s}, s, temps);
      bwd.node.activation = kind;
      ASSERT_OK(bwd.run(t, {dy.data, x.data}, got));
      expectEqual(got, ref::activationBackward(k, dy, x),
                  "grad kind " + std::to_string(kind) + " " + how);
    });
}

TEST(PlannerCnnOps, BiasAndItsGradient) {
  ref::Shape s = {4, 6, 6, 10};
  ref::Tensor x = random(s, "x"), bias = random({10}, "b");
  bothWays({1 << 20, 16 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                   const std::string &how) {
    std::vector<float> got;
    OneOp add(NodeKind::BiasAdd, {s, {10}}, s, temps);
    ASSERT_OK(add.run(t, {x.data, bias.data}, got));
    expectEqual(got, ref::biasAdd(x, bias), "bias_add " + how);
    // kiln.bias_add_backward is the graph's ReduceSum.
    OneOp grad(NodeKind::ReduceSum, {s}, {10}, temps);
    ASSERT_OK(grad.run(t, {x.data}, got));
    expectClose(got, ref::biasAddBackward(x), 1e-6, "bias grad " + how);
  });
}

// Squeeze-and-excitation's [N,H,W,C] x [N,1,1,C], a per-channel constant
// [1,1,1,C] and a 2-D [N,C] x [1,C]: every kind, and both gradients (the
// operand's sum over what it broadcasts, across tiles).
TEST(PlannerCnnOps, BroadcastingArithmeticAndGradients) {
  struct Case {
    ref::Shape lhs, rhs;
  };
  const std::vector<Case> cases = {{{4, 5, 5, 6}, {4, 1, 1, 6}},
                                   {{4, 5, 5, 6}, {1, 1, 1, 6}},
                                   {{1, 1, 1, 6}, {4, 5, 5, 6}},
                                   {{5, 9}, {1, 9}}};
  for (const Case &c : cases) {
    ref::Shape out;
    ASSERT_TRUE(ref::inferBroadcast(c.lhs, c.rhs, out).isOk());
    ref::Tensor a = random(c.lhs, "a"), b = random(c.rhs, "b"),
                dy = random(out, "dy");
    for (float &v : b.data)
      v = v >= 0 ? v + 0.5f : v - 0.5f; // away from zero for div
    for (int kind = 0; kind < 4; ++kind)
      bothWays({1 << 20, 12 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                       const std::string &how) {
        auto k = ref::BinaryKind(kind);
        std::string what = ref::shapeToString(c.lhs) + " " +
                           ref::shapeToString(c.rhs) + " kind " +
                           std::to_string(kind) + " " + how;
        std::vector<float> got;
        OneOp fwd(NodeKind::BroadcastBinary, {c.lhs, c.rhs}, out, temps);
        fwd.node.binaryKind = kind;
        kiln::Status s = fwd.run(t, {a.data, b.data}, got);
        ASSERT_TRUE(s.isOk()) << what << ": " << s.message();
        expectEqual(got, ref::broadcastBinary(k, a, b), what);
        for (bool wrtRhs : {false, true}) {
          bool readsA = (k == ref::BinaryKind::Mul ||
                         k == ref::BinaryKind::Div) && wrtRhs;
          bool readsB = (k == ref::BinaryKind::Mul && !wrtRhs) ||
                        k == ref::BinaryKind::Div;
          std::vector<ref::Shape> ins = {out};
          std::vector<std::vector<float>> values = {dy.data};
          if (readsA) {
            ins.push_back(c.lhs);
            values.push_back(a.data);
          }
          if (readsB) {
            ins.push_back(c.rhs);
            values.push_back(b.data);
          }
          const ref::Shape &gs = wrtRhs ? c.rhs : c.lhs;
          OneOp bwd(NodeKind::BroadcastBinaryBackward, ins, gs, temps);
          bwd.node.binaryKind = kind;
          bwd.node.wrtRhs = wrtRhs;
          s = bwd.run(t, values, got);
          ASSERT_TRUE(s.isOk()) << what << ": " << s.message();
          expectClose(got,
                      ref::broadcastBinaryBackward(k, wrtRhs, dy, &a, &b, gs),
                      1e-6, what + (wrtRhs ? " wrt rhs" : " wrt lhs"));
        }
      });
  }
}

// The device draws kiln.dropout's mask from the same Philox counters as the
// reference: equal bit for bit, over several tiles (each tile's first
// logical index) and steps.
TEST(PlannerCnnOps, DropoutMatchesTheReferenceBitForBit) {
  ref::Shape s = {4, 6, 6, 9};
  ref::Tensor x = random(s, "x");
  for (uint64_t step : {0, 1, 77})
    bothWays({1 << 20, 8 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                     const std::string &how) {
      OneOp d(NodeKind::Dropout, {s}, s, temps);
      // The step: a scalar input (kiln.step), never copied.
      sa::Tensor st;
      st.name = "step";
      st.kind = TensorKind::Input;
      st.argument = 1;
      st.dtype = fb::DType::I32;
      d.node.inputs.push_back(d.g.addTensor(st));
      d.node.ratio = 0.3;
      d.node.seed = 12345678901;
      d.node.stream = 5;
      std::vector<float> got;
      ASSERT_OK(d.run(t, {x.data, {float(step)}}, got));
      ref::DropoutAttrs a;
      a.ratio = 0.3;
      a.seed = 12345678901;
      a.step = step;
      a.stream = 5;
      ref::Tensor want = ref::dropout(x, a);
      expectEqual(got, want, "step " + std::to_string(step) + " " + how);
      int64_t dropped = 0;
      for (float v : want.data)
        dropped += v == 0.0f;
      EXPECT_NEAR(double(dropped) / double(want.size()), 0.3, 0.06);
    });
}

TEST(PlannerCnnOps, CeilModePooling) {
  // SqueezeNet's 3x3/2 pools on odd and even sides, with and without
  // padding: the last window overhangs the input.
  for (ref::Shape s : {ref::Shape{2, 8, 8, 5}, ref::Shape{2, 13, 10, 3}})
    for (int64_t pad : {0, 1}) {
      ref::Pool2dAttrs a;
      a.window = {3, 3};
      a.strides = {2, 2};
      a.padding = {pad, pad, pad, pad};
      a.ceilMode = true;
      ref::Shape ys;
      ASSERT_TRUE(ref::inferPool2dShape(s, a, ys).isOk());
      ref::Tensor x = random(s, "x"), dy = random(ys, "dy");
      auto setAttrs = [&](Node &n) {
        n.window = {3, 3};
        n.strides = {2, 2};
        n.padding = {pad, pad, pad, pad};
        n.ceilMode = true;
      };
      bothWays({1 << 20}, [&](const sim::TargetConfig &t, bool temps,
                              const std::string &how) {
        std::string what = ref::shapeToString(s) + " pad " +
                           std::to_string(pad) + " " + how;
        std::vector<float> got;
        OneOp mx(NodeKind::MaxPool, {s}, ys, temps);
        setAttrs(mx.node);
        ASSERT_OK(mx.run(t, {x.data}, got));
        expectEqual(got, ref::maxPool(x, a), "max " + what);
        OneOp av(NodeKind::AvgPool, {s}, ys, temps);
        setAttrs(av.node);
        ASSERT_OK(av.run(t, {x.data}, got));
        expectClose(got, ref::avgPool(x, a), 1e-6, "avg " + what);
        OneOp mg(NodeKind::MaxPoolBackward, {ys, s}, s, temps);
        setAttrs(mg.node);
        ASSERT_OK(mg.run(t, {dy.data, x.data}, got));
        expectClose(got, ref::maxPoolBackward(dy, x, a), 1e-6, "max grad " + what);
        OneOp ag(NodeKind::AvgPoolBackward, {ys}, s, temps);
        setAttrs(ag.node);
        ASSERT_OK(ag.run(t, {dy.data}, got));
        expectClose(got, ref::avgPoolBackward(dy, s, a), 1e-6,
                    "avg grad " + what);
      });
    }
}

// Pooling whose image does not fit in staging memory runs in row bands with
// the window's halo: VGG's 2x2/2, ResNet's padded 3x3/2, SqueezeNet's ceil
// mode, a stride larger than the window (rows no window reads), a 3x3/1 with
// padding 2 (gradient bands recompute two earlier output rows). Each banded
// result equals the whole-image one bit for bit (every window and every
// gradient row's sum in the same order) and the reference within rounding,
// in f32 and bf16, on HBM operands and on temporaries kept on chip.
TEST(PlannerCnnOps, PoolingInRowBands) {
  struct Case {
    ref::Shape x;
    int64_t window, stride, pad;
    bool ceil;
  };
  for (const Case &c : {Case{{2, 20, 12, 8}, 2, 2, 0, false},
                        Case{{2, 21, 9, 5}, 3, 2, 1, false},
                        Case{{1, 16, 7, 3}, 3, 2, 0, true},
                        Case{{1, 17, 8, 4}, 2, 3, 0, false},
                        Case{{1, 12, 6, 4}, 3, 1, 2, false}})
    for (fb::DType dt : {fb::DType::F32, fb::DType::BF16}) {
      ref::Pool2dAttrs a;
      a.window = {c.window, c.window};
      a.strides = {c.stride, c.stride};
      a.padding = {c.pad, c.pad, c.pad, c.pad};
      a.ceilMode = c.ceil;
      ref::Shape ys;
      ASSERT_OK(ref::inferPool2dShape(c.x, a, ys));
      ref::Tensor x = random(c.x, "x"), dy = random(ys, "dy");
      if (dt == fb::DType::BF16) {
        x = bf16(x);
        dy = bf16(dy);
      }
      std::string what = ref::shapeToString(c.x) + " window " +
                         std::to_string(c.window) + " stride " +
                         std::to_string(c.stride) + " pad " +
                         std::to_string(c.pad) + (c.ceil ? " ceil " : " ") +
                         sim::dtypeName(dt);
      struct Op {
        NodeKind kind;
        fb::VectorOp op;
        std::vector<ref::Shape> in;
        ref::Shape out;
        std::vector<std::vector<float>> values;
        ref::Tensor want;
      };
      std::vector<Op> ops = {
          {NodeKind::MaxPool, fb::VectorOp::MaxPool, {c.x}, ys, {x.data},
           ref::maxPool(x, a)},
          {NodeKind::AvgPool, fb::VectorOp::AvgPool, {c.x}, ys, {x.data},
           ref::avgPool(x, a)},
          {NodeKind::MaxPoolBackward, fb::VectorOp::MaxPoolGrad, {ys, c.x},
           c.x, {dy.data, x.data}, ref::maxPoolBackward(dy, x, a)},
          {NodeKind::AvgPoolBackward, fb::VectorOp::AvgPoolGrad, {ys}, c.x,
           {dy.data}, ref::avgPoolBackward(dy, c.x, a)}};
      for (Op &op : ops) {
        if (dt == fb::DType::BF16)
          op.want = bf16(op.want);
        auto run = [&](int64_t memory, bool temps, double resident,
                       std::vector<float> &got) {
          OneOp one(op.kind, op.in, op.out, temps, dt);
          one.node.window = {c.window, c.window};
          one.node.strides = {c.stride, c.stride};
          one.node.padding = {c.pad, c.pad, c.pad, c.pad};
          one.node.ceilMode = c.ceil;
          one.options.residentFraction = resident;
          kiln::Status s = one.run(target(memory), op.values, got);
          EXPECT_TRUE(s.isOk()) << s.message() << " " << what;
          return one.vectorOps[op.op];
        };
        std::vector<float> whole, got;
        // One instruction per image or fewer: the whole-image tiling.
        ASSERT_LE(run(1 << 20, false, 0.25, whole), c.x[0]) << what;
        // The gradients' rounding to bf16 per scatter-add is the device's,
        // not the reference's (which rounds once).
        expectClose(whole, op.want, dt == fb::DType::BF16 ? 2e-2 : 1e-6,
                    sim::vectorSignature(op.op).name + (" " + what));
        // Small staging memories; with temporaries, most of on-chip memory
        // holds them, so bands read and write tensors resident on chip.
        int64_t perImage = 0;
        for (const ref::Shape &s : op.in)
          perImage += ref::numElements(s) / s[0];
        perImage = (perImage + ref::numElements(op.out) / op.out[0]) *
                   sim::dtypeBytes(dt);
        for (auto [memory, temps, resident] :
             {std::tuple{perImage * 6 / 5, false, 0.25},
              std::tuple{perImage * 12 / 5, false, 0.25},
              std::tuple{perImage * 4, true, 0.7}}) {
          std::string how = what + " onchip " + std::to_string(memory) +
                            (temps ? " temps" : " hbm");
          EXPECT_GE(run(memory, temps, resident, got), 2 * c.x[0]) << how;
          ASSERT_EQ(got.size(), whole.size()) << how;
          for (size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(got[i], whole[i])
                << sim::vectorSignature(op.op).name << " " << how << " [" << i
                << "]";
        }
      }
    }
}

// Concat, slices, transposes and channel shuffles are DMAs: exact copies,
// in bf16 too, in chunks when staging is small.
TEST(PlannerCnnOps, DataMovement) {
  ref::Shape s = {3, 4, 5, 12}, t2 = {3, 4, 5, 7};
  ref::Tensor x = random(s, "x"), y = random(t2, "y");
  for (fb::DType dt : {fb::DType::F32, fb::DType::BF16}) {
    ref::Tensor xr = dt == fb::DType::BF16 ? bf16(x) : x,
                yr = dt == fb::DType::BF16 ? bf16(y) : y;
    bothWays({1 << 20, 4 << 10}, [&](const sim::TargetConfig &t, bool temps,
                                     const std::string &how) {
      std::string what = std::string(sim::dtypeName(dt)) + " " + how;
      std::vector<float> got;
      OneOp cat(NodeKind::Concat, {s, t2}, {3, 4, 5, 19}, temps, dt);
      cat.node.axis = 3;
      kiln::Status st = cat.run(t, {x.data, y.data}, got);
      ASSERT_TRUE(st.isOk()) << st.message();
      expectEqual(got, ref::concat({xr, yr}, 3), "concat " + what);
      OneOp cat1(NodeKind::Concat, {s, s}, {3, 8, 5, 12}, temps, dt);
      cat1.node.axis = 1;
      ASSERT_OK(cat1.run(t, {x.data, x.data}, got));
      expectEqual(got, ref::concat({xr, xr}, 1), "concat axis 1 " + what);
      OneOp sl(NodeKind::Slice, {s}, {3, 4, 5, 5}, temps, dt);
      sl.node.axis = 3;
      sl.node.start = 6;
      ASSERT_OK(sl.run(t, {x.data}, got));
      expectEqual(got, ref::slice(xr, 3, 6, 5), "slice " + what);
      OneOp sb(NodeKind::SliceBackward, {t2}, {3, 4, 5, 16}, temps, dt);
      sb.node.axis = 3;
      sb.node.start = 4;
      ASSERT_OK(sb.run(t, {y.data}, got));
      expectEqual(got, ref::sliceBackward(yr, 3, 4, 16),
                  "slice_backward " + what);
      OneOp tr(NodeKind::Transpose, {s}, {3, 12, 4, 5}, temps, dt);
      tr.node.permutation = {0, 3, 1, 2};
      ASSERT_OK(tr.run(t, {x.data}, got));
      expectEqual(got, ref::transpose(xr, {0, 3, 1, 2}), "transpose " + what);
      OneOp sh(NodeKind::ChannelShuffle, {s}, s, temps, dt);
      sh.node.groups = 3;
      ASSERT_OK(sh.run(t, {x.data}, got));
      expectEqual(got, ref::channelShuffle(xr, 3), "shuffle " + what);
    });
  }
}

// Negative cases: what the planner cannot place says so, naming the op.
TEST(PlannerCnnOps, Errors) {
  std::vector<float> got;
  // A transpose one of whose rows exceeds staging memory.
  OneOp tr(NodeKind::Transpose, {{1, 1, 64, 64}}, {1, 1, 64, 64}, false);
  tr.node.permutation = {0, 1, 3, 2};
  kiln::Status s = tr.run(target(8 << 10), {std::vector<float>(4096)}, got);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("transpose (op): one row of a data movement"),
            std::string::npos)
      << s.message();
  // A broadcast whose single image does not fit.
  OneOp bb(NodeKind::BroadcastBinary, {{2, 32, 32, 8}, {2, 1, 1, 8}},
           {2, 32, 32, 8}, false);
  s = bb.run(target(16 << 10), {std::vector<float>(16384),
                                std::vector<float>(16)},
             got);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("broadcast_binary (op): one image"),
            std::string::npos)
      << s.message();
  // A pooling window one of whose output rows (with its window's input rows)
  // exceeds staging memory.
  OneOp mp(NodeKind::MaxPool, {{1, 8, 256, 16}}, {1, 4, 128, 16}, false);
  mp.node.window = {2, 2};
  mp.node.strides = {2, 2};
  mp.node.padding = {0, 0, 0, 0};
  s = mp.run(target(16 << 10), {std::vector<float>(32768)}, got);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("max_pool (op): one output row of the window "
                             "does not fit in staging memory"),
            std::string::npos)
      << s.message();
}
