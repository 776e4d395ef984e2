//===- crc32c.h - CRC32C (Castagnoli) and the TFRecord mask -----*- C++ -*-===//
#ifndef KILN_RT_CRC32C_H
#define KILN_RT_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace kiln::rt {

/// Extends `crc` (the CRC of earlier bytes; 0 to start) over `data`.
/// Uses SSE4.2 crc32 instructions when the CPU has them, else slicing-by-8.
uint32_t crc32cExtend(uint32_t crc, const void *data, size_t size);
inline uint32_t crc32c(const void *data, size_t size) {
  return crc32cExtend(0, data, size);
}

/// The portable path, exposed so tests can compare both implementations.
uint32_t crc32cExtendPortable(uint32_t crc, const void *data, size_t size);

/// TFRecord stores CRCs masked, because a CRC of data that itself contains
/// CRCs is weak: rotate right by 15 and add a constant.
inline uint32_t maskCrc(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
inline uint32_t unmaskCrc(uint32_t masked) {
  uint32_t rot = masked - 0xa282ead8u;
  return (rot >> 17) | (rot << 15);
}

} // namespace kiln::rt

#endif // KILN_RT_CRC32C_H
