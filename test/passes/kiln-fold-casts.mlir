// RUN: kiln-opt %s -split-input-file --kiln-fold-casts | FileCheck %s
// RUN: kiln-opt %s -split-input-file --kiln-fold-casts --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// CHECK-LABEL: func.func @filter_gradient
func.func @filter_gradient(%x: tensor<2x4x4x3xbf16>, %dy: tensor<2x4x4x4xbf16>) -> tensor<3x3x3x4xf32> {
  // CHECK: %[[DW:.*]] = kiln.conv2d_backward_filter {{.*}} -> tensor<3x3x3x4xf32>
  // CHECK-NOT: kiln.cast
  // CHECK: return %[[DW]]
  %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xbf16>, tensor<2x4x4x4xbf16>) -> tensor<3x3x3x4xbf16>
  %f = kiln.cast %dw : tensor<3x3x3x4xbf16> to tensor<3x3x3x4xf32>
  return %f : tensor<3x3x3x4xf32>
}

// -----

// Negative case: the bf16 gradient has another user, so it must exist.
// CHECK-LABEL: func.func @shared
// CHECK: kiln.conv2d_backward_filter {{.*}} -> tensor<3x3x3x4xbf16>
// CHECK: kiln.cast
func.func @shared(%x: tensor<2x4x4x3xbf16>, %dy: tensor<2x4x4x4xbf16>) -> (tensor<3x3x3x4xf32>, tensor<3x3x3x4xbf16>) {
  %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xbf16>, tensor<2x4x4x4xbf16>) -> tensor<3x3x3x4xbf16>
  %f = kiln.cast %dw : tensor<3x3x3x4xbf16> to tensor<3x3x3x4xf32>
  return %f, %dw : tensor<3x3x3x4xf32>, tensor<3x3x3x4xbf16>
}

// -----

// The f32 gradient keeps the gradient's location, not the cast's: in a
// training step the cast back to f32 sits at the weight's read, and the
// profile's per-layer table would count the filter gradient there.
// LOC-LABEL: func.func @location
// LOC: kiln.conv2d_backward_filter {{.*}} -> tensor<3x3x3x4xf32> loc(#[[CONV:loc[0-9]*]])
// LOC: #[[CONV]] = loc("conv")
func.func @location(%x: tensor<2x4x4x3xbf16>, %dy: tensor<2x4x4x4xbf16>) -> tensor<3x3x3x4xf32> {
  %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xbf16>, tensor<2x4x4x4xbf16>) -> tensor<3x3x3x4xbf16> loc("conv")
  %f = kiln.cast %dw : tensor<3x3x3x4xbf16> to tensor<3x3x3x4xf32> loc("weight")
  return %f : tensor<3x3x3x4xf32>
}

// -----

// Casts that are identities fold too (kiln.cast's folder); a rounding one
// stays.
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[X:[a-z0-9_]+]]: tensor<4xbf16>, %[[F:[a-z0-9_]+]]: tensor<4xf32>)
// CHECK: %[[R:[a-z0-9_]+]] = kiln.cast %[[F]] : tensor<4xf32> to tensor<4xbf16>
// CHECK-NOT: kiln.cast
// CHECK: return %[[X]], %[[R]]
func.func @identities(%x: tensor<4xbf16>, %f: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xbf16>) {
  %w = kiln.cast %x : tensor<4xbf16> to tensor<4xf32>
  %y = kiln.cast %w : tensor<4xf32> to tensor<4xbf16>
  %r = kiln.cast %f : tensor<4xf32> to tensor<4xbf16>
  return %y, %r : tensor<4xbf16>, tensor<4xbf16>
}
