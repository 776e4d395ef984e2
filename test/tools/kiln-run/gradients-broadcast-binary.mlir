// Gradient checks of kiln.broadcast_binary through --kiln-autodiff: a
// squeeze-and-excitation block (global pool, two dense layers, sigmoid, a
// per-image per-channel scale of the activation it pooled), so the
// activation's gradient flows both through the scale and through the
// broadcast operand's reduction; a factor per channel shared by the batch
// ([1, 1, 1, C], a parameter); and add, sub and div with both operands
// broadcast and the broadcast operand on either side.
// RUN: kiln-opt %s -split-input-file --kiln-autodiff | kiln-run -split-input-file --check-gradients --synthetic-inputs --batch=2 | FileCheck %s
// The negative case: a hand-written step whose broadcast operand's gradient
// sums dy times the output instead of dy times the other operand fails; with
// the operand it passes.
// RUN: not kiln-run %S/Inputs/broadcast_binary_wrong.mlir --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=WRONG
// RUN: sed 's/kiln.broadcast_binary_backward mul wrt rhs %%dy lhs %%y/kiln.broadcast_binary_backward mul wrt rhs %%dy lhs %%x/' %S/Inputs/broadcast_binary_wrong.mlir \
// RUN:   | kiln-run - --check-gradients --synthetic-inputs --batch=2 | FileCheck %s --check-prefix=RIGHT
// WRONG: @scale 1x1x1x2xf32: 2/2 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} FAILED
// RIGHT: @scale 1x1x1x2xf32: 2/2 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} ok{{$}}
// RIGHT: gradient check passed: 2 parameters (0 unchecked)
// WRONG: gradient check FAILED

