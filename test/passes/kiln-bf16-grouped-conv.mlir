// --kiln-bf16 with grouped and depthwise convolutions: they compute in bf16
// like any convolution, keep their groups, and a folded bias stays f32 (the
// library adds it in f32). After autodiff, the f32 filter gradient of a
// grouped convolution keeps its groups when --kiln-fold-casts folds the
// cast into it.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-bf16 | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-bf16 --kiln-autodiff --kiln-fold-casts | FileCheck %s --check-prefix=GRAD

kiln.variable parameter @dw : tensor<3x3x1x8xf32> init he_normal
kiln.variable parameter @b : tensor<8xf32> init zeros
kiln.variable parameter @gw : tensor<1x1x4x8xf32> init he_normal
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x8xbf16>
// GRAD-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x4x4x8xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x8xf32>) {
  // CHECK: %[[DW:.*]] = kiln.read @dw : tensor<3x3x1x8xf32>
  // CHECK: %[[DWB:.*]] = kiln.cast %[[DW]] : tensor<3x3x1x8xf32> to tensor<3x3x1x8xbf16>
  // CHECK: %[[B:.*]] = kiln.read @b : tensor<8xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d %[[X]], %[[DWB]] bias %[[B]] stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xbf16>, tensor<3x3x1x8xbf16>, tensor<8xf32>) -> tensor<2x4x4x8xbf16>
  %dw = kiln.read @dw : tensor<3x3x1x8xf32>
  %b = kiln.read @b : tensor<8xf32>
  %c = kiln.conv2d %x, %dw bias %b stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xf32>, tensor<3x3x1x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  // CHECK: kiln.conv2d %[[C]], %{{.*}} stride [1, 1] pad [0, 0, 0, 0] groups 2 : (tensor<2x4x4x8xbf16>, tensor<1x1x4x8xbf16>) -> tensor<2x4x4x8xbf16>
  %gw = kiln.read @gw : tensor<1x1x4x8xf32>
  %g = kiln.conv2d %c, %gw stride [1, 1] pad [0, 0, 0, 0] groups 2 : (tensor<2x4x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x4x4x8xf32>
  %p = kiln.global_avg_pool %g : (tensor<2x4x4x8xf32>) -> tensor<2x8xf32>
  %loss = kiln.softmax_cross_entropy %p, %labels : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss, %p : tensor<f32>, tensor<2x8xf32>
}
// The bias gradient is bias_add's reduction (of the bf16 gradient, as for a
// bias_add in a bf16 step); the filter gradients are computed in f32 from
// bf16 operands, with their convolutions' groups.
// GRAD-DAG: kiln.conv2d_backward_filter %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] groups 2 : (tensor<2x4x4x8xbf16>, tensor<2x4x4x8xbf16>) -> tensor<1x1x4x8xf32>
// GRAD-DAG: kiln.conv2d_backward_data %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] groups 2 : (tensor<2x4x4x8xbf16>, tensor<1x1x4x8xbf16>) -> tensor<2x4x4x8xbf16>
// GRAD-DAG: kiln.conv2d_backward_filter %{{.*}}, %{{.*}} stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xbf16>, tensor<2x4x4x8xbf16>) -> tensor<3x3x1x8xf32>
// GRAD-DAG: kiln.bias_add_backward %{{.*}} : (tensor<2x4x4x8xbf16>) -> tensor<8xbf16>

// -----

// Negative case: a depthwise filter with two inputs per group fails to
// verify before the pass runs.
func.func @bad_depthwise(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x2x8xf32>) -> tensor<2x4x4x8xf32> {
  // expected-error @+2 {{kiln.conv2d: input has 8 channels but the filter (HWIO) expects 16 (2 per group, 8 groups)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xf32>, tensor<3x3x2x8xf32>) -> tensor<2x4x4x8xf32>
  return %y : tensor<2x4x4x8xf32>
}
