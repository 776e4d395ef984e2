//===- checkpoint_test.cpp - Checkpoint files: round trip, pruning, damage ===//

#include "exec_test_util.h"
#include "manifest_test_util.h"

#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/variables.h"
#include "kiln/rt/model.h"
#include "kiln/rt/safetensors.h"

#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <iterator>

namespace kiln::rt::exec::test {
namespace {

/// The names in `dir`, sorted, without "." and "..".
std::vector<std::string> listDirectory(const std::string &dir) {
  std::vector<std::string> names;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        names.push_back(e->d_name);
    ::closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

/// What a run at `step` records besides the variables.
CheckpointInfo info(int64_t step) {
  CheckpointInfo i;
  i.step = step;
  i.seed = 5;
  i.stepsPerEpoch = 6;
  i.data = "/some/data";
  return i;
}

class CheckpointTest : public ::testing::Test {
protected:
  void SetUp() override {
    auto m = parseManifest(testManifest());
    ASSERT_TRUE(m.isOk()) << m.status().toString();
    manifest = std::move(*m);
    arena.assign(static_cast<size_t>(manifest.arenaBytes), 0);
    ASSERT_TRUE(initializeVariables(manifest, arena.data(), 5).isOk());
  }

  TempDir dir;
  Manifest manifest;
  std::vector<uint8_t> arena;
};

TEST_F(CheckpointTest, RoundTripRestoresEveryVariableAndTheMetadata) {
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), manifest, arena.data(), info(14), 3).isOk());
  std::vector<uint8_t> fresh(arena.size(), 0);
  std::vector<std::string> warnings;
  auto loaded = loadNewestCheckpoint(dir.path(), manifest, fresh.data(), warnings);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_TRUE(warnings.empty());
  const LoadedCheckpoint &c = **loaded;
  EXPECT_EQ(c.path, checkpointPath(dir.path(), 14));
  EXPECT_EQ(c.info.step, 14);
  EXPECT_EQ(c.info.seed, 5u);
  EXPECT_EQ(c.info.stepsPerEpoch, 6);
  EXPECT_EQ(c.metadata.at("model"), "exec_test_model");
  EXPECT_EQ(c.metadata.at("epoch"), "2.333333");
  EXPECT_EQ(c.metadata.at("batch_in_epoch"), "2");
  EXPECT_EQ(c.metadata.at("data"), "/some/data");
  for (const Variable &v : manifest.variables)
    EXPECT_EQ(0, std::memcmp(fresh.data() + v.tensor.offset,
                             arena.data() + v.tensor.offset,
                             static_cast<size_t>(v.tensor.byteSize())))
        << v.name;

  // The file is plain safetensors, readable by name.
  safetensors::File file;
  kiln::Status status;
  ASSERT_TRUE((status = safetensors::read(c.path, file)).isOk())
      << status.message();
  const safetensors::Tensor *schedule = file.find("kiln.lr_schedule");
  ASSERT_NE(schedule, nullptr);
  EXPECT_EQ(safetensors::toF64(*schedule)[3], 1000.0);
}

TEST_F(CheckpointTest, KeepsOnlyTheNewest) {
  for (int64_t step : {3, 6, 9, 12})
    ASSERT_TRUE(
        saveCheckpoint(dir.path(), manifest, arena.data(), info(step), 2).isOk());
  auto list = listCheckpoints(dir.path());
  ASSERT_TRUE(list.isOk());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].first, 9);
  EXPECT_EQ((*list)[1].first, 12);
}

TEST_F(CheckpointTest, ADamagedNewestFallsBackToThePreviousWithAWarning) {
  ASSERT_TRUE(saveCheckpoint(dir.path(), manifest, arena.data(), info(4), 3).isOk());
  std::vector<uint8_t> later = arena;
  reinterpret_cast<float *>(later.data() +
                            manifest.findVariable("fc.bias")->tensor.offset)[0] = 9;
  ASSERT_TRUE(saveCheckpoint(dir.path(), manifest, later.data(), info(8), 3).isOk());
  // Truncate the newest file: a crash mid-copy, a full disk.
  std::string newest = checkpointPath(dir.path(), 8);
  ASSERT_EQ(::truncate(newest.c_str(), 100), 0);

  std::vector<uint8_t> fresh(arena.size(), 0);
  std::vector<std::string> warnings;
  auto loaded = loadNewestCheckpoint(dir.path(), manifest, fresh.data(), warnings);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->info.step, 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("skipping damaged checkpoint " + newest),
            std::string::npos)
      << warnings[0];
  EXPECT_EQ(reinterpret_cast<float *>(
                fresh.data() + manifest.findVariable("fc.bias")->tensor.offset)[0],
            0.0f);
}

