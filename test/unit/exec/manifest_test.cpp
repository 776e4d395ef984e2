//===- manifest_test.cpp - Verifying and validating the model manifest ----===//
//
// Variants of the test model's manifest are built through the schema's
// object API (manifest_test_util.h); what the schema rules out (a string
// where a number goes, an unknown member) cannot be written, and broken
// bytes are the verifier's (and the fuzzer's) business.

#include "exec_test_util.h"
#include "manifest_test_util.h"

#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/model.h"

#include <cmath>
#include <cstring>

namespace kiln::rt::exec::test {
namespace {

TEST(ManifestTest, ParsesTheTestModel) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->abi, KILN_RT_MODEL_ABI_VERSION);
  EXPECT_EQ(m->model, "exec_test_model");
  EXPECT_EQ(m->batch, 8);
  ASSERT_EQ(m->variables.size(), 10u);
  const Variable *w1 = m->findVariable("conv1.weight");
  ASSERT_NE(w1, nullptr);
  EXPECT_EQ(w1->kind, VariableKind::Parameter);
  EXPECT_EQ(w1->init, InitKind::HeNormal);
  EXPECT_EQ(w1->tensor.shape, (std::vector<int64_t>{3, 3, 3, 4}));
  const Variable *fc = m->findVariable("fc.weight");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->init, InitKind::Normal);
  // The std is the f32 attribute kiln-run reads, widened.
  EXPECT_EQ(fc->stddev, double(0.1f));
  const Variable *schedule = m->findVariable("kiln.lr_schedule");
  ASSERT_NE(schedule, nullptr);
  EXPECT_EQ(schedule->kind, VariableKind::State);
  EXPECT_EQ(schedule->value, (std::vector<double>{0.1, 0, 0, 1000, 0}));
  ASSERT_TRUE(m->schedule.has_value());
  EXPECT_EQ(m->schedule->kind, "cosine_decay");
  EXPECT_EQ(m->schedule->slots.size(), 5u);

  const Function *train = m->findFunction("train");
  ASSERT_NE(train, nullptr);
  EXPECT_EQ(train->symbol, "kiln_model_train_step");
  EXPECT_EQ(train->input("images")->layout, Layout::Nhwc);
  EXPECT_EQ(train->input("step")->dtype, DType::I64);
  EXPECT_LT(train->scratch[0], train->scratch[1]);
  EXPECT_NE(m->findFunction("eval"), nullptr);

  ASSERT_EQ(m->calls.size(), 11u);
  EXPECT_EQ(m->calls[0].kind, CallKind::Conv2dForward);
  EXPECT_EQ(m->calls[1].strides, (std::array<int64_t, 2>{2, 2}));
  EXPECT_EQ(m->calls[1].padding, (std::array<int64_t, 4>{0, 1, 0, 1}));
  EXPECT_EQ(m->calls[2].kind, CallKind::Dense);
  EXPECT_TRUE(m->calls[2].hasOperand("bias"));
  EXPECT_TRUE(m->calls[3].transposeLhs);
  EXPECT_FALSE(m->calls[3].transposeRhs);
  EXPECT_TRUE(m->calls[4].transposeRhs);
  EXPECT_EQ(m->calls[6].kind, CallKind::Conv2dBackwardData);
  EXPECT_EQ(m->calls[8].function, "eval");
  ASSERT_EQ(m->buckets.size(), 2u);
  EXPECT_EQ(m->buckets[1].tensors.size(), 2u);
  EXPECT_LE(m->persistentBytes, train->scratch[0]);
}

/// The test manifest's schedule epochs set to `epochs`.
void setEpochs(fb::ManifestT &m,
               std::vector<std::pair<const char *, double>> epochs) {
  for (const auto &[slot, e] : epochs) {
    auto entry = std::make_unique<fb::SlotEpochsT>();
    entry->slot = slot;
    entry->epochs = e;
    m.schedule->epochs.push_back(std::move(entry));
  }
}

struct BadCase {
  const char *name;
  std::string bytes;
  std::string message;
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

class ManifestErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ManifestErrorTest, IsRejectedWithAClearMessage) {
  auto m = parseManifest(GetParam().bytes);
  ASSERT_FALSE(m.isOk()) << GetParam().name << " was accepted";
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find(GetParam().message), std::string::npos)
      << m.status().message();
}

