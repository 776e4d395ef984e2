//===- options_test.cpp - The executable's command line -------------------===//

#include "kiln/rt/exec/options.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace kiln::rt::exec {
namespace {

StatusOr<RunOptions> parse(std::initializer_list<const char *> args) {
  std::vector<char *> argv = {const_cast<char *>("train")};
  for (const char *a : args)
    argv.push_back(const_cast<char *>(a));
  return parseOptions(static_cast<int>(argv.size()), argv.data());
}

TEST(OptionsTest, Defaults) {
  auto o = parse({"--synthetic", "--steps", "5"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_TRUE(o->synthetic);
  EXPECT_EQ(*o->steps, 5);
  EXPECT_FALSE(o->epochs.has_value());
  EXPECT_EQ(o->seed, 0u);
  EXPECT_EQ(o->threads, 0);
  EXPECT_EQ(o->logEvery, 10);
  EXPECT_EQ(o->keepCheckpoints, 3);
  EXPECT_EQ(o->augment, Augment::RandomResizedCrop);
  EXPECT_TRUE(o->flip);
  EXPECT_TRUE(o->blockedWeights);
  EXPECT_EQ(o->comm, CommBackend::Auto);
  EXPECT_EQ(o->commTimeout, 300);
}

TEST(OptionsTest, ValuesInlineOrSeparate) {
  auto o = parse({"--data=/d", "--epochs", "2.5", "--seed=7", "--threads",
                  "3", "--model-dir", "/m", "--checkpoint-every=100",
                  "--keep-checkpoints", "2", "--resume", "--eval-every-epoch",
                  "--pad-crop=2", "--no-flip", "--mean", "1,2,3", "--std=4",
                  "--comm=mpi", "--comm-timeout", "9.5", "--weights-format",
                  "hwio", "--conv-algorithm", "winograd", "--log-every", "0"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->dataDir, "/d");
  EXPECT_EQ(*o->epochs, 2.5);
  EXPECT_EQ(o->seed, 7u);
  EXPECT_TRUE(o->seedSet);
  EXPECT_EQ(o->threads, 3);
  EXPECT_EQ(o->modelDir, "/m");
  EXPECT_EQ(o->checkpointEvery, 100);
  EXPECT_EQ(o->keepCheckpoints, 2);
  EXPECT_TRUE(o->resume);
  EXPECT_TRUE(o->eval); // implied by --eval-every-epoch
  EXPECT_EQ(o->augment, Augment::PadCrop);
  EXPECT_EQ(o->pad, 2);
  EXPECT_FALSE(o->flip);
  EXPECT_EQ(o->mean, (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(o->stddev, (std::vector<float>{4}));
  EXPECT_EQ(o->comm, CommBackend::Mpi);
  EXPECT_EQ(o->commTimeout, 9.5);
  EXPECT_FALSE(o->blockedWeights);
  EXPECT_EQ(o->convAlgorithm, "winograd");
  EXPECT_EQ(o->logEvery, 0);
}

TEST(OptionsTest, ScheduleOverridesKeepTheirOrder) {
  auto o = parse({"--synthetic", "--steps", "1", "--lr", "0.4",
                  "--set-schedule", "warmup_steps=10", "--total-steps=90",
                  "--end-lr", "1e-4"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  using P = std::pair<std::string, double>;
  EXPECT_EQ(o->scheduleOverrides,
            (std::vector<P>{{"lr", 0.4},
                            {"=warmup_steps", 10},
                            {"total_steps", 90},
                            {"end_lr", 1e-4}}));
}

struct Bad {
  std::vector<const char *> args;
  const char *message;
};

void PrintTo(const Bad &b, std::ostream *os) {
  for (const char *a : b.args)
    *os << a << ' ';
}

class OptionsErrorTest : public ::testing::TestWithParam<Bad> {};

TEST_P(OptionsErrorTest, NamesTheProblem) {
  std::vector<char *> argv = {const_cast<char *>("train")};
  for (const char *a : GetParam().args)
    argv.push_back(const_cast<char *>(a));
  auto o = parseOptions(static_cast<int>(argv.size()), argv.data());
  ASSERT_FALSE(o.isOk());
  EXPECT_NE(o.status().message().find(GetParam().message), std::string::npos)
      << o.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OptionsErrorTest,
    ::testing::Values(
        Bad{{"--synthetic", "--steps", "1", "--bogus"},
            "unknown flag '--bogus'"},
        Bad{{"--synthetic", "--steps", "1", "--conv-algorithm", "fft"},
            "--conv-algorithm expects auto, winograd, direct or library, got "
            "'fft'"},
        Bad{{"--synthetic", "--steps"}, "--steps needs a value"},
        Bad{{"--synthetic", "--steps", "x"},
            "--steps expects an integer, got 'x'"},
        Bad{{"--synthetic", "--steps", "-1"}, "--steps must be at least 0"},
        Bad{{"--synthetic=1", "--steps", "1"}, "--synthetic takes no value"},
        Bad{{"--steps", "1"}, "no input: pass --data DIR"},
        Bad{{"--synthetic", "--data", "/d", "--steps", "1"},
            "--data and --synthetic exclude each other"},
        Bad{{"--synthetic"}, "how long? pass --steps N or --epochs E"},
        Bad{{"--data", "/d", "--steps", "1", "--epochs", "1"},
            "--steps and --epochs exclude each other"},
        Bad{{"--synthetic", "--epochs", "1"}, "--epochs needs --data"},
        Bad{{"--synthetic", "--steps", "1", "--resume"},
            "--resume needs --model-dir"},
        Bad{{"--synthetic", "--steps", "1", "--lr", "fast"},
            "--lr expects a number, got 'fast'"},
        Bad{{"--synthetic", "--steps", "1", "--set-schedule", "lr"},
            "--set-schedule expects slot=value"},
        Bad{{"--synthetic", "--steps", "1", "--augment", "mixup"},
            "--augment expects random-resized-crop, pad-crop or none"},
        Bad{{"--synthetic", "--steps", "1", "--mean", "1,2,3,4"},
            "--mean expects 1 to 3 comma-separated numbers"},
        Bad{{"--synthetic", "--steps", "1", "--threads", "0"},
            "--threads must be at least 1"},
        Bad{{"--synthetic", "--steps", "1", "--comm-timeout", "0"},
            "--comm-timeout must be positive"}));

TEST(OptionsTest, HelpNeedsNothingElse) {
  auto o = parse({"--help"});
  ASSERT_TRUE(o.isOk());
  EXPECT_TRUE(o->help);
  EXPECT_NE(usage("train").find("--set-schedule SLOT=X"), std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec
