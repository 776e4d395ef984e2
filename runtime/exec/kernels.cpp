//===- kernels.cpp - oneDNN primitives for the manifest's calls -----------===//

#include "kiln/rt/exec/kernels.h"

#include "kiln/rt/exec/channel_statistics.h"
#include "kiln/rt/exec/gomp.h"
#include "kiln/rt/exec/weight_reorder.h"
#include "kiln/rt/exec/winograd.h"

#include <dnnl.hpp>
#include <dnnl_debug.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

namespace kiln::rt::exec {

using dnnl::memory;
using Dims = memory::dims;

namespace {

memory::data_type toDnnl(DType dtype) {
  return dtype == DType::BF16 ? memory::data_type::bf16
                              : memory::data_type::f32;
}

/// A 4-D activation: oneDNN's logical dims are NCHW whatever the storage.
memory::desc activationDesc(const TensorRef &t, DType dtype) {
  Dims dims = {t.shape[0], t.shape[3], t.shape[1], t.shape[2]};
  memory::format_tag tag = memory::format_tag::nhwc;
  if (t.layout == Layout::Nchw)
    tag = memory::format_tag::nchw;
  else if (t.layout == Layout::NChw16c)
    tag = memory::format_tag::nChw16c;
  return memory::desc(dims, toDnnl(dtype), tag);
}
memory::desc activationDesc(const TensorRef &t) {
  return activationDesc(t, t.dtype);
}

/// An HWIO filter [KH,KW,Cin,Cout]; oneDNN's logical dims are OIHW.
memory::desc filterDesc(const TensorRef &t) {
  Dims dims = {t.shape[3], t.shape[2], t.shape[0], t.shape[1]};
  return memory::desc(dims, toDnnl(t.dtype), memory::format_tag::hwio);
}

/// The same logical tensor in a format oneDNN picks.
memory::desc anyFormat(const memory::desc &md) {
  return memory::desc(md.dims(), md.data_type(), memory::format_tag::any);
}

/// A row-major matrix (or batch of matrices) read as its transpose if
/// `transposed`: logical dims [.., rows, cols] of storage [.., cols, rows].
memory::desc matrixDesc(const TensorRef &t, bool transposed) {
  Dims stored(t.shape.begin(), t.shape.end());
  size_t r = stored.size();
  Dims strides(r);
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    strides[i] = s;
    s *= stored[i];
  }
  Dims dims = stored;
  if (transposed) {
    std::swap(dims[r - 1], dims[r - 2]);
    std::swap(strides[r - 1], strides[r - 2]);
  }
  return memory::desc(dims, toDnnl(t.dtype), strides);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s + "]";
}

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
Step reorderStep(memory from, memory to) {
  Step s;
  if (auto own =
          PairBlockedWeightReorder::match(from.get_desc(), to.get_desc())) {
    // The memory objects share their handles with the ones the plan sets
    // once the staging buffer exists.
    s.custom = [own = *own, from, to] {
      own.run(from.get_data_handle(), to.get_data_handle());
    };
    return s;
  }
  s.primitive = dnnl::reorder(from, to);
  s.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  return s;
}

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

} // namespace

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
  /// With `kernelOnly`, a pass sets only plan.impl, the kernel oneDNN
  /// picks, and creates and binds nothing.
  Status planConvWith(const Call &call, CallPlan &plan,
                      dnnl::algorithm algorithm, bool kernelOnly = false);
  Status planMatmul(const Call &call, CallPlan &plan);
  Status planReorder(const Call &call, CallPlan &plan);
  Status planDenseBackwardWeights(const Call &call, CallPlan &plan);
  Status allocateShared();
};

