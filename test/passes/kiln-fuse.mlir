// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s
// With rounds 2 and 3 off, only batch norm takes relus.
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse{elementwise-chains=false optimizer-updates=false}))" | FileCheck %s --check-prefix=OFF
// With the convolution fusion off, no convolution is fused.
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse{conv-batch-norm=false}))" | FileCheck %s --check-prefix=NOCONV
// The training batch norm's fusion (off by default).
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse{conv-batch-norm-train=true}))" | FileCheck %s --check-prefix=TRAIN
// OFF-NOT: kiln.fused_elementwise
// OFF-NOT: kiln.fused_sgd_update
// OFF: kiln.batch_norm_train {{.*}} relu
// OFF-NOT: kiln.fused_elementwise
// OFF-NOT: kiln.fused_sgd_update

// CHECK-LABEL: func.func @forward_and_backward
// CHECK-SAME: (%[[X:.*]]: tensor<2x4xf32>, %[[G:.*]]: tensor<4xf32>, %[[DY:.*]]: tensor<2x4xf32>)
func.func @forward_and_backward(%x: tensor<2x4xf32>, %g: tensor<4xf32>, %dy: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  // CHECK: %[[Y:.*]], %[[M:.*]], %[[V:.*]], %{{.*}}, %{{.*}} = kiln.batch_norm_train %[[X]], {{.*}} momentum 0.899999976 relu :
  // CHECK-NOT: kiln.relu
  %y, %m, %v, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.relu %y : tensor<2x4xf32>
  // CHECK-NOT: kiln.relu_backward
  // CHECK: %[[DX:.*]], %{{.*}}, %{{.*}} = kiln.batch_norm_backward %[[DY]], %[[X]], %[[G]], %[[M]], %[[V]] relu_offset %[[G]] epsilon
  %d = kiln.relu_backward %dy, %r : tensor<2x4xf32>
  %dx, %dg, %db = kiln.batch_norm_backward %d, %x, %g, %m, %v epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: return %[[Y]], %[[DX]]
  return %r, %dx : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A ResNet block's residual add and relu go into the training batch norm
// whose output they alone consume. In an identity block the residual is the
// block's input; in a downsampling block both addends are batch norms, and
// the later one takes the earlier one's output (defined before it).
// CHECK-LABEL: func.func @residual_blocks
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x16xbf16>, %[[G:.*]]: tensor<16xf32>)
// CHECK: %[[A:[a-z_0-9]+]], {{.*}} = kiln.batch_norm_train %[[X]], {{.*}} residual %[[X]] epsilon {{.*}} relu :
// CHECK: %[[B:[a-z_0-9]+]], {{.*}} = kiln.batch_norm_train %[[A]], {{.*}} momentum 0.899999976 :
// CHECK: %[[C:[a-z_0-9]+]], {{.*}} = kiln.batch_norm_train %[[X]], {{.*}} residual %[[B]] epsilon {{.*}} relu :
// CHECK-NOT: kiln.add
// CHECK-NOT: kiln.relu
// CHECK: return %[[C]]
func.func @residual_blocks(%x: tensor<2x4x4x16xbf16>, %g: tensor<16xf32>) -> tensor<2x4x4x16xbf16> {
  %y:5 = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %s = kiln.add %y#0, %x : tensor<2x4x4x16xbf16>
  %r = kiln.relu %s : tensor<2x4x4x16xbf16>
  %a:5 = kiln.batch_norm_train %r, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %b:5 = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %t = kiln.add %a#0, %b#0 : tensor<2x4x4x16xbf16>
  %u = kiln.relu %t : tensor<2x4x4x16xbf16>
  return %u : tensor<2x4x4x16xbf16>
}

// -----

