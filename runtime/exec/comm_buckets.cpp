//===- comm_buckets.cpp - Planning, packing and averaging buckets ---------===//

#include "kiln/rt/exec/comm.h"

#include "kiln/rt/exec/variables.h"

#include <algorithm>
#include <cstring>

namespace kiln::rt::exec {

std::vector<BucketPlan> planBuckets(const std::vector<Bucket> &buckets) {
  std::vector<BucketPlan> plans;
  for (const Bucket &bucket : buckets) {
    BucketPlan plan;
    plan.tensors = bucket.tensors;
    std::sort(plan.tensors.begin(), plan.tensors.end(),
              [](const TensorRef &a, const TensorRef &b) {
                return a.offset < b.offset;
              });
    bool anyF64 = false, allSame = true;
    for (const TensorRef &t : plan.tensors) {
      anyF64 |= t.dtype == DType::F64;
      allSame &= t.dtype == plan.tensors.front().dtype;
      plan.count += t.numElements();
    }
    plan.reduceType = anyF64 ? DType::F64 : DType::F32;
    plan.contiguous = !plan.tensors.empty() && allSame &&
                      plan.tensors.front().dtype == plan.reduceType;
    for (size_t i = 1; plan.contiguous && i < plan.tensors.size(); ++i)
      plan.contiguous = plan.tensors[i - 1].offset +
                            plan.tensors[i - 1].byteSize() ==
                        plan.tensors[i].offset;
    if (!plan.tensors.empty())
      plan.offset = plan.tensors.front().offset;
    plans.push_back(std::move(plan));
  }
  return plans;
}

void packBucket(const BucketPlan &plan, const uint8_t *arena, void *staging) {
  int64_t at = 0;
  for (const TensorRef &t : plan.tensors) {
    const uint8_t *src = arena + t.offset;
    int64_t n = t.numElements();
    if (t.dtype == plan.reduceType) {
      std::memcpy(static_cast<uint8_t *>(staging) + at * dtypeInfo(t.dtype).bytes,
                  src, static_cast<size_t>(t.byteSize()));
    } else if (plan.reduceType == DType::F32) {
      auto *dst = static_cast<float *>(staging) + at;
      for (int64_t i = 0; i < n; ++i)
        dst[i] = static_cast<float>(loadElement(src, t.dtype, i));
    } else {
      auto *dst = static_cast<double *>(staging) + at;
      for (int64_t i = 0; i < n; ++i)
        dst[i] = loadElement(src, t.dtype, i);
    }
    at += n;
  }
}

template <typename T>
static void divideInPlace(T *values, int64_t count, int worldSize) {
  const T divisor = static_cast<T>(worldSize);
  for (int64_t i = 0; i < count; ++i)
    values[i] /= divisor;
}

void finishBucket(const BucketPlan &plan, uint8_t *arena, void *staging,
                  int worldSize) {
  if (plan.contiguous) {
    if (worldSize == 1)
      return;
    if (plan.reduceType == DType::F32)
      divideInPlace(reinterpret_cast<float *>(arena + plan.offset), plan.count,
                    worldSize);
    else
      divideInPlace(reinterpret_cast<double *>(arena + plan.offset),
                    plan.count, worldSize);
    return;
  }
  if (plan.reduceType == DType::F32)
    divideInPlace(static_cast<float *>(staging), plan.count, worldSize);
  else
    divideInPlace(static_cast<double *>(staging), plan.count, worldSize);
  int64_t at = 0;
  for (const TensorRef &t : plan.tensors) {
    uint8_t *dst = arena + t.offset;
    int64_t n = t.numElements();
    if (t.dtype == plan.reduceType) {
      std::memcpy(dst,
                  static_cast<uint8_t *>(staging) + at * dtypeInfo(t.dtype).bytes,
                  static_cast<size_t>(t.byteSize()));
    } else {
      for (int64_t i = 0; i < n; ++i)
        storeElement(dst, t.dtype, i,
                     plan.reduceType == DType::F32
                         ? double(static_cast<float *>(staging)[at + i])
                         : static_cast<double *>(staging)[at + i]);
    }
    at += n;
  }
}

} // namespace kiln::rt::exec
