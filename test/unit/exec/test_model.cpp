//===- test_model.cpp - A hand-written "compiled" model for the runtime tests ===//
//
// Implements the model ABI (docs/model-abi.md) exactly as kilnc's output
// does, but by hand, so the runtime can be tested without the compiler:
// kiln_model_manifest() plus train and eval steps that call
// kiln_rt_kernel_call for convolutions and matrix products and do the rest
// (ReLU, pooling, softmax cross entropy, SGD with momentum, the schedule)
// with plain loops on the arena.
//
//   images [8,8,8,3] -> conv1 3x3/1 (4) -> ReLU -> conv2 3x3/2 TF-same (8)
//   -> ReLU -> global average pool [8,8] -> dense (10, bias) -> loss
//
// bn.running_mean is per-rank state (an exponential average of the pooled
// features, like batch-norm statistics): never allreduced. Gradients form two
// buckets: {fc.weight, fc.bias} contiguous (reduced in place), {conv2, conv1}
// with a gap between them (packed by the runtime).
//
// The step counter is only used for the learning rate; the model is fully
// deterministic for fixed inputs and thread count.
//
// Two environment variables let the fault tests shape a run:
// KILN_TEST_MODEL_INF_FROM_STEP=N makes bn.running_mean[3] +Inf from the
// N-th step on (state that diverges while the loss stays finite, like a
// batch norm's running variance overflowing), and KILN_TEST_MODEL_STEP_MS=T
// makes every train step last at least T ms (a step longer than mpirun's
// SIGKILL delay, in small). KILN_TEST_MODEL_MANIFEST_MS=T makes reading the
// manifest take T ms: a start-up that blocks (on MPI, on a file system);
// with KILN_TEST_MODEL_MANIFEST_READY=DIR it first creates DIR/ready.<pid>.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/manifest_generated.h"
#include "kiln/rt/model.h"

#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace {

constexpr int64_t kBatch = 8, kSize = 8, kChannels = 3, kC1 = 4, kC2 = 8,
                  kOut = 4, kClasses = 10;

struct Slot {
  int64_t offset;
  std::vector<int64_t> shape;
  const char *dtype;
  int64_t bytes() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n * (std::strcmp(dtype, "f64") == 0 || std::strcmp(dtype, "i64") == 0
                    ? 8
                    : 4);
  }
};

/// The static memory plan, as a compiler would make it.
struct Plan {
  int64_t next = 0;
  Slot place(std::vector<int64_t> shape, const char *dtype = "f32") {
    Slot s{next, std::move(shape), dtype};
    next = (next + s.bytes() + 63) / 64 * 64;
    return s;
  }
};

struct Layout {
  // Variables.
  Slot w1, w2, fcW, fcB, runningMean, w1Mom, w2Mom, fcWMom, fcBMom, schedule;
  int64_t persistent;
  // Train function.
  Slot images, labels, step, loss, logits, lr;
  int64_t scratchBegin;
  Slot a1, a2, pooled, dlogits, dpooled, da2, da1;
  Slot fcWGrad, fcBGrad, w2Grad, gap, w1Grad;
  int64_t scratchEnd;
  // Eval function (its own input slots).
  Slot evalImages, evalLabels, evalLoss;
  int64_t arena;

  Layout() {
    Plan p;
    w1 = p.place({3, 3, kChannels, kC1});
    w2 = p.place({3, 3, kC1, kC2});
    fcW = p.place({kC2, kClasses});
    fcB = p.place({kClasses});
    runningMean = p.place({kC2});
    w1Mom = p.place({3, 3, kChannels, kC1});
    w2Mom = p.place({3, 3, kC1, kC2});
    fcWMom = p.place({kC2, kClasses});
    fcBMom = p.place({kClasses});
    schedule = p.place({5}, "f64");
    persistent = p.next;
    images = p.place({kBatch, kSize, kSize, kChannels});
    labels = p.place({kBatch}, "i32");
    step = p.place({}, "i64");
    loss = p.place({}, "f32");
    logits = p.place({kBatch, kClasses});
    lr = p.place({}, "f32");
    scratchBegin = p.next;
    a1 = p.place({kBatch, kSize, kSize, kC1});
    a2 = p.place({kBatch, kOut, kOut, kC2});
    pooled = p.place({kBatch, kC2});
    dlogits = p.place({kBatch, kClasses});
    dpooled = p.place({kBatch, kC2});
    da2 = p.place({kBatch, kOut, kOut, kC2});
    da1 = p.place({kBatch, kSize, kSize, kC1});
    // fc.weight's 320 bytes end on a 64-byte boundary, so fc.bias follows
    // it directly: bucket 0 is one contiguous run.
    fcWGrad = p.place({kC2, kClasses});
    fcBGrad = p.place({kClasses});
    w2Grad = p.place({3, 3, kC1, kC2});
    gap = p.place({16});
    w1Grad = p.place({3, 3, kChannels, kC1});
    scratchEnd = p.next;
    evalImages = p.place({kBatch, kSize, kSize, kChannels});
    evalLabels = p.place({kBatch}, "i32");
    evalLoss = p.place({}, "f32");
    arena = p.next;
  }
};

