//===- PlannerTest.cpp - Lowered training ops against the reference -------===//
//
// Each matrix-unit lowering (convolution forward, backward data, backward
// filter, the space-to-depth stem, matmuls) is planned into a program, run
// on the functional simulator, and compared with the reference kernel on
// bf16-rounded operands. Small arrays and on-chip memories force every
// tiling path: K and N folds, tap packing, row bands, spills to HBM.
//
//===----------------------------------------------------------------------===//

#include "Planner.h"

#include "kiln/ref/bf16.h"
#include "kiln/ref/conv.h"
#include "kiln/ref/dense.h"
#include "kiln/ref/init.h"
#include "kiln/sim/Simulator.h"
#include "kiln/sim/Timing.h"

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

namespace {

ref::Tensor random(ref::Shape shape, const char *name) {
  ref::Tensor t(shape);
  ref::RandomStream r(11, name);
  for (int64_t i = 0; i < t.size(); ++i)
    t[i] = float(r.normal(uint64_t(i)));
  return t;
}

ref::Tensor bf16(const ref::Tensor &t) { return ref::roundToBf16(t); }

int input(Graph &g, ref::Shape shape, int arg) {
  sa::Tensor t;
  t.name = "in" + std::to_string(arg);
  t.shape = shape;
  t.kind = TensorKind::Input;
  t.argument = arg;
  return g.addTensor(t);
}

int variable(Graph &g, const char *name, ref::Shape shape) {
  sa::Tensor t;
  t.name = name;
  t.shape = shape;
  t.kind = TensorKind::Variable;
  return g.addTensor(t);
}

int result(Graph &g, ref::Shape shape, int index,
           fb::DType dtype = fb::DType::F32) {
  sa::Tensor t;
  t.name = "out" + std::to_string(index);
  t.shape = shape;
  t.result = index;
  t.dtype = dtype;
  return g.addTensor(t);
}

sim::TargetConfig smallTarget(uint32_t array, int64_t onChip) {
  sim::TargetConfig t;
  t.arrayRows = t.arrayCols = array;
  t.onChipBytes = onChip;
  return t;
}

/// Plans, runs one functional step and returns result 0.
std::vector<float> run(const Graph &g, const sim::TargetConfig &target,
                       const std::map<std::string, std::vector<float>> &values,
                       sa::PlanOptions options = {}) {
  sim::ProgramTSink sink(target, "test", g.batch);
  kiln::Status s = sa::planProgram(g, target, options, sink);
  EXPECT_TRUE(s.isOk()) << s.message();
  std::unique_ptr<sim::Simulator> sim;
  s = sim::Simulator::create(sink.take(), target, sim);
  EXPECT_TRUE(s.isOk()) << s.message();
  if (!sim)
    return {};
  for (auto &[name, v] : values) {
    s = name.rfind("arg", 0) == 0 ? sim->setInput(name, v)
                                  : sim->writeVariable(name, v);
    EXPECT_TRUE(s.isOk()) << s.message();
  }
  s = sim->runStep();
  EXPECT_TRUE(s.isOk()) << s.message();
  std::vector<float> out;
  EXPECT_TRUE(sim->read("result0", out).isOk());
  return out;
}

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

struct ConvCase {
  ref::Shape x, w;
  int64_t stride, pad, dilation;
  uint32_t array;
  int64_t onChip;
};

std::string describe(const ConvCase &c) {
  return "x " + ref::shapeToString(c.x) + " w " + ref::shapeToString(c.w) +
         " stride " + std::to_string(c.stride) + " pad " +
         std::to_string(c.pad) + " dilation " + std::to_string(c.dilation) +
         " array " + std::to_string(c.array) + " onchip " +
         std::to_string(c.onChip);
}

const std::vector<ConvCase> &convCases() {
  static const std::vector<ConvCase> cases = {
      // channels below the array: taps packed into the contraction
      {{2, 9, 9, 3}, {3, 3, 3, 8}, 1, 1, 1, 16, 1 << 20},
      // more channels than the array: K and N folds, two MXUs
      {{2, 8, 8, 40}, {3, 3, 40, 36}, 1, 1, 1, 16, 1 << 20},
      // five output blocks: the filter gradient accumulates four at once
      {{2, 6, 6, 8}, {1, 1, 8, 72}, 1, 0, 1, 16, 1 << 20},
      // one output block whose two partial sums do not fit: the filter
      // gradient splits its rows by input channel over the two MXUs
      {{2, 6, 6, 40}, {3, 3, 40, 16}, 1, 1, 1, 16, 160 << 10},
      // strided, asymmetric sizes, 1x1 projection
      {{3, 11, 10, 5}, {3, 3, 5, 7}, 2, 1, 1, 16, 1 << 20},
      {{2, 8, 8, 12}, {1, 1, 12, 20}, 2, 0, 1, 16, 1 << 20},
      // odd sizes, a small on-chip memory
      {{2, 9, 7, 12}, {1, 1, 12, 20}, 2, 0, 1, 16, 48 << 10},
      // dilation
      {{1, 10, 10, 4}, {3, 3, 4, 6}, 1, 2, 2, 16, 1 << 20},
      // a small on-chip memory: row bands within an image, spilled tiles
      {{2, 16, 16, 8}, {3, 3, 8, 8}, 1, 1, 1, 16, 48 << 10},
      // the default 128 x 128 array
      {{2, 7, 7, 64}, {3, 3, 64, 130}, 1, 1, 1, 128, 16 << 20},
      // output rows wider than the array (VGG's 224-wide layers): the filter
      // gradient contracts over segments of a row
      {{2, 5, 37, 3}, {3, 3, 3, 8}, 1, 1, 1, 16, 1 << 20},
      {{1, 6, 41, 4}, {3, 3, 4, 6}, 2, 1, 1, 16, 1 << 20},
  };
  return cases;
}

ref::Conv2dAttrs attrsOf(const ConvCase &c) {
  ref::Conv2dAttrs a;
  a.strides = {c.stride, c.stride};
  a.padding = {c.pad, c.pad, c.pad, c.pad};
  a.dilations = {c.dilation, c.dilation};
  return a;
}

Node convNode(NodeKind kind, const ConvCase &c) {
  Node n(kind);
  n.strides = {c.stride, c.stride};
  n.padding = {c.pad, c.pad, c.pad, c.pad};
  n.dilations = {c.dilation, c.dilation};
  n.layer = "conv";
  return n;
}

} // namespace