/// Whether a backward-filter call is a bf16 convolution over NHWC
/// activations, without dilation, whose filter gradient is faster as matrix
/// products than in oneDNN 2.6's bf16 backward-weights kernels (older jit
/// kernels): 1x1 filters with at least 64 channels in and out on output
/// images of at most 28x28 pixels, and larger filters with at least 128
/// columns (KH*KW*Cin) and 32 output channels on 7x7 outputs, or on 14x14
/// outputs when strided. The gradient is columns^T x output_grad, the
/// columns being the input pixels each output pixel reads (im2col; for an
/// unpadded stride-1 1x1 filter the input itself). One oneDNN matmul per
/// thread over its share of the batch, each planned for one thread, plus a
/// sum of the partial gradients, against oneDNN's kernel in a step (ResNet-50
/// bf16, batch 32, and Fashion-MNIST's ResNet-20, batch 128; the last
/// columns of kiln-bench-conv-layout):
///   14x14, 256 -> 1024, 1x1: 6.6 -> 5.1 ms per call
///   28x28x512 -> 14x14x1024, 1x1 stride 2: 12.7 -> 10.3
///   ResNet-50's nine 1x1 layers on 28x28 outputs: 65.3 -> 61.9 ms per step
///   14x14x512 -> 7x7x512, 3x3 stride 2: 18.7 -> 10.4
///   7x7x512, 3x3: 13.5 -> 10.2
///   28x28x256 -> 14x14x256, 3x3 stride 2: 13.5 -> 11.7
///   Fashion-MNIST 14x14x32 -> 7x7x64, 3x3 stride 2: 1.3 -> 0.5;
///   7x7x64, 3x3: 1.3 -> 0.9; 28x28x16 -> 14x14x32, 3x3 stride 2: 1.1 -> 0.9
/// One matmul across both threads splits the long pixel reduction between
/// them and is slower than the convolution. On larger outputs (1x1 on
/// 56x56; 3x3 stride 1 on 14x14: 9.6 against 10.6 ms; 56x56x128 ->
/// 28x28x128, 3x3 stride 2: 15.9 against 18.0 ms per step), with fewer channels
/// (Fashion-MNIST's 1x1 shortcuts) or in f32 (blocked layouts) the
/// convolution kernel is as fast or faster.
static bool isBf16FilterGradientAsMatmuls(const Call &call) {
  if (call.kind != CallKind::Conv2dBackwardFilter)
    return false;
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  if (call.dilations != std::array<int64_t, 2>{1, 1} ||
      x.dtype != DType::BF16 || dy.dtype != DType::BF16 ||
      dw.dtype != DType::F32 || !x.isRowMajor() || !dy.isRowMajor())
    return false;
  int64_t taps = dw.shape[0] * dw.shape[1], cin = x.shape[3],
          cout = dy.shape[3];
  int64_t pixels = dy.shape[1] * dy.shape[2];
  bool strided = call.strides != std::array<int64_t, 2>{1, 1};
  if (taps == 1)
    return cin >= 64 && cout >= 64 && pixels <= 28 * 28;
  return taps * cin >= 128 && cout >= 32 &&
         (pixels <= 7 * 7 || (strided && pixels <= 14 * 14));
}

Status Kernels::Impl::planFilterGradientAsMatmuls(const Call &call,
                                                  CallPlan &plan) {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  int64_t n = dy.shape[0], ho = dy.shape[1], wo = dy.shape[2];
  int64_t kh = dw.shape[0], kw = dw.shape[1];
  int64_t cin = x.shape[3], cout = dy.shape[3];
  // Columns per output pixel: the filter's taps, Cin each, in HWIO order,
  // so the product is the HWIO gradient.
  int64_t columns = kh * kw * cin;
  bool direct = kh * kw == 1 && call.strides == std::array<int64_t, 2>{1, 1} &&
                call.padding == std::array<int64_t, 4>{0, 0, 0, 0};
  plan.macs = double(n * ho * wo) * double(columns) * double(cout);
  plan.summary = fmt::format(
      "in {} filter {} out {} stride {}x{} pad {},{},{},{}",
      shapeString(x.shape), shapeString(dw.shape), shapeString(dy.shape),
      call.strides[0], call.strides[1], call.padding[0], call.padding[1],
      call.padding[2], call.padding[3]);
  memory::data_type xType = toDnnl(x.dtype), dyType = toDnnl(dy.dtype);
  int64_t xElement = int64_t(dtypeSize(x.dtype));
  int64_t dyElement = int64_t(dtypeSize(dy.dtype));
  memory::desc dwMd({columns, cout}, toDnnl(dw.dtype), {cout, 1});
  // Staging holds every part's columns, then the partial gradients of parts
  // 1.. (part 0's goes to dw itself), 64-byte aligned.
  int64_t columnBytes = direct ? 0 : n * ho * wo * columns * xElement;
  int64_t partialBytes = (int64_t(dwMd.get_size()) + 63) / 64 * 64;
  int64_t partialsAt = (columnBytes + 63) / 64 * 64;
  int64_t parts = std::min<int64_t>(n, int64_t(partStreams.size()));
  auto firstImage = [&](int64_t p) { return n * p / parts; };
  // Row-major [pixels, columns] read transposed, and [pixels, Cout].
  auto columnsMd = [&](int64_t pixels) {
    return memory::desc({columns, pixels}, xType, {1, columns});
  };
  auto outputGradMd = [&](int64_t pixels) {
    return memory::desc({pixels, cout}, dyType, {cout, 1});
  };
  std::vector<dnnl::matmul::primitive_desc> pds;
  size_t scratchpadStride = 0;
  {
    OneThreadPlanning oneThread;
    for (int64_t p = 0; p < parts; ++p) {
      int64_t pixels = (firstImage(p + 1) - firstImage(p)) * ho * wo;
      pds.emplace_back(
          dnnl::matmul::desc(columnsMd(pixels), outputGradMd(pixels), dwMd),
          attr, engine);
      scratchpadStride =
          std::max(scratchpadStride,
                   (pds.back().scratchpad_desc().get_size() + 63) / 64 * 64);
    }
  }
  plan.impl = "matmul " + implName(pds[0]);
  for (int64_t p = 0; p < parts; ++p) {
    int64_t first = firstImage(p), images = firstImage(p + 1) - first;
    int64_t pixels = images * ho * wo;
    std::vector<Step> steps;
    memory input;
    if (direct) {
      input = bind(columnsMd(pixels), x, first * ho * wo * cin * xElement);
    } else {
      size_t at = size_t(first * ho * wo * columns * xElement);
      Step im2col;
      im2col.custom = [this, call, first, images, at] {
        writeColumns(call, first, images, staging.get() + at);
      };
      steps.push_back(std::move(im2col));
      input = stagingMemory(columnsMd(pixels), at);
    }
    memory partial = bind(dwMd, dw);
    if (p > 0) {
      int64_t at = partialsAt + (p - 1) * partialBytes;
      partial = stagingMemory(dwMd, size_t(at));
      plan.split.partialOffsets.push_back(at);
    }
    const dnnl::matmul::primitive_desc &pd = pds[size_t(p)];
    Step s;
    s.primitive = dnnl::matmul(pd);
    s.args = {
        {DNNL_ARG_SRC, input},
        {DNNL_ARG_WEIGHTS,
         bind(outputGradMd(pixels), dy, first * ho * wo * cout * dyElement)},
        {DNNL_ARG_DST, partial},
        {DNNL_ARG_SCRATCHPAD,
         scratchpadMemory(pd.scratchpad_desc(), size_t(p) * scratchpadStride)}};
    steps.push_back(std::move(s));
    plan.split.parts.push_back(std::move(steps));
  }
  plan.split.sumOffset = dw.offset;
  plan.split.elements = columns * cout;
  plan.impl += fmt::format(" per thread over {} parts of the batch", parts);
  if (!direct)
    plan.impl += " (+ im2col)";
  return Status::ok();
}

