//===- Simulator.h - The host's view of a simulated core -------*- C++ -*-===//
//
// Part of Kiln. What a host runtime (kilnc --target=systolic executables,
// kiln-sim, tests) drives: load a program for a target, initialize the model
// variables as kiln-run does (kiln/ref/init.h), hand in a step's inputs, run
// the step functionally, read outputs and variables back, and time the step.
// Both modes run the same instruction stream.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_SIM_SIMULATOR_H
#define KILN_SIM_SIMULATOR_H

#include "kiln/sim/Functional.h"
#include "kiln/sim/Report.h"
#include "kiln/sim/Timing.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::sim {

class Simulator {
public:
  /// Verifies `program` against `target` and prepares its memory.
  static Status create(std::unique_ptr<Program> program,
                       const TargetConfig &target,
                       std::unique_ptr<Simulator> &simulator);

  const Program &program() const { return *prog; }
  const TargetConfig &target() const { return config; }

  /// Fills every parameter and state buffer from its initializer, with the
  /// values kiln-run gives for the same seed.
  Status initializeVariables(uint64_t seed);

  /// The buffer bound to `binding` ("arg0", "result1", a variable name), or
  /// -1.
  int findBinding(const std::string &binding) const;

  /// Writes an input in its logical layout (NHWC); a space-to-depth input is
  /// relaid as the input pipeline would.
  Status setInput(const std::string &binding, const std::vector<float> &values);
  /// Reads any host-visible buffer (outputs, variables) in its layout.
  Status read(const std::string &binding, std::vector<float> &values);
  /// Overwrites a variable (e.g. from a checkpoint).
  Status writeVariable(const std::string &binding,
                       const std::vector<float> &values);

  /// The host collective used by AllReduce instructions (default: one rank).
  void setAllReduce(AllReduceFn fn) {
    allReduce = fn;
    if (machine)
      machine->setAllReduce(std::move(fn));
  }

  /// Runs one step with real values.
  Status runStep();

  /// The timing of one step (it does not depend on values).
  const TimingResult &timing(const TimingOptions &options = {});
  Report report(const TimingOptions &options = {});

private:
  Simulator(std::unique_ptr<Program> program, const TargetConfig &target);
  FunctionalMachine &functional();
  std::unique_ptr<Program> prog;
  AllReduceFn allReduce;
  TargetConfig config;
  std::unique_ptr<FunctionalMachine> machine;
  std::optional<TimingResult> timed;
  uint32_t timedRanks = 0;
};

/// Relays NHWC [N, 2H, 2W, C] into [N, H, W, 4C] with channels ordered
/// (row parity, column parity, channel): the space-to-depth input transform.
std::vector<float> spaceToDepth2(const std::vector<float> &x, int64_t n,
                                 int64_t h, int64_t w, int64_t c);

} // namespace kiln::sim

#endif // KILN_SIM_SIMULATOR_H
