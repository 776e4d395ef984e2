// Every kiln op round-trips through its custom form and the generic form.
// RUN: kiln-opt %s -split-input-file | kiln-opt -split-input-file | FileCheck %s
// RUN: kiln-opt %s -split-input-file --mlir-print-op-generic | kiln-opt -split-input-file | FileCheck %s

// CHECK-LABEL: module @variables
module @variables {
  // CHECK: kiln.variable parameter @conv.weight : tensor<3x3x3x8xf32> init he_normal
  kiln.variable parameter @conv.weight : tensor<3x3x3x8xf32> init he_normal
  // CHECK: kiln.variable parameter @fc.weight : tensor<8x4xf32> init normal std 0.00999999977
  kiln.variable parameter @fc.weight : tensor<8x4xf32> init normal std 1.000000e-02
  // CHECK: kiln.variable parameter @bn.weight : tensor<8xf32> init ones
  kiln.variable parameter @bn.weight : tensor<8xf32> init ones
  // CHECK: kiln.variable state @bn.running_mean : tensor<8xf32> init zeros
  kiln.variable state @bn.running_mean : tensor<8xf32> init zeros
  // CHECK: kiln.variable state @conv.weight.bf16 : tensor<3x3x3x8xbf16> init copy of @conv.weight
  kiln.variable state @conv.weight.bf16 : tensor<3x3x3x8xbf16> init copy of @conv.weight

  // CHECK-LABEL: func.func @read_assign
  func.func @read_assign() {
    // CHECK: %[[M:.*]] = kiln.read @bn.running_mean : tensor<8xf32>
    %m = kiln.read @bn.running_mean : tensor<8xf32>
    // CHECK: kiln.assign @bn.running_mean, %[[M]] : tensor<8xf32>
    kiln.assign @bn.running_mean, %m : tensor<8xf32>
    return
  }
}

// -----

