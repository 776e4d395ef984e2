//===- bench_data.cpp - Input pipeline throughput benchmark ---------------===//
//
// kiln-bench-data [--images N] [--seconds S] [--workers W] [--batch B]
//                 [--steps K] [--dtype f32|bf16]
//
// 1. Per-core transform throughput on ImageNet-sized photo-like JPEGs
//    (~500x375, quality 90, 4:2:0, synthesized at start: smooth gradients,
//    edges and noise): parse + decode + random-resized crop + flip + resize
//    to 224 + normalize + store, one thread, crop-only decoding versus
//    decoding the whole image; plus the eval path (center crop).
// 2. The whole pipeline (reader, W workers, prefetch) with a consumer that
//    is slower than the pipeline: the share of step time spent waiting for
//    data (should be ~0), and the pipeline's peak rate with a consumer that
//    does nothing.
//
//===----------------------------------------------------------------------===//
#include "kiln/rt/abi.h"
#include "kiln/rt/example.h"
#include "kiln/rt/files.h"
#include "kiln/rt/output.h"
#include "kiln/rt/random.h"
#include "kiln/rt/tfrecord.h"
#include "kiln/rt/transform.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <turbojpeg.h>
#include <unistd.h>
#include <vector>

using namespace kiln::rt;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
  int images = 48;
  double seconds = 3.0;
  unsigned workers = 2;
  unsigned batch = 32;
  unsigned steps = 40;
  kiln_rt_dtype_t dtype = KILN_RT_DTYPE_F32;
};

double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// A photo-like image: a few overlapping smooth blobs, a hard edge, texture
/// and sensor-like noise, so the JPEG has realistic entropy (~0.1 MB).
std::vector<uint8_t> synthesizePhoto(int w, int h, uint64_t seed) {
  Rng rng(seed);
  struct Blob {
    double x, y, r, c[3];
  };
  std::vector<Blob> blobs(6);
  for (auto &b : blobs) {
    b.x = rng.uniform(0, w);
    b.y = rng.uniform(0, h);
    b.r = rng.uniform(0.1, 0.5) * w;
    for (double &c : b.c)
      c = rng.uniform(-120, 120);
  }
  double base[3] = {rng.uniform(60, 190), rng.uniform(60, 190),
                    rng.uniform(60, 190)};
  double edgeA = rng.uniform(-1, 1), edgeB = rng.uniform(0, h);
  std::vector<uint8_t> px(size_t(w) * h * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      bool side = y > edgeA * x + edgeB;
      double texture = 18 * std::sin(0.31 * x + 0.17 * y) * std::sin(0.07 * x) +
                       10 * std::sin(0.9 * x) * std::cos(0.8 * y);
      for (int c = 0; c < 3; ++c) {
        double v = base[c] + (side ? 25 : -25) + texture;
        for (const auto &b : blobs) {
          double dx = x - b.x, dy = y - b.y;
          v += b.c[c] * std::exp(-(dx * dx + dy * dy) / (b.r * b.r));
        }
        v += double(rng.below(61)) - 30; // noise
        px[(size_t(y) * w + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0, 255.0));
      }
    }
  return px;
}

std::string encodeJpeg(const std::vector<uint8_t> &px, int w, int h) {
  tjhandle tj = tjInitCompress();
  unsigned char *buf = nullptr;
  unsigned long size = 0;
  if (tjCompress2(tj, px.data(), w, 0, h, TJPF_RGB, &buf, &size, TJSAMP_420, 90,
                  0) != 0) {
    std::fprintf(stderr, "tjCompress2: %s\n", tjGetErrorStr2(tj));
    std::exit(1);
  }
  std::string out(reinterpret_cast<char *>(buf), size);
  tjFree(buf);
  tjDestroy(tj);
  return out;
}