const Layout &layout() {
  static const Layout l;
  return l;
}

namespace fb = kiln::rt::fb;

std::unique_ptr<fb::TensorT> tensor(const Slot &s, bool activation = false) {
  auto t = std::make_unique<fb::TensorT>();
  t->offset = s.offset;
  t->shape = s.shape;
  const char *const *names = fb::EnumNamesDType();
  for (fb::DType d : fb::EnumValuesDType())
    if (std::strcmp(names[int(d)], s.dtype) == 0)
      t->dtype = d;
  if (activation)
    t->layout = fb::Layout::nhwc;
  return t;
}

std::unique_ptr<fb::NamedTensorT> named(const char *name,
                                        std::unique_ptr<fb::TensorT> t) {
  auto n = std::make_unique<fb::NamedTensorT>();
  n->name = name;
  n->tensor = std::move(t);
  return n;
}

std::unique_ptr<fb::VariableT> variable(const char *name,
                                        fb::VariableKind kind, const Slot &s,
                                        fb::InitKind init) {
  auto v = std::make_unique<fb::VariableT>();
  v->name = name;
  v->kind = kind;
  v->tensor = tensor(s);
  v->init = init;
  return v;
}

/// The manifest as kilnc writes it (its JSON form in model-abi.md), built
/// with the schema's object API.
std::vector<uint8_t> buildManifest() {
  const Layout &l = layout();
  fb::ManifestT m;
  using Names = std::array<const char *, 3>;
  auto call = [](fb::CallKind kind, const char *fn, Names names,
                 std::unique_ptr<fb::TensorT> a, std::unique_ptr<fb::TensorT> b,
                 std::unique_ptr<fb::TensorT> c) {
    auto t = std::make_unique<fb::CallT>();
    t->kind = kind;
    t->function = fn;
    t->operands.push_back(named(names[0], std::move(a)));
    t->operands.push_back(named(names[1], std::move(b)));
    t->operands.push_back(named(names[2], std::move(c)));
    return t;
  };
  auto conv = [&](fb::CallKind kind, const char *fn, Names names,
                  std::unique_ptr<fb::TensorT> a, std::unique_ptr<fb::TensorT> b,
                  std::unique_ptr<fb::TensorT> c, int stride) {
    auto t = call(kind, fn, names, std::move(a), std::move(b), std::move(c));
    t->strides = std::make_unique<fb::Pair>(stride, stride);
    if (stride == 1) {
      t->padding = std::make_unique<fb::Padding>(1, 1, 1, 1);
      t->dilations = std::make_unique<fb::Pair>(1, 1);
    } else {
      t->padding = std::make_unique<fb::Padding>(0, 1, 0, 1);
    }
    return t;
  };
  const Names fwd = {"input", "filter", "output"};
  const Names bwdData = {"output_grad", "filter", "input_grad"};
  const Names bwdFilter = {"input", "output_grad", "filter_grad"};
  auto dense = [&](const char *fn) {
    auto t = call(fb::CallKind::dense, fn, {"input", "weight", "output"},
                  tensor(l.pooled), tensor(l.fcW), tensor(l.logits));
    t->operands.insert(t->operands.begin() + 2, named("bias", tensor(l.fcB)));
    return t;
  };
  using K = fb::CallKind;
  // 0-2: train forward
  m.calls.push_back(conv(K::conv2d_forward, "train", fwd,
                         tensor(l.images, true), tensor(l.w1),
                         tensor(l.a1, true), 1));
  m.calls.push_back(conv(K::conv2d_forward, "train", fwd, tensor(l.a1, true),
                         tensor(l.w2), tensor(l.a2, true), 2));
  m.calls.push_back(dense("train"));
  // 3-4: dense backward as matmuls
  m.calls.push_back(call(K::matmul, "train", {"lhs", "rhs", "output"},
                         tensor(l.pooled), tensor(l.dlogits),
                         tensor(l.fcWGrad)));
  m.calls.back()->transpose_lhs = true;
  m.calls.push_back(call(K::matmul, "train", {"lhs", "rhs", "output"},
                         tensor(l.dlogits), tensor(l.fcW),
                         tensor(l.dpooled)));
  m.calls.back()->transpose_rhs = true;
  // 5-7: convolution backward
  m.calls.push_back(conv(K::conv2d_backward_filter, "train", bwdFilter,
                         tensor(l.a1, true), tensor(l.da2, true),
                         tensor(l.w2Grad), 2));
  m.calls.push_back(conv(K::conv2d_backward_data, "train", bwdData,
                         tensor(l.da2, true), tensor(l.w2),
                         tensor(l.da1, true), 2));
  m.calls.push_back(conv(K::conv2d_backward_filter, "train", bwdFilter,
                         tensor(l.images, true), tensor(l.da1, true),
                         tensor(l.w1Grad), 1));
  // 8-10: eval forward
  m.calls.push_back(conv(K::conv2d_forward, "eval", fwd,
                         tensor(l.evalImages, true), tensor(l.w1),
                         tensor(l.a1, true), 1));
  m.calls.push_back(conv(K::conv2d_forward, "eval", fwd, tensor(l.a1, true),
                         tensor(l.w2), tensor(l.a2, true), 2));
  m.calls.push_back(dense("eval"));

  using V = fb::VariableKind;
  using I = fb::InitKind;
  m.variables.push_back(variable("conv1.weight", V::parameter, l.w1,
                                 I::he_normal));
  m.variables.push_back(variable("conv2.weight", V::parameter, l.w2,
                                 I::he_normal));
  m.variables.push_back(variable("fc.weight", V::parameter, l.fcW, I::normal));
  m.variables.back()->std = 0.1;
  m.variables.push_back(variable("fc.bias", V::parameter, l.fcB, I::zeros));
  m.variables.push_back(
      variable("bn.running_mean", V::state, l.runningMean, I::zeros));
  m.variables.push_back(
      variable("conv1.weight.momentum", V::state, l.w1Mom, I::zeros));
  m.variables.push_back(
      variable("conv2.weight.momentum", V::state, l.w2Mom, I::zeros));
  m.variables.push_back(
      variable("fc.weight.momentum", V::state, l.fcWMom, I::zeros));
  m.variables.push_back(
      variable("fc.bias.momentum", V::state, l.fcBMom, I::zeros));
  m.variables.push_back(
      variable("kiln.lr_schedule", V::state, l.schedule, I::constant));
  m.variables.back()->value = {0.1, 0.0, 0.0, 1000.0, 0.0};

  m.abi = KILN_RT_MODEL_ABI_VERSION;
  m.model = "exec_test_model";
  m.batch = kBatch;
  m.arena_bytes = l.arena;
  m.persistent_bytes = l.persistent;
  m.schedule = std::make_unique<fb::ScheduleT>();
  m.schedule->kind = "cosine_decay";
  m.schedule->variable = "kiln.lr_schedule";
  m.schedule->slots = {"base_lr", "warmup_init_lr", "warmup_steps",
                       "total_steps", "end_lr"};

  auto function = [&](const char *name, const char *symbol) {
    auto f = std::make_unique<fb::FunctionT>();
    f->name = name;
    f->symbol = symbol;
    f->scratch = std::make_unique<fb::Range>(l.scratchBegin, l.scratchEnd);
    return f;
  };
  auto train = function("train", KILN_RT_MODEL_STEP_PREFIX
                        "train" KILN_RT_MODEL_STEP_SUFFIX);
  train->inputs.push_back(named("images", tensor(l.images, true)));
  train->inputs.push_back(named("labels", tensor(l.labels)));
  train->inputs.push_back(named("step", tensor(l.step)));
  train->outputs.push_back(named("learning_rate", tensor(l.lr)));
  train->outputs.push_back(named("logits", tensor(l.logits)));
  train->outputs.push_back(named("loss", tensor(l.loss)));
  auto eval = function("eval", KILN_RT_MODEL_STEP_PREFIX
                       "eval" KILN_RT_MODEL_STEP_SUFFIX);
  eval->inputs.push_back(named("images", tensor(l.evalImages, true)));
  eval->inputs.push_back(named("labels", tensor(l.evalLabels)));
  eval->outputs.push_back(named("logits", tensor(l.logits)));
  eval->outputs.push_back(named("loss", tensor(l.evalLoss)));
  m.functions.push_back(std::move(eval));
  m.functions.push_back(std::move(train));

  auto bucket = [&](int32_t id, const Slot &a, const Slot &b) {
    auto t = std::make_unique<fb::BucketT>();
    t->id = id;
    t->tensors.push_back(tensor(a));
    t->tensors.push_back(tensor(b));
    return t;
  };
  m.buckets.push_back(bucket(0, l.fcWGrad, l.fcBGrad));
  m.buckets.push_back(bucket(1, l.w2Grad, l.w1Grad));

  flatbuffers::FlatBufferBuilder builder;
  fb::FinishManifestBuffer(builder, fb::Manifest::Pack(builder, &m));
  return {builder.GetBufferPointer(),
          builder.GetBufferPointer() + builder.GetSize()};
}

