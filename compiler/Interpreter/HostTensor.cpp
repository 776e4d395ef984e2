//===- HostTensor.cpp - The interpreter's runtime values ------------------===//

#include "compiler/Interpreter/HostTensor.h"

#include "kiln/ref/bf16.h"

#include <cinttypes>
#include <cstdio>

namespace kiln::interp {

namespace st = rt::safetensors;

HostTensor HostTensor::zeros(DType type, ref::Shape shape) {
  HostTensor t;
  t.type = type;
  t.shape = std::move(shape);
  auto n = static_cast<size_t>(t.numElements());
  if (isFloat(type))
    t.floats.assign(n, 0.0f);
  else if (type == DType::F64)
    t.doubles.assign(n, 0.0);
  else
    t.ints.assign(n, 0);
  return t;
}

HostTensor HostTensor::fromRef(ref::Tensor tensor, DType type) {
  HostTensor t;
  t.type = type;
  t.shape = std::move(tensor.shape);
  t.floats = std::move(tensor.data);
  return t;
}

ref::Tensor HostTensor::toRef() const { return ref::Tensor(shape, floats); }

std::string typeString(const HostTensor &tensor) {
  std::string s;
  for (int64_t d : tensor.shape)
    s += std::to_string(d) + "x";
  return s + dtypeInfo(tensor.type).name;
}

std::string formatValues(const HostTensor &tensor, size_t limit) {
  auto n = static_cast<size_t>(tensor.numElements());
  std::string s;
  char buffer[40];
  for (size_t i = 0; i < n && i < limit; ++i) {
    if (i)
      s += ", ";
    if (isInteger(tensor.type))
      std::snprintf(buffer, sizeof(buffer), "%" PRId64, tensor.ints[i]);
    else if (tensor.type == DType::F64)
      std::snprintf(buffer, sizeof(buffer), "%.17g", tensor.doubles[i]);
    else
      std::snprintf(buffer, sizeof(buffer), "%.9g",
                    static_cast<double>(tensor.floats[i]));
    s += buffer;
  }
  if (n > limit)
    s += ", ... (" + std::to_string(n - limit) + " more)";
  return s;
}

st::Tensor toSafetensors(const HostTensor &tensor, std::string name) {
  switch (tensor.type) {
  case DType::F32:
    return st::fromF32(std::move(name), tensor.shape, tensor.floats);
  case DType::BF16: {
    std::vector<uint16_t> bits(tensor.floats.size());
    for (size_t i = 0; i < bits.size(); ++i)
      bits[i] = ref::floatToBf16Bits(tensor.floats[i]);
    return st::fromBf16Bits(std::move(name), tensor.shape, bits);
  }
  case DType::F64:
    return st::fromF64(std::move(name), tensor.shape, tensor.doubles);
  case DType::I32: {
    std::vector<int32_t> values(tensor.ints.begin(), tensor.ints.end());
    return st::fromI32(std::move(name), tensor.shape, values);
  }
  case DType::I64:
    return st::fromI64(std::move(name), tensor.shape, tensor.ints);
  }
  return {};
}

Status fromSafetensors(const st::Tensor &entry, HostTensor &tensor) {
  tensor = HostTensor();
  tensor.shape = entry.shape;
  switch (entry.dtype) {
  case st::DType::F32:
    tensor.type = DType::F32;
    tensor.floats = st::toF32(entry);
    return Status::ok();
  case st::DType::BF16: {
    tensor.type = DType::BF16;
    std::vector<uint16_t> bits = st::toBf16Bits(entry);
    tensor.floats.resize(bits.size());
    for (size_t i = 0; i < bits.size(); ++i)
      tensor.floats[i] = ref::bf16BitsToFloat(bits[i]);
    return Status::ok();
  }
  case st::DType::F64:
    tensor.type = DType::F64;
    tensor.doubles = st::toF64(entry);
    return Status::ok();
  case st::DType::I32: {
    tensor.type = DType::I32;
    std::vector<int32_t> values = st::toI32(entry);
    tensor.ints.assign(values.begin(), values.end());
    return Status::ok();
  }
  case st::DType::I64:
    tensor.type = DType::I64;
    tensor.ints = st::toI64(entry);
    return Status::ok();
  default:
    return invalidArgumentError(
        std::string("dtype ") + st::dtypeName(entry.dtype) +
        " is not one kiln-run handles (F32, BF16, F64, I32, I64)");
  }
}

} // namespace kiln::interp
