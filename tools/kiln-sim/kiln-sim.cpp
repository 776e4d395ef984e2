//===- kiln-sim.cpp - Run and report a systolic-target program ------------===//
//
// Part of Kiln. Loads a program (.ksap, from kilnc --emit=ksap or
// kiln-translate --export-sa-program) and a target configuration, then
//   - timed mode: reports cycles, MXU utilization, HBM traffic, on-chip peak
//     and images/s per op, per layer and per step (table or JSON);
//   - functional mode: trains for --steps steps on real values (IDX data or
//     synthetic inputs) and prints each step's outputs.
// --gemm=MxKxN builds and times a single GEMM instead of loading a program.
//
//===----------------------------------------------------------------------===//

#include "kiln/base/flags.h"
#include "kiln/sim/Gemm.h"
#include "kiln/sim/HostData.h"
#include "kiln/sim/Simulator.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

using namespace kiln::sim;

namespace {

const char *const kUsage = R"(usage: kiln-sim [options] PROGRAM.ksap
       kiln-sim [options] --gemm=MxKxN

Flags take their value as --flag=VALUE or --flag VALUE.
Target (default: the configuration the program was compiled for):
  --profile=NAME       tpuv3 (default core), tpuv2, tpuv1: a device name, as in
                       systolic-target executables (the x86 executable's
                       --profile is a switch: per-kernel timings)
  --set=FIELD=VALUE    override one field (repeatable); --list-fields shows them
  --print-config       print the configuration used
Modes:
  --mode=timed|functional|both   (default: timed)
  --steps=N            functional steps to run (default 1)
  --seed=S             variable initialization and synthetic data (default 0)
  --idx-images=FILE --idx-labels=FILE
                       train on an IDX dataset (else synthetic inputs)
  --print-outputs      print every output value after each step (else loss)
  --ranks=N            data-parallel ranks for the allreduce timing (default 1)
Reports (timed mode):
  --report=table|json|none   (default: table, on stdout)
  --json=FILE          also write the JSON report to FILE
  --rows=N             ops and layers shown in the table (default 20, 0: all)
Single GEMM:
  --gemm=MxKxN [--gemm-hbm] [--gemm-mxus=N]
)";

int fail(const std::string &message) {
  std::fprintf(stderr, "kiln-sim: error: %s\n", message.c_str());
  return 1;
}

/// A flag whose value is a count of at least `minValue`; `message` when
/// it is not.
kiln::flags::Flag countFlag(int64_t &target, int64_t minValue,
                            std::string message) {
  return kiln::flags::valueFlag(
      [&target, minValue, message](const std::string &, const std::string &v) {
        char *end = nullptr;
        long long n = std::strtoll(v.c_str(), &end, 10);
        if (!end || *end || n < minValue)
          return kiln::flags::usageError(message);
        target = n;
        return kiln::Status::ok();
      });
}

} // namespace

