//===- options_test.cpp - The executable's command line -------------------===//

#include "kiln/rt/exec/options.h"
#include "parse_args.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace kiln::rt::exec {
namespace {

using test::parse;

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
        Bad{{"--synthetic", "--steps", "-1"},
            "--steps must be between 0 and 9999999999, got -1"},
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
        Bad{{"--synthetic", "--steps", "1", "--comm-timeout", "0"},
            "--comm-timeout must be positive, got 0"},
        Bad{{"--synthetic", "--steps", "1", "--allreduce", "torus"},
            "--allreduce torus and --torus-dims go together"},
        Bad{{"--synthetic", "--steps", "1", "--torus-dims", "2x2"},
            "--allreduce torus and --torus-dims go together"},
        Bad{{"--synthetic", "--steps", "1", "--allreduce", "torus",
             "--torus-dims", "2x0"},
            "--torus-dims must be between 1 and 1048576, got 0"}));

// Every numeric flag is bounded: a value that would overflow, wrap around
// in a narrower field or exhaust memory is refused with the flag, the
// value and the range.
INSTANTIATE_TEST_SUITE_P(
    Bounds, OptionsErrorTest,
    ::testing::Values(
        Bad{{"--synthetic", "--steps", "10000000000"},
            "--steps must be between 0 and 9999999999, got 10000000000"},
        Bad{{"--synthetic", "--steps", "99999999999999999999"},
            "--steps must be between 0 and 9999999999, got "
            "99999999999999999999"},
        Bad{{"--data", "/d", "--epochs", "1e30"},
            "--epochs must be between 0 and 9999999999, got 1e30"},
        Bad{{"--data", "/d", "--epochs", "-1"},
            "--epochs must be between 0 and 9999999999, got -1"},
        Bad{{"--data", "/d", "--epochs", "inf"},
            "--epochs expects a number, got 'inf'"},
        Bad{{"--data", "/d", "--epochs", "1", "--warmup-epochs", "2e10"},
            "--warmup-epochs must be between 0 and 9999999999, got 2e10"},
        Bad{{"--synthetic", "--steps", "1", "--synthetic-batches", "0"},
            "--synthetic-batches must be between 1 and 1024, got 0"},
        Bad{{"--synthetic", "--steps", "1", "--pad-crop", "4294967296"},
            "--pad-crop must be between 0 and 4096, got 4294967296"},
        Bad{{"--synthetic", "--steps", "1", "--data-workers", "1000"},
            "--data-workers must be between 1 and 256, got 1000"},
        Bad{{"--synthetic", "--steps", "1", "--prefetch", "0"},
            "--prefetch must be between 1 and 1024, got 0"},
        Bad{{"--synthetic", "--steps", "1", "--shuffle-buffer", "2000000"},
            "--shuffle-buffer must be between 1 and 1048576, got 2000000"},
        Bad{{"--synthetic", "--steps", "1", "--seed", "-1"},
            "--seed must be between 0 and 9223372036854775807, got -1"},
        Bad{{"--synthetic", "--steps", "1", "--log-every", "-1"},
            "--log-every must be between 0 and 9999999999, got -1"},
        Bad{{"--synthetic", "--steps", "1", "--checkpoint-every", "1e3"},
            "--checkpoint-every expects an integer, got '1e3'"},
        Bad{{"--synthetic", "--steps", "1", "--keep-checkpoints", "0"},
            "--keep-checkpoints must be between 1 and 9999999999, got 0"},
        Bad{{"--synthetic", "--steps", "1", "--lr", "-0.1"},
            "--lr must be at least 0, got -0.1"},
        Bad{{"--synthetic", "--steps", "1", "--power", "-1"},
            "--power must be at least 0, got -1"},
        Bad{{"--synthetic", "--steps", "1", "--warmup-steps", "1e11"},
            "--warmup-steps must be between 0 and 9999999999, got 1e11"},
        Bad{{"--synthetic", "--steps", "1", "--total-steps", "-5"},
            "--total-steps must be between 0 and 9999999999, got -5"},
        Bad{{"--synthetic", "--steps", "1", "--set-schedule", "lr=nan"},
            "--set-schedule expects a number, got 'nan'"},
        Bad{{"--synthetic", "--steps", "1", "--std", "58,0,57"},
            "--std values must be positive, got '58,0,57'"},
        Bad{{"--synthetic", "--steps", "1", "--mean", "1,inf"},
            "--mean expects a number, got 'inf'"},
        Bad{{"--synthetic", "--steps", "1", "--comm-timeout", "1e300"},
            "--comm-timeout must be between 0 and 1000000, got 1e300"},
        Bad{{"--synthetic", "--steps", "1", "--interrupt-snapshot", "maybe"},
            "--interrupt-snapshot expects auto, on or off, got 'maybe'"},
        Bad{{"--synthetic", "--steps", "1", "--interrupt-snapshot", "on"},
            "--interrupt-snapshot on needs --model-dir"}));

TEST(OptionsTest, ThreadsAreBoundedByTheCores) {
  std::string range =
      "--threads must be between 1 and " + std::to_string(4 * availableCores());
  for (const char *bad : {"0", "100000"}) {
    auto o = parse({"--synthetic", "--steps", "1", "--threads", bad});
    ASSERT_FALSE(o.isOk()) << bad;
    EXPECT_NE(o.status().message().find(range + ", got " + bad),
              std::string::npos)
        << o.status().message();
  }
  auto o = parse({"--synthetic", "--steps", "1", "--threads",
                  std::to_string(4 * availableCores()).c_str()});
  EXPECT_TRUE(o.isOk()) << o.status().toString();
}

TEST(OptionsTest, InterruptSnapshot) {
  auto o = parse({"--synthetic", "--steps", "1"});
  ASSERT_TRUE(o.isOk());
  EXPECT_EQ(o->interruptSnapshot, InterruptSnapshot::Auto);
  o = parse({"--synthetic", "--steps", "1", "--interrupt-snapshot", "on",
             "--model-dir", "/m"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->interruptSnapshot, InterruptSnapshot::On);
  o = parse({"--synthetic", "--steps", "1", "--interrupt-snapshot=off"});
  ASSERT_TRUE(o.isOk()) << o.status().toString();
  EXPECT_EQ(o->interruptSnapshot, InterruptSnapshot::Off);
}

TEST(OptionsTest, HelpNeedsNothingElse) {
  auto o = parse({"--help"});
  ASSERT_TRUE(o.isOk());
  EXPECT_TRUE(o->help);
  EXPECT_NE(usage("train").find("--set-schedule SLOT=X"), std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec
