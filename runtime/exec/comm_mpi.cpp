//===- comm_mpi.cpp - The Open MPI backend of the communicator ------------===//

#include "kiln/rt/exec/comm.h"

#include "kiln/base/flags.h"
#include "kiln/rt/exec/clock.h"

#include <fmt/format.h>
#include <mpi.h>
#ifdef KILN_SMPI
#include <smpi/smpi.h>
#endif

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>

namespace kiln::rt::exec {
namespace {

std::string mpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(length));
}

/// Returns an kInternal status naming the MPI call and its error text.
#define KILN_MPI_CHECK(call)                                                   \
  do {                                                                         \
    int kilnMpiRc_ = (call);                                                   \
    if (kilnMpiRc_ != MPI_SUCCESS)                                             \
      return ::kiln::makeStatus(                                               \
          ::kiln::StatusCode::kInternal, __FILE__, __LINE__,                   \
          std::string(#call) + " failed: " + mpiErrorText(kilnMpiRc_));        \
  } while (0)

/// Where a reduce-scatter round receives the chunk it then adds. In
/// kiln-comm-replay (KILN_SMPI_REPLAY), every rank and reduction receives
/// into one shared buffer, as the ranks' gradients are one
/// (SMPI_SHARED_MALLOC): the values do not change the time, 512 ranks'
/// copies of a quarter of each bucket (a torus's first dimension of 2)
/// would not fit in memory, and mapping a shared buffer per reduction costs
/// more than the reduction's events.
std::shared_ptr<uint8_t> newScratch(size_t bytes) {
#ifdef KILN_SMPI_REPLAY
  // The simulated ranks share this process's globals (privatization off).
  // Never freed: a reduction in flight may still use a smaller one, and
  // SMPI is gone before static destructors run.
  static uint8_t *shared = nullptr;
  static size_t capacity = 0;
  if (bytes > capacity) {
    shared = static_cast<uint8_t *>(SMPI_SHARED_MALLOC(bytes));
    capacity = bytes;
  }
  return std::shared_ptr<uint8_t>(shared, [](uint8_t *) {});
#else
  return std::shared_ptr<uint8_t>(new uint8_t[bytes],
                                  std::default_delete<uint8_t[]>());
#endif
}

/// One allreduce (sum) of `count` elements at `buffer`, in place, as
/// rings. The ring (AllreduceAlgorithm::Ring): the buffer is cut into one
/// chunk per rank; N - 1 rounds of reduce-scatter leave each rank with one
/// chunk summed over all ranks, and N - 1 rounds of allgather pass the sums
/// on. The torus (AllreduceAlgorithm::Torus) does the same along each
/// dimension of the rank grid in turn, each on the chunk the previous
/// dimension left this rank, then the allgathers in reverse order; each half
/// of the buffer goes round every ring in its own direction (a lane). Each
/// round sends one chunk to the next rank of the ring and receives one from
/// the previous; a lane's round starts only once its previous one has
/// completed (its received chunk is added in reduce-scatter), so with no
/// progress thread the rings move when advance() is called. Every rank
/// receives each chunk's final sum from the one rank that made it, so all
/// ranks hold bit-identical results.
class RingReduction {
public:
  /// Sets up a reduction; `tag` keeps concurrent reductions apart.
  void reset(void *data, int64_t elements, DType type, int tag) {
    buffer = static_cast<uint8_t *>(data);
    dtype = type;
    int count = torus ? 2 : 1;
    for (int l = 0; l < 2; ++l) {
      Lane &lane = lanes[l];
      lane = Lane();
      if (l >= count)
        continue;
      lane.begin = elements * l / count;
      lane.count = elements * (l + 1) / count - lane.begin;
      lane.reverse = l == 1;
      lane.tag = 2 * tag + l;
      lane.phases = phases(lane);
      int64_t largest = 0;
      for (const Phase &p : lane.phases)
        largest = std::max(largest, (p.count + p.ranks - 1) / p.ranks);
      if (largest > 0)
        lane.received =
            newScratch(static_cast<size_t>(largest) * dtypeInfo(dtype).bytes);
    }
  }
  /// `grid`: the ranks' grid for AllreduceAlgorithm::Torus (empty: one
  /// ring over all ranks).
  void setRanks(MPI_Comm communicator, int rank, int ranks,
                const std::vector<int> &grid = {}) {
    comm = communicator;
    me = rank;
    size = ranks;
    torus = !grid.empty();
    dims = torus ? grid : std::vector<int>{ranks};
  }

  /// Posts the first round (nothing to send on one rank).
  int start() {
    for (Lane &lane : lanes)
      if (!lane.phases.empty())
        if (int rc = post(lane); rc != MPI_SUCCESS)
          return rc;
    return MPI_SUCCESS;
  }

  /// How advance() learns that a round has arrived.
  enum class Completion {
    /// MPI_Testall on each lane's round.
    Test,
    /// Waits for every round, moving each lane on as soon as its round
    /// arrives (the lanes share no link, so neither waits for the other).
    Block,
    /// The caller has completed (and freed) the requests that arrived.
    Completed,
  };

  /// Completes as many rounds as have arrived; `done` once all have.
  int advance(bool &done, Completion how = Completion::Test) {
    bool block = how == Completion::Block;
    while (true) {
      done = true;
      for (Lane &lane : lanes) {
        bool laneDone = false;
        // Blocking, MPI_Waitany below notices what arrives: no MPI_Test
        // (each takes simulated time under SMPI).
        if (int rc = advance(lane, laneDone, how == Completion::Test);
            rc != MPI_SUCCESS)
          return rc;
        done = done && laneDone;
      }
      if (done || !block)
        return MPI_SUCCESS;
      MPI_Request pending[4] = {lanes[0].requests[0], lanes[0].requests[1],
                                lanes[1].requests[0], lanes[1].requests[1]};
      int index = 0;
      if (int rc = MPI_Waitany(4, pending, &index, MPI_STATUS_IGNORE);
          rc != MPI_SUCCESS)
        return rc;
      // MPI_Waitany freed the request it completed.
      for (int i = 0; i < 4; ++i)
        lanes[i / 2].requests[i % 2] = pending[i];
    }
  }

#ifdef KILN_SMPI
  /// Appends the requests of the rounds in flight, for a caller that
  /// completes them itself (Completion::Completed).
  void pending(std::vector<MPI_Request *> &requests) {
    for (Lane &lane : lanes)
      for (MPI_Request &request : lane.requests)
        if (request != MPI_REQUEST_NULL)
          requests.push_back(&request);
  }
#endif

private:
  /// One ring's reduce-scatter or allgather over [begin, begin + count).
  struct Phase {
    int next = 0, previous = 0;
    /// Ranks in the ring and this rank's place in it.
    int ranks = 1, position = 0;
    int64_t begin = 0, count = 0;
    bool scatter = true;
  };
  struct Lane {
    int64_t begin = 0, count = 0;
    bool reverse = false;
    int tag = 0;
    std::vector<Phase> phases;
    size_t phase = 0;
    int round = 0;
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    std::shared_ptr<uint8_t> received;
  };

  MPI_Comm comm = MPI_COMM_NULL;
  int me = 0, size = 1;
  std::vector<int> dims;
  bool torus = false;
  uint8_t *buffer = nullptr;
  DType dtype = DType::F32;
  Lane lanes[2];

  /// The reduce-scatters along each dimension (of more than one rank), each
  /// on the chunk the previous one left, then the allgathers in reverse.
  std::vector<Phase> phases(const Lane &lane) const {
    std::vector<Phase> scatters;
    int64_t begin = lane.begin, count = lane.count;
    int stride = 1;
    for (int d : dims) {
      int coordinate = (me / stride) % d;
      if (d > 1) {
        Phase p;
        p.ranks = d;
        int up = me + (((coordinate + 1) % d) - coordinate) * stride;
        int down = me + (((coordinate + d - 1) % d) - coordinate) * stride;
        p.next = lane.reverse ? down : up;
        p.previous = lane.reverse ? up : down;
        p.position = lane.reverse ? (d - coordinate) % d : coordinate;
        p.begin = begin;
        p.count = count;
        scatters.push_back(p);
        // Reduce-scatter leaves this rank chunk (position + 1) summed.
        int owned = (p.position + 1) % d;
        int64_t from = count * owned / d, to = count * (owned + 1) / d;
        begin += from;
        count = to - from;
      }
      stride *= d;
    }
    std::vector<Phase> all = scatters;
    for (auto it = scatters.rbegin(); it != scatters.rend(); ++it) {
      Phase gather = *it;
      gather.scatter = false;
      all.push_back(gather);
    }
    return all;
  }

  /// Moves `lane` on while its rounds have arrived: tested with
  /// MPI_Testall, or with `test` false, those MPI has already completed
  /// (and freed).
  int advance(Lane &lane, bool &done, bool test) {
    done = lane.phase == lane.phases.size();
    while (!done) {
      int complete = lane.requests[0] == MPI_REQUEST_NULL &&
                     lane.requests[1] == MPI_REQUEST_NULL;
      int rc = test ? MPI_Testall(2, lane.requests, &complete,
                                  MPI_STATUSES_IGNORE)
                    : MPI_SUCCESS;
      if (rc != MPI_SUCCESS || !complete)
        return rc;
      const Phase &p = lane.phases[lane.phase];
#ifndef KILN_SMPI_REPLAY
      // Replayed, the sums are not made (nor finishBucket's division):
      // they take no simulated time, the ranks' buffers are one shared
      // arena whose values mean nothing, and at 512 ranks the additions
      // over every rank's gradients would cost this machine more than the
      // simulation itself. The executable built for SMPI makes them (and
      // SMPI times them as the rank's compute).
      if (p.scatter)
        accumulate(lane, p, chunkOf(p, p.position - lane.round - 1));
#endif
      if (++lane.round == p.ranks - 1) {
        lane.round = 0;
        if (++lane.phase == lane.phases.size()) {
          done = true;
          return MPI_SUCCESS;
        }
      }
      if ((rc = post(lane)) != MPI_SUCCESS)
        return rc;
    }
    return MPI_SUCCESS;
  }

  static int chunkOf(const Phase &p, int index) {
    return ((index % p.ranks) + p.ranks) % p.ranks;
  }
  static int64_t chunkBegin(const Phase &p, int chunk) {
    return p.begin + p.count * chunk / p.ranks;
  }
  static int chunkCount(const Phase &p, int chunk) {
    return static_cast<int>(chunkBegin(p, chunk + 1) - chunkBegin(p, chunk));
  }
  uint8_t *chunkData(const Phase &p, int chunk) const {
    return buffer + chunkBegin(p, chunk) * dtypeInfo(dtype).bytes;
  }

  /// Round r < n - 1 of a reduce-scatter sends chunk (position - r) and
  /// receives (position - r - 1) for summing; round j of an allgather sends
  /// the summed chunk (position + 1 - j) and receives (position - j) in
  /// place.
  int post(Lane &lane) {
    const Phase &p = lane.phases[lane.phase];
    int j = lane.round;
    int sendChunk = chunkOf(p, p.scatter ? p.position - j : p.position + 1 - j);
    int recvChunk = chunkOf(p, p.position - j - 1 + (p.scatter ? 0 : 1));
    MPI_Datatype type = dtype == DType::F64 ? MPI_DOUBLE : MPI_FLOAT;
    int rc = MPI_Irecv(p.scatter ? lane.received.get()
                                 : chunkData(p, recvChunk),
                       chunkCount(p, recvChunk), type, p.previous, lane.tag,
                       comm, &lane.requests[0]);
    if (rc != MPI_SUCCESS)
      return rc;
    return MPI_Isend(chunkData(p, sendChunk), chunkCount(p, sendChunk), type,
                     p.next, lane.tag, comm, &lane.requests[1]);
  }

  void accumulate(const Lane &lane, const Phase &p, int chunk) {
    int n = chunkCount(p, chunk);
    if (dtype == DType::F64) {
      auto *dst = reinterpret_cast<double *>(chunkData(p, chunk));
      const auto *src = reinterpret_cast<const double *>(lane.received.get());
      for (int i = 0; i < n; ++i)
        dst[i] += src[i];
    } else {
      auto *dst = reinterpret_cast<float *>(chunkData(p, chunk));
      const auto *src = reinterpret_cast<const float *>(lane.received.get());
      for (int i = 0; i < n; ++i)
        dst[i] += src[i];
    }
  }
};

class MpiComm final : public Comm {
public:
  MpiComm(MPI_Comm comm, int rank, int size, const MpiOptions &options)
      : comm(comm), rank_(rank), size_(size), options(options) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char *backend() const override { return "mpi"; }

  Status setBuckets(const std::vector<Bucket> &buckets,
                    uint8_t *arenaBase) override {
    arena = arenaBase;
    plans = planBuckets(buckets);
    staging.resize(plans.size());
    requests.assign(plans.size(), MPI_REQUEST_NULL);
    rings.assign(plans.size(), RingReduction());
    for (RingReduction &ring : rings)
      ring.setRanks(comm, rank_, size_, torusDims());
    state.assign(plans.size(), State::Idle);
    startedAt.resize(plans.size());
    bytesPerStep = 0;
    for (size_t i = 0; i < plans.size(); ++i) {
      bytesPerStep += plans[i].count * int64_t(dtypeInfo(plans[i].reduceType).bytes);
      if (plans[i].count > std::numeric_limits<int>::max())
        return KILN_STATUS(kUnimplemented,
                           fmt::format("bucket {} has {} elements; MPI counts "
                                       "stop at 2^31 - 1 (use smaller buckets)",
                                       i, plans[i].count));
      if (!plans[i].contiguous)
        staging[i].resize(static_cast<size_t>(plans[i].count) *
                          dtypeInfo(plans[i].reduceType).bytes);
    }
    return Status::ok();
  }

  void allreduceStart(int32_t bucket) override {
    BucketPlan &plan = planOf(bucket, "start");
    auto b = static_cast<size_t>(bucket);
    if (state[b] != State::Idle)
      fatal(fmt::format("allreduce of bucket {} started twice without a wait",
                        bucket),
            __FILE__, __LINE__);
    void *buffer = arena + plan.offset;
    if (!plan.contiguous) {
      packBucket(plan, arena, staging[b].data());
      buffer = staging[b].data();
    }
    // Open MPI may do part of the reduction inside the call.
    auto callBegin = RunClock::now();
    int rc = startReduction(b, buffer, plan);
    if (rc != MPI_SUCCESS)
      fatal(fmt::format("{} of bucket {} failed: {}", reductionName(), bucket,
                        mpiErrorText(rc)),
            __FILE__, __LINE__);
    startedAt[b] = RunClock::now();
    waits.callSeconds +=
        std::chrono::duration<double>(startedAt[b] - callBegin).count();
    state[b] = State::Running;
    ++running;
  }

  void allreduceWait(int32_t bucket) override {
    BucketPlan &plan = planOf(bucket, "wait");
    auto b = static_cast<size_t>(bucket);
    if (state[b] == State::Idle)
      fatal(fmt::format("wait for bucket {}, which was not started", bucket),
            __FILE__, __LINE__);
    // The step needs the result now: from here until the reduction is done
    // it is blocked on communication (0 if a progress() call already saw
    // the request finish).
    auto waitBegin = RunClock::now();
    // MPI_Wait could block forever if a peer hangs (or dies in a way mpirun
    // does not notice); polling with a deadline turns that into an error.
    auto deadline = startedAt[b] +
                    std::chrono::duration_cast<RunClock::duration>(
                        std::chrono::duration<double>(options.timeoutSeconds));
#ifdef KILN_SMPI
    // Simulated (SMPI): polling would cost one simulation event per
    // MPI_Test, thousands per wait at 512 ranks; blocking completes at the
    // same simulated time, and SimGrid reports a deadlock itself.
    if (state[b] == State::Running &&
        usesRings()) {
      bool done = false;
      int rc = rings[b].advance(done, RingReduction::Completion::Block);
      if (rc != MPI_SUCCESS)
        fatal(fmt::format("the reduction of bucket {} failed: {}", bucket,
                          mpiErrorText(rc)),
              __FILE__, __LINE__);
    }
#endif
    for (unsigned spins = 0; state[b] == State::Running; ++spins) {
      bool done = false;
      int rc = testReduction(b, done);
      if (rc != MPI_SUCCESS)
        fatal(fmt::format("testing the reduction of bucket {} failed: {}",
                          bucket, mpiErrorText(rc)),
              __FILE__, __LINE__);
      if (done)
        break;
      if (RunClock::now() > deadline)
        fatal(fmt::format("allreduce of bucket {} did not finish within {} s "
                          "(--comm-timeout); another rank has died or hangs",
                          bucket, options.timeoutSeconds),
              __FILE__, __LINE__);
      // Give the core back now and then: ranks may outnumber cores.
      if (spins % 64 == 63)
        sched_yield();
    }
    if (state[b] == State::Running)
      --running;
    state[b] = State::Idle;
    waits.reductions += 1;
    waits.blockedSeconds +=
        std::chrono::duration<double>(RunClock::now() - waitBegin).count();
#ifndef KILN_SMPI_REPLAY
    finishBucket(plan, arena, staging[b].data(), size_);
#else
    (void)plan;
#endif
  }

  BucketWaits bucketWaits() const override { return waits; }
  int64_t bucketBytes() const override { return bytesPerStep; }

  StatusOr<double> timeBucketsAlone(int repeats) override {
    size_t largest = 0;
    for (const BucketPlan &plan : plans)
      largest = std::max(largest, size_t(plan.count) *
                                      dtypeInfo(plan.reduceType).bytes);
    if (largest == 0)
      return 0.0;
    // Zeros: the values do not change the time, and sums of zeros stay
    // finite.
    std::vector<uint8_t> scratch(largest, 0);
    std::vector<double> passes;
    for (int r = 0; r < repeats; ++r) {
      // Every rank starts the pass together: skew between the ranks
      // arriving is not communication.
      KILN_RETURN_IF_ERROR(barrier());
      auto start = RunClock::now();
      for (size_t b = 0; b < plans.size(); ++b) {
        if (usesRings()) {
          RingReduction ring;
          ring.setRanks(comm, rank_, size_, torusDims());
          ring.reset(scratch.data(), plans[b].count, plans[b].reduceType,
                     static_cast<int>(plans.size() + b));
          KILN_MPI_CHECK(ring.start());
          KILN_RETURN_IF_ERROR(waitWithDeadline(
              [&](bool &done) { return ring.advance(done); },
              "timed allreduce"));
          continue;
        }
        MPI_Request request;
        KILN_MPI_CHECK(MPI_Iallreduce(
            MPI_IN_PLACE, scratch.data(), static_cast<int>(plans[b].count),
            plans[b].reduceType == DType::F64 ? MPI_DOUBLE : MPI_FLOAT,
            MPI_SUM, comm, &request));
        KILN_RETURN_IF_ERROR(waitWithDeadline(request, "timed allreduce"));
      }
      passes.push_back(
          std::chrono::duration<double>(RunClock::now() - start).count());
    }
    std::sort(passes.begin(), passes.end());
    return passes[passes.size() / 2];
  }

  bool reductionsInFlight() const override { return running > 0; }

  void progress() override {
    // MPI_Test drives Open MPI's progress engine; a request it completes is
    // freed and remembered as finished for the wait.
    if (running == 0)
      return;
    auto callBegin = RunClock::now();
#ifdef KILN_SMPI
    if (usesRings()) {
      completeArrived();
      return;
    }
#endif
    for (size_t b = 0; b < requests.size(); ++b) {
      if (state[b] != State::Running)
        continue;
      bool done = false;
      int rc = testReduction(b, done);
      if (rc != MPI_SUCCESS)
        fatal(fmt::format("testing the reduction of bucket {} failed: {}", b,
                          mpiErrorText(rc)),
              __FILE__, __LINE__);
      if (done) {
        state[b] = State::Finished;
        --running;
      }
    }
    waits.callSeconds +=
        std::chrono::duration<double>(RunClock::now() - callBegin).count();
  }

  Status broadcast(void *data, size_t bytes, int root) override {
    // MPI counts are int: send in 1 GiB pieces.
    constexpr size_t kChunk = size_t(1) << 30;
    for (size_t at = 0; at < bytes; at += kChunk) {
      size_t n = std::min(kChunk, bytes - at);
      uint8_t *piece = static_cast<uint8_t *>(data) + at;
      KILN_RETURN_IF_ERROR(collective(
          "broadcast",
          [&](MPI_Request *r) {
            return MPI_Ibcast(piece, static_cast<int>(n), MPI_BYTE, root, comm,
                              r);
          },
          [&] {
            return MPI_Bcast(piece, static_cast<int>(n), MPI_BYTE, root, comm);
          }));
    }
    return Status::ok();
  }

  Status allreduceSum(double *values, int count) override {
    return collective(
        "allreduce of step values",
        [&](MPI_Request *r) {
          return MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE,
                                MPI_SUM, comm, r);
        },
        [&] {
          return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE,
                               MPI_SUM, comm);
        });
  }

  Status allreduceMin(int64_t *values, int count) override {
    return collective(
        "allreduce (minimum)",
        [&](MPI_Request *r) {
          return MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_INT64_T,
                                MPI_MIN, comm, r);
        },
        [&] {
          return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_INT64_T,
                               MPI_MIN, comm);
        });
  }

  StatusOr<std::vector<uint64_t>> allgather(uint64_t value) override {
    std::vector<uint64_t> all(static_cast<size_t>(size_));
    KILN_RETURN_IF_ERROR(collective(
        "allgather",
        [&](MPI_Request *r) {
          return MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1,
                                MPI_UINT64_T, comm, r);
        },
        [&] {
          return MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1,
                               MPI_UINT64_T, comm);
        }));
    return all;
  }

  StatusOr<std::vector<std::string>>
  allgatherText(const std::string &text) override {
    // Lengths first (a fixed-size exchange), so that every rank receives
    // each text into a buffer of exactly its size.
    KILN_ASSIGN_OR_RETURN(std::vector<uint64_t> lengths,
                          allgather(uint64_t(text.size())));
    std::vector<int> counts, displacements;
    uint64_t total = 0;
    for (uint64_t n : lengths) {
      displacements.push_back(static_cast<int>(total));
      counts.push_back(static_cast<int>(n));
      total += n;
      if (total > uint64_t(std::numeric_limits<int>::max()))
        return KILN_STATUS(kInvalidArgument,
                           fmt::format("allgather of {} bytes of text: MPI "
                                       "counts stop at 2^31 - 1",
                                       total));
    }
    std::string all(total, '\0');
    KILN_RETURN_IF_ERROR(collective(
        "allgather of text",
        [&](MPI_Request *r) {
          return MPI_Iallgatherv(text.data(), static_cast<int>(text.size()),
                                 MPI_CHAR, all.data(), counts.data(),
                                 displacements.data(), MPI_CHAR, comm, r);
        },
        [&] {
          return MPI_Allgatherv(text.data(), static_cast<int>(text.size()),
                                MPI_CHAR, all.data(), counts.data(),
                                displacements.data(), MPI_CHAR, comm);
        }));
    std::vector<std::string> texts;
    for (size_t r = 0; r < lengths.size(); ++r)
      texts.push_back(all.substr(size_t(displacements[r]), lengths[r]));
    return texts;
  }

  Status barrier() override {
    return collective(
        "barrier", [&](MPI_Request *r) { return MPI_Ibarrier(comm, r); },
        [&] { return MPI_Barrier(comm); });
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
#ifdef KILN_SMPI
    // SMPI's MPI_Abort ends the simulation with exit status 0; the ranks
    // are this one process, and the job's status must say it failed.
    std::_Exit(code);
#else
    MPI_Abort(MPI_COMM_WORLD, code);
    std::exit(code); // MPI_Abort does not return; keep [[noreturn]] honest.
#endif
  }

  void finalize() override {
#ifdef KILN_SMPI
    MPI_Wait(&marker[0], MPI_STATUS_IGNORE);
    MPI_Wait(&marker[1], MPI_STATUS_IGNORE);
#endif
    MPI_Comm_free(&comm);
    MPI_Finalize();
  }

