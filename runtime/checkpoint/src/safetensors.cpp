//===- safetensors.cpp - Reading and writing safetensors files ------------===//

#include "kiln/rt/safetensors.h"

#include "kiln/base/json.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace kiln::rt::safetensors {

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::Bool, "BOOL", 1}, {DType::U8, "U8", 1},   {DType::I8, "I8", 1},
    {DType::I16, "I16", 2},   {DType::U16, "U16", 2}, {DType::F16, "F16", 2},
    {DType::BF16, "BF16", 2}, {DType::I32, "I32", 4}, {DType::U32, "U32", 4},
    {DType::F32, "F32", 4},   {DType::F64, "F64", 8}, {DType::I64, "I64", 8},
    {DType::U64, "U64", 8},
};

const DTypeInfo &info(DType dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (i.dtype == dtype)
      return i;
  std::fprintf(stderr, "safetensors: unknown dtype %d\n",
               static_cast<int>(dtype));
  std::abort();
}

[[noreturn]] void precondition(const std::string &message) {
  std::fprintf(stderr, "%s:%d: safetensors: %s\n", __FILE__, __LINE__,
               message.c_str());
  std::abort();
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// numElements(shape) * elementSize, or false on overflow / negative dims.
bool byteCount(const std::vector<int64_t> &shape, size_t elementSize,
               uint64_t &bytes) {
  uint64_t n = elementSize;
  for (int64_t d : shape) {
    if (d < 0)
      return false;
    auto ud = static_cast<uint64_t>(d);
    if (ud != 0 && n > UINT64_MAX / ud)
      return false;
    n *= ud;
  }
  bytes = n;
  return true;
}

// Little-endian encoding, written out so the format does not depend on the
// host's byte order.
template <typename U> void storeLE(uint8_t *p, U v) {
  for (size_t i = 0; i < sizeof(U); ++i)
    p[i] = static_cast<uint8_t>(v >> (8 * i));
}
template <typename U> U loadLE(const uint8_t *p) {
  U v = 0;
  for (size_t i = 0; i < sizeof(U); ++i)
    v = static_cast<U>(v | (static_cast<U>(p[i]) << (8 * i)));
  return v;
}

/// Encodes `values` (of an arithmetic type T, stored through the same-size
/// unsigned type U) as `dtype`.
template <typename U, typename T>
Tensor encode(std::string name, DType dtype, std::vector<int64_t> shape,
              const std::vector<T> &values) {
  static_assert(sizeof(U) == sizeof(T), "bit-cast needs equal sizes");
  Tensor t;
  t.name = std::move(name);
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (t.numElements() != static_cast<int64_t>(values.size()))
    precondition("tensor '" + t.name + "': " + std::to_string(values.size()) +
                 " values for shape " + shapeString(t.shape));
  t.bytes.resize(values.size() * sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    U bits;
    std::memcpy(&bits, &values[i], sizeof(U));
    storeLE<U>(t.bytes.data() + i * sizeof(U), bits);
  }
  return t;
}

template <typename U, typename T>
std::vector<T> decode(const Tensor &t, DType expected) {
  static_assert(sizeof(U) == sizeof(T), "bit-cast needs equal sizes");
  if (t.dtype != expected)
    precondition("tensor '" + t.name + "' is " + dtypeName(t.dtype) + ", not " +
                 dtypeName(expected));
  if (t.bytes.size() % sizeof(T) != 0)
    precondition("tensor '" + t.name + "' has a partial element");
  std::vector<T> values(t.bytes.size() / sizeof(T));
  for (size_t i = 0; i < values.size(); ++i) {
    U bits = loadLE<U>(t.bytes.data() + i * sizeof(U));
    std::memcpy(&values[i], &bits, sizeof(U));
  }
  return values;
}

/// "<what>: <message>" with `code`; these messages carry no file:line, since
/// they describe the file being read or written, not the library.
Status failWith(StatusCode code, const std::string &what,
                const std::string &message) {
  return Status(code, what + ": " + message);
}

/// Parses one tensor entry of the header (without its data).
Status parseEntry(const std::string &what, const std::string &name,
                  const json::Value &entry, Tensor &tensor, uint64_t &begin,
                  uint64_t &end) {
  std::string where = what + ": tensor '" + name + "'";
  auto fail = [&](const std::string &m) {
    return failWith(StatusCode::kDataLoss, where, m);
  };
  if (entry.kind != json::Value::Kind::Object)
    return fail("header entry is not an object");
  for (const auto &member : entry.members)
    if (member.first != "dtype" && member.first != "shape" &&
        member.first != "data_offsets")
      return fail("unknown header field " + json::quote(member.first));
  const json::Value *dtype = entry.member("dtype");
  const json::Value *shape = entry.member("shape");
  const json::Value *offsets = entry.member("data_offsets");
  if (!dtype || !shape || !offsets)
    return fail("header entry needs dtype, shape and data_offsets");
  if (dtype->kind != json::Value::Kind::String ||
      !parseDType(dtype->text, tensor.dtype))
    return fail("unknown dtype " + (dtype->kind == json::Value::Kind::String
                                        ? json::quote(dtype->text)
                                        : std::string("(not a string)")));
  if (shape->kind != json::Value::Kind::Array)
    return fail("shape is not an array");
  for (const json::Value &d : shape->elements) {
    uint64_t v;
    if (!d.asUnsigned(v) || v > static_cast<uint64_t>(INT64_MAX))
      return fail("shape holds something other than a non-negative integer");
    tensor.shape.push_back(static_cast<int64_t>(v));
  }
  if (offsets->kind != json::Value::Kind::Array ||
      offsets->elements.size() != 2 ||
      !offsets->elements[0].asUnsigned(begin) ||
      !offsets->elements[1].asUnsigned(end))
    return fail("data_offsets is not a pair of non-negative integers");
  if (end < begin)
    return fail("data_offsets [" + std::to_string(begin) + ", " +
                std::to_string(end) + "] end before they begin");
  uint64_t want;
  if (!byteCount(tensor.shape, dtypeSize(tensor.dtype), want))
    return fail("shape " + shapeString(tensor.shape) + " is too large");
  if (end - begin != want)
    return fail("data_offsets [" + std::to_string(begin) + ", " +
                std::to_string(end) + "] hold " + std::to_string(end - begin) +
                " bytes, but " + dtypeName(tensor.dtype) + " " +
                shapeString(tensor.shape) + " needs " + std::to_string(want));
  tensor.name = name;
  return Status::ok();
}

std::string errnoText(int err) { return std::strerror(err); }

/// write(2) all of `data`, retrying after EINTR and short writes.
bool writeAll(int fd, const uint8_t *data, size_t size, int &err) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      err = errno;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

} // namespace

