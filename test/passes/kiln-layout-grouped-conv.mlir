// --kiln-layout with grouped convolutions: a depthwise convolution, and
// groups of whole 16-channel blocks, cost the same in both layouts (the x86
// cost model, compiler/Target/X86/LayoutCostModels.cpp), so they take their
// neighbours' layout; groups that split a 16-channel block cannot compute
// in nChw16c (oneDNN has no blocked jit kernel for them) and stay NHWC,
// with reorders around them, in blocked mode too.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=auto}))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=blocked}))" | FileCheck %s --check-prefix=BLOCKED

// Two large ungrouped data gradients (f32: 6% faster blocked) choose
// nChw16c; the depthwise and the 16-channel grouped ones between them
// follow, and no reorder separates them.
// CHECK-LABEL: func.func @whole_blocks_follow
func.func @whole_blocks_follow(%dy: tensor<8x8x8x64xf32>, %w: tensor<7x7x64x64xf32>, %dw: tensor<3x3x1x64xf32>, %gw: tensor<3x3x16x64xf32>) -> tensor<8x8x8x64xf32> {
  // CHECK: %[[R:[a-z0-9_]+]] = kiln.reorder %{{.*}} to nChw16c
  // CHECK: %[[A:[a-z0-9_]+]] = kiln.conv2d_backward_data %[[R]], {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %a = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [3, 3, 3, 3] : (tensor<8x8x8x64xf32>, tensor<7x7x64x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[B:[a-z0-9_]+]] = kiln.conv2d_backward_data %[[A]], {{.*}} groups 64 {kiln.layout = #kiln.layout<nChw16c>}
  %b = kiln.conv2d_backward_data %a, %dw stride [1, 1] pad [1, 1, 1, 1] groups 64 : (tensor<8x8x8x64xf32>, tensor<3x3x1x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[C:[a-z0-9_]+]] = kiln.conv2d_backward_data %[[B]], {{.*}} groups 4 {kiln.layout = #kiln.layout<nChw16c>}
  %c = kiln.conv2d_backward_data %b, %gw stride [1, 1] pad [1, 1, 1, 1] groups 4 : (tensor<8x8x8x64xf32>, tensor<3x3x16x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[D:[a-z0-9_]+]] = kiln.conv2d_backward_data %[[C]], {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %d = kiln.conv2d_backward_data %c, %w stride [1, 1] pad [3, 3, 3, 3] : (tensor<8x8x8x64xf32>, tensor<7x7x64x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[OUT:[a-z0-9_]+]] = kiln.reorder %[[D]] to nhwc
  // CHECK-NEXT: return %[[OUT]]
  return %d : tensor<8x8x8x64xf32>
}

// -----

// Groups of 8 channels: the grouped convolution stays NHWC between the two
// blocked ones, at the price of two reorders.
// BLOCKED-LABEL: func.func @split_blocks_stay_nhwc
// BLOCKED: kiln.reorder %{{.*}} to nhwc
// BLOCKED-NEXT: kiln.conv2d_backward_data %{{.*}} groups 8 : (tensor<8x8x8x64xf32>
// BLOCKED-NEXT: kiln.reorder %{{.*}} to nChw16c
// CHECK-LABEL: func.func @split_blocks_stay_nhwc
func.func @split_blocks_stay_nhwc(%dy: tensor<8x8x8x64xf32>, %w: tensor<7x7x64x64xf32>, %gw: tensor<3x3x8x64xf32>) -> tensor<8x8x8x64xf32> {
  // CHECK: %[[A:[a-z0-9_]+]] = kiln.conv2d_backward_data {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %a = kiln.conv2d_backward_data %dy, %w stride [1, 1] pad [3, 3, 3, 3] : (tensor<8x8x8x64xf32>, tensor<7x7x64x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[RA:[a-z0-9_]+]] = kiln.reorder %[[A]] to nhwc
  // CHECK-NEXT: %[[B:[a-z0-9_]+]] = kiln.conv2d_backward_data %[[RA]], {{.*}} groups 8 : (tensor<8x8x8x64xf32>
  %b = kiln.conv2d_backward_data %a, %gw stride [1, 1] pad [1, 1, 1, 1] groups 8 : (tensor<8x8x8x64xf32>, tensor<3x3x8x64xf32>) -> tensor<8x8x8x64xf32>
  // CHECK-NEXT: %[[RB:[a-z0-9_]+]] = kiln.reorder %[[B]] to nChw16c
  // CHECK-NEXT: kiln.conv2d_backward_data %[[RB]], {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %d = kiln.conv2d_backward_data %b, %w stride [1, 1] pad [3, 3, 3, 3] : (tensor<8x8x8x64xf32>, tensor<7x7x64x64xf32>) -> tensor<8x8x8x64xf32>
  return %d : tensor<8x8x8x64xf32>
}

// -----

// Negative case: a grouped convolution whose groups do not divide its
// channels never reaches the pass.
func.func @bad_groups(%x: tensor<8x8x8x64xf32>, %w: tensor<3x3x16x64xf32>) -> tensor<8x8x8x64xf32> {
  // expected-error @+2 {{kiln.conv2d: input has 64 channels but the filter (HWIO) expects 32 (16 per group, 2 groups)}}
  // expected-error @+1 {{failed to infer returned types}}
  %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<8x8x8x64xf32>, tensor<3x3x16x64xf32>) -> tensor<8x8x8x64xf32>
  return %y : tensor<8x8x8x64xf32>
}
