// Grouped and depthwise convolutions and the convolution bias round-trip
// through the custom and the generic form; `groups 1` is the default and is
// not printed, so ungrouped IR reads as it did before groups existed.
// RUN: kiln-opt %s | kiln-opt | FileCheck %s
// RUN: kiln-opt %s --mlir-print-op-generic | kiln-opt | FileCheck %s

// CHECK-LABEL: func.func @grouped
func.func @grouped(%x: tensor<?x8x8x16xf32>, %dw: tensor<3x3x1x32xf32>, %g: tensor<1x1x4x16xf32>, %b: tensor<32xf32>, %w: tensor<3x3x16x8xf32>) {
  // CHECK: kiln.conv2d %{{.*}}, %{{.*}} bias %{{.*}} stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<?x4x4x32xf32>
  %0 = kiln.conv2d %x, %dw bias %b stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<3x3x1x32xf32>, tensor<32xf32>) -> tensor<?x4x4x32xf32>
  // CHECK: kiln.conv2d %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] dilation [2, 2] groups 4 : (tensor<?x8x8x16xf32>, tensor<1x1x4x16xf32>) -> tensor<?x8x8x16xf32>
  %1 = kiln.conv2d %x, %g stride [1, 1] pad [0, 0, 0, 0] dilation [2, 2] groups 4 : (tensor<?x8x8x16xf32>, tensor<1x1x4x16xf32>) -> tensor<?x8x8x16xf32>
  // CHECK: kiln.conv2d %{{.*}}, %{{.*}} stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x16xf32>, tensor<3x3x16x8xf32>) -> tensor<?x8x8x8xf32>
  %2 = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 1 : (tensor<?x8x8x16xf32>, tensor<3x3x16x8xf32>) -> tensor<?x8x8x8xf32>
  // CHECK: kiln.conv2d_backward_data %{{.*}}, %{{.*}} stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x4x4x32xf32>, tensor<3x3x1x32xf32>) -> tensor<?x8x8x16xf32>
  %3 = kiln.conv2d_backward_data %0, %dw stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x4x4x32xf32>, tensor<3x3x1x32xf32>) -> tensor<?x8x8x16xf32>
  // CHECK: kiln.conv2d_backward_filter %{{.*}}, %{{.*}} stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<?x4x4x32xf32>) -> tensor<3x3x1x32xf32>
  %4 = kiln.conv2d_backward_filter %x, %0 stride [2, 2] pad [0, 1, 0, 1] groups 16 : (tensor<?x8x8x16xf32>, tensor<?x4x4x32xf32>) -> tensor<3x3x1x32xf32>
  return
}
