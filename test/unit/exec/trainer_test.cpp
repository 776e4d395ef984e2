//===- trainer_test.cpp - The training executable on the test model -------===//
//
// runMain in-process with the hand-written model (test_model.cpp): the loop,
// progress, metrics, evaluation, schedule overrides, checkpoints, resume and
// the NaN stop, on synthetic data and on small TFRecord shards.

#include "exec_test_util.h"
#include "shards.h"

#include "kiln/rt/exec/checkpoint.h"
#include "kiln/rt/exec/trainer.h"
#include "kiln/rt/safetensors.h"

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <regex>
#include <sstream>

namespace kiln::rt::exec::test {
namespace {

struct RunResult {
  int exitCode;
  std::string out, err;
};

RunResult run(std::vector<std::string> args) {
  args.insert(args.begin(), "kiln-test-train");
  // One thread: results must not depend on the machine's core count.
  args.push_back("--threads=1");
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  ModelEntryPoints model;
  model.manifest = kiln_model_manifest;
  model.train = _mlir_ciface_kiln_model_train_step;
  model.eval = _mlir_ciface_kiln_model_eval_step;
  ::testing::internal::CaptureStdout();
  ::testing::internal::CaptureStderr();
  int code = runMain(static_cast<int>(argv.size()), argv.data(), model);
  RunResult r{code, ::testing::internal::GetCapturedStdout(),
              ::testing::internal::GetCapturedStderr()};
  return r;
}

std::vector<std::string> metricsLines(const std::string &dir,
                                      const std::string &kind) {
  std::ifstream in(dir + "/metrics.jsonl");
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (line.find("\"kind\":\"" + kind + "\"") != std::string::npos)
      out.push_back(line);
  return out;
}

double field(const std::string &line, const std::string &key) {
  std::smatch m;
  std::regex re("\"" + key + "\":([-0-9.eE+]+)");
  if (!std::regex_search(line, m, re))
    return NAN;
  return std::stod(m[1]);
}

/// Every tensor of two checkpoint files, compared byte for byte.
::testing::AssertionResult sameVariables(const std::string &a,
                                         const std::string &b) {
  safetensors::File fa, fb;
  std::string error;
  if (!safetensors::read(a, fa, error) || !safetensors::read(b, fb, error))
    return ::testing::AssertionFailure() << error;
  if (fa.tensors.size() != fb.tensors.size())
    return ::testing::AssertionFailure() << "tensor counts differ";
  for (const safetensors::Tensor &t : fa.tensors) {
    const safetensors::Tensor *u = fb.find(t.name);
    if (!u || u->bytes != t.bytes)
      return ::testing::AssertionFailure() << t.name << " differs";
  }
  return ::testing::AssertionSuccess();
}

TEST(TrainerTest, SyntheticTrainingLowersTheLoss) {
  TempDir dir;
  RunResult r = run({"--synthetic", "--synthetic-batches", "2", "--steps",
                     "60", "--log-every", "10", "--model-dir", dir.path()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("step 60/60  loss "), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(step 10/60  loss \d+\.\d{4}  lr 0\.\d{4}  \d+\.\d img/s  ETA \d+s)")))
      << r.out;
  auto lines = metricsLines(dir.path(), "train");
  ASSERT_EQ(lines.size(), 6u);
  double first = field(lines.front(), "loss"), last = field(lines.back(), "loss");
  EXPECT_LT(last, 0.5 * first) << "loss " << first << " -> " << last;
  EXPECT_EQ(metricsLines(dir.path(), "summary").size(), 1u);
  EXPECT_EQ(::access(checkpointPath(dir.path(), 60).c_str(), F_OK), 0);
}

TEST(TrainerTest, ResumeIsBitwiseIdenticalOnSyntheticData) {
  TempDir straight, resumed;
  std::vector<std::string> common = {"--synthetic", "--synthetic-batches", "3",
                                     "--log-every", "0", "--seed", "4"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  ASSERT_EQ(run(with({"--steps", "10", "--model-dir", straight.path()})).exitCode, 0);
  ASSERT_EQ(run(with({"--steps", "4", "--model-dir", resumed.path()})).exitCode, 0);
  RunResult r = run(with({"--steps", "10", "--model-dir", resumed.path(),
                          "--resume"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("resuming from " + checkpointPath(resumed.path(), 4)),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(sameVariables(checkpointPath(straight.path(), 10),
                            checkpointPath(resumed.path(), 10)));
  // And it did train: step 10 differs from step 4.
  EXPECT_FALSE(sameVariables(checkpointPath(resumed.path(), 4),
                             checkpointPath(resumed.path(), 10)));
}

class DataTest : public ::testing::Test {
protected:
  void SetUp() override {
    // 59 training records: 7 steps of 8 per epoch.
    ASSERT_TRUE(writeRawShards(data.path(), "train", {25, 13, 21}, 1).isOk());
    ASSERT_TRUE(writeRawShards(data.path(), "validation", {11, 8}, 2).isOk());
  }
  TempDir data;
};

TEST_F(DataTest, ResumeAcrossEpochsIsBitwiseIdentical) {
  TempDir straight, resumed;
  std::vector<std::string> common = {"--data", data.path(), "--pad-crop=1",
                                     "--flip", "--log-every", "0",
                                     "--shuffle-buffer", "16"};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = common;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  ASSERT_EQ(run(with({"--steps", "17", "--model-dir", straight.path()})).exitCode, 0);
  // Stop mid-epoch 1, resume into epoch 2.
  ASSERT_EQ(run(with({"--steps", "9", "--model-dir", resumed.path()})).exitCode, 0);
  // The checkpoint's seed fixes the data order; a different --seed is
  // ignored with a warning.
  RunResult r = run(with({"--steps", "17", "--model-dir", resumed.path(),
                          "--resume", "--seed", "99"}));
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --seed 99 ignored: the checkpoint was "
                       "trained with seed 0"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(sameVariables(checkpointPath(straight.path(), 17),
                            checkpointPath(resumed.path(), 17)));
}

TEST_F(DataTest, EpochsAndEvaluationEveryEpoch) {
  TempDir model;
  RunResult r = run({"--data", data.path(), "--augment", "none", "--epochs",
                     "2", "--eval-every-epoch", "--log-every", "7",
                     "--model-dir", model.path()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("7 steps per epoch; training to step 14 (2.00 epochs)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("step 7/14  epoch 1.00  loss"), std::string::npos) << r.out;
  auto evals = metricsLines(model.path(), "eval");
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(field(evals[0], "step"), 7);
  EXPECT_EQ(field(evals[1], "step"), 14);
  EXPECT_EQ(field(evals[1], "examples"), 19); // 11 + 8, partial batch kept
  double top1 = field(evals[1], "top1"), top5 = field(evals[1], "top5");
  EXPECT_GE(top1, 0);
  EXPECT_LE(top1, top5);
  EXPECT_LE(top5, 1);
  EXPECT_NE(r.out.find("(19 examples"), std::string::npos) << r.out;
}

TEST_F(DataTest, MissingDataDirectoryIsAClearError) {
  RunResult r = run({"--data", data.path() + "/nope", "--steps", "1"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_NE(r.err.find("kiln: error: cannot open data directory " +
                       data.path() + "/nope"),
            std::string::npos)
      << r.err;
}

TEST(TrainerTest, NonFiniteLossStopsWithTheStepAndTheLastCheckpoint) {
  TempDir dir;
  RunResult r = run({"--synthetic", "--steps", "50", "--lr", "1e30",
                     "--checkpoint-every", "1", "--model-dir", dir.path()});
  EXPECT_EQ(r.exitCode, kExitNonFiniteLoss) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex(R"(step (\d+): loss is (NaN|Inf); stopping \(last checkpoint: (\S+)\))")))
      << r.err;
  int64_t badStep = std::stoll(m[1]);
  EXPECT_GT(badStep, 1);
  EXPECT_EQ(m[3].str(), checkpointPath(dir.path(), badStep - 1));
  // The last good checkpoint is kept; nothing was written for the bad step.
  EXPECT_EQ(::access(checkpointPath(dir.path(), badStep - 1).c_str(), F_OK), 0);
  EXPECT_NE(::access(checkpointPath(dir.path(), badStep).c_str(), F_OK), 0);
}

TEST(TrainerTest, ScheduleOverridesReachTheModel) {
  TempDir dir;
  RunResult r = run({"--synthetic", "--steps", "8", "--log-every", "1",
                     "--lr", "0.5", "--total-steps", "20", "--set-schedule",
                     "warmup_steps=4", "--model-dir", dir.path()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("cosine_decay: base_lr=0.5 warmup_init_lr=0 "
                       "warmup_steps=4 total_steps=20 end_lr=0"),
            std::string::npos)
      << r.out;
  auto lines = metricsLines(dir.path(), "train");
  ASSERT_EQ(lines.size(), 8u);
  for (size_t i = 0; i < lines.size(); ++i) {
    double s = double(i); // the step input of the i-th step
    double expected =
        s < 4 ? 0.5 * s / 4
              : 0.5 * (1 + std::cos(3.14159265358979323846 * (s - 4) / 16)) / 2;
    EXPECT_NEAR(field(lines[i], "lr"), expected, 1e-6) << "step " << i;
  }
  safetensors::File file;
  std::string error;
  ASSERT_TRUE(safetensors::read(checkpointPath(dir.path(), 8), file, error));
  EXPECT_EQ(safetensors::toF64(*file.find("kiln.lr_schedule")),
            (std::vector<double>{0.5, 0, 4, 20, 0}));
}

TEST(TrainerTest, AnOverrideOfAMissingSlotNamesTheSlots) {
  RunResult r = run({"--synthetic", "--steps", "1", "--power", "2"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_NE(r.err.find("--power: the cosine_decay schedule has no such slot "
                       "(its slots: base_lr, warmup_init_lr, warmup_steps, "
                       "total_steps, end_lr)"),
            std::string::npos)
      << r.err;
  r = run({"--synthetic", "--steps", "1", "--total-steps", "2.5"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_NE(r.err.find("total_steps is a step count"), std::string::npos) << r.err;
}

TEST(TrainerTest, ResumeSkipsADamagedCheckpoint) {
  TempDir dir;
  ASSERT_EQ(run({"--synthetic", "--steps", "6", "--checkpoint-every", "3",
                 "--model-dir", dir.path(), "--log-every", "0"})
                .exitCode,
            0);
  ASSERT_EQ(::truncate(checkpointPath(dir.path(), 6).c_str(), 40), 0);
  RunResult r = run({"--synthetic", "--steps", "6", "--model-dir", dir.path(),
                     "--resume", "--log-every", "0"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.err.find("warning: skipping damaged checkpoint " +
                       checkpointPath(dir.path(), 6)),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("resuming from " + checkpointPath(dir.path(), 3)),
            std::string::npos)
      << r.out;
  // Steps 4..6 were redone and a sound step-6 checkpoint replaced the
  // damaged one.
  safetensors::File file;
  std::string error;
  EXPECT_TRUE(safetensors::read(checkpointPath(dir.path(), 6), file, error))
      << error;
}

TEST(TrainerTest, SigtermStopsAtAStepBoundaryWithACheckpoint) {
  TempDir dir;
  // Signal only once the loop runs (a metrics line exists): before that the
  // handler is not installed and SIGTERM would end the test binary.
  std::thread killer([&] {
    for (int i = 0; i < 3000; ++i) {
      if (!metricsLines(dir.path(), "train").empty())
        break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(::getpid(), SIGTERM);
  });
  RunResult r = run({"--synthetic", "--steps", "1000000000", "--log-every",
                     "1", "--model-dir", dir.path()});
  killer.join();
  EXPECT_EQ(r.exitCode, kExitInterrupted) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      r.err, m,
      std::regex(R"(step (\d+): interrupted; stopping \(checkpoint: (\S+)\))")))
      << r.err;
  EXPECT_EQ(m[2].str(), checkpointPath(dir.path(), std::stoll(m[1])));
  EXPECT_EQ(::access(m[2].str().c_str(), F_OK), 0);

  // The interrupted run resumes; --steps 0 with --eval only evaluates.
  RunResult e = run({"--synthetic", "--steps", "0", "--resume", "--eval",
                     "--model-dir", dir.path()});
  ASSERT_EQ(e.exitCode, 0) << e.err;
  EXPECT_NE(e.out.find("eval at step " + m[1].str() + ": top-1"),
            std::string::npos)
      << e.out;
}

TEST(TrainerTest, CommandLineErrorsExitWithStatus2) {
  RunResult r = run({"--synthetic", "--steps", "1", "--frobnicate"});
  EXPECT_EQ(r.exitCode, kExitUsage);
  EXPECT_NE(r.err.find("unknown flag '--frobnicate'"), std::string::npos);
  r = run({"--help"});
  EXPECT_EQ(r.exitCode, 0);
  EXPECT_NE(r.out.find("usage: kiln-test-train"), std::string::npos);
}

TEST(TrainerTest, ProfileReportsEveryCall) {
  RunResult r = run({"--synthetic", "--steps", "2", "--profile", "--log-every", "0"});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("library calls (rank 0)"), std::string::npos);
  EXPECT_NE(r.out.find("conv2d_backward_data"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos);
}

} // namespace
} // namespace kiln::rt::exec::test