std::vector<BadCase> badCases() {
  using M = fb::ManifestT;
  return {
      {"truncated", testManifest().substr(0, 200),
       "manifest: not a valid manifest buffer"},
      {"not_a_buffer", "[1, 2]", "manifest: not a valid manifest buffer"},
      {"abi", mutated([](M &m) { m.abi = 1; }),
       "the model was compiled for model ABI 1, but this runtime implements "
       "ABI " + std::to_string(KILN_RT_MODEL_ABI_VERSION)},
      {"no_arena", mutated([](M &m) { m.arena_bytes = 0; }),
       "arena_bytes: must be positive"},
      {"small_arena", mutated([](M &m) { m.arena_bytes = 1000; }),
       "lie outside the arena"},
      {"negative_batch", mutated([](M &m) { m.batch = -8; }),
       "batch: must be positive"},
      {"dtype",
       mutated([](M &m) {
         variable(m, "kiln.lr_schedule").tensor->dtype = fb::DType(17);
       }),
       "unknown dtype"},
      {"init",
       mutated([](M &m) { variable(m, "conv1.weight").init = fb::InitKind(9); }),
       "unknown initializer"},
      {"normal_without_std",
       mutated([](M &m) { variable(m, "fc.weight").std = 0; }),
       "variables[2] (fc.weight).std: the standard deviation must be > 0"},
      {"negative_std",
       mutated([](M &m) { variable(m, "fc.weight").std = -0.1; }),
       "the standard deviation must be > 0"},
      {"constant_count",
       mutated([](M &m) { variable(m, "kiln.lr_schedule").value = {0.1, 0}; }),
       "2 values for a variable of 5 elements"},
      {"kind",
       mutated([](M &m) {
         variable(m, "conv1.weight").kind = fb::VariableKind(7);
       }),
       "unknown variable kind"},
      {"duplicate_variable",
       mutated([](M &m) { variable(m, "conv2.weight").name = "conv1.weight"; }),
       "duplicate variable name \"conv1.weight\""},
      {"schedule_variable",
       mutated([](M &m) { m.schedule->variable = "fc.bias"; }),
       "must be f64[5] (one per slot)"},
      {"schedule_slot",
       mutated([](M &m) { m.schedule->slots.back() = "base_lr"; }),
       "duplicate slot \"base_lr\""},
      // Slots the runtime fills in (ABI 5).
      {"epochs_unknown_slot",
       mutated([](M &m) { setEpochs(m, {{"decay_steps", 2}}); }),
       "schedule.epochs.decay_steps: \"decay_steps\" is not a slot of the "
       "schedule (its slots: base_lr, warmup_init_lr, warmup_steps, "
       "total_steps, end_lr)"},
      {"epochs_not_steps", mutated([](M &m) { setEpochs(m, {{"end_lr", 2}}); }),
       "schedule.epochs.end_lr: \"end_lr\" is not a step count (*_steps, "
       "boundary*); only those are filled in at run time"},
      {"epochs_negative",
       mutated([](M &m) { setEpochs(m, {{"warmup_steps", -1}}); }),
       "schedule.epochs.warmup_steps: epochs must not be negative, got -1"},
      {"epochs_twice",
       mutated([](M &m) {
         setEpochs(m, {{"warmup_steps", 1}, {"warmup_steps", 2}});
       }),
       "schedule.epochs.warmup_steps: duplicate slot \"warmup_steps\""},
      {"run_length_unknown_slot",
       mutated([](M &m) { m.schedule->run_length = "steps"; }),
       "schedule.run_length: \"steps\" is not a slot of the schedule"},
      {"run_length_not_steps",
       mutated([](M &m) { m.schedule->run_length = "base_lr"; }),
       "schedule.run_length: \"base_lr\" is not a step count"},
      {"run_length_and_epochs",
       mutated([](M &m) {
         setEpochs(m, {{"total_steps", 2}});
         m.schedule->run_length = "total_steps";
       }),
       "schedule.run_length: \"total_steps\" is given in epochs too "
       "(schedule.epochs)"},
      {"no_train", mutated([](M &m) { function(m, "train").name = "training"; }),
       "missing the \"train\" function"},
      {"no_step",
       mutated([](M &m) {
         for (auto &in : function(m, "train").inputs)
           if (in->name == "step")
             in->name = "steps";
       }),
       "functions.train.inputs: missing input \"step\""},
      {"labels_layout",
       mutated([](M &m) {
         member(function(m, "train").inputs, "labels").layout =
             fb::Layout::nhwc;
       }),
       "a layout is only meaningful for a 4-D tensor"},
      {"call_kind", mutated([](M &m) { m.calls[0]->kind = fb::CallKind(42); }),
       "unknown call kind"},
      {"call_without_strides", mutated([](M &m) { m.calls[0]->strides.reset(); }),
       "calls[0]: missing member \"strides\""},
      {"call_stride",
       mutated([](M &m) { m.calls[0]->strides = std::make_unique<fb::Pair>(0, 1); }),
       "calls[0].strides: value 0 is below 1"},
      {"matmul_strides",
       mutated([](M &m) { m.calls[3]->strides = std::make_unique<fb::Pair>(1, 1); }),
       "calls[3]: unknown member \"strides\""},
      {"call_operand",
       mutated([](M &m) {
         for (auto &o : m.calls[0]->operands)
           if (o->name == "filter")
             o->name = "weights";
       }),
       "calls[0].operands: missing operand \"filter\""},
      {"conv_shape",
       mutated([](M &m) {
         m.calls[0]->padding = std::make_unique<fb::Padding>(0, 0, 0, 0);
       }),
       "calls[0].operands.output: shape [8,8,8,4] does not match the "
       "expected [8,6,6,4]"},
      {"matmul_transpose",
       mutated([](M &m) { m.calls[4]->transpose_rhs = false; }),
       "calls[4]: contraction sizes differ"},
      {"bucket_id", mutated([](M &m) { m.buckets[1]->id = 7; }),
       "buckets[1].id: bucket ids must be 0, 1, ... in order; got 7"},
      {"misaligned",
       mutated([](M &m) { variable(m, "conv1.weight").tensor->offset = 2; }),
       "is negative or not a multiple of the f32 element size"},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, ManifestErrorTest,
                         ::testing::ValuesIn(badCases()),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(ManifestTest, OverlappingVariablesAreRejected) {
  // Move conv2.weight onto conv1.weight's bytes.
  auto bad = parseManifest(mutated(
      [](fb::ManifestT &m) { variable(m, "conv2.weight").tensor->offset = 64; }));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find(
                "\"conv1.weight\" and \"conv2.weight\" overlap in the arena"),
            std::string::npos)
      << bad.status().message();
}

TEST(ManifestTest, OtherFunctionsAreIgnored) {
  // A newer compiler may describe more functions than the runtime runs.
  auto m = parseManifest(mutated([](fb::ManifestT &m) {
    auto predict = std::make_unique<fb::FunctionT>();
    predict->name = "predict";
    predict->symbol = "kiln_model_predict_step";
    predict->scratch = std::make_unique<fb::Range>(0, 0);
    m.functions.push_back(std::move(predict));
  }));
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->findFunction("predict"), nullptr);
}