void Kernels::Impl::writeColumns(const Call &call, int64_t firstImage,
                                 int64_t images, uint8_t *out) const {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("filter_grad");
  int64_t h = x.shape[1], w = x.shape[2], cin = x.shape[3];
  int64_t ho = dy.shape[1], wo = dy.shape[2];
  int64_t kh = dw.shape[0], kw = dw.shape[1];
  size_t rowBytes = size_t(cin) * dtypeSize(x.dtype);
  const uint8_t *in = arena + x.offset;
  for (int64_t b = firstImage; b < firstImage + images; ++b)
    for (int64_t i = 0; i < ho; ++i)
      for (int64_t j = 0; j < wo; ++j)
        for (int64_t a = 0; a < kh; ++a) {
          int64_t r = i * call.strides[0] - call.padding[0] + a;
          for (int64_t c = 0; c < kw; ++c, out += rowBytes) {
            int64_t q = j * call.strides[1] - call.padding[2] + c;
            if (r < 0 || r >= h || q < 0 || q >= w)
              std::memset(out, 0, rowBytes);
            else
              std::memcpy(out, in + ((b * h + r) * w + q) * rowBytes, rowBytes);
          }
        }
}

/// Whether a backward-data call is a bf16 stride-1 convolution with a
/// filter larger than 1x1 over NHWC activations, with at least 64 channels
/// in and out and an image of at most 14x14 pixels (ResNet-50's 3x3 layers
/// of its last two stages). Its input gradient is then computed as what it
/// is, a forward convolution of the output gradient with the filter flipped
/// in space and its channel axes swapped: oneDNN 2.6 runs bf16
/// backward-data on its older jit kernels, the forward on brgconv, which is
/// faster there (7x7x512: 11.1 -> 9.0 ms; 14x14x256: 9.1 -> 8.4 ms, the
/// filter's rearrangement included). On larger images the two are even or
/// the backward kernel wins.
static bool isBf16BackwardDataAsForward(const Call &call) {
  if (call.kind != CallKind::Conv2dBackwardData)
    return false;
  const TensorRef &w = call.operand("filter");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dx = call.operand("input_grad");
  // The forward convolution pads by what the filter reaches past the
  // backward one's padding.
  bool padsFit = call.padding[0] < w.shape[0] && call.padding[1] < w.shape[0] &&
                 call.padding[2] < w.shape[1] && call.padding[3] < w.shape[1];
  return w.shape[0] * w.shape[1] > 1 && padsFit &&
         call.strides == std::array<int64_t, 2>{1, 1} &&
         call.dilations == std::array<int64_t, 2>{1, 1} &&
         w.dtype == DType::BF16 && dy.dtype == DType::BF16 && dy.isRowMajor() &&
         dx.isRowMajor() && w.shape[2] >= 64 && w.shape[3] >= 64 &&
         dy.shape[1] * dy.shape[2] <= 14 * 14;
}

