// RUN: kiln-opt %s --kiln-specialize-batch=batch=32 | FileCheck %s
// RUN: kiln-opt %s --kiln-specialize-batch=batch=0 -verify-diagnostics -o /dev/null

// Negative case: the batch must be positive.
// expected-error @+1 {{kiln-specialize-batch: the batch must be positive, got 0}}
module {
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%{{.*}}: tensor<32x8x8x3xf32>, %{{.*}}: tensor<32xi32>, %{{.*}}: tensor<3x3x3x4xf32>) -> (tensor<f32>, tensor<32x4xf32>)
func.func @forward(%x: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>, %w: tensor<3x3x3x4xf32>) -> (tensor<f32>, tensor<?x4xf32>) {
  // CHECK: kiln.conv2d {{.*}} -> tensor<32x8x8x4xf32>
  %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x4xf32>) -> tensor<?x8x8x4xf32>
  // CHECK: kiln.global_avg_pool {{.*}} -> tensor<32x4xf32>
  %p = kiln.global_avg_pool %y : (tensor<?x8x8x4xf32>) -> tensor<?x4xf32>
  %l = kiln.softmax_cross_entropy %p, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  return %l, %p : tensor<f32>, tensor<?x4xf32>
}
}