template <typename T> T *at(kiln_rt_arena_ref_t *arena, const Slot &s) {
  return reinterpret_cast<T *>(arena->aligned + s.offset);
}

int64_t count(const Slot &s) {
  int64_t n = 1;
  for (int64_t d : s.shape)
    n *= d;
  return n;
}

void relu(float *x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    x[i] = x[i] > 0 ? x[i] : 0;
}

/// Conv, ReLU, conv, ReLU, pool, dense: leaves logits.
void forward(kiln_rt_context_t *ctx, kiln_rt_arena_ref_t *arena,
             int32_t firstCall) {
  const Layout &l = layout();
  kiln_rt_kernel_call(ctx, firstCall);
  relu(at<float>(arena, l.a1), count(l.a1));
  kiln_rt_kernel_call(ctx, firstCall + 1);
  relu(at<float>(arena, l.a2), count(l.a2));
  float *a2 = at<float>(arena, l.a2), *pooled = at<float>(arena, l.pooled);
  for (int64_t n = 0; n < kBatch; ++n)
    for (int64_t c = 0; c < kC2; ++c) {
      float s = 0;
      for (int64_t p = 0; p < kOut * kOut; ++p)
        s += a2[(n * kOut * kOut + p) * kC2 + c];
      pooled[n * kC2 + c] = s / float(kOut * kOut);
    }
  kiln_rt_kernel_call(ctx, firstCall + 2);
}

