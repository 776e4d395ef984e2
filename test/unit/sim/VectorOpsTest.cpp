//===- VectorOpsTest.cpp - Vector-unit ops against the reference kernels --===//
//
// Each training op's vector-unit sequence (as the conversion emits it) must
// give the reference kernel's values to fp32 rounding.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/batchnorm.h"
#include "kiln/ref/init.h"
#include "kiln/ref/loss.h"
#include "kiln/ref/optimizer.h"
#include "kiln/ref/pool.h"
#include "kiln/ref/schedule.h"
#include "kiln/sim/Builder.h"
#include "kiln/sim/Functional.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace kiln::sim;
namespace ref = kiln::ref;
using Op = fb::VectorOp;

namespace {

ref::Tensor random(ref::Shape shape, const char *name, double scale = 1.0,
                   double shift = 0.0) {
  ref::Tensor t(shape);
  ref::RandomStream r(3, name);
  for (int64_t i = 0; i < t.size(); ++i)
    t[i] = float(shift + scale * r.normal(uint64_t(i)));
  return t;
}

/// On-chip buffers and vector instructions, executed functionally.
struct Harness {
  TargetConfig target;
  ProgramTSink sink{target, "vector", 1};
  ProgramBuilder b{sink};
  int64_t nextOffset = 0;
  std::vector<std::pair<uint32_t, std::vector<float>>> inits;
  std::unique_ptr<Program> program;
  std::unique_ptr<FunctionalMachine> machine;

  Harness() { b.beginSourceOp("op", "layer"); }
  uint32_t buf(int64_t elems, std::vector<float> init = {}) {
    BufferSpec s;
    s.name = "b" + std::to_string(b.numBuffers());
    s.space = fb::Space::OnChip;
    s.shape = {elems};
    s.offset = nextOffset;
    nextOffset += 4 * elems;
    uint32_t id = b.addBuffer(s);
    if (!init.empty())
      inits.push_back({id, std::move(init)});
    return id;
  }
  uint32_t buf(const ref::Tensor &t) { return buf(t.size(), t.data); }
  static fb::Region at(uint32_t id) { return fb::Region(id, 0); }
  void run() {
    b.finish();
    program = sink.take();
    kiln::Status s = verifyProgram(*program, target);
    ASSERT_TRUE(s.isOk()) << s.message();
    machine = std::make_unique<FunctionalMachine>(*program);
    for (auto &[id, values] : inits)
      machine->buffer(id) = values;
    s = machine->run();
    ASSERT_TRUE(s.isOk()) << s.message();
  }
  const std::vector<float> &get(uint32_t id) { return machine->buffer(id); }
};

void expectNear(const std::vector<float> &got, const std::vector<float> &want,
                double tol, const char *what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::fabs(want[i])))
        << what << " [" << i << "]";
}

} // namespace

TEST(VectorOps, BatchNormTrainingForward) {
  const int64_t rows = 2 * 5 * 5, c = 6;
  ref::Tensor x = random({2, 5, 5, c}, "x", 2.0, 1.5), gamma = random({c}, "g"),
              beta = random({c}, "be"), rm = random({c}, "rm"),
              rv = random({c}, "rv", 0.1, 1.0);
  Harness h;
  uint32_t bx = h.buf(x), bg = h.buf(gamma), bb = h.buf(beta), brm = h.buf(rm),
           brv = h.buf(rv);
  uint32_t sum = h.buf(c), sq = h.buf(c);
  uint32_t mean = h.buf(c), var = h.buf(c), scale = h.buf(c), shift = h.buf(c),
           nrm = h.buf(c), nrv = h.buf(c), y = h.buf(rows * c);
  auto R = Harness::at;
  h.b.vector(Op::Fill, {}, {R(sum)}, 1, c, {0.0});
  h.b.vector(Op::Fill, {}, {R(sq)}, 1, c, {0.0});
  // Two row blocks, as a tiled conv output arrives.
  h.b.vector(Op::ChannelMoments, {R(bx)}, {R(sum), R(sq)}, 20, c);
  h.b.vector(Op::ChannelMoments, {fb::Region(bx, 20 * c)}, {R(sum), R(sq)},
             rows - 20, c);
  h.b.vector(Op::BnStats, {R(sum), R(sq), R(bg), R(bb), R(brm), R(brv)},
             {R(mean), R(var), R(scale), R(shift), R(nrm), R(nrv)}, 1, c,
             {double(rows), 1e-5, 0.9});
  h.b.vector(Op::ChannelAffine, {R(bx), R(scale), R(shift)}, {R(y)}, rows, c,
             {}, {0});
  h.run();
  ref::BatchNormTrainResult want =
      ref::batchNormTrain(x, gamma, beta, rm, rv, 1e-5f, 0.9f);
  expectNear(h.get(y), want.y.data, 1e-5, "y");
  expectNear(h.get(mean), want.batchMean.data, 1e-6, "mean");
  expectNear(h.get(var), want.batchVar.data, 1e-5, "var");
  expectNear(h.get(nrm), want.newRunningMean.data, 1e-6, "running mean");
  expectNear(h.get(nrv), want.newRunningVar.data, 1e-5, "running var");
}

