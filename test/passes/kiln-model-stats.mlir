// RUN: kiln-opt %s -split-input-file --kiln-model-stats=per-op -o /dev/null | FileCheck %s

// A static batch of 2: cost per step and per example.
// CHECK-LABEL: parameters: 3,448 in 3 tensors
// CHECK-NEXT: state: 8 elements in 1 tensors
// CHECK-NEXT: function @step (batch 2)
// 2 * 8*8*8 outputs * 3*3*3 + 2 * 4 * 8 = 27,648 + 64
// CHECK-NEXT: multiply-adds per step: 27,712
// CHECK-NEXT: multiply-adds per example: 13,856 (0.00 G)
// CHECK-NEXT: kiln.conv2d: 27,648
// CHECK-NEXT: kiln.dense: 64
kiln.variable parameter @conv.weight : tensor<3x3x3x8xf32> init he_normal
kiln.variable parameter @fc.weight : tensor<8x4xf32> init he_normal
kiln.variable parameter @big : tensor<100x32xf32> init zeros
kiln.variable state @bn.running_mean : tensor<8xf32> init zeros
func.func @step(%x: tensor<2x8x8x3xf32>, %f: tensor<2x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<2x4xf32>) {
  %w = kiln.read @conv.weight : tensor<3x3x3x8xf32>
  %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x8x8x8xf32>
  %v = kiln.read @fc.weight : tensor<8x4xf32>
  %z = kiln.dense %f, %v : (tensor<2x8xf32>, tensor<8x4xf32>) -> tensor<2x4xf32>
  return %y, %z : tensor<2x8x8x8xf32>, tensor<2x4xf32>
}

// -----

// Negative case: nothing to count. Element-wise ops cost no multiply-adds;
// a dynamic batch has no per-step figure.
// CHECK-LABEL: parameters: 0 in 0 tensors
// CHECK-NEXT: state: 0 elements in 0 tensors
// CHECK-NEXT: function @no_cost (dynamic batch)
// CHECK-NEXT: multiply-adds per example: 0 (0.00 G)
// CHECK-NOT: kiln.
func.func @no_cost(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %y = kiln.relu %x : tensor<?x4xf32>
  return %y : tensor<?x4xf32>
}