private:
  MPI_Comm comm;
  int rank_, size_;
  MpiOptions options;
  uint8_t *arena = nullptr;
  std::vector<BucketPlan> plans;
  std::vector<std::vector<uint8_t>> staging;
  std::vector<MPI_Request> requests;
  /// AllreduceAlgorithm::Ring and Torus: each bucket's reduction.
  std::vector<RingReduction> rings;
  enum class State { Idle, Running, Finished };
  std::vector<State> state;
  std::vector<RunClock::time_point> startedAt;
  BucketWaits waits;
  int64_t bytesPerStep = 0;
  /// Requests in State::Running: progress() returns at once without any.
  int running = 0;
#ifdef KILN_SMPI
  /// The receive and the send of a message to this rank itself
  /// (completeArrived()).
  MPI_Request marker[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  char markerBytes[2] = {0, 0};

  /// Simulated, progress() completes what has arrived without MPI_Test:
  /// SimGrid 3.32 keeps each communication that a test finds complete in
  /// its rank's list of activities for the rest of the run (only a wait
  /// takes it off), and walks that whole list at every later completion,
  /// so each message would cost more than the one before
  /// (docs/scaling.md). Instead, MPI_Waitany over the rounds in flight and
  /// a marker: a message to this rank itself, sent at the previous
  /// progress call, which has arrived once its loopback trip's simulated
  /// time has passed. Waitany takes the rounds that have arrived first (in
  /// order), the marker once none is left.
  void completeArrived() {
    if (marker[0] == MPI_REQUEST_NULL)
      sendMarker();
    std::vector<MPI_Request *> slots;
    std::vector<size_t> owners;
    std::vector<MPI_Request> pending;
    while (true) {
      slots.clear();
      owners.clear();
      for (size_t b = 0; b < rings.size(); ++b)
        if (state[b] == State::Running) {
          rings[b].pending(slots);
          owners.resize(slots.size(), b);
        }
      pending.clear();
      for (MPI_Request *slot : slots)
        pending.push_back(*slot);
      pending.push_back(marker[0]);
      int index = MPI_UNDEFINED;
      int rc = MPI_Waitany(static_cast<int>(pending.size()), pending.data(),
                           &index, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS || index < 0 ||
          static_cast<size_t>(index) > slots.size())
        fatal(fmt::format("completing the reductions' rounds failed: {}",
                          mpiErrorText(rc)),
              __FILE__, __LINE__);
      if (static_cast<size_t>(index) == slots.size()) {
        marker[0] = MPI_REQUEST_NULL;
        MPI_Wait(&marker[1], MPI_STATUS_IGNORE);
        sendMarker();
        return;
      }
      *slots[static_cast<size_t>(index)] = MPI_REQUEST_NULL;
      size_t b = owners[static_cast<size_t>(index)];
      bool done = false;
      rc = rings[b].advance(done, RingReduction::Completion::Completed);
      if (rc != MPI_SUCCESS)
        fatal(fmt::format("the reduction of bucket {} failed: {}", b,
                          mpiErrorText(rc)),
              __FILE__, __LINE__);
      if (done) {
        state[b] = State::Finished;
        --running;
      }
    }
  }

  void sendMarker() {
    int rc = MPI_Irecv(&markerBytes[0], 1, MPI_BYTE, 0, 0, MPI_COMM_SELF,
                       &marker[0]);
    if (rc == MPI_SUCCESS)
      rc = MPI_Isend(&markerBytes[1], 1, MPI_BYTE, 0, 0, MPI_COMM_SELF,
                     &marker[1]);
    if (rc != MPI_SUCCESS)
      fatal("sending the progress marker failed: " + mpiErrorText(rc),
            __FILE__, __LINE__);
  }
#endif

  bool usesRings() const {
    return options.algorithm == AllreduceAlgorithm::Ring ||
           options.algorithm == AllreduceAlgorithm::Torus;
  }
  std::vector<int> torusDims() const {
    return options.algorithm == AllreduceAlgorithm::Torus ? options.torusDims
                                                          : std::vector<int>{};
  }

  const char *reductionName() const {
    return options.algorithm == AllreduceAlgorithm::Torus ? "torus allreduce"
           : options.algorithm == AllreduceAlgorithm::Ring ? "ring allreduce"
                                                         : "MPI_Iallreduce";
  }

  /// Starts bucket `b`'s reduction of `buffer` with the chosen algorithm.
  int startReduction(size_t b, void *buffer, const BucketPlan &plan) {
    if (usesRings()) {
      // Tags from 0..buckets-1 (two per bucket); timeBucketsAlone uses the
      // next ones.
      rings[b].reset(buffer, plan.count, plan.reduceType, static_cast<int>(b));
      return rings[b].start();
    }
    MPI_Datatype type = plan.reduceType == DType::F64 ? MPI_DOUBLE : MPI_FLOAT;
    return MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(plan.count),
                          type, MPI_SUM, comm, &requests[b]);
  }

  /// Lets bucket `b`'s reduction advance; `done` once it has finished.
  int testReduction(size_t b, bool &done) {
    if (usesRings())
      return rings[b].advance(done);
    int finished = 0;
    int rc = MPI_Test(&requests[b], &finished, MPI_STATUS_IGNORE);
    done = finished != 0;
    return rc;
  }

  /// A blocking collective: with Open MPI, its non-blocking form (`start`)
  /// waited for with the same deadline as the buckets, so that a hung peer
  /// cannot stall it forever. Simulated, its blocking form (`blocking`):
  /// SimGrid reports a deadlock itself, and SMPI 3.32's non-blocking
  /// collectives post a message to every rank and wait for them all, each
  /// wait testing every request still pending, which at 512 ranks costs
  /// the simulation more than the whole step (docs/scaling.md).
  template <typename Start, typename Blocking>
  Status collective(const char *what, Start &&start, Blocking &&blocking) {
#ifdef KILN_SMPI
    (void)what;
    (void)start;
    KILN_MPI_CHECK(blocking());
    return Status::ok();
#else
    (void)blocking;
    MPI_Request request;
    KILN_MPI_CHECK(start(&request));
    return waitWithDeadline(request, what);
#endif
  }

  /// Polls `request` until it completes or --comm-timeout passes.
  Status waitWithDeadline(MPI_Request &request, const char *what) {
    return waitWithDeadline(
        [&](bool &done) {
          int finished = 0;
          int rc = MPI_Test(&request, &finished, MPI_STATUS_IGNORE);
          done = finished != 0;
          return rc;
        },
        what);
  }

  /// Calls `test` until it reports done or --comm-timeout passes.
  template <typename Test>
  Status waitWithDeadline(Test &&test, const char *what) {
    auto deadline = RunClock::now() +
                    std::chrono::duration_cast<RunClock::duration>(
                        std::chrono::duration<double>(options.timeoutSeconds));
    for (unsigned spins = 0;; ++spins) {
      bool done = false;
      KILN_MPI_CHECK(test(done));
      if (done)
        return Status::ok();
      if (RunClock::now() > deadline)
        return KILN_STATUS(
            kInternal,
            fmt::format("{} did not finish within {} s (--comm-timeout); "
                        "another rank has died or hangs",
                        what, options.timeoutSeconds));
      if (spins % 64 == 63)
        sched_yield();
    }
  }

  [[noreturn]] void fatal(const std::string &message, const char *file,
                          int line) {
    std::fprintf(stderr, "kiln runtime: rank %d: %s [%s:%d]\n", rank_,
                 message.c_str(), file, line);
    abort(1);
  }

  BucketPlan &planOf(int32_t bucket, const char *what) {
    if (bucket < 0 || static_cast<size_t>(bucket) >= plans.size())
      fatal(fmt::format("allreduce {} of bucket {}, but the manifest has {} "
                        "buckets",
                        what, bucket, plans.size()),
            __FILE__, __LINE__);
    return plans[static_cast<size_t>(bucket)];
  }
};

} // namespace

