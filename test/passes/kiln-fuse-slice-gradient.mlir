// RUN: kiln-opt %s -split-input-file --kiln-fuse | FileCheck %s

// A split's gradient: slice_backward ops that tile the channels, summed,
// become one concat of their output gradients in offset order (three
// parts: a tree of two adds).
// CHECK-LABEL: func.func @split
// CHECK-SAME: (%[[A:.*]]: tensor<2x4x4x2xf32>, %[[B:.*]]: tensor<2x4x4x3xf32>, %[[C:.*]]: tensor<2x4x4x1xf32>)
// CHECK-NEXT: %[[CAT:.*]] = kiln.concat %[[C]], %[[A]], %[[B]] axis 3 : (tensor<2x4x4x1xf32>, tensor<2x4x4x2xf32>, tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
// CHECK-NEXT: return %[[CAT]]
func.func @split(%a: tensor<2x4x4x2xf32>, %b: tensor<2x4x4x3xf32>, %c: tensor<2x4x4x1xf32>) -> tensor<2x4x4x6xf32> {
  %ga = kiln.slice_backward %a axis 3 start 1 input_size 6 : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x6xf32>
  %gb = kiln.slice_backward %b axis 3 start 3 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %gc = kiln.slice_backward %c axis 3 start 0 input_size 6 : (tensor<2x4x4x1xf32>) -> tensor<2x4x4x6xf32>
  %s = kiln.add %ga, %gb : tensor<2x4x4x6xf32>
  %t = kiln.add %s, %gc : tensor<2x4x4x6xf32>
  return %t : tensor<2x4x4x6xf32>
}

// -----

// Negative cases: parts that leave a gap, parts that overlap, a sum with
// another gradient in it, and a part used elsewhere are not a
// concatenation.
// CHECK-LABEL: func.func @gap
// CHECK-NOT: kiln.concat
// CHECK: kiln.slice_backward
func.func @gap(%a: tensor<2x4x4x2xf32>, %b: tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32> {
  %ga = kiln.slice_backward %a axis 3 start 0 input_size 6 : (tensor<2x4x4x2xf32>) -> tensor<2x4x4x6xf32>
  %gb = kiln.slice_backward %b axis 3 start 3 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %s = kiln.add %ga, %gb : tensor<2x4x4x6xf32>
  return %s : tensor<2x4x4x6xf32>
}

// CHECK-LABEL: func.func @overlap
// CHECK-NOT: kiln.concat
// CHECK: kiln.slice_backward
func.func @overlap(%a: tensor<2x4x4x3xf32>, %b: tensor<2x4x4x4xf32>) -> tensor<2x4x4x6xf32> {
  %ga = kiln.slice_backward %a axis 3 start 0 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %gb = kiln.slice_backward %b axis 3 start 2 input_size 6 : (tensor<2x4x4x4xf32>) -> tensor<2x4x4x6xf32>
  %s = kiln.add %ga, %gb : tensor<2x4x4x6xf32>
  return %s : tensor<2x4x4x6xf32>
}

// CHECK-LABEL: func.func @other_gradient
// CHECK-NOT: kiln.concat
// CHECK: kiln.slice_backward
func.func @other_gradient(%a: tensor<2x4x4x3xf32>, %b: tensor<2x4x4x3xf32>, %d: tensor<2x4x4x6xf32>) -> tensor<2x4x4x6xf32> {
  %ga = kiln.slice_backward %a axis 3 start 0 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %gb = kiln.slice_backward %b axis 3 start 3 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %s = kiln.add %ga, %d : tensor<2x4x4x6xf32>
  %t = kiln.add %s, %gb : tensor<2x4x4x6xf32>
  return %t : tensor<2x4x4x6xf32>
}

// CHECK-LABEL: func.func @used_twice
// CHECK-NOT: kiln.concat
// CHECK: kiln.slice_backward
func.func @used_twice(%a: tensor<2x4x4x3xf32>, %b: tensor<2x4x4x3xf32>) -> (tensor<2x4x4x6xf32>, tensor<2x4x4x6xf32>) {
  %ga = kiln.slice_backward %a axis 3 start 0 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %gb = kiln.slice_backward %b axis 3 start 3 input_size 6 : (tensor<2x4x4x3xf32>) -> tensor<2x4x4x6xf32>
  %s = kiln.add %ga, %gb : tensor<2x4x4x6xf32>
  return %s, %ga : tensor<2x4x4x6xf32>, tensor<2x4x4x6xf32>
}
