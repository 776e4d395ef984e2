//===- PyTorchStateTest.cpp - Kiln checkpoints <-> PyTorch state dicts ----===//

#include "kiln/rt/pytorch_state.h"

#include <gtest/gtest.h>

namespace kiln::rt::safetensors {
namespace {

File checkpoint() {
  File f;
  f.metadata = {{"format", "kiln-checkpoint"}, {"step", "38"}, {"model", "m"}};
  // HWIO [1, 2, 2, 3]: element (0, w, i, o) holds 100w + 10i + o, so the
  // permutation is visible.
  std::vector<float> hwio;
  for (int w = 0; w < 2; ++w)
    for (int i = 0; i < 2; ++i)
      for (int o = 0; o < 3; ++o)
        hwio.push_back(float(100 * w + 10 * i + o));
  f.tensors.push_back(fromF32("conv1.weight", {1, 2, 2, 3}, hwio));
  f.tensors.push_back(fromF32("conv1.weight.momentum", {1, 2, 2, 3}, hwio));
  f.tensors.push_back(fromF32("bn1.weight", {3}, {1, 2, 3}));
  f.tensors.push_back(fromF32("bn1.running_mean", {3}, {4, 5, 6}));
  f.tensors.push_back(fromF32("bn1.running_var", {3}, {7, 8, 9}));
  f.tensors.push_back(fromF32("fc.weight", {2, 3}, {0, 1, 2, 10, 11, 12}));
  f.tensors.push_back(fromF64("kiln.lr_schedule", {2}, {0.1, 5}));
  return f;
}

TEST(PyTorchStateTest, LayoutsNamesAndSlots) {
  StatusOr<File> state = toPyTorchState(checkpoint(), "ckpt");
  ASSERT_TRUE(state.isOk()) << state.status().message();
  std::vector<std::string> names;
  for (const Tensor &t : state->tensors)
    names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "conv1.weight", "bn1.weight", "bn1.running_mean",
                       "bn1.running_var", "bn1.num_batches_tracked",
                       "fc.weight"}));
  const Tensor *conv = state->find("conv1.weight");
  // OIHW [3, 2, 1, 2]: (o, i, 0, w) = 100w + 10i + o.
  EXPECT_EQ(conv->shape, (std::vector<int64_t>{3, 2, 1, 2}));
  std::vector<float> oihw = toF32(*conv);
  for (int o = 0; o < 3; ++o)
    for (int i = 0; i < 2; ++i)
      for (int w = 0; w < 2; ++w)
        EXPECT_EQ(oihw[(o * 2 + i) * 2 + w], float(100 * w + 10 * i + o));
  EXPECT_EQ(state->find("fc.weight")->shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(toF32(*state->find("fc.weight")),
            (std::vector<float>{0, 10, 1, 11, 2, 12}));
  const Tensor *tracked = state->find("bn1.num_batches_tracked");
  EXPECT_EQ(tracked->dtype, DType::I64);
  EXPECT_TRUE(tracked->shape.empty());
  EXPECT_EQ(toI64(*tracked), (std::vector<int64_t>{38}));
  EXPECT_EQ(state->metadata.at("format"), "pt");
}

TEST(PyTorchStateTest, RoundTripGivesTheParametersBack) {
  File original = checkpoint();
  StatusOr<File> state = toPyTorchState(original, "ckpt");
  ASSERT_TRUE(state.isOk());
  StatusOr<File> back = fromPyTorchState(*state, "state");
  ASSERT_TRUE(back.isOk());
  EXPECT_EQ(back->metadata.at("format"), "kiln-initial-values");
  EXPECT_EQ(back->tensors.size(), 5u); // no slot, schedule or counter
  for (const Tensor &t : back->tensors) {
    const Tensor *o = original.find(t.name);
    ASSERT_NE(o, nullptr) << t.name;
    EXPECT_EQ(t.shape, o->shape) << t.name;
    EXPECT_EQ(t.bytes, o->bytes) << t.name;
  }
}

TEST(PyTorchStateTest, RefusesWhatItCannotConvert) {
  File notKiln = checkpoint();
  notKiln.metadata["format"] = "pt";
  StatusOr<File> a = toPyTorchState(notKiln, "x.safetensors");
  ASSERT_FALSE(a.isOk());
  EXPECT_EQ(a.status().message().rfind(
                "x.safetensors is not a Kiln checkpoint (its metadata has "
                "format 'pt', not 'kiln-checkpoint')",
                0),
            0u)
      << a.status().message();
  File noStep = checkpoint();
  noStep.metadata.erase("step");
  EXPECT_FALSE(toPyTorchState(noStep, "y").isOk());
  File rank5;
  rank5.tensors.push_back(fromF32("t", {1, 1, 1, 1, 2}, {1, 2}));
  StatusOr<File> b = fromPyTorchState(rank5, "z");
  ASSERT_FALSE(b.isOk());
  EXPECT_EQ(b.status().message().rfind(
                "z: tensor 't' has rank 5; Kiln's variables have rank 4 at "
                "most",
                0),
            0u)
      << b.status().message();
}

} // namespace
} // namespace kiln::rt::safetensors
