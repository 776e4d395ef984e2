//===- conv_bench.cpp - Convolution throughput through the runtime's calls -===//
//
// Builds a manifest with a convolution layer's three calls (forward, backward
// data, backward filter), runs them through the runtime's Kernels exactly as
// a compiled step does (kiln_rt_kernel_call -> Kernels::execute), and prints
// milliseconds and GFLOP/s per call.
//
//   kiln-bench-exec-conv [--batch 32] [--hw 56] [--cin 64] [--cout 64]
//       [--k 3] [--stride 1] [--threads 2] [--dtype f32|bf16]
//       [--weights blocked|hwio] [--layout nhwc|nChw16c]
//       [--conv-algorithm auto|winograd|direct|library] [--cold]
//       [--seconds 3]
//   kiln-bench-exec-conv --resnet50 [--batch 16] [--threads 2] [--dtype ...]
//
// Default: the ResNet-50 layer of TOOLCHAIN.md (N=32 56x56x64 -> 64, 3x3).
// --conv-algorithm is the executable's flag (docs/runtime.md); `library`
// against `auto` measures the runtime's own kernels against oneDNN's
// choice. --cold evicts the caches (a 96 MiB sweep) before every timed
// call, as a training step's calls mostly find their operands in memory
// rather than cache; the calls are then timed one by one, sweeps left out.
// Each call's time is also given in CPU time (the process's, all threads),
// which on a machine shared with other work says more than the wall clock:
// a call descheduled half the time takes twice as long but no more CPU.
// --resnet50 runs every distinct convolution of ResNet-50 v1.5 (224x224
// input, TF fixed padding) once per call after a warm-up and sums the time
// of one training step's convolutions (forward and backward filter of all 53,
// backward data of all but the stem).
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/arena.h"
#include "kiln/rt/exec/kernels.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

using namespace kiln::rt::exec;
using kiln::DType;

