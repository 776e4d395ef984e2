//===- kernels.cpp - Every manifest call planned once, executed on demand -===//
//
// Kernels::create plans each call (kernel_dnnl.cpp for oneDNN's primitives,
// kernel_selection.cpp for convolutions) and allocates the buffers the calls
// share; Kernels::execute runs a call's steps, and a split call's parts on
// libgomp's threads.
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/kernels.h"

#include "kiln/rt/exec/kernel_plan.h"

#include <dnnl_debug.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>

namespace kiln::rt::exec {

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

ActivationView activationView(uint8_t *arena, const TensorRef &t) {
  uint8_t *data = arena + t.offset;
  bool bf16 = t.dtype == DType::BF16;
  return t.layout == Layout::NChw16c
             ? ActivationView::nChw16c(data, bf16, t.shape[0], t.shape[1],
                                       t.shape[2], t.shape[3])
             : ActivationView::nhwc(data, bf16, t.shape[0], t.shape[1],
                                    t.shape[2], t.shape[3]);
}

Status Kernels::Impl::allocateShared() {
  auto allocate = [](size_t bytes, const char *what,
                     std::unique_ptr<uint8_t, void (*)(void *)> &out) -> Status {
    if (bytes == 0)
      return Status::ok();
    void *p = nullptr;
    // 64-byte alignment: oneDNN's kernels use aligned AVX-512 loads on it.
    int rc = ::posix_memalign(&p, 64, (bytes + 63) / 64 * 64);
    if (rc != 0)
      return errnoStatus(__FILE__, __LINE__,
                         fmt::format("posix_memalign of the {} ({} bytes)",
                                     what, bytes),
                         rc);
    out.reset(static_cast<uint8_t *>(p));
    return Status::ok();
  };
  KILN_RETURN_IF_ERROR(allocate(scratchpadBytes, "oneDNN scratchpad",
                                scratchpad));
  KILN_RETURN_IF_ERROR(allocate(stagingBytes, "weight staging buffer",
                                staging));
  for (auto &[m, offset] : scratchpadUsers)
    m.set_data_handle(scratchpad.get() + offset);
  for (auto &[m, offset] : stagingUsers)
    m.set_data_handle(staging.get() + offset);
  return Status::ok();
}

Kernels::Kernels(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Kernels::~Kernels() = default;

StatusOr<std::unique_ptr<Kernels>> Kernels::create(const Manifest &manifest,
                                                   uint8_t *arena,
                                                   const KernelOptions &options) {
  auto impl = std::make_unique<Impl>(manifest, arena, options);
  for (int t = 0, threads = omp_get_max_threads(); t < threads; ++t)
    impl->partStreams.emplace_back(impl->engine);
  impl->plans.resize(manifest.calls.size());
  for (size_t i = 0; i < manifest.calls.size(); ++i) {
    const Call &call = manifest.calls[i];
    try {
      Status s = call.kind == CallKind::Matmul || call.kind == CallKind::Dense
                     ? impl->planMatmul(call, impl->plans[i])
                 : call.kind == CallKind::Reorder
                     ? impl->planReorder(call, impl->plans[i])
                 : call.kind == CallKind::DenseBackwardWeights
                     ? impl->planDenseBackwardWeights(call, impl->plans[i])
                     : impl->planConv(call, impl->plans[i]);
      KILN_RETURN_IF_ERROR(s);
    } catch (const dnnl::error &e) {
      return KILN_STATUS(kUnimplemented,
                         fmt::format("{}: oneDNN cannot create its primitive "
                                     "({}: {}); operands {}",
                                     call.describe(i),
                                     dnnl_status2str(e.status), e.what(),
                                     impl->plans[i].summary));
    }
  }
  KILN_RETURN_IF_ERROR(impl->allocateShared());
  return std::unique_ptr<Kernels>(new Kernels(std::move(impl)));
}

namespace {
/// One execution of a call's SplitSteps on libgomp's pool (the threads
/// oneDNN uses; inside the parallel region each oneDNN primitive runs on
/// the thread that calls it).
struct SplitRun {
  SplitRun(Kernels::Impl &impl, CallPlan &plan) : impl(impl), plan(plan) {}

  Kernels::Impl &impl;
  CallPlan &plan;
  std::mutex failureMutex;
  std::optional<std::pair<dnnl_status_t, std::string>> failure;

  void run() {
    unsigned parts = unsigned(plan.split.parts.size());
    GOMP_parallel(&SplitRun::onThread, this, parts, 0);
  }

  static void onThread(void *data) {
    auto &self = *static_cast<SplitRun *>(data);
    SplitSteps &split = self.plan.split;
    size_t thread = size_t(omp_get_thread_num());
    size_t threads = size_t(omp_get_num_threads());
    // A team smaller than asked for runs the parts round-robin.
    for (size_t p = thread; p < split.parts.size(); p += threads) {
      try {
        for (Step &s : split.parts[p])
          s.execute(self.impl.partStreams[p]);
      } catch (const dnnl::error &e) {
        std::lock_guard<std::mutex> lock(self.failureMutex);
        self.failure = {e.status, e.what()};
      }
    }
    GOMP_barrier();
    // Each thread adds the partial sums over its slice of the elements.
    auto *sum = reinterpret_cast<float *>(self.impl.arena + split.sumOffset);
    int64_t begin = split.elements * int64_t(thread) / int64_t(threads);
    int64_t end = split.elements * int64_t(thread + 1) / int64_t(threads);
    for (int64_t offset : split.partialOffsets) {
      const auto *partial =
          reinterpret_cast<const float *>(self.impl.staging.get() + offset);
      for (int64_t i = begin; i < end; ++i)
        sum[i] += partial[i];
    }
  }
};
} // namespace

void Kernels::execute(int32_t id) {
  Impl &impl = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= impl.plans.size()) {
    std::fprintf(stderr,
                 "kiln runtime: kiln_rt_kernel_call with call id %d, but the "
                 "manifest has %zu calls [%s:%d]\n",
                 id, impl.plans.size(), __FILE__, __LINE__);
    std::abort();
  }
  CallPlan &plan = impl.plans[static_cast<size_t>(id)];
  auto start = impl.options.profile ? std::chrono::steady_clock::now()
                                    : std::chrono::steady_clock::time_point();
  SplitRun split{impl, plan};
  try {
    for (Step &s : plan.steps)
      s.execute(impl.stream);
    impl.stream.wait();
    if (!plan.split.parts.empty())
      split.run();
  } catch (const dnnl::error &e) {
    split.failure = {e.status, e.what()};
  }
  if (split.failure) {
    std::fprintf(
        stderr, "kiln runtime: %s failed in oneDNN (%s: %s); %s [%s:%d]\n",
        impl.manifest.calls[static_cast<size_t>(id)]
            .describe(static_cast<size_t>(id))
            .c_str(),
        dnnl_status2str(split.failure->first), split.failure->second.c_str(),
        plan.summary.c_str(), __FILE__, __LINE__);
    std::abort();
  }
  if (impl.options.profile) {
    plan.seconds += std::chrono::duration<double>(
                        std::chrono::steady_clock::now() - start)
                        .count();
    ++plan.count;
  }
}

size_t Kernels::numCalls() const { return impl_->plans.size(); }

std::string Kernels::implementation(int32_t id) const {
  return impl_->plans.at(static_cast<size_t>(id)).impl;
}

uint64_t Kernels::callCount(int32_t id) const {
  return impl_->plans.at(static_cast<size_t>(id)).count;
}

double Kernels::callSeconds(int32_t id) const {
  return impl_->plans.at(static_cast<size_t>(id)).seconds;
}

double Kernels::multiplyAdds(int32_t id) const {
  return impl_->plans.at(static_cast<size_t>(id)).macs;
}

std::string Kernels::summary(int32_t id) const {
  return impl_->plans.at(static_cast<size_t>(id)).summary;
}

Status setComputeThreads(int threads) {
  if (threads <= 0)
    return KILN_STATUS(kInvalidArgument,
                       fmt::format("thread count {} is not positive", threads));
  // libgomp read OMP_NUM_THREADS when it was loaded, before main. Setting
  // the variable now serves anything loaded later; the running runtime is
  // told through omp_set_num_threads (gomp.h).
  std::string value = std::to_string(threads);
  KILN_CHECK_LIBC(::setenv("OMP_NUM_THREADS", value.c_str(), 1),
                  "setenv OMP_NUM_THREADS");
  omp_set_num_threads(threads);
  return Status::ok();
}

} // namespace kiln::rt::exec