/// Mean softmax cross entropy; writes d(loss)/d(logits) if `dlogits`.
float softmaxCrossEntropy(const float *logits, const int32_t *labels,
                          float *dlogits) {
  double total = 0;
  for (int64_t n = 0; n < kBatch; ++n) {
    const float *row = logits + n * kClasses;
    double maxv = row[0];
    for (int64_t c = 1; c < kClasses; ++c)
      maxv = std::max(maxv, double(row[c]));
    double sum = 0;
    for (int64_t c = 0; c < kClasses; ++c)
      sum += std::exp(double(row[c]) - maxv);
    total += std::log(sum) + maxv - row[labels[n]];
    if (dlogits)
      for (int64_t c = 0; c < kClasses; ++c)
        dlogits[n * kClasses + c] =
            float((std::exp(double(row[c]) - maxv) / sum -
                   (c == labels[n] ? 1.0 : 0.0)) /
                  double(kBatch));
  }
  return float(total / double(kBatch));
}

void sgd(float *w, float *v, const float *g, int64_t n, float lr) {
  for (int64_t i = 0; i < n; ++i) {
    v[i] = 0.9f * v[i] + g[i];
    w[i] -= lr * v[i];
  }
}

/// An integer environment variable, or -1.
int64_t envInt(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? std::atoll(v) : -1;
}

} // namespace

