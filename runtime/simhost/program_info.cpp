//===- program_info.cpp - What kilnc says about the program ---------------===//
#include "program_info.h"

#include "kiln/base/json.h"
#include "kiln/rt/exec/manifest.h"

#include <fmt/format.h>

namespace kiln::rt::simhost {

StatusOr<ProgramInfo> parseInfo(const char *text) {
  if (!text)
    return KILN_STATUS(kInvalidArgument, "the embedded program has no info");
  json::Value root;
  Status parsed = json::parse(text, root);
  if (!parsed.isOk() || root.kind != json::Value::Kind::Object)
    return KILN_STATUS(kInvalidArgument,
                       "the embedded program's info is not a JSON object: " +
                           parsed.message());
  ProgramInfo info;
  auto string = [](const json::Value *v) {
    return v && v->kind == json::Value::Kind::String ? v->text : std::string();
  };
  if (std::string m = string(root.member("model")); !m.empty())
    info.model = m;
  info.precision = string(root.member("precision"));
  info.profile = string(root.member("profile"));
  for (auto [key, map] : {std::pair{"inputs", &info.inputs},
                          std::pair{"outputs", &info.outputs}}) {
    const json::Value *o = root.member(key);
    if (!o || o->kind != json::Value::Kind::Object)
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("the embedded program's info has no "
                                     "'{}'",
                                     key));
    for (const auto &[name, v] : o->members)
      (*map)[name] = string(&v);
  }
  for (const char *name : {"images", "labels", "step"})
    if (info.inputs[name].empty())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("info.inputs.{} is missing", name));
  for (const char *name : {"loss", "logits", "learning_rate"})
    if (info.outputs[name].empty())
      return KILN_STATUS(kInvalidArgument,
                         fmt::format("info.outputs.{} is missing", name));
  if (const json::Value *s = root.member("schedule")) {
    exec::Schedule schedule;
    KILN_RETURN_IF_ERROR(
        exec::parseScheduleEntry(*s, "info.schedule", schedule));
    info.schedule = schedule;
  }
  if (const json::Value *e = root.member("eval"))
    info.eval = e->kind == json::Value::Kind::Bool && e->boolean;
  return info;
}

} // namespace kiln::rt::simhost
