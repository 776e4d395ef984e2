// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   "--kiln-optimizer=optimizer=sgd nesterov=true weight-decay=5e-4 schedule=linear_warmup_linear_decay lr=0.1 peak-lr=4.8 warmup-steps=260 total-steps=4680 label-smoothing=0.1" \
// RUN:   | FileCheck %s --check-prefix=SGD
// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   "--kiln-optimizer=optimizer=lars weight-decay=1e-4 lars-epsilon=1e-5 schedule=warmup_polynomial_decay lr=31.2 warmup-steps=25 total-steps=100 end-lr=1e-4" \
// RUN:   | FileCheck %s --check-prefix=LARS
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-optimizer="schedule=step_decay lr=0.1 boundaries=30,60,80" | FileCheck %s --check-prefix=STEP
// Lengths in epochs, and a horizon left to the run: -1 in the slot, and the
// variable says how the runtime fills it.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --kiln-optimizer="schedule=cosine_decay lr=0.1 warmup-epochs=1 decay-epochs=2.5" | FileCheck %s --check-prefix=EPOCHS
// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --kiln-optimizer="schedule=warmup_polynomial_decay lr=2 warmup-steps=5" | FileCheck %s --check-prefix=RUNLENGTH
// RUN: kiln-opt %s -split-input-file -verify-diagnostics \
// RUN:   --kiln-optimizer="schedule=step_decay lr=0.1 warmup-steps=3 boundary-epochs=30,60" | FileCheck %s --check-prefix=STEP-EPOCHS

// The SURFsara/Intel recipe's gradual_warmup_then_dec(0.1, 260, 4.8, step, 4680) exactly.
// SGD: kiln.variable state @kiln.lr_schedule : tensor<4xf64> init constant value dense<[1.000000e-01, 2.600000e+02, 4.800000e+00, 4.680000e+03]>
// SGD: kiln.variable state @w.momentum : tensor<4x4xf32> init zeros
// SGD: kiln.variable state @b.momentum : tensor<4xf32> init zeros
// LARS: kiln.variable state @kiln.lr_schedule : tensor<5xf64> init constant value dense<[3.120000e+01, 2.500000e+01, 1.000000e+02, 1.000000e-04, 2.000000e+00]>
// STEP: kiln.variable state @kiln.lr_schedule : tensor<7xf64> init constant value dense<[1.000000e-01, 0.000000e+00, 0.000000e+00, 1.000000e-01, 3.000000e+01, 6.000000e+01, 8.000000e+01]>
// EPOCHS: kiln.variable state @kiln.lr_schedule : tensor<5xf64> init constant value dense<[1.000000e-01, 0.000000e+00, -1.000000e+00, -1.000000e+00, 0.000000e+00]> : tensor<5xf64> {kiln.epochs = {total_steps = 2.500000e+00 : f64, warmup_steps = 1.000000e+00 : f64}}
// RUNLENGTH: kiln.variable state @kiln.lr_schedule : tensor<5xf64> init constant value dense<[2.000000e+00, 5.000000e+00, -1.000000e+00, 0.000000e+00, 2.000000e+00]> : tensor<5xf64> {kiln.run_length = "total_steps"}
// STEP-EPOCHS: kiln.variable state @kiln.lr_schedule : tensor<6xf64> init constant value dense<[1.000000e-01, 0.000000e+00, 3.000000e+00, 1.000000e-01, -1.000000e+00, -1.000000e+00]> : tensor<6xf64> {kiln.epochs = {boundary0 = 3.000000e+01 : f64, boundary1 = 6.000000e+01 : f64}}
kiln.variable parameter @w : tensor<4x4xf32> init he_normal
kiln.variable parameter @b : tensor<4xf32> init zeros

// SGD-LABEL: func.func @train_step
// SGD-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[Y:.*]]: tensor<2xi32>, %[[STEPARG:.*]]: tensor<i64> {kiln.step})
// SGD-SAME: -> (tensor<f32>, tensor<f32> {kiln.learning_rate})
// LARS-LABEL: func.func @train_step
func.func @train_step(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<4x4xf32> {kiln.gradient_of = @w}, tensor<4xf32> {kiln.gradient_of = @b}) {
  %w = kiln.read @w : tensor<4x4xf32>
  %b = kiln.read @b : tensor<4xf32>
  %y = kiln.dense %x, %w bias %b : (tensor<2x4xf32>, tensor<4x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  // SGD: %[[LOSS:.*]] = kiln.softmax_cross_entropy %{{.*}}, %[[Y]] label_smoothing 1.000000e-01
  %loss = kiln.softmax_cross_entropy %y, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  %one = arith.constant dense<1.0> : tensor<f32>
  // SGD: kiln.softmax_cross_entropy_backward {{.*}} label_smoothing 1.000000e-01
  %dy = kiln.softmax_cross_entropy_backward %one, %y, %labels : (tensor<f32>, tensor<2x4xf32>, tensor<2xi32>) -> tensor<2x4xf32>
  // SGD: %[[DW:.*]] = kiln.matmul
  %dw = kiln.matmul %x, %dy transpose_lhs : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  // SGD: %[[DB:.*]] = kiln.reduce_sum
  %db = kiln.reduce_sum %dy : (tensor<2x4xf32>) -> tensor<4xf32>
  // SGD: %[[P:.*]] = kiln.read @kiln.lr_schedule : tensor<4xf64>
  // SGD: %[[LR:.*]] = kiln.learning_rate %[[STEPARG]], %[[P]] schedule linear_warmup_linear_decay
  // SGD: %[[W:.*]] = kiln.read @w
  // SGD: %[[V:.*]] = kiln.read @w.momentum
  // SGD: %[[NW:.*]], %[[NV:.*]] = kiln.sgd_update %[[W]], %[[DW]], %[[V]], %[[LR]] momentum 0.899999976 weight_decay 5.000000e-04 nesterov : tensor<4x4xf32>
  // SGD: kiln.assign @w, %[[NW]]
  // SGD: kiln.assign @w.momentum, %[[NV]]
  // Biases are not decayed by default (no-decay=bn,bias).
  // SGD: kiln.sgd_update %{{.*}}, %[[DB]], %{{.*}}, %[[LR]] momentum 0.899999976 weight_decay 0.000000e+00 nesterov : tensor<4xf32>
  // SGD: return %[[LOSS]], %[[LR]] : tensor<f32>, tensor<f32>
  // LARS: kiln.lars_update {{.*}} momentum 0.899999976 eta 1.000000e-03 weight_decay 9.99999974E-5 epsilon 9.99999974E-6 : tensor<4x4xf32>
  // LARS: kiln.lars_update {{.*}} skip_adaptation : tensor<4xf32>
  return %loss, %dw, %db : tensor<f32>, tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Negative case: no gradients to apply.
// expected-error @+1 {{returns no gradients: run --kiln-autodiff first}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
