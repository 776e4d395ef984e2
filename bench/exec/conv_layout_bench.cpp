//===- conv_layout_bench.cpp - NHWC against nChw16c activations -----------===//
//
// Times oneDNN's forward, backward-data and backward-weights convolutions on
// ResNet-50's layer shapes with NHWC activations (what Kiln's generated code
// and memory plan use today) and with oneDNN's blocked nChw16c, weights in
// the format each primitive prefers. This is the measurement a --kiln-layout
// pass would decide from (docs/performance.md). It also times the runtime's
// forms for bf16 on small images (kernel_*.cpp), over NHWC activations: for
// stride-1 layers larger than 1x1 the input gradient as a forward
// convolution on the flipped filter, and for every layer the weight
// gradient as matrix products, one per thread over its share of the batch
// (im2col^T x output_grad).
//
//   kiln-bench-conv-layout [--threads N] [--batch N] [--dtype f32|bf16]
//                          [--seconds S] [--model resnet50|fmnist]
//
//===----------------------------------------------------------------------===//

#include "kiln/rt/exec/gomp.h"

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

using namespace dnnl;
using Tag = memory::format_tag;

namespace {
struct Layer {
  int hw, cin, cout, k, stride;
};

// One of each distinct convolution shape of ResNet-50's training step.
const Layer kResNet50[] = {
    {56, 64, 64, 1, 1},     {56, 64, 64, 3, 1},     {56, 64, 256, 1, 1},
    {56, 256, 64, 1, 1},    {56, 256, 128, 1, 1},   {56, 128, 128, 3, 2},
    {28, 128, 512, 1, 1},   {56, 256, 512, 1, 2},   {28, 512, 128, 1, 1},
    {28, 128, 128, 3, 1},   {28, 512, 256, 1, 1},   {28, 256, 256, 3, 2},
    {14, 256, 1024, 1, 1},  {28, 512, 1024, 1, 2},  {14, 1024, 256, 1, 1},
    {14, 256, 256, 3, 1},   {14, 1024, 512, 1, 1},  {14, 512, 512, 3, 2},
    {7, 512, 2048, 1, 1},   {14, 1024, 2048, 1, 2}, {7, 2048, 512, 1, 1},
    {7, 512, 512, 3, 1}};

// The Fashion-MNIST ResNet-20's (28x28 input, 16/32/64 channels; the
// 1-channel stem stays NHWC).
const Layer kFmnist[] = {{28, 16, 16, 3, 1}, {28, 16, 32, 3, 2},
                         {14, 32, 32, 3, 1}, {28, 16, 32, 1, 2},
                         {14, 32, 64, 3, 2}, {7, 64, 64, 3, 1},
                         {14, 32, 64, 1, 2}};

template <typename Fn> double secondsPerCall(Fn fn, double budget) {
  fn(); // first call: JIT and page faults
  auto start = std::chrono::steady_clock::now();
  int calls = 0;
  double elapsed = 0;
  do {
    fn();
    ++calls;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                            start)
                  .count();
  } while (elapsed < budget);
  return elapsed / calls;
}

