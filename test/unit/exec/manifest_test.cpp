//===- manifest_test.cpp - Parsing and validating the model manifest ------===//

#include "exec_test_util.h"

#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/model.h"

namespace kiln::rt::exec::test {
namespace {

std::string testManifest() { return kiln_model_manifest(); }

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

/// The test manifest with the first occurrence of `from` replaced.
std::string mutated(const std::string &from, const std::string &to) {
  std::string s = testManifest();
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in the manifest";
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

const std::string kAbi =
    "\"abi\": " + std::to_string(KILN_RT_MODEL_ABI_VERSION);

/// The test manifest's schedule entry with `members` added.
std::string scheduleWith(const std::string &members) {
  return mutated("\"end_lr\"]}", "\"end_lr\"], " + members + "}");
}

struct BadCase {
  const char *name;
  std::string json;
  std::string message;
};

void PrintTo(const BadCase &c, std::ostream *os) { *os << c.name; }

class ManifestErrorTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(ManifestErrorTest, IsRejectedWithAClearMessage) {
  auto m = parseManifest(GetParam().json);
  ASSERT_FALSE(m.isOk()) << GetParam().name << " was accepted";
  EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(m.status().message().find(GetParam().message), std::string::npos)
      << m.status().message();
}

std::vector<BadCase> badCases() {
  return {
      {"truncated", testManifest().substr(0, 200), "manifest: malformed JSON"},
      {"not_an_object", "[1, 2]", "expected an object, got an array"},
      {"abi", mutated(kAbi, "\"abi\": 1"),
       "the model was compiled for model ABI 1, but this runtime implements "
       "ABI " + std::to_string(KILN_RT_MODEL_ABI_VERSION)},
      {"no_arena", mutated("\"arena_bytes\"", "\"arena\""),
       "missing member \"arena_bytes\""},
      {"small_arena",
       mutated("\"arena_bytes\": " +
                   std::to_string(parseManifest(testManifest())->arenaBytes),
               "\"arena_bytes\": 1000"),
       "lie outside the arena"},
      {"negative_batch", mutated("\"batch\": 8", "\"batch\": -8"),
       "batch: must be positive"},
      {"dtype", mutated("\"dtype\": \"f64\"", "\"dtype\": \"f16\""),
       "unknown dtype \"f16\""},
      {"init", mutated("\"he_normal\"", "\"glorot\""),
       "unknown initializer \"glorot\""},
      {"normal_without_std", mutated(", \"std\": 0.1", ""),
       "variables[2] (fc.weight): missing member \"std\""},
      {"negative_std", mutated("\"std\": 0.1", "\"std\": -0.1"),
       "the standard deviation must be > 0"},
      {"constant_count", mutated("[0.1, 0.0, 0.0, 1000.0, 0.0]", "[0.1, 0.0]"),
       "2 values for a variable of 5 elements"},
      {"kind", mutated("\"parameter\"", "\"weight\""),
       "unknown variable kind \"weight\""},
      {"duplicate_variable", mutated("\"conv2.weight\"", "\"conv1.weight\""),
       "duplicate variable name \"conv1.weight\""},
      {"schedule_variable",
       mutated("\"variable\": \"kiln.lr_schedule\"",
               "\"variable\": \"fc.bias\""),
       "must be f64[5] (one per slot)"},
      {"schedule_slot", mutated("\"end_lr\"]", "\"base_lr\"]"),
       "duplicate slot \"base_lr\""},
      // Slots the runtime fills in (ABI 5).
      {"epochs_not_an_object", scheduleWith("\"epochs\": [1]"),
       "schedule.epochs: expected an object, got an array"},
      {"epochs_unknown_slot", scheduleWith("\"epochs\": {\"decay_steps\": 2}"),
       "schedule.epochs.decay_steps: \"decay_steps\" is not a slot of the "
       "schedule (its slots: base_lr, warmup_init_lr, warmup_steps, "
       "total_steps, end_lr)"},
      {"epochs_not_steps", scheduleWith("\"epochs\": {\"end_lr\": 2}"),
       "schedule.epochs.end_lr: \"end_lr\" is not a step count (*_steps, "
       "boundary*); only those are filled in at run time"},
      {"epochs_negative", scheduleWith("\"epochs\": {\"warmup_steps\": -1}"),
       "schedule.epochs.warmup_steps: epochs must not be negative, got -1"},
      {"epochs_string", scheduleWith("\"epochs\": {\"warmup_steps\": \"1\"}"),
       "schedule.epochs.warmup_steps: expected a number, got a string"},
      {"epochs_twice",
       scheduleWith("\"epochs\": {\"warmup_steps\": 1, \"warmup_steps\": 2}"),
       "duplicate key \"warmup_steps\""},
      {"run_length_unknown_slot", scheduleWith("\"run_length\": \"steps\""),
       "schedule.run_length: \"steps\" is not a slot of the schedule"},
      {"run_length_not_steps", scheduleWith("\"run_length\": \"base_lr\""),
       "schedule.run_length: \"base_lr\" is not a step count"},
      {"run_length_and_epochs",
       scheduleWith("\"epochs\": {\"total_steps\": 2}, \"run_length\": "
                    "\"total_steps\""),
       "schedule.run_length: \"total_steps\" is given in epochs too "
       "(schedule.epochs)"},
      {"no_train", mutated("\"train\": {", "\"training\": {"),
       "missing the \"train\" function"},
      {"no_step", mutated("\"step\": {", "\"steps\": {"),
       "functions.train.inputs: missing input \"step\""},
      {"labels_layout",
       mutated("\"labels\": {\"offset\": ",
               "\"labels\": {\"layout\": \"nhwc\", \"offset\": "),
       "a layout is only meaningful for a 4-D tensor"},
      {"call_kind", mutated("\"conv2d_forward\"", "\"conv3d_forward\""),
       "unknown call kind \"conv3d_forward\""},
      {"call_member", mutated("\"strides\": [1,1]", "\"stride\": [1,1]"),
       "calls[0]: unknown member \"stride\""},
      {"call_stride", mutated("\"strides\": [1,1]", "\"strides\": [0,1]"),
       "calls[0].strides: value 0 is below 1"},
      {"call_operand", mutated("\"filter\": ", "\"weights\": "),
       "calls[0].operands: missing operand \"filter\""},
      {"conv_shape",
       mutated("\"padding\": [1,1,1,1]", "\"padding\": [0,0,0,0]"),
       "calls[0].operands.output: shape [8,8,8,4] does not match the "
       "expected [8,6,6,4]"},
      {"matmul_transpose",
       mutated("\"transpose_rhs\": true", "\"transpose_rhs\": false"),
       "calls[4]: contraction sizes differ"},
      {"matmul_bool",
       mutated("\"transpose_lhs\": true", "\"transpose_lhs\": 1"),
       "calls[3].transpose_lhs: expected a boolean, got a number"},
      {"tensor_member",
       mutated("\"kind\": \"dense\", \"function\": \"train\", "
               "\"operands\": {\"input\": {\"offset\": ",
               "\"kind\": \"dense\", \"function\": \"train\", "
               "\"operands\": {\"input\": {\"offset\": 8, \"x\": "),
       "unknown member \"x\""},
      {"bucket_id", mutated("{\"id\": 1,", "{\"id\": 7,"),
       "buckets[1].id: bucket ids must be 0, 1, ... in order; got 7"},
      {"misaligned", mutated("\"offset\": 0,", "\"offset\": 2,"),
       "is negative or not a multiple of the f32 element size"},
      {"fractional_offset", mutated("\"offset\": 0,", "\"offset\": 0.5,"),
       "expected an integer, got 0.5"},
  };
}

INSTANTIATE_TEST_SUITE_P(Cases, ManifestErrorTest,
                         ::testing::ValuesIn(badCases()),
                         [](const ::testing::TestParamInfo<BadCase> &info) {
                           return std::string(info.param.name);
                         });

TEST(ManifestTest, OverlappingVariablesAreRejected) {
  // Move conv2.weight onto conv1.weight's bytes.
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk());
  std::string conv2Offset =
      "\"offset\": " + std::to_string(m->findVariable("conv2.weight")->tensor.offset) +
      ", \"shape\": [3,3,4,8]";
  auto bad = parseManifest(mutated(conv2Offset, "\"offset\": 64, \"shape\": [3,3,4,8]"));
  ASSERT_FALSE(bad.isOk());
  EXPECT_NE(bad.status().message().find(
                "\"conv1.weight\" and \"conv2.weight\" overlap in the arena"),
            std::string::npos)
      << bad.status().message();
}

TEST(ManifestTest, UnknownTopLevelMembersAreIgnored) {
  auto m = parseManifest(
      mutated(kAbi + ",", kAbi + ", \"compiler\": \"kilnc 0.1\","));
  EXPECT_TRUE(m.isOk()) << m.status().toString();
}

TEST(ManifestTest, ScheduleSlotsLeftToTheRun) {
  // Without them, nothing is left to the run.
  auto plain = parseManifest(testManifest());
  ASSERT_TRUE(plain.isOk()) << plain.status().toString();
  EXPECT_TRUE(plain->schedule->epochs.empty());
  EXPECT_EQ(plain->schedule->runLength, "");

  auto m = parseManifest(
      scheduleWith("\"epochs\": {\"warmup_steps\": 0.5}, \"run_length\": "
                   "\"total_steps\""));
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  EXPECT_EQ(m->schedule->epochs,
            (std::map<std::string, double>{{"warmup_steps", 0.5}}));
  EXPECT_EQ(m->schedule->runLength, "total_steps");

  m = parseManifest(scheduleWith(
      "\"epochs\": {\"warmup_steps\": 1, \"total_steps\": 90}"));
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

/// `t` as manifest JSON, with `dtype` and `layout` (none if null) as given.
std::string tensorJson(const TensorRef &t, const char *dtype,
                       const char *layout) {
  std::string shape;
  for (int64_t d : t.shape)
    shape += (shape.empty() ? "" : ",") + std::to_string(d);
  std::string json = "{\"offset\": " + std::to_string(t.offset) +
                     ", \"shape\": [" + shape + "], \"dtype\": \"" +
                     dtype + "\"";
  if (layout)
    json += std::string(", \"layout\": \"") + layout + "\"";
  return json + "}";
}

/// The test manifest with a reorder call from `input` to `output` first.
StatusOr<Manifest> withReorder(const std::string &input,
                               const std::string &output) {
  return parseManifest(mutated(
      "\"calls\": [", "\"calls\": [{\"kind\": \"reorder\", \"operands\": "
                      "{\"input\": " + input + ", \"output\": " + output +
                          "}},"));
}

TEST(ManifestTest, ReorderCallsKeepShapeAndElementType) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  // The first convolution's output, an activation of 4 channels.
  const TensorRef a1 = m->calls[0].operand("output");
  const TensorRef images = *m->findFunction("train")->input("images");

  auto ok = withReorder(tensorJson(a1, "f32", "nhwc"),
                        tensorJson(a1, "f32", "nchw"));
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_EQ(ok->calls[0].kind, CallKind::Reorder);
  EXPECT_EQ(ok->calls[0].operand("output").layout, Layout::Nchw);

  auto shape = withReorder(tensorJson(a1, "f32", "nhwc"),
                           tensorJson(images, "f32", "nhwc"));
  ASSERT_FALSE(shape.isOk());
  EXPECT_NE(shape.status().message().find("calls[0].operands.output: shape"), std::string::npos)
      << shape.status().toString();

  auto dtype = withReorder(tensorJson(a1, "f32", "nhwc"),
                           tensorJson(a1, "bf16", "nhwc"));
  ASSERT_FALSE(dtype.isOk());
  EXPECT_NE(dtype.status().message().find("a reorder keeps the element type"), std::string::npos)
      << dtype.status().toString();

  TensorRef flat = a1;
  flat.shape = {a1.numElements()};
  auto rank = withReorder(tensorJson(flat, "f32", nullptr),
                          tensorJson(flat, "f32", nullptr));
  ASSERT_FALSE(rank.isOk());
  EXPECT_NE(rank.status().message().find("reorder needs a 4-D activation"), std::string::npos)
      << rank.status().toString();
}

/// The test manifest with a forward convolution like its first one, plus
/// `operands` (JSON members) and `members`, first.
StatusOr<Manifest> withPostOps(const Call &conv, const std::string &operands,
                               const std::string &members) {
  return parseManifest(mutated(
      "\"calls\": [",
      "\"calls\": [{\"kind\": \"conv2d_forward\", \"strides\": [1, 1], "
      "\"padding\": [1, 1, 1, 1], " +
          members + "\"operands\": {\"input\": " +
          tensorJson(conv.operand("input"), "f32", "nhwc") + ", \"filter\": " +
          tensorJson(conv.operand("filter"), "f32", nullptr) +
          ", \"output\": " + tensorJson(conv.operand("output"), "f32", "nhwc") +
          operands + "}},"));
}

TEST(ManifestTest, ForwardConvolutionPostOps) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  const Call &conv = m->calls[0];
  const TensorRef &out = conv.operand("output");
  TensorRef channels = out; // any arena bytes will do for the check
  channels.shape = {out.shape[3]};
  std::string bias = ", \"bias\": " + tensorJson(channels, "f32", nullptr);
  std::string residual = ", \"residual\": " + tensorJson(out, "f32", "nhwc");

