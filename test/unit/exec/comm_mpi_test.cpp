//===- comm_mpi_test.cpp - The MPI backend under mpirun -np 2 -------------===//
//
// Each rank fills the buckets with rank-dependent values; after start /
// progress / wait every rank must hold exactly the average, computed as MPI
// and the runtime do it (f32 or f64 sum, then / world size). Also the
// blocking collectives. Exits non-zero naming the first mismatch. With the
// argument "ring", the buckets go through Kiln's ring allreduce instead of
// MPI_Iallreduce (on 2 ranks a sum has one order, so the same values); with
// "torus", through the torus allreduce on a 2 x (N / 2) grid, whose sums
// are in another order (within f32 rounding of the average, and the same
// bits on every rank), after a grid of the wrong size has been refused.

#include "kiln/rt/exec/comm.h"
#include "kiln/rt/exec/comm_trace.h"
#include "kiln/rt/exec/variables.h"

#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

using namespace kiln::rt::exec;
using kiln::DType;

namespace {

int failures = 0;

void expect(bool ok, int rank, const std::string &what) {
  if (!ok) {
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
    ++failures;
  }
}

double value(int rank, int64_t i) { return 0.37 * double(i + 1) * (rank + 1) - 1.1; }

} // namespace

int main(int argc, char **argv) {
  MpiOptions options;
  std::string mode = argc > 1 ? argv[1] : "";
  bool ring = mode == "ring", torus = mode == "torus";
  if (ring)
    options.algorithm = AllreduceAlgorithm::Ring;
  if (torus) {
    options.algorithm = AllreduceAlgorithm::Torus;
    options.torusDims = {3, 5};
    auto refused = createMpiComm(options);
    if (refused.isOk() || refused.status().message().find(
                              "torus allreduce's grid 3x5 has 15 ranks") ==
                              std::string::npos) {
      std::fprintf(stderr, "FAILED: a 3x5 grid should be refused: %s\n",
                   refused.isOk() ? "accepted"
                                  : refused.status().toString().c_str());
      return 1;
    }
    int worldSize = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
    options.torusDims = {2, worldSize / 2};
  }
  auto created = createMpiComm(options);
  if (!created.isOk()) {
    std::fprintf(stderr, "%s\n", created.status().toString().c_str());
    return 1;
  }
  Comm &comm = **created;
  int rank = comm.rank(), size = comm.size();
  if (size < 2) {
    std::fprintf(stderr, "run me with mpirun -np 2 or more\n");
    return 1;
  }

  // Bucket 0: two adjacent f32 tensors (in place). Bucket 1: f32 with a gap
  // and bf16 (staged in f32). Bucket 2: f64 and f32 (staged in f64).
  int64_t next = 0;
  auto place = [&](std::vector<int64_t> shape, DType dtype, int64_t align) {
    TensorRef t;
    t.offset = next;
    t.shape = std::move(shape);
    t.dtype = dtype;
    next = (next + t.byteSize() + align - 1) / align * align;
    return t;
  };
  TensorRef a = place({16}, DType::F32, 64), b = place({1000}, DType::F32, 64);
  TensorRef c = place({3}, DType::F32, 64), h = place({33}, DType::BF16, 64);
  TensorRef d = place({5}, DType::F64, 64), e = place({7}, DType::F32, 64);
  std::vector<Bucket> buckets(3);
  buckets[0].tensors = {a, b};
  buckets[1].tensors = {c, h};
  buckets[2].tensors = {d, e};
  for (int i = 0; i < 3; ++i)
    buckets[size_t(i)].id = i;
  std::vector<uint8_t> arena(static_cast<size_t>(next));
  std::vector<TensorRef> all = {a, b, c, h, d, e};
  for (const TensorRef &t : all)
    for (int64_t i = 0; i < t.numElements(); ++i)
      storeElement(arena.data() + t.offset, t.dtype, i, value(rank, i));
  kiln::Status s = comm.setBuckets(buckets, arena.data());
  expect(s.isOk(), rank, s.toString());
  std::vector<BucketPlan> plans = planBuckets(buckets);
  expect(plans[0].contiguous && !plans[1].contiguous && !plans[2].contiguous,
         rank, "bucket plans");

  // Out of order, with progress calls between, as generated code does.
  comm.allreduceStart(1);
  comm.allreduceStart(0);
  comm.progress();
  comm.allreduceStart(2);
  comm.progress();
  comm.allreduceWait(0);
  comm.allreduceWait(2);
  comm.allreduceWait(1);

  for (const TensorRef &t : all) {
    DType reduce = t.offset >= d.offset ? DType::F64 : DType::F32;
    for (int64_t i = 0; i < t.numElements(); ++i) {
      // The inputs as stored, summed in the reduce type, divided.
      double sum = 0;
      float sumF = 0;
      for (int r = 0; r < size; ++r) {
        std::vector<uint8_t> one(8);
        storeElement(one.data(), t.dtype, 0, value(r, i));
        double stored = loadElement(one.data(), t.dtype, 0);
        sum += stored;
        sumF += float(stored);
      }
      std::vector<uint8_t> expected(8);
      storeElement(expected.data(), t.dtype, 0,
                   reduce == DType::F64 ? sum / size : double(sumF / float(size)));
      double want = loadElement(expected.data(), t.dtype, 0);
      double got = loadElement(arena.data() + t.offset, t.dtype, i);
      // Another order of the f32 sum: a few ulps of the average, which
      // can flip a bf16 rounding.
      double tolerance =
          torus ? (t.dtype == DType::BF16 ? 8e-3 : 1e-6) * std::fabs(want) : 0;
      if (std::fabs(got - want) > tolerance) {
        expect(false, rank,
               std::string(dtypeInfo(t.dtype).name) + " tensor at " +
                   std::to_string(t.offset) + " element " + std::to_string(i) +
                   ": " + std::to_string(got) + " != " + std::to_string(want));
        break;
      }
    }
  }

  // Every rank holds the same bits (FNV-1a over the arena).
  uint64_t hash = 1469598103934665603ull;
  for (uint8_t byte : arena)
    hash = (hash ^ byte) * 1099511628211ull;
  auto hashes = comm.allgather(hash);
  bool same = hashes.isOk();
  for (size_t r = 0; same && r < hashes->size(); ++r)
    same = (*hashes)[r] == hash;
  expect(same, rank, "replicas differ after the allreduce");

  auto alone = comm.timeBucketsAlone(3);
  expect(alone.isOk() && *alone > 0, rank, "timeBucketsAlone");

  double sums[2] = {double(rank), 1};
  expect(comm.allreduceSum(sums, 2).isOk() && sums[0] == size * (size - 1) / 2.0 &&
             sums[1] == size,
         rank, "allreduceSum");
  int64_t mins[1] = {10 + rank};
  expect(comm.allreduceMin(mins, 1).isOk() && mins[0] == 10, rank, "allreduceMin");
  auto gathered = comm.allgather(uint64_t(100 + rank));
  expect(gathered.isOk() && gathered->size() == size_t(size) &&
             (*gathered)[1] == 101,
         rank, "allgather");
  std::vector<uint8_t> blob(3 << 20, uint8_t(rank));
  expect(comm.broadcast(blob.data(), blob.size(), 0).isOk() && blob.front() == 0 &&
             blob.back() == 0,
         rank, "broadcast");

  // --comm-trace: one file name for several ranks is refused, and the
  // communicator stays with the caller.
  auto traced = createTracingComm(*created, "/tmp/kiln-comm-trace.jsonl");
  expect(!traced.isOk() &&
             traced.status().message().find("put {rank} in the name") !=
                 std::string::npos &&
             *created,
         rank, "--comm-trace without {rank}");

  comm.finalize();
  if (failures == 0 && rank == 0)
    std::printf("comm_mpi_test: all checks passed on %d ranks%s\n", size,
                ring ? " (ring)" : torus ? " (torus)" : "");
  return failures ? 1 : 0;
}
