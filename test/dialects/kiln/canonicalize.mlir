// RUN: kiln-opt %s -split-input-file -canonicalize | FileCheck %s

// A cast to its input's own type is the identity.
// CHECK-LABEL: func.func @same_type
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]]
func.func @same_type(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = kiln.cast %x : tensor<4xf32> to tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// bf16 widened to f32 is exact, so rounding it back gives the bf16 value.
// CHECK-LABEL: func.func @widen_then_round
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<4xbf16>)
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]]
func.func @widen_then_round(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %w = kiln.cast %x : tensor<4xbf16> to tensor<4xf32>
  %y = kiln.cast %w : tensor<4xf32> to tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

// Negative: f32 rounded to bf16 and widened back has lost its low bits.
// CHECK-LABEL: func.func @round_then_widen
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK: %[[R:[a-z0-9_]+]] = kiln.cast %[[X]] : tensor<4xf32> to tensor<4xbf16>
// CHECK: %[[W:[a-z0-9_]+]] = kiln.cast %[[R]] : tensor<4xbf16> to tensor<4xf32>
// CHECK: return %[[W]]
func.func @round_then_widen(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.cast %x : tensor<4xf32> to tensor<4xbf16>
  %w = kiln.cast %r : tensor<4xbf16> to tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

// A reorder to the layout its input is stored in, directly or through
// other reorders, is the identity.
// CHECK-LABEL: func.func @reorder_identity
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<2x4x4x32xf32>)
// CHECK-NOT: kiln.reorder
// CHECK: return %[[X]], %[[X]]
func.func @reorder_identity(%x: tensor<2x4x4x32xf32>) -> (tensor<2x4x4x32xf32>, tensor<2x4x4x32xf32>) {
  %same = kiln.reorder %x to nhwc : tensor<2x4x4x32xf32>
  %b = kiln.reorder %x to nChw16c : tensor<2x4x4x32xf32>
  %back = kiln.reorder %b to nhwc : tensor<2x4x4x32xf32>
  return %same, %back : tensor<2x4x4x32xf32>, tensor<2x4x4x32xf32>
}

// -----

// Negative: a reorder that changes the storage stays, also at 16 channels
// (where the bytes are the same, but readers check the layout).
// CHECK-LABEL: func.func @reorder_kept
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<2x4x4x16xf32>)
// CHECK: %[[B:[a-z0-9_]+]] = kiln.reorder %[[X]] to nChw16c
// CHECK: %[[Y:[a-z0-9_]+]] = kiln.relu %[[B]] {kiln.layout = #kiln.layout<nChw16c>}
// CHECK: %[[N:[a-z0-9_]+]] = kiln.reorder %[[Y]] to nhwc
// CHECK: return %[[N]]
func.func @reorder_kept(%x: tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32> {
  %b = kiln.reorder %x to nChw16c : tensor<2x4x4x16xf32>
  %y = kiln.relu %b {kiln.layout = #kiln.layout<nChw16c>} : tensor<2x4x4x16xf32>
  %n = kiln.reorder %y to nhwc : tensor<2x4x4x16xf32>
  return %n : tensor<2x4x4x16xf32>
}