int main(int argc, char **argv) {
  std::string programPath, profile, mode = "timed", report = "table", jsonPath;
  std::string idxImages, idxLabels, gemm;
  std::vector<std::pair<std::string, std::string>> sets;
  int64_t steps = 1, seed = 0, rows = 20, ranks = 1, gemmMxus = 1;
  bool printConfig = false, printOutputs = false, gemmHbm = false;
  bool help = false, listFields = false;
  namespace flags = kiln::flags;
  flags::Parser parser;
  parser.add("--help", flags::switchFlag(help));
  parser.add("-h", flags::switchFlag(help));
  parser.add("--list-fields", flags::switchFlag(listFields));
  // A device name here; the x86 executable's --profile is a switch.
  parser.add("--profile", flags::stringFlag(profile));
  parser.add(
      "--set", flags::valueFlag([&](const std::string &, const std::string &v) {
        size_t eq = v.find('=');
        if (eq == std::string::npos)
          return flags::usageError("--set needs FIELD=VALUE, got '" + v + "'");
        sets.push_back({v.substr(0, eq), v.substr(eq + 1)});
        return kiln::Status::ok();
      }));
  parser.add("--print-config", flags::switchFlag(printConfig));
  parser.add("--mode", flags::stringFlag(mode));
  parser.add("--steps", countFlag(steps, 0, "--steps needs a count"));
  parser.add("--seed",
             countFlag(seed, 0, "--seed needs a non-negative integer"));
  parser.add("--idx-images", flags::stringFlag(idxImages));
  parser.add("--idx-labels", flags::stringFlag(idxLabels));
  parser.add("--print-outputs", flags::switchFlag(printOutputs));
  parser.add("--ranks", countFlag(ranks, 1, "--ranks needs a positive count"));
  parser.add("--report", flags::stringFlag(report));
  parser.add("--json", flags::stringFlag(jsonPath));
  parser.add("--rows", countFlag(rows, 0, "--rows needs a count"));
  parser.add("--gemm", flags::stringFlag(gemm));
  parser.add("--gemm-hbm", flags::switchFlag(gemmHbm));
  parser.add("--gemm-mxus",
             countFlag(gemmMxus, 1, "--gemm-mxus needs a positive count"));
  parser.setUnknownMessage([](const std::string &arg) {
    return "unknown option '" + arg + "' (see --help)";
  });
  parser.setPositional([&](const std::string &arg) {
    if (!programPath.empty())
      return flags::usageError("more than one program given");
    programPath = arg;
    return kiln::Status::ok();
  });
  if (kiln::Status s = parser.parse(argc, argv); !s.isOk())
    return fail(s.message());
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (listFields) {
    for (const TargetField &f : targetFields())
      std::printf("%-16s %s [source: %s]\n", f.name, f.meaning, f.source);
    return 0;
  }
  if (mode != "timed" && mode != "functional" && mode != "both")
    return fail("--mode must be timed, functional or both");
  if (report != "table" && report != "json" && report != "none")
    return fail("--report must be table, json or none");
  if (programPath.empty() == gemm.empty())
    return fail("give a program file or --gemm=MxKxN (see --help)");
  if (idxImages.empty() != idxLabels.empty())
    return fail("--idx-images and --idx-labels go together");

  // The program first (its own target is the default configuration).
  std::unique_ptr<Program> program;
  TargetConfig target;
  if (!programPath.empty()) {
    std::vector<uint8_t> bytes;
    kiln::Status s = readFile(programPath, bytes);
    if (s.isOk())
      s = parseProgram(bytes.data(), bytes.size(), program);
    if (!s.isOk())
      return fail(programPath + ": " + s.message());
    target = targetFromProgram(*program->target);
  }
  if (!profile.empty()) {
    kiln::Status s = getTargetProfile(profile, target);
    if (!s.isOk())
      return fail(s.message());
  }
  for (auto &[field, value] : sets) {
    kiln::Status s = setTargetField(target, field, value);
    if (!s.isOk())
      return fail(s.message());
  }
  kiln::Status valid = validateTarget(target);
  if (!valid.isOk())
    return fail(valid.message());
  if (printConfig)
    std::fputs(describeTarget(target).c_str(), stdout);

  if (!gemm.empty()) {
    long long m, k, n;
    char tail;
    if (std::sscanf(gemm.c_str(), "%lldx%lldx%lld%c", &m, &k, &n, &tail) != 3)
      return fail("--gemm needs MxKxN, got '" + gemm + "'");
    GemmOptions options;
    options.fromHbm = gemmHbm;
    options.mxus = uint32_t(gemmMxus);
    kiln::Status s = buildGemmProgram(target, m, k, n, options, program);
    if (!s.isOk())
      return fail(s.message());
    std::printf(
        "gemm %lldx%lldx%lld: analytical model %llu cycles per MXU "
        "chain\n",
        m, k, n,
        static_cast<unsigned long long>(gemmModelCycles(m, k, n, target)));
  }

  std::unique_ptr<Simulator> sim;
  kiln::Status created = Simulator::create(std::move(program), target, sim);
  if (!created.isOk())
    return fail((programPath.empty() ? "gemm" : programPath) + ": " +
                created.message());

  if (mode == "functional" || mode == "both") {
    IdxDataset data;
    if (!idxImages.empty()) {
      kiln::Status s = loadIdx(idxImages, idxLabels, data);
      if (!s.isOk())
        return fail(s.message());
    }
    kiln::Status s = sim->initializeVariables(uint64_t(seed));
    if (!s.isOk())
      return fail(s.message());
    // Training steps get images and labels; other programs (a GEMM, a
    // hand-written program) run on whatever their inputs hold (zeros).
    StepInputs inputs;
    bool training = gemm.empty() && findStepInputs(*sim, inputs).isOk();
    if (!training && !idxImages.empty())
      return fail("the program has no image and label inputs to train on");
    for (int64_t step = 0; step < steps; ++step) {
      if (training)
        s = feedStep(*sim, inputs, idxImages.empty() ? nullptr : &data, step,
                     uint64_t(seed));
      auto t0 = std::chrono::steady_clock::now();
      if (s.isOk())
        s = sim->runStep();
      double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      if (!s.isOk())
        return fail("step " + std::to_string(step) + ": " + s.message());
      std::printf("step %lld", static_cast<long long>(step));
      for (const auto &b : sim->program().buffers) {
        if (b->role != fb::Role::Output)
          continue;
        std::vector<float> values;
        (void)sim->read(b->binding, values);
        if (values.size() == 1)
          std::printf(" %s %.6g", b->binding.c_str(), values[0]);
        else if (printOutputs) {
          std::printf(" %s [", b->binding.c_str());
          for (size_t i = 0; i < values.size(); ++i)
            std::printf("%s%.6g", i ? " " : "", values[i]);
          std::printf("]");
        }
      }
      std::printf(" (%.2f s)\n", secs);
      std::fflush(stdout);
    }
  }

  if (mode == "timed" || mode == "both") {
    auto t0 = std::chrono::steady_clock::now();
    TimingOptions options;
    options.ranks = uint32_t(ranks);
    Report r = sim->report(options);
    double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    std::string json = formatReportJson(r);
    if (report == "table") {
      std::fputs(formatReportTable(r, size_t(rows)).c_str(), stdout);
      std::printf("(timed simulation took %.3f s)\n", secs);
    } else if (report == "json") {
      std::fputs(json.c_str(), stdout);
    }
    if (!jsonPath.empty()) {
      std::ofstream out(jsonPath);
      out << json;
      if (!out)
        return fail("cannot write '" + jsonPath + "'");
    }
  }
  return 0;
}
