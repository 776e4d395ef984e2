//===- program_trace.cpp - A systolic program's step as a trace -----------===//

#include "program_trace.h"

#include "kiln/sim/Isa.h"
#include "kiln/sim/Program.h"
#include "kiln/sim/Timing.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <memory>

namespace kiln::smpi {

using namespace kiln::rt::exec;

StatusOr<CommTrace> traceFromProgram(const ProgramTraceOptions &options) {
  auto fail = [&](const Status &s) {
    return invalidArgumentError(options.path + ": " + s.message());
  };
  std::vector<uint8_t> bytes;
  std::unique_ptr<sim::Program> program;
  Status s = sim::readFile(options.path, bytes);
  if (s.isOk())
    s = sim::parseProgram(bytes.data(), bytes.size(), program);
  if (!s.isOk())
    return fail(s);
  sim::TargetConfig target = sim::targetFromProgram(*program->target);
  if (!options.profile.empty() &&
      !(s = sim::getTargetProfile(options.profile, target)).isOk())
    return fail(s);
  for (const auto &[field, value] : options.sets)
    if (!(s = sim::setTargetField(target, field, value)).isOk())
      return fail(s);
  if (!(s = sim::validateTarget(target)).isOk() ||
      !(s = sim::loadProgram(bytes.data(), bytes.size(), target, program))
           .isOk())
    return fail(s);
  bytes.clear();
  bytes.shrink_to_fit();

  // One rank: the AllReduce instructions end as they start.
  sim::TimingResult timing = sim::simulateTiming(*program, target);
  const auto &instrs = program->instructions;
  struct Point {
    uint64_t cycle;
    char kind;
    int64_t bucket;
  };
  std::vector<Point> points;
  std::vector<int64_t> bucketOf(instrs.size(), -1);
  CommTrace trace;
  trace.backend = "systolic";
  for (size_t i = 0; i < instrs.size(); ++i) {
    const sim::fb::AllReduceT *ar = instrs[i]->kind.AsAllReduce();
    if (!ar)
      continue;
    TraceBucket bucket;
    // The host reduces every gradient bucket in f32 (runtime/simhost).
    bucket.type = DType::F32;
    for (uint32_t id : ar->buffers)
      bucket.count += sim::shapeElements(program->buffers[id]->shape);
    bucketOf[i] = int64_t(trace.buckets.size());
    points.push_back({timing.instrs[i].start, 's', bucketOf[i]});
    trace.buckets.push_back(bucket);
  }
  if (trace.buckets.empty())
    return invalidArgumentError(
        options.path + ": the program has no AllReduce instruction (compile "
                       "it with gradient buckets: a bucket size above 0)");
  // Each bucket is waited for where the first instruction reading it starts.
  std::vector<uint64_t> waitAt(trace.buckets.size(), timing.cycles);
  for (size_t i = 0; i < instrs.size(); ++i)
    for (uint32_t dep : instrs[i]->deps)
      if (dep < instrs.size() && bucketOf[dep] >= 0) {
        uint64_t &at = waitAt[size_t(bucketOf[dep])];
        at = std::min(at, timing.instrs[i].start);
      }
  for (size_t b = 0; b < waitAt.size(); ++b)
    points.push_back({waitAt[b], 'w', int64_t(b)});
  // Starts before waits at one cycle, buckets in program order.
  std::stable_sort(points.begin(), points.end(),
                   [](const Point &a, const Point &b) {
                     if (a.cycle != b.cycle)
                       return a.cycle < b.cycle;
                     return a.kind == 's' && b.kind == 'w';
                   });

  TraceStep step;
  step.seconds = double(timing.cycles) / target.clockHz;
  uint64_t at = 0;
  for (const Point &p : points) {
    TraceEvent event;
    event.kind = p.kind;
    event.argument = p.bucket;
    event.computeBefore = double(p.cycle - at) / target.clockHz;
    at = p.cycle;
    step.events.push_back(event);
  }
  step.tail = double(timing.cycles - at) / target.clockHz;
  for (int i = 0; i < options.steps; ++i) {
    step.step = i;
    trace.steps.push_back(step);
  }
  return trace;
}

} // namespace kiln::smpi
