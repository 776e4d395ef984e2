// RUN: kiln-opt %s -split-input-file --kiln-derive-eval -verify-diagnostics | FileCheck %s

kiln.variable parameter @g : tensor<4xf32> init ones
kiln.variable parameter @b : tensor<4xf32> init zeros
kiln.variable state @m : tensor<4xf32> init zeros
kiln.variable state @v : tensor<4xf32> init ones
// CHECK-LABEL: func.func @forward
// CHECK: kiln.batch_norm_train
// CHECK: kiln.assign @m
// CHECK-LABEL: func.func @eval_step
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK-DAG: %[[G:.*]] = kiln.read @g
// CHECK-DAG: %[[B:.*]] = kiln.read @b
// CHECK-DAG: %[[M:.*]] = kiln.read @m
// CHECK-DAG: %[[V:.*]] = kiln.read @v
// CHECK: %[[Y:.*]] = kiln.batch_norm_inference %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] epsilon 9.99999974E-6
// CHECK-NOT: kiln.assign
// CHECK-NOT: kiln.batch_norm_train
// CHECK: return %[[Y]]
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %g = kiln.read @g : tensor<4xf32>
  %b = kiln.read @b : tensor<4xf32>
  %m = kiln.read @m : tensor<4xf32>
  %v = kiln.read @v : tensor<4xf32>
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %b, %m, %v epsilon 1.0e-5 momentum 0.9 : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  kiln.assign @m, %nm : tensor<4xf32>
  kiln.assign @v, %nv : tensor<4xf32>
  return %y : tensor<?x4xf32>
}

// -----

// Negative case: the model uses its batch statistics directly.
kiln.variable parameter @g : tensor<4xf32> init ones
func.func @forward(%x: tensor<?x4xf32>) -> tensor<4xf32> {
  %g = kiln.read @g : tensor<4xf32>
  // expected-error @+1 {{batch statistics are used beyond the running statistics update}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %bm : tensor<4xf32>
}

// -----

// Negative case: a batch norm already fused with its residual (--kiln-fuse's
// form) has no evaluation form here.
kiln.variable parameter @g : tensor<4xf32> init ones
func.func @forward(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %g = kiln.read @g : tensor<4xf32>
  // expected-error @+1 {{with a fused residual: derive the evaluation step before --kiln-fuse}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g residual %x epsilon 1.0e-5 momentum 0.9 : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %y : tensor<?x4xf32>
}
