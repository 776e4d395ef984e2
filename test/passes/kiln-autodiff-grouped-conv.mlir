// RUN: kiln-opt %s -split-input-file --kiln-autodiff -verify-diagnostics | FileCheck %s

// A grouped convolution's gradients carry its groups; a convolution's bias
// operand gets bias_add's gradient, the reduction of dy per channel.
kiln.variable parameter @w : tensor<3x3x2x8xf32> init he_normal
kiln.variable parameter @b : tensor<8xf32> init zeros
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x4xf32>, %{{.*}}: tensor<2xi32>)
// CHECK-SAME: -> (tensor<f32>, tensor<2x8xf32>, tensor<3x3x2x8xf32> {kiln.gradient_of = @w}, tensor<8xf32> {kiln.gradient_of = @b})
func.func @forward(%x: tensor<2x4x4x4xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x8xf32>) {
  // CHECK: %[[W:.*]] = kiln.read @w
  %w = kiln.read @w : tensor<3x3x2x8xf32>
  %b = kiln.read @b : tensor<8xf32>
  %y = kiln.conv2d %x, %w bias %b stride [2, 2] pad [0, 1, 0, 1] groups 2 : (tensor<2x4x4x4xf32>, tensor<3x3x2x8xf32>, tensor<8xf32>) -> tensor<2x2x2x8xf32>
  %p = kiln.global_avg_pool %y : (tensor<2x2x2x8xf32>) -> tensor<2x8xf32>
  %loss = kiln.softmax_cross_entropy %p, %labels : (tensor<2x8xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DY:.*]] = kiln.global_avg_pool_backward
  // CHECK-DAG: %[[DW:.*]] = kiln.conv2d_backward_filter %[[X]], %[[DY]] stride [2, 2] pad [0, 1, 0, 1] groups 2 : (tensor<2x4x4x4xf32>, tensor<2x2x2x8xf32>) -> tensor<3x3x2x8xf32>
  // CHECK-DAG: %[[DB:.*]] = kiln.bias_add_backward %[[DY]] : (tensor<2x2x2x8xf32>) -> tensor<8xf32>
  // CHECK: return %{{.*}}, %{{.*}}, %[[DW]], %[[DB]]
  return %loss, %p : tensor<f32>, tensor<2x8xf32>
}

// -----

// A depthwise convolution whose input needs a gradient: backward data with
// the same groups.
kiln.variable parameter @a : tensor<1x1x3x4xf32> init he_normal
kiln.variable parameter @d : tensor<3x3x1x4xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x4xf32>) {
  %a = kiln.read @a : tensor<1x1x3x4xf32>
  %h = kiln.conv2d %x, %a stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x3xf32>, tensor<1x1x3x4xf32>) -> tensor<2x4x4x4xf32>
  %d = kiln.read @d : tensor<3x3x1x4xf32>
  %y = kiln.conv2d %h, %d stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<2x4x4x4xf32>, tensor<3x3x1x4xf32>) -> tensor<2x4x4x4xf32>
  %p = kiln.global_avg_pool %y : (tensor<2x4x4x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %p, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: kiln.conv2d_backward_data %{{.*}}, %{{.*}} stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<2x4x4x4xf32>, tensor<3x3x1x4xf32>) -> tensor<2x4x4x4xf32>
  // CHECK: kiln.conv2d_backward_filter %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x3xf32>, tensor<2x4x4x4xf32>) -> tensor<1x1x3x4xf32>
  return %loss, %p : tensor<f32>, tensor<2x4xf32>
}

// -----

// Negative case: groups that do not divide the output channels fail to
// verify before autodiff.
func.func @forward(%x: tensor<2x4x4x4xf32>, %w: tensor<3x3x2x6xf32>) -> tensor<2x4x4x6xf32> {
  // expected-error @+2 {{kiln.conv2d: the filter (HWIO) has 6 output channels, not a multiple of 4 groups}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<2x4x4x4xf32>, tensor<3x3x2x6xf32>) -> tensor<2x4x4x6xf32>
  return %y : tensor<2x4x4x6xf32>
}