TEST(Planner, ConvolutionForward) {
  for (const ConvCase &c : convCases()) {
    ref::Tensor x = random(c.x, "x"), w = random(c.w, "w");
    ref::Shape yShape;
    ASSERT_TRUE(ref::inferConv2dShape(c.x, c.w, attrsOf(c), yShape).isOk());
    Graph g;
    int xi = input(g, c.x, 0), wi = variable(g, "w", c.w),
        yi = result(g, yShape, 0);
    Node n = convNode(NodeKind::Conv2d, c);
    n.inputs = {xi, wi};
    n.outputs = {yi};
    g.nodes.push_back(n);
    for (bool pack : {true, false}) {
      sa::PlanOptions options;
      options.packTaps = pack;
      auto got = run(g, smallTarget(c.array, c.onChip),
                     {{"arg0", x.data}, {"w", w.data}}, options);
      expectClose(got, ref::conv2d(bf16(x), bf16(w), attrsOf(c)), 1e-5,
                  describe(c) + (pack ? "" : " unpacked"));
    }
  }
}

TEST(Planner, ConvolutionBackwardData) {
  for (const ConvCase &c : convCases()) {
    ref::Shape yShape;
    ASSERT_TRUE(ref::inferConv2dShape(c.x, c.w, attrsOf(c), yShape).isOk());
    ref::Tensor dy = random(yShape, "dy"), w = random(c.w, "w");
    Graph g;
    int dyi = input(g, yShape, 0), wi = variable(g, "w", c.w),
        dxi = result(g, c.x, 0);
    Node n = convNode(NodeKind::Conv2dBackwardData, c);
    n.inputs = {dyi, wi};
    n.outputs = {dxi};
    g.nodes.push_back(n);
    auto got = run(g, smallTarget(c.array, c.onChip),
                   {{"arg0", dy.data}, {"w", w.data}});
    expectClose(got,
                ref::conv2dBackwardData(bf16(dy), bf16(w), c.x, attrsOf(c)),
                1e-5, describe(c));
  }
}

TEST(Planner, ConvolutionBackwardFilter) {
  for (const ConvCase &c : convCases()) {
    ref::Shape yShape;
    ASSERT_TRUE(ref::inferConv2dShape(c.x, c.w, attrsOf(c), yShape).isOk());
    ref::Tensor x = random(c.x, "x"), dy = random(yShape, "dy");
    Graph g;
    int xi = input(g, c.x, 0), dyi = input(g, yShape, 1),
        dwi = result(g, c.w, 0);
    Node n = convNode(NodeKind::Conv2dBackwardFilter, c);
    n.inputs = {xi, dyi};
    n.outputs = {dwi};
    g.nodes.push_back(n);
    auto got = run(g, smallTarget(c.array, c.onChip),
                   {{"arg0", x.data}, {"arg1", dy.data}});
    expectClose(got,
                ref::conv2dBackwardFilter(bf16(x), bf16(dy), c.w, attrsOf(c)),
                1e-5, describe(c));
  }
}