TEST_F(CheckpointTest, AnotherModelsCheckpointIsAnErrorNotAFallback) {
  Manifest other = manifest;
  other.variables.pop_back();
  ASSERT_TRUE(saveCheckpoint(dir.path(), other, arena.data(), info(2), 3).isOk());
  std::vector<std::string> warnings;
  auto loaded = loadNewestCheckpoint(dir.path(), manifest, arena.data(), warnings);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find("has no variable 'kiln.lr_schedule'"),
            std::string::npos)
      << loaded.status().message();
}

TEST_F(CheckpointTest, ANonFiniteNewestFallsBackNamingTheFileAndTensor) {
  ASSERT_TRUE(saveCheckpoint(dir.path(), manifest, arena.data(), info(4), 3).isOk());
  // What an older runtime saved after the run diverged: the loss was still
  // finite, a running statistic was not.
  std::vector<uint8_t> diverged = arena;
  reinterpret_cast<float *>(
      diverged.data() +
      manifest.findVariable("bn.running_mean")->tensor.offset)[5] = -INFINITY;
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), manifest, diverged.data(), info(8), 3).isOk());

  std::vector<uint8_t> fresh(arena.size(), 0);
  std::vector<std::string> warnings;
  auto loaded = loadNewestCheckpoint(dir.path(), manifest, fresh.data(), warnings);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  ASSERT_TRUE(loaded->has_value());
  EXPECT_EQ((*loaded)->info.step, 4);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "skipping checkpoint " + checkpointPath(dir.path(), 8) +
                             ": tensor 'bn.running_mean' holds -Inf (element "
                             "5); it was written after the run diverged");
  for (const Variable &v : manifest.variables)
    EXPECT_EQ(0, std::memcmp(fresh.data() + v.tensor.offset,
                             arena.data() + v.tensor.offset,
                             static_cast<size_t>(v.tensor.byteSize())))
        << v.name;

  // With nothing usable left, resuming is an error, not a fresh start.
  ASSERT_EQ(::unlink(checkpointPath(dir.path(), 4).c_str()), 0);
  warnings.clear();
  loaded = loadNewestCheckpoint(dir.path(), manifest, fresh.data(), warnings);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find(
                "none of the 1 checkpoint in " + dir.path() +
                " can be resumed (the warnings say why); move it away to "
                "start afresh"),
            std::string::npos)
      << loaded.status().message();
  EXPECT_EQ(warnings.size(), 1u);
}

TEST_F(CheckpointTest, StaleTemporariesOfAKilledWriteAreRemovedAndNothingElse) {
  // A writer killed mid-write, for real: the file-size limit's SIGXFSZ ends
  // a child inside safetensors::write, which leaves its temporary behind.
  Manifest large = manifest;
  Variable extra = large.variables.front();
  extra.name = "padding"; // the whole arena once more: past the limit
  extra.tensor.offset = 0;
  extra.tensor.shape = {int64_t(arena.size() / 4)};
  large.variables.push_back(extra);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    struct rlimit limit = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    ::signal(SIGXFSZ, SIG_DFL);
    (void)saveCheckpoint(dir.path(), large, arena.data(), info(7), 3);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGXFSZ) << status;
  std::vector<std::string> before;
  for (auto &entry : listDirectory(dir.path()))
    before.push_back(entry);
  ASSERT_EQ(before.size(), 1u) << "the killed write left no temporary";
  EXPECT_EQ(before[0].rfind(".ckpt-0000000007.safetensors.tmp-", 0), 0u)
      << before[0];

  // Names that are not Kiln's temporaries stay.
  std::vector<std::string> keep = {
      "ckpt-0000000007.safetensors.tmp-abcdef", // not hidden
      ".ckpt-7.safetensors.tmp-abcdef",         // not a checkpoint name
      ".ckpt-0000000007.safetensors.tmp-abcde", // five letters
      ".ckpt-0000000007.safetensors.tmp-abc_ef",
      ".other.safetensors.tmp-abcdef", "notes.txt"};
  for (const std::string &name : keep)
    std::ofstream(dir.path() + "/" + name) << "x";
  auto removed = removeStaleTemporaries(dir.path());
  ASSERT_TRUE(removed.isOk()) << removed.status().toString();
  EXPECT_EQ(*removed, std::vector<std::string>{dir.path() + "/" + before[0]});
  std::vector<std::string> after = listDirectory(dir.path());
  std::sort(keep.begin(), keep.end());
  EXPECT_EQ(after, keep);
  // And a model directory that does not exist yet has none.
  removed = removeStaleTemporaries(dir.path() + "/absent");
  ASSERT_TRUE(removed.isOk());
  EXPECT_TRUE(removed->empty());
}

