//===- augment.h - Crop sampling, resize, pad-crop, flip --------*- C++ -*-===//
//
// The image transforms of the TPU ResNet reference (random-resized crop with
// area 0.08..1 and aspect 3/4..4/3, 10 attempts, center-crop fallback;
// eval center crop of 224/256 of the short side) and the CIFAR recipe
// (pad, random crop back, flip). Pixel values stay in 0..255 here;
// normalization happens when the batch is written (output.h).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_AUGMENT_H
#define KILN_RT_AUGMENT_H

#include "kiln/rt/image.h"
#include "kiln/rt/random.h"

namespace kiln::rt {

struct RandomCropParams {
  double minArea = 0.08;
  double maxArea = 1.0;
  double minAspect = 3.0 / 4.0; ///< width / height
  double maxAspect = 4.0 / 3.0;
  int attempts = 10;
  /// Fallback when no attempt fits: center crop of this share of the short
  /// side.
  double centerFraction = 224.0 / 256.0;
};

/// Samples a crop of `width`x`height` as tf.image.sample_distorted_bounding_box
/// does in the TPU reference: area fraction uniform in [minArea, maxArea],
/// aspect ratio log-uniform in [minAspect, maxAspect]; the first of
/// `attempts` draws that fits wins, else the center crop. `usedFallback`
/// tells which happened.
CropBox sampleRandomResizedCrop(int width, int height,
                                const RandomCropParams &params, Rng &rng,
                                bool *usedFallback = nullptr);

/// The centered square of side fraction*min(width, height), at least 1 pixel.
CropBox centerCropBox(int width, int height, double fraction);

/// Bilinear resize (half-pixel centers, edge clamped, as TF2 and PyTorch with
/// align_corners=False) of `src` to outWidth x outHeight float HWC,
/// mirrored horizontally if `flip`.
void resizeBilinear(const ImageU8 &src, int outWidth, int outHeight, bool flip,
                    float *dst);

/// Converts `src` to `dst` at outWidth x outHeight by padding with `pad` zero
/// pixels on every side and taking the window at (offsetX, offsetY) of the
/// padded image, mirrored if `flip`. Offsets range over
/// [0, src.width + 2*pad - outWidth] (and likewise for y).
void padCrop(const ImageU8 &src, int pad, int offsetX, int offsetY,
             int outWidth, int outHeight, bool flip, float *dst);

/// Copies the region `box` of `src` into `dst`.
void cropImage(const ImageU8 &src, const CropBox &box, ImageU8 &dst);

/// Converts between 1 and 3 channels (replicate, or BT.601 luma as libjpeg
/// does). kInvalidArgument for other combinations.
Status convertChannels(ImageU8 &image, int channels);

} // namespace kiln::rt

#endif // KILN_RT_AUGMENT_H