Status Kernels::Impl::planBackwardDataAsForward(const Call &call,
                                                CallPlan &plan) {
  const TensorRef &w = call.operand("filter");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dx = call.operand("input_grad");
  int64_t kh = w.shape[0], kw = w.shape[1], cin = w.shape[2], cout = w.shape[3];
  plan.macs = double(dy.numElements()) * double(kh * kw * cin);
  plan.summary = fmt::format(
      "in {} filter {} out {} stride 1x1 pad {},{},{},{}",
      shapeString(dx.shape), shapeString(w.shape), shapeString(dy.shape),
      call.padding[0], call.padding[1], call.padding[2], call.padding[3]);
  // dx = conv(dy, w') with w'[o = c, i = k, a, b] = w[kh-1-a, kw-1-b, c, k]:
  // each output-gradient pixel reaches the input pixels under the filter.
  memory::desc dyMd = activationDesc(dy), dxMd = activationDesc(dx);
  memory::desc flippedAny({cin, cout, kh, kw}, toDnnl(w.dtype),
                          memory::format_tag::any);
  Dims padL = {kh - 1 - call.padding[0], kw - 1 - call.padding[2]};
  Dims padR = {kh - 1 - call.padding[1], kw - 1 - call.padding[3]};
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                      dnnl::algorithm::convolution_direct, dyMd,
                                      flippedAny, dxMd, {1, 1}, padL, padR),
      attr, engine);
  // The flip has no strided form (oneDNN takes no negative strides), so
  // each tap is its own reorder: a [Cin, Cout] slice of the HWIO filter into
  // its place in the primitive's (blocked) weights.
  memory::desc flipped = pd.weights_desc();
  int64_t tapBytes = cin * cout * int64_t(dtypeSize(w.dtype));
  memory::desc tap({cin, cout, 1, 1}, toDnnl(w.dtype), {cout, 1, 1, 1});
  for (int64_t a = 0; a < kh; ++a)
    for (int64_t b = 0; b < kw; ++b)
      plan.steps.push_back(reorderStep(
          bind(tap, w, ((kh - 1 - a) * kw + (kw - 1 - b)) * tapBytes),
          stagingMemory(
              flipped.submemory_desc({cin, cout, 1, 1}, {0, 0, a, b}))));
  Step s;
  s.primitive = dnnl::convolution_forward(pd);
  s.args = {{DNNL_ARG_SRC, bind(dyMd, dy)},
            {DNNL_ARG_WEIGHTS, stagingMemory(flipped)},
            {DNNL_ARG_DST, bind(dxMd, dx)},
            {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}};
  plan.steps.push_back(std::move(s));
  plan.impl = implName(pd) + " forward on the flipped filter (+ reorder "
                             "weights)";
  return Status::ok();
}

/// Whether a call is one the runtime's fused-tile Winograd (winograd.h)
/// runs faster than oneDNN: a 3x3 convolution pass, stride 1, one
/// pixel of padding on every side, NHWC or nChw16c activations, channels
/// multiples of 16 and at most 128. Per call, two threads, nChw16c, against
/// oneDNN's choice (`kiln-bench-exec-conv --conv-algorithm auto|library`;
/// forward / input gradient / filter gradient, ms):
///   128x28x28x16  0.73 / 0.74 / 0.96 against 1.09 / 1.11 / 1.16
///                 (caches evicted first: 0.98 / 0.99 / 1.19 against
///                 1.70 / 1.77 / 1.25)
///   128x14x14x32  0.64 / 0.64 / 0.71 against 1.10 / 1.07 / 1.16
///   128x7x7x64    0.60 / 0.59 / 0.68 against 0.81 / 0.81 / 1.23
///   32x56x56x64   7.2 / 7.2 / 8.6 against 10.0 / 9.4 / 14.8
///   32x28x28x128  7.1 / 6.7 / 7.8 against 9.0 / 9.6 / 18.8
/// At 256 channels the transformed filter (36 x 256 x 256 floats per
/// thread) no longer stays in cache and oneDNN's Winograd is faster (8.1
/// against 8.9 ms forward on 32x14x14x256); CPUs without AVX-512 do not run
/// the kernel.
static bool hasBf16Operand(const Call &call) {
  for (const auto &[name, t] : call.operands)
    if (t.dtype == DType::BF16)
      return true;
  return false;
}

static bool isFusedTileWinograd(const Call &call) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  bool bwdFilter = call.kind == CallKind::Conv2dBackwardFilter;
  if (!fwd && !bwdData && !bwdFilter)
    return false;
  const TensorRef &w = call.operand(bwdFilter ? "filter_grad" : "filter");
  const TensorRef &x = call.operand(bwdData ? "output_grad" : "input");
  const TensorRef &y = call.operand(fwd       ? "output"
                                    : bwdData ? "input_grad"
                                              : "output_grad");
  // Activations and the filter f32 or bf16; the bias and a filter
  // gradient f32.
  bool types = true, layouts = true;
  for (const auto &[name, t] : call.operands) {
    bool f32Only =
        name == "bias" || name == "filter_grad" || name == "statistics";
    types &= t.dtype == DType::F32 || (!f32Only && t.dtype == DType::BF16);
    if (t.shape.size() == 4 && name != "filter" && name != "filter_grad")
      layouts &= t.isRowMajor() || t.layout == Layout::NChw16c;
  }
  if (call.hasOperand("residual"))
    types &= call.operand("residual").dtype == y.dtype;
  int64_t inputs = x.shape[3], outputs = y.shape[3];
  bool bf16 = hasBf16Operand(call);
  // Against oneDNN's bf16 kernels, which multiply twice as fast per
  // instruction, it wins only on larger layers (with the caches evicted,
  // forward / input gradient / filter gradient, ms): 32x56x56x64 6.8 /
  // 6.9 / 8.7 against 9.3 / 9.3 / 14.4, 32x28x28x128 7.3 / 8.0 / 8.3
  // against 9.0 / 9.1 / 11.7; but 128x28x28x16 1.04 / 1.08 / 1.29 against
  // 1.08 / 0.68 / 1.16, and on 14x14 and 7x7 images it loses the forward
  // and input gradient (32x14x14x128 2.7 / 3.2 against 2.4 / 2.6) while
  // winning the filter gradient from 32 channels (2.7 against 3.1 ms;
  // 128x7x7x64 0.68 against 1.22).
  if (bf16 && bwdFilter && (inputs < 32 || outputs < 32))
    return false;
  if (bf16 && !bwdFilter &&
      (inputs < 64 || outputs < 64 || y.shape[1] * y.shape[2] < 28 * 28))
    return false;
  return types && layouts && w.shape[0] == 3 && w.shape[1] == 3 &&
         call.strides == std::array<int64_t, 2>{1, 1} &&
         call.dilations == std::array<int64_t, 2>{1, 1} &&
         call.padding == std::array<int64_t, 4>{1, 1, 1, 1} &&
         inputs % 16 == 0 && outputs % 16 == 0 && inputs <= 128 &&
         outputs <= 128 && Winograd3x3::available();
}

