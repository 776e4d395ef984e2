//===- cpu_check.cpp - Does this CPU run the generated code? --------------===//

#include "kiln/rt/exec/cpu_check.h"

#include "kiln/rt/cpu_features.h"

#include "kiln/base/json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <string>
#include <vector>

namespace kiln::rt::exec {

bool hostHasCpuFeature(std::string_view name) {
  // __builtin_cpu_supports takes only string literals: one test per name.
#define KILN_TEST_FEATURE(feature)                                             \
  if (name == feature)                                                         \
    return __builtin_cpu_supports(feature);
  KILN_CPU_FEATURES(KILN_TEST_FEATURE)
#undef KILN_TEST_FEATURE
  return false;
}

Status checkTargetCpu(std::string_view targetJson,
                      bool (*hasFeature)(std::string_view)) {
  json::Value target;
  const json::Value *cpu = nullptr, *features = nullptr;
  Status parsed = json::parse(targetJson, target);
  if (parsed.isOk()) {
    cpu = target.member("cpu");
    features = target.member("features");
  }
  if (!cpu || cpu->kind != json::Value::Kind::String || !features ||
      features->kind != json::Value::Kind::Array)
    return KILN_STATUS(
        kInternal,
        fmt::format("the model's target description is not "
                    "{{\"cpu\": ..., \"features\": [...]}} "
                    "({}): a stale or foreign object file",
                    parsed.isOk() ? "wrong members" : parsed.message()));
  std::vector<std::string> missing;
  for (const json::Value &feature : features->elements) {
    if (feature.kind != json::Value::Kind::String)
      return KILN_STATUS(kInternal,
                         "the model's target features are not all strings");
    if (!hasFeature(feature.text))
      missing.push_back(feature.text);
  }
  if (missing.empty())
    return Status::ok();
  return KILN_STATUS(
      kInvalidArgument,
      fmt::format("this executable's code was generated for CPU '{}', and "
                  "this CPU lacks {}: it would stop on an illegal "
                  "instruction. Compile the model on this machine (kilnc "
                  "--cpu=native, the default) or for a CPU it matches "
                  "(kilnc --cpu=NAME, e.g. x86-64-v3)",
                  cpu->text, fmt::join(missing, ", ")));
}

} // namespace kiln::rt::exec
