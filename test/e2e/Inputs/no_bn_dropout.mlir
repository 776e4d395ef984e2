// no_bn.mlir with dropout on two weights (DropConnect-style): the masked
// weights are the same on every rank exactly when the ranks draw the same
// masks, and then, without batch norm, R ranks x batch B compute what
// 1 rank x batch R*B does (mpi-dropout-masks.test).
module @no_bn_dropout {
  kiln.variable parameter @conv.weight : tensor<3x3x3x8xf32> init he_normal
  kiln.variable parameter @conv2.weight : tensor<3x3x8x8xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<8x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>, %step: tensor<i64> {kiln.step}) -> (tensor<f32>, tensor<?x5xf32>) {
    %w = kiln.read @conv.weight : tensor<3x3x3x8xf32>
    %c = kiln.conv2d %images, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x8x8x8xf32>
    %r = kiln.relu %c : tensor<?x8x8x8xf32>
    %w2 = kiln.read @conv2.weight : tensor<3x3x8x8xf32>
    %w2d = kiln.dropout %w2, %step ratio 3.000000e-01 seed 0 stream 0 : tensor<3x3x8x8xf32>, tensor<i64>
    %c2 = kiln.conv2d %r, %w2d stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x8xf32>, tensor<3x3x8x8xf32>) -> tensor<?x4x4x8xf32>
    %r2 = kiln.relu %c2 : tensor<?x4x4x8xf32>
    %p = kiln.global_avg_pool %r2 : (tensor<?x4x4x8xf32>) -> tensor<?x8xf32>
    %fw = kiln.read @fc.weight : tensor<8x5xf32>
    %fwd = kiln.dropout %fw, %step ratio 5.000000e-01 seed 0 stream 1 : tensor<8x5xf32>, tensor<i64>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %p, %fwd bias %fb : (tensor<?x8xf32>, tensor<8x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
