//===- kernel_plan.h - How the runtime plans a manifest call --*- C++ -*-===//
//
// The pieces kernels.h's Kernels is built from, shared by the files that
// plan a call: kernel_dnnl.cpp (oneDNN's primitives), the runtime's four
// replacements for some of them (kernel_winograd_fused.cpp,
// kernel_conv1x1.cpp, kernel_filter_grad_matmuls.cpp,
// kernel_data_grad_forward.cpp),
// kernel_selection.cpp (which of these a convolution runs on) and
// kernels.cpp (planning every call, executing one). Nothing outside those
// files includes it.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_KERNEL_PLAN_H
#define KILN_RT_EXEC_KERNEL_PLAN_H

#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/kernels.h"
#include "kiln/rt/exec/manifest.h"
#include "kiln/rt/exec/winograd.h"

#include <dnnl.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace kiln::rt::exec {

using dnnl::memory;
using Dims = memory::dims;

memory::data_type toDnnl(DType dtype);

/// A 4-D activation: oneDNN's logical dims are NCHW whatever the storage.
memory::desc activationDesc(const TensorRef &t, DType dtype);
memory::desc activationDesc(const TensorRef &t);

/// An HWIO filter [KH,KW,Cin,Cout]; oneDNN's logical dims are OIHW. With
/// groups > 1 (Cin per group, output channel o in group o / (Cout/groups))
/// they are GOIHW, {groups, Cout/groups, Cin, KH, KW}: the same bytes are
/// oneDNN's hwigo.
memory::desc filterDesc(const TensorRef &t, int64_t groups = 1);

/// The same logical tensor in a format oneDNN picks.
memory::desc anyFormat(const memory::desc &md);

/// A row-major matrix (or batch of matrices) read as its transpose if
/// `transposed`: logical dims [.., rows, cols] of storage [.., cols, rows].
memory::desc matrixDesc(const TensorRef &t, bool transposed);

/// "[32x56x56x64]", as call summaries print shapes.
std::string shapeString(const std::vector<int64_t> &shape);

/// The arena tensor `t` as the runtime's own kernels read it (NHWC or
/// nChw16c).
ActivationView activationView(uint8_t *arena, const TensorRef &t);

/// One primitive execution with its arguments, or work the runtime does
/// itself.
struct Step {
  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  /// Set instead of `primitive` (and `args`) for work the runtime does
  /// itself.
  std::function<void()> custom;

  void execute(dnnl::stream &stream) {
    if (custom)
      custom();
    else
      primitive.execute(stream, args);
  }
};

/// A oneDNN reorder from one memory into another (format or type change).
Step reorderStep(memory from, memory to);

/// Primitive descriptors created while this lives are planned for one
/// thread: oneDNN partitions a primitive's work by the thread count it reads
/// at creation, and inside a parallel region each primitive runs on its
/// calling thread alone.
class OneThreadPlanning {
public:
  OneThreadPlanning() : saved(omp_get_max_threads()) { omp_set_num_threads(1); }
  ~OneThreadPlanning() { omp_set_num_threads(saved); }

private:
  int saved;
};

/// Steps that run concurrently, one part to a thread, each part a
/// single-threaded oneDNN computation of a partial f32 sum: part 0's in the
/// arena at `sumOffset`, the others' in the staging buffer. When all are
/// done, the threads add the partial sums into part 0's (`elements` floats)
/// in part order, so the result does not depend on how many threads ran
/// the parts.
struct SplitSteps {
  std::vector<std::vector<Step>> parts;
  int64_t sumOffset = 0;               // arena bytes
  std::vector<int64_t> partialOffsets; // staging bytes, parts 1..
  int64_t elements = 0;
};

struct CallPlan {
  std::vector<Step> steps;
  SplitSteps split;
  std::string impl;
  std::string summary;
  /// A forward call's statistics are taken by its kernel.
  bool takesStatistics = false;
  double macs = 0;
  uint64_t count = 0;
  double seconds = 0;
};

/// Every call's plan and the buffers the calls share.
struct Kernels::Impl {
  const Manifest &manifest;
  uint8_t *arena;
  KernelOptions options;
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // One stream per thread for split calls' parts.
  std::vector<dnnl::stream> partStreams;
  dnnl::primitive_attr attr;
  std::vector<CallPlan> plans;

  // Shared by every call (they run one at a time): oneDNN's scratchpad and
  // the staging buffer of blocked weights.
  size_t scratchpadBytes = 0;
  size_t stagingBytes = 0;
  std::unique_ptr<uint8_t, void (*)(void *)> scratchpad{nullptr, std::free};
  std::unique_ptr<uint8_t, void (*)(void *)> staging{nullptr, std::free};
  // Memory objects created before the shared buffers exist, with their byte
  // offsets into them; their handles are set once all sizes are known.
  std::vector<std::pair<memory, size_t>> scratchpadUsers;
  std::vector<std::pair<memory, size_t>> stagingUsers;

