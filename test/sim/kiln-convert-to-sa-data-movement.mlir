// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s
// RUN: not kiln-opt %s -split-input-file --kiln-convert-to-sa="activation-type=bf16" 2>%t.err | FileCheck %s --check-prefix=BF16
// RUN: FileCheck %s --check-prefix=BF16ERR < %t.err

// Concat, slices, channel shuffles and transposes are DMAs between HBM
// views: each box is read into staging through one view and written out
// through another (the operands live in HBM), in chunks of its rows.

// Each input lands in its channels of the result: [0, 8), then [8, 12).
// CHECK-LABEL: sa.program @concat
// CHECK: sa.buffer @[[R:t[0-9]+]] : hbm f32 [2, 4, 4, 12] role output
// CHECK: sa.source "concat" "step"
// CHECK: %[[A:.+]] = sa.dma @input0 <[32, 8] x [1]
// CHECK: sa.dma @s0.move.0 {{.*}} to @[[R]] <[32, 8] x [1], base 0, (stride 12, offset 0, bound 32, row [1, 0], col [0]), (stride 1, offset 0, bound 12, row [0, 1], col [0])
// CHECK: sa.dma @input1 <[32, 4] x [1]
// CHECK: sa.dma @s0.move.0 {{.*}} to @[[R]] <[32, 4] x [1], base 0, (stride 12, offset 0, bound 32, row [1, 0], col [0]), (stride 1, offset 8, bound 12, row [0, 1], col [0])
// CHECK-NOT: sa.vector
// BF16-LABEL: sa.program @concat
module @concat {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %y: tensor<2x4x4x4xf32>) -> tensor<2x4x4x12xf32> {
    %r = kiln.concat %x, %y axis 3 : (tensor<2x4x4x8xf32>, tensor<2x4x4x4xf32>) -> tensor<2x4x4x12xf32>
    return %r : tensor<2x4x4x12xf32>
  }
}

// -----

// A slice reads its box at the start offset; its gradient writes zeros
// before and after the box (from a filled slot), then dy into it.
// CHECK-LABEL: sa.program @slice
// CHECK: sa.source "slice" "step"
// CHECK: sa.dma @input0 <[2, 2] x [1], base 0, (stride 4, offset 0, bound 2, row [1, 0], col [0]), (stride 1, offset 2, bound 4, row [0, 1], col [0])
// CHECK: sa.source "slice_backward" "step"
// CHECK: sa.vector fill () -> (@[[Z:s1.move.0]][0]) rows 1 channels 2 fattrs [0.000000e+00]
// CHECK: sa.dma @[[Z]] {{.*}} to @[[DX:t[0-9]+]] <[2, 1] x [1], base 0, (stride 4, offset 0, bound 2, row [1, 0], col [0]), (stride 1, offset 0, bound 4, row [0, 1], col [0])
// CHECK: sa.dma @[[Z]] {{.*}} to @[[DX]] <[2, 1] x [1], base 0, (stride 4, offset 0, bound 2, row [1, 0], col [0]), (stride 1, offset 3, bound 4, row [0, 1], col [0])
// CHECK: sa.dma @{{t[0-9]+}} <[2, 2] x [1]
// CHECK: sa.dma @[[Z]] {{.*}} to @[[DX]] <[2, 2] x [1], base 0, (stride 4, offset 0, bound 2, row [1, 0], col [0]), (stride 1, offset 1, bound 4, row [0, 1], col [0])
module @slice {
  func.func @train_step(%x: tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x4xf32>) {
    %r = kiln.slice %x axis 1 start 2 size 2 : (tensor<2x4xf32>) -> tensor<2x2xf32>
    %d = kiln.slice_backward %r axis 1 start 1 input_size 4 : (tensor<2x2xf32>) -> tensor<2x4xf32>
    return %r, %d : tensor<2x2xf32>, tensor<2x4xf32>
  }
}

// -----

// out[p, k * 2 + g] = in[p, g * 2 + k]: the read view walks columns (k, g)
// with channel coefficients [1, 2], the write view with [2, 1].
// CHECK-LABEL: sa.program @channel_shuffle
// CHECK: sa.dma @input0 <[8] x [2, 2], base 0, (stride 4, offset 0, bound 8, row [1], col [0, 0]), (stride 1, offset 0, bound 4, row [0], col [1, 2])>
// CHECK: to @{{t[0-9]+}} <[8] x [2, 2], base 0, (stride 4, offset 0, bound 8, row [1], col [0, 0]), (stride 1, offset 0, bound 4, row [0], col [2, 1])>
module @channel_shuffle {
  func.func @train_step(%x: tensor<2x2x2x4xf32>) -> tensor<2x2x2x4xf32> {
    %r = kiln.channel_shuffle %x groups 2 : tensor<2x2x2x4xf32>
    return %r : tensor<2x2x2x4xf32>
  }
}

// -----

// NHWC to NCHW: the box is the output [N, C] x [H, W]; the read view's
// channel coordinate follows the box's second row dimension.
// CHECK-LABEL: sa.program @transpose
// CHECK: sa.dma @input0 <[2, 4] x [2, 2], base 0, (stride 16, offset 0, bound 2, row [1, 0], col [0, 0]), (stride 8, offset 0, bound 2, row [0, 0], col [1, 0]), (stride 4, offset 0, bound 2, row [0, 0], col [0, 1]), (stride 1, offset 0, bound 4, row [0, 1], col [0, 0])>
module @transpose {
  func.func @train_step(%x: tensor<2x2x2x4xf32>) -> tensor<2x4x2x2xf32> {
    %r = kiln.transpose %x permutation [0, 3, 1, 2] : (tensor<2x2x2x4xf32>) -> tensor<2x4x2x2xf32>
    return %r : tensor<2x4x2x2xf32>
  }
}

// -----

// Negative case: a DMA does not convert. With the activation-type=bf16
// stopgap the step's f32 argument and a bf16 activation cannot be joined
// (--kiln-bf16 casts before the concat instead); a movement of one tensor
// keeps its type.
// BF16-LABEL: sa.program @transpose
// BF16: sa.buffer @{{t[0-9]+}} : hbm f32 [2, 4, 2, 2] role output
// BF16ERR: error: kiln-convert-to-sa: concat (step): data movement between element types (a cast belongs before it)
// CHECK-LABEL: sa.program @mixed
module @mixed {
  func.func @train_step(%x: tensor<2x4x4x8xf32>) -> tensor<2x4x4x16xf32> {
    %r = kiln.relu %x : tensor<2x4x4x8xf32>
    %c = kiln.concat %x, %r axis 3 : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x16xf32>
    return %c : tensor<2x4x4x16xf32>
  }
}
