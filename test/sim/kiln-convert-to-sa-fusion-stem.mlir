// RUN: kiln-opt %s --kiln-convert-to-sa=space-to-depth-stem=1 | FileCheck %s

// The space-to-depth stem is found through the batch norm fused with it:
// the image input is relaid by the host and the stem's epilogue takes the
// batch norm's statistics.

// CHECK-LABEL: sa.program @stem
// CHECK: sa.buffer @input0 : hbm f32 [2, 4, 4, 12] role input binding "arg0" layout space_to_depth2
// CHECK: sa.source "conv2d" "conv1"
// CHECK: sa.vector channel_moments
// CHECK: sa.source "batch_norm_train"
// CHECK-NOT: channel_moments
module @stem {
  kiln.variable parameter @conv1.weight : tensor<7x7x3x8xf32> init he_normal
  func.func @train_step(%x: tensor<2x8x8x3xf32>, %g: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
    %w = kiln.read @conv1.weight : tensor<7x7x3x8xf32>
    %c = kiln.conv2d %x, %w stride [2, 2] pad [3, 3, 3, 3] : (tensor<2x8x8x3xf32>, tensor<7x7x3x8xf32>) -> tensor<2x4x4x8xf32>
    %y, %m, %v, %nm, %nv = kiln.batch_norm_train %c, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
    %r = kiln.relu %y : tensor<2x4x4x8xf32>
    return %r : tensor<2x4x4x8xf32>
  }
}
