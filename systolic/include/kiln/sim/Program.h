//===- Program.h - Loading, saving and verifying programs ------*- C++ -*-===//
//
// Part of Kiln. A program in memory is the FlatBuffers object-API form
// (fb::ProgramT) of schema/program.fbs. Loading checks, in order: the file
// identifier and the FlatBuffers structure (flatbuffers::Verifier), the
// schema version, then the program's meaning (verifyProgram): buffer
// references, operand shapes and bounds, unit limits of the target, on-chip
// capacity and overlaps, dependency order. A program that loads never makes
// the executors read or write outside a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_PROGRAM_H
#define KILN_SIM_PROGRAM_H

#include "kiln/base/status.h"
#include "kiln/sim/Target.h"
#include "program_generated.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::sim {

using Program = fb::ProgramT;

/// The schema version this library writes and reads.
constexpr uint32_t kProgramVersionMajor = 1;
constexpr uint32_t kProgramVersionMinor = 1;

/// Serializes a program. Its version fields default to this library's
/// version (the schema's defaults); tests set others to check rejection.
std::vector<uint8_t> serializeProgram(const Program &program);
Status saveProgram(const Program &program, const std::string &path);

/// Parses and verifies a serialized program against `target` (the limits it
/// will run under); see the file comment.
Status loadProgram(const uint8_t *data, size_t size, const TargetConfig &target,
                   std::unique_ptr<Program> &program);
Status loadProgramFile(const std::string &path, const TargetConfig &target,
                       std::unique_ptr<Program> &program);

/// Parses a serialized program's structure and version only (for reading the
/// target config a program was compiled for before choosing the run config).
Status parseProgram(const uint8_t *data, size_t size,
                    std::unique_ptr<Program> &program);
Status readFile(const std::string &path, std::vector<uint8_t> &bytes);

/// Which buffers some instruction names. An on-chip buffer no instruction
/// uses is never live: it takes part in neither the overlap check nor the
/// on-chip peak.
std::vector<bool> referencedBuffers(const Program &program);

/// Checks the meaning of a program against a target (see the file comment).
Status verifyProgram(const Program &program, const TargetConfig &target);

TargetConfig targetFromProgram(const fb::TargetConfigT &config);
std::unique_ptr<fb::TargetConfigT> targetToProgram(const TargetConfig &config);

} // namespace kiln::sim

#endif // KILN_SIM_PROGRAM_H
