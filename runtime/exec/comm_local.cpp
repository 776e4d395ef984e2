//===- comm_local.cpp - The single-process communicator -------------------===//

#include "kiln/rt/exec/comm.h"

#include <cstdio>
#include <cstdlib>

namespace kiln::rt::exec {

namespace {

/// One process: every collective is the identity.
class LocalComm final : public Comm {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char *backend() const override { return "local"; }
  Status setBuckets(const std::vector<Bucket> &buckets, uint8_t *) override {
    numBuckets = buckets.size();
    return Status::ok();
  }
  void allreduceStart(int32_t bucket) override { check(bucket); }
  void allreduceWait(int32_t bucket) override { check(bucket); }
  Status broadcast(void *, size_t, int) override { return Status::ok(); }
  Status allreduceSum(double *, int) override { return Status::ok(); }
  Status allreduceMin(int64_t *, int) override { return Status::ok(); }
  StatusOr<std::vector<uint64_t>> allgather(uint64_t value) override {
    return std::vector<uint64_t>{value};
  }
  StatusOr<std::vector<std::string>>
  allgatherText(const std::string &text) override {
    return std::vector<std::string>{text};
  }
  Status barrier() override { return Status::ok(); }
  [[noreturn]] void abort(int code) override { std::exit(code); }

private:
  size_t numBuckets = 0;
  void check(int32_t bucket) const {
    if (bucket < 0 || static_cast<size_t>(bucket) >= numBuckets) {
      std::fprintf(stderr,
                   "kiln runtime: allreduce of bucket %d, but the manifest "
                   "has %zu buckets [%s:%d]\n",
                   bucket, numBuckets, __FILE__, __LINE__);
      std::abort();
    }
  }
};

} // namespace

std::unique_ptr<Comm> createLocalComm() {
  return std::make_unique<LocalComm>();
}

bool launchedByMpirun() {
#ifdef KILN_SMPI
  // Built for SMPI (kilnc --smpi): only smpirun can load it.
  return true;
#else
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMIX_RANK") ||
         std::getenv("PMI_RANK");
#endif
}

} // namespace kiln::rt::exec
