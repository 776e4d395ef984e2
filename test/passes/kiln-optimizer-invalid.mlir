// Schedules that cannot be built are reported with the reason.
// RUN: not kiln-opt %s --kiln-optimizer="schedule=cosine_decay warmup-steps=10 total-steps=5" 2>&1 | FileCheck %s --check-prefix=TOTAL
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay" 2>&1 | FileCheck %s --check-prefix=BOUNDS
// RUN: not kiln-opt %s --kiln-optimizer="schedule=step_decay boundaries=5,3" 2>&1 | FileCheck %s --check-prefix=ORDER
// RUN: not kiln-opt %s --kiln-optimizer="schedule=linear_warmup_linear_decay total-steps=10" 2>&1 | FileCheck %s --check-prefix=PEAK
// RUN: not kiln-opt %s --kiln-optimizer="optimizer=adam" 2>&1 | FileCheck %s --check-prefix=OPT
// RUN: not kiln-opt %s --kiln-optimizer="schedule=exponential" 2>&1 | FileCheck %s --check-prefix=KIND
// TOTAL: invalid learning-rate schedule: total-steps (5) must exceed warmup-steps (10)
// BOUNDS: invalid learning-rate schedule: step_decay needs boundaries
// ORDER: invalid learning-rate schedule: step_decay boundaries must increase
// PEAK: invalid learning-rate schedule: linear_warmup_linear_decay needs peak-lr
// OPT: unknown optimizer 'adam' (expected sgd or lars)
// KIND: unknown schedule 'exponential'
kiln.variable parameter @w : tensor<4xf32> init zeros
func.func @train_step(%x: tensor<4xf32>) -> (tensor<f32>, tensor<4xf32> {kiln.gradient_of = @w}) {
  %l = arith.constant dense<1.0> : tensor<f32>
  return %l, %x : tensor<f32>, tensor<4xf32>
}
