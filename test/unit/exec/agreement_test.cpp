//===- agreement_test.cpp - What the ranks of a job must agree on ---------===//
//
// The pieces of the start-up comparison that need no second rank: the fields
// each rank describes, their exchange format, the messages, and the
// communication summary. Whole jobs whose ranks differ run under mpirun in
// test/e2e/mpi-ranks-agree.test.

#include "kiln/rt/exec/agreement.h"

#include "exec_test_util.h"
#include "manifest_test_util.h"
#include "kiln/rt/exec/run_loop.h"
#include "kiln/rt/model.h"

#include <gtest/gtest.h>

#include <fstream>
#include <initializer_list>
#include <string>
#include <vector>

namespace kiln::rt::exec {
namespace {

using test::pack;
using test::testManifest;
using test::unpackTestManifest;
namespace fb = ::kiln::rt::fb;

RunOptions parse(std::initializer_list<const char *> args) {
  std::vector<char *> argv = {const_cast<char *>("train")};
  for (const char *a : args)
    argv.push_back(const_cast<char *>(a));
  StatusOr<RunOptions> o = parseOptions(int(argv.size()), argv.data());
  EXPECT_TRUE(o.isOk()) << o.status().toString();
  return o.isOk() ? *o : RunOptions{};
}

std::string disagreement(const RankFields &mine, const RankFields &rankZero) {
  return describeDisagreement(1, 2, mine, rankZero);
}

TEST(AgreementTest, FieldsRoundTripAnyBytes) {
  RankFields fields = {{"--data", "data 12", "--data /a:b\n12 (x)", false},
                       {"", "", "", true},
                       {std::string("nul\0byte", 8), "9:", "", false}};
  StatusOr<RankFields> back = parseRankFields(serializeRankFields(fields));
  ASSERT_TRUE(back.isOk()) << back.status().toString();
  ASSERT_EQ(back->size(), fields.size());
  for (size_t i = 0; i < fields.size(); ++i) {
    EXPECT_EQ((*back)[i].name, fields[i].name);
    EXPECT_EQ((*back)[i].value, fields[i].value);
    EXPECT_EQ((*back)[i].shown, fields[i].shown);
    EXPECT_EQ((*back)[i].backstop, fields[i].backstop);
  }
}

TEST(AgreementTest, MalformedDescriptionNamesTheByte) {
  std::string text = serializeRankFields({{"a", "b", "", false}});
  StatusOr<RankFields> cut = parseRankFields(text.substr(0, text.size() - 2));
  ASSERT_FALSE(cut.isOk());
  // "1:a1:b0" stops in the third string, which starts at byte 6.
  EXPECT_NE(cut.status().message().find("malformed rank description at byte "
                                        "6 of 7"),
            std::string::npos)
      << cut.status().message();
  EXPECT_FALSE(parseRankFields("99999999999999999999:x").isOk());
}

TEST(AgreementTest, OneLineNamesRankFieldAndBothValues) {
  RankFields zero = describeRunFlags(parse({"--synthetic", "--steps", "10",
                                            "--lr", "0.1"}));
  RankFields one = describeRunFlags(parse({"--synthetic", "--steps", "10",
                                           "--lr", "0.2"}));
  EXPECT_EQ(disagreement(one, zero),
            "rank 1 of 2 differs from rank 0: --lr 0.2 (rank 0: 0.1)");
  EXPECT_EQ(disagreement(zero, zero), "");
  EXPECT_EQ(describeDisagreement(3, 4, one, zero),
            "rank 3 of 4 differs from rank 0: --lr 0.2 (rank 0: 0.1)");
}

TEST(AgreementTest, AFlagGivenOnOneSideOnly) {
  RankFields zero = describeRunFlags(parse({"--data", "/d", "--epochs", "2"}));
  RankFields one = describeRunFlags(parse(
      {"--data", "/d", "--steps", "10", "--set-schedule", "end_lr=0.5"}));
  EXPECT_EQ(disagreement(one, zero),
            "rank 1 of 2 differs from rank 0: --epochs not given (rank 0: 2); "
            "--steps 10 (rank 0: not given); --set-schedule end_lr 0.5 (rank "
            "0: not given)");
}

TEST(AgreementTest, WhatMayDifferPerRankIsNotCompared) {
  RankFields zero = describeRunFlags(parse(
      {"--synthetic", "--steps", "10", "--model-dir", "/node0/run",
       "--threads", "1", "--log-every", "5", "--conv-algorithm", "direct",
       "--keep-checkpoints", "1", "--comm-timeout", "10", "--profile"}));
  RankFields one = describeRunFlags(parse(
      {"--synthetic", "--steps", "10", "--model-dir", "/node1/run",
       "--threads", "2", "--weights-format", "hwio", "--data-workers", "3",
       "--prefetch", "9", "--comm", "mpi"}));
  EXPECT_EQ(disagreement(one, zero), "");
  // Whether there is a model directory decides the checkpoint collectives.
  RankFields none = describeRunFlags(parse({"--synthetic", "--steps", "10"}));
  EXPECT_EQ(disagreement(none, zero),
            "rank 1 of 2 differs from rank 0: --model-dir not given (rank 0: "
            "/node0/run)");
}

TEST(AgreementTest, EveryFlagThatMustAgreeIsCompared) {
  const std::vector<const char *> base = {"--data", "/d", "--steps", "10"};
  struct Case {
    std::vector<const char *> extra;
    const char *field;
  };
  const std::vector<Case> cases = {
      {{"--augment", "none"}, "--augment"},
      {{"--pad-crop", "2"}, "--pad-crop"},
      {{"--no-flip"}, "--flip"},
      {{"--mean", "1,2,3"}, "--mean"},
      {{"--std", "2"}, "--std"},
      {{"--shuffle-buffer", "7"}, "--shuffle-buffer"},
      {{"--skip-bad-records"}, "--skip-bad-records"},
      {{"--label-offset", "0"}, "--label-offset"},
      {{"--seed", "3"}, "--seed"},
      {{"--warmup-steps", "3"}, "--warmup-steps"},
      {{"--warmup-epochs", "3"}, "--warmup-epochs"},
      {{"--decay-epochs", "3"}, "--decay-epochs"},
      {{"--model-dir", "m", "--checkpoint-every", "5"}, "--checkpoint-every"},
      {{"--model-dir", "m", "--resume"}, "--resume"},
      {{"--interrupt-snapshot", "off"}, "--interrupt-snapshot"},
      {{"--eval"}, "--eval"},
      {{"--eval-every-epoch"}, "--eval-every-epoch"},
      {{"--verify-replicas"}, "--verify-replicas"},
      {{"--allreduce", "ring"}, "--allreduce"},
      {{"--allreduce", "torus", "--torus-dims", "1x1"}, "--allreduce"},
  };
  RankFields zero;
  {
    std::vector<char *> argv = {const_cast<char *>("train")};
    for (const char *a : base)
      argv.push_back(const_cast<char *>(a));
    zero = describeRunFlags(*parseOptions(int(argv.size()), argv.data()));
  }
  for (const Case &c : cases) {
    std::vector<char *> argv = {const_cast<char *>("train")};
    for (const char *a : base)
      argv.push_back(const_cast<char *>(a));
    for (const char *a : c.extra)
      argv.push_back(const_cast<char *>(a));
    StatusOr<RunOptions> o = parseOptions(int(argv.size()), argv.data());
    ASSERT_TRUE(o.isOk()) << o.status().toString();
    std::string text = disagreement(describeRunFlags(*o), zero);
    std::string field = c.field;
    EXPECT_TRUE(text.find(": " + field + " ") != std::string::npos ||
                text.find("; " + field + " ") != std::string::npos)
        << field << ": " << text;
  }
}

TEST(AgreementTest, DataComparedByShardNamesAndSizesNotPath) {
  test::TempDir a, b, c;
  auto write = [](const std::string &path, size_t bytes) {
    std::ofstream(path) << std::string(bytes, 'x');
  };
  for (const test::TempDir *dir : {&a, &b, &c}) {
    write(dir->path() + "/train-00000-of-00002", 10);
    write(dir->path() + "/validation-00000-of-00001", 5);
  }
  write(a.path() + "/train-00001-of-00002", 20);
  write(b.path() + "/train-00001-of-00002", 20);
  write(c.path() + "/train-00001-of-00002", 21);
  auto fields = [](const std::string &dir) {
    RankFields f = describeRunFlags(
        parse({"--data", dir.c_str(), "--steps", "1"}));
    return RankFields{f[0]};
  };
  EXPECT_EQ(disagreement(fields(b.path()), fields(a.path())), "");
  std::string text = disagreement(fields(c.path()), fields(a.path()));
  EXPECT_NE(text.find("input --data " + c.path() +
                      " (2 train shards of 31 bytes, 1 validation shard of "
                      "5 bytes; names and sizes "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(rank 0: --data " + a.path() +
                      " (2 train shards of 30 bytes"),
            std::string::npos)
      << text;

  RankFields synthetic =
      describeRunFlags(parse({"--synthetic", "--steps", "1"}));
  EXPECT_EQ(disagreement({synthetic[0]}, fields(a.path())),
            "rank 1 of 2 differs from rank 0: input --synthetic (rank 0: " +
                fields(a.path())[0].shown + ")");
  std::string missing = disagreement(fields(a.path() + "/nowhere"),
                                     fields(a.path()));
  EXPECT_NE(missing.find("input --data " + a.path() +
                         "/nowhere (cannot open data directory"),
            std::string::npos)
      << missing;
}

TEST(AgreementTest, BackstopsOnlyWhenNothingNamedDiffers) {
  RankFields zero = {{"batch", "8", "", false},
                     {"compiled code", "1", "digest 1", true}};
  RankFields one = {{"batch", "4", "", false},
                    {"compiled code", "2", "digest 2", true}};
  EXPECT_EQ(disagreement(one, zero),
            "rank 1 of 2 differs from rank 0: batch 4 (rank 0: 8)");
  one[0].value = "8";
  EXPECT_EQ(disagreement(one, zero),
            "rank 1 of 2 differs from rank 0: compiled code digest 2 (rank "
            "0: digest 1)");
}

TEST(AgreementTest, AtMostThreeFieldsInFull) {
  RankFields zero, one;
  for (const char *name : {"a", "b", "c", "d", "e"}) {
    zero.push_back({name, "0", "", false});
    one.push_back({name, "1", "", false});
  }
  EXPECT_EQ(disagreement(one, zero),
            "rank 1 of 2 differs from rank 0: a 1 (rank 0: 0); b 1 (rank 0: "
            "0); c 1 (rank 0: 0); and in d, e");
}

// The hand-written model of test_model.cpp: fp32 with SGD, its manifest
// records no optimizer (as one kilnc wrote before it did).
TEST(AgreementTest, ModelFields) {
  StatusOr<Manifest> manifest = parseManifest(testManifest());
  ASSERT_TRUE(manifest.isOk()) << manifest.status().toString();
  RankFields fields = describeModel(*manifest, testManifest());
  std::vector<std::string> names;
  for (const RankField &f : fields)
    names.push_back(f.name + (f.backstop ? " (backstop)" : ""));
  EXPECT_EQ(names, (std::vector<std::string>{
                       "model", "model ABI", "batch", "precision", "optimizer",
                       "schedule", "variables (backstop)",
                       "allreduce buckets (backstop)", "manifest (backstop)"}));
  EXPECT_EQ(fields[0].value, "exec_test_model");
  EXPECT_EQ(fields[2].value, "8");
  EXPECT_EQ(fields[3].value, "fp32");
  EXPECT_EQ(fields[4].value,
            "not recorded (kilnc wrote no \"optimizer\" in the manifest)");
  EXPECT_EQ(fields[5].value, "cosine_decay base_lr=0.1 warmup_init_lr=0 "
                             "warmup_steps=0 total_steps=1000 end_lr=0");
  EXPECT_EQ(fields[6].shown.substr(0, 30), "10 variables in 4096 bytes (di");
  EXPECT_EQ(fields[7].display(), "2 of 90, 396 elements");

  // Another batch in an otherwise identical manifest.
  Manifest other = *manifest;
  other.batch = 4;
  EXPECT_EQ(disagreement(describeModel(other, testManifest()), fields),
            "rank 1 of 2 differs from rank 0: batch 4 (rank 0: 8)");
}

TEST(AgreementTest, OptimizerAsKilncRecordsIt) {
  // As kilnc records it: attributes in name order, printed as JSON numbers.
  fb::ManifestT m = unpackTestManifest();
  auto entry = [&](int64_t parameters,
                   std::vector<std::array<const char *, 2>> attributes) {
    auto e = std::make_unique<fb::OptimizerEntryT>();
    e->update = "lars_update";
    e->parameters = parameters;
    for (const auto &[name, value] : attributes) {
      auto a = std::make_unique<fb::OptimizerAttributeT>();
      a->name = name;
      a->value = value;
      a->kind = std::string(value) == "true" ? fb::AttributeKind::boolean
                                             : fb::AttributeKind::number;
      e->attributes.push_back(std::move(a));
    }
    m.optimizer.push_back(std::move(e));
  };
  entry(4, {{"epsilon", "0"},
            {"eta", "0.0010000000474974513"},
            {"momentum", "0.89999997615814209"},
            {"weight_decay", "9.9999997473787516e-05"}});
  entry(2, {{"eta", "0.0010000000474974513"}, {"skip_adaptation", "true"}});
  EXPECT_EQ(manifestOptimizer(pack(m)),
            "lars_update(epsilon=0 eta=0.001 momentum=0.9 weight_decay=0.0001) "
            "x4 + lars_update(eta=0.001 skip_adaptation) x2");
}

TEST(AgreementTest, CodeDigestIsStable) {
  EXPECT_EQ(executableCodeDigest(), executableCodeDigest());
  EXPECT_NE(executableCodeDigest(), fnv1a(""));
}

TEST(AgreementTest, OneRankAgreesWithItself) {
  std::unique_ptr<Comm> comm = createLocalComm();
  StatusOr<Agreement> agreement =
      checkRanksAgree(*comm, describeRunFlags(parse({"--synthetic", "--steps",
                                                     "1"})));
  ASSERT_TRUE(agreement.isOk()) << agreement.status().toString();
  EXPECT_TRUE(agreement->agreed);
  EXPECT_TRUE(agreement->messages.empty());
}

TEST(CommunicationTest, HiddenShareOverRanks) {
  // Rank 0 spent 1 ms of 4 alone, rank 1 3 of 4, rank 2 longer than the
  // communication takes alone (waiting for a slower rank hides nothing).
  EXPECT_EQ(describeCommunication({0.001, 0.003, 0.005}, {0.004, 0.004, 0.004},
                                  2, 3 << 20),
            "kiln: gradient allreduce: 2 buckets of 3.0 MiB per step take "
            "4.000 ms alone; the steps spent 1.000 / 3.000 / 5.000 ms per "
            "step on communication (MPI calls and bucket waits, the per-step "
            "reduction): 0 / 25 / 75% hidden (min / median / max over 3 "
            "ranks)\n");
  // Free communication: nothing alone, nothing waited.
  EXPECT_EQ(describeCommunication({0, 0}, {0, 0}, 1, 512),
            "kiln: gradient allreduce: 1 bucket of 0.5 KiB per step take "
            "0.000 ms alone; the steps spent 0.000 / 0.000 / 0.000 ms per "
            "step on communication (MPI calls and bucket waits, the per-step "
            "reduction): 0 / 0 / 0% hidden (min / median / max over 2 "
            "ranks)\n");
}

} // namespace
} // namespace kiln::rt::exec