TEST(ManifestTest, ScheduleSlotsLeftToTheRun) {
  // Without them, nothing is left to the run.
  auto plain = parseManifest(testManifest());
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  EXPECT_TRUE(plain->schedule->epochs.empty());
  EXPECT_EQ(plain->schedule->runLength, "");

  auto m = parseManifest(mutated([](fb::ManifestT &m) {
    setEpochs(m, {{"warmup_steps", 0.5}});
    m.schedule->run_length = "total_steps";
  }));
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->schedule->epochs,
            (std::map<std::string, double>{{"warmup_steps", 0.5}}));
  EXPECT_EQ(m->schedule->runLength, "total_steps");

  m = parseManifest(mutated([](fb::ManifestT &m) {
    setEpochs(m, {{"warmup_steps", 1}, {"total_steps", 90}});
  }));
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->schedule->epochs,
            (std::map<std::string, double>{{"total_steps", 90},
                                           {"warmup_steps", 1}}));
}

TEST(ManifestTest, StepSlotsAreNamedSo) {
  for (const char *slot : {"warmup_steps", "total_steps", "train_steps",
                           "boundary0", "boundary12"})
    EXPECT_TRUE(isScheduleStepSlot(slot)) << slot;
  for (const char *slot : {"lr", "base_lr", "end_lr", "factor", "_steps",
                           "steps", "power"})
    EXPECT_FALSE(isScheduleStepSlot(slot)) << slot;
}

