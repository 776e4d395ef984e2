// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=blocked}))" | FileCheck %s --check-prefix=BLOCKED
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=auto}))" | FileCheck %s --check-prefix=AUTO
// RUN: kiln-opt %s -split-input-file -verify-diagnostics --pass-pipeline="builtin.module(func.func(kiln-layout{mode=nhwc}))" | FileCheck %s --check-prefix=NHWC
// RUN: not kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-layout{mode=nchw}))" 2>&1 | FileCheck %s --check-prefix=MODE
// MODE: for the --mode option: 'nchw' is not a valid value (expected auto, nhwc or blocked)

// NHWC-NOT: kiln.layout
// NHWC-NOT: kiln.reorder

// A stem on 3 channels cannot be blocked; what follows can. Blocked mode
// reorders once after the stem, propagates nChw16c through batch norm, relu
// and pooling into the next convolution, and reorders back for the reshape,
// which reads NHWC.
// BLOCKED-LABEL: func.func @forward
// AUTO-LABEL: func.func @forward
func.func @forward(%x: tensor<8x32x32x3xf32>, %w1: tensor<3x3x3x16xf32>, %g: tensor<16xf32>, %w2: tensor<1x1x16x32xf32>) -> (tensor<8x32x32x16xf32>, tensor<8x8192xf32>) {
  // BLOCKED: %[[C1:[a-z0-9_]+]] = kiln.conv2d %{{.*}} : (tensor<8x32x32x3xf32>
  // BLOCKED-NOT: kiln.layout
  %c1 = kiln.conv2d %x, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x32x32x3xf32>, tensor<3x3x3x16xf32>) -> tensor<8x32x32x16xf32>
  // BLOCKED: %[[R1:[a-z0-9_]+]] = kiln.reorder %[[C1]] to nChw16c : tensor<8x32x32x16xf32>
  // BLOCKED: %[[Y:[a-z0-9_]+]], {{.*}} = kiln.batch_norm_train %[[R1]], {{.*}} relu {kiln.layout = #kiln.layout<nChw16c>}
  %y, %m, %v, %nm, %nv = kiln.batch_norm_train %c1, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 relu : (tensor<8x32x32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<8x32x32x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  // BLOCKED: %[[P:[a-z0-9_]+]] = kiln.max_pool %[[Y]] {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %p = kiln.max_pool %y window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<8x32x32x16xf32>) -> tensor<8x16x16x16xf32>
  // BLOCKED: %[[C2:[a-z0-9_]+]] = kiln.conv2d %[[P]], {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
  %c2 = kiln.conv2d %p, %w2 stride [1, 1] pad [0, 0, 0, 0] : (tensor<8x16x16x16xf32>, tensor<1x1x16x32xf32>) -> tensor<8x16x16x32xf32>
  // BLOCKED: %[[R2:[a-z0-9_]+]] = kiln.reorder %[[C2]] to nhwc
  // BLOCKED: kiln.reshape %[[R2]]
  %flat = kiln.reshape %c2 : tensor<8x16x16x32xf32> to tensor<8x8192xf32>
  // A returned activation is read as NHWC too: a second reorder, of %y.
  // BLOCKED: %[[R3:[a-z0-9_]+]] = kiln.reorder %[[Y]] to nhwc
  // BLOCKED: return %[[R3]]
  return %y, %flat : tensor<8x32x32x16xf32>, tensor<8x8192xf32>
  // A forward pass alone is faster NHWC in f32 (oneDNN's blocked forward
  // kernels are slower here): auto changes nothing.
  // AUTO-NOT: kiln.layout
  // AUTO-NOT: kiln.reorder
}

// -----

// Backward convolutions are faster blocked in f32: with a filter gradient
// large enough to pay for reordering its two inputs, auto blocks the chain
// (the two backward convolutions and the batch-norm backward between them).
// AUTO-LABEL: func.func @backward
// AUTO-COUNT-2: kiln.reorder {{.*}} to nChw16c
// AUTO: kiln.conv2d_backward_filter {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// AUTO: kiln.batch_norm_backward {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// AUTO: kiln.conv2d_backward_filter {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// AUTO-NOT: kiln.reorder
// AUTO: return
func.func @backward(%x: tensor<8x32x32x256xf32>, %dy: tensor<8x32x32x256xf32>, %g: tensor<256xf32>, %m: tensor<256xf32>) -> (tensor<3x3x256x256xf32>, tensor<3x3x256x256xf32>, tensor<256xf32>) {
  %dw1 = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x32x32x256xf32>, tensor<8x32x32x256xf32>) -> tensor<3x3x256x256xf32>
  %dx, %dg, %db = kiln.batch_norm_backward %dy, %x, %g, %m, %m epsilon 1.0e-5 : (tensor<8x32x32x256xf32>, tensor<8x32x32x256xf32>, tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) -> (tensor<8x32x32x256xf32>, tensor<256xf32>, tensor<256xf32>)
  %dw2 = kiln.conv2d_backward_filter %x, %dx stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x32x32x256xf32>, tensor<8x32x32x256xf32>) -> tensor<3x3x256x256xf32>
  return %dw1, %dw2, %dg : tensor<3x3x256x256xf32>, tensor<3x3x256x256xf32>, tensor<256xf32>
}