// CHECK-LABEL: @se.conv 3x3x2x4xf32: 16/72 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @se.fc1 4x2xf32: 8/8 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @se.fc1.bias 2xf32: 2/2 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @se.fc2 2x4xf32: 8/8 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @se.fc2.bias 4xf32: 4/4 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @se.fc 64x3xf32: 16/192 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 6 parameters (0 unchecked)
module {
  kiln.variable parameter @se.conv : tensor<3x3x2x4xf32> init he_normal
  kiln.variable parameter @se.fc1 : tensor<4x2xf32> init normal std 5.000000e-01
  kiln.variable parameter @se.fc1.bias : tensor<2xf32> init constant value dense<[1.0e-01, -2.0e-01]> : tensor<2xf32>
  kiln.variable parameter @se.fc2 : tensor<2x4xf32> init normal std 5.000000e-01
  kiln.variable parameter @se.fc2.bias : tensor<4xf32> init constant value dense<[1.0e-01, -1.0e-01, 2.0e-01, 0.0]> : tensor<4xf32>
  kiln.variable parameter @se.fc : tensor<64x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @se.conv : tensor<3x3x2x4xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x4xf32>) -> tensor<?x4x4x4xf32>
    %p = kiln.global_avg_pool %c : (tensor<?x4x4x4xf32>) -> tensor<?x4xf32>
    %w1 = kiln.read @se.fc1 : tensor<4x2xf32>
    %b1 = kiln.read @se.fc1.bias : tensor<2xf32>
    %h = kiln.dense %p, %w1 bias %b1 : (tensor<?x4xf32>, tensor<4x2xf32>, tensor<2xf32>) -> tensor<?x2xf32>
    %a = kiln.activation silu %h : tensor<?x2xf32>
    %w2 = kiln.read @se.fc2 : tensor<2x4xf32>
    %b2 = kiln.read @se.fc2.bias : tensor<4xf32>
    %e = kiln.dense %a, %w2 bias %b2 : (tensor<?x2xf32>, tensor<2x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %g = kiln.activation sigmoid %e : tensor<?x4xf32>
    %s = kiln.reshape %g : tensor<?x4xf32> to tensor<?x1x1x4xf32>
    %y = kiln.broadcast_binary mul %c, %s : (tensor<?x4x4x4xf32>, tensor<?x1x1x4xf32>) -> tensor<?x4x4x4xf32>
    %f = kiln.reshape %y : tensor<?x4x4x4xf32> to tensor<?x64xf32>
    %wf = kiln.read @se.fc : tensor<64x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x64xf32>, tensor<64x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// CHECK-LABEL: @scale.conv 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @scale 1x1x1x3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @scale.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 3 parameters (0 unchecked)
module {
  kiln.variable parameter @scale.conv : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @scale : tensor<1x1x1x3xf32> init constant value dense<[[[[5.0e-01, -1.5, 2.0]]]]> : tensor<1x1x1x3xf32>
  kiln.variable parameter @scale.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @scale.conv : tensor<3x3x2x3xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %s = kiln.read @scale : tensor<1x1x1x3xf32>
    %y = kiln.broadcast_binary mul %c, %s : (tensor<?x4x4x3xf32>, tensor<1x1x1x3xf32>) -> tensor<?x4x4x3xf32>
    %f = kiln.reshape %y : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %wf = kiln.read @scale.fc : tensor<48x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
}

// -----

// Sub with a per-channel shift, div by a [1, H, 1, C] map (positive: a
// divisor near zero would make the finite differences meaningless), and
// add of [N, 1, 1, C] (the pooled features) to a [1, 1, W, 1] row on the
// left-hand side: both operands broadcast.
// CHECK-LABEL: @kinds.conv 3x3x2x3xf32: 16/54 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @kinds.shift 1x1x1x3xf32: 3/3 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @kinds.div 1x4x1x3xf32: 12/12 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @kinds.row 1x1x4x1xf32: 4/4 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: @kinds.fc 48x3xf32: 16/144 elements, max |grad| {{[-+.e0-9]+}}, error {{[-+.e0-9]+}} ok{{$}}
// CHECK: gradient check passed: 5 parameters (0 unchecked)
module {
  kiln.variable parameter @kinds.conv : tensor<3x3x2x3xf32> init he_normal
  kiln.variable parameter @kinds.shift : tensor<1x1x1x3xf32> init constant value dense<[[[[5.0e-01, -1.5, 2.0e-01]]]]> : tensor<1x1x1x3xf32>
  kiln.variable parameter @kinds.div : tensor<1x4x1x3xf32> init constant value dense<[[[[1.5, 2.0, 0.8]], [[1.2, 0.9, 2.5]], [[1.0, 1.7, 1.1]], [[2.2, 1.3, 0.7]]]]> : tensor<1x4x1x3xf32>
  kiln.variable parameter @kinds.row : tensor<1x1x4x1xf32> init constant value dense<[[[[1.0e-01], [-2.0e-01], [3.0e-01], [4.0e-01]]]]> : tensor<1x1x4x1xf32>
  kiln.variable parameter @kinds.fc : tensor<48x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %w = kiln.read @kinds.conv : tensor<3x3x2x3xf32>
    %c = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x4x4x2xf32>, tensor<3x3x2x3xf32>) -> tensor<?x4x4x3xf32>
    %t = kiln.read @kinds.shift : tensor<1x1x1x3xf32>
    %s = kiln.broadcast_binary sub %c, %t : (tensor<?x4x4x3xf32>, tensor<1x1x1x3xf32>) -> tensor<?x4x4x3xf32>
    %d = kiln.read @kinds.div : tensor<1x4x1x3xf32>
    %q = kiln.broadcast_binary div %s, %d : (tensor<?x4x4x3xf32>, tensor<1x4x1x3xf32>) -> tensor<?x4x4x3xf32>
    %p = kiln.global_avg_pool %q : (tensor<?x4x4x3xf32>) -> tensor<?x3xf32>
    %p4 = kiln.reshape %p : tensor<?x3xf32> to tensor<?x1x1x3xf32>
    %r = kiln.read @kinds.row : tensor<1x1x4x1xf32>
    %e = kiln.broadcast_binary add %r, %p4 : (tensor<1x1x4x1xf32>, tensor<?x1x1x3xf32>) -> tensor<?x1x4x3xf32>
    %y = kiln.broadcast_binary mul %e, %q : (tensor<?x1x4x3xf32>, tensor<?x4x4x3xf32>) -> tensor<?x4x4x3xf32>
    %f = kiln.reshape %y : tensor<?x4x4x3xf32> to tensor<?x48xf32>
    %wf = kiln.read @kinds.fc : tensor<48x3xf32>
    %l = kiln.dense %f, %wf : (tensor<?x48xf32>, tensor<48x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
}
