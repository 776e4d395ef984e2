// RUN: kiln-opt %s | FileCheck %s
// RUN: kiln-opt %s | kiln-opt | FileCheck %s

// The sa dialect round-trips: every op, view coordinates, enums and tokens.
// Views print in their short form (the attribute kind is implied).

// CHECK-LABEL: sa.program @roundtrip batch 2 target
sa.program @roundtrip batch 2 target {name = "tpuv3", mxu_count = 2 : i64, array_rows = 128 : i64, array_cols = 128 : i64, clock_hz = 9.4e8 : f64, onchip_bytes = 16777216 : i64, hbm_bytes_per_s = 4.5e11 : f64, vector_lanes = 1024 : i64, vector_latency = 16 : i64, dma_latency = 500 : i64, dma_overhead = 32 : i64, ici_bytes_per_s = 7.0e10 : f64} {
  // CHECK: sa.buffer @x : hbm f32 [2, 4, 4, 8] role input binding "arg0"
  sa.buffer @x : hbm f32 [2, 4, 4, 8] role input binding "arg0" layout identity
  // CHECK: sa.buffer @w : hbm f32 [3, 3, 8, 16] role parameter binding "conv.weight" init he_normal
  sa.buffer @w : hbm f32 [3, 3, 8, 16] role parameter binding "conv.weight" init he_normal
  // CHECK: sa.buffer @fc : hbm f32 [8, 10] role parameter binding "fc.weight" init normal std 0.00999999977
  sa.buffer @fc : hbm f32 [8, 10] role parameter binding "fc.weight" init normal std 0.00999999977
  // CHECK: sa.buffer @one : hbm f32 [1] role constant value dense<1.000000e+00> : tensor<1xf32>
  sa.buffer @one : hbm f32 [1] role constant value dense<1.000000e+00> : tensor<1xf32>
  // CHECK: sa.buffer @xs : onchip f32 [256] offset 0
  sa.buffer @xs : onchip f32 [256] offset 0
  // CHECK: sa.buffer @ws : onchip f32 [1152] offset 1024
  sa.buffer @ws : onchip f32 [1152] offset 1024
  // CHECK: sa.buffer @acc : onchip f32 [32, 16] offset 8192
  sa.buffer @acc : onchip f32 [32, 16] offset 8192
  // CHECK: sa.buffer @y : hbm bf16 [2, 4, 4, 16] role output binding "result0"
  sa.buffer @y : hbm bf16 [2, 4, 4, 16] role output binding "result0"
  // CHECK: sa.buffer @yb : onchip bf16 [512] offset 12288
  sa.buffer @yb : onchip bf16 [512] offset 12288
  // CHECK: sa.source "conv2d" "layer1.conv"
  sa.source "conv2d" "layer1.conv"
  // CHECK: %[[X:.+]] = sa.dma @x <[1] x [256], base 0, (stride 1, offset 0, bound 256, row [0], col [1])> to @xs <[1] x [256], base 0, (stride 1, offset 0, bound 256, row [0], col [1])>
  %0 = sa.dma @x #sa.view<[1] x [256], base 0, (stride 1, offset 0, bound 256, row [0], col [1])> to @xs #sa.view<[1] x [256], base 0, (stride 1, offset 0, bound 256, row [0], col [1])>
  // CHECK: %[[W:.+]] = sa.dma @w
  %1 = sa.dma @w #sa.view<[1] x [1152], base 0, (stride 1, offset 0, bound 1152, row [0], col [1])> to @ws #sa.view<[1] x [1152], base 0, (stride 1, offset 0, bound 1152, row [0], col [1])>
  // One tap (kh = 0, kw = 1) of a padded 3x3 convolution: rows (n, oh, ow),
  // columns the 8 channels.
  // CHECK: %[[M:.+]] = sa.matmul mxu 1 @xs <[2, 4, 4] x [8], base 0, (stride 128, offset 0, bound 2, row [1, 0, 0], col [0]), (stride 32, offset -1, bound 4, row [0, 1, 0], col [0])
  // CHECK-SAME: into @acc
  // CHECK-SAME: accumulate after %[[X]], %[[W]]
  %2 = sa.matmul mxu 1 @xs #sa.view<[2, 4, 4] x [8], base 0, (stride 128, offset 0, bound 2, row [1, 0, 0], col [0]), (stride 32, offset -1, bound 4, row [0, 1, 0], col [0]), (stride 8, offset 0, bound 4, row [0, 0, 1], col [0]), (stride 1, offset 0, bound 8, row [0, 0, 0], col [1])>, @ws #sa.view<[8] x [16], base 16, (stride 16, offset 0, bound 8, row [1], col [0]), (stride 1, offset 0, bound 16, row [0], col [1])> into @acc #sa.view<[32] x [16], base 0, (stride 16, offset 0, bound 32, row [1], col [0]), (stride 1, offset 0, bound 16, row [0], col [1])> accumulate after %0, %1
  // CHECK: %[[V:.+]] = sa.vector channel_affine (@acc[0], @ws[0], @ws[16]) -> (@acc[0]) rows 32 channels 16 iattrs [1] after %[[M]]
  %3 = sa.vector channel_affine (@acc[0], @ws[0], @ws[16]) -> (@acc[0]) rows 32 channels 16 iattrs [1] after %2
  // CHECK: sa.vector sgd_update (@ws[0], @ws[0], @ws[0], @xs[0]) -> (@ws[0], @ws[0]) rows 1 channels 8 fattrs [9.000000e-01, 0.000000e+00, 0.000000e+00]
  %4 = sa.vector sgd_update (@ws[0], @ws[0], @ws[0], @xs[0]) -> (@ws[0], @ws[0]) rows 1 channels 8 fattrs [0.9, 0.0, 0.0]
  // CHECK: sa.vector copy (@acc[0]) -> (@yb[0]) rows 32 channels 16 after %[[V]]
  %5 = sa.vector copy (@acc[0]) -> (@yb[0]) rows 32 channels 16 after %3
  // CHECK: sa.allreduce [@w, @fc]
  %6 = sa.allreduce [@w, @fc]
}
