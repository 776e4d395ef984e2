// The negative case of gradients-bias-add.mlir: a hand-written step whose
// bias gradient sums the logits instead of their gradient (with the
// gradient it passes).
module {
  kiln.variable parameter @fc : tensor<32x3xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<3xf32> init constant value dense<[1.0e-01, 0.0, -1.0e-01]> : tensor<3xf32>
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %f = kiln.reshape %x : tensor<?x4x4x2xf32> to tensor<?x32xf32>
    %w = kiln.read @fc : tensor<32x3xf32>
    %d = kiln.dense %f, %w : (tensor<?x32xf32>, tensor<32x3xf32>) -> tensor<?x3xf32>
    %b = kiln.read @fc.bias : tensor<3xf32>
    %l = kiln.bias_add %d, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
  func.func @train_step(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>, tensor<32x3xf32> {kiln.gradient_of = @fc}, tensor<3xf32> {kiln.gradient_of = @fc.bias}) {
    %f = kiln.reshape %x : tensor<?x4x4x2xf32> to tensor<?x32xf32>
    %w = kiln.read @fc : tensor<32x3xf32>
    %d = kiln.dense %f, %w : (tensor<?x32xf32>, tensor<32x3xf32>) -> tensor<?x3xf32>
    %b = kiln.read @fc.bias : tensor<3xf32>
    %l = kiln.bias_add %d, %b : (tensor<?x3xf32>, tensor<3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dl = kiln.softmax_cross_entropy_backward %one, %l, %labels : (tensor<f32>, tensor<?x3xf32>, tensor<?xi32>) -> tensor<?x3xf32>
    %dw = kiln.matmul %f, %dl transpose_lhs : (tensor<?x32xf32>, tensor<?x3xf32>) -> tensor<32x3xf32>
    %db = kiln.bias_add_backward %l : (tensor<?x3xf32>) -> tensor<3xf32>
    return %loss, %l, %dw, %db : tensor<f32>, tensor<?x3xf32>, tensor<32x3xf32>, tensor<3xf32>
  }
}
