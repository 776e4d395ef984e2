// RUN: kiln-opt %s -split-input-file -verify-diagnostics --kiln-convert-to-sa | FileCheck %s

// The activations, the bias, broadcasting arithmetic and ceil-mode pooling
// run on the vector unit (test/unit/sim/PlannerCnnOpsTest.cpp checks their
// values against the reference kernels).

// kiln.activation and its gradient: the kind is the instruction's
// attribute (hard_swish = 4, kiln/ref/activation.h's order).
// CHECK-LABEL: sa.program @activation
// CHECK: sa.source "activation" "step"
// CHECK: sa.vector activation ({{.*}}) -> ({{.*}}) rows 32 channels 8 iattrs [4]
// CHECK: sa.source "activation_backward" "step"
// CHECK: sa.vector activation_grad ({{.*}}, {{.*}}) -> ({{.*}}) rows 32 channels 8 iattrs [4]
module @activation {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %dy: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) {
    %y = kiln.activation hard_swish %x : tensor<2x4x4x8xf32>
    %dx = kiln.activation_backward hard_swish %dy, %x : tensor<2x4x4x8xf32>
    return %y, %dx : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>
  }
}

// -----

// The bias is a per-channel add; its gradient a channel sum.
// CHECK-LABEL: sa.program @bias
// CHECK: sa.source "bias_add" "{{.*}}"
// CHECK: %[[B:.+]] = sa.dma @conv.bias
// CHECK: sa.vector channel_add ({{.*}}, @{{.*}}[0]) -> ({{.*}}) rows 32 channels 8 after %[[B]]
// CHECK: sa.source "bias_add_backward" "{{.*}}"
// CHECK: sa.vector channel_sum ({{.*}}) -> ({{.*}}) rows 32 channels 8
module @bias {
  kiln.variable parameter @conv.bias : tensor<8xf32> init zeros
  func.func @train_step(%x: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<8xf32>) {
    %b = kiln.read @conv.bias : tensor<8xf32>
    %y = kiln.bias_add %x, %b : (tensor<2x4x4x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
    %db = kiln.bias_add_backward %y : (tensor<2x4x4x8xf32>) -> tensor<8xf32>
    return %y, %db : tensor<2x4x4x8xf32>, tensor<8xf32>
  }
}

// -----

// Squeeze-and-excitation: [kind, rank, shapes of the result, lhs and rhs];
// the gradient with respect to the scale reads x only (kind mul = 2, wrt
// rhs, not accumulated: one tile of both images).
// CHECK-LABEL: sa.program @squeeze_excitation
// CHECK: sa.vector broadcast_binary ({{.*}}, {{.*}}) -> ({{.*}}) rows 0 channels 0 iattrs [2, 4, 2, 4, 4, 8, 2, 4, 4, 8, 2, 1, 1, 8]
// CHECK: sa.vector broadcast_binary_grad (@{{[^,]*}}, @{{[^,]*}}) -> ({{.*}}) rows 0 channels 0 iattrs [2, 1, 0, 4, 2, 4, 4, 8, 2, 4, 4, 8, 2, 1, 1, 8]
module @squeeze_excitation {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %s: tensor<2x1x1x8xf32>, %dy: tensor<2x4x4x8xf32>) -> (tensor<2x4x4x8xf32>, tensor<2x1x1x8xf32>) {
    %y = kiln.broadcast_binary mul %x, %s : (tensor<2x4x4x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x4x4x8xf32>
    %ds = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %x : (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>) -> tensor<2x1x1x8xf32>
    return %y, %ds : tensor<2x4x4x8xf32>, tensor<2x1x1x8xf32>
  }
}

// -----

// A per-channel constant's gradient sums over the batch too: accumulated
// in f32 on chip (accumulate = 1), then copied out.
// CHECK-LABEL: sa.program @channel_constant
// CHECK: sa.vector fill () -> (@[[ACC:.+]][0]) rows 1 channels 8
// CHECK: sa.vector broadcast_binary_grad (@{{[^)]*}}) -> (@[[ACC]][0]) rows 0 channels 0 iattrs [1, 1, 1, 4, 2, 4, 4, 8, 2, 4, 4, 8, 1, 1, 1, 8]
// CHECK: sa.vector copy (@[[ACC]][0])
module @channel_constant {
  func.func @train_step(%dy: tensor<2x4x4x8xf32>) -> tensor<1x1x1x8xf32> {
    %db = kiln.broadcast_binary_backward sub wrt rhs %dy : (tensor<2x4x4x8xf32>) -> tensor<1x1x1x8xf32>
    return %db : tensor<1x1x1x8xf32>
  }
}

// -----

// Ceil mode is the pooling instruction's 13th attribute.
// CHECK-LABEL: sa.program @ceil_mode
// CHECK: sa.vector max_pool ({{.*}}) -> ({{.*}}) rows 0 channels 0 iattrs [2, 8, 8, 4, 3, 3, 2, 2, 0, 0, 0, 0, 1]
module @ceil_mode {
  func.func @train_step(%x: tensor<2x8x8x4xf32>) -> tensor<2x4x4x4xf32> {
    %r = kiln.max_pool %x window [3, 3] stride [2, 2] pad [0, 0, 0, 0] ceil_mode : (tensor<2x8x8x4xf32>) -> tensor<2x4x4x4xf32>
    return %r : tensor<2x4x4x4xf32>
  }
}

// -----

// ShuffleNet's stem batch norm: 24 channels, whose f32 per-channel slots
// take 128 bytes each (64-byte alignment), fill staging exactly when the
// tiles are sized for 96.
// CHECK-LABEL: sa.program @batch_norm_24
// CHECK: sa.vector channel_moments
// CHECK: sa.vector bn_stats
// CHECK: sa.vector channel_affine
module @batch_norm_24 {
  kiln.variable parameter @bn.weight : tensor<24xf32> init ones
  kiln.variable parameter @bn.bias : tensor<24xf32> init zeros
  kiln.variable state @bn.running_mean : tensor<24xf32> init zeros
  kiln.variable state @bn.running_var : tensor<24xf32> init ones
  func.func @train_step(%x: tensor<8x112x112x24xbf16>) -> tensor<8x112x112x24xbf16> {
    %g = kiln.read @bn.weight : tensor<24xf32>
    %b = kiln.read @bn.bias : tensor<24xf32>
    %m0 = kiln.read @bn.running_mean : tensor<24xf32>
    %v0 = kiln.read @bn.running_var : tensor<24xf32>
    %y, %m, %v, %rm, %rv = kiln.batch_norm_train %x, %g, %b, %m0, %v0 epsilon 9.99999974E-6 momentum 0.899999976 : (tensor<8x112x112x24xbf16>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>) -> (tensor<8x112x112x24xbf16>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>, tensor<24xf32>)
    kiln.assign @bn.running_mean, %rm : tensor<24xf32>
    kiln.assign @bn.running_var, %rv : tensor<24xf32>
    return %y : tensor<8x112x112x24xbf16>
  }
}

// -----

// Negative case: an op the conversion has no lowering for is refused by
// name (inference batch norm belongs to the evaluation step, which this
// target does not lower yet).
module @inference {
  func.func @train_step(%x: tensor<2x4x4x8xf32>, %g: tensor<8xf32>) -> tensor<2x4x4x8xf32> {
    // expected-error @+1 {{kiln-convert-to-sa: 'kiln.batch_norm_inference' is not supported on the systolic target}}
    %0 = kiln.batch_norm_inference %x, %g, %g, %g, %g epsilon 1.0e-5 : (tensor<2x4x4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
    return %0 : tensor<2x4x4x8xf32>
  }
}