  auto ok = withPostOps(conv, bias + residual, "\"relu\": true, ");
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
  expectError(
      withPostOps(conv, ", \"bias\": " + tensorJson(wide, "f32", nullptr), ""),
      "calls[0].operands.bias: must be f32[4] (one per output channel), "
      "not f32[5]");
  expectError(
      withPostOps(conv, ", \"bias\": " + tensorJson(channels, "bf16", nullptr),
                  ""),
      "calls[0].operands.bias: must be f32[4]");
  expectError(
      withPostOps(conv, ", \"residual\": " + tensorJson(out, "f32", "nChw16c"),
                  ""),
      "calls[0].operands.residual: must have the output's shape, element "
      "type and layout");
  expectError(
      withPostOps(conv, ", \"shift\": " + tensorJson(channels, "f32", nullptr),
                  ""),
      "unknown operand \"shift\" for conv2d_forward");
  // The batch statistics: a mean and a variance per output channel.
  TensorRef statistics = channels;
  statistics.shape = {2, out.shape[3]};
  auto withStatistics = withPostOps(
      conv, ", \"statistics\": " + tensorJson(statistics, "f32", nullptr), "");
  ASSERT_TRUE(withStatistics.isOk()) << withStatistics.status().toString();
  EXPECT_TRUE(withStatistics->calls[0].hasOperand("statistics"));
  expectError(
      withPostOps(conv,
                  ", \"statistics\": " + tensorJson(channels, "f32", nullptr),
                  ""),
      "calls[0].operands.statistics: must be f32[2, 4] (mean and variance per "
      "output channel), not f32[4]");
  // Post-ops belong to forward convolutions only.
  expectError(parseManifest(mutated(
                  "\"kind\": \"conv2d_backward_data\",",
                  "\"kind\": \"conv2d_backward_data\", \"relu\": true,")),
              "unknown member \"relu\"");
}

TEST(ManifestTest, DenseBackwardWeightsShapes) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk()) << m.status().toString();
  TensorRef x = m->calls[0].operand("output"); // any arena bytes will do
  auto call = [&](std::vector<int64_t> dwShape, std::vector<int64_t> dbShape) {
    TensorRef in = x, dy = x, dw = x, db = x;
    in.shape = {2, 8};
    dy.shape = {2, 4};
    dw.shape = std::move(dwShape);
    db.shape = std::move(dbShape);
    return parseManifest(mutated(
        "\"calls\": [",
        "\"calls\": [{\"kind\": \"dense_backward_weights\", \"operands\": "
        "{\"input\": " +
            tensorJson(in, "f32", nullptr) +
            ", \"output_grad\": " + tensorJson(dy, "f32", nullptr) +
            ", \"weight_grad\": " + tensorJson(dw, "f32", nullptr) +
            ", \"bias_grad\": " + tensorJson(db, "f32", nullptr) + "}},"));
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

/// A small manifest whose variables are `variables` (JSON objects, comma
/// separated) in [0, 128) of a 512-byte arena.
std::string withVariables(const std::string &variables) {
  return "{\"abi\": " + std::to_string(KILN_RT_MODEL_ABI_VERSION) +
         ", \"model\": \"copies\", \"batch\": 2, \"arena_bytes\": 512, "
         "\"persistent_bytes\": 128, \"variables\": [" +
         variables +
         "], \"functions\": {\"train\": {\"symbol\": \"train\", \"inputs\": "
         "{\"images\": {\"offset\": 128, \"shape\": [2,1,1,1], \"dtype\": "
         "\"f32\"}, \"labels\": {\"offset\": 192, \"shape\": [2], \"dtype\": "
         "\"i32\"}, \"step\": {\"offset\": 256, \"shape\": [], \"dtype\": "
         "\"i64\"}}, \"outputs\": {\"loss\": {\"offset\": 320, \"shape\": [], "
         "\"dtype\": \"f32\"}, \"logits\": {\"offset\": 384, \"shape\": [2,2], "
         "\"dtype\": \"f32\"}, \"learning_rate\": {\"offset\": 448, "
         "\"shape\": [], \"dtype\": \"f32\"}}}}}";
}

/// An f32 master weight and its bf16 copy, as the bf16 pipeline declares
/// them.
const std::string kMaster =
    R"({"name": "w", "kind": "parameter", "offset": 0, "shape": [2,3],
        "dtype": "f32", "init": "he_normal"})";
