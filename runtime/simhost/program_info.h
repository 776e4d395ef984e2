//===- program_info.h - What kilnc says about the program -------*- C++ -*-===//
//
// The info JSON kilnc embeds next to a systolic program (kiln/rt/sa_program.h):
// the model's name, its precision and target profile, which buffers hold the
// step's inputs and outputs, and the learning-rate schedule.
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_SIMHOST_PROGRAM_INFO_H
#define KILN_RT_SIMHOST_PROGRAM_INFO_H

#include "kiln/base/status.h"
#include "kiln/rt/exec/schedule.h"

#include <map>
#include <optional>
#include <string>

namespace kiln::rt::simhost {

struct ProgramInfo {
  std::string model = "model";
  std::string precision;
  std::string profile;
  std::map<std::string, std::string> inputs, outputs;
  std::optional<exec::Schedule> schedule;
  bool eval = false;
};

/// Parses and checks the info JSON (`text` may be null: an error).
StatusOr<ProgramInfo> parseInfo(const char *text);

} // namespace kiln::rt::simhost

#endif // KILN_RT_SIMHOST_PROGRAM_INFO_H
