// --kiln-fuse with convolution biases and grouped convolutions: a bias_add
// that alone reads a convolution's output becomes the convolution's bias
// (its f32 value in a bf16 step); grouped and biased convolutions do not
// fuse with batch norm.
// RUN: kiln-opt %s -split-input-file --pass-pipeline="builtin.module(func.func(kiln-fuse))" | FileCheck %s

// CHECK-LABEL: func.func @bias_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x8x16xf32>, %[[W:.*]]: tensor<3x3x1x16xf32>, %[[B:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.conv2d %[[X]], %[[W]] bias %[[B]] stride [2, 2] pad [0, 1, 0, 1] groups 16 {kiln.layout = #kiln.layout<nhwc>} : (tensor<2x8x8x16xf32>, tensor<3x3x1x16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
// CHECK-NEXT: return %[[Y]]
func.func @bias_folds(%x: tensor<2x8x8x16xf32>, %w: tensor<3x3x1x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
  %c = kiln.conv2d %x, %w stride [2, 2] pad [0, 1, 0, 1] groups 16 {kiln.layout = #kiln.layout<nhwc>} : (tensor<2x8x8x16xf32>, tensor<3x3x1x16xf32>) -> tensor<2x4x4x16xf32>
  %y = kiln.bias_add %c, %b : (tensor<2x4x4x16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  return %y : tensor<2x4x4x16xf32>
}

// -----

// In a bf16 step the convolution takes the bias before its rounding.
// CHECK-LABEL: func.func @bf16_bias_folds
// CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x8xbf16>, %[[W:.*]]: tensor<1x1x8x8xbf16>, %[[B:.*]]: tensor<8xf32>)
// CHECK-NEXT: %[[Y:.*]] = kiln.conv2d %[[X]], %[[W]] bias %[[B]] stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xbf16>, tensor<1x1x8x8xbf16>, tensor<8xf32>) -> tensor<2x4x4x8xbf16>
// CHECK-NEXT: return %[[Y]]
func.func @bf16_bias_folds(%x: tensor<2x4x4x8xbf16>, %w: tensor<1x1x8x8xbf16>, %b: tensor<8xf32>) -> tensor<2x4x4x8xbf16> {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xbf16>, tensor<1x1x8x8xbf16>) -> tensor<2x4x4x8xbf16>
  %bb = kiln.cast %b : tensor<8xf32> to tensor<8xbf16>
  %y = kiln.bias_add %c, %bb : (tensor<2x4x4x8xbf16>, tensor<8xbf16>) -> tensor<2x4x4x8xbf16>
  return %y : tensor<2x4x4x8xbf16>
}

// -----

// With --kiln-bf16-weight-copies the bf16 bias is a read of the copy of an
// f32 variable: the convolution reads that variable instead.
module @weight_copy {
  kiln.variable parameter @b : tensor<8xf32> init zeros
  kiln.variable state @b.bf16 : tensor<8xbf16> init copy of @b
  // CHECK-LABEL: func.func @copy_bias_folds
  // CHECK-SAME: (%[[X:.*]]: tensor<2x4x4x8xbf16>, %[[W:.*]]: tensor<1x1x8x8xbf16>)
  // CHECK-NEXT: %[[B:.*]] = kiln.read @b : tensor<8xf32>
  // CHECK-NEXT: %[[Y:.*]] = kiln.conv2d %[[X]], %[[W]] bias %[[B]] stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xbf16>, tensor<1x1x8x8xbf16>, tensor<8xf32>) -> tensor<2x4x4x8xbf16>
  // CHECK-NEXT: return %[[Y]]
  func.func @copy_bias_folds(%x: tensor<2x4x4x8xbf16>, %w: tensor<1x1x8x8xbf16>) -> tensor<2x4x4x8xbf16> {
    %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xbf16>, tensor<1x1x8x8xbf16>) -> tensor<2x4x4x8xbf16>
    %bb = kiln.read @b.bf16 : tensor<8xbf16>
    %y = kiln.bias_add %c, %bb : (tensor<2x4x4x8xbf16>, tensor<8xbf16>) -> tensor<2x4x4x8xbf16>
    return %y : tensor<2x4x4x8xbf16>
  }
}

// -----