TEST_F(CheckpointTest, NoCheckpointIsNotAnError) {
  std::vector<std::string> warnings;
  auto loaded = loadNewestCheckpoint(dir.path() + "/absent", manifest,
                                     arena.data(), warnings);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  EXPECT_FALSE(loaded->has_value());
}

TEST(VariablesTest, InitializersMatchTheReference) {
  auto m = parseManifest(testManifest());
  ASSERT_TRUE(m.isOk());
  std::vector<uint8_t> arena(static_cast<size_t>(m->arenaBytes), 0xab);
  ASSERT_TRUE(initializeVariables(*m, arena.data(), 17).isOk());
  const Variable &w = *m->findVariable("conv1.weight");
  ref::Tensor expected(ref::Shape(w.tensor.shape.begin(), w.tensor.shape.end()));
  ref::fillHeNormal(expected, 17, "conv1.weight");
  EXPECT_EQ(0, std::memcmp(arena.data() + w.tensor.offset, expected.data.data(),
                           expected.data.size() * 4));
  const Variable &fc = *m->findVariable("fc.weight");
  ref::Tensor fcExpected(ref::Shape(fc.tensor.shape.begin(), fc.tensor.shape.end()));
  ref::fillNormal(fcExpected, double(0.1f), 17, "fc.weight");
  EXPECT_EQ(0, std::memcmp(arena.data() + fc.tensor.offset,
                           fcExpected.data.data(), fcExpected.data.size() * 4));
  const Variable &s = *m->findVariable("kiln.lr_schedule");
  EXPECT_EQ(loadElement(arena.data() + s.tensor.offset, DType::F64, 3), 1000.0);
  const Variable &mom = *m->findVariable("fc.bias.momentum");
  for (int64_t i = 0; i < mom.tensor.numElements(); ++i)
    EXPECT_EQ(loadElement(arena.data() + mom.tensor.offset, DType::F32, i), 0.0);
}

/// A 4x3 bf16 variable `h` with He-normal initialization.
Variable heNormalBf16(ArenaLayout &l) {
  Variable h;
  h.name = "h";
  h.tensor = l.place({4, 3}, DType::BF16);
  h.init = InitKind::HeNormal;
  return h;
}

TEST(VariablesTest, Bf16AndIntegerVariables) {
  ArenaLayout l;
  Manifest m;
  Variable h = heNormalBf16(l);
  Variable i;
  i.name = "i";
  i.tensor = l.place({2}, DType::I64);
  i.init = InitKind::Constant;
  i.value = {-3};
  Variable bad = i;
  bad.name = "bad";
  bad.tensor = l.place({1}, DType::I32);
  bad.value = {0.5};
  m.variables = {h, i};
  std::vector<uint8_t> arena(static_cast<size_t>(l.bytes()));
  ASSERT_TRUE(initializeVariables(m, arena.data(), 1).isOk());
  ref::Tensor expected({4, 3});
  ref::fillHeNormal(expected, 1, "h");
  for (int64_t k = 0; k < 12; ++k)
    EXPECT_EQ(loadElement(arena.data() + h.tensor.offset, DType::BF16, k),
              double(ref::roundToBf16(expected[k])));
  EXPECT_EQ(loadElement(arena.data() + i.tensor.offset, DType::I64, 1), -3.0);
  m.variables = {bad};
  Status s = initializeVariables(m, arena.data(), 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("is not an exact i32"), std::string::npos);
}

float floatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t bf16At(const std::vector<uint8_t> &arena, const TensorRef &t,
                int64_t i) {
  uint16_t bits;
  std::memcpy(&bits, arena.data() + t.offset + 2 * i, 2);
  return bits;
}

/// f32 values whose bf16 rounding differs from truncation, and a tie that
/// stays even; each paired with its round-to-nearest-even bf16.
const std::pair<uint32_t, uint16_t> kRounding[] = {
    {0x3f80c000, 0x3f81}, // 1.00586: low half above 0x8000 rounds up
    {0xbf80c000, 0xbf81}, // the same, negative
    {0x3f808000, 0x3f80}, // a tie, upper half even: stays
    {0x3f818000, 0x3f82}, // a tie, upper half odd: up to even
    {0x3f817fff, 0x3f81}, // just below a tie: down
};

