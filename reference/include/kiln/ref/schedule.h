//===- schedule.h - Learning-rate schedules --------------------*- C++ -*-===//
//
// Part of Kiln. Pure functions of the 0-based global step (the number of
// optimizer steps already taken), evaluated in double. See
// docs/reference-kernels.md for the sources of each formula.
//
// A warmup may last a fractional number of steps W (MLPerf v0.6 warms up
// over 25 epochs of 1281167 / 32768 steps: W = 977.45). The warmup branch is
// decided and interpolated with W itself, as the references do by epoch;
// the decay counts from floor(W) (v0.6's w_steps = w_epochs * N // B). For a
// whole W both are the formulas below unchanged.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_REF_SCHEDULE_H
#define KILN_REF_SCHEDULE_H

#include "kiln/base/status.h"

#include <cstdint>
#include <vector>

namespace kiln::ref {

enum class ScheduleKind {
  /// lr = baseLr at every step.
  Constant,
  /// The SURFsara/Intel recipe's gradual_warmup_then_dec.
  LinearWarmupLinearDecay,
  /// MLPerf LARS: warmup from 0, then polynomial decay (power 2) to endLr.
  WarmupPolynomialDecay,
  /// Goyal et al.: linear warmup, then x factor at each boundary.
  StepDecay,
  /// Linear warmup, then half-cosine to endLr.
  CosineDecay,
};

/// gradual_warmup_then_dec(initLr, warmupSteps, peakLr, step, totalSteps):
///   step <  warmupSteps: initLr + (peakLr - initLr) * step / warmupSteps
///   otherwise:           peakLr * (1 - min(step - W0, D) / D),
///                        W0 = floor(warmupSteps), D = totalSteps - W0
/// (TF1 tf.train.polynomial_decay with end 0, power 1, cycle=False.)
struct LinearWarmupLinearDecayParams {
  double initLr = 0.1;
  double warmupSteps = 260;
  double peakLr = 4.8;
  int64_t totalSteps = 4680;
};

/// MLPerf PolynomialDecayWithWarmup:
///   step <= warmupSteps: baseLr * step / warmupSteps
///   otherwise: (baseLr - endLr) * (1 - min(s, D)/D)^power + endLr,
///              s = step - W0, D = trainSteps - W0 + 1,
///              W0 = floor(warmupSteps).
/// warmupSteps == 0 means no warmup (lr(0) = baseLr).
struct PolynomialDecayParams {
  double baseLr = 31.2;
  double warmupSteps = 0;
  int64_t trainSteps = 1;
  double endLr = 1e-4;
  double power = 2.0;
};

/// step < warmupSteps: warmupInitLr + (baseLr - warmupInitLr)*step/warmupSteps
/// otherwise: baseLr * factor^(number of boundaries b with step >= b).
struct StepDecayParams {
  double baseLr = 0.1;
  double warmupInitLr = 0.0;
  double warmupSteps = 0;
  /// Strictly increasing step numbers.
  std::vector<int64_t> boundaries;
  double factor = 0.1;
};

/// step < warmupSteps: linear warmup as in StepDecayParams;
/// otherwise: endLr + (baseLr - endLr) * (1 + cos(pi * min(s, D)/D)) / 2,
///            s = step - W0, D = totalSteps - W0, W0 = floor(warmupSteps).
struct CosineDecayParams {
  double baseLr = 0.1;
  double warmupInitLr = 0.0;
  double warmupSteps = 0;
  int64_t totalSteps = 1;
  double endLr = 0.0;
};

/// A schedule: its kind and the parameters of that kind (the other parameter
/// structs are ignored).
struct Schedule {
  ScheduleKind kind = ScheduleKind::Constant;
  double constantLr = 0.1;
  LinearWarmupLinearDecayParams linear;
  PolynomialDecayParams polynomial;
  StepDecayParams step;
  CosineDecayParams cosine;

  static Schedule constant(double lr);
  static Schedule linearWarmupLinearDecay(const LinearWarmupLinearDecayParams &p);
  static Schedule warmupPolynomialDecay(const PolynomialDecayParams &p);
  static Schedule stepDecay(const StepDecayParams &p);
  static Schedule cosineDecay(const CosineDecayParams &p);
};

/// Checks the parameters of the selected kind (non-negative step counts, a
/// finite non-negative warmup not beyond the end, increasing boundaries,
/// ...).
Status checkSchedule(const Schedule &schedule);

/// The learning rate for the 0-based global `step` (step >= 0). Steps past
/// the end of a decaying schedule keep its final value.
double learningRate(const Schedule &schedule, int64_t step);

} // namespace kiln::ref

#endif // KILN_REF_SCHEDULE_H