namespace {

struct Layer {
  int64_t hw, cin, cout, k, stride;
  int count = 1;        // occurrences in the network
  bool backwardData = true;
};

struct Settings {
  int64_t batch = 32;
  DType dtype = DType::F32;
  bool blocked = true;
  Layout layout = Layout::Nhwc;
  ConvAlgorithm algorithm = ConvAlgorithm::Auto;
  bool cold = false;
  double seconds = 3;
};

/// Writes to every cache line of a buffer larger than the caches.
void evictCaches() {
  static std::vector<uint8_t> sweep(size_t(96) << 20);
  for (size_t i = 0; i < sweep.size(); i += 64)
    ++sweep[i];
}

/// Seconds of CPU time the process (all its threads) has used.
double cpuSeconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// Milliseconds per call (forward, backward data, backward filter), by the
/// wall clock and in CPU time, and the implementation names; an error
/// message instead if creation fails.
struct Result {
  std::array<double, 3> ms{}, cpuMs{};
  std::array<double, 3> flop{};
  std::array<std::string, 3> impl;
  std::string error;
};

Result benchLayer(const Layer &layer, const Settings &s, double secondsPerCall) {
  Result result;
  Manifest m;
  // TF fixed padding: (k-1)/2 before, the rest after.
  int64_t before = (layer.k - 1) / 2, after = layer.k - 1 - before;
  int64_t out = (layer.hw + before + after - layer.k) / layer.stride + 1;
  int64_t offset = 0;
  auto place = [&](std::vector<int64_t> shape,
                   std::optional<DType> dtype = std::nullopt) {
    TensorRef t;
    t.offset = offset;
    t.shape = std::move(shape);
    t.dtype = dtype.value_or(s.dtype);
    t.layout = t.shape[0] == s.batch ? s.layout : Layout::None;
    offset += (t.byteSize() + 4095) / 4096 * 4096;
    return t;
  };
  TensorRef x = place({s.batch, layer.hw, layer.hw, layer.cin});
  TensorRef w = place({layer.k, layer.k, layer.cin, layer.cout});
  TensorRef y = place({s.batch, out, out, layer.cout});
  TensorRef dx = place({s.batch, layer.hw, layer.hw, layer.cin});
  // The filter gradient is f32 in a bf16 step too (the master weights').
  TensorRef dw = place({layer.k, layer.k, layer.cin, layer.cout}, DType::F32);
  TensorRef dy = place({s.batch, out, out, layer.cout});
  m.arenaBytes = offset;
  Call c;
  c.strides = {layer.stride, layer.stride};
  c.padding = {before, after, before, after};
  c.kind = CallKind::Conv2dForward;
  c.operands = {{"input", x}, {"filter", w}, {"output", y}};
  m.calls.push_back(c);
  c.kind = CallKind::Conv2dBackwardData;
  c.operands = {{"output_grad", dy}, {"filter", w}, {"input_grad", dx}};
  m.calls.push_back(c);
  c.kind = CallKind::Conv2dBackwardFilter;
  c.operands = {{"input", x}, {"output_grad", dy}, {"filter_grad", dw}};
  m.calls.push_back(c);

  auto arena = Arena::allocate(m.arenaBytes);
  if (!arena.isOk()) {
    result.error = arena.status().toString();
    return result;
  }
  // Small non-zero values everywhere (1.0 in bf16's upper half of each
  // f32): zero pages could take shortcuts, denormals would be slow.
  uint8_t *a = (*arena)->data();
  for (int64_t i = 0; i < m.arenaBytes; i += 2)
    a[i] = 0x80, a[i + 1] = 0x3f;
  KernelOptions options;
  options.blockedWeights = s.blocked;
  options.convAlgorithm = s.algorithm;
  auto kernels = Kernels::create(m, a, options);
  if (!kernels.isOk()) {
    result.error = kernels.status().toString();
    return result;
  }
  for (int32_t id = 0; id < 3; ++id) {
    if (id == 1 && !layer.backwardData)
      continue;
    (*kernels)->execute(id); // warm-up: first touch of pages, JIT caches
    int iters = 0;
    double elapsed = 0, cpu = 0;
    while (elapsed < secondsPerCall || iters < 1) {
      if (s.cold)
        evictCaches();
      double cpuStart = cpuSeconds();
      auto start = std::chrono::steady_clock::now();
      (*kernels)->execute(id);
      ++iters;
      elapsed += std::chrono::duration<double>(
                     std::chrono::steady_clock::now() - start)
                     .count();
      cpu += cpuSeconds() - cpuStart;
    }
    result.ms[id] = 1e3 * elapsed / iters;
    result.cpuMs[id] = 1e3 * cpu / iters;
    result.flop[id] = 2 * (*kernels)->multiplyAdds(id);
    result.impl[id] = (*kernels)->implementation(id);
  }
  return result;
}

std::vector<Layer> resnet50() {
  std::vector<Layer> layers = {{224, 3, 64, 7, 2, 1, false}};
  struct Stage {
    int64_t hw, width, blocks;
  };
  const Stage stages[] = {{56, 64, 3}, {56, 128, 4}, {28, 256, 6}, {14, 512, 3}};
  int64_t in = 64;
  for (const Stage &st : stages) {
    int64_t out = 4 * st.width, stride = st.width == 64 ? 1 : 2;
    int64_t hwOut = st.hw / stride;
    // First block: 1x1 reduce at the input size, strided 3x3 (v1.5), 1x1
    // expand, strided projection.
    layers.push_back({st.hw, in, st.width, 1, 1});
    layers.push_back({st.hw, st.width, st.width, 3, stride});
    layers.push_back({hwOut, st.width, out, 1, 1});
    layers.push_back({st.hw, in, out, 1, stride});
    int rest = static_cast<int>(st.blocks - 1);
    layers.push_back({hwOut, out, st.width, 1, 1, rest});
    layers.push_back({hwOut, st.width, st.width, 3, 1, rest});
    layers.push_back({hwOut, st.width, out, 1, 1, rest});
    in = out;
  }
  return layers;
}

} // namespace

