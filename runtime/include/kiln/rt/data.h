/*===- data.h - C ABI of the input pipeline -----------------------*- C -*-===*
 *
 * Reads sharded TFRecord files of tf.train.Example (as kiln-data and
 * imagenet_to_gcs.py write them) and returns batches already in the dtype and
 * layout the compiled model's first layer consumes. Included by abi.h.
 *
 * Usage:
 *   kiln_rt_dataset_config_t cfg;
 *   kiln_rt_dataset_config_init(&cfg);          // defaults, sets abi_version
 *   cfg.path = "/data/imagenet"; cfg.split = "train"; cfg.batch_size = 64;
 *   kiln_rt_dataset_t *ds;
 *   kiln_rt_status_t st = kiln_rt_dataset_open(&cfg, &ds);
 *   kiln_rt_batch_t batch;
 *   while (!(st = kiln_rt_dataset_next_batch(ds, &batch)) && batch.size) ...
 *   kiln_rt_dataset_close(ds);
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_DATA_H
#define KILN_RT_DATA_H

#include "kiln/rt/abi.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_rt_dtype_e {
  KILN_RT_DTYPE_F32 = 0,
  KILN_RT_DTYPE_BF16 = 1, /* round to nearest even */
} kiln_rt_dtype_t;

typedef enum kiln_rt_layout_e {
  KILN_RT_LAYOUT_NHWC = 0,
  KILN_RT_LAYOUT_NCHW = 1,
  /* [N][ceil(C/16)][H][W][16], channels past C zero (oneDNN nChw16c). */
  KILN_RT_LAYOUT_NCHW16C = 2,
} kiln_rt_layout_t;

typedef enum kiln_rt_augment_e {
  /* Random-resized crop (decoding only the crop), flip, resize. */
  KILN_RT_AUGMENT_RANDOM_RESIZED_CROP = 0,
  /* Center crop of center_crop_fraction of the short side, resize. */
  KILN_RT_AUGMENT_CENTER_CROP = 1,
  /* CIFAR-style: pad by `pad` zero pixels, random crop back, random flip. */
  KILN_RT_AUGMENT_PAD_CROP_FLIP = 2,
  /* Whole image, resized only if its size differs from the output. */
  KILN_RT_AUGMENT_NONE = 3,
  /* The standard evaluation recipe, chosen per record by image/format: a
   * JPEG gets CENTER_CROP, raw pixels get NONE, and so does a JPEG already
   * of the output size. Fixed by the data, so an eval's score never depends
   * on the training flags. (ABI 0.2) */
  KILN_RT_AUGMENT_EVAL = 4,
} kiln_rt_augment_t;

#define KILN_RT_MAX_CHANNELS 4

typedef struct kiln_rt_dataset_config_s {
  uint32_t abi_version; /* KILN_RT_ABI_VERSION (set by config_init) */

  /* Files: every `<split>-NNNNN-of-NNNNN` in `path`, sorted by name. Each
   * epoch, the files concatenated in the epoch's file order (shuffled with
   * (seed, epoch) unless shuffle is 0, the same on every rank) are cut into
   * world_size contiguous record ranges of floor or ceil(N / world_size) of
   * the N records; rank r reads range r. With world_size > 1, open counts
   * every file's records for that (from the framing; compressed files are
   * inflated). A rank whose range is empty (N < world_size) is an error
   * unless num_epochs > 0 and batches_per_epoch is 0. */
  const char *path;
  const char *split; /* "train", "validation", ... */
  uint32_t rank;
  uint32_t world_size;

  /* Output batch: batch_size x height x width x channels (1 or 3). */
  uint32_t batch_size;
  uint32_t height;
  uint32_t width;
  uint32_t channels;
  kiln_rt_dtype_t dtype;
  kiln_rt_layout_t layout;

  /* Per-channel normalization: out = (pixel - mean[c]) / std[c], pixels in
   * 0..255. config_init sets the ImageNet values for 3 channels. */
  float mean[KILN_RT_MAX_CHANNELS];
  float std[KILN_RT_MAX_CHANNELS];

  kiln_rt_augment_t augment;
  uint32_t flip;                /* random horizontal flip (augment 0 and 2) */
  float min_area, max_area;     /* crop area fraction, default 0.08..1 */
  float min_aspect, max_aspect; /* crop width/height, default 3/4..4/3 */
  uint32_t crop_attempts;       /* default 10, then center crop */
  float center_crop_fraction;   /* default 224/256 = 0.875 */
  uint32_t pad;                 /* PAD_CROP_FLIP padding, default 4 */
  /* Decode the whole JPEG and crop afterwards (slower; for comparison). */
  uint32_t full_decode;

  /* Order: deterministic for (seed, epoch), whatever num_workers is. */
  uint64_t seed;
  uint32_t first_epoch;
  uint32_t num_epochs;     /* 0: repeat forever */
  uint32_t shuffle;        /* shuffle file order and records (default 1) */
  uint32_t shuffle_buffer; /* records, default 1024 (~110 MB of ImageNet) */
  uint32_t interleave;     /* files read round-robin, default 16 */
  uint32_t drop_remainder; /* drop a final partial batch (default 1) */

  /* Labels: int32 (stored image/class/label) - label_offset. Default 1,
   * because imagenet_to_gcs.py and kiln-data store 1-based labels. */
  int32_t label_offset;

  /* Threads decoding images (default 2) and batches prepared ahead of the
   * consumer (default 4). */
  uint32_t num_workers;
  uint32_t prefetch_batches;

  /* Skip corrupt records (counted in the stats) instead of failing. */
  uint32_t skip_bad_records;
  /* Print the first few skipped-record messages to stderr. */
  uint32_t log_skipped;

  /* --- ABI 0.2 --- */
  /* Labels after label_offset must lie in 0..num_classes-1; a record outside
   * is an error (skipped under skip_bad_records). 0: unchecked. */
  uint32_t num_classes;
  /* Batches delivered per epoch. 0: as many as the records give. Otherwise
   * exactly this many: an epoch with more data stops early, and one left
   * short by skipped records (skip_bad_records) is filled by repeating its
   * last good examples (counted in the epoch stats' records_repeated). */
  uint64_t batches_per_epoch;
  /* Largest image decoded, in pixels (width * height, as declared by the
   * JPEG's SOF or the raw record's size). Default 2^26 (64 Mi pixels). */
  uint64_t max_image_pixels;

  /* --- ABI 0.3 --- */
  /* What may be done to data that is not what the model takes (flags of
   * kiln_rt_image_policy_t). Default 0: an image with other channels than
   * `channels`, or smaller than height x width (pad-crop aside), is an error
   * naming the record, not skippable. Callers built against minor 2 or
   * older get both conversions, as those runtimes did. */
  uint32_t image_policy;
} kiln_rt_dataset_config_t;

