//===- schedule.cpp - Learning-rate schedules ------------------------------===//
//
// Part of Kiln. See schedule.h for the formulas and docs/reference-kernels.md
// for their sources.
//
//===----------------------------------------------------------------------===//

#include "kiln/ref/schedule.h"

#include "kiln/ref/check.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace kiln::ref {

Schedule Schedule::constant(double lr) {
  Schedule s;
  s.kind = ScheduleKind::Constant;
  s.constantLr = lr;
  return s;
}

Schedule Schedule::linearWarmupLinearDecay(
    const LinearWarmupLinearDecayParams &p) {
  Schedule s;
  s.kind = ScheduleKind::LinearWarmupLinearDecay;
  s.linear = p;
  return s;
}

Schedule Schedule::warmupPolynomialDecay(const PolynomialDecayParams &p) {
  Schedule s;
  s.kind = ScheduleKind::WarmupPolynomialDecay;
  s.polynomial = p;
  return s;
}

Schedule Schedule::stepDecay(const StepDecayParams &p) {
  Schedule s;
  s.kind = ScheduleKind::StepDecay;
  s.step = p;
  return s;
}

Schedule Schedule::cosineDecay(const CosineDecayParams &p) {
  Schedule s;
  s.kind = ScheduleKind::CosineDecay;
  s.cosine = p;
  return s;
}

namespace {

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", v);
  return text;
}

/// A warmup length: finite and non-negative, fractional allowed.
bool validWarmup(double w) { return std::isfinite(w) && w >= 0.0; }

} // namespace

Status checkSchedule(const Schedule &schedule) {
  switch (schedule.kind) {
  case ScheduleKind::Constant:
    return Status::ok();
  case ScheduleKind::LinearWarmupLinearDecay: {
    const auto &p = schedule.linear;
    if (!validWarmup(p.warmupSteps) || p.totalSteps <= p.warmupSteps)
      return invalidArgumentError("linear warmup/decay schedule: need 0 <= "
                                  "warmupSteps < totalSteps, got " +
                                  number(p.warmupSteps) + " and " +
                                  std::to_string(p.totalSteps));
    return Status::ok();
  }
  case ScheduleKind::WarmupPolynomialDecay: {
    const auto &p = schedule.polynomial;
    if (!validWarmup(p.warmupSteps) || p.trainSteps < p.warmupSteps)
      return invalidArgumentError(
          "polynomial schedule: need 0 <= warmupSteps <= "
          "trainSteps, got " +
          number(p.warmupSteps) + " and " + std::to_string(p.trainSteps));
    if (p.power <= 0.0)
      return invalidArgumentError(
          "polynomial schedule: power must be positive");
    return Status::ok();
  }
  case ScheduleKind::StepDecay: {
    const auto &p = schedule.step;
    if (!validWarmup(p.warmupSteps))
      return invalidArgumentError(
          "step schedule: warmupSteps must be >= 0, got " +
          number(p.warmupSteps));
    for (size_t i = 0; i < p.boundaries.size(); ++i)
      if (p.boundaries[i] < 0 ||
          (i > 0 && p.boundaries[i] <= p.boundaries[i - 1]))
        return invalidArgumentError(
            "step schedule: boundaries must be non-negative and increasing");
    return Status::ok();
  }
  case ScheduleKind::CosineDecay: {
    const auto &p = schedule.cosine;
    if (!validWarmup(p.warmupSteps) || p.totalSteps <= p.warmupSteps)
      return invalidArgumentError("cosine schedule: need 0 <= warmupSteps < "
                                  "totalSteps, got " +
                                  number(p.warmupSteps) + " and " +
                                  std::to_string(p.totalSteps));
    return Status::ok();
  }
  }
  return invalidArgumentError("unknown schedule kind");
}

namespace {

/// Linear interpolation from `from` (step 0) to `to` (step `steps`).
double linearWarmup(double from, double to, int64_t step, double steps) {
  return from + (to - from) * static_cast<double>(step) / steps;
}

double linearWarmupLinearDecay(const LinearWarmupLinearDecayParams &p,
                               int64_t step) {
  if (static_cast<double>(step) < p.warmupSteps)
    return linearWarmup(p.initLr, p.peakLr, step, p.warmupSteps);
  // tf.train.polynomial_decay(peakLr, step - warmup, total - warmup,
  //                           end_learning_rate=0, power=1, cycle=False)
  double w0 = std::floor(p.warmupSteps);
  double decaySteps = static_cast<double>(p.totalSteps) - w0;
  double s = std::min(static_cast<double>(step) - w0, decaySteps);
  return p.peakLr * (1.0 - s / decaySteps);
}

double warmupPolynomialDecay(const PolynomialDecayParams &p, int64_t step) {
  if (p.warmupSteps > 0 && static_cast<double>(step) <= p.warmupSteps)
    return p.baseLr * static_cast<double>(step) / p.warmupSteps;
  // Keras PolynomialDecay(baseLr, trainSteps - warmupSteps + 1, endLr, power)
  // evaluated at step - warmupSteps; v0.6's tf.train.polynomial_decay at
  // max(1, step - w_steps) over train_steps - w_steps + 1 is the same with
  // w_steps = floor(warmupSteps), since step > warmupSteps here.
  double w0 = std::floor(p.warmupSteps);
  double decaySteps = static_cast<double>(p.trainSteps) - w0 + 1.0;
  double s = std::min(static_cast<double>(step) - w0, decaySteps);
  return (p.baseLr - p.endLr) * std::pow(1.0 - s / decaySteps, p.power) +
         p.endLr;
}

double stepDecay(const StepDecayParams &p, int64_t step) {
  if (static_cast<double>(step) < p.warmupSteps)
    return linearWarmup(p.warmupInitLr, p.baseLr, step, p.warmupSteps);
  double lr = p.baseLr;
  for (int64_t b : p.boundaries)
    if (step >= b)
      lr *= p.factor;
  return lr;
}

double cosineDecay(const CosineDecayParams &p, int64_t step) {
  if (static_cast<double>(step) < p.warmupSteps)
    return linearWarmup(p.warmupInitLr, p.baseLr, step, p.warmupSteps);
  const double pi = 3.14159265358979323846;
  double w0 = std::floor(p.warmupSteps);
  double decaySteps = static_cast<double>(p.totalSteps) - w0;
  double s = std::min(static_cast<double>(step) - w0, decaySteps);
  return p.endLr +
         (p.baseLr - p.endLr) * 0.5 * (1.0 + std::cos(pi * s / decaySteps));
}

} // namespace

double learningRate(const Schedule &schedule, int64_t step) {
  KILN_REF_CHECK_OK(checkSchedule(schedule));
  KILN_REF_CHECK(step >= 0, "learningRate: negative step");
  switch (schedule.kind) {
  case ScheduleKind::Constant:
    return schedule.constantLr;
  case ScheduleKind::LinearWarmupLinearDecay:
    return linearWarmupLinearDecay(schedule.linear, step);
  case ScheduleKind::WarmupPolynomialDecay:
    return warmupPolynomialDecay(schedule.polynomial, step);
  case ScheduleKind::StepDecay:
    return stepDecay(schedule.step, step);
  case ScheduleKind::CosineDecay:
    return cosineDecay(schedule.cosine, step);
  }
  return 0.0;
}

} // namespace kiln::ref
