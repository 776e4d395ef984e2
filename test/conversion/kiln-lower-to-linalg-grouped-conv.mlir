// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg -verify-diagnostics | FileCheck %s

// Grouped convolutions are library calls with "groups"; a convolution's
// bias operand is the forward call's "bias". An ungrouped convolution's
// call has no "groups" member (absent means 1, so ungrouped models'
// manifests stay byte for byte what they were).
// CHECK-LABEL: module @grouped
// CHECK-SAME: {\22dilations\22:[1,1],\22function\22:\22train\22,\22groups\22:16,\22kind\22:\22conv2d_forward\22,\22operands\22:{\22bias\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[32]},\22filter\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[3,3,1,32]}
// CHECK-SAME: {\22dilations\22:[1,1],\22function\22:\22train\22,\22groups\22:16,\22kind\22:\22conv2d_backward_data\22,\22operands\22:{\22filter\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[3,3,1,32]}
// CHECK-SAME: {\22dilations\22:[1,1],\22function\22:\22train\22,\22groups\22:16,\22kind\22:\22conv2d_backward_filter\22,\22operands\22:{\22filter_grad\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[3,3,1,32]}
// CHECK-SAME: {\22dilations\22:[1,1],\22function\22:\22train\22,\22kind\22:\22conv2d_forward\22,\22operands\22:{\22filter\22:{\22dtype\22:\22f32\22,\22offset\22:{{[0-9]+}},\22shape\22:[1,1,16,32]}
module @grouped {
  kiln.variable parameter @w : tensor<3x3x1x32xf32> init he_normal
  kiln.variable parameter @b : tensor<32xf32> init zeros
  kiln.variable parameter @p : tensor<1x1x16x32xf32> init he_normal
  kiln.variable state @dw : tensor<3x3x1x32xf32> init zeros
  kiln.variable state @z : tensor<2x4x4x32xf32> init zeros
  func.func @train_step(%x: tensor<2x4x4x16xf32>, %dy: tensor<2x2x2x32xf32>) -> (tensor<2x2x2x32xf32>, tensor<2x4x4x16xf32>) {
    %w = kiln.read @w : tensor<3x3x1x32xf32>
    %b = kiln.read @b : tensor<32xf32>
    %y = kiln.conv2d %x, %w bias %b stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<2x4x4x16xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<2x2x2x32xf32>
    %dx = kiln.conv2d_backward_data %dy, %w stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<2x2x2x32xf32>, tensor<3x3x1x32xf32>) -> tensor<2x4x4x16xf32>
    %dw = kiln.conv2d_backward_filter %x, %dy stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<2x4x4x16xf32>, tensor<2x2x2x32xf32>) -> tensor<3x3x1x32xf32>
    kiln.assign @dw, %dw : tensor<3x3x1x32xf32>
    %p = kiln.read @p : tensor<1x1x16x32xf32>
    %z = kiln.conv2d %x, %p stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x16xf32>, tensor<1x1x16x32xf32>) -> tensor<2x4x4x32xf32>
    kiln.assign @z, %z : tensor<2x4x4x32xf32>
    return %y, %dx : tensor<2x2x2x32xf32>, tensor<2x4x4x16xf32>
  }
}

// -----

// Negative case: the lowering verifies its input; a bias of the wrong size
// never reaches it.
module @bad_bias {
  func.func @train_step(%x: tensor<2x4x4x16xf32>, %w: tensor<3x3x1x32xf32>, %b: tensor<16xf32>) -> tensor<2x2x2x32xf32> {
    // expected-error @+2 {{kiln.conv2d: bias has 16 elements but the filter has 32 output channels}}
    // expected-error @+1 {{failed to infer returned types}}
    %y = kiln.conv2d %x, %w bias %b stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<2x4x4x16xf32>, tensor<3x3x1x32xf32>, tensor<16xf32>) -> tensor<2x2x2x32xf32>
    return %y : tensor<2x2x2x32xf32>
  }
}