const std::string kCopy =
    R"({"name": "w.bf16", "kind": "state", "offset": 64, "shape": [2,3],
        "dtype": "bf16", "init": "copy", "of": "w"})";

/// `s` with the first `from` replaced by `to`.
std::string replaced(std::string s, const std::string &from,
                     const std::string &to) {
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "'" << from << "' not in " << s;
  if (at != std::string::npos)
    s.replace(at, from.size(), to);
  return s;
}

TEST(ManifestTest, CopyVariablesNameTheirSource) {
  // The source may come before or after the copy.
  for (const std::string &variables :
       {kCopy + ", " + kMaster, kMaster + ", " + kCopy}) {
    auto m = parseManifest(withVariables(variables));
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    const Variable *copy = m->findVariable("w.bf16");
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->init, InitKind::Copy);
    EXPECT_TRUE(copy->isCopy());
    EXPECT_EQ(copy->source, "w");
    EXPECT_EQ(copy->kind, VariableKind::State);
    EXPECT_EQ(copy->tensor.dtype, DType::BF16);
    EXPECT_FALSE(m->findVariable("w")->isCopy());
    EXPECT_EQ(m->findVariable("w")->source, "");
  }
  // An f32 copy of a bf16 variable is a copy too.
  auto widened = parseManifest(withVariables(
      replaced(kMaster, "\"f32\"", "\"bf16\"") + ", " +
      replaced(kCopy, "\"bf16\", \"init\"", "\"f32\", \"init\"")));
  EXPECT_TRUE(widened.isOk()) << widened.status().toString();
}

