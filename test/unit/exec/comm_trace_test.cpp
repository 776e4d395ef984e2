//===- comm_trace_test.cpp - --comm-trace: recorded, read back, refused ---===//

#include "exec_test_util.h"

#include "kiln/rt/exec/comm_trace.h"

#include <fstream>

namespace kiln::rt::exec::test {
namespace {

TEST(CommTraceTest, RecordsEachStepsCallsAndReadsThemBack) {
  TempDir dir;
  std::unique_ptr<Comm> local = createLocalComm();
  auto traced = createTracingComm(local, dir.path() + "/trace-{rank}.jsonl");
  ASSERT_TRUE(traced.isOk()) << traced.status().toString();
  EXPECT_EQ(local, nullptr) << "the communicator moves in on success";
  Comm &comm = **traced;
  ArenaLayout l;
  Bucket a{0, {l.place({16})}}, b{1, {l.place({5}, DType::F64)}};
  std::vector<uint8_t> arena(size_t(l.bytes()));
  ASSERT_TRUE(comm.setBuckets({a, b}, arena.data()).isOk());
  double sums[3] = {1, 2, 3};
  // Calls outside a step are not recorded.
  ASSERT_TRUE(comm.allreduceSum(sums, 3).isOk());
  for (int64_t step = 7; step < 9; ++step) {
    comm.traceStepBegin(step);
    comm.progress();
    comm.allreduceStart(1);
    comm.allreduceStart(0);
    comm.allreduceWait(0);
    comm.allreduceWait(1);
    ASSERT_TRUE(comm.allreduceSum(sums, 3).isOk());
    ASSERT_TRUE(comm.traceStepEnd().isOk());
  }
  comm.finalize();

  auto read = readCommTrace(dir.path() + "/trace-0.jsonl");
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  EXPECT_EQ(read->ranks, 1);
  EXPECT_EQ(read->backend, "local");
  ASSERT_EQ(read->buckets.size(), 2u);
  EXPECT_EQ(read->buckets[0].count, 16);
  EXPECT_EQ(read->buckets[1].type, DType::F64);
  ASSERT_EQ(read->steps.size(), 2u);
  EXPECT_EQ(read->steps[0].step, 7);
  std::string kinds;
  for (const TraceEvent &e : read->steps[1].events)
    kinds += e.kind + std::to_string(e.argument) + " ";
  EXPECT_EQ(kinds, "p-1 s1 s0 w0 w1 r3 ");
  const TraceStep &s = read->steps[1];
  EXPECT_NEAR(s.computeSeconds() + s.callSeconds(), s.seconds, 1e-6);
}

// Several ranks without {rank} in the name: comm_mpi_test.cpp, under mpirun.
TEST(CommTraceTest, AFileThatCannotBeOpenedKeepsTheCommunicator) {
  std::unique_ptr<Comm> local = createLocalComm();
  auto traced = createTracingComm(local, "/nonexistent-dir/trace.jsonl");
  ASSERT_FALSE(traced.isOk());
  EXPECT_NE(traced.status().message().find(
                "--comm-trace: opening /nonexistent-dir/trace.jsonl"),
            std::string::npos)
      << traced.status().message();
  EXPECT_NE(local, nullptr) << "kept on failure, to end the job through it";
}

TEST(CommTraceTest, BadLinesNameFileAndLine) {
  TempDir dir;
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"", "empty; not a communication trace"},
      {"{\"x\":1}\n", ":1: not a communication trace"},
      {"{\"kiln_comm_trace\":1,\"rank\":2,\"ranks\":2,\"backend\":\"mpi\","
       "\"buckets\":[]}\n",
       ":1: the header needs rank < ranks"},
      {"{\"kiln_comm_trace\":1,\"rank\":0,\"ranks\":1,\"backend\":\"mpi\","
       "\"buckets\":[[4,\"bf16\"]]}\n",
       ":1: bucket 0 must be [count, \"f32\" or \"f64\"]"},
      {"{\"kiln_comm_trace\":1,\"rank\":0,\"ranks\":1,\"backend\":\"mpi\","
       "\"buckets\":[[4,\"f32\"]]}\n{\"step\":0,\"seconds\":1,\"tail\":0,"
       "\"events\":[[\"x\",0,0,0]]}\n",
       ":2: event 0 must be [kind (swprmgtbc)"},
      {"{\"kiln_comm_trace\":1,\"rank\":0,\"ranks\":1,\"backend\":\"mpi\","
       "\"buckets\":[[4,\"f32\"]]}\n{\"step\":0,\"seconds\":1,\"tail\":0,"
       "\"events\":[[\"w\",0,0,1]]}\n",
       ":2: event 0 names bucket 1, but the trace has 1 buckets"},
      {"{\"kiln_comm_trace\":1,\"rank\":0,\"ranks\":1,\"backend\":\"mpi\","
       "\"buckets\":[]}\n{\"step\":0}\n",
       ":2: a step needs step, seconds, tail and events"},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    std::string path = dir.path() + "/bad" + std::to_string(i) + ".jsonl";
    std::ofstream(path) << cases[i].text;
    auto read = readCommTrace(path);
    ASSERT_FALSE(read.isOk()) << cases[i].text;
    EXPECT_NE(read.status().message().find(path), std::string::npos);
    EXPECT_NE(read.status().message().find(cases[i].message),
              std::string::npos)
        << read.status().message();
  }
}

} // namespace
} // namespace kiln::rt::exec::test
