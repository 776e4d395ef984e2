// A small convolutional network without batch normalization: with it,
// R ranks x batch B compute exactly what 1 rank x batch R*B does.
module @no_bn {
  kiln.variable parameter @conv.weight : tensor<3x3x3x8xf32> init he_normal
  kiln.variable parameter @conv2.weight : tensor<3x3x8x8xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<8x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w = kiln.read @conv.weight : tensor<3x3x3x8xf32>
    %c = kiln.conv2d %images, %w stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x8xf32>) -> tensor<?x8x8x8xf32>
    %r = kiln.relu %c : tensor<?x8x8x8xf32>
    %w2 = kiln.read @conv2.weight : tensor<3x3x8x8xf32>
    %c2 = kiln.conv2d %r, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x8xf32>, tensor<3x3x8x8xf32>) -> tensor<?x4x4x8xf32>
    %r2 = kiln.relu %c2 : tensor<?x4x4x8xf32>
    %p = kiln.global_avg_pool %r2 : (tensor<?x4x4x8xf32>) -> tensor<?x8xf32>
    %fw = kiln.read @fc.weight : tensor<8x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %p, %fw bias %fb : (tensor<?x8xf32>, tensor<8x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
