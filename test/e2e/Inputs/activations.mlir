// A small network through every kind of kiln.activation (MobileNetV3's
// hard swish and hard sigmoid, EfficientNet's SiLU and sigmoid, MobileNetV2's
// ReLU6), forward and backward, without batch norm so that nothing but the
// activations sits between the convolutions.
module @activations {
  kiln.variable parameter @conv1.weight : tensor<3x3x3x16xf32> init he_normal
  kiln.variable parameter @conv2.weight : tensor<3x3x16x16xf32> init he_normal
  kiln.variable parameter @conv3.weight : tensor<1x1x16x16xf32> init he_normal
  kiln.variable parameter @fc.weight : tensor<16x5xf32> init normal std 1.000000e-01
  kiln.variable parameter @fc.bias : tensor<5xf32> init zeros
  func.func @forward(%images: tensor<?x8x8x3xf32>, %labels: tensor<?xi32>) -> (tensor<f32>, tensor<?x5xf32>) {
    %w1 = kiln.read @conv1.weight : tensor<3x3x3x16xf32>
    %c1 = kiln.conv2d %images, %w1 stride [1, 1] pad [1, 1, 1, 1] : (tensor<?x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<?x8x8x16xf32>
    %a1 = kiln.activation hard_swish %c1 : tensor<?x8x8x16xf32>
    %w2 = kiln.read @conv2.weight : tensor<3x3x16x16xf32>
    %c2 = kiln.conv2d %a1, %w2 stride [2, 2] pad [1, 1, 1, 1] : (tensor<?x8x8x16xf32>, tensor<3x3x16x16xf32>) -> tensor<?x4x4x16xf32>
    %a2 = kiln.activation silu %c2 : tensor<?x4x4x16xf32>
    %w3 = kiln.read @conv3.weight : tensor<1x1x16x16xf32>
    %c3 = kiln.conv2d %a2, %w3 stride [1, 1] pad [0, 0, 0, 0] : (tensor<?x4x4x16xf32>, tensor<1x1x16x16xf32>) -> tensor<?x4x4x16xf32>
    %r6 = kiln.activation relu6 %c3 : tensor<?x4x4x16xf32>
    %sg = kiln.activation sigmoid %c3 : tensor<?x4x4x16xf32>
    %hs = kiln.activation hard_sigmoid %c3 : tensor<?x4x4x16xf32>
    %s1 = kiln.add %r6, %sg : tensor<?x4x4x16xf32>
    %s2 = kiln.add %s1, %hs : tensor<?x4x4x16xf32>
    %p = kiln.global_avg_pool %s2 : (tensor<?x4x4x16xf32>) -> tensor<?x16xf32>
    %fw = kiln.read @fc.weight : tensor<16x5xf32>
    %fb = kiln.read @fc.bias : tensor<5xf32>
    %logits = kiln.dense %p, %fw bias %fb : (tensor<?x16xf32>, tensor<16x5xf32>, tensor<5xf32>) -> tensor<?x5xf32>
    %loss = kiln.softmax_cross_entropy %logits, %labels : (tensor<?x5xf32>, tensor<?xi32>) -> tensor<f32>
    return %loss, %logits : tensor<f32>, tensor<?x5xf32>
  }
}
