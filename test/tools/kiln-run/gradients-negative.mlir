// The gradient check can fail: a hand-written training step whose gradient
// is 1% too large (multiplied by diag(1.01)) is caught, with the error the
// scaling implies (0.01 / 1.01 = 9.90e-3 of the largest component), while
// the same step with the exact gradient passes. A looser tolerance accepts
// the wrong one, which shows the measured error is what decides.
// RUN: not kiln-run %s -split-input-file --check-gradients --synthetic-inputs --batch=3 \
// RUN:   | FileCheck %s
// RUN: kiln-run %s -split-input-file --check-gradients=2e-2 --synthetic-inputs --batch=3 \
// RUN:   | FileCheck %s --check-prefix=LOOSE

// CHECK: @w 3x4xf32: 12/12 elements, max |grad| {{.*}}, error {{[0-9.]+}}e-0{{[6-9]}} ok{{$}}
// CHECK: gradient check passed: 1 parameters (0 unchecked)
// LOOSE: gradient check passed: 1 parameters
module {
  kiln.variable parameter @w : tensor<3x4xf32> init he_normal
  func.func @forward(%x: tensor<?x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
    %w = kiln.read @w : tensor<3x4xf32>
    %logits = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x4xf32>
  }
  func.func @train_step(%x: tensor<?x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32> {kiln.gradient_of = @w}) {
    %w = kiln.read @w : tensor<3x4xf32>
    %logits = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dlogits = kiln.softmax_cross_entropy_backward %one, %logits, %labels : (tensor<f32>, tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %dw = kiln.matmul %x, %dlogits transpose_lhs : (tensor<?x3xf32>, tensor<?x4xf32>) -> tensor<3x4xf32>
    return %loss, %logits, %dw : tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32>
  }
}

// -----

// CHECK: @w 3x4xf32: 12/12 elements, max |grad| {{.*}}, error 9.90{{[0-9]}}e-03 FAILED; worst element {{[0-9]+}}: analytic {{.*}}, numeric {{.*}}
// CHECK: gradient check FAILED: 1 of 1 parameters above tolerance 1.000e-03
// LOOSE: @w 3x4xf32: 12/12 elements, max |grad| {{.*}}, error 9.90{{[0-9]}}e-03 ok{{$}}
// LOOSE: gradient check passed: 1 parameters
module {
  kiln.variable parameter @w : tensor<3x4xf32> init he_normal
  func.func @forward(%x: tensor<?x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>) {
    %w = kiln.read @w : tensor<3x4xf32>
    %logits = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x4xf32>
  }
  func.func @train_step(%x: tensor<?x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32> {kiln.gradient_of = @w}) {
    %w = kiln.read @w : tensor<3x4xf32>
    %logits = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dlogits = kiln.softmax_cross_entropy_backward %one, %logits, %labels : (tensor<f32>, tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %dw = kiln.matmul %x, %dlogits transpose_lhs : (tensor<?x3xf32>, tensor<?x4xf32>) -> tensor<3x4xf32>
    %scale = arith.constant dense<[[1.010000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 1.010000e+00, 0.000000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 1.010000e+00, 0.000000e+00], [0.000000e+00, 0.000000e+00, 0.000000e+00, 1.010000e+00]]> : tensor<4x4xf32>
    %wrong = kiln.matmul %dw, %scale : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    return %loss, %logits, %wrong : tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32>
  }
}
