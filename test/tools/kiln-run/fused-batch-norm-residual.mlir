// kiln-run executes a training batch norm with a fused residual and relu
// (built by --kiln-fuse) as the batch norm, add and relu it replaces: in
// f32 both print the same values. Channel 0 normalizes [1, 3] to about
// [-2, 2] (scale 2), channel 1 [2, 6] to [0, 2] (offset 1); the residual
// and relu then give about [0.5, 0.5, 1, 2.25].
// RUN: kiln-run %s --print-results | FileCheck %s
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s --check-prefix=FUSED
// RUN: kiln-opt %s --pass-pipeline="builtin.module(func.func(kiln-fuse))" | kiln-run --print-results | FileCheck %s

// CHECK: result0: tensor<2x2xf32> = [0.500010014, 0.500001252, 0.999989986, 2.24999881]
// FUSED: kiln.batch_norm_train {{.*}} residual {{.*}} relu
// FUSED-NOT: kiln.add
// FUSED-NOT: kiln.relu
module {
  func.func @forward() -> tensor<2x2xf32> {
    %x = arith.constant dense<[[1.0, 2.0], [3.0, 6.0]]> : tensor<2x2xf32>
    %r = arith.constant dense<[[2.5, 0.5], [-1.0, 0.25]]> : tensor<2x2xf32>
    %g = arith.constant dense<[2.0, 1.0]> : tensor<2xf32>
    %b = arith.constant dense<[0.0, 1.0]> : tensor<2xf32>
    %y:5 = kiln.batch_norm_train %x, %g, %b, %b, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    %s = kiln.add %y#0, %r : tensor<2x2xf32>
    %o = kiln.relu %s : tensor<2x2xf32>
    return %o : tensor<2x2xf32>
  }
}
