// Negative case of gradients-grouped-conv2d.mlir: a hand-written training
// step whose depthwise filter gradient uses other padding than the forward
// convolution (the same output size, so the IR verifies) fails the gradient
// check; the same step with the forward's padding passes.
// RUN: not kiln-run %s --check-gradients --synthetic-inputs --batch=3 | FileCheck %s
// RUN: sed 's/pad \[0, 2, 0, 2\]/pad [1, 1, 1, 1]/' %s \
// RUN:   | kiln-run - --check-gradients --synthetic-inputs --batch=3 | FileCheck %s --check-prefix=RIGHT

// CHECK: @w 3x3x1x4xf32: 16/36 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} FAILED
// CHECK: gradient check FAILED
// RIGHT: @w 3x3x1x4xf32: 16/36 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} ok{{$}}
// RIGHT: gradient check passed: 1 parameters (0 unchecked)
module {
  kiln.variable parameter @w : tensor<3x3x1x4xf32> init he_normal
  func.func @forward(%x: tensor<?x3x3x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x36xf32>) {
    %w = kiln.read @w : tensor<3x3x1x4xf32>
    %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<?x3x3x2xf32>, tensor<3x3x1x4xf32>) -> tensor<?x3x3x4xf32>
    %l = kiln.reshape %y : tensor<?x3x3x4xf32> to tensor<?x36xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x36xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x36xf32>
  }
  func.func @train_step(%x: tensor<?x3x3x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x36xf32>, tensor<3x3x1x4xf32> {kiln.gradient_of = @w}) {
    %w = kiln.read @w : tensor<3x3x1x4xf32>
    %y = kiln.conv2d %x, %w stride [1, 1] pad [1, 1, 1, 1] groups 2 : (tensor<?x3x3x2xf32>, tensor<3x3x1x4xf32>) -> tensor<?x3x3x4xf32>
    %l = kiln.reshape %y : tensor<?x3x3x4xf32> to tensor<?x36xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x36xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dl = kiln.softmax_cross_entropy_backward %one, %l, %labels : (tensor<f32>, tensor<?x36xf32>, tensor<?xi32>) -> tensor<?x36xf32>
    %dy = kiln.reshape %dl : tensor<?x36xf32> to tensor<?x3x3x4xf32>
    %dw = kiln.conv2d_backward_filter %x, %dy stride [1, 1] pad [0, 2, 0, 2] groups 2 : (tensor<?x3x3x2xf32>, tensor<?x3x3x4xf32>) -> tensor<3x3x1x4xf32>
    return %loss, %l, %dw : tensor<f32>, tensor<?x36xf32>, tensor<3x3x1x4xf32>
  }
}