const char *dtypeName(DType dtype) { return info(dtype).name; }

bool parseDType(std::string_view name, DType &dtype) {
  for (const DTypeInfo &i : kDTypes)
    if (name == i.name) {
      dtype = i.dtype;
      return true;
    }
  return false;
}

size_t dtypeSize(DType dtype) { return info(dtype).size; }

DType fromKilnDType(kiln::DType dtype) {
  DType result = DType::F32;
  if (!parseDType(kiln::dtypeInfo(dtype).safetensorsName, result))
    precondition(std::string("Kiln's ") + kiln::dtypeInfo(dtype).name +
                 " has no safetensors name");
  return result;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Tensor fromF32(std::string name, std::vector<int64_t> shape,
               const std::vector<float> &values) {
  return encode<uint32_t>(std::move(name), DType::F32, std::move(shape),
                          values);
}
Tensor fromBf16Bits(std::string name, std::vector<int64_t> shape,
                    const std::vector<uint16_t> &bits) {
  return encode<uint16_t>(std::move(name), DType::BF16, std::move(shape), bits);
}
Tensor fromF64(std::string name, std::vector<int64_t> shape,
               const std::vector<double> &values) {
  return encode<uint64_t>(std::move(name), DType::F64, std::move(shape),
                          values);
}
Tensor fromI32(std::string name, std::vector<int64_t> shape,
               const std::vector<int32_t> &values) {
  return encode<uint32_t>(std::move(name), DType::I32, std::move(shape),
                          values);
}
Tensor fromI64(std::string name, std::vector<int64_t> shape,
               const std::vector<int64_t> &values) {
  return encode<uint64_t>(std::move(name), DType::I64, std::move(shape),
                          values);
}

std::vector<float> toF32(const Tensor &t) {
  return decode<uint32_t, float>(t, DType::F32);
}
std::vector<uint16_t> toBf16Bits(const Tensor &t) {
  return decode<uint16_t, uint16_t>(t, DType::BF16);
}
std::vector<double> toF64(const Tensor &t) {
  return decode<uint64_t, double>(t, DType::F64);
}
std::vector<int32_t> toI32(const Tensor &t) {
  return decode<uint32_t, int32_t>(t, DType::I32);
}
std::vector<int64_t> toI64(const Tensor &t) {
  return decode<uint64_t, int64_t>(t, DType::I64);
}

const Tensor *File::find(std::string_view name) const {
  for (const Tensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

Status parse(const uint8_t *data, size_t size, const std::string &what,
             File &file) {
  file = File();
  if (size < 8)
    return failWith(StatusCode::kDataLoss, what,
                    "truncated: " + std::to_string(size) +
                        " bytes, shorter than the 8-byte header size");
  uint64_t headerSize = loadLE<uint64_t>(data);
  if (headerSize > size - 8)
    return failWith(StatusCode::kDataLoss, what,
                    "header size " + std::to_string(headerSize) +
                        " exceeds the file (" + std::to_string(size - 8) +
                        " bytes follow the size field): truncated or not a "
                        "safetensors file");
  std::string_view headerText(reinterpret_cast<const char *>(data + 8),
                              static_cast<size_t>(headerSize));
  json::Value header;
  if (Status s = json::parse(headerText, header); !s.isOk())
    return failWith(StatusCode::kDataLoss, what,
                    "bad JSON header: " + s.message());
  if (header.kind != json::Value::Kind::Object)
    return failWith(StatusCode::kDataLoss, what,
                    "the JSON header is not an object");

  const uint8_t *dataStart = data + 8 + headerSize;
  uint64_t dataSize = size - 8 - headerSize;
  struct Span {
    uint64_t begin, end;
    size_t index;
  };
  std::vector<Span> spans;
  for (const auto &[name, entry] : header.members) {
    if (name == "__metadata__") {
      if (entry.kind != json::Value::Kind::Object)
        return failWith(StatusCode::kDataLoss, what,
                        "__metadata__ is not an object");
      for (const auto &[key, value] : entry.members) {
        if (value.kind != json::Value::Kind::String)
          return failWith(StatusCode::kDataLoss, what,
                          "__metadata__ value of " + json::quote(key) +
                              " is not a string");
        file.metadata[key] = value.text;
      }
      continue;
    }
    Tensor tensor;
    uint64_t begin = 0, end = 0;
    KILN_RETURN_IF_ERROR(parseEntry(what, name, entry, tensor, begin, end));
    if (end > dataSize)
      return failWith(StatusCode::kDataLoss, what + ": tensor '" + name + "'",
                      "data_offsets [" + std::to_string(begin) + ", " +
                          std::to_string(end) + "] reach beyond the " +
                          std::to_string(dataSize) +
                          " data bytes: truncated file or bad offsets");
    spans.push_back({begin, end, file.tensors.size()});
    file.tensors.push_back(std::move(tensor));
  }

  // The tensors must tile the data exactly: no overlap, no gap, nothing
  // after the last one (the reference implementation's rule).
  std::sort(spans.begin(), spans.end(), [](const Span &a, const Span &b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  const Tensor *previous = nullptr;
  for (const Span &s : spans) {
    const Tensor &t = file.tensors[s.index];
    if (s.begin < covered)
      return failWith(StatusCode::kDataLoss, what + ": tensor '" + t.name + "'",
                      "data_offsets [" + std::to_string(s.begin) + ", " +
                          std::to_string(s.end) + "] overlap tensor '" +
                          (previous ? previous->name : std::string()) + "'");
    if (s.begin > covered)
      return failWith(StatusCode::kDataLoss, what + ": tensor '" + t.name + "'",
                      "data_offsets begin at " + std::to_string(s.begin) +
                          ", leaving a gap after byte " +
                          std::to_string(covered));
    covered = s.end;
    previous = &t;
  }
  if (covered != dataSize)
    return failWith(StatusCode::kDataLoss, what,
                    std::to_string(dataSize - covered) +
                        " bytes after the last tensor's data");

  // Copy the data, in data order.
  std::vector<Tensor> ordered;
  ordered.reserve(spans.size());
  for (const Span &s : spans) {
    Tensor &t = file.tensors[s.index];
    t.bytes.assign(dataStart + s.begin, dataStart + s.end);
    ordered.push_back(std::move(t));
  }
  file.tensors = std::move(ordered);
  return Status::ok();
}

Status read(const std::string &path, File &file) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return failWith(err == ENOENT || err == ENOTDIR ? StatusCode::kNotFound
                                                    : StatusCode::kIoError,
                    path, "cannot open: " + errnoText(err));
  }
  std::vector<uint8_t> image;
  uint8_t buffer[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR)
        continue;
      int err = errno;
      ::close(fd);
      return failWith(StatusCode::kIoError, path,
                      "read failed: " + errnoText(err));
    }
    if (n == 0)
      break;
    image.insert(image.end(), buffer, buffer + n);
  }
  ::close(fd);
  return parse(image.data(), image.size(), path, file);
}

Status serialize(const File &file, std::vector<uint8_t> &image) {
  std::string header = "{";
  bool first = true;
  if (!file.metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto &[key, value] : file.metadata) {
      header +=
          (first ? "" : ",") + json::quote(key) + ":" + json::quote(value);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < file.tensors.size(); ++i) {
    const Tensor &t = file.tensors[i];
    std::string where = "tensor '" + t.name + "'";
    if (t.name.empty())
      return failWith(StatusCode::kInvalidArgument,
                      "tensor " + std::to_string(i), "empty name");
    if (t.name == "__metadata__")
      return failWith(StatusCode::kInvalidArgument, where,
                      "the name is reserved");
    for (size_t j = 0; j < i; ++j)
      if (file.tensors[j].name == t.name)
        return failWith(StatusCode::kInvalidArgument, where, "appears twice");
    uint64_t want;
    if (!byteCount(t.shape, dtypeSize(t.dtype), want) || want != t.bytes.size())
      return failWith(StatusCode::kInvalidArgument, where,
                      std::to_string(t.bytes.size()) + " data bytes, but " +
                          dtypeName(t.dtype) + " " + shapeString(t.shape) +
                          " needs " + std::to_string(want));
    std::string shape = "[";
    for (size_t d = 0; d < t.shape.size(); ++d)
      shape += (d ? "," : "") + std::to_string(t.shape[d]);
    shape += "]";
    header += std::string(first && file.metadata.empty() ? "" : ",") +
              json::quote(t.name) + ":{\"dtype\":\"" + dtypeName(t.dtype) +
              "\",\"shape\":" + shape + ",\"data_offsets\":[" +
              std::to_string(offset) + "," + std::to_string(offset + want) +
              "]}";
    first = false;
    offset += want;
  }
  header += "}";
  // Pad with spaces so the data starts 8-byte aligned, as the reference
  // writer does (readers may then map it in place).
  while ((8 + header.size()) % 8 != 0)
    header += ' ';
  image.assign(8, 0);
  storeLE<uint64_t>(image.data(), header.size());
  image.insert(image.end(), header.begin(), header.end());
  image.reserve(image.size() + offset);
  for (const Tensor &t : file.tensors)
    image.insert(image.end(), t.bytes.begin(), t.bytes.end());
  return Status::ok();
}

Status write(const std::string &path, const File &file) {
  std::vector<uint8_t> image;
  if (Status s = serialize(file, image); !s.isOk())
    return Status(s.code(), path + ": " + s.message());
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (dir.empty())
    dir = "/";
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  // A hidden name in the destination's folder, so the rename stays on one
  // file system (and so is atomic).
  std::string tempPath = dir + "/." + base + ".tmp-XXXXXX";
  std::vector<char> templ(tempPath.begin(), tempPath.end());
  templ.push_back('\0');
  int fd = ::mkstemp(templ.data());
  if (fd < 0)
    return failWith(StatusCode::kIoError, path,
                    "cannot create a temporary file in " + dir + ": " +
                        errnoText(errno));
  tempPath = templ.data();
  auto abandon = [&](const std::string &step, int err) {
    ::close(fd);
    ::unlink(tempPath.c_str());
    return failWith(StatusCode::kIoError, path, step + ": " + errnoText(err));
  };
  int err = 0;
  if (!writeAll(fd, image.data(), image.size(), err))
    return abandon("write failed", err);
  // mkstemp creates 0600; give the file the usual permissions.
  if (::fchmod(fd, 0644) != 0)
    return abandon("fchmod failed", errno);
  if (::fsync(fd) != 0)
    return abandon("fsync failed", errno);
  if (::close(fd) != 0) {
    err = errno;
    ::unlink(tempPath.c_str());
    return failWith(StatusCode::kIoError, path,
                    "close failed: " + errnoText(err));
  }
  if (::rename(tempPath.c_str(), path.c_str()) != 0) {
    err = errno;
    ::unlink(tempPath.c_str());
    return failWith(StatusCode::kIoError, path,
                    "rename failed: " + errnoText(err));
  }
  // Make the rename itself durable.
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd >= 0) {
    int rc = ::fsync(dirFd);
    err = errno;
    ::close(dirFd);
    if (rc != 0)
      return failWith(StatusCode::kIoError, path,
                      "fsync of folder " + dir + " failed: " + errnoText(err));
  }
  return Status::ok();
}

} // namespace kiln::rt::safetensors
