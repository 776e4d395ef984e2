//===- idx.cpp - IDX reader (plain or gzip) -------------------------------===//
#include "kiln/rt/idx.h"

#include <zlib.h>

#include <algorithm>

namespace kiln::rt {

size_t IdxArray::itemBytes() const {
  size_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i)
    n *= dims[i];
  return n;
}

namespace {

/// gzread reads plain files transparently, so one path serves both forms.
class GzFile {
public:
  explicit GzFile(gzFile f) : f_(f) {}
  ~GzFile() {
    if (f_)
      gzclose(f_);
  }
  gzFile get() const { return f_; }

private:
  gzFile f_;
};

Status readExactly(gzFile f, const std::string &path, void *dst, size_t n,
                   const char *what, uint64_t offset) {
  size_t done = 0;
  auto *p = static_cast<unsigned char *>(dst);
  while (done < n) {
    unsigned chunk =
        static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    int got = gzread(f, p + done, chunk);
    if (got < 0) {
      int errnum = 0;
      const char *msg = gzerror(f, &errnum);
      if (errnum == Z_ERRNO)
        return errnoStatus(__FILE__, __LINE__, path + ": read failed", errno);
      return KILN_STATUS(kDataLoss, path +
                                        ": corrupt gzip stream while reading " +
                                        what + ": " + msg);
    }
    if (got == 0)
      return KILN_STATUS(
          kDataLoss,
          path + ": truncated: " + what + " needs " + std::to_string(n) +
              " bytes at (uncompressed) byte offset " + std::to_string(offset) +
              ", found " + std::to_string(done));
    done += static_cast<size_t>(got);
  }
  return Status::ok();
}

uint32_t be32(const unsigned char *p) {
  return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
         uint32_t(p[3]);
}

} // namespace

StatusOr<IdxArray> readIdxFile(const std::string &path) {
  errno = 0;
  gzFile raw = gzopen(path.c_str(), "rb");
  if (!raw)
    return errnoStatus(__FILE__, __LINE__, "cannot open IDX file " + path,
                       errno ? errno : ENOMEM);
  GzFile f(raw);
  gzbuffer(raw, 1 << 20);

  unsigned char magic[4];
  KILN_RETURN_IF_ERROR(readExactly(raw, path, magic, 4, "the magic number", 0));
  if (magic[0] != 0 || magic[1] != 0)
    return KILN_STATUS(kDataLoss, path + ": not an IDX file (magic bytes " +
                                      std::to_string(magic[0]) + "," +
                                      std::to_string(magic[1]) +
                                      " instead of 0,0)");
  if (magic[2] != 0x08)
    return KILN_STATUS(kUnimplemented, path + ": IDX element type " +
                                           std::to_string(magic[2]) +
                                           " is not unsigned byte (0x08)");
  unsigned rank = magic[3];
  if (rank == 0 || rank > 4)
    return KILN_STATUS(kDataLoss, path + ": IDX rank " + std::to_string(rank) +
                                      " is outside 1..4");
  IdxArray array;
  unsigned char dimBytes[16];
  KILN_RETURN_IF_ERROR(
      readExactly(raw, path, dimBytes, 4 * rank, "the dimension sizes", 4));
  uint64_t total = 1;
  for (unsigned i = 0; i < rank; ++i) {
    array.dims.push_back(be32(dimBytes + 4 * i));
    total *= array.dims.back();
    if (total > (uint64_t(1) << 34))
      return KILN_STATUS(kDataLoss, path +
                                        ": IDX dimensions describe more "
                                        "than 16 GiB; the header is corrupt");
  }
  array.data.resize(total);
  KILN_RETURN_IF_ERROR(readExactly(raw, path, array.data.data(), total,
                                   "the data", 4 + 4 * rank));
  unsigned char extra;
  if (gzread(raw, &extra, 1) != 0)
    return KILN_STATUS(kDataLoss, path + ": trailing bytes after " +
                                      std::to_string(total) + " data bytes");
  return array;
}

StatusOr<IdxDataset> readIdxPair(const std::string &imagesPath,
                                 const std::string &labelsPath) {
  IdxDataset ds;
  KILN_ASSIGN_OR_RETURN(ds.images, readIdxFile(imagesPath));
  KILN_ASSIGN_OR_RETURN(ds.labels, readIdxFile(labelsPath));
  if (ds.images.dims.size() != 3)
    return KILN_STATUS(kDataLoss, imagesPath +
                                      ": expected 3 dimensions "
                                      "(images, rows, cols), found " +
                                      std::to_string(ds.images.dims.size()));
  if (ds.labels.dims.size() != 1)
    return KILN_STATUS(kDataLoss, labelsPath +
                                      ": expected 1 dimension, found " +
                                      std::to_string(ds.labels.dims.size()));
  if (ds.images.count() != ds.labels.count())
    return KILN_STATUS(
        kDataLoss, imagesPath + " holds " + std::to_string(ds.images.count()) +
                       " images but " + labelsPath + " holds " +
                       std::to_string(ds.labels.count()) + " labels");
  return ds;
}

} // namespace kiln::rt
