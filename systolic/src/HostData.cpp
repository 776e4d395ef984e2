//===- HostData.cpp - Step inputs for simulated training ------------------===//

#include "kiln/sim/HostData.h"

#include "kiln/ref/synthetic.h"
#include "kiln/sim/Isa.h"

#include <zlib.h>

namespace kiln::sim {

namespace {

Status readAll(const std::string &path, std::vector<uint8_t> &bytes) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f)
    return invalidArgumentError("cannot open '" + path + "'");
  bytes.clear();
  uint8_t chunk[1 << 16];
  int n;
  while ((n = gzread(f, chunk, sizeof(chunk))) > 0)
    bytes.insert(bytes.end(), chunk, chunk + n);
  bool failed = n < 0;
  gzclose(f);
  if (failed)
    return invalidArgumentError("cannot read '" + path + "' (corrupt gzip?)");
  return Status::ok();
}

uint32_t bigEndian32(const uint8_t *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         uint32_t(p[3]);
}

} // namespace

Status loadIdx(const std::string &imagesPath, const std::string &labelsPath,
               IdxDataset &data) {
  std::vector<uint8_t> img, lab;
  KILN_RETURN_IF_ERROR(readAll(imagesPath, img));
  KILN_RETURN_IF_ERROR(readAll(labelsPath, lab));
  if (img.size() < 16 || bigEndian32(img.data()) != 0x803)
    return invalidArgumentError("'" + imagesPath +
                                "' is not an IDX image file");
  if (lab.size() < 8 || bigEndian32(lab.data()) != 0x801)
    return invalidArgumentError("'" + labelsPath +
                                "' is not an IDX label file");
  data.count = bigEndian32(img.data() + 4);
  data.rows = bigEndian32(img.data() + 8);
  data.cols = bigEndian32(img.data() + 12);
  int64_t pixels = data.count * data.rows * data.cols;
  if (int64_t(img.size()) != 16 + pixels)
    return invalidArgumentError("'" + imagesPath + "' is truncated");
  if (int64_t(bigEndian32(lab.data() + 4)) != data.count ||
      int64_t(lab.size()) != 8 + data.count)
    return invalidArgumentError("'" + labelsPath +
                                "' does not match its images");
  data.images.resize(size_t(pixels));
  for (int64_t i = 0; i < pixels; ++i)
    data.images[size_t(i)] = float(img[size_t(16 + i)]) / 255.0f;
  data.labels.assign(lab.begin() + 8, lab.end());
  return Status::ok();
}

Status findStepInputs(const Simulator &sim, StepInputs &in) {
  in = StepInputs();
  for (const auto &b : sim.program().buffers) {
    if (b->role != fb::Role::Input)
      continue;
    if (b->shape.size() == 4 && b->dtype != fb::DType::I32) {
      in.images = b->binding;
      in.imageShape = b->shape;
      if (b->host_layout == fb::HostLayout::SpaceToDepth2)
        in.imageShape = {b->shape[0], 2 * b->shape[1], 2 * b->shape[2],
                         b->shape[3] / 4};
    } else if (b->shape.size() == 1 && b->dtype == fb::DType::I32) {
      in.labels = b->binding;
    } else if (b->shape.empty() && b->dtype == fb::DType::I32) {
      in.step = b->binding;
    }
  }
  // The class count is the width of the logits: the last dimension of the
  // rank-2 output.
  for (const auto &b : sim.program().buffers)
    if (b->role == fb::Role::Output && b->shape.size() == 2)
      in.numClasses = b->shape[1];
  if (in.images.empty() || in.labels.empty())
    return invalidArgumentError("the program has no image and label inputs");
  return Status::ok();
}

Status feedStep(Simulator &sim, const StepInputs &in, const IdxDataset *data,
                int64_t step, uint64_t seed) {
  int64_t n = in.imageShape[0];
  int64_t perImage = in.imageShape[1] * in.imageShape[2] * in.imageShape[3];
  std::vector<float> images(static_cast<size_t>(n * perImage));
  std::vector<float> labels(static_cast<size_t>(n));
  if (data) {
    if (data->rows * data->cols != perImage)
      return invalidArgumentError(
          "dataset images have " + std::to_string(data->rows * data->cols) +
          " pixels, the program expects " + std::to_string(perImage));
    for (int64_t i = 0; i < n; ++i) {
      int64_t src = (step * n + i) % data->count;
      std::copy_n(data->images.begin() + src * perImage, perImage,
                  images.begin() + i * perImage);
      labels[size_t(i)] = float(data->labels[size_t(src)]);
    }
  } else {
    // Synthetic batch 0 (kiln/ref/synthetic.h), kiln-run's, every step.
    ref::SyntheticArgument pixels(seed, in.images), classes(seed, in.labels);
    for (size_t i = 0; i < images.size(); ++i)
      images[i] = pixels.value(i);
    uint64_t k = uint64_t(std::max<int64_t>(in.numClasses, 1));
    for (int64_t i = 0; i < n; ++i)
      labels[size_t(i)] = float(classes.label(uint64_t(i), k));
  }
  KILN_RETURN_IF_ERROR(sim.setInput(in.images, images));
  KILN_RETURN_IF_ERROR(sim.setInput(in.labels, labels));
  if (!in.step.empty())
    KILN_RETURN_IF_ERROR(sim.setInput(in.step, {float(step)}));
  return Status::ok();
}

} // namespace kiln::sim
