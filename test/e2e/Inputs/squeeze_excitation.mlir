// A small network with a squeeze-and-excitation block (global pool, two
// dense layers, sigmoid, kiln.broadcast_binary mul scaling each image's
// channels) and a per-channel scale shared by the batch ([1, 1, 1, C]).
module @squeeze_excitation {
  kiln.variable parameter @conv1.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @se.fc1.weight : tensor<16x4xf32> init he_normal
  kiln.variable parameter @se.fc1.bias : tensor<4xf32> init zeros
  kiln.variable parameter @se.fc2.weight : tensor<4x16xf32> init he_normal
  kiln.variable parameter @se.fc2.bias : tensor<16xf32> init zeros
  kiln.variable parameter @scale : tensor<1x1x1x16xf32> init ones
  kiln.variable parameter @conv2.weight : tensor<3x3x16x16xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x3x16xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %a1 = kiln.activation hard_swish %c1 : tensor<?x8x8x16xf32>
    %p = kiln.global_avg_pool %a1 : (tensor<?x8x8x16xf32>) -> tensor<?x16xf32>
    %f1 = kiln.read @se.fc1.weight : tensor<16x4xf32>
    %b1 = kiln.read @se.fc1.bias : tensor<4xf32>
    %h = kiln.dense %p, %f1 bias %b1 : (tensor<?x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %hs = kiln.activation silu %h : tensor<?x4xf32>
    %f2 = kiln.read @se.fc2.weight : tensor<4x16xf32>
    %b2 = kiln.read @se.fc2.bias : tensor<16xf32>
    %e = kiln.dense %hs, %f2 bias %b2 : (tensor<?x4xf32>, tensor<4x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
    %g = kiln.activation sigmoid %e : tensor<?x16xf32>
    %s = kiln.reshape %g : tensor<?x16xf32> to tensor<?x1x1x16xf32>
    %se = kiln.broadcast_binary mul %a1, %s : (tensor<?x8x8x16xf32>, tensor<?x1x1x16xf32>) -> tensor<?x8x8x16xf32>
    %k = kiln.read @scale : tensor<1x1x1x16xf32>
    %sc = kiln.broadcast_binary mul %se, %k : (tensor<?x8x8x16xf32>, tensor<1x1x1x16xf32>) -> tensor<?x8x8x16xf32>
    %w2 = kiln.read @conv2.weight : tensor<3x3x16x16xf32>
    %c2 = kiln.conv2d %sc, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<?x4x4x16xf32>
    %r2 = kiln.relu %c2 : tensor<?x4x4x16xf32>
    %q = kiln.global_avg_pool %r2 : (tensor<?x4x4x16xf32>) -> tensor<?x16xf32>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %q, %fw bias %fb : (tensor<?x16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