// Negative cases: the normalized output has another user (%y is returned),
// and the other addend is defined after the only batch norm (%late), so
// neither batch norm takes a residual.
// CHECK-LABEL: func.func @residual_not_fused
// CHECK-NOT: residual
// CHECK: kiln.add
// CHECK-NOT: residual
// CHECK: kiln.add
func.func @residual_not_fused(%x: tensor<2x4x4x16xf32>, %g: tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>) {
  %y:5 = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %s = kiln.add %y#0, %x : tensor<2x4x4x16xf32>
  %z:5 = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %late = kiln.relu %x : tensor<2x4x4x16xf32>
  %t = kiln.add %z#0, %late : tensor<2x4x4x16xf32>
  return %y#0, %s, %t : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @inference
// CHECK: kiln.batch_norm_inference {{.*}} relu :
// CHECK-NOT: kiln.relu
func.func @inference(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> tensor<2x4xf32> {
  %y = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %y : tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

// Negative case: the normalized output has another user, so it must stay
// unrectified; nothing fuses.
// CHECK-LABEL: func.func @shared_output
// CHECK: kiln.batch_norm_inference {{.*}} epsilon 9.99999974E-6 :
// CHECK: kiln.relu
func.func @shared_output(%x: tensor<2x4xf32>, %g: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %y = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %y : tensor<2x4xf32>
  return %r, %y : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// A residual add and its relu become one loop.
// CHECK-LABEL: func.func @add_relu
// CHECK-SAME: (%[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xf32>)
// CHECK: %[[F:.*]] = kiln.fused_elementwise %[[A]], %[[B]] : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32> {
// CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<?x4xf32>, %[[Y:.*]]: tensor<?x4xf32>):
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[X]], %[[Y]]
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[R]] : tensor<?x4xf32>
// CHECK: return %[[F]]
func.func @add_relu(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %s = kiln.add %a, %b : tensor<?x4xf32>
  %r = kiln.relu %s : tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A gradient sum, the relu mask after it and a cast to bf16: the whole chain
// is one op, the shared input %dy is one operand.
// CHECK-LABEL: func.func @backward_chain
// CHECK-SAME: (%[[DY:.*]]: tensor<2x4xf32>, %[[DZ:.*]]: tensor<2x4xf32>, %[[Y:.*]]: tensor<2x4xf32>)
// CHECK: %[[F:.*]] = kiln.fused_elementwise %[[DY]], %[[DZ]], %[[Y]] : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xbf16> {
// CHECK-NEXT: ^bb0(%[[A:.*]]: tensor<2x4xf32>, %[[B:.*]]: tensor<2x4xf32>, %[[C:.*]]: tensor<2x4xf32>):
// CHECK-NEXT: %[[S:.*]] = kiln.add %[[A]], %[[B]]
// CHECK-NEXT: %[[M:.*]] = kiln.relu_backward %[[S]], %[[C]]
// CHECK-NEXT: %[[H:.*]] = kiln.cast %[[M]] : tensor<2x4xf32> to tensor<2x4xbf16>
// CHECK-NEXT: kiln.yield %[[H]] : tensor<2x4xbf16>
// CHECK-NOT: kiln.add
// CHECK: return %[[F]]
func.func @backward_chain(%dy: tensor<2x4xf32>, %dz: tensor<2x4xf32>, %y: tensor<2x4xf32>) -> tensor<2x4xbf16> {
  %s = kiln.add %dy, %dz : tensor<2x4xf32>
  %m = kiln.relu_backward %s, %y : tensor<2x4xf32>
  %h = kiln.cast %m : tensor<2x4xf32> to tensor<2x4xbf16>
  return %h : tensor<2x4xbf16>
}

// -----

// An intermediate used after the chain is yielded as a second result.
// CHECK-LABEL: func.func @yield_intermediate
// CHECK: %[[F:.*]]:2 = kiln.fused_elementwise {{.*}} -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK: %[[S:.*]] = kiln.add
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]]
// CHECK-NEXT: kiln.yield %[[R]], %[[S]] : tensor<2x4xf32>, tensor<2x4xf32>
// CHECK: return %[[F]]#0, %[[F]]#1
func.func @yield_intermediate(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %s = kiln.add %a, %b : tensor<2x4xf32>
  %r = kiln.relu %s : tensor<2x4xf32>
  return %r, %s : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Negative case: the sum is read by a non-elementwise op before the relu,
// so it must exist before the relu runs; nothing fuses.
// CHECK-LABEL: func.func @used_before_chain_end
// CHECK-NOT: kiln.fused_elementwise
// CHECK: %[[S:.*]] = kiln.add
// CHECK: kiln.global_avg_pool %[[S]]
// CHECK: kiln.relu %[[S]]
func.func @used_before_chain_end(%a: tensor<2x3x3x4xf32>, %b: tensor<2x3x3x4xf32>) -> (tensor<2x3x3x4xf32>, tensor<2x4xf32>) {
  %s = kiln.add %a, %b : tensor<2x3x3x4xf32>
  %p = kiln.global_avg_pool %s : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  %r = kiln.relu %s : tensor<2x3x3x4xf32>
  return %r, %p : tensor<2x3x3x4xf32>, tensor<2x4xf32>
}

// -----

// Negative case: a relu-backward that alone feeds a batch-norm backward goes
// into the batch norm (round 1), not into a chain with the add before it.
// The mask is then recomputed from x with the forward's offset (%b).
// CHECK-LABEL: func.func @batch_norm_first
// CHECK-SAME: %[[B:[a-z0-9]+]]: tensor<4xf32>)
// CHECK-NOT: kiln.fused_elementwise
// CHECK: %[[S:.*]] = kiln.add
// CHECK-NOT: kiln.relu_backward
// CHECK: kiln.batch_norm_backward %[[S]], {{.*}} relu_offset %[[B]]
func.func @batch_norm_first(%dy: tensor<2x4xf32>, %dz: tensor<2x4xf32>, %x: tensor<2x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %y:5 = kiln.batch_norm_train %x, %g, %b, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.relu %y#0 : tensor<2x4xf32>
  %s = kiln.add %dy, %dz : tensor<2x4xf32>
  %m = kiln.relu_backward %s, %r : tensor<2x4xf32>
  %dx, %dg, %db = kiln.batch_norm_backward %m, %x, %g, %y#1, %y#2 epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %r, %dx : tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// Negative cases: a mask whose output does not come from this input's
// batch norm (%y is an argument; %z normalizes %w, not %x) stays a
// relu-backward (here, in a chain with the add), as the mask could not be
// recomputed from x.
// CHECK-LABEL: func.func @mask_not_from_batch_norm
// CHECK-NOT: relu_offset
// CHECK: kiln.relu_backward
// CHECK-NOT: relu_offset
// CHECK: kiln.relu_backward
// CHECK-NOT: relu_offset
func.func @mask_not_from_batch_norm(%dy: tensor<2x4xf32>, %dz: tensor<2x4xf32>, %y: tensor<2x4xf32>, %x: tensor<2x4xf32>, %w: tensor<2x4xf32>, %g: tensor<4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) {
  %s = kiln.add %dy, %dz : tensor<2x4xf32>
  %m = kiln.relu_backward %s, %y : tensor<2x4xf32>
  %dx, %dg, %db = kiln.batch_norm_backward %m, %x, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  %z:5 = kiln.batch_norm_train %w, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.relu %z#0 : tensor<2x4xf32>
  %n = kiln.relu_backward %dy, %r : tensor<2x4xf32>
  %dx2, %dg2, %db2 = kiln.batch_norm_backward %n, %x, %g, %z#1, %z#2 epsilon 1.0e-5 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>)
  return %dx, %dx2, %r : tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
}

// -----

// SGD updates with the same hyperparameters become one update at the last
// of them, the assignments of the results move after it; the update with
// another weight decay stays alone.
// CHECK-LABEL: func.func @sgd_updates
// CHECK-SAME: (%[[G0:.*]]: tensor<3x4xf32>, %[[G1:.*]]: tensor<4xf32>, %[[G2:.*]]: tensor<4xf32>, %[[LR:.*]]: tensor<f32>)
// CHECK: %[[W0:.*]] = kiln.read @w0
// CHECK-NEXT: %[[V0:.*]] = kiln.read @v0
// CHECK: kiln.sgd_update {{.*}} weight_decay 0.000000e+00 nesterov : tensor<4xf32>
// CHECK: %[[W1:.*]] = kiln.read @w1
// CHECK-NEXT: %[[V1:.*]] = kiln.read @v1
// CHECK: %[[NW:.*]]:2, %[[NV:.*]]:2 = kiln.fused_sgd_update(%[[W0]], %[[W1]]), (%[[G0]], %[[G1]]), (%[[V0]], %[[V1]]), %[[LR]] momentum 0.899999976 weight_decay 5.000000e-04 nesterov : tensor<3x4xf32>, tensor<4xf32>
// CHECK-NEXT: kiln.assign @w0, %[[NW]]#0
// CHECK-NEXT: kiln.assign @v0, %[[NV]]#0
// CHECK-NEXT: kiln.assign @w1, %[[NW]]#1
// CHECK-NEXT: kiln.assign @v1, %[[NV]]#1
module {
  kiln.variable parameter @w0 : tensor<3x4xf32> init zeros
  kiln.variable state @v0 : tensor<3x4xf32> init zeros
  kiln.variable parameter @w1 : tensor<4xf32> init zeros
  kiln.variable state @v1 : tensor<4xf32> init zeros
  kiln.variable parameter @w2 : tensor<4xf32> init zeros
  kiln.variable state @v2 : tensor<4xf32> init zeros
  func.func @sgd_updates(%g0: tensor<3x4xf32>, %g1: tensor<4xf32>, %g2: tensor<4xf32>, %lr: tensor<f32>) {
    %w0 = kiln.read @w0 : tensor<3x4xf32>
    %v0 = kiln.read @v0 : tensor<3x4xf32>
    %nw0, %nv0 = kiln.sgd_update %w0, %g0, %v0, %lr momentum 0.9 weight_decay 5.0e-4 nesterov : tensor<3x4xf32>
    kiln.assign @w0, %nw0 : tensor<3x4xf32>
    kiln.assign @v0, %nv0 : tensor<3x4xf32>
    %w2 = kiln.read @w2 : tensor<4xf32>
    %v2 = kiln.read @v2 : tensor<4xf32>
    %nw2, %nv2 = kiln.sgd_update %w2, %g2, %v2, %lr momentum 0.9 weight_decay 0.0 nesterov : tensor<4xf32>
    kiln.assign @w2, %nw2 : tensor<4xf32>
    kiln.assign @v2, %nv2 : tensor<4xf32>
    %w1 = kiln.read @w1 : tensor<4xf32>
    %v1 = kiln.read @v1 : tensor<4xf32>
    %nw1, %nv1 = kiln.sgd_update %w1, %g1, %v1, %lr momentum 0.9 weight_decay 5.0e-4 nesterov : tensor<4xf32>
    kiln.assign @w1, %nw1 : tensor<4xf32>
    kiln.assign @v1, %nv1 : tensor<4xf32>
    return
  }
}

// -----

// Updates whose new weight is cast to a bf16 copy (kiln-bf16-weight-copies)
// group apart from those without, and their fused update writes the copies:
// the casts disappear and the copies' assignments move after it. A single
// update with a copy fuses alone, for the cast.
// CHECK-LABEL: func.func @sgd_updates_with_copies
// CHECK-NOT: kiln.cast
// CHECK: %{{.*}}, %{{.*}}, %[[NC:.*]] = kiln.fused_sgd_update(%{{.*}}), (%{{.*}}), (%{{.*}}), %{{.*}} momentum 0.899999976 weight_decay 0.000000e+00 : tensor<4xf32> copies bf16
// CHECK-NOT: kiln.cast
// CHECK: %[[NW:.*]]:2, %[[NV:.*]]:2, %[[NC2:.*]]:2 = kiln.fused_sgd_update{{.*}} momentum 0.899999976 weight_decay 5.000000e-04 : tensor<3x4xf32>, tensor<4xf32> copies bf16
// CHECK-NEXT: kiln.assign @w0, %[[NW]]#0
// CHECK-NEXT: kiln.assign @w0.bf16, %[[NC2]]#0 : tensor<3x4xbf16>
// CHECK-NEXT: kiln.assign @v0, %[[NV]]#0
// CHECK-NEXT: kiln.assign @w1, %[[NW]]#1
// CHECK-NEXT: kiln.assign @w1.bf16, %[[NC2]]#1 : tensor<4xbf16>
// CHECK-NEXT: kiln.assign @v1, %[[NV]]#1
// CHECK: kiln.fused_sgd_update{{.*}} momentum 0.899999976 weight_decay 5.000000e-04 : tensor<4xf32>, tensor<4xf32>{{$}}
// CHECK-NEXT: kiln.assign @b
// OFF-LABEL: func.func @sgd_updates_with_copies
// OFF-COUNT-3: kiln.cast
module {
  kiln.variable parameter @w0 : tensor<3x4xf32> init zeros
  kiln.variable state @w0.bf16 : tensor<3x4xbf16> init copy of @w0
  kiln.variable state @v0 : tensor<3x4xf32> init zeros
  kiln.variable parameter @w1 : tensor<4xf32> init zeros
  kiln.variable state @w1.bf16 : tensor<4xbf16> init copy of @w1
  kiln.variable state @v1 : tensor<4xf32> init zeros
  kiln.variable parameter @w2 : tensor<4xf32> init zeros
  kiln.variable state @w2.bf16 : tensor<4xbf16> init copy of @w2
  kiln.variable state @v2 : tensor<4xf32> init zeros
  kiln.variable parameter @b : tensor<4xf32> init zeros
  kiln.variable state @vb : tensor<4xf32> init zeros
  kiln.variable parameter @c : tensor<4xf32> init zeros
  kiln.variable state @vc : tensor<4xf32> init zeros
  func.func @sgd_updates_with_copies(%g0: tensor<3x4xf32>, %g1: tensor<4xf32>, %lr: tensor<f32>) {
    %w0 = kiln.read @w0 : tensor<3x4xf32>
    %v0 = kiln.read @v0 : tensor<3x4xf32>
    %nw0, %nv0 = kiln.sgd_update %w0, %g0, %v0, %lr momentum 0.9 weight_decay 5.0e-4 : tensor<3x4xf32>
    kiln.assign @w0, %nw0 : tensor<3x4xf32>
    %c0 = kiln.cast %nw0 : tensor<3x4xf32> to tensor<3x4xbf16>
    kiln.assign @w0.bf16, %c0 : tensor<3x4xbf16>
    kiln.assign @v0, %nv0 : tensor<3x4xf32>
    %w2 = kiln.read @w2 : tensor<4xf32>
    %v2 = kiln.read @v2 : tensor<4xf32>
    %nw2, %nv2 = kiln.sgd_update %w2, %g1, %v2, %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>
    kiln.assign @w2, %nw2 : tensor<4xf32>
    %c2 = kiln.cast %nw2 : tensor<4xf32> to tensor<4xbf16>
    kiln.assign @w2.bf16, %c2 : tensor<4xbf16>
    kiln.assign @v2, %nv2 : tensor<4xf32>
    %b = kiln.read @b : tensor<4xf32>
    %vb = kiln.read @vb : tensor<4xf32>
    %nb, %nvb = kiln.sgd_update %b, %g1, %vb, %lr momentum 0.9 weight_decay 5.0e-4 : tensor<4xf32>
    kiln.assign @b, %nb : tensor<4xf32>
    kiln.assign @vb, %nvb : tensor<4xf32>
    %w1 = kiln.read @w1 : tensor<4xf32>
    %v1 = kiln.read @v1 : tensor<4xf32>
    %nw1, %nv1 = kiln.sgd_update %w1, %g1, %v1, %lr momentum 0.9 weight_decay 5.0e-4 : tensor<4xf32>
    kiln.assign @w1, %nw1 : tensor<4xf32>
    %c1 = kiln.cast %nw1 : tensor<4xf32> to tensor<4xbf16>
    kiln.assign @w1.bf16, %c1 : tensor<4xbf16>
    kiln.assign @v1, %nv1 : tensor<4xf32>
    %c = kiln.read @c : tensor<4xf32>
    %vc = kiln.read @vc : tensor<4xf32>
    %nc, %nvc = kiln.sgd_update %c, %g1, %vc, %lr momentum 0.9 weight_decay 5.0e-4 : tensor<4xf32>
    kiln.assign @c, %nc : tensor<4xf32>
    kiln.assign @vc, %nvc : tensor<4xf32>
    return
  }
}

// -----

// Negative case: a result of the first update is read (not assigned) before
// the second update, so the first keeps its own op; with one update left
// nothing fuses.
// CHECK-LABEL: func.func @sgd_result_needed_early
// CHECK-NOT: kiln.fused_sgd_update
// CHECK: kiln.sgd_update
// CHECK: kiln.relu
// CHECK: kiln.sgd_update
func.func @sgd_result_needed_early(%w: tensor<4xf32>, %g: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %nw0, %nv0 = kiln.sgd_update %w, %g, %v, %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>
  %r = kiln.relu %nw0 : tensor<4xf32>
  %nw1, %nv1 = kiln.sgd_update %r, %g, %v, %lr momentum 0.9 weight_decay 0.0 : tensor<4xf32>
  return %nw1, %nv0, %nv1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// Negative case: LARS updates stay per parameter (each needs its own norms
// before its update).
// CHECK-LABEL: func.func @lars_updates
// CHECK-NOT: kiln.fused_sgd_update
// CHECK-COUNT-2: kiln.lars_update
func.func @lars_updates(%w: tensor<4xf32>, %g: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %nw0, %nv0 = kiln.lars_update %w, %g, %v, %lr momentum 0.9 eta 0.001 weight_decay 0.0001 epsilon 0.0 : tensor<4xf32>
  %nw1, %nv1 = kiln.lars_update %g, %w, %v, %lr momentum 0.9 eta 0.001 weight_decay 0.0001 epsilon 0.0 : tensor<4xf32>
  return %nw0, %nv0, %nw1, %nv1 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// -----

// A LARS update whose new weight is cast to a bf16 copy writes the copy
// itself; the cast of a velocity is not a copy and stays.
// CHECK-LABEL: func.func @lars_copy
// CHECK-NEXT: %[[W:.*]], %[[V:.*]], %[[C:.*]] = kiln.lars_update {{.*}} : tensor<4xf32> copy tensor<4xbf16>
// CHECK-NEXT: %[[VC:.*]] = kiln.cast %[[V]]
// CHECK-NEXT: return %[[W]], %[[C]], %[[VC]]
// OFF-LABEL: func.func @lars_copy
// OFF-COUNT-2: kiln.cast
func.func @lars_copy(%w: tensor<4xf32>, %g: tensor<4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>) {
  %nw, %nv = kiln.lars_update %w, %g, %v, %lr momentum 0.9 eta 0.001 weight_decay 0.0001 epsilon 0.0 : tensor<4xf32>
  %c = kiln.cast %nw : tensor<4xf32> to tensor<4xbf16>
  %vc = kiln.cast %nv : tensor<4xf32> to tensor<4xbf16>
  return %nw, %c, %vc : tensor<4xf32>, tensor<4xbf16>, tensor<4xbf16>
}

// -----

// Evaluation step: a convolution and its inference batch norm become one op,
// which also takes the block's residual add and relu.
// CHECK-LABEL: func.func @conv_batch_norm_residual_relu
// CHECK-SAME: (%[[X:[^:]*]]: tensor<2x4x4x8xf32>, %[[W:[^:]*]]: tensor<1x1x8x16xf32>, %[[G:[^:]*]]: tensor<16xf32>, %[[S:[^:]*]]: tensor<2x4x4x16xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.fused_conv2d_batch_norm %[[X]], %[[W]], %[[G]], %[[G]], %[[G]], %[[G]] residual %[[S]] stride [1, 1] pad [0, 0, 0, 0] epsilon {{.*}} relu :
// CHECK-NEXT: return %[[Y]]
// OFF-LABEL: func.func @conv_batch_norm_residual_relu
// OFF: kiln.fused_conv2d_batch_norm {{.*}} residual
func.func @conv_batch_norm_residual_relu(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>, %s: tensor<2x4x4x16xf32>) -> tensor<2x4x4x16xf32> {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>) -> tensor<2x4x4x16xf32>
  %b = kiln.batch_norm_inference %c, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %a = kiln.add %s, %b : tensor<2x4x4x16xf32>
  %r = kiln.relu %a : tensor<2x4x4x16xf32>
  return %r : tensor<2x4x4x16xf32>
}

// -----

// A batch norm's relu is fused either way round.
// CHECK-LABEL: func.func @conv_batch_norm_relu
// CHECK-NEXT: kiln.fused_conv2d_batch_norm {{.*}} stride [2, 2] pad [1, 1, 1, 1] epsilon {{.*}} relu : (tensor<2x4x4x8xbf16>, tensor<3x3x8x16xbf16>, {{.*}}) -> tensor<2x2x2x16xbf16>
// CHECK-NEXT: return
func.func @conv_batch_norm_relu(%x: tensor<2x4x4x8xbf16>, %w: tensor<3x3x8x16xbf16>, %g: tensor<16xf32>) -> tensor<2x2x2x16xbf16> {
  %c = kiln.conv2d %x, %w stride [2, 2] pad [1, 1, 1, 1] : (tensor<2x4x4x8xbf16>, tensor<3x3x8x16xbf16>) -> tensor<2x2x2x16xbf16>
  %b = kiln.batch_norm_inference %c, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x2x2x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x2x2x16xbf16>
  %r = kiln.relu %b : tensor<2x2x2x16xbf16>
  return %r : tensor<2x2x2x16xbf16>
}

// -----

// Not fused: the convolution's output is also returned; the fused result
// read twice keeps its add and relu outside; switched off.
// CHECK-LABEL: func.func @conv_batch_norm_not_fused
// CHECK: kiln.conv2d
// CHECK: kiln.batch_norm_inference
// CHECK: %[[F:.*]] = kiln.fused_conv2d_batch_norm
// CHECK-NOT: residual
// CHECK-SAME: : (
// CHECK: kiln.fused_elementwise %[[F]]
// NOCONV-LABEL: func.func @conv_batch_norm_not_fused
// NOCONV-NOT: kiln.fused_conv2d_batch_norm
// NOCONV: return
func.func @conv_batch_norm_not_fused(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x8x16xf32>, %g: tensor<16xf32>, %s: tensor<2x4x4x16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>) {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>) -> tensor<2x4x4x16xf32>
  %b = kiln.batch_norm_inference %c, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %c3 = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xf32>, tensor<1x1x8x16xf32>) -> tensor<2x4x4x16xf32>
  %b3 = kiln.batch_norm_inference %c3, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %a = kiln.add %b3, %s : tensor<2x4x4x16xf32>
  %r = kiln.relu %a : tensor<2x4x4x16xf32>
  return %c, %b, %r, %b3 : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>
}

// -----

// Training step: a convolution whose kernel takes its output's statistics
// (3x3, stride 1, one pixel of padding, 16-128 channels) and its training
// batch norm become one op (after the batch norm took its residual add and
// relu) at the batch norm's place; the convolution's output, which the
// batch-norm backward reads later, is its first result.
// TRAIN-LABEL: func.func @conv_batch_norm_train
// TRAIN-SAME: (%[[X:[^:]*]]: tensor<2x4x4x16xf32>, %[[W:[^:]*]]: tensor<3x3x16x16xf32>, %[[G:[^:]*]]: tensor<16xf32>, %[[S:[^:]*]]: tensor<2x4x4x16xf32>)
// TRAIN-NEXT: %[[C:[a-z_0-9]+]], %[[Y:[a-z_0-9]+]], %[[M:[a-z_0-9]+]], %[[V:[a-z_0-9]+]], %{{.*}}, %{{.*}} = kiln.fused_conv2d_batch_norm_train %[[X]], %[[W]], %[[G]], %[[G]], %[[G]], %[[G]] residual %[[S]] stride [1, 1] pad [1, 1, 1, 1] epsilon {{.*}} momentum {{.*}} relu :
// TRAIN-NEXT: return %[[Y]], %[[C]], %[[M]], %[[V]]
// By default the batch norm only takes its residual add and relu.
// CHECK-LABEL: func.func @conv_batch_norm_train
// CHECK: kiln.conv2d
// CHECK: kiln.batch_norm_train {{.*}} residual
func.func @conv_batch_norm_train(%x: tensor<2x4x4x16xf32>, %w: tensor<3x3x16x16xf32>, %g: tensor<16xf32>, %s: tensor<2x4x4x16xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x16xf32>, tensor<3x3x16x16xf32>) -> tensor<2x4x4x16xf32>
  %t:5 = kiln.batch_norm_train %c, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %a = kiln.add %t#0, %s : tensor<2x4x4x16xf32>
  %r = kiln.relu %a : tensor<2x4x4x16xf32>
  return %r, %c, %t#1, %t#2 : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// Not fused: the convolution's output read before its training batch norm
// (the fused op, at the batch norm's place, would come too late); a
// training batch norm of something else; convolutions whose kernel does
// not take the statistics (a 1x1, a strided 3x3, a bf16 3x3 on small
// images).
// TRAIN-LABEL: func.func @conv_batch_norm_train_not_fused
// TRAIN-NOT: kiln.fused_conv2d_batch_norm_train
// TRAIN: return
func.func @conv_batch_norm_train_not_fused(%x: tensor<2x4x4x16xf32>, %w: tensor<3x3x16x16xf32>, %w1: tensor<1x1x16x16xf32>, %xb: tensor<2x4x4x64xbf16>, %wb: tensor<3x3x64x64xbf16>, %g: tensor<16xf32>, %gb: tensor<64xf32>) -> (tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x2x2x16xf32>, tensor<2x4x4x64xbf16>) {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x16xf32>, tensor<3x3x16x16xf32>) -> tensor<2x4x4x16xf32>
  %early = kiln.relu %c : tensor<2x4x4x16xf32>
  %t:5 = kiln.batch_norm_train %c, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %u:5 = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %c1 = kiln.conv2d %x, %w1 stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x16xf32>, tensor<1x1x16x16xf32>) -> tensor<2x4x4x16xf32>
  %v:5 = kiln.batch_norm_train %c1, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %c2 = kiln.conv2d %x, %w stride [2, 2] pad [1, 1, 1, 1] : (tensor<2x4x4x16xf32>, tensor<3x3x16x16xf32>) -> tensor<2x2x2x16xf32>
  %s:5 = kiln.batch_norm_train %c2, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x2x2x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<2x2x2x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %cb = kiln.conv2d %xb, %wb stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x64xbf16>, tensor<3x3x64x64xbf16>) -> tensor<2x4x4x64xbf16>
  %b:5 = kiln.batch_norm_train %cb, %gb, %gb, %gb, %gb epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<2x4x4x64xbf16>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return %early, %t#0, %u#0, %v#0, %s#0, %b#0 : tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x4x4x16xf32>, tensor<2x2x2x16xf32>, tensor<2x4x4x64xbf16>
}

