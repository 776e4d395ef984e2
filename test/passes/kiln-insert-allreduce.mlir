// RUN: kiln-opt %s -split-input-file --kiln-insert-allreduce=bucket-bytes=100 -verify-diagnostics | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-insert-allreduce=bucket-bytes=100000 -verify-diagnostics | FileCheck %s --check-prefix=ONE

// Gradients are produced in the order c (64 B), b (16 B), a (128 B), d (400 B).
// A bucket closes once it holds at least 100 bytes: {c, b, a} (208 B), {d}.
// CHECK-LABEL: func.func @train_step
// ONE-LABEL: func.func @train_step
func.func @train_step(%x: tensor<4xf32>) -> (tensor<f32>, tensor<32xf32> {kiln.gradient_of = @a}, tensor<4xf32> {kiln.gradient_of = @b}, tensor<16xf32> {kiln.gradient_of = @c}, tensor<100xf32> {kiln.gradient_of = @d}) {
  %loss = arith.constant dense<1.0> : tensor<f32>
  // CHECK: %[[C:.*]] = arith.constant dense<3.000000e+00> : tensor<16xf32>
  %c = arith.constant dense<3.0> : tensor<16xf32>
  // CHECK-NEXT: %[[B:.*]] = arith.constant dense<2.000000e+00> : tensor<4xf32>
  %b = arith.constant dense<2.0> : tensor<4xf32>
  // CHECK-NEXT: %[[A:.*]] = arith.constant dense<1.000000e+00> : tensor<32xf32>
  %a = arith.constant dense<1.0> : tensor<32xf32>
  // The first bucket starts as soon as its last gradient, a, exists.
  // CHECK-NEXT: %[[R0:.*]]:3 = kiln.allreduce %[[C]], %[[B]], %[[A]] bucket 0 : tensor<16xf32>, tensor<4xf32>, tensor<32xf32>
  // CHECK-NEXT: %[[D:.*]] = arith.constant dense<4.000000e+00> : tensor<100xf32>
  %d = arith.constant dense<4.0> : tensor<100xf32>
  // CHECK-NEXT: %[[R1:.*]] = kiln.allreduce %[[D]] bucket 1 : tensor<100xf32>
  // CHECK: return %{{.*}}, %[[R0]]#2, %[[R0]]#1, %[[R0]]#0, %[[R1]]
  // ONE: kiln.allreduce %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} bucket 0
  // ONE-NOT: kiln.allreduce
  return %loss, %a, %b, %c, %d : tensor<f32>, tensor<32xf32>, tensor<4xf32>, tensor<16xf32>, tensor<100xf32>
}

// -----

// Negative case: nothing to reduce.
// expected-error @+1 {{returns no gradients: run --kiln-autodiff first}}
func.func @train_step(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
