//===- data_abi.cpp - C ABI of the input pipeline -------------------------===//
#include "kiln/rt/abi.h"

#include "kiln/rt/abi_status.h"
#include "kiln/rt/pipeline.h"
#include "kiln/rt/transform.h"

#include <cstddef>
#include <cstring>

struct kiln_rt_dataset_s {
  std::unique_ptr<kiln::rt::Dataset> dataset;
};

extern "C" {

void kiln_rt_dataset_config_init(kiln_rt_dataset_config_t *c) {
  if (!c)
    return;
  *c = kiln_rt_dataset_config_t();
  c->abi_version = KILN_RT_ABI_VERSION;
  c->split = "train";
  c->rank = 0;
  c->world_size = 1;
  c->batch_size = 32;
  c->height = 224;
  c->width = 224;
  c->channels = 3;
  c->dtype = KILN_RT_DTYPE_F32;
  c->layout = KILN_RT_LAYOUT_NHWC;
  const float mean[3] = {0.485f, 0.456f, 0.406f};
  const float stdv[3] = {0.229f, 0.224f, 0.225f};
  for (int k = 0; k < KILN_RT_MAX_CHANNELS; ++k) {
    c->mean[k] = (k < 3 ? mean[k] : 0.5f) * 255.0f;
    c->std[k] = (k < 3 ? stdv[k] : 0.5f) * 255.0f;
  }
  c->augment = KILN_RT_AUGMENT_RANDOM_RESIZED_CROP;
  c->flip = 1;
  c->min_area = 0.08f;
  c->max_area = 1.0f;
  c->min_aspect = 3.0f / 4.0f;
  c->max_aspect = 4.0f / 3.0f;
  c->crop_attempts = 10;
  c->center_crop_fraction = 224.0f / 256.0f;
  c->pad = 4;
  c->full_decode = 0;
  c->seed = 0;
  c->first_epoch = 0;
  c->num_epochs = 1;
  c->shuffle = 1;
  c->shuffle_buffer = 1024;
  c->interleave = 16;
  c->drop_remainder = 1;
  c->label_offset = 1;
  c->num_workers = 2;
  c->prefetch_batches = 4;
  c->skip_bad_records = 0;
  c->log_skipped = 1;
  c->num_classes = 0;
  c->batches_per_epoch = 0;
  c->max_image_pixels = kiln::rt::kDefaultMaxImagePixels;
  c->image_policy = 0;
}

kiln_rt_status_t kiln_rt_dataset_open(const kiln_rt_dataset_config_t *config,
                                      kiln_rt_dataset_t **out) {
  return kiln::rt::guardAbi([&]() -> kiln::Status {
    if (!config || !out)
      return KILN_STATUS(kInvalidArgument,
                         "kiln_rt_dataset_open: null argument");
    *out = nullptr;
    // A caller built against an older minor passed a shorter struct: read
    // only its fields and take the defaults for the rest, except what keeps
    // its behaviour: older runtimes converted channels and enlarged images.
    kiln_rt_dataset_config_t full;
    const kiln_rt_dataset_config_t *use = config;
    uint32_t minor = config->abi_version & 0xffff;
    if ((config->abi_version >> 16) == KILN_RT_ABI_VERSION_MAJOR && minor < 3) {
      kiln_rt_dataset_config_init(&full);
      std::memcpy(&full, config,
                  minor < 2 ? offsetof(kiln_rt_dataset_config_t, num_classes)
                            : offsetof(kiln_rt_dataset_config_t, image_policy));
      full.image_policy =
          KILN_RT_IMAGE_CONVERT_CHANNELS | KILN_RT_IMAGE_UPSCALE;
      use = &full;
    }
    KILN_ASSIGN_OR_RETURN(auto dataset, kiln::rt::Dataset::open(*use));
    *out = new kiln_rt_dataset_s{std::move(dataset)};
    return kiln::Status::ok();
  });
}

kiln_rt_status_t kiln_rt_dataset_next_batch(kiln_rt_dataset_t *dataset,
                                            kiln_rt_batch_t *batch) {
  return kiln::rt::guardAbi([&]() -> kiln::Status {
    if (!dataset || !batch)
      return KILN_STATUS(kInvalidArgument,
                         "kiln_rt_dataset_next_batch: null argument");
    return dataset->dataset->nextBatch(*batch);
  });
}

uint64_t kiln_rt_dataset_batch_bytes(const kiln_rt_dataset_t *dataset) {
  return dataset ? dataset->dataset->batchBytes() : 0;
}

void kiln_rt_dataset_get_stats(const kiln_rt_dataset_t *dataset,
                               kiln_rt_dataset_stats_t *out) {
  if (!out)
    return;
  *out = kiln_rt_dataset_stats_t();
  if (dataset)
    *out = dataset->dataset->stats();
}

void kiln_rt_dataset_get_epoch_stats(const kiln_rt_dataset_t *dataset,
                                     kiln_rt_dataset_epoch_stats_t *out) {
  if (!out)
    return;
  *out = kiln_rt_dataset_epoch_stats_t();
  out->first_skipped = "";
  if (dataset)
    *out = dataset->dataset->epochStats();
}

void kiln_rt_dataset_close(kiln_rt_dataset_t *dataset) { delete dataset; }

} // extern "C"