TEST(VectorOps, BatchNormBackward) {
  const int64_t rows = 3 * 4 * 4, c = 5;
  ref::Tensor x = random({3, 4, 4, c}, "x", 1.5, -0.5),
              dy = random({3, 4, 4, c}, "dy"), gamma = random({c}, "g");
  ref::BatchNormTrainResult fwd =
      ref::batchNormTrain(x, gamma, ref::Tensor({c}), ref::Tensor({c}),
                          ref::Tensor::filled({c}, 1), 1e-5f, 0.9f);
  Harness h;
  auto R = Harness::at;
  uint32_t bdy = h.buf(dy), bx = h.buf(x), bg = h.buf(gamma),
           bm = h.buf(fwd.batchMean), bv = h.buf(fwd.batchVar);
  uint32_t s = h.buf(c), d = h.buf(c), dg = h.buf(c), db = h.buf(c),
           A = h.buf(c), B = h.buf(c), K = h.buf(c), dx = h.buf(rows * c);
  h.b.vector(Op::Fill, {}, {R(s)}, 1, c, {0.0});
  h.b.vector(Op::Fill, {}, {R(d)}, 1, c, {0.0});
  h.b.vector(Op::ChannelCenteredDot, {R(bdy), R(bx), R(bm)}, {R(s), R(d)}, rows,
             c);
  h.b.vector(Op::BnGradCoeffs, {R(s), R(d), R(bg), R(bm), R(bv)},
             {R(dg), R(db), R(A), R(B), R(K)}, 1, c, {double(rows), 1e-5});
  h.b.vector(Op::ChannelAffine2, {R(bdy), R(bx), R(A), R(B), R(K)}, {R(dx)},
             rows, c);
  h.run();
  ref::BatchNormGrads want =
      ref::batchNormBackward(dy, x, gamma, fwd.batchMean, fwd.batchVar, 1e-5f);
  expectNear(h.get(dx), want.dx.data, 2e-5, "dx");
  expectNear(h.get(dg), want.dgamma.data, 1e-5, "dgamma");
  expectNear(h.get(db), want.dbeta.data, 1e-5, "dbeta");
}

TEST(VectorOps, PoolingMatchesTheReference) {
  ref::Tensor x = random({2, 7, 6, 3}, "x");
  ref::Pool2dAttrs a;
  a.window = {3, 3};
  a.strides = {2, 2};
  a.padding = {1, 1, 1, 0};
  ref::Tensor my = ref::maxPool(x, a), ay = ref::avgPool(x, a);
  ref::Tensor dy = random(my.shape, "dy");
  std::vector<int64_t> attrs = {2, 7, 6, 3, 3, 3, 2, 2, 1, 1, 1, 0};
  Harness h;
  auto R = Harness::at;
  uint32_t bx = h.buf(x), bdy = h.buf(dy);
  uint32_t m = h.buf(my.size()), av = h.buf(ay.size()), dxm = h.buf(x.size()),
           dxa = h.buf(x.size());
  h.b.vector(Op::MaxPool, {R(bx)}, {R(m)}, 0, 0, {}, attrs);
  h.b.vector(Op::AvgPool, {R(bx)}, {R(av)}, 0, 0, {}, attrs);
  h.b.vector(Op::MaxPoolGrad, {R(bdy), R(bx)}, {R(dxm)}, 0, 0, {}, attrs);
  h.b.vector(Op::AvgPoolGrad, {R(bdy)}, {R(dxa)}, 0, 0, {}, attrs);
  h.run();
  expectNear(h.get(m), my.data, 0, "max");
  expectNear(h.get(av), ay.data, 1e-6, "avg");
  expectNear(h.get(dxm), ref::maxPoolBackward(dy, x, a).data, 1e-6, "max grad");
  expectNear(h.get(dxa), ref::avgPoolBackward(dy, x.shape, a).data, 1e-6,
             "avg grad");
}