/// `t` as a schema tensor, with `dtype` and `layout` as given.
std::unique_ptr<fb::TensorT> tensorOf(const TensorRef &t, fb::DType dtype,
                                      fb::Layout layout) {
  return tensorT(t.offset, t.shape, dtype, layout);
}

using Operands = std::vector<std::pair<const char *, std::unique_ptr<fb::TensorT>>>;

/// The test manifest with a call of `kind` and `operands` first, changed by
/// `change`.
std::string withCall(fb::CallKind kind, Operands operands,
                     const std::function<void(fb::CallT &)> &change = {}) {
  auto call = std::make_unique<fb::CallT>();
  call->kind = kind;
  for (auto &[name, tensor] : operands)
    call->operands.push_back(namedT(name, std::move(tensor)));
  if (change)
    change(*call);
  return mutated([&](fb::ManifestT &m) {
    m.calls.insert(m.calls.begin(), std::move(call));
  });
}

TEST(ManifestTest, ReorderCallsKeepShapeAndElementType) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  // The first convolution's output, an activation of 4 channels.
  const TensorRef a1 = m->calls[0].operand("output");
  const TensorRef images = *m->findFunction("train")->input("images");
  auto reorder = [](std::unique_ptr<fb::TensorT> in,
                    std::unique_ptr<fb::TensorT> out) {
    Operands operands;
    operands.emplace_back("input", std::move(in));
    operands.emplace_back("output", std::move(out));
    return parseManifest(withCall(fb::CallKind::reorder, std::move(operands)));
  };
  using D = fb::DType;
  using L = fb::Layout;

  auto ok = reorder(tensorOf(a1, D::f32, L::nhwc), tensorOf(a1, D::f32, L::nchw));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->calls[0].kind, CallKind::Reorder);
  EXPECT_EQ(ok->calls[0].operand("output").layout, Layout::Nchw);

  auto shape =
      reorder(tensorOf(a1, D::f32, L::nhwc), tensorOf(images, D::f32, L::nhwc));
  ASSERT_FALSE(shape.isOk());
  EXPECT_NE(shape.status().message().find("calls[0].operands.output: shape"),
            std::string::npos)
      << shape.status().toString();

  auto dtype =
      reorder(tensorOf(a1, D::f32, L::nhwc), tensorOf(a1, D::bf16, L::nhwc));
  ASSERT_FALSE(dtype.isOk());
  EXPECT_NE(dtype.status().message().find("a reorder keeps the element type"),
            std::string::npos)
      << dtype.status().toString();

  TensorRef flat = a1;
  flat.shape = {a1.numElements()};
  auto rank =
      reorder(tensorOf(flat, D::f32, L::none), tensorOf(flat, D::f32, L::none));
  ASSERT_FALSE(rank.isOk());
  EXPECT_NE(rank.status().message().find("reorder needs a 4-D activation"),
            std::string::npos)
      << rank.status().toString();
}

/// The test manifest with a forward convolution like its first one, plus
/// `extra` operands, and `relu`, first.
StatusOr<Manifest> withPostOps(const Call &conv, Operands extra,
                               bool relu = false) {
  Operands operands;
  operands.emplace_back("input", tensorOf(conv.operand("input"), fb::DType::f32,
                                          fb::Layout::nhwc));
  operands.emplace_back("filter", tensorOf(conv.operand("filter"),
                                           fb::DType::f32, fb::Layout::none));
  operands.emplace_back("output", tensorOf(conv.operand("output"),
                                           fb::DType::f32, fb::Layout::nhwc));
  for (auto &operand : extra)
    operands.push_back(std::move(operand));
  return parseManifest(withCall(fb::CallKind::conv2d_forward,
                                std::move(operands), [&](fb::CallT &call) {
                                  call.strides =
                                      std::make_unique<fb::Pair>(1, 1);
                                  call.padding =
                                      std::make_unique<fb::Padding>(1, 1, 1, 1);
                                  call.relu = relu;
                                }));
}

Operands one(const char *name, std::unique_ptr<fb::TensorT> tensor) {
  Operands operands;
  operands.emplace_back(name, std::move(tensor));
  return operands;
}

