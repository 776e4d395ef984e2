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

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
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
  kiln::Status status;
  if (!(status = safetensors::read(a, fa)).isOk() ||
      !(status = safetensors::read(b, fb)).isOk())
    return ::testing::AssertionFailure() << status.message();
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
  EXPECT_NE(r.out.find("59 records over 1 rank: 7 steps per epoch of 8 global "
                      "batch; 3 records per epoch not trained on (the "
                      "remainder), different ones each epoch; training to "
                      "step 14 (2.00 epochs)"),
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
  kiln::Status status;
  ASSERT_TRUE(
      (status = safetensors::read(checkpointPath(dir.path(), 8), file)).isOk());
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
  kiln::Status status;
  EXPECT_TRUE(
      (status = safetensors::read(checkpointPath(dir.path(), 6), file)).isOk())
      << status.message();
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

//===----------------------------------------------------------------------===//
// Faults: divergence hidden in the state, interruption mid-step, a failing
// metrics log, the temporaries of killed writes, step counts that overflow.
//===----------------------------------------------------------------------===//

/// Sets an environment variable of the test model for one scope.
class ModelEnv {
public:
  ModelEnv(const char *name, const std::string &value) : name(name) {
    ::setenv(name, value.c_str(), 1);
  }
  ~ModelEnv() { ::unsetenv(name); }

private:
  const char *name;
};

std::string readBytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool exists(const std::string &path) { return ::access(path.c_str(), F_OK) == 0; }

/// Sends SIGTERM to this process once `ready` holds (polled every 10 ms,
/// for at most 30 s) and `delay` has passed after that.
class Killer {
public:
  explicit Killer(std::function<bool()> ready,
                  std::chrono::milliseconds delay = std::chrono::milliseconds(0))
      : thread([ready, delay] {
          for (int i = 0; i < 3000 && !ready(); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
          std::this_thread::sleep_for(delay);
          ::kill(::getpid(), SIGTERM);
        }) {}
  ~Killer() { thread.join(); }

private:
  std::thread thread;
};

TEST(FaultTest, DivergedStateStopsTheRunInsteadOfBeingCheckpointed) {
  // The loss stays finite; bn.running_mean[3] is Inf from step 5 on.
  ModelEnv inf("KILN_TEST_MODEL_INF_FROM_STEP", "5");
  TempDir dir;
  RunResult r = run({"--synthetic", "--steps", "10", "--checkpoint-every", "2",
                     "--log-every", "1", "--model-dir", dir.path()});
  EXPECT_EQ(r.exitCode, kExitNonFiniteLoss) << r.out << r.err;
  EXPECT_NE(r.err.find("kiln: step 6: running_mean of bn holds Inf (element "
                       "3); stopping (last good checkpoint: " +
                       checkpointPath(dir.path(), 4) + ")\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(exists(checkpointPath(dir.path(), 4)));
  EXPECT_FALSE(exists(checkpointPath(dir.path(), 6)));
  EXPECT_EQ(metricsLines(dir.path(), "summary").size(), 0u);

  // The final checkpoint is checked as well.
  TempDir last;
  r = run({"--synthetic", "--steps", "5", "--log-every", "0", "--model-dir",
           last.path()});
  EXPECT_EQ(r.exitCode, kExitNonFiniteLoss) << r.out << r.err;
  EXPECT_NE(r.err.find("kiln: step 5: running_mean of bn holds Inf (element "
                       "3); stopping (last good checkpoint: none)\n"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(exists(checkpointPath(last.path(), 5)));
  EXPECT_EQ(r.out.find("kiln: done"), std::string::npos) << r.out;
}

TEST(FaultTest, SigtermMidStepWritesTheLastCompletedStepAtOnce) {
  TempDir dir, reference;
  ModelEnv slow("KILN_TEST_MODEL_STEP_MS", "200");
  RunResult r;
  {
    // Signal in the middle of step 3, right after step 2's line.
    Killer killer([&] { return metricsLines(dir.path(), "train").size() >= 2; });
    r = run({"--synthetic", "--synthetic-batches", "3", "--steps",
             "1000000", "--log-every", "1", "--interrupt-snapshot", "on",
             "--model-dir", dir.path()});
  }
  EXPECT_EQ(r.exitCode, kExitInterrupted) << r.err;
  std::string snapshot = checkpointPath(dir.path(), 2);
  EXPECT_NE(r.err.find("kiln: SIGTERM: wrote " + snapshot +
                       ", the last completed step's checkpoint, in "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kiln: step 3: interrupted; stopping (checkpoint: " +
                       checkpointPath(dir.path(), 3) + ")"),
            std::string::npos)
      << r.err;
  // The snapshot's checkpoint is byte for byte the one an uninterrupted run
  // writes at step 2.
  ASSERT_EQ(run({"--synthetic", "--synthetic-batches", "3", "--steps", "2",
                 "--log-every", "0", "--model-dir", reference.path()})
                .exitCode,
            0);
  std::string expected = readBytes(checkpointPath(reference.path(), 2));
  ASSERT_FALSE(expected.empty());
  EXPECT_EQ(readBytes(snapshot), expected);
}

TEST(FaultTest, SigtermWithNothingNewToWrite) {
  ModelEnv slow("KILN_TEST_MODEL_STEP_MS", "400");
  TempDir first, written;
  RunResult r;
  {
    // In the middle of step 1: the metrics file is opened at the end of
    // the set-up, just before the checkpointer starts.
    Killer killer([&] { return exists(first.path() + "/metrics.jsonl"); },
                  std::chrono::milliseconds(150));
    r = run({"--synthetic", "--steps", "1000000", "--interrupt-snapshot", "on",
             "--model-dir", first.path()});
  }
  EXPECT_EQ(r.exitCode, kExitInterrupted) << r.err;
  EXPECT_NE(r.err.find("kiln: SIGTERM: no step has completed yet; stopping at "
                       "the end of the first\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(exists(checkpointPath(first.path(), 1)));
  {
    // Step 2's periodic checkpoint is on disk when the signal comes.
    Killer killer([&] { return exists(checkpointPath(written.path(), 2)); });
    r = run({"--synthetic", "--steps", "1000000", "--checkpoint-every", "1",
             "--interrupt-snapshot", "on", "--model-dir", written.path()});
  }
  EXPECT_EQ(r.exitCode, kExitInterrupted) << r.err;
  EXPECT_NE(r.err.find("kiln: SIGTERM: the checkpoint of step 2 is on disk "
                       "already; stopping at the end of the current step\n"),
            std::string::npos)
      << r.err;
}

TEST(FaultTest, TheSnapshotIsCheckedAndItsWriteFailureReported) {
  ModelEnv slow("KILN_TEST_MODEL_STEP_MS", "200");
  TempDir dir;
  RunResult r;
  {
    ModelEnv inf("KILN_TEST_MODEL_INF_FROM_STEP", "2");
    Killer killer([&] { return metricsLines(dir.path(), "train").size() >= 2; });
    r = run({"--synthetic", "--steps", "1000000", "--log-every", "1",
             "--interrupt-snapshot", "on", "--model-dir", dir.path()});
  }
  EXPECT_EQ(r.exitCode, kExitNonFiniteLoss) << r.err;
  EXPECT_NE(r.err.find("kiln: step 2: running_mean of bn holds Inf (element "
                       "3); not writing it on SIGTERM (last good checkpoint: "
                       "none)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kiln: step 3: running_mean of bn holds Inf (element "
                       "3); stopping (last good checkpoint: none)\n"),
            std::string::npos)
      << r.err;

  // The model directory vanishes under the run: the watcher's write fails
  // and says so, and so does the loop's at the end of the step.
  TempDir parent;
  std::string model = parent.path() + "/m";
  {
    Killer killer([&] {
      if (metricsLines(model, "train").size() < 2)
        return false;
      return std::system(("rm -rf '" + model + "'").c_str()) == 0;
    });
    r = run({"--synthetic", "--steps", "1000000", "--log-every", "1",
             "--interrupt-snapshot", "on", "--model-dir", model});
  }
  EXPECT_EQ(r.exitCode, kExitError) << r.err;
  EXPECT_NE(r.err.find("kiln: error: SIGTERM: writing the checkpoint of step 2 "
                       "from the interrupt snapshot failed: writing "
                       "checkpoint: " +
                       checkpointPath(model, 2) +
                       ": cannot create a temporary file in " + model),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("kiln: error: writing checkpoint: " +
                       checkpointPath(model, 3)),
            std::string::npos)
      << r.err;
}

TEST(FaultTest, AFailingMetricsLogStopsTheRunAfterACheckpoint) {
  // A full disk under the log: the first progress line fails.
  TempDir full;
  ASSERT_EQ(::symlink("/dev/full", (full.path() + "/metrics.jsonl").c_str()), 0);
  RunResult r = run({"--synthetic", "--steps", "5", "--log-every", "1",
                     "--model-dir", full.path()});
  EXPECT_EQ(r.exitCode, kExitError) << r.err;
  EXPECT_NE(r.err.find("kiln: error: writing a line of "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find(" to " + full.path() +
                       "/metrics.jsonl failed after 0 bytes: No space left on "
                       "device"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("; stopping (wrote the checkpoint of step 1: " +
                       checkpointPath(full.path(), 1) + ")\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(exists(checkpointPath(full.path(), 1)));

  // Only the summary fails: the final checkpoint is there already.
  TempDir summary;
  ASSERT_EQ(::symlink("/dev/full", (summary.path() + "/metrics.jsonl").c_str()),
            0);
  r = run({"--synthetic", "--steps", "3", "--log-every", "0", "--model-dir",
           summary.path()});
  EXPECT_EQ(r.exitCode, kExitError) << r.err;
  EXPECT_NE(r.err.find("; stopping (the checkpoint of step 3 is on disk: " +
                       checkpointPath(summary.path(), 3) + ")\n"),
            std::string::npos)
      << r.err;

  // The checkpoint cannot be written either (a directory in its place).
  TempDir blocked;
  ASSERT_EQ(::symlink("/dev/full", (blocked.path() + "/metrics.jsonl").c_str()),
            0);
  std::string in = checkpointPath(blocked.path(), 1);
  ASSERT_EQ(::mkdir(in.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((in + "/x").c_str(), 0755), 0);
  r = run({"--synthetic", "--steps", "5", "--log-every", "1", "--model-dir",
           blocked.path()});
  EXPECT_EQ(r.exitCode, kExitError) << r.err;
  EXPECT_NE(r.err.find("; stopping (the checkpoint of step 1 could not be "
                       "written either: writing checkpoint: " +
                       in + ": rename failed: "),
            std::string::npos)
      << r.err;

  // Or must not be: the state has diverged.
  ModelEnv inf("KILN_TEST_MODEL_INF_FROM_STEP", "1");
  TempDir diverged;
  ASSERT_EQ(::symlink("/dev/full", (diverged.path() + "/metrics.jsonl").c_str()),
            0);
  r = run({"--synthetic", "--steps", "5", "--log-every", "1", "--model-dir",
           diverged.path()});
  EXPECT_EQ(r.exitCode, kExitError) << r.err;
  EXPECT_NE(r.err.find("; stopping (no checkpoint of step 1: running_mean of "
                       "bn holds Inf (element 3) (last good checkpoint: "
                       "none))\n"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(exists(checkpointPath(diverged.path(), 1)));
}

TEST(FaultTest, StaleTemporariesAreRemovedAtStart) {
  TempDir dir;
  std::string stale = dir.path() + "/.ckpt-0000000003.safetensors.tmp-AbC123";
  std::string other = dir.path() + "/.notes.tmp-AbC123";
  std::ofstream(stale) << "half a checkpoint";
  std::ofstream(other) << "not ours";
  RunResult r = run({"--synthetic", "--steps", "1", "--log-every", "0",
                     "--model-dir", dir.path()});
  ASSERT_EQ(r.exitCode, 0) << r.err;
  EXPECT_NE(r.out.find("kiln: removed 1 temporary of interrupted checkpoint "
                       "writes: " +
                       stale + "\n"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(exists(stale));
  EXPECT_TRUE(exists(other));
}

TEST_F(DataTest, EpochsThatOverflowTheStepCountAreAnError) {
  RunResult r = run({"--data", data.path(), "--epochs", "2e9"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_NE(r.err.find("--epochs 2000000000: 7 steps per epoch make 1.4e+10 "
                       "steps, more than the 9999999999 a run can count"),
            std::string::npos)
      << r.err;
  r = run({"--data", data.path(), "--epochs", "1", "--warmup-epochs", "5e9"});
  EXPECT_EQ(r.exitCode, kExitError);
  EXPECT_NE(r.err.find("--warmup-epochs 5000000000: 7 steps per epoch make "
                       "3.5e+10 steps, more than the 9999999999 a run can "
                       "count"),
            std::string::npos)
      << r.err;
}

} // namespace
} // namespace kiln::rt::exec::test
