// RUN: kiln-opt %s -split-input-file --kiln-bf16 | FileCheck %s

// The data-movement ops run in the precision that arrives: bf16 after a
// convolution, through the split, concat, shuffle and flatten; a concat of
// a bf16 and an f32 value rounds the f32 one (here an input, which then
// arrives in bf16).
kiln.variable parameter @w : tensor<1x1x4x8xf32> init he_normal
kiln.variable parameter @fc : tensor<16x2xf32> init he_normal
// CHECK-LABEL: func.func @forward
// CHECK-SAME: %[[OTHER:[a-z0-9]+]]: tensor<2x1x2x2xbf16>
func.func @forward(%x: tensor<2x1x2x4xf32>, %other: tensor<2x1x2x2xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x2xf32>) {
  %w = kiln.read @w : tensor<1x1x4x8xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<2x1x2x8xbf16>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x1x2x4xf32>, tensor<1x1x4x8xf32>) -> tensor<2x1x2x8xf32>
  // CHECK: %[[A:.*]] = kiln.slice %[[C]] axis 3 start 0 size 6 : (tensor<2x1x2x8xbf16>) -> tensor<2x1x2x6xbf16>
  %a = kiln.slice %c axis 3 start 0 size 6 : (tensor<2x1x2x8xf32>) -> tensor<2x1x2x6xf32>
  // CHECK: %[[CAT:.*]] = kiln.concat %[[A]], %[[OTHER]] axis 3 : (tensor<2x1x2x6xbf16>, tensor<2x1x2x2xbf16>) -> tensor<2x1x2x8xbf16>
  %cat = kiln.concat %a, %other axis 3 : (tensor<2x1x2x6xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x8xf32>
  // CHECK: %[[S:.*]] = kiln.channel_shuffle %[[CAT]] groups 2 : tensor<2x1x2x8xbf16>
  %s = kiln.channel_shuffle %cat groups 2 : tensor<2x1x2x8xf32>
  // CHECK: %[[T:.*]] = kiln.transpose %[[S]] permutation [0, 3, 1, 2] : (tensor<2x1x2x8xbf16>) -> tensor<2x8x1x2xbf16>
  %t = kiln.transpose %s permutation [0, 3, 1, 2] : (tensor<2x1x2x8xf32>) -> tensor<2x8x1x2xf32>
  // CHECK: kiln.reshape %[[T]] : tensor<2x8x1x2xbf16> to tensor<2x16xbf16>
  %f = kiln.reshape %t : tensor<2x8x1x2xf32> to tensor<2x16xf32>
  %fc = kiln.read @fc : tensor<16x2xf32>
  %l = kiln.dense %f, %fc : (tensor<2x16xf32>, tensor<16x2xf32>) -> tensor<2x2xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss, %l : tensor<f32>, tensor<2x2xf32>
}

// -----

// Negative case: on f32 values they stay f32 (no cast is added).
// CHECK-LABEL: func.func @f32
// CHECK-NOT: kiln.cast
// CHECK: kiln.concat %{{.*}}, %{{.*}} axis 3 : (tensor<2x1x2x6xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x8xf32>
// CHECK-NEXT: kiln.slice %{{.*}} axis 3 start 2 size 4 : (tensor<2x1x2x8xf32>) -> tensor<2x1x2x4xf32>
// CHECK-NEXT: kiln.channel_shuffle %{{.*}} groups 2 : tensor<2x1x2x4xf32>
// CHECK-NEXT: kiln.transpose %{{.*}} permutation [0, 3, 1, 2] : (tensor<2x1x2x4xf32>) -> tensor<2x4x1x2xf32>
// CHECK-NOT: kiln.cast
func.func @f32(%a: tensor<2x1x2x6xf32>, %b: tensor<2x1x2x2xf32>) -> tensor<2x4x1x2xf32> {
  %cat = kiln.concat %a, %b axis 3 : (tensor<2x1x2x6xf32>, tensor<2x1x2x2xf32>) -> tensor<2x1x2x8xf32>
  %s = kiln.slice %cat axis 3 start 2 size 4 : (tensor<2x1x2x8xf32>) -> tensor<2x1x2x4xf32>
  %sh = kiln.channel_shuffle %s groups 2 : tensor<2x1x2x4xf32>
  %t = kiln.transpose %sh permutation [0, 3, 1, 2] : (tensor<2x1x2x4xf32>) -> tensor<2x4x1x2xf32>
  return %t : tensor<2x4x1x2xf32>
}
