// Negative case of gradients-dropout.mlir: a hand-written training step
// whose backward dropout draws another stream's mask than its forward
// fails the gradient check; the same step with the forward's stream passes.
// RUN: not kiln-run %s --check-gradients --synthetic-inputs --batch=3 | FileCheck %s
// RUN: sed 's/seed 9 stream 3/seed 9 stream 2/' %s \
// RUN:   | kiln-run - --check-gradients --synthetic-inputs --batch=3 | FileCheck %s --check-prefix=RIGHT

// CHECK: @w 3x4xf32: 12/12 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} FAILED
// CHECK: gradient check FAILED
// RIGHT: @w 3x4xf32: 12/12 elements, max |grad| {{.*}}, error {{[-+.e0-9]+}} ok{{$}}
// RIGHT: gradient check passed: 1 parameters (0 unchecked)
module {
  kiln.variable parameter @w : tensor<3x4xf32> init he_normal
  func.func @forward(%x: tensor<?x3xf32>, %labels: tensor<?xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<?x4xf32>) {
    %w = kiln.read @w : tensor<3x4xf32>
    %y = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %a = kiln.dropout %y, %step ratio 5.000000e-01 seed 9 stream 2 : tensor<?x4xf32>, tensor<i64>
    %loss = kiln.softmax_cross_entropy %a, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %a : tensor<f32>, tensor<?x4xf32>
  }
  func.func @train_step(%x: tensor<?x3xf32>, %labels: tensor<?xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32> {kiln.gradient_of = @w}) {
    %w = kiln.read @w : tensor<3x4xf32>
    %y = kiln.dense %x, %w : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32>
    %a = kiln.dropout %y, %step ratio 5.000000e-01 seed 9 stream 2 : tensor<?x4xf32>, tensor<i64>
    %loss = kiln.softmax_cross_entropy %a, %labels : (tensor<?x4xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %da = kiln.softmax_cross_entropy_backward %one, %a, %labels : (tensor<f32>, tensor<?x4xf32>, tensor<?xi32>) -> tensor<?x4xf32>
    %dy = kiln.dropout %da, %step ratio 5.000000e-01 seed 9 stream 3 : tensor<?x4xf32>, tensor<i64>
    %dw = kiln.matmul %x, %dy transpose_lhs : (tensor<?x3xf32>, tensor<?x4xf32>) -> tensor<3x4xf32>
    return %loss, %a, %dw : tensor<f32>, tensor<?x4xf32>, tensor<3x4xf32>
  }
}