// -----

// In bf16 oneDNN's backward-filter kernels are slower blocked: auto keeps
// NHWC.
// AUTO-LABEL: func.func @backward_bf16
// AUTO-NOT: kiln.layout
// AUTO-NOT: kiln.reorder
func.func @backward_bf16(%x: tensor<8x32x32x256xbf16>, %dy: tensor<8x32x32x256xbf16>) -> tensor<3x3x256x256xf32> {
  %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x32x32x256xbf16>, tensor<8x32x32x256xbf16>) -> tensor<3x3x256x256xf32>
  return %dw : tensor<3x3x256x256xf32>
}

// -----

// Filters are HWIO whatever the mode: the casts of weights to bf16 and of
// filter gradients back to f32 are 4-D elementwise ops but no activations.
// BLOCKED-LABEL: func.func @filters
// BLOCKED: %[[WB:[a-z0-9_]+]] = kiln.cast %{{.*}} : tensor<3x3x16x16xf32> to tensor<3x3x16x16xbf16>
// BLOCKED-NEXT: %[[X:[a-z0-9_]+]] = kiln.reorder %{{.*}} to nChw16c
// BLOCKED-NEXT: kiln.conv2d %[[X]], %[[WB]] {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED: %[[DW:[a-z0-9_]+]] = kiln.conv2d_backward_filter {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED-NEXT: kiln.cast %[[DW]] : tensor<3x3x16x16xbf16> to tensor<3x3x16x16xf32>
// BLOCKED-NOT: kiln.reorder {{.*}} : tensor<3x3
func.func @filters(%x: tensor<8x16x16x16xbf16>, %w: tensor<3x3x16x16xf32>) -> (tensor<8x16x16x16xbf16>, tensor<3x3x16x16xf32>) {
  %wb = kiln.cast %w : tensor<3x3x16x16xf32> to tensor<3x3x16x16xbf16>
  %y = kiln.conv2d %x, %wb stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x16x16x16xbf16>, tensor<3x3x16x16xbf16>) -> tensor<8x16x16x16xbf16>
  %dw = kiln.conv2d_backward_filter %x, %y stride [1, 1] pad [1, 1, 1, 1] : (tensor<8x16x16x16xbf16>, tensor<8x16x16x16xbf16>) -> tensor<3x3x16x16xbf16>
  %dwf = kiln.cast %dw : tensor<3x3x16x16xbf16> to tensor<3x3x16x16xf32>
  return %y, %dwf : tensor<8x16x16x16xbf16>, tensor<3x3x16x16xf32>
}

// -----

// Channels that are not a multiple of 16 stay NHWC whatever the mode.
// BLOCKED-LABEL: func.func @narrow
// BLOCKED-NOT: kiln.layout
// BLOCKED-NOT: kiln.reorder
func.func @narrow(%x: tensor<8x16x16x8xf32>) -> tensor<8x16x16x8xf32> {
  %r = kiln.relu %x : tensor<8x16x16x8xf32>
  %s = kiln.add %r, %x : tensor<8x16x16x8xf32>
  return %s : tensor<8x16x16x8xf32>
}

// -----

// Negative: the input already reads a value in the wrong layout.
func.func @inconsistent(%x: tensor<8x16x16x16xf32>) -> tensor<8x16x16x16xf32> {
  %r = kiln.reorder %x to nChw16c : tensor<8x16x16x16xf32>
  // expected-error @+1 {{'kiln.relu' op reads operand #0 as nhwc but it is stored nChw16c (a kiln.reorder is missing)}}
  %s = kiln.relu %r : tensor<8x16x16x16xf32>
  return %s : tensor<8x16x16x16xf32>
}

// -----