/// One thread pushing records through ExampleTransform + writeExample.
double transformRate(const std::vector<std::string> &records,
                     kiln_rt_dataset_config_t config, double seconds) {
  TransformOptions t = TransformOptions::fromConfig(config);
  ExampleTransform transform(t);
  OutputFormat f;
  f.dtype = config.dtype;
  f.height = t.height;
  f.width = t.width;
  f.channels = t.channels;
  for (int k = 0; k < 3; ++k) {
    f.mean[k] = config.mean[k];
    f.invStd[k] = 1 / config.std[k];
  }
  std::vector<float> hwc(size_t(t.height) * t.width * t.channels);
  std::vector<char> out(f.exampleBytes());
  auto t0 = Clock::now();
  size_t n = 0;
  int32_t label;
  while (since(t0) < seconds || n < records.size()) {
    kiln::Status s = transform.apply(records[n % records.size()],
                                     hashCombine(7, n), hwc.data(), label);
    if (!s.isOk()) {
      std::fprintf(stderr, "transform failed: %s\n", s.toString().c_str());
      std::exit(1);
    }
    writeExample(hwc.data(), f, out.data(), 0);
    ++n;
  }
  return n / since(t0);
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--images")
      o.images = std::atoi(next());
    else if (a == "--seconds")
      o.seconds = std::atof(next());
    else if (a == "--workers")
      o.workers = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--batch")
      o.batch = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--steps")
      o.steps = static_cast<unsigned>(std::atoi(next()));
    else if (a == "--dtype")
      o.dtype = std::string(next()) == "bf16" ? KILN_RT_DTYPE_BF16
                                              : KILN_RT_DTYPE_F32;
    else {
      std::fprintf(
          stderr, "usage: kiln-bench-data [--images N] [--seconds S] "
                  "[--workers W] [--batch B] [--steps K] [--dtype f32|bf16]\n");
      return 2;
    }
  }
  if (o.images < 1 || o.workers < 1 || o.batch < 1 || o.steps < 1) {
    std::fprintf(stderr, "all counts must be positive\n");
    return 2;
  }

  // --- Synthesize the data set ----------------------------------------------
  auto t0 = Clock::now();
  std::vector<std::string> records;
  size_t jpegBytes = 0;
  Rng sizes(1);
  for (int i = 0; i < o.images; ++i) {
    // Mostly landscape around 500x375, some portrait, as in ImageNet.
    int w = 500 + int(sizes.below(41)) - 20,
        h = 375 + int(sizes.below(31)) - 15;
    if (i % 4 == 3)
      std::swap(w, h);
    std::string jpeg = encodeJpeg(synthesizePhoto(w, h, 100 + i), w, h);
    jpegBytes += jpeg.size();
    records.push_back(ExampleBuilder()
                          .addInt64(keys::kHeight, h)
                          .addInt64(keys::kWidth, w)
                          .addInt64(keys::kLabel, 1 + i % 1000)
                          .addBytes(keys::kFormat, "JPEG")
                          .addBytes(keys::kEncoded, jpeg)
                          .build());
  }
  std::printf("data: %d synthetic JPEGs, ~500x375, quality 90, 4:2:0, "
              "mean %.1f KB (made in %.1f s)\n",
              o.images, jpegBytes / 1e3 / o.images, since(t0));

  kiln_rt_dataset_config_t config;
  kiln_rt_dataset_config_init(&config);
  config.dtype = o.dtype;

  // --- 1. Per-core transform throughput ------------------------------------
  std::printf("\nper-core transform (decode + crop + flip + resize 224 + "
              "normalize + store %s NHWC), 1 thread:\n",
              o.dtype == KILN_RT_DTYPE_BF16 ? "bf16" : "fp32");
  config.full_decode = 0;
  double cropOnly = transformRate(records, config, o.seconds);
  config.full_decode = 1;
  double full = transformRate(records, config, o.seconds);
  config.full_decode = 0;
  config.augment = KILN_RT_AUGMENT_CENTER_CROP;
  double eval = transformRate(records, config, o.seconds);
  config.augment = KILN_RT_AUGMENT_RANDOM_RESIZED_CROP;
  std::printf("  train, crop-only decode : %7.1f images/s\n", cropOnly);
  std::printf("  train, full decode      : %7.1f images/s  (crop-only is "
              "%.2fx)\n",
              full, cropOnly / full);
  std::printf("  eval, center crop       : %7.1f images/s\n", eval);

  // --- 2. The pipeline against a slower consumer ---------------------------
  char tmpl[] = "/tmp/kiln-bench-data-XXXXXX";
  if (!::mkdtemp(tmpl)) {
    std::perror("mkdtemp");
    return 1;
  }
  std::string dir = tmpl;
  const int shards = 4;
  for (int s = 0; s < shards; ++s) {
    auto writer =
        RecordWriter::create(dir + "/" + shardName("train", s, shards));
    if (!writer.isOk()) {
      std::fprintf(stderr, "%s\n", writer.status().toString().c_str());
      return 1;
    }
    for (size_t i = s; i < records.size(); i += shards)
      if (!(*writer)->write(records[i]).isOk())
        return 1;
    if (!(*writer)->close().isOk())
      return 1;
  }
  config.path = dir.c_str();
  config.batch_size = o.batch;
  config.num_workers = o.workers;
  config.prefetch_batches = 4;
  config.num_epochs = 0; // repeat
  config.shuffle_buffer = 256;

  auto runPipeline = [&](double stepSeconds, double &imagesPerSec,
                         double &waitShare) {
    kiln_rt_dataset_t *ds = nullptr;
    kiln_rt_status_t st = kiln_rt_dataset_open(&config, &ds);
    if (st) {
      std::fprintf(stderr, "open: %s\n", kiln_rt_status_message(st));
      std::exit(1);
    }
    kiln_rt_batch_t batch;
    // Warm-up: thread start and the first fill of the prefetch slots, as in
    // the first steps of training.
    for (unsigned i = 0; i < config.prefetch_batches + 2; ++i) {
      if ((st = kiln_rt_dataset_next_batch(ds, &batch))) {
        std::fprintf(stderr, "next_batch: %s\n", kiln_rt_status_message(st));
        std::exit(1);
      }
      if (stepSeconds > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(stepSeconds));
    }
    kiln_rt_dataset_stats_t before;
    kiln_rt_dataset_get_stats(ds, &before);
    auto start = Clock::now();
    for (unsigned k = 0; k < o.steps; ++k) {
      if ((st = kiln_rt_dataset_next_batch(ds, &batch))) {
        std::fprintf(stderr, "next_batch: %s\n", kiln_rt_status_message(st));
        std::exit(1);
      }
      if (stepSeconds > 0) // the "training step": sleeps, leaving the cores
        std::this_thread::sleep_for(std::chrono::duration<double>(stepSeconds));
    }
    double elapsed = since(start);
    kiln_rt_dataset_stats_t after;
    kiln_rt_dataset_get_stats(ds, &after);
    kiln_rt_dataset_close(ds);
    imagesPerSec = o.steps * o.batch / elapsed;
    waitShare = (after.wait_ns - before.wait_ns) / 1e9 / elapsed;
  };

  double peak, peakWait;
  runPipeline(0, peak, peakWait);
  // A consumer at 2/3 of the pipeline's peak rate.
  double step = o.batch / (peak * 2.0 / 3.0);
  double slowRate, slowWait;
  runPipeline(step, slowRate, slowWait);
  std::printf("\npipeline (%u workers, batch %u, prefetch 4, %u steps):\n",
              o.workers, o.batch, o.steps);
  std::printf("  consumer doing nothing : %7.1f images/s (peak rate; the "
              "consumer only waits, %.0f%%)\n",
              peak, 100 * peakWait);
  std::printf("  consumer step %.0f ms   : %7.1f images/s, waits %.2f%% of "
              "step time for data\n",
              step * 1e3, slowRate, 100 * slowWait);
  std::string cmd = "rm -rf '" + dir + "'";
  if (std::system(cmd.c_str()) != 0)
    std::fprintf(stderr, "could not remove %s\n", dir.c_str());
  return 0;
}