TEST(ManifestTest, ForwardConvolutionPostOps) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  const Call &conv = m->calls[0];
  const TensorRef &out = conv.operand("output");
  TensorRef channels = out; // any arena bytes will do for the check
  channels.shape = {out.shape[3]};
  using D = fb::DType;
  using L = fb::Layout;

  Operands both = one("bias", tensorOf(channels, D::f32, L::none));
  both.emplace_back("residual", tensorOf(out, D::f32, L::nhwc));
  auto ok = withPostOps(conv, std::move(both), /*relu=*/true);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_TRUE(ok->calls[0].relu);
  EXPECT_TRUE(ok->calls[0].hasOperand("bias"));
  EXPECT_TRUE(ok->calls[0].hasOperand("residual"));
  EXPECT_FALSE(ok->calls[1].relu);

  auto expectError = [](const StatusOr<Manifest> &bad,
                        const std::string &text) {
    ASSERT_FALSE(bad.isOk());
    EXPECT_NE(bad.status().message().find(text), std::string::npos)
        << bad.status().toString();
  };
  TensorRef wide = channels;
  wide.shape = {out.shape[3] + 1};
  expectError(withPostOps(conv, one("bias", tensorOf(wide, D::f32, L::none))),
              "calls[0].operands.bias: must be f32[4] (one per output "
              "channel), not f32[5]");
  expectError(
      withPostOps(conv, one("bias", tensorOf(channels, D::bf16, L::none))),
      "calls[0].operands.bias: must be f32[4]");
  expectError(
      withPostOps(conv, one("residual", tensorOf(out, D::f32, L::nChw16c))),
      "calls[0].operands.residual: must have the output's shape, element "
      "type and layout");
  expectError(
      withPostOps(conv, one("shift", tensorOf(channels, D::f32, L::none))),
      "unknown operand \"shift\" for conv2d_forward");
  // The batch statistics: a mean and a variance per output channel.
  TensorRef statistics = channels;
  statistics.shape = {2, out.shape[3]};
  auto withStatistics = withPostOps(
      conv, one("statistics", tensorOf(statistics, D::f32, L::none)));
  ASSERT_TRUE(withStatistics.isOk()) << withStatistics.status().toString();
  EXPECT_TRUE(withStatistics->calls[0].hasOperand("statistics"));
  expectError(
      withPostOps(conv, one("statistics", tensorOf(channels, D::f32, L::none))),
      "calls[0].operands.statistics: must be f32[2, 4] (mean and variance "
      "per output channel), not f32[4]");
  // Post-ops belong to forward convolutions only.
  expectError(parseManifest(mutated([](fb::ManifestT &m) {
                for (auto &call : m.calls)
                  if (call->kind == fb::CallKind::conv2d_backward_data)
                    call->relu = true;
              })),
              "unknown member \"relu\"");
}

TEST(ManifestTest, DenseBackwardWeightsShapes) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  TensorRef x = m->calls[0].operand("output"); // any arena bytes will do
  auto call = [&](std::vector<int64_t> dwShape, std::vector<int64_t> dbShape) {
    Operands operands;
    operands.emplace_back("input", tensorT(x.offset, {2, 8}));
    operands.emplace_back("output_grad", tensorT(x.offset, {2, 4}));
    operands.emplace_back("weight_grad", tensorT(x.offset, std::move(dwShape)));
    operands.emplace_back("bias_grad", tensorT(x.offset, std::move(dbShape)));
    return parseManifest(
        withCall(fb::CallKind::dense_backward_weights, std::move(operands)));
  };
  auto ok = call({8, 4}, {4});
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->calls[0].kind, CallKind::DenseBackwardWeights);
  auto weights = call({4, 8}, {4});
  ASSERT_FALSE(weights.isOk());
  EXPECT_NE(weights.status().message().find(
                "calls[0].operands.weight_grad: shape [4,8] does not match the "
                "expected [8,4]"),
            std::string::npos)
      << weights.status().toString();
  auto bias = call({8, 4}, {8});
  ASSERT_FALSE(bias.isOk());
  EXPECT_NE(bias.status().message().find("calls[0].operands.bias_grad: shape"),
            std::string::npos)
      << bias.status().toString();
}

/// A variable of the small manifest below.
std::unique_ptr<fb::VariableT> variableT(const char *name, fb::VariableKind kind,
                                         int64_t offset, std::vector<int64_t> shape,
                                         fb::DType dtype, fb::InitKind init,
                                         const char *of = "") {
  auto v = std::make_unique<fb::VariableT>();
  v->name = name;
  v->kind = kind;
  v->tensor = tensorT(offset, std::move(shape), dtype);
  v->init = init;
  v->of = of;
  return v;
}

