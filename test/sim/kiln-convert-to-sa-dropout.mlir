// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s

// kiln.dropout runs on the vector unit: each tile draws its mask from
// kiln/ref/philox.h's counters with the seed, stream and the logical index
// of its first element, and reads the step from the step argument.
// CHECK-LABEL: sa.program @dropout
// CHECK: sa.buffer @[[STEP:input1]] : hbm i32 [] role input binding "arg1"
// CHECK: %[[S:.+]] = sa.dma @[[STEP]]
// CHECK: sa.vector dropout (@{{.*}}[0], @{{.*}}[0]) -> (@{{.*}}[0]) rows 2 channels 4 fattrs [5.000000e-01] iattrs [7, 3, 0] after %[[S]]
module @dropout {
  func.func @train_step(%x: tensor<2x4xf32>, %step: tensor<i64> {kiln.step}) -> tensor<2x4xf32> {
    %r = kiln.dropout %x, %step ratio 5.000000e-01 seed 7 stream 3 : tensor<2x4xf32>, tensor<i64>
    return %r : tensor<2x4xf32>
  }
}

// -----

// A tensor larger than staging memory: the first index of each tile is its
// offset in the tensor.
// CHECK-LABEL: sa.program @big
// CHECK: sa.vector dropout {{.*}} rows 383 channels 1024 fattrs [2.500000e-01] iattrs [1, 0, 0]
// CHECK: sa.vector dropout {{.*}} rows 383 channels 1024 fattrs [2.500000e-01] iattrs [1, 0, 392192]
// CHECK: sa.vector dropout {{.*}} rows 383 channels 1024 fattrs [2.500000e-01] iattrs [1, 0, 784384]
module @big {
  func.func @train_step(%x: tensor<2048x1024xf32>, %step: tensor<i64> {kiln.step}) -> tensor<2048x1024xf32> {
    %r = kiln.dropout %x, %step ratio 2.500000e-01 seed 1 stream 0 : tensor<2048x1024xf32>, tensor<i64>
    return %r : tensor<2048x1024xf32>
  }
}