static ActivationView activationView(uint8_t *arena, const TensorRef &t) {
  uint8_t *data = arena + t.offset;
  bool bf16 = t.dtype == DType::BF16;
  return t.layout == Layout::NChw16c
             ? ActivationView::nChw16c(data, bf16, t.shape[0], t.shape[1],
                                       t.shape[2], t.shape[3])
             : ActivationView::nhwc(data, bf16, t.shape[0], t.shape[1],
                                    t.shape[2], t.shape[3]);
}

Status Kernels::Impl::planFusedTileWinograd(const Call &call, CallPlan &plan) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdFilter = call.kind == CallKind::Conv2dBackwardFilter;
  const TensorRef &w = call.operand(bwdFilter ? "filter_grad" : "filter");
  // The convolution's input and output (or their gradients).
  const TensorRef &in = call.operand(fwd || bwdFilter ? "input" : "input_grad");
  const TensorRef &out = call.operand(fwd ? "output" : "output_grad");
  plan.macs = double(out.numElements()) * double(9 * in.shape[3]);
  plan.summary = fmt::format("in {} filter {} out {} stride 1x1 pad 1,1,1,1",
                             shapeString(in.shape), shapeString(w.shape),
                             shapeString(out.shape));
  Winograd3x3::Epilogue epilogue;
  if (call.hasOperand("bias")) {
    epilogue.bias =
        reinterpret_cast<const float *>(arena + call.operand("bias").offset);
    plan.summary += " + bias";
  }
  if (call.hasOperand("residual")) {
    epilogue.residual = arena + call.operand("residual").offset;
    plan.summary += " + residual";
  }
  epilogue.relu = fwd && call.relu;
  plan.summary += epilogue.relu ? ", relu" : "";
  if (call.hasOperand("statistics")) {
    epilogue.statistics =
        reinterpret_cast<float *>(arena + call.operand("statistics").offset);
    plan.summary += " + statistics";
    plan.takesStatistics = true;
  }

  Winograd3x3::Pass pass = fwd         ? Winograd3x3::Pass::Forward
                           : bwdFilter ? Winograd3x3::Pass::FilterGradient
                                       : Winograd3x3::Pass::InputGradient;
  // The input gradient runs from the output gradient to the input gradient.
  Winograd3x3 kernel = pass == Winograd3x3::Pass::InputGradient
                           ? Winograd3x3(out.shape[3], in.shape[3], pass)
                           : Winograd3x3(in.shape[3], out.shape[3], pass);
  int threads = omp_get_max_threads();
  scratchpadBytes = std::max(scratchpadBytes, kernel.workspaceBytes(threads));
  uint8_t *filter = arena + w.offset;
  bool filterBf16 = w.dtype == DType::BF16;
  ActivationView inView = activationView(arena, in);
  ActivationView outView = activationView(arena, out);
  Step s;
  if (pass == Winograd3x3::Pass::FilterGradient)
    s.custom = [this, kernel, inView, outView, filter, threads] {
      kernel.runFilterGradient(inView, outView,
                               reinterpret_cast<float *>(filter),
                               scratchpad.get(), threads);
    };
  else if (pass == Winograd3x3::Pass::Forward)
    s.custom = [this, kernel, inView, outView, filter, filterBf16, epilogue,
                threads] {
      kernel.run(filter, filterBf16, inView, outView, epilogue,
                 scratchpad.get(), threads);
    };
  else
    s.custom = [this, kernel, inView, outView, filter, filterBf16, threads] {
      kernel.run(filter, filterBf16, outView, inView, {}, scratchpad.get(),
                 threads);
    };
  plan.steps.push_back(std::move(s));
  plan.impl = kernel.streamsOutput(outView)
                  ? "kiln_wino_4x3:avx512 (fused tiles, streaming stores)"
                  : "kiln_wino_4x3:avx512 (fused tiles)";
  return Status::ok();
}

std::optional<ConvAlgorithm> parseConvAlgorithm(std::string_view name) {
  if (name == "auto")
    return ConvAlgorithm::Auto;
  if (name == "winograd")
    return ConvAlgorithm::Winograd;
  if (name == "direct")
    return ConvAlgorithm::Direct;
  if (name == "library")
    return ConvAlgorithm::Library;
  return std::nullopt;
}

bool isOlderBf16JitKernel(std::string_view impl) {
  return impl.substr(0, 8) == "jit_bf16";
}