/// Forward, backward-data and backward-weights seconds per call.
std::vector<double> timeLayer(const Layer &l, int batch, memory::data_type dt,
                              Tag activations, double budget) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  int pad = l.k / 2;
  int out = (l.hw + 2 * pad - l.k) / l.stride + 1;
  memory::desc src({batch, l.cin, l.hw, l.hw}, dt, activations);
  memory::desc dst({batch, l.cout, out, out}, dt, activations);
  memory::desc weights({l.cout, l.cin, l.k, l.k}, dt, Tag::any);
  memory::dims strides = {l.stride, l.stride}, padding = {pad, pad};
  convolution_forward::primitive_desc fwd(
      convolution_forward::desc(prop_kind::forward_training,
                                algorithm::convolution_direct, src, weights,
                                dst, strides, padding, padding),
      eng);
  convolution_backward_data::primitive_desc bwdData(
      convolution_backward_data::desc(algorithm::convolution_direct, src,
                                      weights, dst, strides, padding, padding),
      eng, fwd);
  convolution_backward_weights::primitive_desc bwdWeights(
      convolution_backward_weights::desc(algorithm::convolution_direct, src,
                                         weights, dst, strides, padding,
                                         padding),
      eng, fwd);
  memory x(src, eng), y(dst, eng), w(fwd.weights_desc(), eng),
      wData(bwdData.weights_desc(), eng),
      dw(bwdWeights.diff_weights_desc(), eng);
  memory scratch1(fwd.scratchpad_desc(), eng),
      scratch2(bwdData.scratchpad_desc(), eng),
      scratch3(bwdWeights.scratchpad_desc(), eng);
  convolution_forward f(fwd);
  convolution_backward_data bd(bwdData);
  convolution_backward_weights bw(bwdWeights);
  auto timed = [&](dnnl::primitive &p, std::unordered_map<int, memory> args) {
    return secondsPerCall(
        [&] {
          p.execute(s, args);
          s.wait();
        },
        budget);
  };
  return {timed(f, {{DNNL_ARG_SRC, x},
                    {DNNL_ARG_WEIGHTS, w},
                    {DNNL_ARG_DST, y},
                    {DNNL_ARG_SCRATCHPAD, scratch1}}),
          timed(bd, {{DNNL_ARG_DIFF_DST, y},
                     {DNNL_ARG_WEIGHTS, wData},
                     {DNNL_ARG_DIFF_SRC, x},
                     {DNNL_ARG_SCRATCHPAD, scratch2}}),
          timed(bw, {{DNNL_ARG_SRC, x},
                     {DNNL_ARG_DIFF_DST, y},
                     {DNNL_ARG_DIFF_WEIGHTS, dw},
                     {DNNL_ARG_SCRATCHPAD, scratch3}})};
}
/// Seconds per call of the weight gradient as the runtime computes it for
/// bf16 on small images (kernel_filter_grad_matmuls.cpp): per thread, over
/// its share of the batch, im2col (unless the filter is a stride-1 1x1, whose
/// columns are the input itself), then one matmul [KH*KW*Cin, pixels] (read
/// transposed) x [pixels, Cout], planned for one thread; then the threads add
/// the partial gradients.
double timeFilterGradientMatmuls(const Layer &l, int batch, int threads,
                                 memory::data_type dt, double budget) {
  engine eng(engine::kind::cpu, 0);
  memory::dim pad = l.k / 2;
  memory::dim out = (l.hw + 2 * pad - l.k) / l.stride + 1;
  memory::dim columns = memory::dim(l.k) * l.k * l.cin;
  bool direct = l.k == 1 && l.stride == 1;
  memory::dim parts = std::min(batch, threads);
  size_t elementSize = dt == memory::data_type::bf16 ? 2 : 4;
  memory::desc c({columns, l.cout}, memory::data_type::f32, {l.cout, 1});
  memory input(memory::desc({batch, l.hw, l.hw, l.cin}, dt, Tag::abcd), eng);
  memory im2col(memory::desc({batch * out * out, columns}, dt, Tag::ab), eng);
  memory outputGrad(memory::desc({batch, out, out, l.cout}, dt, Tag::abcd),
                    eng);
  std::vector<std::vector<float>> sums(
      static_cast<size_t>(parts),
      std::vector<float>(static_cast<size_t>(columns * l.cout)));
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  struct Part {
    stream s;
    matmul product;
    std::unordered_map<int, memory> args;
    memory::dim first, images;
  };
  std::vector<Part> work;
  omp_set_num_threads(1);
  for (memory::dim p = 0; p < parts; ++p) {
    memory::dim first = batch * p / parts;
    memory::dim images = batch * (p + 1) / parts - first;
    memory::dim pixels = images * out * out;
    memory::desc a({columns, pixels}, dt, {1, columns});
    memory::desc b({pixels, l.cout}, dt, {l.cout, 1});
    matmul::primitive_desc pd(matmul::desc(a, b, c), attr, eng);
    char *columnsAt = direct ? static_cast<char *>(input.get_data_handle()) +
                                   first * l.hw * l.hw * l.cin * elementSize
                             : static_cast<char *>(im2col.get_data_handle()) +
                                   first * out * out * columns * elementSize;
    auto *gradAt = static_cast<char *>(outputGrad.get_data_handle()) +
                   first * out * out * l.cout * elementSize;
    Part part{stream(eng), matmul(pd), {}, first, images};
    part.args = {{DNNL_ARG_SRC, memory(a, eng, columnsAt)},
                 {DNNL_ARG_WEIGHTS, memory(b, eng, gradAt)},
                 {DNNL_ARG_DST, memory(c, eng, sums[size_t(p)].data())},
                 {DNNL_ARG_SCRATCHPAD, memory(pd.scratchpad_desc(), eng)}};
    work.push_back(std::move(part));
  }
  omp_set_num_threads(threads);
  struct Run {
    const Layer &l;
    std::vector<Part> &work;
    std::vector<std::vector<float>> &sums;
    const char *input;
    char *im2col;
    memory::dim out, pad;
    size_t elementSize;
    bool direct;
  } run{l,
        work,
        sums,
        static_cast<const char *>(input.get_data_handle()),
        static_cast<char *>(im2col.get_data_handle()),
        out,
        pad,
        elementSize,
        direct};
  auto onThread = [](void *data) {
    Run &r = *static_cast<Run *>(data);
    const Layer &l = r.l;
    size_t t = size_t(omp_get_thread_num()), n = size_t(omp_get_num_threads());
    size_t row = size_t(l.cin) * r.elementSize;
    for (size_t p = t; p < r.work.size(); p += n) {
      Part &part = r.work[p];
      char *to = r.im2col + part.first * r.out * r.out * l.k * l.k * row;
      for (memory::dim b = part.first;
           !r.direct && b < part.first + part.images; ++b)
        for (memory::dim i = 0; i < r.out; ++i)
          for (memory::dim j = 0; j < r.out; ++j)
            for (memory::dim y = i * l.stride - r.pad;
                 y < i * l.stride - r.pad + l.k; ++y)
              for (memory::dim x = j * l.stride - r.pad;
                   x < j * l.stride - r.pad + l.k; ++x, to += row) {
                if (y < 0 || y >= l.hw || x < 0 || x >= l.hw)
                  std::memset(to, 0, row);
                else
                  std::memcpy(to, r.input + ((b * l.hw + y) * l.hw + x) * row,
                              row);
              }
      part.product.execute(part.s, part.args);
    }
    GOMP_barrier();
    size_t size = r.sums[0].size();
    for (size_t u = 1; u < r.sums.size(); ++u)
      for (size_t i = size * t / n; i < size * (t + 1) / n; ++i)
        r.sums[0][i] += r.sums[u][i];
  };
  return secondsPerCall(
      [&] { GOMP_parallel(onThread, &run, unsigned(parts), 0); }, budget);
}

