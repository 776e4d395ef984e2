// RUN: kiln-opt %s -split-input-file --kiln-bf16 | FileCheck %s

// Convolutions and dense layers compute in bf16 from f32 master weights;
// batch norm and relu follow; the loss is f32; the images arrive in bf16.
kiln.variable parameter @w : tensor<3x3x3x4xf32> init he_normal
kiln.variable parameter @g : tensor<4xf32> init ones
kiln.variable parameter @fc : tensor<4x2xf32> init he_normal
kiln.variable parameter @fcb : tensor<2xf32> init zeros
// CHECK-LABEL: func.func @forward
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x3xbf16>, %[[Y:.*]]: tensor<2xi32>) -> (tensor<f32>, tensor<2x2xf32>)
func.func @forward(%x: tensor<2x4x4x3xf32>, %labels: tensor<2xi32>) -> (tensor<f32>, tensor<2x2xf32>) {
  // CHECK: %[[W:.*]] = kiln.read @w : tensor<3x3x3x4xf32>
  // CHECK: %[[WB:.*]] = kiln.cast %[[W]] : tensor<3x3x3x4xf32> to tensor<3x3x3x4xbf16>
  // CHECK: %[[C:.*]] = kiln.conv2d %[[X]], %[[WB]] {{.*}} -> tensor<2x4x4x4xbf16>
  %w = kiln.read @w : tensor<3x3x3x4xf32>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<2x4x4x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x4x4x4xf32>
  // Batch-norm parameters and statistics stay f32.
  // CHECK: kiln.batch_norm_train %[[C]], {{.*}} -> (tensor<2x4x4x4xbf16>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  %g = kiln.read @g : tensor<4xf32>
  %y, %bm, %bv, %nm, %nv = kiln.batch_norm_train %c, %g, %g, %g, %g epsilon 1.0e-5 momentum 0.9 : (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x4x4x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  // CHECK: kiln.relu %{{.*}} : tensor<2x4x4x4xbf16>
  %r = kiln.relu %y : tensor<2x4x4x4xf32>
  // CHECK: kiln.global_avg_pool %{{.*}} -> tensor<2x4xbf16>
  %p = kiln.global_avg_pool %r : (tensor<2x4x4x4xf32>) -> tensor<2x4xf32>
  %fc = kiln.read @fc : tensor<4x2xf32>
  %fcb = kiln.read @fcb : tensor<2xf32>
  // CHECK: %[[L:.*]] = kiln.dense %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<2x4xbf16>, tensor<4x2xbf16>, tensor<2xf32>) -> tensor<2x2xbf16>
  %l = kiln.dense %p, %fc bias %fcb : (tensor<2x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  // CHECK: %[[LF:.*]] = kiln.cast %[[L]] : tensor<2x2xbf16> to tensor<2x2xf32>
  // CHECK: %[[LOSS:.*]] = kiln.softmax_cross_entropy %[[LF]], %[[Y]]
  %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<2x2xf32>, tensor<2xi32>) -> tensor<f32>
  // CHECK: return %[[LOSS]], %[[LF]]
  return %loss, %l : tensor<f32>, tensor<2x2xf32>
}

// -----

// Negative case: nothing computes in bf16, so nothing changes.
// CHECK-LABEL: func.func @no_compute
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[R:.*]] = kiln.relu %[[X]] : tensor<4xf32>
// CHECK-NEXT: return %[[R]]
func.func @no_compute(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.relu %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// Activations follow their input into bf16, as relu does.
kiln.variable parameter @w : tensor<4x4xf32> init he_normal
// CHECK-LABEL: func.func @activation
func.func @activation(%x: tensor<2x4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %w = kiln.read @w : tensor<4x4xf32>
  // CHECK: %[[Y:.*]] = kiln.dense {{.*}} -> tensor<2x4xbf16>
  %y = kiln.dense %x, %w : (tensor<2x4xf32>, tensor<4x4xf32>) -> tensor<2x4xf32>
  // CHECK: %[[A:.*]] = kiln.activation sigmoid %[[Y]] : tensor<2x4xbf16>
  %a = kiln.activation sigmoid %y : tensor<2x4xf32>
  // CHECK: kiln.cast %[[A]] : tensor<2x4xbf16> to tensor<2x4xf32>
  %loss = kiln.softmax_cross_entropy %a, %labels : (tensor<2x4xf32>, tensor<2xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Negative case: an activation of f32 that nothing computes in bf16 stays f32.
// CHECK-LABEL: func.func @activation_f32
// CHECK-NEXT: kiln.activation relu6 %{{.*}} : tensor<4xf32>
func.func @activation_f32(%x: tensor<4xf32>) -> tensor<4xf32> {
  %r = kiln.activation relu6 %x : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

// broadcast_binary follows its operands into bf16 (both, as add).
kiln.variable parameter @w : tensor<1x1x4x4xf32> init he_normal
// CHECK-LABEL: func.func @broadcast_mul
func.func @broadcast_mul(%x: tensor<2x3x3x4xf32>, %s: tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32> {
  %w = kiln.read @w : tensor<1x1x4x4xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<2x3x3x4xbf16>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x3x3x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x3x4xf32>
  // CHECK: kiln.broadcast_binary mul %[[C]], %{{.*}} : (tensor<2x3x3x4xbf16>, tensor<2x1x1x4xbf16>) -> tensor<2x3x3x4xbf16>
  %y = kiln.broadcast_binary mul %c, %s : (tensor<2x3x3x4xf32>, tensor<2x1x1x4xf32>) -> tensor<2x3x3x4xf32>
  return %y : tensor<2x3x3x4xf32>
}

// -----

// A constant operand (an imported `x / 6`) is rounded with the other.
kiln.variable parameter @w : tensor<1x1x4x4xf32> init he_normal
// CHECK-LABEL: func.func @broadcast_div_constant
func.func @broadcast_div_constant(%x: tensor<2x3x3x4xf32>) -> tensor<2x3x3x4xf32> {
  %w = kiln.read @w : tensor<1x1x4x4xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<2x3x3x4xbf16>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x3x3x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x3x4xf32>
  %six = arith.constant dense<6.000000e+00> : tensor<1x1x1x1xf32>
  // CHECK: %[[K:.*]] = kiln.cast %{{.*}} : tensor<1x1x1x1xf32> to tensor<1x1x1x1xbf16>
  // CHECK: kiln.broadcast_binary div %[[C]], %[[K]] : (tensor<2x3x3x4xbf16>, tensor<1x1x1x1xbf16>) -> tensor<2x3x3x4xbf16>
  %y = kiln.broadcast_binary div %c, %six : (tensor<2x3x3x4xf32>, tensor<1x1x1x1xf32>) -> tensor<2x3x3x4xf32>
  return %y : tensor<2x3x3x4xf32>
}

// -----

// bias_add follows its input into bf16; the bias is rounded with it.
kiln.variable parameter @w : tensor<1x1x4x4xf32> init he_normal
kiln.variable parameter @b : tensor<4xf32> init zeros
// CHECK-LABEL: func.func @bias_add
func.func @bias_add(%x: tensor<2x3x3x4xf32>) -> tensor<2x3x3x4xf32> {
  %w = kiln.read @w : tensor<1x1x4x4xf32>
  // CHECK: %[[C:.*]] = kiln.conv2d {{.*}} -> tensor<2x3x3x4xbf16>
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x3x3x4xf32>, tensor<1x1x4x4xf32>) -> tensor<2x3x3x4xf32>
  // CHECK: %[[B:.*]] = kiln.read @b : tensor<4xf32>
  // CHECK: %[[BB:.*]] = kiln.cast %[[B]] : tensor<4xf32> to tensor<4xbf16>
  // CHECK: kiln.bias_add %[[C]], %[[BB]] : (tensor<2x3x3x4xbf16>, tensor<4xbf16>) -> tensor<2x3x3x4xbf16>
  %b = kiln.read @b : tensor<4xf32>
  %y = kiln.bias_add %c, %b : (tensor<2x3x3x4xf32>, tensor<4xf32>) -> tensor<2x3x3x4xf32>
  return %y : tensor<2x3x3x4xf32>
}