// CHECK-LABEL: func.func @conv2d
// CHECK-SAME: (%[[X:.*]]: tensor<?x8x8x3xf32>, %[[W:.*]]: tensor<3x3x3x8xf32>)
func.func @conv2d(%x: tensor<?x8x8x3xf32>, %w: tensor<3x3x3x8xf32>) -> (tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>) {
  // CHECK: kiln.conv2d %[[X]], %[[W]] stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x4x4x8xf32>
  %a = kiln.conv2d %x, %w stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.conv2d %[[X]], %[[W]] stride [1, 1] pad [0, 0, 0, 0] dilation [2, 2] :
  %b = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] dilation [2, 2] : (tensor<?x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x4x4x8xf32>
  return %a, %b : tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @batch_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x8xbf16>, %[[G:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>, %[[M:.*]]: tensor<8xf32>, %[[V:.*]]: tensor<8xf32>)
func.func @batch_norm(%x: tensor<2x4x4x8xbf16>, %g: tensor<8xf32>, %b: tensor<8xf32>, %m: tensor<8xf32>, %v: tensor<8xf32>) -> (tensor<2x4x4x8xbf16>, tensor<2x4x4x8xbf16>) {
  // CHECK: kiln.batch_norm_train %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] epsilon 1.000000e-03 momentum 0.949999988 :
  // CHECK-SAME: -> (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %b, %m, %v epsilon 1.0e-3 momentum 0.95 : (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  // CHECK: kiln.batch_norm_inference %[[X]], %[[G]], %[[B]], %[[M]], %[[V]] epsilon 9.99999974E-6 :
  %z = kiln.batch_norm_inference %x, %g, %b, %m, %v epsilon 1.0e-5 : (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xbf16>
  return %y, %z : tensor<2x4x4x8xbf16>, tensor<2x4x4x8xbf16>
}

// -----

// The fused form --kiln-fuse builds: a residual added, then rectified.
// CHECK-LABEL: func.func @batch_norm_residual
// CHECK: kiln.batch_norm_train %[[X:.*]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} residual %[[X]] epsilon 9.99999974E-6 momentum 0.899999976 relu :
func.func @batch_norm_residual(%x: tensor<2x4x4x8xbf16>, %g: tensor<8xf32>) -> tensor<2x4x4x8xbf16> {
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g residual %x epsilon 1.0e-5 momentum 0.9 relu : (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<2x4x4x8xbf16>) -> (tensor<2x4x4x8xbf16>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y : tensor<2x4x4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @batch_norm_2d
func.func @batch_norm_2d(%x: tensor<?x8xf32>, %g: tensor<8xf32>) -> tensor<?x8xf32> {
  // CHECK: kiln.batch_norm_train
  // CHECK-SAME: -> (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.0 : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %y : tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.*]]: tensor<?x4x4x8xf32>, %[[B:.*]]: tensor<?x4x4x8xf32>)
func.func @elementwise(%a: tensor<?x4x4x8xf32>, %b: tensor<?x4x4x8xf32>) -> tensor<?x4x4x8xbf16> {
  // CHECK: %[[S:.*]] = kiln.add %[[A]], %[[B]] : tensor<?x4x4x8xf32>
  %s = kiln.add %a, %b : tensor<?x4x4x8xf32>
  // CHECK: %[[R:.*]] = kiln.relu %[[S]] : tensor<?x4x4x8xf32>
  %r = kiln.relu %s : tensor<?x4x4x8xf32>
  // CHECK: kiln.cast %[[R]] : tensor<?x4x4x8xf32> to tensor<?x4x4x8xbf16>
  %c = kiln.cast %r : tensor<?x4x4x8xf32> to tensor<?x4x4x8xbf16>
  return %c : tensor<?x4x4x8xbf16>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x4x8xf32>, %[[D:.*]]: tensor<?x4x4x8xf32>)
func.func @activations(%x: tensor<?x4x4x8xf32>, %dy: tensor<?x4x4x8xf32>) -> (tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>) {
  // CHECK: kiln.activation sigmoid %[[X]] : tensor<?x4x4x8xf32>
  %a = kiln.activation sigmoid %x : tensor<?x4x4x8xf32>
  // CHECK: kiln.activation silu %[[X]] : tensor<?x4x4x8xf32>
  %b = kiln.activation silu %x : tensor<?x4x4x8xf32>
  // CHECK: kiln.activation relu6 %[[X]] : tensor<?x4x4x8xf32>
  %c = kiln.activation relu6 %x : tensor<?x4x4x8xf32>
  // CHECK: kiln.activation hard_sigmoid %[[X]] : tensor<?x4x4x8xf32>
  %d = kiln.activation hard_sigmoid %x : tensor<?x4x4x8xf32>
  // CHECK: kiln.activation hard_swish %[[X]] : tensor<?x4x4x8xf32>
  %e = kiln.activation hard_swish %x : tensor<?x4x4x8xf32>
  // CHECK: kiln.activation_backward silu %[[D]], %[[X]] : tensor<?x4x4x8xf32>
  %f = kiln.activation_backward silu %dy, %x : tensor<?x4x4x8xf32>
  return %a, %b, %c, %d, %e, %f : tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>
}

// -----

// CHECK-LABEL: func.func @broadcast_mul
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x4x8xf32>, %[[S:.*]]: tensor<?x1x1x8xf32>, %[[D:.*]]: tensor<?x4x4x8xf32>)
func.func @broadcast_mul(%x: tensor<?x4x4x8xf32>, %s: tensor<?x1x1x8xf32>, %dy: tensor<?x4x4x8xf32>) -> (tensor<?x4x4x8xf32>, tensor<?x1x1x8xf32>) {
  // CHECK: kiln.broadcast_binary mul %[[X]], %[[S]] : (tensor<?x4x4x8xf32>, tensor<?x1x1x8xf32>) -> tensor<?x4x4x8xf32>
  %y = kiln.broadcast_binary mul %x, %s : (tensor<?x4x4x8xf32>, tensor<?x1x1x8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.broadcast_binary_backward mul wrt rhs %[[D]] lhs %[[X]] : (tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>) -> tensor<?x1x1x8xf32>
  %ds = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x : (tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>) -> tensor<?x1x1x8xf32>
  return %y, %ds : tensor<?x4x4x8xf32>, tensor<?x1x1x8xf32>
}

// -----

// The other kinds, both operands broadcast, and the gradients that read
// no forward operand (add, sub) or both (div with respect to rhs).
// CHECK-LABEL: func.func @broadcast_binary_kinds
// CHECK-SAME: (%[[A:.*]]: tensor<?x1x4x8xf32>, %[[B:.*]]: tensor<1x4x1x8xf32>, %[[D:.*]]: tensor<?x4x4x8xf32>)
func.func @broadcast_binary_kinds(%a: tensor<?x1x4x8xf32>, %b: tensor<1x4x1x8xf32>, %dy: tensor<?x4x4x8xf32>) -> (tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>) {
  // CHECK: kiln.broadcast_binary add %[[A]], %[[B]] : (tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<?x4x4x8xf32>
  %x = kiln.broadcast_binary add %a, %b : (tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.broadcast_binary sub %[[A]], %[[B]]
  %y = kiln.broadcast_binary sub %a, %b : (tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.broadcast_binary div %[[A]], %[[B]]
  %z = kiln.broadcast_binary div %a, %b : (tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.broadcast_binary_backward sub wrt rhs %[[D]] : (tensor<?x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  %db = kiln.broadcast_binary_backward sub wrt rhs %dy : (tensor<?x4x4x8xf32>) -> tensor<1x4x1x8xf32>
  // CHECK: kiln.broadcast_binary_backward div wrt rhs %[[D]] lhs %[[A]] rhs %[[B]] : (tensor<?x4x4x8xf32>, tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  %dd = kiln.broadcast_binary_backward div wrt rhs %dy lhs %a rhs %b : (tensor<?x4x4x8xf32>, tensor<?x1x4x8xf32>, tensor<1x4x1x8xf32>) -> tensor<1x4x1x8xf32>
  return %x, %y, %z, %db, %dd : tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<?x4x4x8xf32>, tensor<1x4x1x8xf32>, tensor<1x4x1x8xf32>
}

// -----

// CHECK-LABEL: func.func @bias_add
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x4x8xf32>, %[[B:.*]]: tensor<8xf32>)
func.func @bias_add(%x: tensor<?x4x4x8xf32>, %b: tensor<8xf32>) -> (tensor<?x4x4x8xf32>, tensor<8xf32>) {
  // CHECK: %[[Y:.*]] = kiln.bias_add %[[X]], %[[B]] : (tensor<?x4x4x8xf32>, tensor<8xf32>) -> tensor<?x4x4x8xf32>
  %y = kiln.bias_add %x, %b : (tensor<?x4x4x8xf32>, tensor<8xf32>) -> tensor<?x4x4x8xf32>
  // CHECK: kiln.bias_add_backward %[[Y]] : (tensor<?x4x4x8xf32>) -> tensor<8xf32>
  %db = kiln.bias_add_backward %y : (tensor<?x4x4x8xf32>) -> tensor<8xf32>
  return %y, %db : tensor<?x4x4x8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @pooling
// CHECK-SAME: (%[[X:.*]]: tensor<?x9x9x8xf32>)
func.func @pooling(%x: tensor<?x9x9x8xf32>) -> (tensor<?x5x5x8xf32>, tensor<?x4x4x8xf32>, tensor<?x8xf32>) {
  // CHECK: kiln.max_pool %[[X]] window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x9x9x8xf32>) -> tensor<?x5x5x8xf32>
  %m = kiln.max_pool %x window [3, 3] stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x9x9x8xf32>) -> tensor<?x5x5x8xf32>
  // CHECK: kiln.avg_pool %[[X]] window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x9x9x8xf32>) -> tensor<?x4x4x8xf32>
  %a = kiln.avg_pool %x window [2, 2] stride [2, 2] pad [0, 0, 0, 0] : (tensor<?x9x9x8xf32>) -> tensor<?x4x4x8xf32>
  // Ceil mode keeps the last window, which overhangs the input by one.
  // CHECK: kiln.avg_pool %[[X]] window [2, 2] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<?x9x9x8xf32>) -> tensor<?x5x5x8xf32>
  %ac = kiln.avg_pool %x window [2, 2] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<?x9x9x8xf32>) -> tensor<?x5x5x8xf32>
  // CHECK: kiln.global_avg_pool %[[X]] : (tensor<?x9x9x8xf32>) -> tensor<?x8xf32>
  %g = kiln.global_avg_pool %x : (tensor<?x9x9x8xf32>) -> tensor<?x8xf32>
  return %m, %a, %g : tensor<?x5x5x8xf32>, tensor<?x4x4x8xf32>, tensor<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @dense_and_loss
// CHECK-SAME: (%[[X:.*]]: tensor<?x1x1x8xf32>, %[[W:.*]]: tensor<8x4xf32>, %[[B:.*]]: tensor<4xf32>, %[[L:.*]]: tensor<?xi32>)
func.func @dense_and_loss(%x: tensor<?x1x1x8xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<f32>) {
  // CHECK: %[[F:.*]] = kiln.reshape %[[X]] : tensor<?x1x1x8xf32> to tensor<?x8xf32>
  %f = kiln.reshape %x : tensor<?x1x1x8xf32> to tensor<?x8xf32>
  // CHECK: %[[Y:.*]] = kiln.dense %[[F]], %[[W]] bias %[[B]] : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %y = kiln.dense %f, %w bias %b : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: %[[Z:.*]] = kiln.dense %[[F]], %[[W]] : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  %z = kiln.dense %f, %w : (tensor<?x8xf32>, tensor<8x4xf32>) -> tensor<?x4xf32>
  // CHECK: kiln.softmax_cross_entropy %[[Y]], %[[L]] : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  %l0 = kiln.softmax_cross_entropy %y, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: kiln.softmax_cross_entropy %[[Z]], %[[L]] label_smoothing 1.000000e-01 : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  %l1 = kiln.softmax_cross_entropy %z, %labels label_smoothing 0.1 : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  return %l0, %l1 : tensor<f32>, tensor<f32>
}

// -----

// CHECK-LABEL: func.func @fused
// CHECK-SAME: (%[[A:.*]]: tensor<?x4xf32>, %[[B:.*]]: tensor<?x4xbf16>, %[[W:.*]]: tensor<3x4xf32>, %[[V:.*]]: tensor<4xf32>, %[[LR:.*]]: tensor<f32>)
func.func @fused(%a: tensor<?x4xf32>, %b: tensor<?x4xbf16>, %w: tensor<3x4xf32>, %v: tensor<4xf32>, %lr: tensor<f32>) -> (tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<3x4xf32>, tensor<4xf32>) {
  // CHECK: %[[F:.*]]:2 = kiln.fused_elementwise %[[A]], %[[B]] : (tensor<?x4xf32>, tensor<?x4xbf16>) -> (tensor<?x4xbf16>, tensor<?x4xbf16>) {
  // CHECK-NEXT: ^bb0(%[[X:.*]]: tensor<?x4xf32>, %[[Y:.*]]: tensor<?x4xbf16>):
  // CHECK-NEXT: %[[C:.*]] = kiln.cast %[[X]] : tensor<?x4xf32> to tensor<?x4xbf16>
  // CHECK-NEXT: %[[S:.*]] = kiln.add %[[C]], %[[Y]] : tensor<?x4xbf16>
  // CHECK-NEXT: %[[R:.*]] = kiln.relu %[[S]] : tensor<?x4xbf16>
  // CHECK-NEXT: kiln.yield %[[R]], %[[S]] : tensor<?x4xbf16>, tensor<?x4xbf16>
  // CHECK-NEXT: }
  %f:2 = kiln.fused_elementwise %a, %b : (tensor<?x4xf32>, tensor<?x4xbf16>) -> (tensor<?x4xbf16>, tensor<?x4xbf16>) {
  ^bb0(%x: tensor<?x4xf32>, %y: tensor<?x4xbf16>):
    %c = kiln.cast %x : tensor<?x4xf32> to tensor<?x4xbf16>
    %s = kiln.add %c, %y : tensor<?x4xbf16>
    %r = kiln.relu %s : tensor<?x4xbf16>
    kiln.yield %r, %s : tensor<?x4xbf16>, tensor<?x4xbf16>
  }
  // CHECK: %[[NW:.*]]:2, %[[NV:.*]]:2 = kiln.fused_sgd_update(%[[W]], %[[V]]), (%[[W]], %[[V]]), (%[[W]], %[[V]]), %[[LR]] momentum 0.899999976 weight_decay 5.000000e-04 nesterov : tensor<3x4xf32>, tensor<4xf32>
  %nw:2, %nv:2 = kiln.fused_sgd_update (%w, %v), (%w, %v), (%w, %v), %lr momentum 0.9 weight_decay 5.0e-4 nesterov : tensor<3x4xf32>, tensor<4xf32>
  // CHECK: %{{.*}}:2, %{{.*}}:2, %{{.*}}:2 = kiln.fused_sgd_update(%[[W]], %[[V]]), (%[[W]], %[[V]]), (%[[W]], %[[V]]), %[[LR]] momentum 0.899999976 weight_decay 0.000000e+00 : tensor<3x4xf32>, tensor<4xf32> copies bf16
  %cw:2, %cv:2, %cc:2 = kiln.fused_sgd_update (%w, %v), (%w, %v), (%w, %v), %lr momentum 0.9 weight_decay 0.0 : tensor<3x4xf32>, tensor<4xf32> copies bf16
  // CHECK: %{{.*}}, %{{.*}}, %{{.*}} = kiln.lars_update %[[W]], %[[W]], %[[W]], %[[LR]] momentum 0.899999976 eta 1.000000e-03 weight_decay 9.99999974E-5 epsilon 0.000000e+00 : tensor<3x4xf32> copy tensor<3x4xbf16>
  %lw, %lv, %lc = kiln.lars_update %w, %w, %w, %lr momentum 0.9 eta 1.0e-3 weight_decay 1.0e-4 epsilon 0.0 : tensor<3x4xf32> copy tensor<3x4xbf16>
  // CHECK: return %[[F]]#0, %[[F]]#1, %[[NW]]#0, %[[NV]]#1
  return %f#0, %f#1, %nw#0, %nv#1 : tensor<?x4xbf16>, tensor<?x4xbf16>, tensor<3x4xf32>, tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @fused_conv2d_batch_norm
func.func @fused_conv2d_batch_norm(%x: tensor<?x4x4x8xf32>, %w: tensor<3x3x8x16xf32>, %c: tensor<16xf32>, %r: tensor<?x2x2x16xf32>) -> (tensor<?x2x2x16xf32>, tensor<?x2x2x16xf32>) {
  // CHECK: kiln.fused_conv2d_batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} residual %{{.*}} stride [2, 2] pad [1, 1, 1, 1] epsilon 9.99999974E-6 relu : (tensor<?x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x2x2x16xf32>) -> tensor<?x2x2x16xf32>
  %a = kiln.fused_conv2d_batch_norm %x, %w, %c, %c, %c, %c residual %r stride [2, 2] pad [1, 1, 1, 1] epsilon 1.0e-5 relu : (tensor<?x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<?x2x2x16xf32>) -> tensor<?x2x2x16xf32>
  // CHECK: kiln.fused_conv2d_batch_norm %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stride [2, 2] pad [2, 2, 2, 2] dilation [2, 2] epsilon 9.99999974E-6 :
  %b = kiln.fused_conv2d_batch_norm %x, %w, %c, %c, %c, %c stride [2, 2] pad [2, 2, 2, 2] dilation [2, 2] epsilon 1.0e-5 : (tensor<?x4x4x8xf32>, tensor<3x3x8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x2x2x16xf32>
  return %a, %b : tensor<?x2x2x16xf32>, tensor<?x2x2x16xf32>
}

// CHECK-LABEL: func.func @fused_conv2d_batch_norm_train
func.func @fused_conv2d_batch_norm_train(%x: tensor<?x4x4x8xbf16>, %w: tensor<3x3x8x16xbf16>, %c: tensor<16xf32>) -> (tensor<?x4x4x16xbf16>, tensor<?x4x4x16xbf16>, tensor<16xf32>) {
  // CHECK: kiln.fused_conv2d_batch_norm_train %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} stride [1, 1] pad [1, 1, 1, 1] epsilon 9.99999974E-6 momentum 0.899999976 relu : (tensor<?x4x4x8xbf16>, tensor<3x3x8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x4x4x16xbf16>, tensor<?x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  %y:6 = kiln.fused_conv2d_batch_norm_train %x, %w, %c, %c, %c, %c stride [1, 1] pad [1, 1, 1, 1] epsilon 1.0e-5 momentum 0.9 relu : (tensor<?x4x4x8xbf16>, tensor<3x3x8x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<?x4x4x16xbf16>, tensor<?x4x4x16xbf16>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %y#0, %y#1, %y#2 : tensor<?x4x4x16xbf16>, tensor<?x4x4x16xbf16>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @fused_dense_backward_weights
func.func @fused_dense_backward_weights(%x: tensor<?x8xbf16>, %dy: tensor<?x4xbf16>) -> (tensor<8x4xbf16>, tensor<4xbf16>) {
  // CHECK: kiln.fused_dense_backward_weights %{{.*}}, %{{.*}} : (tensor<?x8xbf16>, tensor<?x4xbf16>) -> (tensor<8x4xbf16>, tensor<4xbf16>)
  %dw, %db = kiln.fused_dense_backward_weights %x, %dy : (tensor<?x8xbf16>, tensor<?x4xbf16>) -> (tensor<8x4xbf16>, tensor<4xbf16>)
  return %dw, %db : tensor<8x4xbf16>, tensor<4xbf16>
}