int main(int argc, char **argv) {
  Settings s;
  Layer layer{56, 64, 64, 3, 1};
  int threads = 2;
  bool net = false;
  bool batchSet = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        fmt::print(stderr, "{} needs a value\n", a);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--batch") s.batch = std::atoll(next()), batchSet = true;
    else if (a == "--hw") layer.hw = std::atoll(next());
    else if (a == "--cin") layer.cin = std::atoll(next());
    else if (a == "--cout") layer.cout = std::atoll(next());
    else if (a == "--k") layer.k = std::atoll(next());
    else if (a == "--stride") layer.stride = std::atoll(next());
    else if (a == "--threads") threads = std::atoi(next());
    else if (a == "--seconds") s.seconds = std::atof(next());
    else if (a == "--dtype") s.dtype = std::strcmp(next(), "bf16") == 0 ? DType::BF16 : DType::F32;
    else if (a == "--weights") s.blocked = std::strcmp(next(), "hwio") != 0;
    else if (a == "--layout") {
      std::string v = next();
      if (v != "nhwc" && v != "nChw16c") {
        fmt::print(stderr, "--layout expects nhwc or nChw16c\n");
        return 2;
      }
      s.layout = v == "nhwc" ? Layout::Nhwc : Layout::NChw16c;
    } else if (a == "--conv-algorithm") {
      std::optional<ConvAlgorithm> algorithm = parseConvAlgorithm(next());
      if (algorithm)
        s.algorithm = *algorithm;
      else {
        fmt::print(
            stderr,
            "--conv-algorithm expects auto, winograd, direct or library\n");
        return 2;
      }
    } else if (a == "--cold")
      s.cold = true;
    else if (a == "--resnet50") net = true;
    else {
      fmt::print(stderr, "unknown flag {}\n", a);
      return 2;
    }
  }
  kiln::Status st = setComputeThreads(threads);
  if (!st.isOk()) {
    fmt::print(stderr, "{}\n", st.toString());
    return 1;
  }
  const char *names[] = {"forward", "backward_data", "backward_filter"};

  if (!net) {
    fmt::print("conv N={} {}x{}x{} -> {} {}x{}/{} {} {} weights={} "
               "threads={}{}\n",
               s.batch, layer.hw, layer.hw, layer.cin, layer.cout, layer.k,
               layer.k, layer.stride, dtypeInfo(s.dtype).name, layoutName(s.layout),
               s.blocked ? "blocked" : "hwio", threads, s.cold ? " cold" : "");
    Result r = benchLayer(layer, s, s.seconds / 3);
    if (!r.error.empty()) {
      fmt::print(stderr, "{}\n", r.error);
      return 1;
    }
    for (int id = 0; id < 3; ++id)
      fmt::print("  {:<16} {:8.2f} ms  {:8.2f} ms cpu  {:7.1f} GFLOP/s  {}\n",
                 names[id], r.ms[id], r.cpuMs[id],
                 r.flop[id] / r.ms[id] / 1e6, r.impl[id]);
    return 0;
  }

  if (!batchSet)
    s.batch = 16;
  fmt::print("ResNet-50 v1.5 convolutions, N={} {} weights={} threads={}\n",
             s.batch, dtypeInfo(s.dtype).name, s.blocked ? "blocked" : "hwio",
             threads);
  fmt::print("  {:>4} {:>5} {:>5} {:>3} {:>2} {:>3} {:>9} {:>9} {:>9}  GFLOP/s "
             "fwd/bwd-d/bwd-f\n",
             "hw", "cin", "cout", "k", "s", "x", "fwd ms", "bwd-d ms",
             "bwd-f ms");
  double totalMs = 0, totalFlop = 0;
  for (const Layer &l : resnet50()) {
    Result r = benchLayer(l, s, s.seconds / 10);
    if (!r.error.empty()) {
      fmt::print(stderr, "{}\n", r.error);
      return 1;
    }
    fmt::print("  {:>4} {:>5} {:>5} {:>3} {:>2} {:>3} {:9.2f} {:9.2f} {:9.2f}  "
               "{:.0f}/{:.0f}/{:.0f}\n",
               l.hw, l.cin, l.cout, l.k, l.stride, l.count, r.ms[0], r.ms[1],
               r.ms[2], r.flop[0] / r.ms[0] / 1e6,
               r.ms[1] > 0 ? r.flop[1] / r.ms[1] / 1e6 : 0.0,
               r.flop[2] / r.ms[2] / 1e6);
    for (int id = 0; id < 3; ++id) {
      totalMs += l.count * r.ms[id];
      totalFlop += r.ms[id] > 0 ? l.count * r.flop[id] : 0;
    }
  }
  fmt::print("one training step's convolutions: {:.1f} ms for {} images, "
             "{:.1f} GFLOP at {:.1f} GFLOP/s -> at most {:.2f} img/s\n",
             totalMs, s.batch, totalFlop / 1e9, totalFlop / totalMs / 1e6,
             1e3 * double(s.batch) / totalMs);
  return 0;
}