TEST(VectorOps, SoftmaxCrossEntropyAndItsGradient) {
  const int64_t n = 6, k = 10;
  ref::Tensor logits = random({n, k}, "l", 3.0);
  std::vector<int32_t> labels = {0, 9, 3, 3, 7, 1};
  std::vector<float> flabels(labels.begin(), labels.end());
  Harness h;
  auto R = Harness::at;
  uint32_t bl = h.buf(logits), blab = h.buf(n, flabels), one = h.buf(1, {1.0f});
  uint32_t loss = h.buf(1), grad = h.buf(n * k);
  h.b.vector(Op::Fill, {}, {R(loss)}, 1, 1, {0.0});
  // Two row blocks accumulate the mean over the whole batch.
  h.b.vector(Op::XentLoss, {R(bl), R(blab)}, {R(loss)}, 4, k, {0.1, 1.0 / n});
  h.b.vector(Op::XentLoss, {fb::Region(bl, 4 * k), fb::Region(blab, 4)},
             {R(loss)}, 2, k, {0.1, 1.0 / n});
  h.b.vector(Op::XentGrad, {R(bl), R(blab), R(one)}, {R(grad)}, n, k,
             {0.1, 1.0 / n});
  h.run();
  ref::Tensor wantLoss, wantGrad;
  ASSERT_TRUE(ref::softmaxCrossEntropy(logits, labels, 0.1f, wantLoss).isOk());
  ASSERT_TRUE(
      ref::softmaxCrossEntropyBackward(logits, labels, 0.1f, 1.0f, wantGrad)
          .isOk());
  expectNear(h.get(loss), wantLoss.data, 1e-6, "loss");
  expectNear(h.get(grad), wantGrad.data, 1e-6, "dlogits");
}

TEST(VectorOps, BadLabelsAreReportedNotCrashed) {
  Harness h;
  auto R = Harness::at;
  uint32_t bl = h.buf(4, {0, 0, 0, 0}), blab = h.buf(2, {1, 7}),
           loss = h.buf(1);
  h.b.vector(Op::XentLoss, {R(bl), R(blab)}, {R(loss)}, 2, 2, {0.0, 0.5});
  h.b.finish();
  auto p = h.sink.take();
  FunctionalMachine m(*p);
  m.buffer(bl) = {0, 0, 0, 0};
  m.buffer(blab) = {1, 7};
  kiln::Status s = m.run();
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(
      s.message().find("label 7.000000 of row 1 is not a class in [0, 2)"),
      std::string::npos)
      << s.message();
}

TEST(VectorOps, OptimizerUpdatesMatchTheReference) {
  ref::Tensor w = random({4, 8}, "w"), g = random({4, 8}, "g", 0.1),
              v = random({4, 8}, "v", 0.01);
  for (bool nesterov : {false, true}) {
    Harness h;
    auto R = Harness::at;
    uint32_t bw = h.buf(w), bg = h.buf(g), bv = h.buf(v),
             lr = h.buf(1, {0.05f});
    uint32_t w2 = h.buf(w), v2 = h.buf(v), wsq = h.buf(1), gsq = h.buf(1);
    h.b.vector(Op::SgdUpdate, {R(bw), R(bg), R(bv), R(lr)}, {R(bw), R(bv)}, 4,
               8, {0.9, 1e-4, nesterov ? 1.0 : 0.0});
    h.b.vector(Op::Fill, {}, {R(wsq)}, 1, 1, {0.0});
    h.b.vector(Op::Fill, {}, {R(gsq)}, 1, 1, {0.0});
    h.b.vector(Op::SumSquares, {R(w2)}, {R(wsq)}, 4, 8);
    h.b.vector(Op::SumSquares, {R(bg)}, {R(gsq)}, 4, 8);
    h.b.vector(Op::LarsUpdate, {R(w2), R(bg), R(v2), R(lr), R(wsq), R(gsq)},
               {R(w2), R(v2)}, 4, 8,
               {0.9, 0.001, 1e-4, 1e-5, 0.0, nesterov ? 1.0 : 0.0});
    h.run();
    ref::Tensor sw = w, sv = v, lw = w, lv = v;
    ref::sgdMomentumUpdate(sw, g, sv, {0.05, 0.9, 1e-4, nesterov}, true);
    ref::LarsParams lp;
    lp.learningRate = 0.05;
    lp.epsilon = 1e-5;
    lp.nesterov = nesterov;
    ref::larsUpdate(lw, g, lv, lp, false);
    expectNear(h.get(bw), sw.data, 1e-6, "sgd w");
    expectNear(h.get(bv), sv.data, 1e-6, "sgd v");
    expectNear(h.get(w2), lw.data, 1e-6, "lars w");
    expectNear(h.get(v2), lv.data, 1e-6, "lars v");
  }
}

TEST(VectorOps, LearningRateSchedules) {
  Harness h;
  auto R = Harness::at;
  uint32_t step = h.buf(1, {300.0f});
  uint32_t params = h.buf(4, {0.1f, 260.0f, 4.8f, 4680.0f});
  uint32_t lr = h.buf(1);
  h.b.vector(Op::LearningRate, {R(step), R(params)}, {R(lr)}, 1, 4, {}, {1});
  h.run();
  ref::Schedule s = ref::Schedule::linearWarmupLinearDecay(
      {double(0.1f), 260, double(4.8f), 4680});
  EXPECT_FLOAT_EQ(h.get(lr)[0], float(ref::learningRate(s, 300)));
}
