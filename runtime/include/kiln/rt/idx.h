//===- idx.h - IDX files (MNIST, Fashion-MNIST) -----------------*- C++ -*-===//
//
// IDX: a big-endian magic 0x0000TTDD (TT = 0x08 for unsigned bytes, DD = the
// number of dimensions), DD big-endian uint32 sizes, then the raw data. The
// files may be gzip-compressed (Debian ships them so); both are accepted.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_IDX_H
#define KILN_RT_IDX_H

#include "kiln/base/status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::rt {

/// An unsigned-byte IDX array (the only type MNIST-style data sets use).
struct IdxArray {
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
  /// Items along the first dimension, and bytes per item.
  size_t count() const { return dims.empty() ? 0 : dims[0]; }
  size_t itemBytes() const;
};

/// Reads a plain or gzip-compressed IDX file. kDataLoss if it is truncated,
/// has trailing bytes, or is not an unsigned-byte IDX file.
StatusOr<IdxArray> readIdxFile(const std::string &path);

/// Images ([N, rows, cols]) and labels ([N]) of one split, checked to agree.
struct IdxDataset {
  IdxArray images;
  IdxArray labels;
};
StatusOr<IdxDataset> readIdxPair(const std::string &imagesPath,
                                 const std::string &labelsPath);

} // namespace kiln::rt

#endif // KILN_RT_IDX_H