/// "w" (f32 [5], constant kRounding) and its bf16 copy "w.bf16", declared
/// first: copies must not depend on declaration order.
Manifest copyManifest() {
  ArenaLayout l;
  Manifest m;
  m.abi = KILN_RT_MODEL_ABI_VERSION;
  m.model = "copies";
  m.batch = 1;
  Variable copy;
  copy.name = "w.bf16";
  copy.kind = VariableKind::State;
  copy.tensor = l.place({5}, DType::BF16);
  copy.init = InitKind::Copy;
  copy.source = "w";
  Variable w;
  w.name = "w";
  w.tensor = l.place({5}, DType::F32);
  w.init = InitKind::Constant;
  for (const auto &r : kRounding)
    w.value.push_back(double(floatFromBits(r.first)));
  m.variables = {copy, w};
  m.arenaBytes = m.persistentBytes = l.bytes();
  return m;
}

TEST(VariablesTest, CopiesAreTheirSourceRoundedToNearestEven) {
  Manifest m = copyManifest();
  std::vector<uint8_t> arena(static_cast<size_t>(m.arenaBytes), 0xab);
  ASSERT_TRUE(initializeVariables(m, arena.data(), 1).isOk());
  const TensorRef &copy = m.findVariable("w.bf16")->tensor;
  for (size_t i = 0; i < std::size(kRounding); ++i) {
    EXPECT_EQ(bf16At(arena, copy, int64_t(i)), kRounding[i].second)
        << std::hex << kRounding[i].first;
    EXPECT_EQ(bf16At(arena, copy, int64_t(i)),
              ref::floatToBf16Bits(floatFromBits(kRounding[i].first)));
  }

  // A changed source reaches the copy only through refreshCopies.
  const TensorRef &w = m.findVariable("w")->tensor;
  storeElement(arena.data() + w.offset, DType::F32, 0, -2.0);
  EXPECT_EQ(bf16At(arena, copy, 0), 0x3f81);
  ASSERT_TRUE(refreshCopies(m, arena.data()).isOk());
  EXPECT_EQ(bf16At(arena, copy, 0), 0xc000);
}

TEST(VariablesTest, AnF32CopyOfABf16VariableIsExact) {
  ArenaLayout l;
  Manifest m;
  Variable h = heNormalBf16(l);
  Variable f = h;
  f.name = "h.f32";
  f.kind = VariableKind::State;
  f.tensor = l.place({4, 3}, DType::F32);
  f.init = InitKind::Copy;
  f.source = "h";
  m.variables = {h, f};
  std::vector<uint8_t> arena(static_cast<size_t>(l.bytes()), 0xab);
  ASSERT_TRUE(initializeVariables(m, arena.data(), 3).isOk());
  for (int64_t k = 0; k < 12; ++k)
    EXPECT_EQ(loadElement(arena.data() + f.tensor.offset, DType::F32, k),
              loadElement(arena.data() + h.tensor.offset, DType::BF16, k));
}

TEST(VariablesTest, ACopyWithoutItsSourceIsAnError) {
  Manifest m = copyManifest();
  m.variables.pop_back();
  std::vector<uint8_t> arena(static_cast<size_t>(m.arenaBytes), 0);
  Status s = initializeVariables(m, arena.data(), 1);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("variable w.bf16: its source \"w\""),
            std::string::npos)
      << s.message();
}

TEST(VariablesTest, FindNonFiniteInEveryFloatType) {
  // Misaligned on purpose and longer than the scan's chunk of 1024.
  std::vector<uint8_t> bytes(8 * 3000 + 1, 0);
  uint8_t *data = bytes.data() + 1;
  EXPECT_FALSE(findNonFinite(data, DType::F32, 3000));
  float f = NAN;
  std::memcpy(data + 4 * 2500, &f, 4);
  auto bad = findNonFinite(data, DType::F32, 3000);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->index, 2500);
  EXPECT_TRUE(std::isnan(bad->value));
  f = std::numeric_limits<float>::max(); // the largest finite is fine
  std::memcpy(data + 4 * 2500, &f, 4);
  EXPECT_FALSE(findNonFinite(data, DType::F32, 3000));

  uint16_t bf16Inf = 0x7f80, bf16Max = 0x7f7f;
  std::memcpy(data + 2 * 7, &bf16Max, 2);
  EXPECT_FALSE(findNonFinite(data, DType::BF16, 3000));
  std::memcpy(data + 2 * 1030, &bf16Inf, 2);
  bad = findNonFinite(data, DType::BF16, 3000);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->index, 1030);
  EXPECT_EQ(bad->value, INFINITY);

  std::fill(bytes.begin(), bytes.end(), 0);
  double d = -INFINITY;
  std::memcpy(data + 8 * 2999, &d, 8);
  bad = findNonFinite(data, DType::F64, 3000);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->index, 2999);
  EXPECT_EQ(describeNonFinite("layer1.0.bn1.running_var", *bad),
            "running_var of layer1.0.bn1 holds -Inf (element 2999)");
  EXPECT_EQ(describeNonFinite("step", NonFinite{0, NAN}),
            "step holds NaN (element 0)");
  // Integers have no such values, whatever their bits.
  std::fill(bytes.begin(), bytes.end(), 0xff);
  EXPECT_FALSE(findNonFinite(data, DType::I32, 3000));
  EXPECT_FALSE(findNonFinite(data, DType::I64, 3000));
}