Status Kernels::Impl::planConv(const Call &call, CallPlan &plan) {
  KILN_RETURN_IF_ERROR(planConvPasses(call, plan));
  // The fused-tile Winograd takes the statistics in its epilogue; after a
  // oneDNN convolution a pass over the output does.
  if (!call.hasOperand("statistics") || plan.takesStatistics)
    return Status::ok();
  const TensorRef &y = call.operand("output");
  int threads = omp_get_max_threads();
  scratchpadBytes = std::max(
      scratchpadBytes, channelStatisticsWorkspaceBytes(y.shape[3], threads));
  Step s;
  s.custom = [this, view = activationView(arena, y),
              statistics = reinterpret_cast<float *>(
                  arena + call.operand("statistics").offset),
              threads] {
    channelStatistics(view, statistics, scratchpad.get(), threads);
  };
  plan.steps.push_back(std::move(s));
  plan.summary += " + statistics";
  plan.impl += " (+ statistics pass)";
  return Status::ok();
}

Status Kernels::Impl::planConvPasses(const Call &call, CallPlan &plan) {
  if ((options.convAlgorithm == ConvAlgorithm::Auto ||
       options.convAlgorithm == ConvAlgorithm::Winograd) &&
      isFusedTileWinograd(call)) {
    // In bf16 the kernel was measured against oneDNN's AVX-512 kernels; its
    // AMX kernels, on CPUs that have them, are kept.
    CallPlan library;
    if (hasBf16Operand(call))
      KILN_RETURN_IF_ERROR(planConvWith(call, library,
                                        dnnl::algorithm::convolution_direct,
                                        /*kernelOnly=*/true));
    if (library.impl.find("amx") == std::string::npos)
      return planFusedTileWinograd(call, plan);
  }
  bool asMatmuls = isBf16FilterGradientAsMatmuls(call),
       asForward = isBf16BackwardDataAsForward(call);
  if (options.convAlgorithm == ConvAlgorithm::Auto &&
      (asMatmuls || asForward)) {
    // The runtime's forms replace oneDNN's older bf16 jit kernels only,
    // which its rules were measured against; a newer kernel oneDNN picks
    // instead (brgemm-based, or AMX on CPUs that have it) is kept.
    CallPlan library;
    KILN_RETURN_IF_ERROR(planConvWith(call, library,
                                      dnnl::algorithm::convolution_direct,
                                      /*kernelOnly=*/true));
    if (isOlderBf16JitKernel(library.impl))
      return asMatmuls ? planFilterGradientAsMatmuls(call, plan)
                       : planBackwardDataAsForward(call, plan);
  }
  const TensorRef &w = call.operand(
      call.kind == CallKind::Conv2dBackwardFilter ? "filter_grad" : "filter");
  bool eligible = options.convAlgorithm != ConvAlgorithm::Direct &&
                  w.dtype == DType::F32 && w.shape[0] == 3 && w.shape[1] == 3 &&
                  call.strides == std::array<int64_t, 2>{1, 1} &&
                  call.dilations == std::array<int64_t, 2>{1, 1};
  for (const auto &[name, t] : call.operands)
    eligible &= t.dtype == DType::F32;
  if (eligible) {
    // oneDNN refuses shapes and layouts its Winograd kernels do not cover
    // (NHWC, channels not a multiple of 16); those stay direct.
    try {
      CallPlan chosen;
      Status s = planConvWith(call, chosen,
                              options.convAlgorithm == ConvAlgorithm::Winograd
                                  ? dnnl::algorithm::convolution_winograd
                                  : dnnl::algorithm::convolution_auto);
      if (s.isOk()) {
        plan = std::move(chosen);
        return s;
      }
    } catch (const dnnl::error &) {
    }
  }
  return planConvWith(call, plan, dnnl::algorithm::convolution_direct);
}

