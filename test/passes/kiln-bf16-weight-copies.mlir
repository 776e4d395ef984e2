// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-bf16-weight-copies | FileCheck %s

// Each f32 parameter read through a bf16 cast gets a bf16 copy, declared
// after it: every function reads the copy instead of casting, and the step
// that assigns the weight assigns the copy its rounded new value.
// CHECK: kiln.variable parameter @w : tensor<3x3x3x4xf32> init he_normal
// CHECK-NEXT: kiln.variable state @w.bf16 : tensor<3x3x3x4xbf16> init copy of @w
// CHECK-NEXT: kiln.variable parameter @g : tensor<4xf32> init ones
// CHECK-NOT: @g.bf16
kiln.variable parameter @w : tensor<3x3x3x4xf32> init he_normal
kiln.variable parameter @g : tensor<4xf32> init ones
kiln.variable state @w.momentum : tensor<3x3x3x4xf32> init zeros

// CHECK-LABEL: func.func @train_step
func.func @train_step(%x: tensor<2x4x4x3xbf16>, %dw: tensor<3x3x3x4xf32>, %lr: tensor<f32>) -> tensor<2x4x4x4xbf16> {
  // CHECK-NOT: kiln.cast
  // CHECK: %[[WB:.*]] = kiln.read @w.bf16 : tensor<3x3x3x4xbf16>
  // CHECK-NEXT: kiln.conv2d %{{.*}}, %[[WB]]
  %w = kiln.read @w : tensor<3x3x3x4xf32>
  %wb = kiln.cast %w : tensor<3x3x3x4xf32> to tensor<3x3x3x4xbf16>
  %y = kiln.conv2d %x, %wb stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xbf16>, tensor<3x3x3x4xbf16>) -> tensor<2x4x4x4xbf16>
  // CHECK: %[[W:.*]] = kiln.read @w : tensor<3x3x3x4xf32>
  // CHECK: %[[NW:.*]], %[[NV:.*]] = kiln.sgd_update %[[W]]
  // CHECK-NEXT: kiln.assign @w, %[[NW]]
  // CHECK-NEXT: %[[NC:.*]] = kiln.cast %[[NW]] : tensor<3x3x3x4xf32> to tensor<3x3x3x4xbf16>
  // CHECK-NEXT: kiln.assign @w.bf16, %[[NC]] : tensor<3x3x3x4xbf16>
  // CHECK-NEXT: kiln.assign @w.momentum, %[[NV]]
  %w2 = kiln.read @w : tensor<3x3x3x4xf32>
  %v = kiln.read @w.momentum : tensor<3x3x3x4xf32>
  %nw, %nv = kiln.sgd_update %w2, %dw, %v, %lr momentum 0.9 weight_decay 0.0 : tensor<3x3x3x4xf32>
  kiln.assign @w, %nw : tensor<3x3x3x4xf32>
  kiln.assign @w.momentum, %nv : tensor<3x3x3x4xf32>
  return %y : tensor<2x4x4x4xbf16>
}

// A function that only reads (the eval step) reads the copy too.
// CHECK-LABEL: func.func @eval_step
// CHECK: kiln.read @w.bf16
// CHECK-NOT: kiln.assign
func.func @eval_step(%x: tensor<2x4x4x3xbf16>) -> tensor<2x4x4x4xbf16> {
  %w = kiln.read @w : tensor<3x3x3x4xf32>
  %wb = kiln.cast %w : tensor<3x3x3x4xf32> to tensor<3x3x3x4xbf16>
  %y = kiln.conv2d %x, %wb stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xbf16>, tensor<3x3x3x4xbf16>) -> tensor<2x4x4x4xbf16>
  return %y : tensor<2x4x4x4xbf16>
}

// -----

// Negative cases: state is not a master weight, an f32 read needs no copy,
// and a cast of anything but a read is an activation.
// CHECK-NOT: init copy
// CHECK-LABEL: func.func @no_copies
// CHECK-COUNT-2: kiln.cast
kiln.variable state @s : tensor<4xf32> init zeros
kiln.variable parameter @p : tensor<4xf32> init zeros
func.func @no_copies(%a: tensor<4xf32>) -> (tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>) {
  %s = kiln.read @s : tensor<4xf32>
  %sb = kiln.cast %s : tensor<4xf32> to tensor<4xbf16>
  %ab = kiln.cast %a : tensor<4xf32> to tensor<4xbf16>
  %p = kiln.read @p : tensor<4xf32>
  return %sb, %ab, %p : tensor<4xbf16>, tensor<4xbf16>, tensor<4xf32>
}

// -----

// The copy's name must be free.
// expected-error @+1 {{needs a bf16 copy @p.bf16, but that name is taken}}
kiln.variable parameter @p : tensor<4xf32> init zeros
kiln.variable state @p.bf16 : tensor<4xf32> init zeros
func.func @taken() -> tensor<4xbf16> {
  %p = kiln.read @p : tensor<4xf32>
  %pb = kiln.cast %p : tensor<4xf32> to tensor<4xbf16>
  return %pb : tensor<4xbf16>
}