using Variables = std::vector<std::unique_ptr<fb::VariableT>>;

/// A small manifest whose variables are `variables`, in [0, 128) of a
/// 512-byte arena.
std::string withVariables(Variables variables) {
  fb::ManifestT m;
  m.abi = KILN_RT_MODEL_ABI_VERSION;
  m.model = "copies";
  m.batch = 2;
  m.arena_bytes = 512;
  m.persistent_bytes = 128;
  m.variables = std::move(variables);
  auto train = std::make_unique<fb::FunctionT>();
  train->name = "train";
  train->symbol = "train";
  train->scratch = std::make_unique<fb::Range>(0, 0);
  train->inputs.push_back(namedT("images", tensorT(128, {2, 1, 1, 1})));
  train->inputs.push_back(namedT("labels", tensorT(192, {2}, fb::DType::i32)));
  train->inputs.push_back(namedT("step", tensorT(256, {}, fb::DType::i64)));
  train->outputs.push_back(namedT("loss", tensorT(320, {})));
  train->outputs.push_back(namedT("logits", tensorT(384, {2, 2})));
  train->outputs.push_back(namedT("learning_rate", tensorT(448, {})));
  m.functions.push_back(std::move(train));
  return pack(m);
}

/// An f32 master weight and its bf16 copy, as the bf16 pipeline declares
/// them.
std::unique_ptr<fb::VariableT> master() {
  return variableT("w", fb::VariableKind::parameter, 0, {2, 3}, fb::DType::f32,
                   fb::InitKind::he_normal);
}
std::unique_ptr<fb::VariableT> copy() {
  return variableT("w.bf16", fb::VariableKind::state, 64, {2, 3},
                   fb::DType::bf16, fb::InitKind::copy, "w");
}

Variables list(std::unique_ptr<fb::VariableT> a,
               std::unique_ptr<fb::VariableT> b,
               std::unique_ptr<fb::VariableT> c = nullptr) {
  Variables v;
  v.push_back(std::move(a));
  v.push_back(std::move(b));
  if (c)
    v.push_back(std::move(c));
  return v;
}

/// `v` changed by `change`.
std::unique_ptr<fb::VariableT>
changed(std::unique_ptr<fb::VariableT> v,
        const std::function<void(fb::VariableT &)> &change) {
  change(*v);
  return v;
}

TEST(ManifestTest, CopyVariablesNameTheirSource) {
  // The source may come before or after the copy.
  for (bool copyFirst : {true, false}) {
    auto m = parseManifest(withVariables(copyFirst ? list(copy(), master())
                                                   : list(master(), copy())));
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    const Variable *c = m->findVariable("w.bf16");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->init, InitKind::Copy);
    EXPECT_TRUE(c->isCopy());
    EXPECT_EQ(c->source, "w");
    EXPECT_EQ(c->kind, VariableKind::State);
    EXPECT_EQ(c->tensor.dtype, DType::BF16);
    EXPECT_FALSE(m->findVariable("w")->isCopy());
    EXPECT_EQ(m->findVariable("w")->source, "");
  }
  // An f32 copy of a bf16 variable is a copy too.
  auto widened = parseManifest(withVariables(list(
      changed(master(), [](fb::VariableT &v) { v.tensor->dtype = fb::DType::bf16; }),
      changed(copy(), [](fb::VariableT &v) { v.tensor->dtype = fb::DType::f32; }))));
  EXPECT_TRUE(widened.isOk()) << widened.status().toString();
}