// -----

// A dense layer's weight and bias gradients read its output gradient once;
// its input gradient (a matmul with transpose_rhs) stays a matmul.
// CHECK-LABEL: func.func @dense_gradients
// CHECK-SAME: (%[[X:[^:]*]]: tensor<?x8xf32>, %[[W:[^:]*]]: tensor<8x4xf32>, %[[DY:[^:]*]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[DX:.*]] = kiln.matmul %[[DY]], %[[W]] transpose_rhs
// CHECK-NEXT: %[[DW:.*]], %[[DB:.*]] = kiln.fused_dense_backward_weights %[[X]], %[[DY]] : (tensor<?x8xf32>, tensor<?x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
// CHECK-NEXT: return %[[DX]], %[[DW]], %[[DB]]
func.func @dense_gradients(%x: tensor<?x8xf32>, %w: tensor<8x4xf32>, %dy: tensor<?x4xf32>) -> (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) {
  %dx = kiln.matmul %dy, %w transpose_rhs : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %dw = kiln.matmul %x, %dy transpose_lhs : (tensor<?x8xf32>, tensor<?x4xf32>) -> tensor<8x4xf32>
  %db = kiln.reduce_sum %dy : (tensor<?x4xf32>) -> tensor<4xf32>
  return %dx, %dw, %db : tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>
}

