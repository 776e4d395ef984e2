// RUN: kiln-opt %s -split-input-file --kiln-autodiff -verify-diagnostics | FileCheck %s

// A dense layer and its loss: gradients of both parameters, in declaration
// order, marked with the parameter they belong to; the input's gradient is
// dropped as dead.
kiln.variable parameter @fc.weight : tensor<8x4xf32> init he_normal
kiln.variable parameter @fc.bias : tensor<4xf32> init zeros
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[Y:.*]]: tensor<?xi32>)
// CHECK-SAME: -> (tensor<f32>, tensor<?x4xf32>, tensor<8x4xf32> {kiln.gradient_of = @fc.weight}, tensor<4xf32> {kiln.gradient_of = @fc.bias})
func.func @forward(%x: tensor<?x8xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
  // CHECK: %[[W:.*]] = kiln.read @fc.weight
  %w = kiln.read @fc.weight : tensor<8x4xf32>
  %b = kiln.read @fc.bias : tensor<4xf32>
  // CHECK: %[[LOGITS:.*]] = kiln.dense
  %logits = kiln.dense %x, %w bias %b : (tensor<?x8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  // CHECK: %[[LOSS:.*]] = kiln.softmax_cross_entropy
  %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
  // CHECK: %[[ONE:.*]] = arith.constant dense<1.000000e+00> : tensor<f32>
  // CHECK: %[[DL:.*]] = kiln.softmax_cross_entropy_backward %[[ONE]], %[[LOGITS]], %[[Y]]
  // CHECK-NOT: transpose_rhs
  // CHECK: %[[DW:.*]] = kiln.matmul %[[X]], %[[DL]] transpose_lhs
  // CHECK: %[[DB:.*]] = kiln.reduce_sum %[[DL]]
  // CHECK: return %[[LOSS]], %[[LOGITS]], %[[DW]], %[[DB]]
  return %loss, %logits : tensor<f32>, tensor<?x4xf32>
}

// -----

// A value used twice (residual) gets the sum of both gradients; a parameter
// read twice gets the sum over its reads. BN state stays assigned.
kiln.variable parameter @w : tensor<3x3x4x4xf32> init he_normal
kiln.variable parameter @g : tensor<4xf32> init ones
kiln.variable parameter @b : tensor<4xf32> init zeros
kiln.variable state @m : tensor<4xf32> init zeros
kiln.variable state @v : tensor<4xf32> init ones
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x4x4x4xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x4xf32>) {
  %w = kiln.read @w : tensor<3x3x4x4xf32>
  %w2 = kiln.read @w : tensor<3x3x4x4xf32>
  %g = kiln.read @g : tensor<4xf32>
  %b = kiln.read @b : tensor<4xf32>
  %m = kiln.read @m : tensor<4xf32>
  %v = kiln.read @v : tensor<4xf32>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x4x4x4xf32>
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %c, %g, %b, %m, %v epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: kiln.assign @m
  kiln.assign @m, %nm : tensor<4xf32>
  %c2 = kiln.conv2d %y, %w2 stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x4xf32>, tensor<3x3x4x4xf32>) -> tensor<2x4x4x4xf32>
  %s = kiln.add %c2, %y : tensor<2x4x4x4xf32>
  %r = kiln.relu %s : tensor<2x4x4x4xf32>
  %p = kiln.global_avg_pool %r : (tensor<2x4x4x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %p, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DR:.*]] = kiln.relu_backward
  // CHECK: %[[DY2:.*]] = kiln.conv2d_backward_data %[[DR]]
  // CHECK: %[[DW2:.*]] = kiln.conv2d_backward_filter %{{.*}}, %[[DR]]
  // CHECK: %[[DY:.*]] = kiln.add %[[DR]], %[[DY2]]
  // CHECK: %[[DX:.*]], %[[DG:.*]], %[[DB:.*]] = kiln.batch_norm_backward %[[DY]]
  // CHECK: %[[DW1:.*]] = kiln.conv2d_backward_filter %{{.*}}, %[[DX]]
  // CHECK: %[[DW:.*]] = kiln.add %[[DW2]], %[[DW1]]
  // CHECK: return %{{.*}}, %{{.*}}, %[[DW]], %[[DG]], %[[DB]]
  return %loss, %p : tensor<f32>, tensor<2x4xf32>
}

// -----