TEST(ManifestTest, CopyVariableErrors) {
  struct Case {
    const char *name;
    std::string bytes;
    const char *message;
  };
  using V = fb::VariableT;
  auto second = [] {
    return variableT("w.bf16.bf16", fb::VariableKind::state, 96, {2, 3},
                     fb::DType::bf16, fb::InitKind::copy, "w.bf16");
  };
  const Case cases[] = {
      {"no_of",
       withVariables(list(master(), changed(copy(), [](V &v) { v.of = ""; }))),
       "variables[1] (w.bf16): missing member \"of\""},
      {"of_without_copy",
       withVariables(
           list(changed(master(), [](V &v) { v.of = "w.bf16"; }), copy())),
       "variables[0] (w).of: only init \"copy\" takes a source, not "
       "\"he_normal\""},
      {"unknown_source",
       withVariables(list(master(), changed(copy(), [](V &v) { v.of = "v"; }))),
       "variables[1] (w.bf16).of: no variable named \"v\""},
      {"own_source",
       withVariables(
           list(master(), changed(copy(), [](V &v) { v.of = "w.bf16"; }))),
       "variables[1] (w.bf16).of: a copy cannot be its own source"},
      {"copy_of_a_copy", withVariables(list(second(), master(), copy())),
       "variables[0] (w.bf16.bf16).of: \"w.bf16\" is itself a copy"},
      {"shape",
       withVariables(list(master(), changed(copy(), [](V &v) {
                            v.tensor->shape = {3, 2};
                          }))),
       "variables[1] (w.bf16).of: the source \"w\" is [2,3], the copy [3,2]"},
      {"copy_dtype",
       withVariables(list(master(), changed(copy(), [](V &v) {
                            v.tensor->dtype = fb::DType::i32;
                          }))),
       "variables[1] (w.bf16).dtype: a copy must be f32 or bf16, not i32"},
      {"source_dtype",
       withVariables(list(changed(master(),
                                  [](V &v) {
                                    v.tensor->dtype = fb::DType::f64;
                                    v.init = fb::InitKind::zeros;
                                  }),
                          copy())),
       "variables[1] (w.bf16).of: the source \"w\" must be f32 or bf16, not "
       "f64"},
      {"parameter",
       withVariables(list(master(), changed(copy(), [](V &v) {
                            v.kind = fb::VariableKind::parameter;
                          }))),
       "variables[1] (w.bf16).kind: a copy must be a state variable"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    auto m = parseManifest(c.bytes);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(c.message), std::string::npos)
        << m.status().message();
  }
}

/// A constant variable whose values are the raw bytes `data` (an imported
/// model's initializer, docs/onnx.md "Initial values").
std::unique_ptr<fb::VariableT> withData(const char *name, int64_t offset,
                                        std::vector<int64_t> shape,
                                        fb::DType dtype,
                                        std::vector<uint8_t> data) {
  auto v = variableT(name, fb::VariableKind::parameter, offset,
                     std::move(shape), dtype, fb::InitKind::constant);
  v->data = std::move(data);
  return v;
}

template <typename T> std::vector<uint8_t> bytesOf(std::vector<T> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(T));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

Variables one(std::unique_ptr<fb::VariableT> v) {
  Variables list;
  list.push_back(std::move(v));
  return list;
}

TEST(ManifestTest, ConstantDataIsCopiedAsItIs) {
  // Values no decimal round trip would need to keep: subnormals, -0, the
  // largest finite float.
  std::vector<float> w = {1.0f, -0.0f, 1e-45f, 3.4028235e38f, 0.1f, -2.5f};
  std::vector<int64_t> steps = {-1, int64_t(1) << 60};
  std::string bytes = withVariables(
      list(withData("w", 0, {2, 3}, fb::DType::f32, bytesOf(w)),
           withData("steps", 64, {2}, fb::DType::i64, bytesOf(steps))));
  auto m = parseManifest(bytes);
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->findVariable("w")->data.size(), 24u);
  EXPECT_TRUE(m->findVariable("w")->value.empty());
  std::vector<uint8_t> arena(512, 0xAB);
  ASSERT_TRUE(initializeVariables(*m, arena.data(), 1).isOk());
  EXPECT_EQ(std::memcmp(arena.data(), w.data(), 24), 0);
  EXPECT_EQ(std::memcmp(arena.data() + 64, steps.data(), 16), 0);
}

