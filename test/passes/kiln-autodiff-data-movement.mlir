// RUN: kiln-opt %s -split-input-file --kiln-autodiff -verify-diagnostics | FileCheck %s

// The gradients of the data-movement ops are the inverse movements: concat
// slices dy at each input's offset, a slice places dy into zeros, the
// shuffle in 2 groups of 6 channels is undone by the shuffle in 3, the
// transpose by the inverse permutation. A split value's gradient is the sum
// of its slices' gradients.
kiln.variable parameter @w : tensor<1x1x2x6xf32> init he_normal
kiln.variable parameter @fc : tensor<48x2xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<?x2x2x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x2xf32>) {
  %w = kiln.read @w : tensor<1x1x2x6xf32>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x2x2x2xf32>, tensor<1x1x2x6xf32>) -> tensor<?x2x2x6xf32>
  %a = kiln.slice %c axis 3 start 0 size 2 : (tensor<?x2x2x6xf32>) -> tensor<?x2x2x2xf32>
  %b = kiln.slice %c axis 3 start 2 size 4 : (tensor<?x2x2x6xf32>) -> tensor<?x2x2x4xf32>
  %r = kiln.relu %b : tensor<?x2x2x4xf32>
  %cat = kiln.concat %r, %a axis 3 : (tensor<?x2x2x4xf32>, tensor<?x2x2x2xf32>) -> tensor<?x2x2x6xf32>
  %s = kiln.channel_shuffle %cat groups 2 : tensor<?x2x2x6xf32>
  %two = kiln.concat %s, %s axis 1 : (tensor<?x2x2x6xf32>, tensor<?x2x2x6xf32>) -> tensor<?x4x2x6xf32>
  %t = kiln.transpose %two permutation [0, 3, 1, 2] : (tensor<?x4x2x6xf32>) -> tensor<?x6x4x2xf32>
  %f = kiln.reshape %t : tensor<?x6x4x2xf32> to tensor<?x48xf32>
  %fc = kiln.read @fc : tensor<48x2xf32>
  %l = kiln.dense %f, %fc : (tensor<?x48xf32>, tensor<48x2xf32>) -> tensor<?x2xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x2xf32>, tensor<?xi32>) -> tensor<f32>
  return %loss, %l : tensor<f32>, tensor<?x2xf32>
}
// CHECK: %[[DF:.*]] = kiln.matmul {{.*}} transpose_rhs
// CHECK: %[[DT:.*]] = kiln.reshape %[[DF]] : tensor<?x48xf32> to tensor<?x6x4x2xf32>
// CHECK: %[[DTWO:.*]] = kiln.transpose %[[DT]] permutation [0, 2, 3, 1] : (tensor<?x6x4x2xf32>) -> tensor<?x4x2x6xf32>
// CHECK: %[[D1:.*]] = kiln.slice %[[DTWO]] axis 1 start 0 size 2
// CHECK: %[[D2:.*]] = kiln.slice %[[DTWO]] axis 1 start 2 size 2
// CHECK: %[[DS:.*]] = kiln.add %{{.*}}, %{{.*}} : tensor<?x2x2x6xf32>
// CHECK: %[[DCAT:.*]] = kiln.channel_shuffle %[[DS]] groups 3 : tensor<?x2x2x6xf32>
// CHECK: %[[DR:.*]] = kiln.slice %[[DCAT]] axis 3 start 0 size 4
// CHECK: %[[DA:.*]] = kiln.slice %[[DCAT]] axis 3 start 4 size 2
// CHECK-DAG: %[[GA:.*]] = kiln.slice_backward %[[DA]] axis 3 start 0 input_size 6 : (tensor<?x2x2x2xf32>) -> tensor<?x2x2x6xf32>
// CHECK-DAG: %[[DB:.*]] = kiln.relu_backward
// CHECK-DAG: %[[GB:.*]] = kiln.slice_backward %[[DB]] axis 3 start 2 input_size 6 : (tensor<?x2x2x4xf32>) -> tensor<?x2x2x6xf32>
// CHECK: %[[DC:.*]] = kiln.add %{{.*}}, %{{.*}} : tensor<?x2x2x6xf32>
// CHECK: kiln.conv2d_backward_filter %{{.*}}, %[[DC]]

// -----

// Negative case: a slice of an input (no parameter behind it) gets no
// gradient.
kiln.variable parameter @fc : tensor<4x2xf32> init he_normal
// CHECK-LABEL: func.func @train_step
// CHECK-NOT: kiln.slice_backward
func.func @forward(%x: tensor<?x8xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x2xf32>) {
  %s = kiln.slice %x axis 1 start 4 size 4 : (tensor<?x8xf32>) -> tensor<?x4xf32>
  %fc = kiln.read @fc : tensor<4x2xf32>
  %l = kiln.dense %s, %fc : (tensor<?x4xf32>, tensor<4x2xf32>) -> tensor<?x2xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x2xf32>, tensor<?xi32>) -> tensor<f32>
  return %loss, %l : tensor<f32>, tensor<?x2xf32>
}