extern "C" const uint8_t *kiln_model_manifest(size_t *size) {
  if (int64_t ms = envInt("KILN_TEST_MODEL_MANIFEST_MS"); ms > 0) {
    // Tells a waiting test that this process is in its start-up (the signal
    // watcher runs), however long a loaded machine took to get here.
    if (const char *dir = std::getenv("KILN_TEST_MODEL_MANIFEST_READY"))
      if (FILE *f = std::fopen(
              (std::string(dir) + "/ready." + std::to_string(::getpid()))
                  .c_str(),
              "w"))
        std::fclose(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  }
  static const std::vector<uint8_t> manifest = buildManifest();
  *size = manifest.size();
  return manifest.data();
}

extern "C" void _mlir_ciface_kiln_model_train_step(kiln_rt_context_t *ctx,
                                                   kiln_rt_arena_ref_t *arena) {
  const Layout &l = layout();
  if (int64_t ms = envInt("KILN_TEST_MODEL_STEP_MS"); ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
  forward(ctx, arena, 0);
  *at<float>(arena, l.loss) = softmaxCrossEntropy(
      at<float>(arena, l.logits), at<int32_t>(arena, l.labels),
      at<float>(arena, l.dlogits));

  // Per-rank state, like BN running statistics: not reduced.
  float *rm = at<float>(arena, l.runningMean);
  const float *pooled = at<float>(arena, l.pooled);
  for (int64_t c = 0; c < kC2; ++c) {
    float mean = 0;
    for (int64_t n = 0; n < kBatch; ++n)
      mean += pooled[n * kC2 + c];
    rm[c] = 0.9f * rm[c] + 0.1f * mean / float(kBatch);
  }
  // The step input counts the steps taken before this one.
  if (int64_t from = envInt("KILN_TEST_MODEL_INF_FROM_STEP");
      from > 0 && *at<int64_t>(arena, l.step) + 1 >= from)
    rm[3] = INFINITY;

  // Dense backward; its bucket goes out while the convolutions run.
  kiln_rt_kernel_call(ctx, 3);
  const float *dlogits = at<float>(arena, l.dlogits);
  float *db = at<float>(arena, l.fcBGrad);
  for (int64_t c = 0; c < kClasses; ++c) {
    db[c] = 0;
    for (int64_t n = 0; n < kBatch; ++n)
      db[c] += dlogits[n * kClasses + c];
  }
  kiln_rt_kernel_call(ctx, 4);
  kiln_rt_allreduce_start(ctx, 0);

  // Pool and ReLU backward.
  const float *dpooled = at<float>(arena, l.dpooled);
  const float *a2 = at<float>(arena, l.a2);
  float *da2 = at<float>(arena, l.da2);
  for (int64_t n = 0; n < kBatch; ++n)
    for (int64_t p = 0; p < kOut * kOut; ++p)
      for (int64_t c = 0; c < kC2; ++c) {
        int64_t i = (n * kOut * kOut + p) * kC2 + c;
        da2[i] = a2[i] > 0 ? dpooled[n * kC2 + c] / float(kOut * kOut) : 0;
      }
  kiln_rt_kernel_call(ctx, 5);
  kiln_rt_kernel_call(ctx, 6);
  const float *a1 = at<float>(arena, l.a1);
  float *da1 = at<float>(arena, l.da1);
  for (int64_t i = 0, e = count(l.a1); i < e; ++i)
    if (!(a1[i] > 0))
      da1[i] = 0;
  kiln_rt_kernel_call(ctx, 7);
  kiln_rt_allreduce_start(ctx, 1);

  // Cosine schedule from its variable's slots (model-abi.md).
  const double *s = at<double>(arena, l.schedule);
  double base = s[0], warmupInit = s[1], warmup = s[2], total = s[3],
         end = s[4];
  double step = double(*at<int64_t>(arena, l.step));
  double lr;
  if (step < warmup)
    lr = warmupInit + (base - warmupInit) * step / warmup;
  else {
    double d = total - warmup, t = std::min(step - warmup, d);
    lr = end + (base - end) * (1 + std::cos(3.14159265358979323846 * t / d)) / 2;
  }
  *at<float>(arena, l.lr) = float(lr);

  kiln_rt_allreduce_wait(ctx, 0);
  kiln_rt_allreduce_wait(ctx, 1);
  sgd(at<float>(arena, l.fcW), at<float>(arena, l.fcWMom),
      at<float>(arena, l.fcWGrad), count(l.fcW), float(lr));
  sgd(at<float>(arena, l.fcB), at<float>(arena, l.fcBMom),
      at<float>(arena, l.fcBGrad), count(l.fcB), float(lr));
  sgd(at<float>(arena, l.w2), at<float>(arena, l.w2Mom),
      at<float>(arena, l.w2Grad), count(l.w2), float(lr));
  sgd(at<float>(arena, l.w1), at<float>(arena, l.w1Mom),
      at<float>(arena, l.w1Grad), count(l.w1), float(lr));
}

extern "C" void _mlir_ciface_kiln_model_eval_step(kiln_rt_context_t *ctx,
                                                  kiln_rt_arena_ref_t *arena) {
  const Layout &l = layout();
  forward(ctx, arena, 8);
  *at<float>(arena, l.evalLoss) = softmaxCrossEntropy(
      at<float>(arena, l.logits), at<int32_t>(arena, l.evalLabels), nullptr);
}