Status Kernels::Impl::planConvWith(const Call &call, CallPlan &plan,
                                   dnnl::algorithm algorithm, bool kernelOnly) {
  bool fwd = call.kind == CallKind::Conv2dForward;
  bool bwdData = call.kind == CallKind::Conv2dBackwardData;
  const TensorRef &x = call.operand(fwd ? "input"
                                        : bwdData ? "input_grad" : "input");
  const TensorRef &w = call.operand(
      call.kind == CallKind::Conv2dBackwardFilter ? "filter_grad" : "filter");
  const TensorRef &y = call.operand(fwd ? "output" : "output_grad");
  Dims strides = {call.strides[0], call.strides[1]};
  // oneDNN counts dilation from 0 (no dilation), the manifest from 1.
  Dims dilates = {call.dilations[0] - 1, call.dilations[1] - 1};
  Dims padL = {call.padding[0], call.padding[2]};
  Dims padR = {call.padding[1], call.padding[3]};

  memory::desc xMd = activationDesc(x), yMd = activationDesc(y);
  memory::desc wUser = filterDesc(w);
  memory::desc wMd = options.blockedWeights ? anyFormat(wUser) : wUser;
  plan.macs = double(y.numElements()) * double(w.shape[0] * w.shape[1] *
                                                w.shape[2]);
  plan.summary = fmt::format("in {} filter {} out {} stride {}x{} pad {},{},{},{}",
                             shapeString(x.shape), shapeString(w.shape),
                             shapeString(y.shape), call.strides[0],
                             call.strides[1], call.padding[0], call.padding[1],
                             call.padding[2], call.padding[3]);

  // The forward descriptor is also the hint backward primitives need. Its
  // input and weights share a type, as in the forward pass the gradient
  // belongs to: a bf16 filter with an f32 input gradient (or a bf16 input
  // with an f32 filter gradient) came from an all-bf16 forward convolution.
  memory::desc xFwd = bwdData ? activationDesc(x, w.dtype) : xMd;
  memory::desc wFwd =
      call.kind == CallKind::Conv2dBackwardFilter
          ? memory::desc(wMd.dims(), toDnnl(x.dtype),
                         options.blockedWeights ? memory::format_tag::any
                                                : memory::format_tag::hwio)
          : wMd;
  dnnl::convolution_forward::desc fwdDesc(dnnl::prop_kind::forward_training,
                                          algorithm, xFwd, wFwd, yMd, strides,
                                          dilates, padL, padR);
  dnnl::convolution_forward::primitive_desc fwdPd(fwdDesc, attr, engine);

  if (fwd) {
    // A fused inference batch norm arrives as a bias; the residual is added
    // by a sum post-op, which reads the output buffer, and relu is an
    // eltwise post-op: both run on each output block while it is in cache.
    bool hasBias = call.hasOperand("bias");
    bool hasResidual = call.hasOperand("residual");
    memory::desc biasMd;
    if (hasBias || hasResidual || call.relu) {
      dnnl::post_ops postOps;
      if (hasResidual)
        postOps.append_sum(1.0f);
      if (call.relu)
        postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      dnnl::primitive_attr postAttr;
      postAttr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      postAttr.set_post_ops(postOps);
      if (hasBias) {
        biasMd = memory::desc({y.shape[3]}, memory::data_type::f32,
                              memory::format_tag::a);
        fwdDesc = dnnl::convolution_forward::desc(
            dnnl::prop_kind::forward_training, algorithm, xFwd, wFwd, biasMd,
            yMd, strides, dilates, padL, padR);
      }
      fwdPd =
          dnnl::convolution_forward::primitive_desc(fwdDesc, postAttr, engine);
      plan.summary += hasBias ? " + bias" : "";
      plan.summary += hasResidual ? " + residual" : "";
      plan.summary += call.relu ? ", relu" : "";
    }
    if (kernelOnly) {
      plan.impl = implName(fwdPd);
      return Status::ok();
    }
    // The sum post-op adds what the output holds: the residual, unless the
    // memory plan already put the output in the residual's place.
    if (hasResidual && call.operand("residual").offset != y.offset) {
      plan.steps.push_back(
          reorderStep(bind(activationDesc(call.operand("residual")),
                           call.operand("residual")),
                      bind(yMd, y)));
      plan.summary += " (copied)";
    }
    memory weights = bind(wUser, w);
    memory used = weights;
    if (fwdPd.weights_desc() != wUser) {
      used = stagingMemory(fwdPd.weights_desc());
      plan.steps.push_back(reorderStep(weights, used));
      plan.impl = " (+ reorder weights)";
    }
    Step s;
    s.primitive = dnnl::convolution_forward(fwdPd);
    s.args = {{DNNL_ARG_SRC, bind(xMd, x)},
              {DNNL_ARG_WEIGHTS, used},
              {DNNL_ARG_DST, bind(yMd, y)},
              {DNNL_ARG_SCRATCHPAD, scratchpadMemory(fwdPd.scratchpad_desc())}};
    if (hasBias)
      s.args[DNNL_ARG_BIAS] = bind(biasMd, call.operand("bias"));
    plan.steps.push_back(std::move(s));
    plan.impl = implName(fwdPd) + plan.impl;
    return Status::ok();
  }

  if (bwdData) {
    dnnl::convolution_backward_data::desc desc(algorithm, xMd, wMd, yMd,
                                               strides, dilates, padL, padR);
    dnnl::convolution_backward_data::primitive_desc pd(desc, attr, engine,
                                                       fwdPd);
    if (kernelOnly) {
      plan.impl = implName(pd);
      return Status::ok();
    }
    memory weights = bind(wUser, w);
    memory used = weights;
    if (pd.weights_desc() != wUser) {
      used = stagingMemory(pd.weights_desc());
      plan.steps.push_back(reorderStep(weights, used));
      plan.impl = " (+ reorder weights)";
    }
    Step s;
    s.primitive = dnnl::convolution_backward_data(pd);
    s.args = {{DNNL_ARG_DIFF_DST, bind(yMd, y)},
              {DNNL_ARG_WEIGHTS, used},
              {DNNL_ARG_DIFF_SRC, bind(xMd, x)},
              {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}};
    plan.steps.push_back(std::move(s));
    plan.impl = implName(pd) + plan.impl;
    return Status::ok();
  }

  dnnl::convolution_backward_weights::desc desc(algorithm, xMd, wMd, yMd,
                                                strides, dilates, padL, padR);
  dnnl::convolution_backward_weights::primitive_desc pd(desc, attr, engine,
                                                        fwdPd);
  if (kernelOnly) {
    plan.impl = implName(pd);
    return Status::ok();
  }
  addWeightGradientStep(
      plan, dnnl::convolution_backward_weights(pd),
      {{DNNL_ARG_SRC, bind(xMd, x)},
       {DNNL_ARG_DIFF_DST, bind(yMd, y)},
       {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}},
      pd.diff_weights_desc(), bind(wUser, w), implName(pd));
  return Status::ok();
}

