// The negative case of gradients-broadcast-binary.mlir: a hand-written step
// whose broadcast operand's gradient sums dy times the *output* instead of
// dy times the other operand (with the input it would pass).
module {
  kiln.variable parameter @scale : tensor<1x1x1x2xf32> init constant value dense<[[[[5.0e-01, -1.5]]]]> : tensor<1x1x1x2xf32>
  kiln.variable parameter @fc : tensor<32x3xf32> init normal std 1.000000e-01
  func.func @forward(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>) {
    %s = kiln.read @scale : tensor<1x1x1x2xf32>
    %y = kiln.broadcast_binary mul %x, %s : (tensor<?x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<?x4x4x2xf32>
    %f = kiln.reshape %y : tensor<?x4x4x2xf32> to tensor<?x32xf32>
    %w = kiln.read @fc : tensor<32x3xf32>
    %l = kiln.dense %f, %w : (tensor<?x32xf32>, tensor<32x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %l : tensor<f32>, tensor<?x3xf32>
  }
  func.func @train_step(%x: tensor<?x4x4x2xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x3xf32>, tensor<1x1x1x2xf32> {kiln.gradient_of = @scale}, tensor<32x3xf32> {kiln.gradient_of = @fc}) {
    %s = kiln.read @scale : tensor<1x1x1x2xf32>
    %y = kiln.broadcast_binary mul %x, %s : (tensor<?x4x4x2xf32>, tensor<1x1x1x2xf32>) -> tensor<?x4x4x2xf32>
    %f = kiln.reshape %y : tensor<?x4x4x2xf32> to tensor<?x32xf32>
    %w = kiln.read @fc : tensor<32x3xf32>
    %l = kiln.dense %f, %w : (tensor<?x32xf32>, tensor<32x3xf32>) -> tensor<?x3xf32>
    %loss = kiln.softmax_cross_entropy %l, %labels : (tensor<?x3xf32>, tensor<?xi32>) -> tensor<f32>
    %one = arith.constant dense<1.000000e+00> : tensor<f32>
    %dl = kiln.softmax_cross_entropy_backward %one, %l, %labels : (tensor<f32>, tensor<?x3xf32>, tensor<?xi32>) -> tensor<?x3xf32>
    %dw = kiln.matmul %f, %dl transpose_lhs : (tensor<?x32xf32>, tensor<?x3xf32>) -> tensor<32x3xf32>
    %df = kiln.matmul %dl, %w transpose_rhs : (tensor<?x3xf32>, tensor<32x3xf32>) -> tensor<?x32xf32>
    %dy = kiln.reshape %df : tensor<?x32xf32> to tensor<?x4x4x2xf32>
    %ds = kiln.broadcast_binary_backward mul wrt rhs %dy lhs %y : (tensor<?x4x4x2xf32>, tensor<?x4x4x2xf32>) -> tensor<1x1x1x2xf32>
    return %loss, %l, %ds, %dw : tensor<f32>, tensor<?x3xf32>, tensor<1x1x1x2xf32>, tensor<32x3xf32>
  }
}