// Negative cases: the convolution's output read by something else too, and
// a bf16 bias that is no rounded f32 value, stay as they are.
// CHECK-LABEL: func.func @bias_stays
// CHECK: %[[C:.*]] = kiln.conv2d %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] groups 2 :
// CHECK-NEXT: %[[Y:.*]] = kiln.bias_add %[[C]], %{{.*}} :
// CHECK-NEXT: %[[D:.*]] = kiln.conv2d %{{.*}}, %{{.*}} stride [1, 1] pad [0, 0, 0, 0] :
// CHECK-NEXT: %[[Z:.*]] = kiln.bias_add %[[D]], %{{.*}} :
// CHECK-NEXT: return %[[C]], %[[Y]], %[[Z]]
func.func @bias_stays(%x: tensor<2x4x4x8xf32>, %w: tensor<1x1x4x8xf32>, %b: tensor<8xf32>, %xb: tensor<2x4x4x8xbf16>, %wb: tensor<1x1x8x8xbf16>, %bb: tensor<8xbf16>) -> (tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xbf16>) {
  %c = kiln.conv2d %x, %w stride [1, 1] pad [0, 0, 0, 0] groups 2 : (tensor<2x4x4x8xf32>, tensor<1x1x4x8xf32>) -> tensor<2x4x4x8xf32>
  %y = kiln.bias_add %c, %b : (tensor<2x4x4x8xf32>, tensor<8xf32>) -> tensor<2x4x4x8xf32>
  %d = kiln.conv2d %xb, %wb stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x8xbf16>, tensor<1x1x8x8xbf16>) -> tensor<2x4x4x8xbf16>
  %z = kiln.bias_add %d, %bb : (tensor<2x4x4x8xbf16>, tensor<8xbf16>) -> tensor<2x4x4x8xbf16>
  return %c, %y, %z : tensor<2x4x4x8xf32>, tensor<2x4x4x8xf32>, tensor<2x4x4x8xbf16>
}

// -----

// A grouped convolution and a biased one keep their inference batch norms
// (and those take the relu); an ungrouped one fuses with its batch norm.
// CHECK-LABEL: func.func @grouped_keeps_batch_norm
// CHECK: %[[G:.*]] = kiln.conv2d %{{.*}} groups 4 :
// CHECK-NEXT: %[[GN:.*]] = kiln.batch_norm_inference %[[G]], {{.*}} relu :
// CHECK-NEXT: %[[B:.*]] = kiln.conv2d %[[GN]], %{{.*}} bias %{{.*}} stride
// CHECK-NEXT: %[[BN:.*]] = kiln.batch_norm_inference %[[B]], {{.*}} :
// CHECK-NEXT: %[[F:.*]] = kiln.fused_conv2d_batch_norm %[[BN]], {{.*}} relu :
// CHECK-NEXT: return %[[F]]
func.func @grouped_keeps_batch_norm(%x: tensor<2x4x4x16xf32>, %gw: tensor<1x1x4x16xf32>, %w: tensor<1x1x16x16xf32>, %v: tensor<16xf32>) -> tensor<2x4x4x16xf32> {
  %g = kiln.conv2d %x, %gw stride [1, 1] pad [0, 0, 0, 0] groups 4 : (tensor<2x4x4x16xf32>, tensor<1x1x4x16xf32>) -> tensor<2x4x4x16xf32>
  %gn = kiln.batch_norm_inference %g, %v, %v, %v, %v epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %gr = kiln.relu %gn : tensor<2x4x4x16xf32>
  %b = kiln.conv2d %gr, %w bias %v stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x16xf32>, tensor<1x1x16x16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %bn = kiln.batch_norm_inference %b, %v, %v, %v, %v epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %c = kiln.conv2d %bn, %w stride [1, 1] pad [0, 0, 0, 0] : (tensor<2x4x4x16xf32>, tensor<1x1x16x16xf32>) -> tensor<2x4x4x16xf32>
  %cn = kiln.batch_norm_inference %c, %v, %v, %v, %v epsilon 1.0e-5 : (tensor<2x4x4x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x4x4x16xf32>
  %cr = kiln.relu %cn : tensor<2x4x4x16xf32>
  return %cr : tensor<2x4x4x16xf32>
}