Status parseTorusDims(const std::string &flag, const std::string &text,
                      std::vector<int> &dims) {
  dims.clear();
  size_t at = 0;
  while (true) {
    size_t x = text.find('x', at);
    int64_t d = 0;
    KILN_RETURN_IF_ERROR(flags::parseInt(
        flag, text.substr(at, x == std::string::npos ? x : x - at), 1,
        1 << 20, d));
    dims.push_back(static_cast<int>(d));
    if (x == std::string::npos)
      return Status::ok();
    at = x + 1;
  }
}

StatusOr<std::unique_ptr<Comm>> createMpiComm(const MpiOptions &options) {
  int initialized = 0;
  KILN_MPI_CHECK(MPI_Initialized(&initialized));
  if (!initialized) {
    // Only the main thread calls MPI; the input pipeline's threads never do.
    int provided = 0;
    KILN_MPI_CHECK(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided));
  }
  // Errors come back as codes so the runtime can say what failed and on
  // which rank before it ends the job.
  KILN_MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  MPI_Comm comm;
  KILN_MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
  KILN_MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
  int rank = 0, size = 0;
  KILN_MPI_CHECK(MPI_Comm_rank(comm, &rank));
  KILN_MPI_CHECK(MPI_Comm_size(comm, &size));
  if (options.algorithm == AllreduceAlgorithm::Torus) {
    int64_t ranks = 1;
    std::string shape;
    for (int d : options.torusDims) {
      ranks *= d > 0 ? d : 0;
      shape += (shape.empty() ? "" : "x") + std::to_string(d);
    }
    if (options.torusDims.empty() || ranks != size) {
      MPI_Comm_free(&comm);
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("the torus allreduce's grid {} has {} "
                                     "ranks, the job {} (--torus-dims)",
                                     shape.empty() ? "(none)" : shape, ranks,
                                     size));
    }
  }
  return std::unique_ptr<Comm>(new MpiComm(comm, rank, size, options));
}

} // namespace kiln::rt::exec
