// kiln.dropout through the passes of the training step: autodiff (its
// gradient is the same dropout of dy, with the same step and attributes),
// the optimizer (the schedule reads the model's step argument instead of
// adding another), --kiln-derive-eval (the identity, and the step argument
// goes with it), --kiln-bf16 (follows its input; the step stays i64) and
// --kiln-layout (any layout: it computes where its operand is).
// RUN: kiln-opt %s --kiln-autodiff | FileCheck %s --check-prefix=AD
// RUN: kiln-opt %s --kiln-autodiff "--kiln-optimizer=lr=0.1" | FileCheck %s --check-prefix=OPT
// RUN: kiln-opt %s --kiln-derive-eval | FileCheck %s --check-prefix=EVAL
// RUN: kiln-opt %s --kiln-bf16 | FileCheck %s --check-prefix=BF16
// RUN: kiln-opt %s --kiln-bf16 --kiln-autodiff \
// RUN:   | kiln-opt --pass-pipeline="builtin.module(func.func(kiln-layout{mode=blocked}))" \
// RUN:   | FileCheck %s --check-prefix=BLOCKED

kiln.variable parameter @w : tensor<3x3x16x16xf32> init he_normal
kiln.variable parameter @fc : tensor<1024x4xf32> init normal std 1.000000e-01
func.func @forward(%x: tensor<8x8x8x16xf32>, %labels: tensor<8xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<8x4xf32>) {
  %w = kiln.read @w : tensor<3x3x16x16xf32>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<8x8x8x16xf32>
  %d = kiln.dropout %c, %step ratio 2.500000e-01 seed 7 stream 0 : tensor<8x8x8x16xf32>, tensor<i64>
  %r = kiln.relu %d : tensor<8x8x8x16xf32>
  %flat = kiln.reshape %r : tensor<8x8x8x16xf32> to tensor<8x1024xf32>
  %d2 = kiln.dropout %flat, %step ratio 5.000000e-01 seed 7 stream 1 : tensor<8x1024xf32>, tensor<i64>
  %fc = kiln.read @fc : tensor<1024x4xf32>
  %logits = kiln.dense %d2, %fc : (tensor<8x1024xf32>, tensor<1024x4xf32>) -> tensor<8x4xf32>
  %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<8x4xf32>, tensor<8xi32>) -> tensor<f32>
  return %loss, %logits : tensor<f32>, tensor<8x4xf32>
}

// AD-LABEL: func.func @train_step
// AD-SAME: %[[STEP:[a-z0-9_]+]]: tensor<i64> {kiln.step}
// AD: %[[D:[a-z0-9_]+]] = kiln.dropout %{{.*}}, %[[STEP]] ratio 2.500000e-01 seed 7 stream 0
// AD: %[[D2:[a-z0-9_]+]] = kiln.dropout %{{.*}}, %[[STEP]] ratio 5.000000e-01 seed 7 stream 1
// The backward pass, last layer first: each gradient draws its forward
// op's mask again (same step, seed and stream), and the step itself has no
// gradient (none is returned for it).
// AD: kiln.softmax_cross_entropy_backward
// AD: kiln.dropout %{{.*}}, %[[STEP]] ratio 5.000000e-01 seed 7 stream 1 : tensor<8x1024xf32>, tensor<i64>
// AD: kiln.relu_backward
// AD: kiln.dropout %{{.*}}, %[[STEP]] ratio 2.500000e-01 seed 7 stream 0 : tensor<8x8x8x16xf32>, tensor<i64>
// AD: return {{.*}} : tensor<f32>, tensor<8x4xf32>, tensor<3x3x16x16xf32>, tensor<1024x4xf32>

// One step argument, the model's, read by the dropouts and the schedule.
// OPT-LABEL: func.func @train_step
// OPT-SAME: (%{{[a-z0-9_]+}}: tensor<8x8x8x16xf32>, %{{[a-z0-9_]+}}: tensor<8xi32>, %[[STEP:[a-z0-9_]+]]: tensor<i64> {kiln.step}) -> (
// OPT: kiln.dropout %{{.*}}, %[[STEP]]
// OPT: kiln.learning_rate %[[STEP]]
// Negative case: no second step argument.
// OPT-NOT: tensor<i64> {kiln.step}

// EVAL-LABEL: func.func @eval_step
// EVAL-SAME: (%[[X:[a-z0-9_]+]]: tensor<8x8x8x16xf32>, %{{[a-z0-9_]+}}: tensor<8xi32>) -> (tensor<f32>, tensor<8x4xf32>)
// EVAL: %[[C:[a-z0-9_]+]] = kiln.conv2d %[[X]]
// EVAL-NEXT: kiln.relu %[[C]]
// EVAL-NOT: kiln.dropout
// EVAL: return

// BF16: %[[C:[a-z0-9_]+]] = kiln.conv2d {{.*}} -> tensor<8x8x8x16xbf16>
// BF16: kiln.dropout %[[C]], %{{[a-z0-9_]+}} ratio 2.500000e-01 seed 7 stream 0 : tensor<8x8x8x16xbf16>, tensor<i64>
// BF16-NOT: kiln.cast {{.*}}tensor<i64>
// BF16: kiln.dropout %{{.*}}, %{{[a-z0-9_]+}} ratio 5.000000e-01 seed 7 stream 1 : tensor<8x1024xbf16>, tensor<i64>

// The 4-D dropout computes blocked between the blocked convolution and
// relu, with no reorder around it; the 2-D one has no layout.
// BLOCKED-LABEL: func.func @train_step
// BLOCKED: %[[C:[a-z0-9_]+]] = kiln.conv2d {{.*}}{kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED-NEXT: kiln.dropout %[[C]], {{.*}} stream 0 {kiln.layout = #kiln.layout<nChw16c>} : tensor<8x8x8x16xbf16>
// BLOCKED: kiln.dropout {{.*}} stream 1 : tensor<8x1024xbf16>
