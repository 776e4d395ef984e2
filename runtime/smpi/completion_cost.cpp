//===- completion_cost.cpp - What a completed message costs SMPI 3.32 -----===//
//
// kiln-smpi-completion: every rank exchanges fixed-size messages round a
// ring for --phases x --rounds rounds, and rank 0 prints, per phase, the
// CPU time the whole simulation (every rank shares this process) took.
// How each round's requests are completed is the point:
//
//   test  MPI_Testall between slices of compute (smpi_execute), as a
//         training step's progress calls do;
//   wait  MPI_Waitall after the same compute;
//   kiln  Kiln's communicator (runtime/exec/comm_mpi.cpp): one ring
//         allreduce after another, progress() between the slices.
//
// Under SimGrid 3.32 a communication that MPI_Test finds complete stays in
// its rank's list of activities (only a wait takes one off), and every
// later completion walks that list: with `test` each phase costs more than
// the one before, with `wait` they stay level (docs/scaling.md). Run by
// runtime/smpi/test_completion.py.
//
//===----------------------------------------------------------------------===//

#include "kiln/base/flags.h"
#include "kiln/rt/exec/comm.h"

#include <fmt/format.h>
#include <mpi.h>
#include <smpi/smpi.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

using namespace kiln;
using namespace kiln::rt::exec;

namespace {

double cpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

struct Options {
  std::string mode;
  int64_t phases = 8;
  int64_t rounds = 200;
  /// Message size: above SMPI's detached-send threshold (64 KiB), so that
  /// both ends of a message are activities of their ranks.
  int64_t bytes = 128 << 10;
  /// Compute between two completion attempts.
  double slice = 1e-4;
};

Status parse(int argc, char **argv, Options &o) {
  flags::Parser parser;
  parser.add("--mode", flags::stringFlag(o.mode));
  parser.add("--phases", flags::intFlag(o.phases, 1, 1 << 20));
  parser.add("--rounds", flags::intFlag(o.rounds, 1, 1 << 20));
  parser.add("--bytes", flags::intFlag(o.bytes, 4, 1 << 30));
  parser.add("--slice",
             flags::valueFlag([&](const std::string &f, const std::string &v) {
               return flags::parseDouble(f, v, 1e-9, 1, o.slice);
             }));
  KILN_RETURN_IF_ERROR(parser.parse(argc, argv));
  if (o.mode != "test" && o.mode != "wait" && o.mode != "kiln")
    return flags::usageError("--mode must be test, wait or kiln, got '" +
                             o.mode + "'");
  return Status::ok();
}

/// One round of the ring with raw MPI, completed as `mode` says.
void mpiRound(const Options &o, int rank, int size, std::vector<char> &send,
              std::vector<char> &receive) {
  MPI_Request requests[2];
  MPI_Irecv(receive.data(), int(o.bytes), MPI_BYTE, (rank + size - 1) % size,
            0, MPI_COMM_WORLD, &requests[0]);
  MPI_Isend(send.data(), int(o.bytes), MPI_BYTE, (rank + 1) % size, 0,
            MPI_COMM_WORLD, &requests[1]);
  if (o.mode == "wait") {
    smpi_execute(o.slice);
    MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    return;
  }
  for (int done = 0; !done;) {
    smpi_execute(o.slice);
    MPI_Testall(2, requests, &done, MPI_STATUSES_IGNORE);
  }
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  Status parsed = parse(argc, argv, o);
  MpiOptions mpi;
  mpi.algorithm = AllreduceAlgorithm::Ring;
  StatusOr<std::unique_ptr<Comm>> created = createMpiComm(mpi);
  if (!created.isOk() || !parsed.isOk()) {
    std::fprintf(stderr, "kiln-smpi-completion: %s\n",
                 (created.isOk() ? parsed : created.status()).message().c_str());
    MPI_Finalize();
    return 2;
  }
  Comm &comm = **created;
  int rank = comm.rank(), size = comm.size();

  // Kiln's ring moves one chunk of a bucket per rank and round: a bucket
  // of `size` chunks of o.bytes makes 2 (size - 1) rounds of o.bytes.
  std::vector<uint8_t> arena;
  if (o.mode == "kiln") {
    TensorRef tensor;
    tensor.shape = {o.bytes / 4 * size};
    tensor.dtype = DType::F32;
    arena.assign(size_t(tensor.byteSize()), 0);
    Status set = comm.setBuckets({{0, {tensor}}}, arena.data());
    if (!set.isOk()) {
      std::fprintf(stderr, "kiln-smpi-completion: %s\n", set.message().c_str());
      comm.finalize();
      return 1;
    }
  }
  std::vector<char> send(size_t(o.bytes)), receive(size_t(o.bytes));
  std::vector<double> phases;
  MPI_Barrier(MPI_COMM_WORLD);
  for (int64_t p = 0; p < o.phases; ++p) {
    double begin = cpuSeconds();
    if (o.mode == "kiln") {
      int64_t reductions = std::max<int64_t>(1, o.rounds / (2 * (size - 1)));
      for (int64_t r = 0; r < reductions; ++r) {
        comm.allreduceStart(0);
        do {
          smpi_execute(o.slice);
          comm.progress();
        } while (comm.reductionsInFlight());
        comm.allreduceWait(0);
      }
    } else {
      for (int64_t r = 0; r < o.rounds; ++r)
        mpiRound(o, rank, size, send, receive);
    }
    // Every rank ends the phase together, so that rank 0's clock covers
    // the whole simulation's work for it.
    MPI_Barrier(MPI_COMM_WORLD);
    phases.push_back(cpuSeconds() - begin);
  }
  if (rank == 0) {
    std::string list;
    for (double s : phases)
      list += fmt::format("{}{:.4f}", list.empty() ? "" : ",", s);
    std::printf("{\"mode\":\"%s\",\"ranks\":%d,\"rounds\":%lld,"
                "\"phase_cpu_seconds\":[%s]}\n",
                o.mode.c_str(), size, static_cast<long long>(o.rounds),
                list.c_str());
    std::fflush(stdout);
  }
  comm.finalize();
  return 0;
}
