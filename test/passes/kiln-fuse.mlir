// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s

// CHECK-LABEL: func.func @forward_and_backward
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[G:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<2x4xf32>)
func.func @forward_and_backward(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %dy: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]], %{{.*}}, %{{.*}} = kiln.batch_norm_train %[[X]], {{.*}} momentum 0.899999976 relu :
  // CHECK-NOT: kiln.relu
  %y, %m, %v, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.relu %y : tensor<2x4xf32>
  // CHECK-NOT: kiln.relu_backward
  // CHECK: %[[DX:.*]], %{{.*}}, %{{.*}} = kiln.batch_norm_backward %[[DY]], %[[X]], %[[G]], %[[M]], %[[V]] relu_output %[[Y]] epsilon
  %d = kiln.relu_backward %dy, %r : tensor<2x4xf32>
  %dx, %dg, %db = kiln.batch_norm_backward %d, %x, %g, %m, %v epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: return %[[Y]], %[[DX]]
  return %r, %dx : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// CHECK-LABEL: func.func @inference
// CHECK: kiln.batch_norm_inference {{.*}} relu :
// CHECK-NOT: kiln.relu
func.func @inference(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %y : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// Negative case: the normalized output has another user, so it must stay
// unrectified; nothing fuses.
// CHECK-LABEL: func.func @shared_output
// CHECK: kiln.batch_norm_inference {{.*}} epsilon 9.99999974E-6 :
// CHECK: kiln.relu
func.func @shared_output(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %y = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %y : tensor<2x4xf32>
  return %r, %y : tensor<2x4xf32>, tensor<2x4xf32>
}
