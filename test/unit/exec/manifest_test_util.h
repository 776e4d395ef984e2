//===- manifest_test_util.h - Manifests for the runtime/exec tests -*- C++ -*-===//
//
// The test model's manifest (test_model.cpp) as bytes, and variants of it
// built through the schema's object API, the way kilnc builds manifests.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_TEST_UNIT_EXEC_MANIFEST_TEST_UTIL_H
#define KILN_TEST_UNIT_EXEC_MANIFEST_TEST_UTIL_H

#include "kiln/rt/manifest_generated.h"
#include "kiln/rt/model.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace kiln::rt::exec::test {

namespace fb = ::kiln::rt::fb;

/// The bytes of kiln_model_manifest() (the test model's).
inline std::string testManifest() {
  size_t size = 0;
  const uint8_t *data = kiln_model_manifest(&size);
  return std::string(reinterpret_cast<const char *>(data), size);
}

/// The bytes of `manifest`.
inline std::string pack(const fb::ManifestT &manifest) {
  flatbuffers::FlatBufferBuilder builder;
  fb::FinishManifestBuffer(builder, fb::Manifest::Pack(builder, &manifest));
  return std::string(
      reinterpret_cast<const char *>(builder.GetBufferPointer()),
      builder.GetSize());
}

/// The test manifest, unpacked.
inline fb::ManifestT unpackTestManifest() {
  fb::ManifestT m;
  fb::GetManifest(testManifest().data())->UnPackTo(&m);
  return m;
}

/// The test manifest changed by `change`.
inline std::string
mutated(const std::function<void(fb::ManifestT &)> &change) {
  fb::ManifestT m = unpackTestManifest();
  change(m);
  return pack(m);
}

/// A tensor slot.
inline std::unique_ptr<fb::TensorT> tensorT(int64_t offset,
                                            std::vector<int64_t> shape,
                                            fb::DType dtype = fb::DType::f32,
                                            fb::Layout layout = fb::Layout::none) {
  auto t = std::make_unique<fb::TensorT>();
  t->offset = offset;
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->layout = layout;
  return t;
}

inline std::unique_ptr<fb::NamedTensorT>
namedT(const char *name, std::unique_ptr<fb::TensorT> tensor) {
  auto n = std::make_unique<fb::NamedTensorT>();
  n->name = name;
  n->tensor = std::move(tensor);
  return n;
}

/// The member `name` of a function's inputs/outputs or a call's operands.
inline fb::TensorT &
member(std::vector<std::unique_ptr<fb::NamedTensorT>> &tensors,
       const std::string &name) {
  for (auto &t : tensors)
    if (t->name == name)
      return *t->tensor;
  ADD_FAILURE() << "no member " << name;
  static fb::TensorT none;
  return none;
}

inline fb::FunctionT &function(fb::ManifestT &m, const std::string &name) {
  for (auto &f : m.functions)
    if (f->name == name)
      return *f;
  ADD_FAILURE() << "no function " << name;
  static fb::FunctionT none;
  return none;
}

inline fb::VariableT &variable(fb::ManifestT &m, const std::string &name) {
  for (auto &v : m.variables)
    if (v->name == name)
      return *v;
  ADD_FAILURE() << "no variable " << name;
  static fb::VariableT none;
  return none;
}

} // namespace kiln::rt::exec::test

#endif // KILN_TEST_UNIT_EXEC_MANIFEST_TEST_UTIL_H
