//===- input_synthetic.cpp - Deterministic random batches -----------------===//

#include "kiln/rt/exec/input.h"

#include "kiln/ref/synthetic.h"
#include "kiln/rt/exec/variables.h"

#include <cstring>

namespace kiln::rt::exec {

void storeImages(const float *nhwc, const TensorRef &slot, uint8_t *arena) {
  uint8_t *dst = arena + slot.offset;
  const int64_t n = slot.shape[0], h = slot.shape[1], w = slot.shape[2],
                c = slot.shape[3];
  if (slot.isRowMajor()) {
    if (slot.dtype == DType::F32) {
      std::memcpy(dst, nhwc, static_cast<size_t>(slot.byteSize()));
      return;
    }
    for (int64_t i = 0, e = slot.numElements(); i < e; ++i)
      storeElement(dst, slot.dtype, i, nhwc[i]);
    return;
  }
  const int64_t blocks = (c + 15) / 16;
  if (slot.layout == Layout::NChw16c) // padding channels must read as zero
    std::memset(dst, 0, static_cast<size_t>(slot.byteSize()));
  for (int64_t in = 0; in < n; ++in)
    for (int64_t ih = 0; ih < h; ++ih)
      for (int64_t iw = 0; iw < w; ++iw)
        for (int64_t ic = 0; ic < c; ++ic) {
          int64_t physical =
              slot.layout == Layout::Nchw
                  ? ((in * c + ic) * h + ih) * w + iw
                  : (((in * blocks + ic / 16) * h + ih) * w + iw) * 16 +
                        ic % 16;
          storeElement(dst, slot.dtype, physical,
                       nhwc[((in * h + ih) * w + iw) * c + ic]);
        }
}

namespace {

class SyntheticInput final : public InputSource {
public:
  SyntheticInput(const Function &function, int rank, uint64_t seed,
                 int64_t count)
      : images(*function.input("images")), labels(*function.input("labels")) {
    const TensorRef &logits = *function.output("logits");
    auto classes = static_cast<uint64_t>(logits.shape[1]);
    int64_t numImages = images.numElements();
    int64_t numLabels = labels.numElements();
    for (int64_t b = 0; b < count; ++b) {
      // A synthetic global batch is one stream split over the ranks: rank r
      // holds its r-th slice, so R ranks x batch B see exactly the data of
      // one rank x batch R*B. Rank 0's first batch is kiln-run's
      // --synthetic-inputs batch (the images are the step function's first
      // argument, the labels its second).
      ref::SyntheticArgument imageStream(
          seed, ref::SyntheticArgument::argumentName(0), b);
      ref::SyntheticArgument labelStream(
          seed, ref::SyntheticArgument::argumentName(1), b);
      auto imageBase = static_cast<uint64_t>(rank * numImages);
      auto labelBase = static_cast<uint64_t>(rank * numLabels);
      std::vector<float> pixels(static_cast<size_t>(numImages));
      for (int64_t i = 0; i < numImages; ++i)
        pixels[static_cast<size_t>(i)] =
            imageStream.value(imageBase + static_cast<uint64_t>(i));
      std::vector<uint8_t> stored(static_cast<size_t>(images.byteSize()));
      // storeImages writes at slot.offset; stage through a slot at 0.
      TensorRef at0 = images;
      at0.offset = 0;
      storeImages(pixels.data(), at0, stored.data());
      imageBatches.push_back(std::move(stored));
      std::vector<int32_t> l(static_cast<size_t>(numLabels));
      for (int64_t i = 0; i < numLabels; ++i)
        l[static_cast<size_t>(i)] = static_cast<int32_t>(
            labelStream.label(labelBase + static_cast<uint64_t>(i), classes));
      labelBatches.push_back(std::move(l));
    }
  }

  Status fill(int64_t step, uint8_t *arena) override {
    size_t b = static_cast<size_t>(step) % imageBatches.size();
    std::memcpy(arena + images.offset, imageBatches[b].data(),
                imageBatches[b].size());
    std::memcpy(arena + labels.offset, labelBatches[b].data(),
                labelBatches[b].size() * sizeof(int32_t));
    return Status::ok();
  }

  int64_t stepsPerEpoch() const override { return 0; }

private:
  TensorRef images, labels;
  std::vector<std::vector<uint8_t>> imageBatches;
  std::vector<std::vector<int32_t>> labelBatches;
};

} // namespace

std::unique_ptr<InputSource> openSyntheticInput(const Function &function,
                                                int rank, uint64_t seed,
                                                int64_t batches) {
  return std::make_unique<SyntheticInput>(function, rank, seed, batches);
}

} // namespace kiln::rt::exec