  Impl(const Manifest &manifest, uint8_t *arena, const KernelOptions &options)
      : manifest(manifest), arena(arena), options(options) {
    // One scratchpad for all primitives instead of one each.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  }

  /// `md` over the arena from `t`'s offset plus `bytes`.
  memory bind(const memory::desc &md, const TensorRef &t, int64_t bytes = 0) {
    return memory(md, engine, arena + t.offset + bytes);
  }

  /// `md` over a shared buffer (`users`, `size`), `offset` bytes in.
  memory sharedMemory(const memory::desc &md, size_t offset, size_t &size,
                      std::vector<std::pair<memory, size_t>> &users) {
    size = std::max(size, offset + md.get_size());
    memory m(md, engine, DNNL_MEMORY_NONE);
    users.emplace_back(m, offset);
    return m;
  }
  memory scratchpadMemory(const memory::desc &md, size_t offset = 0) {
    return sharedMemory(md, offset, scratchpadBytes, scratchpadUsers);
  }
  memory stagingMemory(const memory::desc &md, size_t offset = 0) {
    return sharedMemory(md, offset, stagingBytes, stagingUsers);
  }

  static std::string implName(const dnnl::primitive_desc_base &pd) {
    return pd.impl_info_str();
  }

  /// Adds `primitive`, a backward-weights pass whose weight gradient is
  /// wanted in `user`: written there directly when its format is `wanted`'s,
  /// else into the staging buffer and reordered into `user` after.
  void addWeightGradientStep(CallPlan &plan, dnnl::primitive primitive,
                             std::unordered_map<int, memory> args,
                             const memory::desc &wanted, memory user,
                             std::string impl) {
    bool reorderAfter = wanted != user.get_desc();
    memory produced = reorderAfter ? stagingMemory(wanted) : user;
    args[DNNL_ARG_DIFF_WEIGHTS] = produced;
    Step s;
    s.primitive = std::move(primitive);
    s.args = std::move(args);
    plan.steps.push_back(std::move(s));
    plan.impl = std::move(impl);
    if (reorderAfter) {
      plan.steps.push_back(reorderStep(produced, user));
      plan.impl += " (+ reorder weights)";
    }
  }

  Status planConv(const Call &call, CallPlan &plan);
  /// planConv without a forward call's statistics, unless its kernel takes
  /// them (plan.takesStatistics).
  Status planConvPasses(const Call &call, CallPlan &plan);
  Status planFilterGradientAsMatmuls(const Call &call, CallPlan &plan);
  /// im2col: the input pixels each output pixel of images [first, first +
  /// images) of a backward-filter call reads, Cin per filter tap in HWIO
  /// order, zeros where the filter reaches into the padding.
  void writeColumns(const Call &call, int64_t first, int64_t images,
                    uint8_t *out) const;
  Status planBackwardDataAsForward(const Call &call, CallPlan &plan);
  Status planFusedTileWinograd(const Call &call, CallPlan &plan);
  Status planConv1x1(const Call &call, CallPlan &plan);
  /// With `kernelOnly`, a pass sets only plan.impl, the kernel oneDNN
  /// picks, and creates and binds nothing.
  Status planConvWith(const Call &call, CallPlan &plan,
                      dnnl::algorithm algorithm, bool kernelOnly = false);
  Status planMatmul(const Call &call, CallPlan &plan);
  Status planReorder(const Call &call, CallPlan &plan);
  Status planDenseBackwardWeights(const Call &call, CallPlan &plan);
  Status allocateShared();
};

/// Whether any operand of `call` is bf16.
bool hasBf16Operand(const Call &call);

/// Whether the runtime's fused-tile Winograd runs `call`
/// (kernel_winograd_fused.cpp).
bool isFusedTileWinograd(const Call &call);

/// Whether the runtime's AVX2 1x1 kernel can run `call`
/// (kernel_conv1x1.cpp).
bool isConv1x1(const Call &call);

/// Whether a bf16 filter gradient runs as matrix products
/// (kernel_filter_grad_matmuls.cpp).
bool isBf16FilterGradientAsMatmuls(const Call &call);

/// Whether a bf16 input gradient runs as a forward convolution
/// (kernel_data_grad_forward.cpp).
bool isBf16BackwardDataAsForward(const Call &call);

} // namespace kiln::rt::exec

#endif // KILN_RT_EXEC_KERNEL_PLAN_H
