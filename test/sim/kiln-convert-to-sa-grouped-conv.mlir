// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s

// Grouped and depthwise convolutions. A depthwise one (one input channel
// per output channel) runs on the vector unit, whole images per tile with
// the filter on chip; a grouped one is one implicit GEMM on the MXU per
// group, whose DMAs read the group's channels of the input and filter and
// write its channels of the output (operands in HBM for those strided
// views).

// CHECK-LABEL: sa.program @depthwise
// CHECK: sa.source "conv2d" "step"
// CHECK: %[[W:.+]] = sa.dma @input1 <[1] x [72]
// CHECK: %[[X:.+]] = sa.dma @input0 <[1] x [256]
// CHECK: sa.vector depthwise_conv ({{.*}}) -> ({{.*}}) rows 0 channels 0 iattrs [2, 4, 4, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1] after %[[W]], %[[X]]
// CHECK-NOT: sa.matmul
module @depthwise {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x1x8xf32>) -> tensor<2x4x4x8xf32> {
    %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<2x4x4x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x4x4x8xf32>
    return %y : tensor<2x4x4x8xf32>
  }
}

// -----

// The data and filter gradients of a depthwise convolution; the filter
// gradient accumulates over image tiles in f32 and is copied out once.
// CHECK-LABEL: sa.program @depthwise_gradients
// CHECK: sa.source "conv2d_backward_data" "step"
// CHECK: sa.vector depthwise_conv_grad_data
// CHECK-SAME: iattrs [2, 8, 8, 8, 3, 3, 2, 2, 0, 1, 0, 1, 1, 1]
// CHECK: sa.source "conv2d_backward_filter" "step"
// CHECK: sa.vector fill () -> (@[[ACC:.+]][0]) rows 1 channels 72
// CHECK: sa.vector depthwise_conv_grad_filter ({{.*}}) -> (@[[ACC]][0])
// CHECK: sa.vector copy (@[[ACC]][0])
module @depthwise_gradients {
  func.func @train_step(%x: tensor<2x8x8x8xf32>, %dy: tensor<2x4x4x8xf32>, %w: tensor<3x3x1x8xf32>) -> (tensor<2x8x8x8xf32>, tensor<3x3x1x8xf32>) {
    %dx = kiln.conv2d_backward_data %dy, %w stride [2, 2] pad [0, 1, 0, 1] groups 8 : (tensor<2x4x4x8xf32>, tensor<3x3x1x8xf32>) -> tensor<2x8x8x8xf32>
    %dw = kiln.conv2d_backward_filter %x, %dy stride [2, 2] pad [0, 1, 0, 1] groups 8 : (tensor<2x8x8x8xf32>, tensor<2x4x4x8xf32>) -> tensor<3x3x1x8xf32>
    return %dx, %dw : tensor<2x8x8x8xf32>, tensor<3x3x1x8xf32>
  }
}

// -----

// Two groups of the data gradient: group 1 reads dy's channels [4, 8) and
// the filter's output channels [4, 8), and writes dx's channels [4, 8).
// CHECK-LABEL: sa.program @grouped_data
// CHECK: sa.source "conv2d_backward_data" "step"
// CHECK: sa.dma @input1 {{.*}}(stride 1, offset 0, bound 4, row [0, 0], col [1])> to @s0.w
// CHECK: sa.dma @input0 <[1] x [16, 4]{{.*}}(stride 1, offset 0, bound 4, row [0], col [0, 1])>
// CHECK: sa.matmul mxu 0
// CHECK: sa.dma @s0.acc{{.*}} to @[[DX:t[0-9]+]] {{.*}}(stride 1, offset 0, bound 8, row [0, 0, 0], col [1])>
// CHECK: sa.dma @input1 {{.*}}(stride 1, offset 4, bound 8, row [0, 0], col [1])> to @s0.w
// CHECK: sa.dma @input0 <[1] x [16, 4]{{.*}}(stride 1, offset 4, bound 8, row [0], col [0, 1])>
// CHECK: sa.matmul mxu 0
// CHECK: sa.dma @s0.acc{{.*}} to @[[DX]] {{.*}}(stride 1, offset 4, bound 8, row [0, 0, 0], col [1])>
module @grouped_data {
  func.func @train_step(%dy: tensor<2x4x4x8xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32> {
    %dx = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<2x4x4x8xf32>, tensor<3x3x4x8xf32>) -> tensor<2x4x4x8xf32>
    return %dx : tensor<2x4x4x8xf32>
  }
}

// -----

// The filter gradient of two groups: each its own x^T dy over its channels,
// stored into its columns of dW (base 4 for group 1).
// CHECK-LABEL: sa.program @grouped_filter
// CHECK: sa.source "conv2d_backward_filter" "step"
// CHECK: sa.matmul mxu 0
// CHECK: sa.dma @s0.acc{{.*}} to @[[DW:t[0-9]+]] <[36] x [4], base 0,
// CHECK: sa.dma @input0 <[2] x [16, 4]{{.*}}(stride 1, offset 4, bound 8, row [0], col [0, 1])>
// CHECK: sa.dma @input1 <[2] x [16, 4]{{.*}}(stride 1, offset 4, bound 8, row [0], col [0, 1])>
// CHECK: sa.matmul mxu 0
// CHECK: sa.dma @s0.acc{{.*}} to @[[DW]] <[36] x [4], base 4,
module @grouped_filter {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %dy: tensor<2x4x4x8xf32>) -> tensor<3x3x4x8xf32> {
    %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<3x3x4x8xf32>
    return %dw : tensor<3x3x4x8xf32>
  }
}

// -----

// A grouped forward convolution whose result another op reads: the result
// lives in HBM (the groups write it through strided views), never on chip.
// CHECK-LABEL: sa.program @grouped_forward
// CHECK: sa.buffer @{{t[0-9]+}} : hbm f32 [2, 4, 4, 8]{{$}}
// CHECK: sa.source "conv2d" "step"
// CHECK-COUNT-2: sa.matmul
// CHECK: sa.source "relu" "step"
module @grouped_forward {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x2x8xf32>) -> tensor<2x4x4x8xf32> {
    %y = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] groups 4 : (tensor<2x4x4x8xf32>, tensor<1x1x2x8xf32>) -> tensor<2x4x4x8xf32>
    %r = kiln.relu %y : tensor<2x4x4x8xf32>
    return %r : tensor<2x4x4x8xf32>
  }
}

// -----

// Negative case: a bias that --kiln-fuse folded into the convolution (x86
// only; the systolic step keeps kiln.bias_add) is refused, naming the op.
module @biased {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %w: tensor<3x3x8x8xf32>, %b: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.conv2d' with a fused bias is not supported on the systolic target; convert the unfused step}}
    %y = kiln.conv2d %x, %w bias %b stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x8xf32>, tensor<3x3x8x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
    return %y : tensor<2x4x4x8xf32>
  }
}