// -----

// Not fused: the bias gradient sums another gradient; the product is not
// x^T dy.
// CHECK-LABEL: func.func @dense_gradients_not_fused
// CHECK-NOT: kiln.fused_dense_backward_weights
// CHECK: return
func.func @dense_gradients_not_fused(%x: tensor<2x8xf32>, %dy: tensor<2x4xf32>, %dz: tensor<2x4xf32>, %a: tensor<4x2xf32>) -> (tensor<8x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>) {
  %dw = kiln.matmul %x, %dy transpose_lhs : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<8x4xf32>
  %db = kiln.reduce_sum %dz : (tensor<2x4xf32>) -> tensor<4xf32>
  %p = kiln.matmul %a, %dz : (tensor<4x2xf32>, tensor<2x4xf32>) -> tensor<4x4xf32>
  %s = kiln.reduce_sum %dz : (tensor<2x4xf32>) -> tensor<4xf32>
  return %dw, %db, %p, %s : tensor<8x4xf32>, tensor<4xf32>, tensor<4x4xf32>, tensor<4xf32>
}

// -----

// Activations join elementwise chains: an activation, its input's residual
// add and a backward mask become one loop.
// CHECK-LABEL: func.func @activation_chain
// CHECK: kiln.fused_elementwise
// CHECK-NEXT: ^bb0
// CHECK-NEXT: %[[S:.*]] = kiln.add
// CHECK-NEXT: %[[H:.*]] = kiln.activation hard_swish %[[S]]
// CHECK-NEXT: %[[G:.*]] = kiln.activation_backward sigmoid %[[H]], %{{.*}}
// CHECK-NEXT: kiln.yield %[[G]]
// CHECK-NOT: kiln.activation
// CHECK: return
func.func @activation_chain(%a: tensor<2x4xf32>, %b: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %s = kiln.add %a, %b : tensor<2x4xf32>
  %h = kiln.activation hard_swish %s : tensor<2x4xf32>
  %g = kiln.activation_backward sigmoid %h, %a : tensor<2x4xf32>
  return %g : tensor<2x4xf32>
}

// -----

// Negative case: kiln.broadcast_binary (a broadcast operand is not
// elementwise) does not join a chain, which stops on either side of it.
// CHECK-LABEL: func.func @broadcast_binary_not_fused
// CHECK: %[[R:.*]] = kiln.relu %{{.*}} : tensor<2x3x3x4xf32>
// CHECK-NEXT: %[[M:.*]] = kiln.broadcast_binary mul %[[R]], %{{.*}} :
// CHECK-NEXT: %[[H:.*]] = kiln.activation sigmoid %[[M]] : tensor<2x3x3x4xf32>
// CHECK-NEXT: return %[[H]]
// CHECK-NOT: kiln.fused_elementwise
func.func @broadcast_binary_not_fused(%x: tensor<2x3x3x4xf32>, %s: tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32> {
  %r = kiln.relu %x : tensor<2x3x3x4xf32>
  %m = kiln.broadcast_binary mul %r, %s : (tensor<2x3x3x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32>
  %h = kiln.activation sigmoid %m : tensor<2x3x3x4xf32>
  return %h : tensor<2x3x3x4xf32>
}