/// Seconds per call of a stride-1 input gradient as the runtime computes it
/// for bf16 on small images (kernel_data_grad_forward.cpp): a forward
/// convolution of the NHWC output gradient with the filter flipped in space
/// and its channel axes swapped, each tap reordered from the HWIO filter
/// into the primitive's weights first.
double timeBackwardDataAsForward(const Layer &l, int batch,
                                 memory::data_type dt, double budget) {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  memory::dim pad = l.k / 2, k = l.k;
  memory::desc dy({batch, l.cout, l.hw, l.hw}, dt, Tag::nhwc);
  memory::desc dx({batch, l.cin, l.hw, l.hw}, dt, Tag::nhwc);
  memory::desc flippedAny({l.cin, l.cout, k, k}, dt, Tag::any);
  memory::dims padding = {k - 1 - pad, k - 1 - pad};
  convolution_forward::primitive_desc pd(
      convolution_forward::desc(prop_kind::forward_training,
                                algorithm::convolution_direct, dy, flippedAny,
                                dx, {1, 1}, padding, padding),
      eng);
  memory hwio(memory::desc({l.cout, l.cin, k, k}, dt, Tag::hwio), eng);
  memory flipped(pd.weights_desc(), eng), outputGrad(dy, eng),
      inputGrad(dx, eng), scratch(pd.scratchpad_desc(), eng);
  memory::dim tapBytes =
      memory::dim(l.cin) * l.cout * (dt == memory::data_type::bf16 ? 2 : 4);
  memory::desc tap({l.cin, l.cout, 1, 1}, dt, {l.cout, 1, 1, 1});
  std::vector<memory> from, to;
  std::vector<reorder> taps;
  for (memory::dim a = 0; a < k; ++a)
    for (memory::dim b = 0; b < k; ++b) {
      from.emplace_back(tap, eng,
                        static_cast<char *>(hwio.get_data_handle()) +
                            ((k - 1 - a) * k + (k - 1 - b)) * tapBytes);
      to.emplace_back(
          pd.weights_desc().submemory_desc({l.cin, l.cout, 1, 1}, {0, 0, a, b}),
          eng, flipped.get_data_handle());
      taps.emplace_back(from.back(), to.back());
    }
  convolution_forward conv(pd);
  return secondsPerCall(
      [&] {
        for (size_t i = 0; i < taps.size(); ++i)
          taps[i].execute(s, from[i], to[i]);
        conv.execute(s, {{DNNL_ARG_SRC, outputGrad},
                         {DNNL_ARG_WEIGHTS, flipped},
                         {DNNL_ARG_DST, inputGrad},
                         {DNNL_ARG_SCRATCHPAD, scratch}});
        s.wait();
      },
      budget);
}
} // namespace