// The filter gradient stages only the dy channels of the output blocks it
// accumulates, and accumulates as many blocks at once as staging holds: x
// is read once per group of blocks, dy once in all (five blocks of 16
// channels, four at once, so x twice).
TEST(Planner, FilterGradientReadsDyOnce) {
  ref::Shape xs = {2, 6, 6, 8}, ys = {2, 6, 6, 72};
  Graph g;
  int xi = input(g, xs, 0), dyi = input(g, ys, 1),
      dwi = result(g, {1, 1, 8, 72}, 0);
  Node n(NodeKind::Conv2dBackwardFilter);
  n.inputs = {xi, dyi};
  n.outputs = {dwi};
  g.nodes.push_back(n);
  sim::TargetConfig t = smallTarget(16, 1 << 20);
  sim::ProgramTSink sink(t, "test", 1);
  sa::PlanOptions options;
  options.allowResident = false;
  ASSERT_TRUE(sa::planProgram(g, t, options, sink).isOk());
  sim::TimingResult r = sim::simulateTiming(*sink.take(), t);
  EXPECT_EQ(r.hbmBytesRead, uint64_t(4 * (2 * 2 * 36 * 8 + 2 * 36 * 72)));
}

// A strided 1x1 convolution without padding (a downsampling shortcut) and
// its filter gradient load only the input pixels they read: a quarter of x
// at stride 2. (Their values: ConvolutionForward, ConvolutionBackwardFilter.)
TEST(Planner, StridedProjectionLoadsOnlyThePixelsItReads) {
  ref::Shape xs = {2, 8, 8, 12}, ws = {1, 1, 12, 20}, ys = {2, 4, 4, 20};
  for (bool filter : {false, true}) {
    Graph g;
    int xi = input(g, xs, 0);
    int other = filter ? input(g, ys, 1) : variable(g, "w", ws);
    int out = result(g, filter ? ws : ys, 0);
    Node n(filter ? NodeKind::Conv2dBackwardFilter : NodeKind::Conv2d);
    n.strides = {2, 2};
    n.inputs = {xi, other};
    n.outputs = {out};
    g.nodes.push_back(n);
    sim::TargetConfig t = smallTarget(16, 1 << 20);
    sim::ProgramTSink sink(t, "test", 1);
    ASSERT_TRUE(sa::planProgram(g, t, {}, sink).isOk());
    sim::TimingResult r = sim::simulateTiming(*sink.take(), t);
    int64_t quarter = 2 * 4 * 4 * 12;
    EXPECT_EQ(r.hbmBytesRead,
              uint64_t(4 * (quarter + (filter ? 2 * 4 * 4 * 20 : 12 * 20))))
        << (filter ? "filter gradient" : "forward");
  }
}

// The space-to-depth stem computes the 7x7/2 convolution of the original
// image exactly, and its filter gradient maps back onto the 7x7 filter.
TEST(Planner, SpaceToDepthStem) {
  ref::Shape xs = {2, 16, 16, 3}, ws = {7, 7, 3, 8};
  ref::Conv2dAttrs a;
  a.strides = {2, 2};
  a.padding = {3, 3, 3, 3};
  ref::Tensor x = random(xs, "x"), w = random(ws, "w");
  ref::Shape ys;
  ASSERT_TRUE(ref::inferConv2dShape(xs, ws, a, ys).isOk());
  ref::Tensor dy = random(ys, "dy");
  for (bool filterGrad : {false, true}) {
    Graph g;
    sa::Tensor in;
    in.name = "image";
    in.shape = {2, 8, 8, 12};
    in.kind = TensorKind::Input;
    in.argument = 0;
    in.hostLayout = fb::HostLayout::SpaceToDepth2;
    int xi = g.addTensor(in);
    Node n(filterGrad ? NodeKind::Conv2dBackwardFilter : NodeKind::Conv2d);
    n.strides = {2, 2};
    n.padding = {3, 3, 3, 3};
    n.spaceToDepth = true;
    n.layer = "conv1";
    if (filterGrad) {
      n.inputs = {xi, input(g, ys, 1)};
      n.outputs = {result(g, ws, 0)};
    } else {
      n.inputs = {xi, variable(g, "w", ws)};
      n.outputs = {result(g, ys, 0)};
    }
    g.nodes.push_back(n);
    sim::TargetConfig t;
    if (filterGrad) {
      auto got = run(g, t, {{"arg0", x.data}, {"arg1", dy.data}});
      expectClose(got, ref::conv2dBackwardFilter(bf16(x), bf16(dy), ws, a),
                  1e-5, "stem filter gradient");
    } else {
      auto got = run(g, t, {{"arg0", x.data}, {"w", w.data}});
      expectClose(got, ref::conv2d(bf16(x), bf16(w), a), 1e-5, "stem");
    }
  }
}

