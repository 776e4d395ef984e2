//===- comm.h - Collectives between data-parallel ranks ---------*- C++ -*-===//
//
// The `comm` interface of the design (DESIGN.md §3): a single-process backend
// that is always built, and an Open MPI backend. The training loop uses the
// small blocking collectives (broadcast of the variables at start, sums of
// per-step scalars, minima); the generated code reaches the gradient buckets
// through kiln_rt_allreduce_start/wait.
//
// Buckets. A bucket's tensors are averaged in place. If they are one
// contiguous run of the arena with one element type (f32 or f64), the
// allreduce works on the arena itself; otherwise (gaps, bf16, mixed types)
// they are packed into a staging buffer of the bucket (bf16 widened to f32,
// so sums do not round at every hop), reduced there and unpacked. Averaging
// is sum / world size, done by each rank after the reduction, so every rank
// computes bit-identical results.
//
// Failures. An MPI error, or a wait that exceeds the timeout (a peer died or
// hangs), prints "rank R: ..." and aborts the whole job (MPI_Abort), since a
// collective cannot be finished by some ranks alone. mpirun itself ends the
// job when a rank dies by a signal and names that rank.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_COMM_H
#define KILN_RT_EXEC_COMM_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/manifest.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::rt::exec {

/// How a bucket's tensors are moved: in place, or through a staging buffer.
struct BucketPlan {
  /// In place: the arena range [offset, offset + count * element size).
  bool contiguous = false;
  /// Staging and in-place element type: F32 or F64.
  DType reduceType = DType::F32;
  int64_t offset = 0;
  int64_t count = 0; ///< elements reduced
  std::vector<TensorRef> tensors;
};

/// Plans every bucket of the manifest (pure; tested without MPI).
std::vector<BucketPlan> planBuckets(const std::vector<Bucket> &buckets);
/// Copies a staged bucket's tensors into `staging` (reduce type).
void packBucket(const BucketPlan &plan, const uint8_t *arena, void *staging);
/// Divides by `worldSize` and writes back: into the arena range itself
/// (contiguous) or from `staging` into the tensors.
void finishBucket(const BucketPlan &plan, uint8_t *arena, void *staging,
                  int worldSize);

/// What the gradient reductions cost the steps on this rank.
struct BucketWaits {
  int64_t reductions = 0; ///< bucket reductions waited for
  /// The time the steps were blocked in bucket waits until the reduction
  /// was done: the communication the backward pass did not hide. (Open MPI
  /// has no progress thread, so what a wait does is often the reduction's
  /// own work.)
  double blockedSeconds = 0;
  /// The time the step's thread spent in MPI calls that start reductions
  /// and let them progress between kernels: communication work that, with
  /// no progress thread, also takes the compute's place.
  double callSeconds = 0;
};

class Comm {
public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "local" or "mpi".
  virtual const char *backend() const = 0;

  /// Binds the manifest's buckets to the arena; allocates staging buffers.
  virtual Status setBuckets(const std::vector<Bucket> &buckets,
                            uint8_t *arena) = 0;
  /// kiln_rt_allreduce_start / _wait. Errors abort the job (see above).
  virtual void allreduceStart(int32_t bucket) = 0;
  virtual void allreduceWait(int32_t bucket) = 0;
  /// Lets outstanding non-blocking reductions advance. Open MPI has no
  /// progress thread; the runtime calls this between library kernels so
  /// that communication overlaps the backward pass.
  virtual void progress() {}
  /// True while a started bucket's reduction has not been seen to finish
  /// (by progress() or a wait): progress() has work to do.
  virtual bool reductionsInFlight() const { return false; }
  /// Totals over all bucket reductions so far.
  virtual BucketWaits bucketWaits() const { return {}; }
  /// Bytes one step's bucket reductions move (as reduced: f32 or f64).
  virtual int64_t bucketBytes() const { return 0; }
  /// The seconds one pass over every bucket takes when nothing else runs:
  /// after a barrier, each bucket reduced and waited for in turn (on a
  /// scratch buffer: the arena is left alone), the median of `repeats`
  /// passes. Collective. What the steps' blocked time is measured against.
  virtual StatusOr<double> timeBucketsAlone(int repeats) {
    (void)repeats;
    return 0.0;
  }

  /// Copies `bytes` at `data` from `root` to every rank.
  virtual Status broadcast(void *data, size_t bytes, int root) = 0;
  /// Element-wise sums / minima over the ranks, in place.
  virtual Status allreduceSum(double *values, int count) = 0;
  virtual Status allreduceMin(int64_t *values, int count) = 0;
  /// Every rank's `value`, in rank order.
  virtual StatusOr<std::vector<uint64_t>> allgather(uint64_t value) = 0;
  /// Every rank's `text`, in rank order; the texts may differ in length
  /// (their lengths travel first).
  virtual StatusOr<std::vector<std::string>>
  allgatherText(const std::string &text) = 0;
  /// Returns once every rank has called it.
  virtual Status barrier() = 0;

  /// The training loop marks each step's iteration (input, step function,
  /// per-step reductions) for --comm-trace (comm_trace.h); other backends
  /// ignore the marks.
  virtual void traceStepBegin(int64_t step) { (void)step; }
  virtual Status traceStepEnd() { return Status::ok(); }

  /// Ends the whole job with `code` (all ranks).
  [[noreturn]] virtual void abort(int code) = 0;
  /// Orderly shutdown (MPI_Finalize); called once at the end.
  virtual void finalize() {}
};

/// One rank: collectives are identities.
std::unique_ptr<Comm> createLocalComm();

/// How the MPI backend reduces a gradient bucket.
enum class AllreduceAlgorithm {
  /// MPI_Iallreduce: the MPI library's own algorithm.
  Library,
  /// Kiln's ring (reduce-scatter, then allgather) of MPI_Isend/MPI_Irecv,
  /// advanced at each progress() and wait: one algorithm whose messages
  /// are the same under Open MPI and under SimGrid's SMPI (whose own
  /// MPI_Iallreduce is another algorithm; docs/scaling.md).
  Ring,
  /// The ranks as a grid (MpiOptions::torusDims, the first dimension
  /// fastest): a ring reduce-scatter along each dimension in turn on the
  /// part the previous one left, then allgathers in reverse order, with
  /// half of each bucket going each way round every ring. On a torus every
  /// ring is between neighbours and both directions of each link carry
  /// data; it needs 2 * sum(d - 1) rounds instead of the ring's 2 (N - 1).
  Torus,
};

struct MpiOptions {
  /// Seconds a bucket wait may take before the job is aborted.
  double timeoutSeconds = 300;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::Library;
  /// AllreduceAlgorithm::Torus: the grid's dimensions, whose product is the
  /// number of ranks.
  std::vector<int> torusDims;
};

/// Parses the grid of AllreduceAlgorithm::Torus, "2x16x16" (each at least
/// 1), for the flag `flag`.
Status parseTorusDims(const std::string &flag, const std::string &text,
                      std::vector<int> &dims);

/// Initializes MPI (once per process) and returns the MPI backend.
StatusOr<std::unique_ptr<Comm>> createMpiComm(const MpiOptions &options);

/// True if this process was started by mpirun (Open MPI's or PMIx's
/// environment variables are set); always in the runtime built for SMPI,
/// which only smpirun runs.
bool launchedByMpirun();

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_COMM_H