TEST(ManifestTest, CopyVariableErrors) {
  struct Case {
    const char *name;
    std::string variables;
    const char *message;
  };
  const std::string second =
      R"({"name": "w.bf16.bf16", "kind": "state", "offset": 96,
          "shape": [2,3], "dtype": "bf16", "init": "copy", "of": "w.bf16"})";
  const Case cases[] = {
      {"no_of", kMaster + ", " + replaced(kCopy, ", \"of\": \"w\"", ""),
       "variables[1] (w.bf16): missing member \"of\""},
      {"of_without_copy",
       replaced(kMaster, "\"he_normal\"", "\"he_normal\", \"of\": \"w.bf16\"") +
           ", " + kCopy,
       "variables[0] (w).of: only init \"copy\" takes a source, not "
       "\"he_normal\""},
      {"of_not_a_string",
       kMaster + ", " + replaced(kCopy, "\"of\": \"w\"", "\"of\": 3"),
       "variables[1] (w.bf16).of: expected a string, got a number"},
      {"unknown_source",
       kMaster + ", " + replaced(kCopy, "\"of\": \"w\"", "\"of\": \"v\""),
       "variables[1] (w.bf16).of: no variable named \"v\""},
      {"own_source",
       kMaster + ", " + replaced(kCopy, "\"of\": \"w\"", "\"of\": \"w.bf16\""),
       "variables[1] (w.bf16).of: a copy cannot be its own source"},
      {"copy_of_a_copy", second + ", " + kMaster + ", " + kCopy,
       "variables[0] (w.bf16.bf16).of: \"w.bf16\" is itself a copy"},
      {"shape",
       kMaster + ", " + replaced(kCopy, "\"shape\": [2,3]", "\"shape\": [3,2]"),
       "variables[1] (w.bf16).of: the source \"w\" is [2,3], the copy [3,2]"},
      {"copy_dtype", kMaster + ", " + replaced(kCopy, "\"bf16\"", "\"i32\""),
       "variables[1] (w.bf16).dtype: a copy must be f32 or bf16, not i32"},
      {"source_dtype",
       replaced(kMaster, "\"f32\", \"init\": \"he_normal\"",
                "\"f64\", \"init\": \"zeros\"") +
           ", " + kCopy,
       "variables[1] (w.bf16).of: the source \"w\" must be f32 or bf16, not "
       "f64"},
      {"parameter",
       kMaster + ", " + replaced(kCopy, "\"state\"", "\"parameter\""),
       "variables[1] (w.bf16).kind: a copy must be a state variable"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    auto m = parseManifest(withVariables(c.variables));
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

} // namespace
} // namespace kiln::rt::exec::test