Status Kernels::Impl::planMatmul(const Call &call, CallPlan &plan) {
  bool dense = call.kind == CallKind::Dense;
  const TensorRef &a = call.operand(dense ? "input" : "lhs");
  const TensorRef &b = call.operand(dense ? "weight" : "rhs");
  const TensorRef &c = call.operand("output");
  memory::desc aMd = matrixDesc(a, !dense && call.transposeLhs);
  memory::desc bMd = matrixDesc(b, !dense && call.transposeRhs);
  memory::desc cMd = matrixDesc(c, false);
  size_t r = c.shape.size();
  int64_t k = aMd.dims()[r - 1];
  plan.macs = double(c.numElements()) * double(k);
  plan.summary = fmt::format("{}{} x {}{} -> {}", shapeString(a.shape),
                             !dense && call.transposeLhs ? "^T" : "",
                             shapeString(b.shape),
                             !dense && call.transposeRhs ? "^T" : "",
                             shapeString(c.shape));
  Step s;
  s.args = {{DNNL_ARG_SRC, bind(aMd, a)},
            {DNNL_ARG_WEIGHTS, bind(bMd, b)},
            {DNNL_ARG_DST, bind(cMd, c)}};
  dnnl::matmul::primitive_desc pd;
  if (dense && call.hasOperand("bias")) {
    const TensorRef &bias = call.operand("bias");
    memory::desc biasMd({1, bias.shape[0]}, toDnnl(bias.dtype),
                        memory::format_tag::ab);
    pd = dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(aMd, bMd, biasMd, cMd), attr, engine);
    s.args[DNNL_ARG_BIAS] = bind(biasMd, bias);
    plan.summary += " + bias";
  } else {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(aMd, bMd, cMd), attr,
                                      engine);
  }
  s.args[DNNL_ARG_SCRATCHPAD] = scratchpadMemory(pd.scratchpad_desc());
  s.primitive = dnnl::matmul(pd);
  plan.impl = implName(pd);
  plan.steps.push_back(std::move(s));
  return Status::ok();
}

Status Kernels::Impl::planDenseBackwardWeights(const Call &call,
                                               CallPlan &plan) {
  const TensorRef &x = call.operand("input");
  const TensorRef &dy = call.operand("output_grad");
  const TensorRef &dw = call.operand("weight_grad");
  const TensorRef &db = call.operand("bias_grad");
  int64_t n = x.shape[0], k = x.shape[1], m = dy.shape[1];
  plan.macs = double(n) * double(k) * double(m);
  plan.summary = fmt::format("{}^T x {} -> {} + bias {}", shapeString(x.shape),
                             shapeString(dy.shape), shapeString(dw.shape),
                             shapeString(db.shape));
  // oneDNN's inner product has weights [out, in]; the manifest's weight
  // gradient is [in, out] row-major, i.e. that with the dims swapped (io).
  memory::desc xMd({n, k}, toDnnl(x.dtype), memory::format_tag::ab);
  memory::desc dyMd({n, m}, toDnnl(dy.dtype), memory::format_tag::ab);
  memory::desc dwUser({m, k}, toDnnl(dw.dtype), memory::format_tag::ba);
  memory::desc dbMd({m}, toDnnl(db.dtype), memory::format_tag::a);
  dnnl::inner_product_forward::primitive_desc hint(
      dnnl::inner_product_forward::desc(
          dnnl::prop_kind::forward_training, xMd,
          memory::desc({m, k}, toDnnl(x.dtype), memory::format_tag::any), dbMd,
          dyMd),
      attr, engine);
  dnnl::inner_product_backward_weights::primitive_desc pd(
      dnnl::inner_product_backward_weights::desc(xMd, anyFormat(dwUser), dbMd,
                                                 dyMd),
      attr, engine, hint);
  addWeightGradientStep(
      plan, dnnl::inner_product_backward_weights(pd),
      {{DNNL_ARG_SRC, bind(xMd, x)},
       {DNNL_ARG_DIFF_DST, bind(dyMd, dy)},
       {DNNL_ARG_DIFF_BIAS, bind(dbMd, db)},
       {DNNL_ARG_SCRATCHPAD, scratchpadMemory(pd.scratchpad_desc())}},
      pd.diff_weights_desc(), bind(dwUser, dw), implName(pd));
  return Status::ok();
}

Status Kernels::Impl::planReorder(const Call &call, CallPlan &plan) {
  const TensorRef &in = call.operand("input"), &out = call.operand("output");
  memory from = bind(activationDesc(in), in), to = bind(activationDesc(out), out);
  plan.summary = fmt::format("{} {} -> {}", shapeString(in.shape),
                             layoutName(in.layout), layoutName(out.layout));
  dnnl::reorder::primitive_desc pd(from, to);
  Step s;
  s.primitive = dnnl::reorder(pd);
  s.args = {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}};
  plan.steps.push_back(std::move(s));
  plan.impl = implName(pd);
  return Status::ok();
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
