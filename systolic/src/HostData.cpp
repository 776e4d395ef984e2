//===- HostData.cpp - Step inputs for simulated training ------------------===//

#include "kiln/sim/HostData.h"

#include "kiln/ref/synthetic.h"
#include "kiln/rt/idx.h"
#include "kiln/sim/Isa.h"

namespace kiln::sim {

Status loadIdx(const std::string &imagesPath, const std::string &labelsPath,
               IdxDataset &data) {
  KILN_ASSIGN_OR_RETURN(rt::IdxDataset idx,
                        rt::readIdxPair(imagesPath, labelsPath));
  data.count = int64_t(idx.images.dims[0]);
  data.rows = int64_t(idx.images.dims[1]);
  data.cols = int64_t(idx.images.dims[2]);
  data.images.resize(idx.images.data.size());
  for (size_t i = 0; i < idx.images.data.size(); ++i)
    data.images[i] = float(idx.images.data[i]) / 255.0f;
  data.labels.assign(idx.labels.data.begin(), idx.labels.data.end());
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