typedef enum kiln_rt_image_policy_e {
  KILN_RT_IMAGE_CONVERT_CHANNELS = 1u, /* gray <-> RGB */
  KILN_RT_IMAGE_UPSCALE = 2u,          /* enlarge images smaller than the output */
} kiln_rt_image_policy_t;

/* One batch, owned by the dataset and valid until the next next_batch or
 * close. images: batch_size examples in the configured dtype and layout;
 * labels: batch_size int32. Examples past `size` (only in a final partial
 * batch) are zero with label -1. size == 0 means the data is exhausted. */
typedef struct kiln_rt_batch_s {
  void *images;
  int32_t *labels;
  uint64_t image_bytes;
  uint32_t size;
  uint32_t epoch;
  uint64_t index; /* batch index within the epoch */
} kiln_rt_batch_t;

typedef struct kiln_rt_dataset_stats_s {
  uint64_t records_read;
  uint64_t records_skipped; /* bad records dropped (skip_bad_records) */
  uint64_t batches_returned;
  uint64_t bytes_read;
  uint64_t files;   /* files of the split (a rank reads from any of them) */
  uint64_t wait_ns; /* time next_batch blocked waiting for data */
  uint64_t next_batch_calls;
} kiln_rt_dataset_stats_t;

/* The epoch of the batch most recently returned (ABI 0.2). A new struct
 * rather than fields appended to kiln_rt_dataset_stats_t, because get_stats
 * writes a caller-allocated struct whose size an older caller fixed. */
typedef struct kiln_rt_dataset_epoch_stats_s {
  uint32_t epoch;
  /* 1 if that batch was the last of its epoch: the counts are then final. */
  uint32_t complete;
  uint64_t batches; /* batches of the epoch returned so far */
  /* Bad records dropped in the epoch (skip_bad_records), up to that batch. */
  uint64_t records_skipped;
  /* Examples that stand in for bad ones: repeated to fill an epoch short of
   * batches_per_epoch, or to keep a batch with a record that failed to
   * decode full. */
  uint64_t records_repeated;
  /* The message of the epoch's first skipped record ("" if none); valid
   * until the next next_batch or close. */
  const char *first_skipped;
} kiln_rt_dataset_epoch_stats_t;

typedef struct kiln_rt_dataset_s kiln_rt_dataset_t;

/* Fills defaults (see the field comments) and abi_version. */
KILN_RT_API void kiln_rt_dataset_config_init(kiln_rt_dataset_config_t *config);

/* Validates the config, lists the files and starts the threads. */
KILN_RT_API KILN_RT_MUST_USE kiln_rt_status_t kiln_rt_dataset_open(
    const kiln_rt_dataset_config_t *config, kiln_rt_dataset_t **out_dataset);

/* Blocks until the next batch is ready. An error names the file, the record
 * index and the byte offset; once an error is returned, the dataset returns
 * it again on every later call. */
KILN_RT_API KILN_RT_MUST_USE kiln_rt_status_t kiln_rt_dataset_next_batch(
    kiln_rt_dataset_t *dataset, kiln_rt_batch_t *out_batch);

/* Bytes of one batch's images in the configured dtype and layout. */
KILN_RT_API uint64_t
kiln_rt_dataset_batch_bytes(const kiln_rt_dataset_t *dataset);

KILN_RT_API void kiln_rt_dataset_get_stats(const kiln_rt_dataset_t *dataset,
                                           kiln_rt_dataset_stats_t *out_stats);

/* Per-epoch counts of the batch most recently returned (ABI 0.2). */
KILN_RT_API void
kiln_rt_dataset_get_epoch_stats(const kiln_rt_dataset_t *dataset,
                                kiln_rt_dataset_epoch_stats_t *out_stats);

/* Stops the threads and frees everything. NULL is allowed. */
KILN_RT_API void kiln_rt_dataset_close(kiln_rt_dataset_t *dataset);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KILN_RT_DATA_H */