class CheckpointCopiesTest : public ::testing::Test {
protected:
  void SetUp() override {
    withCopy = copyManifest();
    // The same model built without the bf16 copy.
    withoutCopy = withCopy;
    withoutCopy.variables.erase(withoutCopy.variables.begin());
    // Garbage around the variables, as in load()'s arena, so whole arenas
    // compare equal when every variable does.
    arena.assign(static_cast<size_t>(withCopy.arenaBytes), 0xab);
    ASSERT_TRUE(initializeVariables(withCopy, arena.data(), 1).isOk());
  }

  /// Loads the newest checkpoint of `dir` with `manifest` into an arena of
  /// garbage.
  std::vector<uint8_t> load(const Manifest &manifest) {
    std::vector<uint8_t> fresh(arena.size(), 0xab);
    std::vector<std::string> warnings;
    auto loaded =
        loadNewestCheckpoint(dir.path(), manifest, fresh.data(), warnings);
    EXPECT_TRUE(loaded.isOk()) << loaded.status().toString();
    EXPECT_TRUE(loaded.isOk() && loaded->has_value());
    EXPECT_TRUE(warnings.empty());
    return fresh;
  }

  const TensorRef &tensor(const char *name) {
    return withCopy.findVariable(name)->tensor;
  }

  TempDir dir;
  Manifest withCopy, withoutCopy;
  std::vector<uint8_t> arena;
};

TEST_F(CheckpointCopiesTest, CopiesAreLeftOutAndRefilledOnLoad) {
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), withCopy, arena.data(), info(2), 3).isOk());
  safetensors::File file;
  kiln::Status status;
  ASSERT_TRUE(
      (status = safetensors::read(checkpointPath(dir.path(), 2), file)).isOk())
      << status.message();
  ASSERT_EQ(file.tensors.size(), 1u);
  EXPECT_EQ(file.tensors[0].name, "w");

  std::vector<uint8_t> fresh = load(withCopy);
  for (size_t i = 0; i < std::size(kRounding); ++i)
    EXPECT_EQ(bf16At(fresh, tensor("w.bf16"), int64_t(i)), kRounding[i].second);
  EXPECT_EQ(fresh, arena);
}

TEST_F(CheckpointCopiesTest, BuildsWithAndWithoutCopiesShareCheckpoints) {
  // Written without the copy (an older or f32 build), read with it.
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), withoutCopy, arena.data(), info(2), 3).isOk());
  std::vector<uint8_t> fresh = load(withCopy);
  EXPECT_EQ(fresh, arena);

  // Written with the copy, read without it: the copy's bytes stay untouched.
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), withCopy, arena.data(), info(4), 3).isOk());
  fresh = load(withoutCopy);
  const TensorRef &w = tensor("w");
  EXPECT_EQ(0, std::memcmp(fresh.data() + w.offset, arena.data() + w.offset,
                           static_cast<size_t>(w.byteSize())));
  EXPECT_EQ(bf16At(fresh, tensor("w.bf16"), 0), 0xabab);
}

TEST_F(CheckpointCopiesTest, ACopySavedAsAVariableIsAnExtraTensor) {
  // A build that trained "w.bf16" as a variable of its own is another model.
  Manifest plain = withCopy;
  plain.variables[0].init = InitKind::Zeros;
  ASSERT_TRUE(
      saveCheckpoint(dir.path(), plain, arena.data(), info(2), 3).isOk());
  std::vector<uint8_t> fresh(arena.size(), 0);
  std::vector<std::string> warnings;
  auto loaded =
      loadNewestCheckpoint(dir.path(), withCopy, fresh.data(), warnings);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_NE(loaded.status().message().find(
                "holds 2 tensors, the model 1 variables (not counting copies)"),
            std::string::npos)
      << loaded.status().message();
}

} // namespace
} // namespace kiln::rt::exec::test
