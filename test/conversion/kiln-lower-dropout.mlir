// RUN: kiln-opt %s -split-input-file --kiln-lower-to-linalg -verify-diagnostics | FileCheck %s

// kiln.dropout as a parallel loop nest over the batch: per element the
// logical index, the ten Philox4x32 rounds of kiln/ref/philox.h on the
// counter {lo32(i), hi32(i), lo32(step), stream} with the key schedule of
// seed 7 folded into constants, the first word against the threshold of
// ratio 0.25 (2^30) and the kept value times 1/(1 - 0.25) rounded to f32.
// CHECK-LABEL: module @nhwc
// CHECK: %[[STEP64:.*]] = memref.load %{{.*}}[] : memref<i64>
// CHECK: %[[STEP:.*]] = arith.trunci %[[STEP64]] : i64 to i32
// CHECK: scf.parallel
// CHECK: arith.shrui
// The first round's key is the seed itself (7, 0); the second's adds the
// Weyl constants 0x9E3779B9 and 0xBB67AE85 (as i32: -1640531520, -1150833019).
// CHECK: arith.mului_extended
// CHECK: arith.mului_extended
// CHECK: arith.constant 7 : i32
// CHECK: arith.constant 0 : i32
// CHECK: arith.constant -1640531520 : i32
// CHECK: arith.constant -1150833019 : i32
// CHECK-COUNT-16: arith.mului_extended
// CHECK-NOT: arith.mului_extended
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: %[[X:.*]] = memref.load %{{.*}} : memref<2x3x4x5xf32>
// CHECK: %[[S:.*]] = arith.mulf %[[X]], %{{.*}} : f32
// CHECK: arith.select %[[KEEP]], %[[S]], %{{.*}} : f32
// CHECK: memref.store %{{.*}} : memref<2x3x4x5xf32>
module @nhwc {
  func.func @train_step(%x: tensor<2x3x4x5xf32>, %step: tensor<i64> {kiln.step}) -> tensor<2x3x4x5xf32> {
    %y = kiln.dropout %x, %step ratio 2.500000e-01 seed 7 stream 3 : tensor<2x3x4x5xf32>, tensor<i64>
    return %y : tensor<2x3x4x5xf32>
  }
}

// -----

// In nChw16c the loops run over [N, C/16, H, W, 16] and the index is the
// logical NHWC one, ((n H + h) W + w) C + 16 cb + c: strides 192, 16, 64,
// 32 and 1 for 2x3x2x32 (so the mask does not depend on the layout); bf16
// is widened, scaled in f32 (by 2 for ratio 0.5) and rounded on store.
// CHECK-LABEL: module @blocked
// CHECK: scf.parallel (%[[N:.*]]) =
// CHECK: scf.for %[[CB:[a-z0-9_]+]] =
// CHECK: scf.for %[[H:[a-z0-9_]+]] =
// CHECK: scf.for %[[W:[a-z0-9_]+]] =
// CHECK: scf.for %[[C:[a-z0-9_]+]] =
// CHECK: arith.index_cast %[[N]]
// CHECK-NEXT: arith.constant 192 : i64
// CHECK: arith.index_cast %[[CB]]
// CHECK-NEXT: arith.constant 16 : i64
// CHECK: arith.index_cast %[[H]]
// CHECK-NEXT: arith.constant 64 : i64
// CHECK: arith.index_cast %[[W]]
// CHECK-NEXT: arith.constant 32 : i64
// CHECK: arith.index_cast %[[C]]
// CHECK-NEXT: arith.constant 1 : i64
// CHECK: %[[KEEP:.*]] = arith.cmpi uge, %{{.*}}, %{{.*}} : i32
// CHECK: %[[X:.*]] = memref.load %{{.*}}[%[[N]], %[[CB]], %[[H]], %[[W]], %[[C]]] : memref<2x2x3x2x16xbf16>
// CHECK-NEXT: %[[XF:.*]] = arith.extf %[[X]] : bf16 to f32
// CHECK-NEXT: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[XF]], %[[TWO]] : f32
// CHECK: %[[Y:.*]] = arith.select %[[KEEP]], %[[S]], %{{.*}} : f32
// CHECK-NEXT: %[[YB:.*]] = arith.truncf %[[Y]] : f32 to bf16
// CHECK-NEXT: memref.store %[[YB]], %{{.*}}[%[[N]], %[[CB]], %[[H]], %[[W]], %[[C]]] : memref<2x2x3x2x16xbf16>
module @blocked {
  func.func @train_step(%x: tensor<2x3x2x32xbf16>, %step: tensor<i64> {kiln.step}) -> tensor<2x3x2x32xbf16> {
    %r = kiln.reorder %x to nChw16c : tensor<2x3x2x32xbf16>
    %y = kiln.dropout %r, %step ratio 5.000000e-01 seed 0 stream 0 {kiln.layout = #kiln.layout<nChw16c>} : tensor<2x3x2x32xbf16>, tensor<i64>
    %z = kiln.reorder %y to nhwc : tensor<2x3x2x32xbf16>
    return %z : tensor<2x3x2x32xbf16>
  }
}

// -----

// Negative case: a dynamic batch is not lowered (kilnc fixes it first).
module @dynamic {
  func.func @train_step(%x: tensor<?x4xf32>, %step: tensor<i64> {kiln.step}) -> tensor<?x4xf32> {
    // expected-error @+1 {{'kiln.dropout' op has a dynamic result shape 'tensor<?x4xf32>'; run --kiln-specialize-batch first}}
    %y = kiln.dropout %x, %step ratio 5.000000e-01 seed 0 stream 0 : tensor<?x4xf32>, tensor<i64>
    return %y : tensor<?x4xf32>
  }
}