TEST(ManifestTest, ConstantDataErrors) {
  using V = fb::VariableT;
  std::vector<float> w(6, 0.5f);
  auto good = [&] { return withData("w", 0, {2, 3}, fb::DType::f32, bytesOf(w)); };
  std::vector<float> nan = w;
  nan[4] = std::nanf("");
  const struct {
    const char *name;
    std::string bytes;
    const char *message;
  } cases[] = {
      {"truncated",
       withVariables(one(changed(good(), [](V &v) { v.data.resize(20); }))),
       "variables[0] (w).data: 20 bytes for a variable of f32[2,3] (24 "
       "bytes): the initial values are truncated or corrupted"},
      {"too_long",
       withVariables(one(changed(good(), [](V &v) { v.data.resize(48); }))),
       "variables[0] (w).data: 48 bytes for a variable of f32[2,3]"},
      {"bf16_size",
       withVariables(one(changed(good(),
                                  [](V &v) {
                                    v.tensor->dtype = fb::DType::bf16;
                                  }))),
       "variables[0] (w).data: 24 bytes for a variable of bf16[2,3] (12 "
       "bytes)"},
      {"both",
       withVariables(one(changed(good(), [](V &v) { v.value = {1.0}; }))),
       "variables[0] (w): both \"value\" and \"data\": give one"},
      {"not_constant",
       withVariables(one(changed(good(),
                                  [](V &v) { v.init = fb::InitKind::ones; }))),
       "variables[0] (w).data: only init \"constant\" takes data, not "
       "\"ones\""},
      {"non_finite",
       withVariables(
           one(withData("w", 0, {2, 3}, fb::DType::f32, bytesOf(nan)))),
       "variables[0] (w).data[4]: NaN is not a finite initial value"},
      {"neither",
       withVariables(one(changed(good(), [](V &v) { v.data.clear(); }))),
       "variables[0] (w): missing member \"value\" (or \"data\")"},
  };
  for (const auto &c : cases) {
    SCOPED_TRACE(c.name);
    auto m = parseManifest(c.bytes);
    ASSERT_FALSE(m.isOk());
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(m.status().message().find(c.message), std::string::npos)
        << m.status().message();
  }
}

TEST(ManifestTest, ConvOutputShapeFollowsTheReferenceFormula) {
  Call c;
  c.strides = {2, 2};
  c.padding = {3, 3, 3, 3};
  std::vector<int64_t> out;
  ASSERT_TRUE(inferConvOutputShape({32, 224, 224, 3}, {7, 7, 3, 64}, c, out)
                  .isOk());
  EXPECT_EQ(out, (std::vector<int64_t>{32, 112, 112, 64}));
  c.dilations = {2, 2};
  c.padding = {0, 0, 0, 0};
  EXPECT_FALSE(inferConvOutputShape({1, 4, 4, 1}, {3, 3, 1, 1}, c, out).isOk());
  EXPECT_FALSE(inferConvOutputShape({1, 4, 4, 2}, {3, 3, 1, 1}, c, out).isOk());
}

TEST(ManifestTest, GroupedConvolutionChannels) {
  Call c;
  c.groups = 4;
  std::vector<int64_t> out;
  // Depthwise with multiplier 2: 4 channels, a [3, 3, 1, 8] filter.
  ASSERT_TRUE(inferConvOutputShape({1, 4, 4, 4}, {3, 3, 1, 8}, c, out).isOk());
  EXPECT_EQ(out, (std::vector<int64_t>{1, 2, 2, 8}));
  Status s = inferConvOutputShape({1, 4, 4, 8}, {3, 3, 1, 8}, c, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("input channels 8 differ from the filter's 1 "
                             "times 4 groups"),
            std::string::npos)
      << s.message();
  s = inferConvOutputShape({1, 4, 4, 4}, {3, 3, 1, 6}, c, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("the filter's 6 output channels are not a "
                             "multiple of 4 groups"),
            std::string::npos)
      << s.message();
}

TEST(ManifestTest, GroupsBelongToConvolutions) {
  auto expectError = [](const StatusOr<Manifest> &bad,
                        const std::string &text) {
    ASSERT_FALSE(bad.isOk());
    EXPECT_NE(bad.status().message().find(text), std::string::npos)
        << bad.status().toString();
  };
  expectError(parseManifest(mutated([](fb::ManifestT &m) {
                for (auto &call : m.calls)
                  if (call->kind == fb::CallKind::dense)
                    call->groups = 2;
              })),
              "unknown member \"groups\"");
  expectError(parseManifest(mutated([](fb::ManifestT &m) {
                m.calls[0]->groups = -1;
              })),
              "calls[0].groups: value -1 is below 1");
  // The test model's first convolution has 3 input channels and its filter
  // 3 per group: with 3 groups they would have to be 9.
  expectError(parseManifest(mutated([](fb::ManifestT &m) {
                m.calls[0]->groups = 3;
              })),
              "times 3 groups");
}

} // namespace
} // namespace kiln::rt::exec::test