// Negative: nChw16c needs multiples of 16 channels.
func.func @unblockable(%x: tensor<8x16x16x8xf32>) -> tensor<8x16x16x8xf32> {
  // expected-error @+1 {{cannot compute in nChw16c: nChw16c needs a multiple of 16 channels in every activation}}
  %r = kiln.relu %x {kiln.layout = #kiln.layout<nChw16c>} : tensor<8x16x16x8xf32>
  return %r : tensor<8x16x16x8xf32>
}

// -----

// Negative: the layout is a typed attribute, and nchw is not one an op
// computes in.
func.func @string_layout(%x: tensor<8x4x4x16xf32>) -> tensor<8x4x4x16xf32> {
  // expected-error @+1 {{'kiln.layout' must be #kiln.layout<nhwc> or #kiln.layout<nChw16c>}}
  %r = kiln.relu %x {kiln.layout = "nChw16c"} : tensor<8x4x4x16xf32>
  return %r : tensor<8x4x4x16xf32>
}

// -----

func.func @nchw_layout(%x: tensor<8x4x4x16xf32>) -> tensor<8x4x4x16xf32> {
  // expected-error @+1 {{'kiln.layout' must be #kiln.layout<nhwc> or #kiln.layout<nChw16c>}}
  %r = kiln.relu %x {kiln.layout = #kiln.layout<nchw>} : tensor<8x4x4x16xf32>
  return %r : tensor<8x4x4x16xf32>
}

// -----

// Negative: ops without LayoutOpInterface compute NHWC only.
func.func @not_a_layout_op(%x: tensor<8x4x4x16xf32>) -> tensor<8x256xf32> {
  // expected-error @+1 {{'kiln.layout' on an op that computes in NHWC only}}
  %r = kiln.reshape %x {kiln.layout = #kiln.layout<nChw16c>} : tensor<8x4x4x16xf32> to tensor<8x256xf32>
  return %r : tensor<8x256xf32>
}

// -----

// Negative: a reorder to a layout the ops cannot compute in.
func.func @reorder_nchw(%x: tensor<8x4x4x16xf32>) -> tensor<8x4x4x16xf32> {
  // expected-error @+1 {{'kiln.reorder' op reorders to nhwc or nChw16c only}}
  %r = kiln.reorder %x to nchw : tensor<8x4x4x16xf32>
  return %r : tensor<8x4x4x16xf32>
}

// -----

// kiln.activation is elementwise: blocked mode runs it in nChw16c between
// two blocked convolutions, with no reorder around it.
// BLOCKED-LABEL: func.func @activation
// BLOCKED: %[[C1:[a-z0-9_]+]] = kiln.conv2d {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED-NOT: kiln.reorder
// BLOCKED: %[[A:[a-z0-9_]+]] = kiln.activation hard_swish %[[C1]] {kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED-NOT: kiln.reorder
// BLOCKED: kiln.conv2d %[[A]], {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
func.func @activation(%x: tensor<8x16x16x16xf32>, %w: tensor<1x1x16x16xf32>) -> tensor<8x16x16x16xf32> {
  %c1 = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<8x16x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<8x16x16x16xf32>
  %a = kiln.activation hard_swish %c1 : tensor<8x16x16x16xf32>
  %c2 = kiln.conv2d %a, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<8x16x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<8x16x16x16xf32>
  return %c2 : tensor<8x16x16x16xf32>
}

// -----

// kiln.broadcast_mul computes NHWC only: blocked mode reorders its
// activation operand back and the result forward again.
// BLOCKED-LABEL: func.func @broadcast_mul
// BLOCKED: %[[C1:[a-z0-9_]+]] = kiln.conv2d {{.*}} {kiln.layout = #kiln.layout<nChw16c>}
// BLOCKED: %[[R:[a-z0-9_]+]] = kiln.reorder %[[C1]] to nhwc
// BLOCKED: %[[M:[a-z0-9_]+]] = kiln.broadcast_binary mul %[[R]], %{{.*}} :
// BLOCKED-NOT: kiln.layout
// BLOCKED: kiln.reorder %[[M]] to nChw16c
func.func @broadcast_mul(%x: tensor<8x16x16x16xf32>, %w: tensor<1x1x16x16xf32>, %s: tensor<8x1x1x16xf32>) -> tensor<8x16x16x16xf32> {
  %c1 = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<8x16x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<8x16x16x16xf32>
  %m = kiln.broadcast_binary mul %c1, %s : (tensor<8x16x16x16xf32>, tensor<8x1x1x16xf32>) -> tensor<8x16x16x16xf32>
  %c2 = kiln.conv2d %m, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<8x16x16x16xf32>, tensor<1x1x16x16xf32>) -> tensor<8x16x16x16xf32>
  return %c2 : tensor<8x16x16x16xf32>
}