// The second shape's K x 16 block of B does not fit the small memory's
// staging (VGG's classifier.0 at scale): the contraction runs in chunks that
// the accumulator sums.
TEST(Planner, MatmulsWithTransposesAndBias) {
  for (auto [M, K, N, onChip] : {std::tuple<int64_t, int64_t, int64_t, int64_t>{
                                     37, 45, 29, 1 << 20},
                                 {9, 700, 29, 64 << 10}})
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (bool bias : {false, true}) {
        ref::Shape as = ta ? ref::Shape{K, M} : ref::Shape{M, K};
        ref::Shape bs = tb ? ref::Shape{N, K} : ref::Shape{K, N};
        ref::Tensor A = random(as, "a"), B = random(bs, "b"),
                    bv = random({N}, "bias");
        Graph g;
        Node n(NodeKind::Matmul);
        n.transposeA = ta;
        n.transposeB = tb;
        n.inputs = {input(g, as, 0), variable(g, "w", bs)};
        if (bias)
          n.inputs.push_back(variable(g, "bias", {N}));
        n.outputs = {result(g, {M, N}, 0)};
        n.layer = "fc";
        g.nodes.push_back(n);
        std::map<std::string, std::vector<float>> values = {{"arg0", A.data},
                                                            {"w", B.data}};
        if (bias)
          values["bias"] = bv.data;
        auto got = run(g, smallTarget(16, onChip), values);
        ref::Tensor want({M, N});
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double s = bias ? bv[j] : 0.0;
            for (int64_t k = 0; k < K; ++k)
              s += double(ref::roundToBf16(ta ? A.at(k, i) : A.at(i, k))) *
                   ref::roundToBf16(tb ? B.at(j, k) : B.at(k, j));
            want.at(i, j) = float(s);
          }
        expectClose(got, want, 1e-5,
                    "K " + std::to_string(K) + " transpose " + (ta ? "a" : "-") +
                        (tb ? "b" : "-") + (bias ? " bias" : ""));
      }
}

TEST(Planner, Bf16OutputsAreRoundedOnStore) {
  ConvCase c = {{1, 6, 6, 4}, {3, 3, 4, 5}, 1, 1, 1, 16, 1 << 20};
  ref::Tensor x = random(c.x, "x"), w = random(c.w, "w");
  Graph g;
  int xi = input(g, c.x, 0), wi = variable(g, "w", c.w),
      yi = result(g, {1, 6, 6, 5}, 0, fb::DType::BF16);
  Node n = convNode(NodeKind::Conv2d, c);
  n.inputs = {xi, wi};
  n.outputs = {yi};
  g.nodes.push_back(n);
  auto got =
      run(g, smallTarget(16, 1 << 20), {{"arg0", x.data}, {"w", w.data}});
  ref::Tensor want = ref::conv2d(bf16(x), bf16(w), attrsOf(c));
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i], ref::roundToBf16(got[i]));
    EXPECT_NEAR(got[i], want.data[i], 1e-2 * (1 + std::fabs(want.data[i])));
  }
}

TEST(Planner, ReportsOpsThatCannotFit) {
  ConvCase c = {{1, 64, 64, 64}, {3, 3, 64, 64}, 1, 1, 1, 16, 16 << 10};
  Graph g;
  Node n = convNode(NodeKind::Conv2d, c);
  n.inputs = {input(g, c.x, 0), variable(g, "w", c.w)};
  n.outputs = {result(g, c.x, 0)};
  g.nodes.push_back(n);
  sim::TargetConfig t = smallTarget(16, 16 << 10);
  sim::ProgramTSink sink(t, "test", 1);
  kiln::Status s = sa::planProgram(g, t, {}, sink);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("conv2d (conv): the filter slice"),
            std::string::npos)
      << s.message();
}