// Negative case: an op without a gradient that the loss depends on.
kiln.variable parameter @w : tensor<4x4xf32> init he_normal
func.func @forward(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<4x4xf32>
  %y = kiln.dense %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // expected-error @+1 {{'arith.negf' op is not differentiable, but the loss depends on it}}
  %n = arith.negf %y : tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %n, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Negative case: the first result must be the loss.
// expected-error @+1 {{must return the scalar loss (tensor<f32>) as its first result}}
func.func @forward(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  return %x : tensor<2x4xf32>
}

// -----

// Negative case: gradients through batch statistics.
kiln.variable parameter @g : tensor<4xf32> init ones
func.func @forward(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %g = kiln.read @g : tensor<4xf32>
  // expected-error @+1 {{cannot be differentiated through its batch or running statistics}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %r = kiln.reshape %bm : tensor<4xf32> to tensor<2x2xf32>
  %l = kiln.softmax_cross_entropy %r, %labels : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// Negative case: a fused residual (--kiln-fuse's form) has no gradient rule.
kiln.variable parameter @g : tensor<4xf32> init ones
func.func @forward(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %g = kiln.read @g : tensor<4xf32>
  // expected-error @+1 {{with a fused residual has no gradient rule: --kiln-fuse runs after autodiff}}
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %x, %g, %g, %g, %g residual %x epsilon 1.0e-5 momentum 0.9 : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %l = kiln.softmax_cross_entropy %y, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// kiln.activation: its gradient is kiln.activation_backward of the same
// kind, reading the forward *input*.
kiln.variable parameter @w : tensor<4x4xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<4x4xf32>
  // CHECK: %[[Y:.*]] = kiln.dense
  %y = kiln.dense %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // CHECK: %[[A:.*]] = kiln.activation hard_swish %[[Y]]
  %a = kiln.activation hard_swish %y : tensor<2x4xf32>
  // CHECK: %[[S:.*]] = kiln.activation silu %[[A]]
  %s = kiln.activation silu %a : tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %s, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DL:.*]] = kiln.softmax_cross_entropy_backward
  // CHECK: %[[DA:.*]] = kiln.activation_backward silu %[[DL]], %[[A]] : tensor<2x4xf32>
  // CHECK: %[[DY:.*]] = kiln.activation_backward hard_swish %[[DA]], %[[Y]] : tensor<2x4xf32>
  // CHECK: kiln.matmul %{{.*}}, %[[DY]] transpose_lhs
  return %loss : tensor<f32>
}

// -----

// kiln.broadcast_binary mul (squeeze-and-excitation): each operand's
// gradient is a kiln.broadcast_binary_backward given the other operand: dy
// times the broadcast one for the full operand (nothing to sum), dy * x
// summed over the spatial dimensions for the broadcast one.
kiln.variable parameter @w : tensor<1x1x4x4xf32> init he_normal
kiln.variable parameter @fc : tensor<4x4xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x3x3x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<1x1x4x4xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x3x3x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x3x4xf32>
  // CHECK: %[[P:.*]] = kiln.global_avg_pool %[[C]]
  %p = kiln.global_avg_pool %c : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  // CHECK: %[[G:.*]] = kiln.activation sigmoid
  %g = kiln.activation sigmoid %p : tensor<2x4xf32>
  // CHECK: %[[S:.*]] = kiln.reshape %[[G]]
  %s = kiln.reshape %g : tensor<2x4xf32> to tensor<2x1x1x4xf32>
  // CHECK: %[[Y:.*]] = kiln.broadcast_binary mul %[[C]], %[[S]]
  %y = kiln.broadcast_binary mul %c, %s : (tensor<2x3x3x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32>
  %q = kiln.global_avg_pool %y : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  %fc = kiln.read @fc : tensor<4x4xf32>
  %l = kiln.dense %q, %fc : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DY:.*]] = kiln.global_avg_pool_backward
  // CHECK-DAG: %[[DC1:.*]] = kiln.broadcast_binary_backward mul wrt lhs %[[DY]] rhs %[[S]] : (tensor<2x3x3x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32>
  // CHECK-DAG: %[[DS:.*]] = kiln.broadcast_binary_backward mul wrt rhs %[[DY]] lhs %[[C]] : (tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>) -> tensor<2x1x1x4xf32>
  // CHECK: kiln.reshape %[[DS]] : tensor<2x1x1x4xf32> to tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// Add passes dy to an operand of dy's shape and sums it for a broadcast one
