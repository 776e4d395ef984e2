// --kiln-layout and the data-movement ops: concat and slices take whole
// nChw16c channel blocks; a concat with an input of 8 channels, a slice from
// the middle of a block, a channel shuffle and a transpose stay NHWC, with
// reorders around them.
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=blocked}))" | FileCheck %s
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-layout{mode=nhwc}))" | FileCheck %s --check-prefix=NHWC

// NHWC-NOT: kiln.layout
// NHWC-NOT: kiln.reorder

// CHECK-LABEL: func.func @concat
func.func @concat(%a: tensor<2x4x4x16xf32>, %b: tensor<2x4x4x32xf32>, %c: tensor<2x4x4x8xf32>, %w: tensor<1x1x48x16xf32>, %w2: tensor<1x1x56x16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>) {
  // CHECK: %[[A:.*]] = kiln.relu {{.*}}nChw16c
  // CHECK: %[[B:.*]] = kiln.relu {{.*}}nChw16c
  %ra = kiln.relu %a : tensor<2x4x4x16xf32>
  %rb = kiln.relu %b : tensor<2x4x4x32xf32>
  // Blocked: 16 + 32 channels are whole blocks.
  // CHECK: %[[CAT:.*]] = kiln.concat %[[A]], %[[B]] axis 3 {kiln.layout = #kiln.layout<nChw16c>}
  %cat = kiln.concat %ra, %rb axis 3 : (tensor<2x4x4x16xf32>, tensor<2x4x4x32xf32>) -> tensor<2x4x4x48xf32>
  // CHECK: kiln.conv2d %[[CAT]], {{.*}}nChw16c
  %y = kiln.conv2d %cat, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x48xf32>, tensor<1x1x48x16xf32>) -> tensor<2x4x4x16xf32>
  // Negative: 8 channels do not block, so this concat reads NHWC.
  // CHECK: %[[BACK:.*]] = kiln.reorder %[[CAT]] to nhwc
  // CHECK: kiln.concat %[[BACK]], %{{.*}} axis 3 : (tensor<2x4x4x48xf32>, tensor<2x4x4x8xf32>)
  %cat2 = kiln.concat %cat, %c axis 3 : (tensor<2x4x4x48xf32>, tensor<2x4x4x8xf32>) -> tensor<2x4x4x56xf32>
  %y2 = kiln.conv2d %cat2, %w2 stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x56xf32>, tensor<1x1x56x16xf32>) -> tensor<2x4x4x16xf32>
  return %y, %y2 : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @slices
func.func @slices(%x: tensor<2x4x4x48xf32>) -> (tensor<2x4x4x32xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x48xf32>) {
  // CHECK: %[[X:.*]] = kiln.relu {{.*}}nChw16c
  %r = kiln.relu %x : tensor<2x4x4x48xf32>
  // CHECK: %[[S:.*]] = kiln.slice %[[X]] axis 3 start 16 size 32 {kiln.layout = #kiln.layout<nChw16c>}
  %s = kiln.slice %r axis 3 start 16 size 32 : (tensor<2x4x4x48xf32>) -> tensor<2x4x4x32xf32>
  // CHECK: kiln.relu %[[S]] {kiln.layout = #kiln.layout<nChw16c>}
  %rs = kiln.relu %s : tensor<2x4x4x32xf32>
  // Negative: channels [8, 24) cut blocks in half: NHWC.
  // CHECK: %[[XN:.*]] = kiln.reorder %[[X]] to nhwc
  // CHECK: kiln.slice %[[XN]] axis 3 start 8 size 16 : (tensor<2x4x4x48xf32>)
  %m = kiln.slice %r axis 3 start 8 size 16 : (tensor<2x4x4x48xf32>) -> tensor<2x4x4x16xf32>
  %rm = kiln.relu %m : tensor<2x4x4x16xf32>
  // Its gradient follows the same rule.
  // CHECK: kiln.slice_backward %{{.*}} axis 3 start 16 input_size 48 {kiln.layout = #kiln.layout<nChw16c>}
  %d = kiln.slice_backward %rs axis 3 start 16 input_size 48 : (tensor<2x4x4x32xf32>) -> tensor<2x4x4x48xf32>
  %rd = kiln.relu %d : tensor<2x4x4x48xf32>
  return %rs, %rm, %rd : tensor<2x4x4x32xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x48xf32>
}

// -----

// CHECK-LABEL: func.func @shuffle
func.func @shuffle(%x: tensor<2x4x4x32xf32>) -> tensor<2x4x4x32xf32> {
  // CHECK: %[[X:.*]] = kiln.relu {{.*}}nChw16c
  %r = kiln.relu %x : tensor<2x4x4x32xf32>
  // CHECK: %[[XN:.*]] = kiln.reorder %[[X]] to nhwc
  // CHECK: %[[S:.*]] = kiln.channel_shuffle %[[XN]] groups 2 : tensor<2x4x4x32xf32>
  %s = kiln.channel_shuffle %r groups 2 : tensor<2x4x4x32xf32>
  // CHECK: kiln.reorder %[[S]] to nChw16c
  %rs = kiln.relu %s : tensor<2x4x4x32xf32>
  return %rs : tensor<2x4x4x32xf32>
}

// -----

// CHECK-LABEL: func.func @transpose
func.func @transpose(%x: tensor<2x4x4x32xf32>) -> tensor<2x512xf32> {
  // CHECK: %[[X:.*]] = kiln.relu {{.*}}nChw16c
  %r = kiln.relu %x : tensor<2x4x4x32xf32>
  // CHECK: %[[XN:.*]] = kiln.reorder %[[X]] to nhwc
  // CHECK: kiln.transpose %[[XN]] permutation [0, 3, 1, 2] : (tensor<2x4x4x32xf32>) -> tensor<2x32x4x4xf32>
  %t = kiln.transpose %r permutation [0, 3, 1, 2] : (tensor<2x4x4x32xf32>) -> tensor<2x32x4x4xf32>
  %f = kiln.reshape %t : tensor<2x32x4x4xf32> to tensor<2x512xf32>
  return %f : tensor<2x512xf32>
}
