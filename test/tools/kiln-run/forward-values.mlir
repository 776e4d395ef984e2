// Forward values against an independent reference: known variables
// (--load) and inputs (--inputs) written by Inputs/reference.py, the
// results and the variables after the step's assigns saved by kiln-run and
// recomputed by the script in double precision.
// RUN: rm -rf %t && mkdir -p %t
// RUN: %python %S/Inputs/reference.py write %t
// RUN: kiln-run %s --load=%t/weights.safetensors --inputs=%t/inputs.safetensors \
// RUN:   --save-results=%t/results.safetensors --save=%t/after.safetensors --print-results \
// RUN:   | FileCheck %s
// RUN: %python %S/Inputs/reference.py check %t %t/results.safetensors %t/after.safetensors \
// RUN:   | FileCheck %s --check-prefix=REF
// RUN: ls -a %t | FileCheck %s --check-prefix=FILES

// CHECK: step 0 loss [[LOSS:[0-9.]+]]{{$}}
// CHECK-NEXT: result0: tensor<f32> = {{\[}}[[LOSS]]{{\]}}
// CHECK-NEXT: result1: tensor<2x3xf32> = [{{([-0-9.e]+, ){5}[-0-9.e]+}}]
// REF: reference loss {{[0-9.]+}} matches
// No temporary files remain next to the saved ones.
// FILES-NOT: tmp

module {
  kiln.variable parameter @conv.w : tensor<2x2x1x2xf32> init he_normal
  kiln.variable parameter @bn.gamma : tensor<2xf32> init ones
  kiln.variable parameter @bn.beta : tensor<2xf32> init zeros
  kiln.variable state @bn.mean : tensor<2xf32> init zeros
  kiln.variable state @bn.var : tensor<2xf32> init ones
  kiln.variable parameter @fc.w : tensor<2x3xf32> init he_normal
  kiln.variable parameter @fc.b : tensor<3xf32> init zeros
  func.func @forward(%x: tensor<?x3x3x1xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @conv.w : tensor<2x2x1x2xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 1, 0, 1] : (tensor<?x3x3x1xf32>, tensor<2x2x1x2xf32>) -> tensor<?x3x3x2xf32>
    %g = kiln.read @bn.gamma : tensor<2xf32>
    %b = kiln.read @bn.beta : tensor<2xf32>
    %m = kiln.read @bn.mean : tensor<2xf32>
    %v = kiln.read @bn.var : tensor<2xf32>
    %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %c, %g, %b, %m, %v epsilon 1.000000e-03 momentum 7.500000e-01 : (tensor<?x3x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> (tensor<?x3x3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
    kiln.assign @bn.mean, %nm : tensor<2xf32>
    kiln.assign @bn.var, %nv : tensor<2xf32>
    %r = kiln.relu %y : tensor<?x3x3x2xf32>
    %p = kiln.global_avg_pool %r : (tensor<?x3x3x2xf32>) -> tensor<?x2xf32>
    %fw = kiln.read @fc.w : tensor<2x3xf32>
    %fb = kiln.read @fc.b : tensor<3xf32>
    %logits = kiln.dense %p, %fw bias %fb : (tensor<?x2xf32>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels label_smoothing 2.500000e-01 : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x3xf32>
  }
}