// (no forward operand read); div's lhs gradient reads rhs, its rhs
// gradient both.
kiln.variable parameter @b : tensor<1x1x1x4xf32> init ones
kiln.variable parameter @d : tensor<1x3x1x1xf32> init ones
kiln.variable parameter @fc : tensor<4x4xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x3x3x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  // CHECK: %[[B:.*]] = kiln.read @b
  %b = kiln.read @b : tensor<1x1x1x4xf32>
  // CHECK: %[[A:.*]] = kiln.broadcast_binary add %[[X:.*]], %[[B]]
  %a = kiln.broadcast_binary add %x, %b : (tensor<2x3x3x4xf32>, tensor<1x1x1x4xf32>) -> tensor<2x3x3x4xf32>
  // CHECK: %[[D:.*]] = kiln.read @d
  %d = kiln.read @d : tensor<1x3x1x1xf32>
  // CHECK: %[[Q:.*]] = kiln.broadcast_binary div %[[A]], %[[D]]
  %q = kiln.broadcast_binary div %a, %d : (tensor<2x3x3x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x3x4xf32>
  %p = kiln.global_avg_pool %q : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  %fc = kiln.read @fc : tensor<4x4xf32>
  %l = kiln.dense %p, %fc : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DY:.*]] = kiln.global_avg_pool_backward
  // CHECK-DAG: %[[DA:.*]] = kiln.broadcast_binary_backward div wrt lhs %[[DY]] rhs %[[D]] : (tensor<2x3x3x4xf32>, tensor<1x3x1x1xf32>) -> tensor<2x3x3x4xf32>
  // CHECK-DAG: %[[DD:.*]] = kiln.broadcast_binary_backward div wrt rhs %[[DY]] lhs %[[A]] rhs %[[D]] : (tensor<2x3x3x4xf32>, tensor<2x3x3x4xf32>, tensor<1x3x1x1xf32>) -> tensor<1x3x1x1xf32>
  // CHECK-DAG: %[[DB:.*]] = kiln.broadcast_binary_backward add wrt rhs %[[DA]] : (tensor<2x3x3x4xf32>) -> tensor<1x1x1x4xf32>
  // CHECK-NOT: kiln.broadcast_binary_backward add wrt lhs
  // CHECK: return %{{.*}}, %[[DB]], %[[DD]], %{{.*}} :
  return %loss : tensor<f32>
}

// -----

// kiln.bias_add: the input's gradient is dy itself, the bias's
// kiln.bias_add_backward (dy summed per channel).
kiln.variable parameter @w : tensor<1x1x4x4xf32> init he_normal
kiln.variable parameter @b : tensor<4xf32> init zeros
// CHECK-LABEL: func.func @train_step
// CHECK-SAME: tensor<1x1x4x4xf32> {kiln.gradient_of = @w}, tensor<4xf32> {kiln.gradient_of = @b}
func.func @forward(%x: tensor<2x3x3x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<1x1x4x4xf32>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x3x3x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x3x4xf32>
  %b = kiln.read @b : tensor<4xf32>
  %y = kiln.bias_add %c, %b : (tensor<2x3x3x4xf32>, tensor<4xf32>) -> tensor<2x3x3x4xf32>
  %p = kiln.global_avg_pool %y : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %p, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: %[[DY:.*]] = kiln.global_avg_pool_backward
  // CHECK-DAG: %[[DW:.*]] = kiln.conv2d_backward_filter %{{.*}}, %[[DY]]
  // CHECK-DAG: %[[DB:.*]] = kiln.bias_add_backward %[[DY]] : (tensor<2x3x3x4xf32>) -> tensor<4xf32>
  // CHECK: return %{{.*}}, %[[DW]], %[[DB]]
  return %loss : tensor<f32>
}

// -----

// A constant operand (an imported model's `x / 2`) takes no gradient:
// autodiff passes over the constant (it used to fail, an arith.constant not
// being differentiable) and no division gradient remains (x is an input).
kiln.variable parameter @fc : tensor<4x4xf32> init he_normal
// CHECK-LABEL: func.func @train_step
func.func @forward(%x: tensor<2x3x3x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  // CHECK: %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<1x1x1x1xf32>
  %two = arith.constant dense<2.000000e+00> : tensor<1x1x1x1xf32>
  %q = kiln.broadcast_binary div %x, %two : (tensor<2x3x3x4xf32>, tensor<1x1x1x1xf32>) -> tensor<2x3x3x4xf32>
  %p = kiln.global_avg_pool %q : (tensor<2x3x3x4xf32>) -> tensor<2x4xf32>
  %fc = kiln.read @fc : tensor<4x4xf32>
  %l = kiln.dense %p, %fc : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK-NOT: kiln.broadcast_binary_backward
  // CHECK: return
  return %loss : tensor<f32>
}
