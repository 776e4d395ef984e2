// kiln-run executes a batch-norm backward with the rectifier's mask
// (relu_offset, built by --kiln-fuse from relu_backward of relu(batch_norm))
// as the two ops it replaces: the mask recomputed from x with the forward's
// offset gives the same values. The offsets [0.5, -0.5] leave one element
// of each channel positive ([-1.5, 2.5] and [-1.5, 0.5]), so dbeta sums the
// unmasked dy of each: 2 and 0.25.
// RUN: kiln-run %s --print-results | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s --check-prefix=FUSED
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | kiln-run --print-results | FileCheck %s

// CHECK: result0: tensor<2x2xf32> = [-1.99996994e-05, -1.56249413e-07, 1.99996994e-05, 1.56249413e-07]
// CHECK-NEXT: result1: tensor<2xf32> = [1.99998999, 0.249999687]
// CHECK-NEXT: result2: tensor<2xf32> = [2, 0.25]
// FUSED-NOT: kiln.relu
// FUSED: kiln.batch_norm_backward {{.*}} relu_offset
// FUSED-NOT: kiln.relu
module {
  func.func @forward() -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>) {
    %x = arith.constant dense<[[1.0, 2.0], [3.0, 6.0]]> : tensor<2x2xf32>
    %dy = arith.constant dense<[[0.5, -1.0], [2.0, 0.25]]> : tensor<2x2xf32>
    %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
    %b = arith.constant dense<[0.5, -0.5]> : tensor<2xf32>
    %y:5 = kiln.batch_norm_train %x, %g, %b, %b, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    %r = kiln.relu %y#0 : tensor<2x2xf32>
    %m = kiln.relu_backward %dy, %r : tensor<2x2xf32>
    %dx, %dg, %db = kiln.batch_norm_backward %m, %x, %g, %y#1, %y#2 epsilon 1.0e-5 : (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>)
    return %dx, %dg, %db : tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>
  }
}
