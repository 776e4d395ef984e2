// Schedules that cannot be built are reported with the reason.
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay warmup-steps=10 total-steps=5" 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay" 2>&1 | FileCheck %s --check-prefix=BOUNDS
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay boundaries=5,3" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not kiln-opt %s --kiln-optimizer="schedule=linear_warmup_linear_decay total-steps=10" 2>&1 | FileCheck %s --check-prefix=PEAK
// RUN: not kiln-opt %s --kiln-optimizer="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not kiln-opt %s --kiln-optimizer="schedule=exponential" 2>&1 | FileCheck %s --check-prefix=KIND
// Lengths in epochs: one unit per length, only where the schedule has it.
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay warmup-steps=5 warmup-epochs=1" 2>&1 | FileCheck %s --check-prefix=WARMUP-BOTH
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay total-steps=50 decay-epochs=2" 2>&1 | FileCheck %s --check-prefix=DECAY-BOTH
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay boundaries=5 boundary-epochs=2" 2>&1 | FileCheck %s --check-prefix=BOUNDARY-BOTH
// RUN: not kiln-opt %s --kiln-optimizer="schedule=constant warmup-epochs=1" 2>&1 | FileCheck %s --check-prefix=CONSTANT
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay boundaries=5 decay-epochs=2" 2>&1 | FileCheck %s --check-prefix=NO-HORIZON
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay boundary-epochs=2" 2>&1 | FileCheck %s --check-prefix=NO-BOUNDARIES
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay warmup-epochs=2 decay-epochs=2" 2>&1 | FileCheck %s --check-prefix=EPOCHS-ORDER
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay boundary-epochs=3,2.5" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay warmup-epochs=-1" 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// The options are checked as they are parsed: one line each, no IR.
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay" 2>&1 | count 1
// RUN: not kiln-opt %s --kiln-optimizer="schedule=exponential" 2>&1 | count 1
// TOTAL: invalid learning-rate schedule: total-steps (5) must exceed warmup-steps (10)
// WARMUP-BOTH: invalid learning-rate schedule: warmup-steps and warmup-epochs exclude each other
// DECAY-BOTH: invalid learning-rate schedule: total-steps and decay-epochs exclude each other
// BOUNDARY-BOTH: invalid learning-rate schedule: boundaries and boundary-epochs exclude each other
// CONSTANT: invalid learning-rate schedule: warmup-epochs: the constant schedule has no warmup
// NO-HORIZON: invalid learning-rate schedule: decay-epochs: the step_decay schedule has no decay horizon (give its boundaries in epochs: boundary-epochs)
// NO-BOUNDARIES: invalid learning-rate schedule: boundary-epochs: the cosine_decay schedule has no boundaries (only step_decay has)
// EPOCHS-ORDER: invalid learning-rate schedule: decay-epochs (2) must exceed warmup-epochs (2)
// NEGATIVE: invalid learning-rate schedule: warmup-epochs, decay-epochs and boundary-epochs must be non-negative numbers
// BOUNDS: invalid learning-rate schedule: step_decay needs boundaries
// ORDER: invalid learning-rate schedule: step_decay boundaries must increase
// PEAK: invalid learning-rate schedule: linear_warmup_linear_decay needs peak-lr
// OPT: for the --optimizer option: 'adam' is not a valid value (expected sgd or lars)
// KIND: for the --schedule option: 'exponential' is not a valid value (expected constant, linear_warmup_linear_decay, warmup_polynomial_decay, step_decay or cosine_decay)
kiln.variable parameter @w : tensor<4xf32> init zeros
func.func @train_step(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {kiln.gradient_of = @w}) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}
