//===- Simulator.cpp - The host's view of a simulated core ----------------===//

#include "kiln/sim/Simulator.h"

#include "kiln/ref/bf16.h"
#include "kiln/ref/init.h"
#include "kiln/sim/Isa.h"

namespace kiln::sim {

Simulator::Simulator(std::unique_ptr<Program> program,
                     const TargetConfig &target)
    : prog(std::move(program)), config(target) {}

FunctionalMachine &Simulator::functional() {
  // Values exist only once the host uses them: a timed-only run of a large
  // model never allocates its tensors.
  if (!machine) {
    machine = std::make_unique<FunctionalMachine>(*prog);
    if (allReduce)
      machine->setAllReduce(allReduce);
  }
  return *machine;
}

Status Simulator::create(std::unique_ptr<Program> program,
                         const TargetConfig &target,
                         std::unique_ptr<Simulator> &simulator) {
  if (!program)
    return invalidArgumentError("no program");
  KILN_RETURN_IF_ERROR(verifyProgram(*program, target));
  simulator.reset(new Simulator(std::move(program), target));
  return Status::ok();
}

Status Simulator::initializeVariables(uint64_t seed) {
  for (size_t i = 0; i < prog->buffers.size(); ++i) {
    const fb::BufferT &b = *prog->buffers[i];
    if (b.role != fb::Role::Parameter && b.role != fb::Role::State)
      continue;
    std::vector<float> &mem = functional().buffer(uint32_t(i));
    ref::Tensor t(b.shape);
    switch (b.init) {
    case fb::Init::None:
    case fb::Init::Zeros:
      break;
    case fb::Init::Ones:
      t = ref::Tensor::filled(b.shape, 1.0f);
      break;
    case fb::Init::Value:
      t.data = b.data;
      break;
    case fb::Init::Normal:
      ref::fillNormal(t, b.init_std, seed, b.binding);
      break;
    case fb::Init::HeNormal:
      if (b.shape.size() < 2)
        return invalidArgumentError("variable '" + b.binding +
                                    "': he_normal needs rank >= 2");
      ref::fillHeNormal(t, seed, b.binding);
      break;
    }
    mem = std::move(t.data);
    if (b.dtype == fb::DType::BF16)
      for (float &v : mem)
        v = ref::roundToBf16(v);
  }
  return Status::ok();
}

int Simulator::findBinding(const std::string &binding) const {
  for (size_t i = 0; i < prog->buffers.size(); ++i) {
    const fb::BufferT &b = *prog->buffers[i];
    if (b.role != fb::Role::Temp && b.role != fb::Role::Constant &&
        b.binding == binding)
      return int(i);
  }
  return -1;
}

std::vector<float> spaceToDepth2(const std::vector<float> &x, int64_t n,
                                 int64_t h, int64_t w, int64_t c) {
  std::vector<float> y(x.size());
  int64_t oh = h / 2, ow = w / 2;
  for (int64_t b = 0; b < n; ++b)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        for (int64_t p = 0; p < 2; ++p)
          for (int64_t q = 0; q < 2; ++q)
            for (int64_t k = 0; k < c; ++k)
              y[size_t((((b * oh + i) * ow + j) * 4 + p * 2 + q) * c + k)] =
                  x[size_t(((b * h + 2 * i + p) * w + 2 * j + q) * c + k)];
  return y;
}

Status Simulator::setInput(const std::string &binding,
                           const std::vector<float> &values) {
  int id = findBinding(binding);
  if (id < 0 || prog->buffers[size_t(id)]->role != fb::Role::Input)
    return invalidArgumentError("the program has no input '" + binding + "'");
  const fb::BufferT &b = *prog->buffers[size_t(id)];
  int64_t n = shapeElements(b.shape);
  if (int64_t(values.size()) != n)
    return invalidArgumentError("input '" + binding + "' needs " +
                                std::to_string(n) + " values, got " +
                                std::to_string(values.size()));
  std::vector<float> &mem = functional().buffer(uint32_t(id));
  if (b.host_layout == fb::HostLayout::SpaceToDepth2)
    mem = spaceToDepth2(values, b.shape[0], 2 * b.shape[1], 2 * b.shape[2],
                        b.shape[3] / 4);
  else
    mem = values;
  if (b.dtype == fb::DType::BF16)
    for (float &v : mem)
      v = ref::roundToBf16(v);
  return Status::ok();
}

Status Simulator::read(const std::string &binding, std::vector<float> &values) {
  int id = findBinding(binding);
  if (id < 0)
    return invalidArgumentError("the program has no buffer bound to '" +
                                binding + "'");
  values = functional().buffer(uint32_t(id));
  return Status::ok();
}

Status Simulator::writeVariable(const std::string &binding,
                                const std::vector<float> &values) {
  int id = findBinding(binding);
  if (id < 0 || (prog->buffers[size_t(id)]->role != fb::Role::Parameter &&
                 prog->buffers[size_t(id)]->role != fb::Role::State))
    return invalidArgumentError("the program has no variable '" + binding +
                                "'");
  std::vector<float> &mem = functional().buffer(uint32_t(id));
  if (values.size() != mem.size())
    return invalidArgumentError("variable '" + binding + "' holds " +
                                std::to_string(mem.size()) + " values, got " +
                                std::to_string(values.size()));
  mem = values;
  return Status::ok();
}

Status Simulator::runStep() { return functional().run(); }

const TimingResult &Simulator::timing(const TimingOptions &options) {
  if (!timed || timedRanks != options.ranks) {
    timed = simulateTiming(*prog, config, options);
    timedRanks = options.ranks;
  }
  return *timed;
}

Report Simulator::report(const TimingOptions &options) {
  return makeReport(*prog, config, timing(options));
}

} // namespace kiln::sim
