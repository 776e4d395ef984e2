// The data-movement ops (KilnDataMovementOps.td) round-trip through their
// custom form and the generic form, and infer their result types.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file --mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<?x4x4x16xf32>, %b: tensor<?x4x4x8xf32>, %c: tensor<?x4x4x16xf32>) -> (tensor<?x4x4x40xf32>, tensor<?x8x4x16xf32>) {
  // CHECK: kiln.concat %{{.*}}, %{{.*}}, %{{.*}} axis 3 : (tensor<?x4x4x16xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x16xf32>) -> tensor<?x4x4x40xf32>
  %y = kiln.concat %a, %b, %c axis 3 : (tensor<?x4x4x16xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x16xf32>) -> tensor<?x4x4x40xf32>
  // CHECK: kiln.concat %{{.*}}, %{{.*}} axis 1 : (tensor<?x4x4x16xf32>, tensor<?x4x4x16xf32>) -> tensor<?x8x4x16xf32>
  %z = kiln.concat %a, %c axis 1 : (tensor<?x4x4x16xf32>, tensor<?x4x4x16xf32>) -> tensor<?x8x4x16xf32>
  return %y, %z : tensor<?x4x4x40xf32>, tensor<?x8x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @slice
func.func @slice(%x: tensor<?x4x4x24xbf16>) -> (tensor<?x4x4x8xbf16>, tensor<?x4x4x24xbf16>) {
  // CHECK: kiln.slice %{{.*}} axis 3 start 16 size 8 : (tensor<?x4x4x24xbf16>) -> tensor<?x4x4x8xbf16>
  %y = kiln.slice %x axis 3 start 16 size 8 : (tensor<?x4x4x24xbf16>) -> tensor<?x4x4x8xbf16>
  // CHECK: kiln.slice_backward %{{.*}} axis 3 start 16 input_size 24 : (tensor<?x4x4x8xbf16>) -> tensor<?x4x4x24xbf16>
  %dx = kiln.slice_backward %y axis 3 start 16 input_size 24 : (tensor<?x4x4x8xbf16>) -> tensor<?x4x4x24xbf16>
  return %y, %dx : tensor<?x4x4x8xbf16>, tensor<?x4x4x24xbf16>
}

// -----

// CHECK-LABEL: func.func @channel_shuffle
func.func @channel_shuffle(%x: tensor<?x4x4x6xf32>) -> tensor<?x4x4x6xf32> {
  // CHECK: kiln.channel_shuffle %{{.*}} groups 2 : tensor<?x4x4x6xf32>
  %y = kiln.channel_shuffle %x groups 2 : tensor<?x4x4x6xf32>
  return %y : tensor<?x4x4x6xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<?x7x7x512xf32>) -> tensor<?x512x7x7xf32> {
  // CHECK: kiln.transpose %{{.*}} permutation [0, 3, 1, 2] : (tensor<?x7x7x512xf32>) -> tensor<?x512x7x7xf32>
  %y = kiln.transpose %x permutation [0, 3, 1, 2] : (tensor<?x7x7x512xf32>) -> tensor<?x512x7x7xf32>
  return %y : tensor<?x512x7x7xf32>
}