int main(int argc, char **argv) {
  int threads = 2, batch = 32;
  bool fmnist = false;
  double budget = 0.5;
  memory::data_type dt = memory::data_type::f32;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads")
      threads = std::atoi(next());
    else if (a == "--batch")
      batch = std::atoi(next());
    else if (a == "--seconds")
      budget = std::atof(next());
    else if (a == "--model") {
      std::string model = next();
      if (model != "resnet50" && model != "fmnist") {
        std::fprintf(stderr, "--model expects resnet50 or fmnist, got '%s'\n",
                     model.c_str());
        return 2;
      }
      fmnist = model == "fmnist";
    } else if (a == "--dtype") {
      std::string dtype = next();
      if (dtype != "f32" && dtype != "bf16") {
        std::fprintf(stderr, "--dtype expects f32 or bf16, got '%s'\n",
                     dtype.c_str());
        return 2;
      }
      dt = dtype == "bf16" ? memory::data_type::bf16 : memory::data_type::f32;
    } else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  omp_set_num_threads(threads);
  std::printf("%-24s %27s %27s %21s  (ms per call: fwd / bwd-data / "
              "bwd-weights; the runtime's bf16 forms: bwd-data of stride-1 "
              "layers as a forward convolution on the flipped filter, "
              "bwd-weights as im2col and a matmul per thread, NHWC)\n",
              "layer (hw cin->cout kxk/s)", "NHWC", "nChw16c", "runtime's");
  double total[2][3] = {};
  std::vector<Layer> layers(std::begin(kResNet50), std::end(kResNet50));
  if (fmnist)
    layers.assign(std::begin(kFmnist), std::end(kFmnist));
  for (const Layer &l : layers) {
    std::vector<double> t[2] = {timeLayer(l, batch, dt, Tag::nhwc, budget),
                                timeLayer(l, batch, dt, Tag::nChw16c, budget)};
    for (int layout = 0; layout < 2; ++layout)
      for (int p = 0; p < 3; ++p)
        total[layout][p] += t[layout][p];
    std::printf(
        "%3d %4d->%-4d %dx%d/%d      %8.1f %8.1f %8.1f  %8.1f %8.1f %8.1f",
        l.hw, l.cin, l.cout, l.k, l.k, l.stride, t[0][0] * 1e3, t[0][1] * 1e3,
        t[0][2] * 1e3, t[1][0] * 1e3, t[1][1] * 1e3, t[1][2] * 1e3);
    if (l.k > 1 && l.stride == 1)
      std::printf(" %10.1f",
                  timeBackwardDataAsForward(l, batch, dt, budget) * 1e3);
    else
      std::printf(" %10s", "-");
    std::printf(" %10.1f",
                timeFilterGradientMatmuls(l, batch, threads, dt, budget) * 1e3);
    std::printf("\n");
  }
  std::printf("%-24s %8.1f %8.1f %8.1f  %8.1f %8.1f %8.1f\n", "sum of shapes",
              total[0][0] * 1e3, total[0][1] * 1e3, total[0][2] * 1e3,
              total[1][0] * 1e3, total[1][1] * 1e3, total[1][2] * 1e3);
  return 0;
}
